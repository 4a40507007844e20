package stats

import (
	"math"
	"strings"
	"testing"
)

// Summary.Value is what Δ compares: candidate.Value / baseline.Value − 1
// is DeltaPct on the log scale, and their difference is Delta on both
// scales (issue 28: tables showed pooled medians beside a Δ of geometric
// means of run means).
func TestSummaryValueIsWhatDeltaCompares(t *testing.T) {
	spec := Spec{Name: "step_time", Unit: "ms", Better: -1, Allowance: 0.15, MinAbs: 0.05, Gate: true}
	base := [][]float64{{100, 104, 96}, {110, 112}, {90, 91, 92, 93}}
	cand := [][]float64{{120, 121}, {118, 119, 130}}
	for _, paired := range []bool{false, true} {
		c := cand
		if paired {
			c = [][]float64{{120, 121}, {118, 119, 130}, {100, 101}}
		}
		r := Compare(spec, base, c, Thresholds{Alpha: 0.05, Paired: paired})
		// By hand: run means, then their geometric mean.
		geo := func(runs [][]float64) float64 {
			var s float64
			for _, run := range runs {
				var m float64
				for _, v := range run {
					m += v
				}
				s += math.Log(m / float64(len(run)))
			}
			return math.Exp(s / float64(len(runs)))
		}
		if want := geo(base); math.Abs(r.Baseline.Value-want) > 1e-9 {
			t.Errorf("paired=%v: baseline value %v, want %v", paired, r.Baseline.Value, want)
		}
		if want := geo(c); math.Abs(r.Candidate.Value-want) > 1e-9 {
			t.Errorf("paired=%v: candidate value %v, want %v", paired, r.Candidate.Value, want)
		}
		if got := 100 * (r.Candidate.Value/r.Baseline.Value - 1); math.Abs(got-r.DeltaPct) > 1e-9 {
			t.Errorf("paired=%v: candidate/baseline − 1 = %v%%, delta_pct %v", paired, got, r.DeltaPct)
		}
		if got := r.Candidate.Value - r.Baseline.Value; math.Abs(got-r.Delta) > 1e-9 {
			t.Errorf("paired=%v: candidate − baseline = %v, delta %v", paired, got, r.Delta)
		}
	}
	// The absolute scale (a run mean of 0): arithmetic means.
	syncs := Spec{Name: "sync_calls", Unit: "count", Better: -1, MinAbs: 0.5, Gate: true}
	r := Compare(syncs, [][]float64{{0, 0}, {0, 1}, {0, 0}}, [][]float64{{2, 2}, {3, 3}}, Thresholds{Alpha: 0.05})
	if r.Scale != ScaleAbsolute || math.Abs(r.Baseline.Value-0.5/3) > 1e-12 || r.Candidate.Value != 2.5 || math.Abs(r.Delta-(2.5-0.5/3)) > 1e-12 {
		t.Errorf("absolute scale: %s values %v → %v, delta %v; want 0.1667 → 2.5, delta 2.333", r.Scale, r.Baseline.Value, r.Candidate.Value, r.Delta)
	}
}

// An inconclusive change that no reachable number of runs settles says
// how far it is from the allowance and how wide the interval would stay,
// never that it "sits at the allowance" when it does not (issue 28: +11.9%
// against ±25%).
func TestSettleFarFromAllowance(t *testing.T) {
	base := [][]float64{{100}, {160}, {70}, {140}, {80}}
	cand := [][]float64{{112}, {180}, {75}, {160}, {92}}
	r := Compare(Spec{Name: "step_time", Unit: "ms", Better: -1, Allowance: 0.25, MinAbs: 0.05, Gate: true}, base, cand, Thresholds{Alpha: 0.05})
	if r.Verdict != Inconclusive {
		t.Fatalf("verdict %s, want inconclusive", r.Verdict)
	}
	// Δ = 12.15% (geometric means 104.64 → 117.35), 25 − 12.15 = 12.8 points.
	if strings.Contains(r.Reason, "sits at the allowance") || !strings.Contains(r.Reason, "12.8 points from the allowance") {
		t.Errorf("reason %q: want the distance to the allowance (12.8 points), not \"sits at the allowance\"", r.Reason)
	}
}
