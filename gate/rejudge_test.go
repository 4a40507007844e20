package gate_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/analysis"
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
		got, err := gate.Rejudge(forged, base, cand, gate.Options{})
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
		got, err := gate.Rejudge(want, driftB, driftC, gate.Options{Thresholds: stats.Thresholds{Alpha: alpha}})
		if err != nil || got.CILoPct != want.CILoPct || got.CIHiPct != want.CIHiPct {
			t.Errorf("Rejudge at α=%v: [%v, %v], %v; want [%v, %v]", alpha, got.CILoPct, got.CIHiPct, err, want.CILoPct, want.CIHiPct)
		}
	}
	// Stored baseline runs and candidate runs are unrelated runs, never
	// pairs, even when there are as many of each and the options say
	// paired (issue 37's mutant "Rejudge pairing unrelated runs"): the
	// interval is the two-sample one, whose width the pairs' would not
	// have (these pairs' differences barely vary).
	driftC5 := [][]float64{{148, 149}, {151, 152}, {154, 153}, {150, 151}, {152, 153}}
	for _, paired := range []bool{false, true} {
		want := stats.Compare(spec, driftB, driftC5, stats.Thresholds{})
		pairs := stats.Compare(spec, driftB, driftC5, stats.Thresholds{Paired: true})
		got, err := gate.Rejudge(want, driftB, driftC5, gate.Options{Thresholds: stats.Thresholds{Paired: paired}})
		if err != nil || got.SampleUnit != stats.UnitRun || got.CILoPct != want.CILoPct || got.CIHiPct != want.CIHiPct || got.CIHiPct-got.CILoPct < 2*(pairs.CIHiPct-pairs.CILoPct) {
			t.Errorf("Rejudge of 5 vs 5 runs (options paired %v): %s [%v, %v], %v; want the runs' two-sample [%v, %v], not the pairs' [%v, %v]",
				paired, got.SampleUnit, got.CILoPct, got.CIHiPct, err, want.CILoPct, want.CIHiPct, pairs.CILoPct, pairs.CIHiPct)
		}
	}
	if wide, narrow := stats.Compare(spec, driftB, driftC, stats.Thresholds{Alpha: 0.004}), stats.Compare(spec, driftB, driftC, stats.Thresholds{}); !(wide.CIHiPct-wide.CILoPct > narrow.CIHiPct-narrow.CILoPct) {
		t.Errorf("α=0.004 interval [%v, %v] is not wider than α=0.05's [%v, %v]", wide.CILoPct, wide.CIHiPct, narrow.CILoPct, narrow.CIHiPct)
	}
	if _, err := gate.Rejudge(stats.Result{Name: "step_time", AllowancePct: 15}, base, slow, gate.Options{Thresholds: stats.Thresholds{Alpha: 0.5}}); err == nil {
		t.Error("Rejudge at α=0.5: accepted")
	}
	if _, err := gate.Rejudge(stats.Result{Name: "[click](x)", AllowancePct: 15}, base, slow, gate.Options{}); err == nil || !strings.Contains(err.Error(), "not") {
		t.Errorf("Rejudge of a metric gpugate does not compute = %v, want a refusal", err)
	}
	// How the metric is judged comes from the options (the trusted
	// perf.yaml), never from the reported result: a forged gate flag,
	// allowance or smallest change changes nothing.
	for _, forged := range []stats.Result{
		{Name: "step_time", AllowancePct: 1e6, Gate: true},
		{Name: "step_time", AllowancePct: 5000, Gate: false},
		{Name: "step_time", AllowancePct: -1},
		{Name: "step_time", AllowancePct: 15, MinAbs: 1e9},
		{Name: "step_time", AllowancePct: 15, MinAbs: -1},
	} {
		got, err := gate.Rejudge(forged, base, slow, gate.Options{})
		if err != nil || got.Verdict != stats.Regression || !got.Gate || got.AllowancePct != 15 || got.MinAbs != 0.05 {
			t.Errorf("Rejudge(%+v) = %s gate=%v allowance %v%% min %v, %v; want a gating regression at perf.yaml's 15%% and 0.05 ms", forged, got.Verdict, got.Gate, got.AllowancePct, got.MinAbs, err)
		}
	}
	// perf.yaml's own settings are applied: a 50% allowance passes +46%,
	// and a gate list without step_time makes it explain only.
	if got, _ := gate.Rejudge(stats.Result{Name: "step_time", Gate: true}, base, slow, gate.Options{Allowances: map[string]float64{"step_time": 0.5}}); got.Verdict == stats.Regression || got.AllowancePct != 50 {
		t.Errorf("allowance 50%%: %s at %v%%, want no regression at 50%%", got.Verdict, got.AllowancePct)
	}
	if got, _ := gate.Rejudge(stats.Result{Name: "step_time", Gate: true}, base, slow, gate.Options{Gate: []string{"kernels"}}); got.Gate {
		t.Errorf("gate [kernels]: step_time gates")
	}
}

// CheckMetricList refuses a metric list no comparison yields: a host
// metric left out, some GPU metrics without the others.
func TestCheckMetricList(t *testing.T) {
	var host, all []string
	for _, m := range analysis.Metrics {
		if !m.Optional() {
			all = append(all, m.Name)
			if !m.GPU {
				host = append(host, m.Name)
			}
		}
	}
	without := func(xs []string, drop string) []string {
		return slices.DeleteFunc(slices.Clone(xs), func(x string) bool { return x == drop })
	}
	for _, c := range []struct {
		name   string
		list   []string
		refuse string // "" accepted
		absent []string
	}{
		{"CPU run", host, "", []string{"peak_memory"}},
		{"GPU run", all, "", []string{"peak_memory"}},
		{"GPU run with memory", append(slices.Clone(all), "peak_memory", "rss"), "", nil},
		{"step_time deleted", without(host, "step_time"), "step_time", nil},
		{"sync_calls deleted", without(all, "sync_calls"), "sync_calls", nil},
		{"kernels deleted", without(all, "kernels"), "kernels", nil},
		{"cpu_wait deleted", without(all, "cpu_wait"), "cpu_wait", nil},
		{"nothing", nil, "step_time", nil},
		{"unknown", append(slices.Clone(host), "[x](y)"), "not one gpugate computes", nil},
	} {
		absent, err := gate.CheckMetricList(c.list, gate.Options{})
		switch {
		case c.refuse == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.refuse != "" && (err == nil || !strings.Contains(err.Error(), c.refuse)):
			t.Errorf("%s: %v, want a refusal naming %s", c.name, err, c.refuse)
		case c.refuse == "" && !slices.Equal(absent, c.absent):
			t.Errorf("%s: absent gate metrics %v, want %v", c.name, absent, c.absent)
		}
	}
}
