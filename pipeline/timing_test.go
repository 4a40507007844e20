package pipeline

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/runner"
	"github.com/gpugate/gpugate/stats"
)

// simTiming is one timing run of 30 steps around levelMs (the run's level
// times a lognormal run-to-run factor is the caller's), per-step noise cv.
func simTiming(rng *rand.Rand, levelMs, cv float64) gate.TimingRun {
	xs := make([]float64, simSteps)
	for i := range xs {
		xs[i] = max(levelMs*(1+cv*rng.NormFloat64()), 0.001)
	}
	return gate.TimingRun{StepMs: xs, Ranks: 1, Clock: "host"}
}

// timedTrial is repeat: auto through sampleRuns with timing runs: the
// baseline has base (profiled) and baseT (timing) runs; prof and timing
// make candidate run i of each kind. It returns the report and how many
// profiled and timing runs were made.
func timedTrial(t testing.TB, base []gate.Run, baseT []gate.TimingRun, prof func(i int) gate.Run, timing func(i int) gate.TimingRun, extra string) (*gate.Report, int, int) {
	t.Helper()
	c, w := simConfig(t, "    repeat: auto\n    max_runs: 6\n    budget: 1h\n"+extra)
	p := &Plan{o: Options{Config: c, Workload: w, Log: io.Discard, Stdout: io.Discard}, name: w.Name, Profiler: "torch"}
	profiled, timed := 0, 0
	p.job = func(_ context.Context, out string) (*Once, error) {
		profiled++
		return &Once{Run: prof(profiled), Duration: time.Millisecond}, nil
	}
	p.timingJob = func(_ context.Context, out string) (*Once, error) {
		timed++
		if filepath.Base(out) != "timing" {
			t.Fatalf("timing run written to %s, want …/runN/timing", out)
		}
		tr := timing(timed)
		return &Once{Timing: &tr, Duration: time.Millisecond}, nil
	}
	if !p.timing() {
		t.Fatal("the plan makes no timing runs")
	}
	ex := &Execution{Workload: w.Name, Start: time.Now(), Timed: true, Out: "out"}
	once, _ := p.RunOnce(context.Background(), p.runDir("out", 1))
	ex.add(once, time.Millisecond)
	if _, err := p.timeOnce(context.Background(), ex, 1); err != nil {
		t.Fatal(err)
	}
	sel := &Selection{Runs: base, Timing: baseT, Newest: time.Now()}
	rep, err := p.sampleRuns(context.Background(), ex, sel, func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Runs) != profiled || len(ex.Timing) != timed || timed > w.MaxRuns {
		t.Fatalf("%d profiled and %d timing runs made, %d and %d in the execution (max_runs %d)", profiled, timed, len(ex.Runs), len(ex.Timing), w.MaxRuns)
	}
	return rep, profiled, timed
}

