package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func steps(rng *rand.Rand, n int, median, cv float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = median * (1 + cv*rng.NormFloat64())
	}
	return out
}

func TestCompare(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	time := Spec{Name: "step_time", Unit: "ms", Better: -1, Allowance: 0.15, Gate: true}
	count := Spec{Name: "sync_calls", Unit: "count", Better: -1, MinAbs: 0.5, Gate: true}
	const n = 20
	for _, c := range []struct {
		name       string
		spec       Spec
		base, cand [][]float64
		want       Verdict
	}{
		{"equal", time, [][]float64{steps(rng, n, 100, 0.03)}, [][]float64{steps(rng, n, 100, 0.03)}, Pass},
		{"shifted less than allowance", time, [][]float64{steps(rng, n, 100, 0.02)}, [][]float64{steps(rng, n, 110, 0.02)}, Pass},
		{"shifted more than allowance", time, [][]float64{steps(rng, n, 100, 0.02)}, [][]float64{steps(rng, n, 125, 0.02)}, Regression},
		{"faster beyond allowance", time, [][]float64{steps(rng, n, 100, 0.02)}, [][]float64{steps(rng, n, 75, 0.02)}, Improvement},
		{"too few samples", time, [][]float64{{100, 101, 99}}, [][]float64{{150, 151, 149}}, Inconclusive},
		{"one sample each", time, [][]float64{{100}}, [][]float64{{200}}, Inconclusive},
		{"no candidate samples", time, [][]float64{{100, 101}}, nil, Inconclusive},
		{"identical counts", count, [][]float64{{2, 2, 2, 2, 2, 2}}, [][]float64{{2, 2, 2, 2, 2, 2}}, Pass},
		{"new sync per step", count, [][]float64{{0, 0, 0, 0, 0, 0}}, [][]float64{{1, 1, 1, 1, 1, 1}}, Regression},
		{"large but noisy", time, [][]float64{{100, 60, 140, 90, 110, 70}}, [][]float64{{125, 70, 160, 95, 130, 80}}, Pass},
	} {
		r := Compare(c.spec, c.base, c.cand, DefaultThresholds)
		if r.Verdict != c.want {
			t.Errorf("%s: verdict %s (Δ %.1f%%, p=%.3g, allowance %.0f%%), want %s", c.name, r.Verdict, r.DeltaPct, r.P, r.AllowancePct, c.want)
		}
	}
	r := Compare(count, [][]float64{{0, 0, 0, 0, 0, 0}}, [][]float64{{1, 1, 1, 1, 1, 1}}, DefaultThresholds)
	if !math.IsInf(r.DeltaPct, 1) {
		t.Errorf("0 -> 1: delta %v, want +Inf", r.DeltaPct)
	}
}

// With several runs, the allowance widens by the baseline's run-to-run
// spread: a +17% shift that equals the drift between baseline runs passes.
func TestRunToRunSpread(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	spec := Spec{Name: "step_time", Better: -1, Allowance: 0.15, Gate: true}
	base := [][]float64{steps(rng, 6, 153, 0.02), steps(rng, 6, 175, 0.02), steps(rng, 6, 160, 0.02)}
	cand := [][]float64{steps(rng, 6, 179, 0.02)}
	r := Compare(spec, base, cand, DefaultThresholds)
	if r.Verdict != Pass || r.AllowancePct < 25 || len(r.Notes) == 0 {
		t.Errorf("verdict %s, allowance %.1f%%, notes %q; want pass with the allowance widened by ~14%%", r.Verdict, r.AllowancePct, r.Notes)
	}
	// One run each: the same shift fails.
	r = Compare(spec, base[:1], cand, DefaultThresholds)
	if r.Verdict != Regression {
		t.Errorf("one run each: verdict %s, want regression", r.Verdict)
	}
}

func TestMinP(t *testing.T) {
	for _, c := range []struct {
		n1, n2 int
		want   float64
	}{{1, 1, 1}, {3, 3, 0.1}, {6, 6, 2.0 / 924}, {4, 4, 2.0 / 70}} {
		if got := minP(c.n1, c.n2); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("minP(%d, %d) = %v, want %v", c.n1, c.n2, got, c.want)
		}
	}
}

func TestOverall(t *testing.T) {
	rs := []Result{{Gate: true, Verdict: Pass}, {Gate: false, Verdict: Regression}}
	if v := Overall(rs); v != Pass {
		t.Errorf("non-gate regression: %s, want pass", v)
	}
	rs = append(rs, Result{Gate: true, Verdict: Inconclusive})
	if v := Overall(rs); v != Inconclusive {
		t.Errorf("%s, want inconclusive", v)
	}
	rs = append(rs, Result{Gate: true, Verdict: Regression})
	if v := Overall(rs); v != Regression {
		t.Errorf("%s, want regression", v)
	}
}
