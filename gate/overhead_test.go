package gate

import (
	"math"
	"testing"
)

func TestOverhead(t *testing.T) {
	steps := func(base, spread float64, n int) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = base + spread*float64(i%5-2)/2 // base-spread … base+spread
		}
		return xs
	}
	// Profiled faster than unprofiled on a noisy minute, steps of both
	// spread over each other: within noise, whatever the ratio says.
	o := NewOverhead([][]float64{steps(93, 20, 20)}, steps(100, 20, 20))
	if !o.WithinNoise || math.Abs(o.Ratio-0.93) > 1e-9 || o.Passes != 1 {
		t.Errorf("noisy passes: %+v, want within noise at ratio 0.93", o)
	}
	// Tight steps 10% apart: a measure.
	o = NewOverhead([][]float64{steps(110, 1, 20)}, steps(100, 1, 20))
	if o.WithinNoise || math.Abs(o.Ratio-1.1) > 1e-9 || o.Lo != 0 || o.Hi != 0 {
		t.Errorf("one tight pass: %+v, want ×1.10 without a range", o)
	}
	// Three profiled passes: the range of per-pass ratios.
	o = NewOverhead([][]float64{steps(105, 1, 20), steps(110, 1, 20), steps(120, 1, 20)}, steps(100, 1, 20))
	if o.Passes != 3 || math.Abs(o.Lo-1.05) > 1e-9 || math.Abs(o.Hi-1.2) > 1e-9 || o.WithinNoise {
		t.Errorf("three passes: %+v, want range [1.05, 1.20]", o)
	}
	if NewOverhead(nil, steps(100, 1, 5)) != nil || NewOverhead([][]float64{{1}}, nil) != nil || NewOverhead([][]float64{{1}}, []float64{0}) != nil {
		t.Error("an empty side or a zero unprofiled median must give no overhead")
	}
	// p10/p90 by interpolation, as numpy: [1..10] → 1.9 and 9.1.
	if q := quantile([]float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, 0.1); math.Abs(q-1.9) > 1e-12 {
		t.Errorf("p10 = %v, want 1.9", q)
	}
}
