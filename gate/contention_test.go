package gate

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/stats"
)

// busyTimed are timing runs beside two hogs: steps of stepMs ms of which
// waitMs were spent in a run queue, on a host whose others used 1.8 of 2
// CPUs.
func busyTimed(steps, waits []float64, runs int) []TimingRun {
	var out []TimingRun
	for range runs {
		out = append(out, TimingRun{StepMs: slices.Clone(steps), WaitMs: slices.Clone(waits), Ranks: 1, Clock: "host", Conditions: hostCond(1.8, 0.95)})
	}
	return out
}

func TestContentionFloor(t *testing.T) {
	f, ok := contentionFloor(TimingRun{StepMs: []float64{100, 30, 10}, WaitMs: []float64{40, 0, 25}}, 0.5)
	// (100-40)/1.5, 30/1.5, max(10-25, 0)/1.5, by hand.
	want := []float64{40, 20, 0}
	if !ok || len(f) != 3 {
		t.Fatalf("contentionFloor = %v, %v", f, ok)
	}
	for i := range want {
		if math.Abs(f[i]-want[i]) > 1e-12 {
			t.Errorf("floor[%d] = %v, want %v", i, f[i], want[i])
		}
	}
	if _, ok := contentionFloor(TimingRun{StepMs: []float64{1}}, 0.5); ok {
		t.Error("a run without a measured wait has a floor")
	}
}

// Every candidate timing run disturbed: a slowdown beyond what the wait
// and the margin explain is a regression, said so; the same code slowed
// only by waiting is no verdict, as before; a run without a measured wait
// keeps the old no-verdict rule.
func TestContentionRule(t *testing.T) {
	base := syntheticRuns(t, 3, 20, 100, 0, 5)
	bt := timed([]float64{20, 21, 19}, []float64{20.5, 20, 21}, []float64{19, 20, 20}, []float64{21, 20, 20}, []float64{20, 19.5, 20.5})
	opts := func(ct []TimingRun) Options {
		return Options{Timing: &TimingRuns{Base: bt, Cand: ct, Margins: DefaultHostMargins}}
	}

	// 30 ms of data loading a step on top of 20 ms, beside hogs: steps of
	// 120 ms, 70 of them waiting. (120-70)/1.6 = 31 ms > 20 ms × 1.15.
	slow := busyTimed([]float64{120, 118, 122}, []float64{70, 69, 71}, 3)
	rep := Compare(base, base[:1], opts(slow))
	st := rep.metric("step_time")
	if st.Verdict != stats.Regression {
		t.Fatalf("slow loader beside hogs: step_time %s (%s), want regression", st.Verdict, st.Reason)
	}
	if !rep.Timing.Contended || rep.Timing.ContentionMargin != DefaultContentionMargin {
		t.Errorf("Timing %+v, want contended with the default margin", rep.Timing)
	}
	if txt := rep.Timing.Text(); !strings.Contains(txt, "step_time judged on the candidate's steps less the run-queue wait its threads measured, ÷ 1.60") {
		t.Errorf("Timing.Text() = %q, want the rule said", txt)
	}
	if want := 50.0 / (1 + DefaultContentionMargin); math.Abs(st.Candidate.Value-want) > 0.1 {
		t.Errorf("candidate value %v, want the floor %v", st.Candidate.Value, want)
	}
	if !slices.ContainsFunc(st.Notes, func(n string) bool {
		return strings.Contains(n, "less the run-queue wait its threads measured (70.0 ms a step")
	}) ||
		!slices.Contains(st.Notes, contendedNote) {
		t.Errorf("notes %q: want the wait taken off and what it means", st.Notes)
	}
	// The Action's trusted phase judges the stored samples again: the
	// floors, and the regression stands.
	m, _ := analysis.MetricByName("step_time")
	bs, cs := rep.JudgedSamples(m, base, base[:1], bt, slow)
	if len(bs) != 5 || len(cs) != 3 || math.Abs(cs[0][0]-50/(1+DefaultContentionMargin)) > 1e-9 {
		t.Fatalf("judged samples %v / %v, want the baseline and the candidate's floors", bs, cs)
	}
	re, err := Rejudge(*st, bs, cs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range rep.Metrics {
		if rep.Metrics[i].Name == "step_time" {
			rep.Metrics[i] = re
		}
	}
	rep.ReapplyHost()
	if v := rep.metric("step_time").Verdict; v != stats.Regression {
		t.Errorf("rejudged: step_time %s, want regression", v)
	}

	// The same code (20 ms) beside hogs: 60 ms steps, 38 of them waiting,
	// the rest 10% longer for caches: no regression, no verdict.
	same := busyTimed([]float64{60, 61, 59}, []float64{38, 39, 37}, 3)
	rep = Compare(base, base[:1], opts(same))
	st = rep.metric("step_time")
	if st.Verdict != stats.Inconclusive || !strings.Contains(st.Reason, "no time verdict: every candidate run was disturbed") || rep.Timing.Contended {
		t.Errorf("same code beside hogs: step_time %s (%s), contended %v, want no time verdict", st.Verdict, st.Reason, rep.Timing.Contended)
	}

	// No measured wait (a run stored before gpugate measured it): the
	// slow loader has no verdict, as before the rule.
	nowait := busyTimed([]float64{120, 118, 122}, nil, 3)
	rep = Compare(base, base[:1], opts(nowait))
	if st := rep.metric("step_time"); st.Verdict != stats.Inconclusive || rep.Timing.Contended {
		t.Errorf("no wait measured: step_time %s, want no verdict", st.Verdict)
	}

	// A margin large enough to explain it (perf.yaml contention_margin
	// 200%): (120-70)/3 = 16.7 ms, no regression.
	o := opts(slow)
	o.Timing.Margins.Contention = 2
	if st := Compare(base, base[:1], o).metric("step_time"); st.Verdict == stats.Regression {
		t.Errorf("margin 200%%: step_time %s, want no regression", st.Verdict)
	}

	// Every baseline timing run disturbed too: judged against them as
	// measured (upper bounds of their quiet times).
	bbusy := busyTimed([]float64{25, 26, 24}, []float64{5, 6, 4}, 5)
	o = Options{Timing: &TimingRuns{Base: bbusy, Cand: slow, Margins: DefaultHostMargins}}
	rep = Compare(base, base[:1], o)
	if st := rep.metric("step_time"); st.Verdict != stats.Regression || math.Abs(st.Baseline.Value-25) > 0.01 {
		t.Errorf("busy baseline at 25 ms, slow floor 33 ms: step_time %s, baseline %v, want regression against 25 ms", st.Verdict, st.Baseline.Value)
	}
	// ... which a baseline slowed as much as the candidate's floor is not.
	bbusy = busyTimed([]float64{60, 61, 59}, []float64{38, 39, 37}, 5)
	o.Timing.Base = bbusy
	if st := Compare(base, base[:1], o).metric("step_time"); st.Verdict == stats.Regression {
		t.Errorf("busy baseline at 60 ms: step_time %s, want no regression", st.Verdict)
	}
}

// The same code beside other work is never a regression by the rule,
// whatever the wait, as long as the slowdown the wait leaves unexplained
// is within the margin: simulated quiet steps q (run CV 5%), busy steps
// q × (1 + u) + w with u uniform in [0, margin] and w from 0 to 10 q,
// through Compare, 2000 trials.
func TestContentionSameCodeNeverRegresses(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 1))
	base := syntheticRuns(t, 3, 20, 100, 0, 5)
	run := func(q float64) []float64 {
		s := make([]float64, 20)
		for i := range s {
			s[i] = q * (1 + 0.02*rng.NormFloat64())
		}
		return s
	}
	var regress, decided int
	for range 2000 {
		var bt, ct []TimingRun
		for range 5 {
			bt = append(bt, TimingRun{StepMs: run(20 * (1 + 0.05*rng.NormFloat64())), Ranks: 1, Clock: "host", Conditions: hostCond(0.01, 0.01)})
		}
		for range 3 {
			q := run(20 * (1 + 0.05*rng.NormFloat64()))
			r := TimingRun{Ranks: 1, Clock: "host", Conditions: hostCond(1.8, 0.9)}
			for _, x := range q {
				w := rng.Float64() * 10 * x
				r.StepMs = append(r.StepMs, x*(1+rng.Float64()*DefaultContentionMargin)+w)
				r.WaitMs = append(r.WaitMs, w)
			}
			ct = append(ct, r)
		}
		rep := Compare(base, base[:1], Options{Timing: &TimingRuns{Base: bt, Cand: ct, Margins: DefaultHostMargins}})
		if rep.metric("step_time").Verdict == stats.Regression {
			regress++
		}
		if rep.Timing.Contended {
			decided++
		}
	}
	// The floors lie at or below the quiet times: a regression would take
	// the interval's chance error (α = 5%) on top of a candidate already
	// leaning faster. None in 2000.
	if regress > 0 || decided > 0 {
		t.Errorf("same code beside other work: %d regressions (%d by the contention rule) in 2000 trials, want 0", regress, decided)
	}
}

