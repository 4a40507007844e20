package report

import (
	"fmt"
	"time"

	"github.com/gpugate/gpugate/gate"
)

// CostText is a check's cost for people: "3 runs, 2m05s of wall time,
// 8 GPUs: 16.7 GPU-minutes", or "… (no GPU)" on a machine without one;
// "" for none. Only numbers: safe in every format.
func CostText(c *gate.Cost) string {
	if c == nil || c.Runs <= 0 {
		return ""
	}
	runs := "runs"
	if c.Runs == 1 {
		runs = "run"
	}
	wall := time.Duration(c.WallSeconds * float64(time.Second)).Round(time.Second)
	s := fmt.Sprintf("%d %s of the job, %s of wall time", c.Runs, runs, wall)
	if c.GPUs <= 0 {
		return s + " (no GPU)"
	}
	gpus := "GPUs"
	if c.GPUs == 1 {
		gpus = "GPU"
	}
	return s + fmt.Sprintf(", %d %s: %.1f GPU-minutes", c.GPUs, gpus, c.GPUSeconds/60)
}
