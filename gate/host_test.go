package gate

import (
	"strings"
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/stats"
)

func hostCond(other, pressure float64) *runcond.Conditions {
	return &runcond.Conditions{NotSampled: "no nvidia-smi", Host: &runcond.Host{WallSec: 10, CPUs: 2, OtherCPU: &other, CPUPressure: &pressure, Steal: new(float64)}}
}

func TestHostBusy(t *testing.T) {
	m := DefaultHostMargins
	steal := 0.12
	throttled := 0.3
	for _, tc := range []struct {
		name string
		c    *runcond.Conditions
		want string
	}{
		{"nil", nil, ""},
		{"stored before host sampling", &runcond.Conditions{Sampled: true}, ""},
		{"not sampled", &runcond.Conditions{Host: &runcond.Host{NotSampled: "not Linux"}}, ""},
		{"quiet", hostCond(0.02, 0.05), ""},
		// The job's own threads: pressure, but nobody else ran.
		{"self-inflicted pressure", hostCond(0.1, 0.9), ""},
		{"other processes (0.5 of 2 = 25%)", hostCond(0.5, 0.1), "the host was busy: other processes used 0.5 of 2 CPUs during the run"},
		{"two hogs", hostCond(1.8, 0.98), "the host was busy: other processes used 1.8 of 2 CPUs, CPU pressure 98% during the run"},
		{"pressure from a little other work", hostCond(0.3, 0.38), "the host was busy: CPU pressure 38% with other processes on 0.3 of 2 CPUs during the run"},
		{"steal", &runcond.Conditions{Host: &runcond.Host{CPUs: 2, Steal: &steal}}, "the host was busy: steal time 12% during the run"},
		{"throttled", &runcond.Conditions{Host: &runcond.Host{CPUs: 2, Throttled: &throttled}}, "the host was busy: its cgroup was CPU-throttled in 30% of periods during the run"},
	} {
		if got := HostBusy(tc.c, m); got != tc.want {
			t.Errorf("%s: HostBusy = %q, want %q", tc.name, got, tc.want)
		}
	}
	off := HostMargins{OtherCPU: 1, CPUPressure: 1, PressureOther: 1, Steal: 1, Throttled: 1}
	if got := HostBusy(hostCond(2, 1), off); got != "" {
		t.Errorf("margins of 100%%: HostBusy = %q, want none", got)
	}
}