// TestAutoTimingRuns: under repeat: auto with timing runs, step time is
// sampled from cheap timing runs and the job is profiled once while the
// counts settle at the first look; the A/A false-regression rate stays
// within the documented 1%, a slowdown seen only by the timing runs is
// caught, and an undecided metric of the profiled runs (a noisy CPU wait)
// brings more profiled runs.
func TestAutoTimingRuns(t *testing.T) {
	trials := 500
	if testing.Short() {
		trials = 150
	}
	rng := rand.New(rand.NewPCG(7, 8))
	drift := func() float64 { return math.Exp(0.08 * rng.NormFloat64()) }
	baseline := func() ([]gate.Run, []gate.TimingRun) {
		var b []gate.Run
		var bt []gate.TimingRun
		for range 5 {
			b = append(b, simRun(rng, 100*drift(), 0.05))
			bt = append(bt, simTiming(rng, 90*drift(), 0.05))
		}
		return b, bt
	}
	for _, tc := range []struct {
		name     string
		factor   float64
		want     stats.Verdict
		min, max float64
	}{
		{"A/A: false regression", 1, stats.Regression, 0, 0.01},
		{"timing runs ×1.5: regression", 1.5, stats.Regression, 0.95, 1},
	} {
		hits, profiledMax, timedSum := 0, 0, 0
		for range trials {
			b, bt := baseline()
			rep, profiled, timed := timedTrial(t, b, bt,
				func(int) gate.Run { return simRun(rng, 100*drift(), 0.05) },
				func(int) gate.TimingRun { return simTiming(rng, 90*tc.factor*drift(), 0.05) }, "")
			if rep.Verdict == tc.want {
				hits++
			}
			profiledMax = max(profiledMax, profiled)
			timedSum += timed
			if rep.Timing == nil || len(rep.Timing.Metrics) != 1 || rep.Timing.CandRuns != timed {
				t.Fatalf("%s: report's timing %+v after %d timing runs", tc.name, rep.Timing, timed)
			}
		}
		rate := float64(hits) / float64(trials)
		t.Logf("%s: %.2f%% %s, %.2f timing runs on average, at most %d profiled", tc.name, 100*rate, tc.want, float64(timedSum)/float64(trials), profiledMax)
		if rate < tc.min || rate > tc.max {
			t.Errorf("%s: %s in %.2f%% of %d trials, want %.0f%%–%.0f%%", tc.name, tc.want, 100*rate, trials, 100*tc.min, 100*tc.max)
		}
		if profiledMax != 1 {
			t.Errorf("%s: up to %d profiled runs, want 1: the counts settle at the first look", tc.name, profiledMax)
		}
	}

	// A noisy CPU wait (gated by default, judged on the profiled runs)
	// that one profiled run cannot settle: more profiled runs are made.
	more := 0
	for range 50 {
		var b []gate.Run
		var bt []gate.TimingRun
		for range 5 {
			b = append(b, simRunWait(rng, 100*drift(), 20*math.Exp(0.4*rng.NormFloat64()), 0.05))
			bt = append(bt, simTiming(rng, 90*drift(), 0.05))
		}
		_, profiled, timed := timedTrial(t, b, bt,
			func(int) gate.Run { return simRunWait(rng, 100*drift(), 20*math.Exp(0.4*rng.NormFloat64()), 0.05) },
			func(int) gate.TimingRun { return simTiming(rng, 90*drift(), 0.05) }, "")
		if profiled > 1 {
			more++
		}
		if profiled > timed {
			t.Fatalf("%d profiled runs but %d timing runs: every run is timed", profiled, timed)
		}
	}
	if more == 0 {
		t.Error("a CPU wait of run CV 40% never brought a second profiled run")
	}
}

// TestAutoTimingFallsBack: a job whose timing run timed no step (no
// optimizer step, no step_log) makes no more timing runs, and step time is
// judged on the profiled runs of both sides, said in the report.
func TestAutoTimingFallsBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	c, w := simConfig(t, "    repeat: auto\n    max_runs: 4\n    budget: 1h\n")
	p := &Plan{o: Options{Config: c, Workload: w, Log: io.Discard, Stdout: io.Discard}, name: w.Name, Profiler: "torch"}
	timed, profiled := 0, 0
	// Candidate runs that leave step time undecided for several looks
	// (TestAutoAdvice's), so that sampling goes on after the fallback
	// (issue 37's mutant "timingOn ignoring TimingWhy" survived a first
	// look that decided).
	candMs := []float64{121, 111, 126}
	p.job = func(context.Context, string) (*Once, error) {
		profiled++
		return &Once{Run: fixedRun(candMs[(profiled-1)%len(candMs)])}, nil
	}
	p.timingJob = func(context.Context, string) (*Once, error) {
		timed++
		return &Once{TimingWhy: "the timing run timed no step"}, nil
	}
	ex := &Execution{Workload: w.Name, Start: time.Now(), Timed: true, Out: "out"}
	once, _ := p.RunOnce(context.Background(), "out/run1")
	ex.add(once, time.Millisecond)
	p.timeOnce(context.Background(), ex, 1)
	b := fixedRuns(100, 110, 92, 104, 96)
	rep, err := p.sampleRuns(context.Background(), ex, &Selection{Runs: b, Timing: []gate.TimingRun{simTiming(rng, 90, 0.05)}, Newest: time.Now()}, func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if profiled < 2 {
		t.Fatalf("%d profiled run(s), %s: the test needs sampling to go on after the fallback", profiled, rep.Sampling.Stopped)
	}
	if timed != 1 || rep.Sampling.Runs != profiled || rep.Sampling.Profiled != 0 {
		t.Errorf("%d timing runs and %d profiled, sampling %+v; want 1 timing run (none after the first timed nothing), every run profiled and counted", timed, profiled, rep.Sampling)
	}
	if rep.Timing == nil || len(rep.Timing.Metrics) != 0 || !strings.Contains(rep.Timing.Note, "the timing run timed no step") {
		t.Errorf("report's timing %+v: want step time from the profiled runs, and why", rep.Timing)
	}
}

