package report

import (
	"math"
	"testing"

	"github.com/gpugate/gpugate/gate"
)

func TestCostText(t *testing.T) {
	for _, c := range []struct {
		in   *gate.Cost
		want string
	}{
		{nil, ""},
		{&gate.Cost{}, ""},
		{&gate.Cost{Runs: 1, WallSeconds: 42.4}, "1 run of the job, 42s of wall time (no GPU)"},
		// 3 runs of 104.1 s on 8 GPUs: 312.4 s × 8 = 2499.2 GPU-s = 41.65 GPU-minutes.
		{&gate.Cost{Runs: 3, WallSeconds: 312.4, GPUs: 8, GPUSeconds: 2499.2}, "3 runs of the job, 5m12s of wall time, 8 GPUs: 41.7 GPU-minutes"},
		{&gate.Cost{Runs: 1, WallSeconds: 60, GPUs: 1, GPUSeconds: 60}, "1 run of the job, 1m0s of wall time, 1 GPU: 1.0 GPU-minutes"},
		// Numbers no check spends, from a forged artifact: nothing.
		{&gate.Cost{Runs: 1, WallSeconds: -5}, ""},
		{&gate.Cost{Runs: 1, WallSeconds: math.Inf(1)}, ""},
		{&gate.Cost{Runs: 1, WallSeconds: 1e300, GPUs: 8, GPUSeconds: 8e300}, ""},
		{&gate.Cost{Runs: 1, WallSeconds: 10, GPUs: -3}, ""},
	} {
		if got := CostText(c.in); got != c.want {
			t.Errorf("CostText(%+v) = %q, want %q", c.in, got, c.want)
		}
	}
}