// A stored timing run's waits are read through CheckTimingRuns too: an
// imported one with a wait per step missing or negative never reaches the
// rule.
func TestCheckTimingRunsWaits(t *testing.T) {
	ok := TimingRun{StepMs: []float64{1, 2}, WaitMs: []float64{0, 1.5}, CPUMs: []float64{1, 1}, Ranks: 1, Clock: "host"}
	if err := CheckTimingRuns([]TimingRun{ok}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		r    TimingRun
		want string
	}{
		{TimingRun{StepMs: []float64{1, 2}, WaitMs: []float64{0}, Ranks: 1, Clock: "host"}, "2 steps but 1 wait_ms"},
		{TimingRun{StepMs: []float64{1}, WaitMs: []float64{-1}, Ranks: 1, Clock: "host"}, "wait_ms -1 is not a time"},
		{TimingRun{StepMs: []float64{1}, CPUMs: []float64{math.NaN()}, Ranks: 1, Clock: "host"}, "cpu_ms NaN is not a time"},
	} {
		if err := CheckTimingRuns([]TimingRun{tc.r}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckTimingRuns(%+v) = %v, want %q", tc.r, err, tc.want)
		}
	}
}

// A Slurm run's hosts are its nodes': the run is disturbed when any node
// was busy, and the reason names it.
func TestHostBusyNodes(t *testing.T) {
	quiet, busy := hostCond(0.01, 0.01).Host, hostCond(1.8, 0.95).Host
	quiet.Node, busy.Node = "n1", "n2"
	c := &runcond.Conditions{HostNodes: []*runcond.Host{quiet, busy}}
	if got, want := HostBusy(c, DefaultHostMargins), "the host was busy: node n2: other processes used 1.8 of 2 CPUs, CPU pressure 95% during the run"; got != want {
		t.Errorf("HostBusy = %q, want %q", got, want)
	}
	c.HostNodes = c.HostNodes[:1]
	if got := HostBusy(c, DefaultHostMargins); got != "" {
		t.Errorf("quiet node: HostBusy = %q, want quiet", got)
	}
}
