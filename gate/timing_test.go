package gate

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/stats"
)

func timed(ms ...[]float64) []TimingRun {
	var out []TimingRun
	for _, m := range ms {
		out = append(out, TimingRun{StepMs: m, Ranks: 1, Clock: "host"})
	}
	return out
}

// geoMeanOfMeans is the gate's run value by hand: each run's mean step,
// then the geometric mean over runs.
func geoMeanOfMeans(runs ...[]float64) float64 {
	var s float64
	for _, r := range runs {
		var m float64
		for _, x := range r {
			m += x
		}
		s += math.Log(m / float64(len(r)))
	}
	return math.Exp(s / float64(len(runs)))
}

// Step time is judged on the timing runs where both sides have them: the
// profiled runs here say +60% (a profiler that costs more in the
// candidate), the timing runs say the same code; counts still come from
// the profiled runs and still regress.
func TestCompareTimed(t *testing.T) {
	base := syntheticRuns(t, 3, 20, 100, 0, 5)
	cand := []Run{synthetic(t, 20, 160, 1, 5)}
	bt := timed([]float64{80, 81, 79}, []float64{82, 80, 81}, []float64{79, 80, 80})
	ct := timed([]float64{80.5, 80, 81})
	rep := Compare(base, cand, Options{Timing: &TimingRuns{Base: bt, Cand: ct, Margins: DefaultHostMargins}})
	st := rep.metric("step_time")
	if st.Verdict != stats.Pass {
		t.Fatalf("step_time %s (%s), want pass: the timing runs did not change", st.Verdict, stats.FormatDelta(*st))
	}
	wantB := geoMeanOfMeans([]float64{80, 81, 79}, []float64{82, 80, 81}, []float64{79, 80, 80})
	wantC := geoMeanOfMeans([]float64{80.5, 80, 81})
	if math.Abs(st.Baseline.Value-wantB) > 1e-9 || math.Abs(st.Candidate.Value-wantC) > 1e-9 {
		t.Errorf("step_time %v → %v, want the timing runs' %v → %v", st.Baseline.Value, st.Candidate.Value, wantB, wantC)
	}
	if !slices.ContainsFunc(st.Notes, func(n string) bool {
		return strings.HasPrefix(n, "from timing runs: 3 baseline and 1 candidate run(s)")
	}) {
		t.Errorf("step_time notes %q: want where it came from", st.Notes)
	}
	if rep.metric("sync_calls").Verdict != stats.Regression {
		t.Errorf("sync_calls %s, want regression (a count, from the profiled runs)", rep.metric("sync_calls").Verdict)
	}
	if rep.Timing == nil || !slices.Equal(rep.Timing.Metrics, []string{"step_time"}) || rep.Timing.BaseRuns != 3 || rep.Timing.CandRuns != 1 ||
		rep.Timing.BaseProfiled != 3 || rep.Timing.CandProfiled != 1 || rep.Timing.Clock != "host" {
		t.Errorf("Timing %+v", rep.Timing)
	}
	if got := rep.Timing.Text(); !strings.HasPrefix(got, "step_time from 3 baseline and 1 candidate timing run(s) (no profiler, steps timed by host); every other metric from 3 baseline and 1 candidate profiled run(s)") {
		t.Errorf("Timing.Text() = %q", got)
	}

	// A slowdown in the timing runs is a regression even where the
	// profiled runs do not show it.
	slow := timed([]float64{120, 121, 119})
	rep = Compare(base, base[:1], Options{Timing: &TimingRuns{Base: bt, Cand: slow, Margins: DefaultHostMargins}})
	if v := rep.metric("step_time").Verdict; v != stats.Regression {
		t.Errorf("timing runs +50%%: step_time %s, want regression", v)
	}

	// A baseline recorded before timing runs: both sides' step time from
	// the profiled runs, said.
	rep = Compare(base, cand, Options{Timing: &TimingRuns{Cand: ct, Margins: DefaultHostMargins}})
	if v := rep.metric("step_time").Verdict; v != stats.Regression {
		t.Errorf("no baseline timing runs: step_time %s, want the profiled runs' regression", v)
	}
	if !slices.ContainsFunc(rep.Warnings, func(w string) bool {
		return strings.HasPrefix(w, "step_time: the baseline has no timing runs") && strings.Contains(w, "judged on the profiled runs of both sides")
	}) {
		t.Errorf("warnings %q: want why step time came from the profiled runs", rep.Warnings)
	}
	if len(rep.Timing.Metrics) != 0 {
		t.Errorf("Timing.Metrics %q, want none", rep.Timing.Metrics)
	}
}

