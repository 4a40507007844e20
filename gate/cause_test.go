package gate

import (
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/stats"
)

// TestCauseRanksByAccountedTime: the slow-loader demo (step time +533%)
// headlined memory-growth, a new finding from the profiler's own resident
// memory, because new findings came first whatever they explained. The
// finding that accounts for the step time's change leads.
func TestCauseRanksByAccountedTime(t *testing.T) {
	rep := &Report{
		Decomposition: Decomposition{Baseline: 40, Candidate: 253},
		Metrics: []stats.Result{
			{Name: "step_time", Gate: true, Verdict: stats.Regression},
			{Name: "rss", Gate: false, Verdict: stats.Regression},
		},
	}
	dl := Finding{Finding: analysis.Finding{ID: "data-loader-bound", Summary: "loader", Share: 0.8}, Worse: true, BaselineShare: 0.2}
	mg := Finding{Finding: analysis.Finding{ID: "memory-growth", Summary: "rss grows"}, New: true}
	for _, order := range [][]Finding{{mg, dl}, {dl, mg}} {
		rep.Findings = append([]Finding(nil), order...)
		for i := range rep.Findings {
			f := &rep.Findings[i]
			f.AccountsMs = f.Share*rep.Decomposition.Candidate - f.BaselineShare*rep.Decomposition.Baseline
		}
		rep.Cause = ""
		for i := range rep.Metrics {
			rep.Metrics[i].Why = ""
		}
		rep.sortFindings()
		rep.explain()
		if rep.Findings[0].ID != "data-loader-bound" || rep.Cause != "data-loader-bound" {
			t.Errorf("findings %s, %s; cause %q: want data-loader-bound first and as the cause", rep.Findings[0].ID, rep.Findings[1].ID, rep.Cause)
		}
		if rep.Metrics[1].Why == "" || rep.Metrics[1].Why[:15] != "`memory-growth`" {
			t.Errorf("rss why = %q, want memory-growth", rep.Metrics[1].Why)
		}
	}
	// A gated regression other than step_time leads when step_time passed:
	// new sync calls with nothing else moving.
	rep = &Report{Metrics: []stats.Result{
		{Name: "step_time", Gate: true, Verdict: stats.Pass},
		{Name: "sync_calls", Gate: true, Verdict: stats.Regression},
	}, Findings: []Finding{
		{Finding: analysis.Finding{ID: "data-loader-bound"}, Worse: true, AccountsMs: 3},
		{Finding: analysis.Finding{ID: "host-sync"}, New: true, AccountsMs: 0.1},
	}}
	rep.explain()
	if rep.Cause != "host-sync" {
		t.Errorf("cause %q, want host-sync (the only gated regression is sync_calls)", rep.Cause)
	}
	// No gated regression: no cause.
	rep.Metrics[1].Verdict = stats.Pass
	rep.Cause = ""
	rep.explain()
	if rep.Cause != "" {
		t.Errorf("cause %q without a gated regression", rep.Cause)
	}
}

// TestCauseFallsBack: step_time regressed with no finding to explain it
// (noise, or an unnamed cause) while a leak explains peak_memory: the
// headline names the leak rather than nothing.
func TestCauseFallsBack(t *testing.T) {
	rep := &Report{Metrics: []stats.Result{
		{Name: "step_time", Gate: true, Verdict: stats.Regression},
		{Name: "peak_memory", Gate: true, Verdict: stats.Regression},
	}, Findings: []Finding{{Finding: analysis.Finding{ID: "memory-growth"}, New: true}}}
	rep.explain()
	if rep.Cause != "memory-growth" {
		t.Errorf("cause %q, want memory-growth", rep.Cause)
	}
}