// A disturbed run takes no part in the time metrics; counts keep it.
func TestCompareDisturbed(t *testing.T) {
	base := syntheticRuns(t, 3, 20, 100, 0, 5)
	busy := "the host was busy: other processes used 1.8 of 2 CPUs during the run"

	// The candidate's only run was disturbed: it ran 60% slower (a hog),
	// and added a sync a step. step_time has no verdict, and says why;
	// sync_calls, a count, still regresses.
	cand := []Run{synthetic(t, 20, 160, 1, 5)}
	plain := Compare(base, cand, Options{})
	if plain.metric("step_time").Verdict != stats.Regression {
		t.Fatalf("undisturbed: step_time %s, want regression (the test's premise)", plain.metric("step_time").Verdict)
	}
	rep := Compare(base, cand, Options{Disturbed: Disturbed{Base: []string{"", "", ""}, Cand: []string{busy}}})
	st := rep.metric("step_time")
	if st.Verdict != stats.Inconclusive || !strings.Contains(st.Reason, "no time verdict: every candidate run was disturbed (run 1: "+busy+")") || st.NeedRuns != 1 {
		t.Errorf("disturbed candidate: step_time %s, reason %q, need %d; want inconclusive naming the host, one more run", st.Verdict, st.Reason, st.NeedRuns)
	}
	if sc := rep.metric("sync_calls"); sc.Verdict != stats.Regression || rep.Verdict != stats.Regression {
		t.Errorf("disturbed candidate: sync_calls %s, overall %s; want regression (counts do not depend on the host)", sc.Verdict, rep.Verdict)
	}
	if rep.HostBusy == nil || !containsPrefix(rep.Warnings, "candidate run 1: "+busy+": left out of the time metrics") {
		t.Errorf("warnings %q, host busy %+v: want the disturbed run named", rep.Warnings, rep.HostBusy)
	}
	// With no quiet candidate run the decomposition and the rest are the
	// disturbed runs', and the report says so.
	if !containsPrefix(rep.Warnings, "where the step time went, the ranks line, the headline and throughput come from disturbed runs (every candidate run was disturbed)") {
		t.Errorf("warnings %q: want the time views said to come from disturbed runs", rep.Warnings)
	}
	// No change and no new sync on a busy host: never a regression.
	rep = Compare(base, []Run{synthetic(t, 20, 160, 0, 5)}, Options{Disturbed: Disturbed{Cand: []string{busy}}})
	if rep.Verdict != stats.Inconclusive {
		t.Errorf("no-change candidate slowed by a hog: verdict %s, want inconclusive", rep.Verdict)
	}

	// A disturbed baseline run is left out of step_time: the baseline's
	// other two runs are compared, and the count says so.
	slowBase := append(syntheticRuns(t, 2, 20, 100, 0, 5), synthetic(t, 20, 300, 0, 5))
	rep = Compare(slowBase, syntheticRuns(t, 3, 20, 100, 0, 5), Options{Disturbed: Disturbed{Base: []string{"", "", busy}}})
	st = rep.metric("step_time")
	if st.Baseline.Runs != 2 || st.Candidate.Runs != 3 || !containsPrefix(st.Notes, "1 baseline and 0 candidate run(s) left out: the host was busy") {
		t.Errorf("disturbed baseline run: step_time over %d+%d runs, notes %q; want 2+3 and a note", st.Baseline.Runs, st.Candidate.Runs, st.Notes)
	}
	// gpu_util is a ratio of times: the busy host's run, whose steps
	// are 3× as long with the same GPU work, is left out of it too.
	if u := rep.metric("gpu_util"); u.Baseline.Runs != 2 || !containsPrefix(u.Notes, "1 baseline and 0 candidate run(s) left out: the host was busy") {
		t.Errorf("disturbed baseline run: gpu_util over %d baseline runs, notes %q; want 2 and the note", u.Baseline.Runs, u.Notes)
	}
	// Where the step time went is the quiet runs' too: the baseline's
	// mean step is ~100 ms, not the 167 ms the busy run would make it.
	if d := rep.Decomposition; d.Baseline < 95 || d.Baseline > 105 || d.Candidate < 95 || d.Candidate > 105 {
		t.Errorf("disturbed baseline run: decomposition %.1f → %.1f ms, want the quiet runs' ~100 → ~100", d.Baseline, d.Candidate)
	}
	if k := rep.metric("kernels"); k.Baseline.Runs != 3 {
		t.Errorf("kernels over %d baseline runs, want all 3 (a count keeps a disturbed run)", k.Baseline.Runs)
	}
	if !containsPrefix(rep.Warnings, "baseline run 3: "+busy) {
		t.Errorf("warnings %q: want the disturbed baseline run named", rep.Warnings)
	}

	// Paired (A/B): a pair goes when either of its runs was disturbed.
	rep = Compare(syntheticRuns(t, 4, 20, 100, 0, 5), syntheticRuns(t, 4, 20, 100, 0, 5), Options{Thresholds: stats.Thresholds{Paired: true},
		Disturbed: Disturbed{Base: []string{"", busy, "", ""}, Cand: []string{"", "", "", busy}}})
	if st := rep.metric("step_time"); st.Baseline.Runs != 2 || st.Candidate.Runs != 2 {
		t.Errorf("paired, pairs 2 and 4 disturbed: step_time over %d+%d runs, want 2+2", st.Baseline.Runs, st.Candidate.Runs)
	}
}

func containsPrefix(xs []string, p string) bool {
	for _, x := range xs {
		if strings.HasPrefix(x, p) {
			return true
		}
	}
	return false
}

