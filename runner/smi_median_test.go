package runner

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/runcond"
)

// TestSMIMedianFinite: nvidia-smi numbers are read as any finite float;
// the median of two huge ones (a garbage line, a stand-in) must stay
// finite, or the run's conditions fail json.Marshal (the store then drops
// them, and the report cannot be written).
func TestSMIMedianFinite(t *testing.T) {
	if m := median([]float64{1.7e308, 1.7e308}); math.IsInf(m, 0) || m != 1.7e308 {
		t.Errorf("median = %v, want 1.7e308", m)
	}
	if m := median([]float64{1, 2, 3, 4}); m != 2.5 {
		t.Errorf("median = %v, want 2.5", m)
	}
	if p := ptr(math.Inf(1)); p != nil {
		t.Errorf("ptr(+Inf) = %v, want nil", *p)
	}
	big := 1.7e308
	c := func() *runcond.Conditions {
		return &runcond.Conditions{Sampled: true, GPUs: []runcond.GPUConditions{{Index: 0, Name: "x", SMClockMedianMHz: &big}}}
	}
	if _, err := json.Marshal(gate.PoolConditions([]*runcond.Conditions{c(), c()})); err != nil {
		t.Errorf("pooled conditions: %v", err)
	}
}
