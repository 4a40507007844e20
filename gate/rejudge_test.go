package gate_test

import (
	"strings"
	"testing"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/stats"
)

// Rejudge gives the verdict Compare's rule gives for the samples, whatever
// verdict the reported result claims, and refuses metrics and allowances
// gpugate does not have.
func TestRejudge(t *testing.T) {
	base := [][]float64{{121, 120, 122, 121}, {120, 121, 121, 122}, {122, 121, 120, 121}, {121, 122, 121, 120}, {120, 122, 121, 121}}
	slow := [][]float64{{177, 176, 178, 177}, {176, 177, 178, 177}, {177, 178, 176, 177}, {178, 177, 176, 177}, {177, 176, 177, 178}}
	spec := stats.Spec{Name: "step_time", Unit: "ms", Better: -1, Allowance: 0.15, Gate: true}
	for _, cand := range [][][]float64{base, slow} {
		want := stats.Compare(spec, base, cand, stats.Thresholds{})
		forged := want
		forged.Verdict, forged.Why = stats.Pass, "forged"
		got, err := gate.Rejudge(forged, base, cand, stats.Thresholds{})
		if err != nil || got.Verdict != want.Verdict || got.Candidate.Median != want.Candidate.Median {
			t.Errorf("Rejudge: %s (median %v), %v; want %s", got.Verdict, got.Candidate.Median, err, want.Verdict)
		}
		if (got.Why == "forged") != (want.Verdict == stats.Regression) {
			t.Errorf("Rejudge kept Why %q with verdict %s", got.Why, got.Verdict)
		}
	}
	if want := stats.Compare(spec, base, slow, stats.Thresholds{}); want.Verdict != stats.Regression {
		t.Fatalf("121 → 177 ms is %s, want regression", want.Verdict)
	}
	// The level the run judged at is kept (repeat: auto: 2%/max_runs):
	// 5 runs against 5 at α=0.004 is what the run said, not what α=0.05
	// says; a level above 5% is refused.
	// (These runs drift from one another: the intervals have width.)
	driftB := [][]float64{{118, 119}, {121, 122}, {124, 123}, {120, 121}, {122, 123}}
	driftC := [][]float64{{150, 151}, {155, 154}}
	for _, alpha := range []float64{0.004, 0.05} {
		want := stats.Compare(spec, driftB, driftC, stats.Thresholds{Alpha: alpha})
		got, err := gate.Rejudge(want, driftB, driftC, stats.Thresholds{Alpha: alpha})
		if err != nil || got.CILoPct != want.CILoPct || got.CIHiPct != want.CIHiPct {
			t.Errorf("Rejudge at α=%v: [%v, %v], %v; want [%v, %v]", alpha, got.CILoPct, got.CIHiPct, err, want.CILoPct, want.CIHiPct)
		}
	}
	if wide, narrow := stats.Compare(spec, driftB, driftC, stats.Thresholds{Alpha: 0.004}), stats.Compare(spec, driftB, driftC, stats.Thresholds{}); !(wide.CIHiPct-wide.CILoPct > narrow.CIHiPct-narrow.CILoPct) {
		t.Errorf("α=0.004 interval [%v, %v] is not wider than α=0.05's [%v, %v]", wide.CILoPct, wide.CIHiPct, narrow.CILoPct, narrow.CIHiPct)
	}
	if _, err := gate.Rejudge(stats.Result{Name: "step_time", AllowancePct: 15}, base, slow, stats.Thresholds{Alpha: 0.5}); err == nil {
		t.Error("Rejudge at α=0.5: accepted")
	}
	for _, bad := range []stats.Result{
		{Name: "[click](x)", AllowancePct: 15},
		{Name: "step_time", AllowancePct: 1e6},
		{Name: "step_time", AllowancePct: -1},
		{Name: "step_time", AllowancePct: 15, MinAbs: -1},
	} {
		if _, err := gate.Rejudge(bad, base, slow, stats.Thresholds{}); err == nil || !strings.Contains(err.Error(), "not") {
			t.Errorf("Rejudge(%+v) = %v, want a refusal", bad, err)
		}
	}
}