// Record stores each timing run once, with the profiled run recorded
// after it (or its own): repeat: auto records after each profiled run, and
// its timing-only runs go with the next one (the reviewer's case stored
// timing runs 3 and 4 twice).
func TestTimingOfStoresOnce(t *testing.T) {
	ex := &Execution{}
	tr := func(ms float64) gate.TimingRun { return gate.TimingRun{StepMs: []float64{ms}, Ranks: 1, Clock: "host"} }
	ex.Timing = []gate.TimingRun{tr(1)}
	got := [][]gate.TimingRun{timingOf(ex, 0, 1)} // run 1 recorded at once
	ex.Timing = append(ex.Timing, tr(2), tr(3), tr(4), tr(5))
	got = append(got, timingOf(ex, 1, 2)) // a profiled run 5: with 2..5
	ex.Timing = append(ex.Timing, tr(6))
	got = append(got, timingOf(ex, 2, 3))
	want := [][]float64{{1}, {2, 3, 4, 5}, {6}}
	for i := range want {
		var ms []float64
		for _, r := range got[i] {
			ms = append(ms, r.StepMs[0])
		}
		if fmt.Sprint(ms) != fmt.Sprint(want[i]) {
			t.Errorf("record %d stores timing runs %v, want %v", i+1, ms, want[i])
		}
	}
	// Execute's fixed runs: one each, the last with any left.
	ex = &Execution{Timing: []gate.TimingRun{tr(1), tr(2), tr(3)}}
	for i, w := range []string{"[1]", "[2]", "[3]"} {
		if g := fmt.Sprint(timingOf(ex, i, 3)[0].StepMs); g != w || len(timingOf(ex, i, 3)) != 0 {
			t.Errorf("fixed run %d: %s, want %s once", i+1, g, w)
		}
	}
}

// The profiling overhead leaves disturbed runs out where quiet ones of
// their kind remain, and says when it comes from disturbed runs; below ×1
// it is then no measurement (issue 37: a timing run at 1,042 ms against
// ~300 ms, and "×0.30" reported without comment).
func TestTimingOverheadDisturbed(t *testing.T) {
	other, pressure := 1.8, 0.9
	busy := &runcond.Conditions{NotSampled: "no nvidia-smi", Host: &runcond.Host{WallSec: 10, CPUs: 2, OtherCPU: &other, CPUPressure: &pressure, Steal: new(float64)}}
	tr := func(ms float64, c *runcond.Conditions) gate.TimingRun {
		return gate.TimingRun{StepMs: []float64{ms, ms, ms}, Ranks: 1, Clock: "host", Conditions: c}
	}
	runs := fixedRuns(330, 330)
	m := gate.DefaultHostMargins

	o := timingOverhead(m, runs, nil, []gate.TimingRun{tr(300, nil), tr(1042, busy), tr(300, nil)})
	if o == nil || math.Abs(o.Ratio-1.1) > 1e-9 || o.Disturbed != "" {
		t.Errorf("one disturbed timing run among quiet ones: %+v, want ×1.10 from the quiet ones", o)
	}
	o = timingOverhead(m, runs, nil, []gate.TimingRun{tr(1000, busy), tr(1100, busy)})
	if o == nil || o.Ratio >= 1 || o.Disturbed != "every timing run was disturbed" {
		t.Fatalf("every timing run disturbed: %+v, want a ratio below 1 said to come from disturbed runs", o)
	}
	if got := report.OverheadText(o); !strings.HasPrefix(got, "not measured: ×0.31, the profiled runs faster than the timing runs, comes from disturbed runs (every timing run was disturbed; ") {
		t.Errorf("OverheadText = %q, want it flagged, not a measurement", got)
	}
	// A disturbed profiled run is left out the same way.
	o = timingOverhead(m, fixedRuns(330, 900), []*runcond.Conditions{nil, busy}, []gate.TimingRun{tr(300, nil)})
	if o == nil || math.Abs(o.Ratio-1.1) > 1e-9 || o.Disturbed != "" {
		t.Errorf("one disturbed profiled run: %+v, want ×1.10 from the quiet one", o)
	}
}

