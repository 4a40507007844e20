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
		got, err := gate.Rejudge(forged, base, cand)
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
	for _, bad := range []stats.Result{
		{Name: "[click](x)", AllowancePct: 15},
		{Name: "step_time", AllowancePct: 1e6},
		{Name: "step_time", AllowancePct: -1},
		{Name: "step_time", AllowancePct: 15, MinAbs: -1},
	} {
		if _, err := gate.Rejudge(bad, base, slow); err == nil || !strings.Contains(err.Error(), "not") {
			t.Errorf("Rejudge(%+v) = %v, want a refusal", bad, err)
		}
	}
}