// The Action judges an artifact again from the samples it stored: those
// of the runs the gate judged (its selection), then ReapplyHost. A
// candidate slowed by a busy host stays without a time verdict, and a
// disturbed baseline run stays out.
func TestRejudgeDisturbed(t *testing.T) {
	busy := "the host was busy: other processes used 1.8 of 2 CPUs during the run"
	rejudge := func(base, cand []Run, d Disturbed) *Report {
		t.Helper()
		rep := Compare(base, cand, Options{Disturbed: d})
		for i, m := range rep.Metrics {
			am, _ := analysis.MetricByName(m.Name)
			sel := rep.Selection(am)
			b, c := pick(base, sel.Base), pick(cand, sel.Cand)
			r, err := Rejudge(m, Samples(b, am), Samples(c, am), Options{})
			if err != nil {
				t.Fatal(err)
			}
			rep.Metrics[i] = r
		}
		rep.ReapplyHost()
		rep.Verdict = stats.Overall(rep.Metrics)
		return rep
	}
	base := syntheticRuns(t, 3, 20, 100, 0, 5)
	rep := rejudge(base, []Run{synthetic(t, 20, 160, 0, 5)}, Disturbed{Cand: []string{busy}})
	if st := rep.metric("step_time"); st.Verdict != stats.Inconclusive || !strings.Contains(st.Reason, "no time verdict") || rep.Verdict == stats.Regression {
		t.Errorf("rejudged disturbed candidate: step_time %s %q, overall %s; want inconclusive, no regression", st.Verdict, st.Reason, rep.Verdict)
	}
	// A baseline whose third run ran on a busy host 3× slower: judged
	// again, the candidate (as fast as the quiet runs) is no improvement
	// and is judged against 2 runs.
	slowBase := append(syntheticRuns(t, 2, 20, 100, 0, 5), synthetic(t, 20, 300, 0, 5))
	rep = rejudge(slowBase, syntheticRuns(t, 3, 20, 100, 0, 5), Disturbed{Base: []string{"", "", busy}})
	if st := rep.metric("step_time"); st.Baseline.Runs != 2 || st.Verdict == stats.Improvement || !containsPrefix(st.Notes, "1 baseline and 0 candidate run(s) left out") {
		t.Errorf("rejudged with a disturbed baseline run: step_time over %d baseline runs, %s, notes %q; want 2, no improvement, the note", st.Baseline.Runs, st.Verdict, st.Notes)
	}
}

// TestJudgedSamplesNoQuietSide (issue 34): when every baseline run ran on
// a busy host, the samples the Action stores of a time metric carry no
// baseline run, so that deleting the result's host_busy flags cannot
// bring a verdict back; a count keeps every run. Before issue 34 the
// stored samples were every run's.
func TestJudgedSamplesNoQuietSide(t *testing.T) {
	busy := "the host was busy: other processes used 1.8 of 2 CPUs during the run"
	base := syntheticRuns(t, 3, 20, 100, 0, 5)
	cand := []Run{synthetic(t, 20, 100, 0, 5), synthetic(t, 20, 100, 0, 5)}
	rep := Compare(base, cand, Options{Disturbed: Disturbed{Base: []string{busy, busy, busy}}})
	st, _ := analysis.MetricByName("step_time")
	bs, cs := rep.JudgedSamples(st, base, cand, nil, nil)
	if bs == nil || len(bs) != 0 || len(cs) != 2 {
		t.Errorf("step_time with every baseline run disturbed: %d baseline and %d candidate runs stored, want 0 and 2", len(bs), len(cs))
	}
	k, _ := analysis.MetricByName("kernels")
	if bs, cs := rep.JudgedSamples(k, base, cand, nil, nil); len(bs) != 3 || len(cs) != 2 {
		t.Errorf("kernels: %d and %d runs stored, want all 3 and 2 (a count keeps a disturbed run)", len(bs), len(cs))
	}
	// One quiet baseline run: its samples, and the candidate's.
	rep = Compare(base, cand, Options{Disturbed: Disturbed{Base: []string{busy, "", busy}}})
	if bs, cs := rep.JudgedSamples(st, base, cand, nil, nil); len(bs) != 1 || len(cs) != 2 {
		t.Errorf("one quiet baseline run: %d and %d runs stored, want 1 and 2", len(bs), len(cs))
	}
}