// A timing run on a busy host is left out of step time; with no quiet
// candidate timing run left, step time has no verdict and says why.
func TestCompareTimedDisturbed(t *testing.T) {
	base := syntheticRuns(t, 3, 20, 100, 0, 5)
	bt := timed([]float64{80, 81}, []float64{82, 80}, []float64{79, 80})
	hog := timed([]float64{160, 170})
	hog[0].Conditions = hostCond(1.8, 0.9)
	quiet := timed([]float64{80, 81})
	quiet[0].Conditions = hostCond(0.01, 0.02)

	rep := Compare(base, base[:2], Options{Timing: &TimingRuns{Base: bt, Cand: append(slices.Clone(hog), quiet...), Margins: DefaultHostMargins}})
	st := rep.metric("step_time")
	if st.Verdict != stats.Pass || st.Candidate.N != 1 {
		t.Errorf("one disturbed and one quiet timing run: step_time %s over %d candidate run(s), want pass over the quiet one", st.Verdict, st.Candidate.N)
	}
	if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.HasPrefix(w, "candidate timing run 1: the host was busy") }) {
		t.Errorf("warnings %q", rep.Warnings)
	}
	rep = Compare(base, base[:1], Options{Timing: &TimingRuns{Base: bt, Cand: hog, Margins: DefaultHostMargins}})
	st = rep.metric("step_time")
	if st.Verdict != stats.Inconclusive || !strings.Contains(st.Reason, "every candidate run was disturbed") {
		t.Errorf("every candidate timing run disturbed: step_time %s (%s), want no verdict", st.Verdict, st.Reason)
	}
	// The samples the Action stores for the trusted phase: none of the
	// candidate, which had no quiet timing run (issue 34: with them, a
	// result whose host_busy flags were deleted would be judged on the
	// hog's runs); the trusted phase gives such a metric no time verdict
	// (action/judge.go).
	m, _ := analysis.MetricByName("step_time")
	bs, cs := rep.JudgedSamples(m, base, base[:1], bt, hog)
	if len(bs) != 3 || cs == nil || len(cs) != 0 {
		t.Fatalf("judged samples %v / %v, want the 3 baseline timing runs and no candidate run", bs, cs)
	}
}

