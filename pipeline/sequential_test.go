package pipeline

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/stats"
	"github.com/gpugate/gpugate/trace"
)

// The stopping rules are tested here through the code that ships them:
// sampleRuns (repeat: auto) and ab's loop (ABOptions.sample) run with a
// simulated job (Plan.job) in place of the real one, and every look, every
// stop and the advice come from the shipped code at the shipped levels
// (AutoAlpha, DefaultABAlpha). The test only makes the runs and checks
// what came out, against rates and against looks it recomputes itself.
//
// The noise model: a run's steps are its level times a lognormal
// run-to-run factor (the machine's state: clocks, caches, neighbours) times
// (1 + 5%·N(0,1)) per step, so the unit of noise is the run, as in real
// jobs (two captures of one V100 config differ 14–17%).

const simSteps = 30

// simRun is one analyzed run of 30 steps around levelMs: the steps tile
// the timeline and every other metric is the same in every run (100
// kernels a step, the GPU busy all the step), so step time alone moves.
func simRun(rng *rand.Rand, levelMs, cv float64) gate.Run { return simRunWait(rng, levelMs, 0, cv) }

// simRunWait is simRun with waitMs of each step spent waiting for the host
// (cpu_wait, with the same per-step noise), the rest GPU-busy.
func simRunWait(rng *rand.Rand, levelMs, waitMs, cv float64) gate.Run {
	steps := make([]analysis.Step, simSteps)
	var at int64
	for i := range steps {
		d := int64(levelMs * (1 + cv*rng.NormFloat64()) * 1e6)
		d = max(d, 1)
		w := min(max(int64(waitMs*(1+cv*rng.NormFloat64())*1e6), 0), d)
		steps[i] = analysis.Step{Name: fmt.Sprintf("ProfilerStep#%d", i), HostStart: at, HostEnd: at + d, Start: at, End: at + d,
			Kernels: 100, Launches: 100, GPUBusy: d - w, Compute: d - w, CPUWait: w}
		at += d
	}
	return gate.Run{analysis.FromSteps(trace.New("sim.json", trace.FormatKineto), true, steps, nil)}
}