// ReapplyHost leaves a step_time judged on quiet timing runs alone, though
// every profiled candidate run was disturbed: the timing runs, not the
// profiled ones, are what step_time was judged on (issue 37's mutant
// "ReapplyHost voiding a timed step_time").
func TestReapplyHostTimed(t *testing.T) {
	busy := "the host was busy: other processes used 1.8 of 2 CPUs during the run"
	base := syntheticRuns(t, 3, 20, 100, 0, 5)
	bt := timed([]float64{80, 81}, []float64{82, 80}, []float64{79, 80})
	ct := timed([]float64{120, 121}, []float64{119, 120})
	for i := range ct {
		ct[i].Conditions = hostCond(0.01, 0.02)
	}
	cand := syntheticRuns(t, 2, 20, 100, 0, 5)
	d := Disturbed{Cand: []string{busy, busy}}
	rep := Compare(base, cand, Options{Disturbed: d, Timing: &TimingRuns{Base: bt, Cand: ct, Margins: DefaultHostMargins}})
	if st := rep.metric("step_time"); st.Verdict != stats.Regression {
		t.Fatalf("timed step_time %s (%s), want regression (the test's premise)", st.Verdict, st.Reason)
	}
	if cw := rep.metric("cpu_wait"); cw.Verdict != stats.Inconclusive || !strings.Contains(cw.Reason, "no time verdict") {
		t.Fatalf("cpu_wait %s %q, want no time verdict (the test's premise)", cw.Verdict, cw.Reason)
	}
	m, _ := analysis.MetricByName("step_time")
	bs, cs := rep.JudgedSamples(m, base, cand, bt, ct)
	for i := range rep.Metrics {
		if rep.Metrics[i].Name != "step_time" {
			continue
		}
		re, err := Rejudge(rep.Metrics[i], bs, cs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		rep.Metrics[i] = re
	}
	rep.ReapplyHost()
	if st := rep.metric("step_time"); st.Verdict != stats.Regression {
		t.Errorf("rejudged: timed step_time %s (%s), want regression: its timing runs were quiet", st.Verdict, st.Reason)
	}
	if cw := rep.metric("cpu_wait"); cw.Verdict != stats.Inconclusive {
		t.Errorf("rejudged: cpu_wait %s, want no time verdict (every profiled candidate run disturbed)", cw.Verdict)
	}
}

// The advice of a "no time verdict" survives: the list of disturbed runs
// is bounded (maxBusyList), the runs past it counted by number, so that
// the reason stays within the comment's bound on free text (600
// characters, report.maxText) with its advice whole (issue 37: "…run 5:
// the host was busy: other p…" and no advice).
func TestHostBusyReasonKeepsAdvice(t *testing.T) {
	long := "the host was busy: other processes used 1.9 of 2 CPUs, CPU pressure 97%, steal time 31%, its cgroup was CPU-throttled in 88% of periods during the run"
	five := []string{long, long, long, long, long}
	advice := "; rerun when the machine is quiet, or on a runner of its own (perf.yaml host: sets how busy a host may be)"
	for _, tc := range []struct {
		name    string
		d       Disturbed
		parts   []string
		noParts []string
	}{
		{"every candidate run", Disturbed{Cand: five},
			[]string{"no time verdict: every candidate run was disturbed (run 1: " + long + "; and 4 more: run 2, run 3, run 4, run 5, named in the warnings)" + advice}, nil},
		{"every run of both sides", Disturbed{Base: five, Cand: five},
			[]string{"every candidate run was disturbed (run 1: the host was busy", "…; and 4 more: run 2, run 3, run 4, run 5, named in the warnings), and every baseline run was disturbed (run 1: ", advice},
			[]string{"run 2: "}},
	} {
		rep := Compare(syntheticRuns(t, 5, 20, 100, 0, 5), syntheticRuns(t, 5, 20, 160, 0, 5), Options{Disturbed: tc.d})
		st := rep.metric("step_time")
		ok := len([]rune(st.Reason)) <= 600 && strings.HasSuffix(st.Reason, advice)
		for _, p := range tc.parts {
			ok = ok && strings.Contains(st.Reason, p)
		}
		for _, p := range tc.noParts {
			ok = ok && !strings.Contains(st.Reason, p)
		}
		if !ok {
			t.Errorf("%s: reason (%d characters): %q; want the list bounded, the advice whole, within 600", tc.name, len([]rune(st.Reason)), st.Reason)
		}
		if !containsPrefix(rep.Warnings, "candidate run 5: "+long) {
			t.Errorf("%s: warnings %q: want every disturbed run named in full", tc.name, rep.Warnings)
		}
	}
}