// Stored timing runs are read through CheckTimingRuns: an imported one
// with an impossible value never reaches a verdict.
func TestCheckTimingRuns(t *testing.T) {
	ok := TimingRun{StepMs: []float64{1, 2}, Ranks: 1, Clock: "cuda-events"}
	if err := CheckTimingRuns([]TimingRun{ok}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		r    TimingRun
		want string
	}{
		{"zero", TimingRun{StepMs: []float64{1, 0}, Ranks: 1, Clock: "host"}, "step 2: 0 ms is not a step time"},
		{"negative", TimingRun{StepMs: []float64{-1}, Ranks: 1, Clock: "host"}, "step 1: -1 ms"},
		{"NaN", TimingRun{StepMs: []float64{math.NaN()}, Ranks: 1, Clock: "host"}, "NaN ms"},
		{"huge", TimingRun{StepMs: []float64{1e300}, Ranks: 1, Clock: "host"}, "1e+300 ms"},
		{"empty", TimingRun{Ranks: 1, Clock: "host"}, "0 steps"},
		{"clock", TimingRun{StepMs: []float64{1}, Ranks: 1, Clock: "`@here`"}, "is not one gpugate times by"},
		{"ranks", TimingRun{StepMs: []float64{1}, Clock: "host"}, "0 ranks"},
	} {
		if err := CheckTimingRuns([]TimingRun{ok, tc.r}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// The timing runs' own run conditions void a step-time verdict as the
// profiled runs' do: baseline timing runs on a throttled GPU make a
// slower candidate look like a pass (the reviewer's case: 130 ms under HW
// slowdown against 118 ms), and a throttled candidate timing run a
// regression.
func TestTimingConditions(t *testing.T) {
	calm := map[string]float64{"hw_slowdown": 0, "sw_power_cap": 0}
	hot := map[string]float64{"hw_slowdown": 0.6, "sw_power_cap": 0}
	cond := func(sm float64, shares map[string]float64) *runcond.Conditions {
		return &runcond.Conditions{Sampled: true, JobGPUsKnown: true, GPUs: []runcond.GPUConditions{gpu(0, "GPU-a", sm, shares)}}
	}
	with := func(rs []TimingRun, c *runcond.Conditions) []TimingRun {
		for i := range rs {
			rs[i].Conditions = c
		}
		return rs
	}
	base := syntheticRuns(t, 3, 20, 100, 0, 5)
	healthy := []*runcond.Conditions{cond(1410, calm), cond(1410, calm), cond(1410, calm)}
	for _, tc := range []struct {
		name       string
		bt, ct     []TimingRun
		want       stats.Verdict
		voidPrefix string
	}{
		{"throttled baseline timing runs, a pass", with(timed([]float64{130, 131}, []float64{129, 130}, []float64{130, 130}), cond(1000, hot)),
			with(timed([]float64{118, 118}), cond(1410, calm)), stats.Inconclusive, "run conditions void the pass: the baseline ran under worse conditions than the candidate: timing runs: "},
		{"throttled candidate timing run, a regression", with(timed([]float64{100, 101}, []float64{99, 100}, []float64{100, 100}), cond(1410, calm)),
			with(timed([]float64{160, 161}), cond(1000, hot)), stats.Inconclusive, "run conditions void the regression: timing run 1: GPU 0: SM clock 1410 → 1000 MHz"},
		{"healthy timing runs, a regression stands", with(timed([]float64{100, 101}, []float64{99, 100}, []float64{100, 100}), cond(1410, calm)),
			with(timed([]float64{160, 161}), cond(1410, calm)), stats.Regression, ""},
	} {
		rep := Compare(base, base[:1], Options{Timing: &TimingRuns{Base: tc.bt, Cand: tc.ct, Margins: DefaultHostMargins}})
		ApplyConditions(rep, healthy, healthy[:1], DefaultConditionMargins, "not recorded")
		ApplyTimingConditions(rep, tc.bt, tc.ct, DefaultConditionMargins, "not recorded")
		if rep.Verdict != tc.want {
			t.Errorf("%s: verdict %s, want %s (void %q, baseline worse %q)", tc.name, rep.Verdict, tc.want, rep.Conditions.Void, rep.Conditions.BaselineWorse)
		}
		if tc.voidPrefix != "" && !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.HasPrefix(w, tc.voidPrefix) }) {
			t.Errorf("%s: warnings %q, want one starting %q", tc.name, rep.Warnings, tc.voidPrefix)
		}
	}
}

// A baseline timed by the GPU's events is never judged against a
// candidate timed by its step_log: both sides' step time from the profiled
// runs, said.
func TestTimedClocksDiffer(t *testing.T) {
	base := syntheticRuns(t, 3, 20, 100, 0, 5)
	bt := timed([]float64{80, 81}, []float64{82, 80}, []float64{79, 80})
	for i := range bt {
		bt[i].Clock = "cuda-events"
	}
	ct := timed([]float64{40, 41})
	ct[0].Clock = "step_log"
	rep := Compare(base, base[:1], Options{Timing: &TimingRuns{Base: bt, Cand: ct, Margins: DefaultHostMargins}})
	if len(rep.Timing.Metrics) != 0 || !strings.Contains(rep.Timing.Note, "timed by cuda-events, the candidate's by step_log: different clocks") {
		t.Errorf("Timing %+v", rep.Timing)
	}
	if st := rep.metric("step_time"); st.Candidate.Value < 90 {
		t.Errorf("step_time candidate %v: want the profiled runs' (~100 ms), not the step_log's 40", st.Candidate.Value)
	}
}

// Both sides mixing the same clocks is not "the same clock": step time
// then comes from the profiled runs (docs/verdicts.md §5d, docs/json.md
// timing.clock). Issue 37's repro: baseline timing runs host 80 /
// step_log 120 / host 81 ms, candidate host 95 / step_log 140 ms; judged
// on the mixed timing runs it was +25% [−39, +156] inconclusive; the
// profiled runs (the same code) pass. The candidate's clocks come in
// either order: the sides' clocks are compared as sets.
func TestTimedClocksMixed(t *testing.T) {
	base := syntheticRuns(t, 3, 20, 100, 0, 5)
	cand := []Run{syntheticSeed(t, 7, 20, 100, 0, 5)}
	clocked := func(ms float64, clock string) TimingRun {
		return TimingRun{StepMs: []float64{ms, ms, ms}, Ranks: 1, Clock: clock}
	}
	bt := []TimingRun{clocked(80, "host"), clocked(120, "step_log"), clocked(81, "host")}
	for _, ct := range [][]TimingRun{
		{clocked(95, "host"), clocked(140, "step_log")},
		{clocked(140, "step_log"), clocked(95, "host")},
	} {
		rep := Compare(base, cand, Options{Timing: &TimingRuns{Base: bt, Cand: ct, Margins: DefaultHostMargins}})
		st := rep.metric("step_time")
		if rep.Timing == nil || len(rep.Timing.Metrics) != 0 || rep.Timing.Clock != "host, step_log" ||
			!strings.HasPrefix(rep.Timing.Note, "the timing runs of each side mix clocks (host, step_log): a step is not the same length on two clocks: step time is judged on the profiled runs") {
			t.Errorf("candidate clocks %s, %s: Timing %+v; want step time from the profiled runs, saying the sides mix clocks", ct[0].Clock, ct[1].Clock, rep.Timing)
			continue
		}
		// The profiled runs by hand: each run's mean step, geometric
		// mean over runs.
		wantB, wantC := runMeanGeo(base), runMeanGeo(cand)
		if st.Verdict != stats.Pass || math.Abs(st.Baseline.Value-wantB) > 1e-6 || math.Abs(st.Candidate.Value-wantC) > 1e-6 {
			t.Errorf("candidate clocks %s, %s: step_time %s %v → %v (%s); want pass on the profiled runs' %v → %v",
				ct[0].Clock, ct[1].Clock, st.Verdict, st.Baseline.Value, st.Candidate.Value, stats.FormatDelta(*st), wantB, wantC)
		}
	}
}

// runMeanGeo is the geometric mean over runs of each run's mean step (ms),
// from the steps' own windows.
func runMeanGeo(runs []Run) float64 {
	var per [][]float64
	for _, r := range runs {
		var ms []float64
		for _, s := range r[0].Steps {
			ms = append(ms, float64(s.End-s.Start)/1e6)
		}
		per = append(per, ms)
	}
	return geoMeanOfMeans(per...)
}