// Ranks' waits combine so that step less wait is the largest of the
// ranks' step less wait (the floor of the slowest rank's step, §5c), and
// their CPU times add up; a rank without waits leaves the run without.
func TestTimingRunCombinesWaits(t *testing.T) {
	res := &runner.Result{Timing: []runner.RankTiming{
		{Rank: 0, Clock: runner.ClockHost, StepMs: []float64{10, 20}, WaitMs: []float64{4, 15}, CPUMs: []float64{6, 5}},
		{Rank: 1, Clock: runner.ClockHost, StepMs: []float64{12, 18}, WaitMs: []float64{9, 2}, CPUMs: []float64{3, 16}},
	}}
	tr, why := timingRun(res, 0, 2)
	if tr == nil {
		t.Fatal(why)
	}
	// Step 1: max 12; less wait: max(10-4, 12-9) = 6; wait 12-6 = 6.
	// Step 2: max 20; max(20-15, 18-2) = 16; wait 20-16 = 4.
	want := gate.TimingRun{StepMs: []float64{12, 20}, WaitMs: []float64{6, 4}, CPUMs: []float64{9, 21}}
	if !slices.Equal(tr.StepMs, want.StepMs) || !slices.Equal(tr.WaitMs, want.WaitMs) || !slices.Equal(tr.CPUMs, want.CPUMs) {
		t.Errorf("combined %v / %v / %v, want %v / %v / %v", tr.StepMs, tr.WaitMs, tr.CPUMs, want.StepMs, want.WaitMs, want.CPUMs)
	}
	res.Timing[1].WaitMs, res.Timing[1].CPUMs = nil, nil
	if tr, _ := timingRun(res, 0, 2); tr.WaitMs != nil || tr.CPUMs != nil {
		t.Errorf("one rank without waits: %v / %v, want none", tr.WaitMs, tr.CPUMs)
	}
}

// repeat: auto stores a candidate's timing runs with its profiled runs;
// those made after the last profiled run are stored with none. The report
// still names every timing run it can by its run (issue 37's busy CI run
// named all three "timing run 1…3" beside "run 4", "run 5", since one of
// them had no id), and the unstored one by position, saying so.
func TestRunIDsTimingNotStored(t *testing.T) {
	tr := gate.TimingRun{StepMs: []float64{1}, Ranks: 1, Clock: "host"}
	ex := &Execution{Runs: make([]gate.Run, 2), RunIDs: []int64{4, 5}, timingIDs: []int64{4, 5}, Timing: []gate.TimingRun{tr, tr, tr}}
	sel := &Selection{Stored: []baseline.Run{{ID: 1}, {ID: 2}}, Timing: []gate.TimingRun{tr, tr}, TimingIDs: []int64{1, 2}}
	ids := runIDs(sel, ex)
	if !slices.Equal(ids.CandidateTiming, []int64{4, 5, 0}) || !slices.Equal(ids.BaselineTiming, []int64{1, 2}) {
		t.Fatalf("timing ids %v → %v, want [1 2] → [4 5 0]", ids.BaselineTiming, ids.CandidateTiming)
	}
	rep := &gate.Report{RunIDs: ids}
	var names []string
	for i := range 3 {
		names = append(names, rep.TimingRunName("candidate", i))
	}
	if want := []string{"run 4's timing run", "run 5's timing run", "timing run 3 (not stored)"}; !slices.Equal(names, want) {
		t.Errorf("candidate timing runs named %q, want %q", names, want)
	}
	// A read-only store stored none; ids beyond the runs are no map.
	for _, got := range []*gate.RunIDs{runIDs(sel, &Execution{Timing: ex.Timing}), runIDs(sel, &Execution{Timing: ex.Timing[:1], timingIDs: []int64{4, 5}})} {
		if got.CandidateTiming != nil {
			t.Errorf("candidate timing ids %v, want none", got.CandidateTiming)
		}
	}
}
