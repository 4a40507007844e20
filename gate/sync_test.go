package gate

import (
	"strings"
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/stats"
)

// withSyncs sets SyncCalls to n in every every-th step of each run (the
// 3rd, 6th, ...), and to base in the others.
func withSyncs(runs []Run, base, n, every int) []Run {
	for _, run := range runs {
		for _, r := range run {
			for i := range r.Steps {
				r.Steps[i].SyncCalls = base
				if (i+1)%every == 0 {
					r.Steps[i].SyncCalls = n
				}
				r.Steps[i].SyncTime = int64(r.Steps[i].SyncCalls) * 10_000
			}
		}
	}
	return runs
}

// A new sync in every 3rd step (0 → 0.33 a step) is as new as one in
// every step: a regression of sync_calls with a new host-sync finding.
// The 0.5 minimum stays for syncs that exist: 1 → 1.33 a step passes.
func TestNewSyncInSomeSteps(t *testing.T) {
	base := syntheticRuns(t, 3, 30, 100, 0, 5)
	cand := withSyncs([]Run{synthetic(t, 30, 100, 0, 5)}, 0, 1, 3)
	rep := Compare(base, cand, Options{})
	sc := rep.metric("sync_calls")
	if sc.Verdict != stats.Regression || rep.Verdict != stats.Regression {
		t.Fatalf("0 → 0.33 syncs a step: sync_calls %s (%s), overall %s; want regression", sc.Verdict, stats.FormatDelta(*sc), rep.Verdict)
	}
	if len(rep.Findings) == 0 || rep.Findings[0].ID != "host-sync" || !rep.Findings[0].New ||
		!strings.HasPrefix(rep.Findings[0].Evidence, "mean sync calls per step 0 → 0.33;") || rep.Findings[0].Summary != "blocking host syncs in 10 of 30 steps (0.33 per step)" {
		t.Errorf("findings %+v; want a new host-sync first, 0 → 0.33 a step, in 10 of 30 steps", rep.Findings)
	}
	if !strings.HasPrefix(sc.Why, "`host-sync`") {
		t.Errorf("sync_calls why %q", sc.Why)
	}
	// Judged again from its samples (the Action's trusted phase,
	// Rejudge): the same regression, by the same rule.
	m, _ := analysis.MetricByName("sync_calls")
	if re, err := Rejudge(*sc, Samples(base, m), Samples(cand, m), Options{}); err != nil || re.Verdict != stats.Regression {
		t.Errorf("rejudged 0 → 0.33 syncs a step: %s (%s) %v; want regression", re.Verdict, stats.FormatDelta(re), err)
	}
	// Not gated: reported, with its finding, but the run passes.
	rep = Compare(base, cand, Options{Gate: []string{"step_time"}})
	if sc := rep.metric("sync_calls"); sc.Verdict != stats.Regression || rep.Verdict != stats.Pass || len(rep.Findings) == 0 || rep.Findings[0].ID != "host-sync" {
		t.Errorf("sync_calls not gated: %s, overall %s, findings %+v; want a reported regression, pass, host-sync", sc.Verdict, rep.Verdict, rep.Findings)
	}

	// 1 → 1.33 a step: more of the syncs that exist, under the 0.5
	// minimum: pass, no host-sync raised for it.
	base = withSyncs(syntheticRuns(t, 3, 30, 100, 0, 5), 1, 1, 1)
	cand = withSyncs([]Run{synthetic(t, 30, 100, 0, 5)}, 1, 2, 3)
	rep = Compare(base, cand, Options{})
	if sc := rep.metric("sync_calls"); sc.Verdict != stats.Pass || rep.Verdict != stats.Pass {
		t.Errorf("1 → 1.33 syncs a step: sync_calls %s (%s), overall %s; want pass (under the 0.5 minimum)", sc.Verdict, stats.FormatDelta(*sc), rep.Verdict)
	}
	for _, f := range rep.Findings {
		if f.ID == "host-sync" && (f.New || f.Worse) {
			t.Errorf("1 → 1.33: finding %+v; want no new or worse host-sync", f)
		}
	}

	// A/A without syncs: pass, no finding.
	base = syntheticRuns(t, 3, 30, 100, 0, 5)
	rep = Compare(base, []Run{synthetic(t, 30, 100, 0, 5)}, Options{})
	if sc := rep.metric("sync_calls"); sc.Verdict != stats.Pass || len(rep.Findings) != 0 {
		t.Errorf("no syncs on either side: sync_calls %s, findings %+v; want pass, none", sc.Verdict, rep.Findings)
	}
}
