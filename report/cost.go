package report

import (
	"fmt"
	"time"

	"github.com/gpugate/gpugate/gate"
)

// CostText is a check's cost for people: "3 runs, 2m05s of wall time,
// 8 GPUs: 16.7 GPU-minutes", or "… (no GPU)" on a machine without one;
// "" for none, or for numbers no check spends (a report read from an
// artifact is anyone's: negative, or past 30 years of wall time). Only
// numbers: safe in every format.
func CostText(c *gate.Cost) string {
	if c == nil || c.Runs <= 0 || !(c.WallSeconds >= 0 && c.WallSeconds < 1e9) || c.GPUs < 0 || c.GPUs > 1<<20 ||
		!(c.GPUSeconds >= 0 && c.GPUSeconds < 1e15) {
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