func simConfig(t testing.TB, extra string) (*config.Config, *config.Workload) {
	t.Helper()
	c, err := config.Parse([]byte(`version: 1
workloads:
  - name: sim
    command: [sh, -c, "exit 9"]
    profiler: torch
`+extra), filepath.Join(t.TempDir(), "perf.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	w, _ := c.Workload("")
	return c, w
}

// autoTrial is one repeat: auto comparison through sampleRuns: base holds
// the baseline runs; cand makes candidate run i (1-based). It returns the
// report, the candidate runs made and the log.
func autoTrial(t testing.TB, c *config.Config, w *config.Workload, base []gate.Run, cand func(i int) gate.Run) (*gate.Report, []gate.Run, string) {
	t.Helper()
	var log strings.Builder
	made := 0
	p := &Plan{o: Options{Config: c, Workload: w, Log: &log, Stdout: io.Discard}, name: w.Name}
	p.job = func(_ context.Context, out string) (*Once, error) {
		made++
		if want := fmt.Sprintf("run%d", made); filepath.Base(out) != want {
			t.Fatalf("run %d written to %s, want …/%s", made, out, want)
		}
		return &Once{Run: cand(made), Duration: time.Millisecond}, nil
	}
	ex := &Execution{Workload: w.Name, Start: time.Now()}
	once, _ := p.RunOnce(context.Background(), p.runDir("out", 1))
	ex.add(once, time.Millisecond)
	records := 0
	sel := &Selection{Runs: base, Newest: time.Now()}
	rep, err := p.sampleRuns(context.Background(), ex, sel, func() error { records++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if records != made-1 || len(ex.Runs) != made {
		t.Fatalf("%d runs made, %d in the execution, %d recorded by sampleRuns (want each new run recorded once)", made, len(ex.Runs), records)
	}
	return rep, ex.Runs, log.String()
}

// looks recomputes, without sampleRuns, the verdict of every look a
// sequential procedure could have made: look i judges cand[:i] (paired:
// base[:i] too) at level alpha.
func looks(c *config.Config, base, cand []gate.Run, alpha float64, paired bool, from int) []stats.Verdict {
	allow, err := Allowances(c)
	if err != nil {
		panic(err)
	}
	var vs []stats.Verdict
	for i := from; i <= len(cand); i++ {
		b := base
		if paired {
			b = base[:i]
		}
		vs = append(vs, gate.Compare(b, cand[:i], gate.Options{Allowances: allow, Gate: c.Gate, MinAbs: MinAbs(c), Thresholds: stats.Thresholds{Alpha: alpha, Paired: paired}}).Verdict)
	}
	return vs
}

// checkStops requires a sequential run to have stopped at its first
// decided look, or at the last planned one, or (early) when more
// candidate samples cannot settle it: every look before the last is
// inconclusive, and the last is the verdict reported.
func checkStops(t *testing.T, what string, vs []stats.Verdict, got stats.Verdict, n, most int, early bool) bool {
	t.Helper()
	if n > most {
		t.Errorf("%s: %d samples, more than the %d planned", what, n, most)
		return false
	}
	for i, v := range vs[:len(vs)-1] {
		if v != stats.Inconclusive {
			t.Errorf("%s: look %d of %d was %s, yet sampling went on (looks %v)", what, i+1, len(vs), v, vs)
			return false
		}
	}
	if last := vs[len(vs)-1]; last != got || (last == stats.Inconclusive && n < most && !early) {
		t.Errorf("%s: stopped with %s after %d of %d samples; the last look, recomputed, is %s (looks %v)", what, got, n, most, last, vs)
		return false
	}
	return true
}

// needBase reports whether an inconclusive report has a gate metric that
// needs more baseline runs, which more candidate runs cannot give.
func needBase(rep *gate.Report) bool {
	for _, m := range rep.Metrics {
		if m.Gate && m.Verdict == stats.Inconclusive && m.NeedBaseRuns > 0 {
			return true
		}
	}
	return false
}

// TestSequentialRuns is repeat: auto against a stored baseline of K = 5
// runs (baseline.runs' default), max_runs 5, through sampleRuns. It must
// hold the A/A false-regression rate at ≤ 1% however often it looks
// (AutoAlpha = 2% two-sided over the looks), catch real slowdowns, stop at
// the first decided look and never make more than max_runs runs.
func TestSequentialRuns(t *testing.T) {
	trials := 1000
	if testing.Short() {
		trials = 300
	}
	c, w := simConfig(t, "    repeat: auto\n    max_runs: 5\n    budget: 1h\n")
	if w.MaxRuns != 5 {
		t.Fatalf("max_runs %d, want 5", w.MaxRuns)
	}
	rng := rand.New(rand.NewPCG(41, 42))
	const k = 5
	lookAlpha := 0.02 / 5 // what docs/verdicts.md promises: 2% over max_runs looks
	for _, c2 := range []struct {
		name     string
		drift    float64
		factor   float64
		want     stats.Verdict
		min, max float64
	}{
		{"A/A, run CV 8%: false regression", 0.08, 1, stats.Regression, 0, 0.01},
		{"A/A, run CV 12%: false regression", 0.12, 1, stats.Regression, 0, 0.01},
		{"A/A, run CV 2%: pass", 0.02, 1, stats.Pass, 0.9, 1},
		{"×2, run CV 8%: regression", 0.08, 2, stats.Regression, 0.95, 1},
		{"×1.5, run CV 5%: regression", 0.05, 1.5, stats.Regression, 0.95, 1},
		{"×1.3, run CV 5%: regression", 0.05, 1.3, stats.Regression, 0.95, 1},
	} {
		run := func(level float64) gate.Run { return simRun(rng, level*math.Exp(c2.drift*rng.NormFloat64()), 0.05) }
		hits, samples, atMax := 0, 0, 0
		for tr := range trials {
			var base []gate.Run
			for range k {
				base = append(base, run(100))
			}
			rep, cand, log := autoTrial(t, c, w, base, func(int) gate.Run { return run(100 * c2.factor) })
			n := len(cand)
			samples += n
			if n == w.MaxRuns {
				atMax++
			}
			if rep.Verdict == c2.want {
				hits++
			}
			if rep.Alpha != lookAlpha || rep.Sampling == nil || rep.Sampling.Runs != n || rep.Sampling.LookAlpha != lookAlpha {
				t.Fatalf("%s, trial %d: α %v, sampling %+v; want looks at α=%v and %d runs", c2.name, tr, rep.Alpha, rep.Sampling, lookAlpha, n)
			}
			if got := strings.Count(log, "gpugate: look after "); got != n {
				t.Fatalf("%s, trial %d: %d looks logged for %d runs:\n%s", c2.name, tr, got, n, log)
			}
			if !checkStops(t, fmt.Sprintf("%s, trial %d", c2.name, tr), looks(c, base, cand, lookAlpha, false, 1), rep.Verdict, n, w.MaxRuns, needBase(rep)) {
				return
			}
		}
		got := float64(hits) / float64(trials)
		t.Logf("%-36s %6.2f%%, mean %.2f runs, %d of %d trials at max_runs", c2.name, 100*got, float64(samples)/float64(trials), atMax, trials)
		if got < c2.min || got > c2.max {
			t.Errorf("%s: %.2f%%, want within [%.0f%%, %.0f%%]", c2.name, 100*got, 100*c2.min, 100*c2.max)
		}
		if c2.name == "A/A, run CV 12%: false regression" && atMax == 0 {
			t.Errorf("%s: no trial reached max_runs: the test cannot see a run too many", c2.name)
		}
	}
}

// fixedRun is a run whose every step is ms: its mean is exactly ms.
func fixedRun(ms float64) gate.Run { return simRun(rand.New(rand.NewPCG(1, 2)), ms, 0) }

func fixedRuns(ms ...float64) []gate.Run {
	var out []gate.Run
	for _, m := range ms {
		out = append(out, fixedRun(m))
	}
	return out
}

// TestAutoStops checks, with runs whose means are fixed, each way
// sampleRuns stops and what it says.
func TestAutoStops(t *testing.T) {
	c, w := simConfig(t, "    repeat: auto\n    max_runs: 3\n    budget: 1h\n")
	base := fixedRuns(100, 101, 99, 100.5, 99.5)
	seq := func(ms ...float64) func(int) gate.Run {
		return func(i int) gate.Run { return fixedRun(ms[min(i, len(ms))-1]) }
	}

	// The first run passes: no second run.
	rep, cand, _ := autoTrial(t, c, w, base, seq(100, 100, 100))
	if len(cand) != 1 || rep.Verdict != stats.Pass || !strings.HasPrefix(rep.Sampling.Stopped, "decided after 1 run(s): pass") {
		t.Errorf("a pass at the first look: %d runs, %s, stopped %q; want 1 run, pass", len(cand), rep.Verdict, rep.Sampling.Stopped)
	}

	// Inconclusive at every look: exactly max_runs runs, no more.
	rep, cand, _ = autoTrial(t, c, w, base, seq(113, 117, 115, 115))
	if len(cand) != 3 || rep.Verdict != stats.Inconclusive || rep.Sampling.Stopped != "3 run(s), the most planned (max_runs)" {
		t.Errorf("inconclusive throughout: %d runs, %s, stopped %q; want 3 runs (max_runs), inconclusive", len(cand), rep.Verdict, rep.Sampling.Stopped)
	}

	// One baseline run and one candidate run show no run-to-run spread:
	// more candidate runs cannot settle it, so none is made.
	rep, cand, _ = autoTrial(t, c, w, fixedRuns(100), seq(130, 130, 130))
	if len(cand) != 1 || rep.Verdict != stats.Inconclusive || !strings.Contains(rep.Sampling.Stopped, "step_time") || !strings.HasSuffix(rep.Sampling.Stopped, "needs more baseline runs (gpugate baseline refresh)") {
		t.Errorf("one baseline run: %d runs, %s, stopped %q; want 1 run, inconclusive, step_time needs more baseline runs", len(cand), rep.Verdict, rep.Sampling.Stopped)
	}
	if rep.Sampling.Advice != "" {
		t.Errorf("one baseline run: advice %q; more candidate runs cannot settle it, so none is advised", rep.Sampling.Advice)
	}
}

// TestAutoAdvice checks the advice of an inconclusive repeat: auto
// against a computation of its own: more runs are counted at the level
// each look would have with max_runs raised to that many runs,
// AutoAlpha/n, not at this run's looks' level.
func TestAutoAdvice(t *testing.T) {
	c, w := simConfig(t, "    repeat: auto\n    max_runs: 3\n    budget: 1h\n")
	baseMs := []float64{100, 110, 92, 104, 96}
	candMs := []float64{121, 111, 126}
	rep, cand, _ := autoTrial(t, c, w, fixedRuns(baseMs...), func(i int) gate.Run { return fixedRun(candMs[i-1]) })
	if len(cand) != 3 || rep.Verdict != stats.Inconclusive {
		t.Fatalf("%d runs, %s; want 3 runs, inconclusive", len(cand), rep.Verdict)
	}
	// The pooled two-sample t interval on the logs of the run means,
	// with m candidate runs at level a; lower is better.
	lx, ly := logsOf(baseMs), logsOf(candMs)
	k := float64(len(lx))
	est := mean(ly) - mean(lx)
	sd := math.Sqrt((ss(lx) + ss(ly)) / (k + float64(len(ly)) - 2))
	settles := func(m int, a float64) bool {
		hw := stats.TQuantile(1-a/2, k+float64(m)-2) * sd * math.Sqrt(1/k+1/float64(m))
		lo, hi, w := math.Expm1(est-hw), math.Expm1(est+hw), math.Expm1(est)
		return lo > 0 && w > 0.15 || hi <= 0.15 && math.Abs(w) <= 0.15
	}
	need := func(alpha func(m int) float64) int {
		for m := 4; m <= 33; m++ {
			if settles(m, alpha(m)) {
				return m
			}
		}
		return 0
	}
	want := need(func(m int) float64 { return 0.02 / float64(max(m, 3)) })
	fixed := need(func(int) float64 { return 0.02 / 3 })
	if want == 0 || want == fixed {
		t.Fatalf("the case does not tell the levels apart: %d runs at 2%%/n, %d at 2%%/3", want, fixed)
	}
	wantAdvice := fmt.Sprintf("about %d more run(s) would settle it", want-3)
	if !strings.HasPrefix(rep.Sampling.Advice, wantAdvice) || !strings.Contains(rep.Sampling.Advice, fmt.Sprintf("max_runs: %d,", want)) {
		t.Errorf("advice %q, want %q … max_runs: %d (at the level of %d looks; the looks' fixed level would say %d)", rep.Sampling.Advice, wantAdvice, want, want, fixed)
	}
	var m *stats.Result
	for i := range rep.Metrics {
		if rep.Metrics[i].Name == "step_time" {
			m = &rep.Metrics[i]
		}
	}
	if m == nil || m.NeedRuns != want-3 || !strings.Contains(m.Reason, fmt.Sprintf("perf.yaml max_runs: %d", want)) {
		t.Errorf("step_time: %+v; want need_runs %d and a reason naming max_runs: %d", m, want-3, want)
	}
	t.Logf("Δ %+.1f%%: %d runs settle it at AutoAlpha/n, %d at the fixed AutoAlpha/3; advice %q", 100*math.Expm1(est), want, fixed, rep.Sampling.Advice)
}

func logsOf(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Log(x)
	}
	return out
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func ss(xs []float64) float64 {
	m, s := mean(xs), 0.0
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s
}

// abTrial is one sequential A/B comparison through ab's loop: both sides
// run the simulated job; pair i's runs share a lognormal drift (sd 10%:
// both ran in the same minutes), each run has its own noise (lognormal sd
// noise), the second run of a pair is 3% faster (warm caches; alternation
// cancels it), and every third step is 1.5× slow.
func abTrial(t testing.TB, c *config.Config, w *config.Workload, plan ABPlan, rng *rand.Rand, noise, factor float64) (*gate.Report, []gate.Run, []gate.Run, string) {
	t.Helper()
	var log strings.Builder
	o := ABOptions{Config: c, Workload: w, Out: "ab", Log: &log, Stdout: io.Discard}
	drift := map[string]float64{}
	ran := map[string]bool{} // pair → one of its runs is done
	var calls []string
	side := func(name string, f float64) *Plan {
		p := &Plan{o: Options{Config: c, Workload: w, Log: &log, Stdout: io.Discard}, name: w.Name + " " + name}
		p.job = func(_ context.Context, out string) (*Once, error) {
			pair := strings.TrimPrefix(filepath.Base(out), name)
			calls = append(calls, filepath.Base(out))
			if _, ok := drift[pair]; !ok {
				drift[pair] = math.Exp(0.1 * rng.NormFloat64())
			}
			level := 100 * f * drift[pair] * math.Exp(noise*rng.NormFloat64())
			if ran[pair] {
				level *= 0.97
			}
			ran[pair] = true
			r := simRun(rng, level, 0.05)
			for i := range r[0].Steps {
				if i%3 == 2 {
					s := &r[0].Steps[i]
					s.End += s.StepTime() / 2
				}
			}
			return &Once{Run: r, Duration: time.Millisecond}, nil
		}
		return p
	}
	plans := map[string]*Plan{"base": side("base", 1), "head": side("head", factor)}
	oc, err := o.sample(context.Background(), plan, plans, Side{Name: "base", Commit: strings.Repeat("a", 40)}, Side{Name: "head", Commit: strings.Repeat("b", 40)})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; 2*i < len(calls); i++ {
		want := []string{fmt.Sprintf("base%d", i+1), fmt.Sprintf("head%d", i+1)}
		if i%2 == 1 {
			want[0], want[1] = want[1], want[0]
		}
		if calls[2*i] != want[0] || calls[2*i+1] != want[1] {
			t.Fatalf("pair %d ran %v, want %v (alternating order)", i+1, calls[2*i:2*i+2], want)
		}
	}
	return oc.Report, oc.Base, oc.Cand, log.String()
}

// TestSequentialAB is ab sampling until decided (3 to 10 pairs, 8 looks
// at DefaultABAlpha/8) through ab's loop. A/A must be a false regression
// in ≤ 1% of trials however often it looks, slowdowns must be caught, and
// each trial must stop at its first decided look.
func TestSequentialAB(t *testing.T) {
	trials := 1000
	if testing.Short() {
		trials = 300
	}
	c, w := simConfig(t, "")
	plan := NewABPlan(0, 0, time.Hour, c)
	if plan.MinPairs != 3 || plan.MaxPairs != 10 || plan.Looks() != 8 || plan.LookAlpha() != 0.02/8 {
		t.Fatalf("plan %s, want 3 to 10 pairs, 8 looks at 0.25%%", plan)
	}
	rng := rand.New(rand.NewPCG(31, 32))
	for _, c2 := range []struct {
		name     string
		noise    float64 // run noise within a pair (lognormal sd)
		factor   float64
		want     stats.Verdict
		min, max float64
	}{
		{"A/A: false regression", 0.05, 1, stats.Regression, 0, 0.01},
		// About 90% (91.0% in 1,000 trials): the bound leaves room for
		// the sampling error of -short's 300 trials (sd 1.7%).
		{"A/A: pass", 0.05, 1, stats.Pass, 0.85, 1},
		{"A/A, noisy (run sd 15%): false regression", 0.15, 1, stats.Regression, 0, 0.01},
		{"A/A, very noisy (25%): false regression", 0.25, 1, stats.Regression, 0, 0.01},
		{"head ×2: regression", 0.05, 2, stats.Regression, 0.99, 1},
		{"head ×2, noisy (15%): regression", 0.15, 2, stats.Regression, 0.95, 1},
		{"head ×1.5: regression", 0.05, 1.5, stats.Regression, 0.99, 1},
		{"head ×1.3: regression", 0.05, 1.3, stats.Regression, 0.8, 1},
	} {
		hits, samples, atMax := 0, 0, 0
		for tr := range trials {
			rep, base, head, log := abTrial(t, c, w, plan, rng, c2.noise, c2.factor)
			n := len(head)
			samples += n
			if n == plan.MaxPairs {
				atMax++
			}
			if rep.Verdict == c2.want {
				hits++
			}
			if rep.Alpha != plan.LookAlpha() || rep.Sampling == nil || rep.Sampling.Pairs != n {
				t.Fatalf("%s, trial %d: α %v, sampling %+v; want looks at α=%v, %d pairs", c2.name, tr, rep.Alpha, rep.Sampling, plan.LookAlpha(), n)
			}
			if got := strings.Count(log, "gpugate: ab look after "); got != n-plan.MinPairs+1 {
				t.Fatalf("%s, trial %d: %d looks logged for %d pairs (first look at %d):\n%s", c2.name, tr, got, n, plan.MinPairs, log)
			}
			if !checkStops(t, fmt.Sprintf("%s, trial %d", c2.name, tr), looks(c, base, head, plan.LookAlpha(), true, plan.MinPairs), rep.Verdict, n, plan.MaxPairs, false) {
				return
			}
		}
		got := float64(hits) / float64(trials)
		t.Logf("%-44s %6.2f%%, mean %.2f pairs, %d of %d trials at max pairs", c2.name, 100*got, float64(samples)/float64(trials), atMax, trials)
		if got < c2.min || got > c2.max {
			t.Errorf("%s: %.2f%%, want within [%.0f%%, %.0f%%]", c2.name, 100*got, 100*c2.min, 100*c2.max)
		}
	}
}

// TestGatedFamily measures the false-alarm rate of the whole gate when
// more than one gated metric is noisy: A/A, K = 5 baseline runs, step
// time drifting by run CV 8% and, independently, cpu_wait (20 ms of a
// 100 ms step) by run CV 25%; kernels and sync calls are deterministic, as
// they nearly are in real jobs. Each metric's false regressions are at
// most half its level (one side of the interval); the gate's, any of k
// noisy gated metrics, at most k times that (the union bound): 2 × 2.5%
// with repeat: 1 (one look at 5%), 2 × 1% with repeat: auto.
// docs/verdicts.md quotes the rates.
func TestGatedFamily(t *testing.T) {
	trials := 4000
	if testing.Short() {
		trials = 400
	}
	rng := rand.New(rand.NewPCG(51, 52))
	run := func() gate.Run {
		return simRunWait(rng, 100*math.Exp(0.08*rng.NormFloat64()), 20*math.Exp(0.25*rng.NormFloat64()), 0.05)
	}
	baseRuns := func() []gate.Run {
		var b []gate.Run
		for range 5 {
			b = append(b, run())
		}
		return b
	}
	count := func(name string, trials int, bound float64, trial func() *gate.Report) {
		t.Helper()
		any, per := 0, map[string]int{}
		for range trials {
			rep := trial()
			if rep.Verdict == stats.Regression {
				any++
			}
			for _, m := range rep.Metrics {
				if m.Gate && m.Verdict == stats.Regression {
					per[m.Name]++
				}
			}
		}
		pct := func(n int) float64 { return 100 * float64(n) / float64(trials) }
		t.Logf("%-10s false regressions: gate %.2f%% (step_time %.2f%%, cpu_wait %.2f%%, kernels %.2f%%, sync_calls %.2f%%), %d trials",
			name, pct(any), pct(per["step_time"]), pct(per["cpu_wait"]), pct(per["kernels"]), pct(per["sync_calls"]), trials)
		if got := float64(any) / float64(trials); got > bound {
			t.Errorf("%s: the gate's false regressions %.2f%%, want ≤ %.1f%% (2 noisy gated metrics)", name, 100*got, 100*bound)
		}
		if per["step_time"] == 0 && per["cpu_wait"] == 0 && trials >= 2000 {
			t.Errorf("%s: no false regression at all in %d trials: the case does not exercise the bound", name, trials)
		}
	}
	c, _ := simConfig(t, "")
	count("repeat: 1", trials, 0.05, func() *gate.Report {
		rep, err := Compare(c, &Selection{Runs: baseRuns(), Newest: time.Now()}, &Execution{Runs: []gate.Run{run()}}, time.Now(), stats.Thresholds{})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	})
	ca, wa := simConfig(t, "    repeat: auto\n    max_runs: 5\n    budget: 1h\n")
	count("repeat: auto", trials/2, 0.02, func() *gate.Report {
		rep, _, _ := autoTrial(t, ca, wa, baseRuns(), func(int) gate.Run { return run() })
		return rep
	})
}

var powerTrials = flag.Int("power-trials", 0, "trials per case of TestAutoPowerManyRuns (default 40; docs/verdicts.md §3a used 300)")

// TestAutoPowerManyRuns is repeat: auto at a large max_runs, through
// sampleRuns: run CV 2% (a lognormal drift per run, 0.5% step noise), a
// step_time allowance of 1%, K = 66 baseline runs and max_runs 66. The
// early stop for "needs more baseline runs" used to project from the
// estimate so far and stopped most trials of a 2% slowdown too soon (issue
// 37: caught in 56.3% of 300 trials; without the stop 97.0%). It now stops
// only when even max_runs could not settle any change within the interval
// (stats.Result.CannotSettle), so a 2% slowdown is caught about as often as
// by sampling to the budget, and A/A still holds false regressions ≤ 1%.
//
//	go test ./pipeline -run TestAutoPowerManyRuns -power-trials 300 -v
//
// prints the rates and mean runs (docs/verdicts.md §3a records them).
func TestAutoPowerManyRuns(t *testing.T) {
	const k, most = 66, 66
	c, w := simConfig(t, "    repeat: auto\n    max_runs: 66\n    budget: 100h\n")
	c.Allowances = map[string]config.Percent{"step_time": 0.01}
	if w.MaxRuns != most {
		t.Fatalf("max_runs %d, want %d", w.MaxRuns, most)
	}
	rng := rand.New(rand.NewPCG(37, 66))
	run := func(level float64) gate.Run { return simRun(rng, level*math.Exp(0.02*rng.NormFloat64()), 0.005) }
	for _, tc := range []struct {
		name   string
		factor float64
		want   stats.Verdict
		// min and max bound the rate of want.
		min, max float64
	}{
		{"×1.02, CV 2%, 1% allowance: regression", 1.02, stats.Regression, 0.85, 1},
		{"A/A, CV 2%, 1% allowance: false regression", 1, stats.Regression, 0, 0.01},
	} {
		trials := 40
		if *powerTrials > 0 {
			trials = *powerTrials
		}
		hits, samples, early := 0, 0, 0
		for range trials {
			var base []gate.Run
			for range k {
				base = append(base, run(100))
			}
			rep, cand, _ := autoTrial(t, c, w, base, func(int) gate.Run { return run(100 * tc.factor) })
			samples += len(cand)
			if rep.Verdict == tc.want {
				hits++
			}
			if strings.HasPrefix(rep.Sampling.Stopped, "more candidate runs cannot settle it") {
				early++
			}
		}
		got := float64(hits) / float64(trials)
		t.Logf("%-44s %6.2f%% of %d trials, mean %.1f runs, %d stopped early (needs baseline runs)", tc.name, 100*got, trials, float64(samples)/float64(trials), early)
		// The bounds are rates; with few trials a count is allowed the
		// sampling error of the bound itself: at most the count a true
		// rate of max exceeds with probability < 0.1% (with 40 trials and
		// a 1% bound, 3 false regressions; a true 1% gives 0 in 67% of
		// runs of the test, so "≤ 1%" of 40 would fail honest code often).
		// A 97% power falls below 85% of 40 trials with probability
		// < 0.01%.
		if most := binomialBound(trials, tc.max, 0.001); got < tc.min || hits > most {
			t.Errorf("%s: %d of %d trials (%.2f%%), want a rate ≥ %.0f%% and at most %d (a true rate of %.0f%% exceeds %d with probability < 0.1%%)",
				tc.name, hits, trials, 100*got, 100*tc.min, most, 100*tc.max, most)
		}
	}
}

// binomialBound is the smallest k with P(X > k) < tail for X ~ Binomial(n, p).
func binomialBound(n int, p, tail float64) int {
	if p >= 1 {
		return n
	}
	cdf, pk := 0.0, math.Pow(1-p, float64(n)) // P(X = 0)
	for k := 0; k <= n; k++ {
		cdf += pk
		if 1-cdf < tail {
			return k
		}
		pk *= float64(n-k) / float64(k+1) * p / (1 - p)
	}
	return n
}
