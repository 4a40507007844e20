package pipeline

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/stats"
)

// The budget checks of repeat: auto and ab count the next run: sampling
// stops when another run (pair), at the mean so far, would end past the
// budget, not once the budget is already spent (issue 37's mutants "the
// auto and ab budget checks ignoring the next run"). Each simulated run
// sleeps at least slow, so a run count n with n·slow past the budget means
// a run was started that surely ended past it. Whatever the machine's
// load (which only makes runs longer), the honest outcome is at most
// budget/slow runs, and at least one.
const slow = 400 * time.Millisecond

func TestAutoBudgetCountsNextRun(t *testing.T) {
	c, w := simConfig(t, "    repeat: auto\n    max_runs: 10\n    budget: 1s\n")
	// TestAutoAdvice's runs: inconclusive for several looks.
	base := fixedRuns(100, 110, 92, 104, 96)
	candMs := []float64{121, 111, 126}
	rep, cand, _ := autoTrial(t, c, w, base, func(i int) gate.Run {
		time.Sleep(slow)
		return fixedRun(candMs[(i-1)%len(candMs)])
	})
	if !strings.HasPrefix(rep.Sampling.Stopped, "budget spent: ") {
		t.Fatalf("stopped %q after %d runs, want at the budget (the test's premise)", rep.Sampling.Stopped, len(cand))
	}
	// The budget's clock (ex.Start) starts before the first run, which
	// autoTrial counts as 1 ms of run time: after 2 runs (≥ 0.8 s) the
	// mean is ≥ 0.2 s, and a third would be refused.
	if n := len(cand); n < 1 || time.Duration(n)*slow > time.Second {
		t.Errorf("%d runs within a 1s budget, each at least %s: a run was started that could not end within the budget (stopped %q)", n, slow, rep.Sampling.Stopped)
	}
}

func TestABBudgetCountsNextPair(t *testing.T) {
	c, w := simConfig(t, "")
	plan := NewABPlan(0, 10, time.Second, c)
	o := ABOptions{Config: c, Workload: w, Out: "ab", Log: io.Discard, Stdout: io.Discard}
	// Pairs alike and pairs +30%: inconclusive at every look.
	side := func(name string, ms func(pair int) float64) *Plan {
		p := &Plan{o: Options{Config: c, Workload: w, Log: io.Discard, Stdout: io.Discard}, name: w.Name + " " + name}
		p.job = func(_ context.Context, out string) (*Once, error) {
			var pair int
			fmt.Sscanf(filepath.Base(out), name+"%d", &pair)
			time.Sleep(slow / 2)
			return &Once{Run: fixedRun(ms(pair)), Duration: slow / 2}, nil
		}
		return p
	}
	head := func(pair int) float64 { return []float64{100, 130}[pair%2] }
	oc, err := o.sample(context.Background(), plan, map[string]*Plan{"base": side("base", func(int) float64 { return 100 }), "head": side("head", head)},
		Side{Name: "base", Commit: strings.Repeat("a", 40)}, Side{Name: "head", Commit: strings.Repeat("b", 40)})
	if err != nil {
		t.Fatal(err)
	}
	smp := oc.Report.Sampling
	if !strings.HasPrefix(smp.Stopped, "budget spent: ") {
		t.Fatalf("stopped %q after %d pairs, want at the budget (the test's premise)", smp.Stopped, smp.Pairs)
	}
	if smp.Pairs < 1 || time.Duration(smp.Pairs)*slow > time.Second {
		t.Errorf("%d pairs within a 1s budget, each at least %s: a pair was started that could not end within the budget (stopped %q)", smp.Pairs, slow, smp.Stopped)
	}
}

// abTimed runs ab's loop with timing runs: each side's profiled runs are
// fixed at 100 ms steps (A/A), its timing runs at timedMs, except the
// warm-up pair's (pair 0), at 500 ms. It returns the outcome and how many
// profiled runs each side made.
func abTimed(t *testing.T, warmup bool, timedMs func(pair int) float64) (*Outcome, map[string]int) {
	t.Helper()
	c, w := simConfig(t, "")
	plan := NewABPlan(0, 0, time.Hour, c)
	o := ABOptions{Config: c, Workload: w, Out: "ab", Log: io.Discard, Stdout: io.Discard, Warmup: warmup}
	profiled := map[string]int{}
	rng := rand.New(rand.NewPCG(3, 7))
	side := func(name string) *Plan {
		p := &Plan{o: Options{Config: c, Workload: w, Log: io.Discard, Stdout: io.Discard}, name: w.Name + " " + name, Profiler: "torch"}
		p.job = func(_ context.Context, out string) (*Once, error) {
			if filepath.Base(out) != name+"0" {
				profiled[name]++
			}
			return &Once{Run: fixedRun(100), Duration: time.Millisecond}, nil
		}
		p.timingJob = func(_ context.Context, out string) (*Once, error) {
			var pair int
			if _, err := fmt.Sscanf(filepath.Base(out), name+"%d-timing", &pair); err != nil {
				t.Fatalf("timing run written to %s: %v", out, err)
			}
			ms := 500.0
			if pair > 0 {
				ms = timedMs(pair)
			}
			tr := simTiming(rng, ms, 0.001)
			return &Once{Timing: &tr, Duration: time.Millisecond}, nil
		}
		return p
	}
	oc, err := o.sample(context.Background(), plan, map[string]*Plan{"base": side("base"), "head": side("head")},
		Side{Name: "base", Commit: strings.Repeat("a", 40)}, Side{Name: "head", Commit: strings.Repeat("b", 40)})
	if err != nil {
		t.Fatal(err)
	}
	return oc, profiled
}

// ab with timing runs profiles the first MinPairs pairs (the counts are
// judged on them at the first look) and times every pair; the warm-up
// pair's timing runs are discarded like its profiled runs (issue 37's
// mutants "ab making one profiled pair too few" and "ab keeping the
// warm-up timing pair").
func TestABTimingPairs(t *testing.T) {
	oc, profiled := abTimed(t, true, func(int) float64 { return 90 })
	rep := oc.Report
	if rep.Verdict != stats.Pass || rep.Sampling.Pairs != DefaultMinPairs {
		t.Fatalf("A/A: %s after %d pairs (stopped %q), want a pass at the first look, after %d (the test's premise)", rep.Verdict, rep.Sampling.Pairs, rep.Sampling.Stopped, DefaultMinPairs)
	}
	if profiled["base"] != DefaultMinPairs || profiled["head"] != DefaultMinPairs || len(oc.Base) != DefaultMinPairs {
		t.Errorf("profiled runs: %v (%d judged), want %d of each side: the first look judges the counts on the first %d pairs", profiled, len(oc.Base), DefaultMinPairs, DefaultMinPairs)
	}
	if len(oc.BaseTiming) != DefaultMinPairs || len(oc.CandTiming) != DefaultMinPairs || rep.Timing == nil || rep.Timing.BaseRuns != DefaultMinPairs {
		t.Errorf("timing runs judged: %d + %d (report %+v), want %d of each: the warm-up pair's are discarded", len(oc.BaseTiming), len(oc.CandTiming), rep.Timing, DefaultMinPairs)
	}
	for _, tr := range append(oc.BaseTiming, oc.CandTiming...) {
		if tr.StepMs[0] > 200 {
			t.Errorf("a timing run at %.0f ms was judged: the warm-up pair's (500 ms)", tr.StepMs[0])
		}
	}
}

// A baseline whose every run was disturbed cannot be settled by candidate
// runs: repeat: auto stops after the first, and the stop reason names the
// busy host, not "needs more baseline runs" (issue 37).
func TestAutoStopsOnBusyBaseline(t *testing.T) {
	c, w := simConfig(t, "    repeat: auto\n    max_runs: 5\n    budget: 1h\n")
	other, pressure := 1.8, 0.9
	busy := &runcond.Conditions{NotSampled: "no nvidia-smi", Host: &runcond.Host{WallSec: 10, CPUs: 2, OtherCPU: &other, CPUPressure: &pressure, Steal: new(float64)}}
	base := fixedRuns(100, 110, 92, 104, 96)
	sel := &Selection{Runs: base, Newest: time.Now()}
	for range base {
		sel.Conditions = append(sel.Conditions, busy)
	}
	made := 0
	p := &Plan{o: Options{Config: c, Workload: w, Log: io.Discard, Stdout: io.Discard}, name: w.Name}
	p.job = func(context.Context, string) (*Once, error) {
		made++
		return &Once{Run: fixedRun(100), Duration: time.Millisecond}, nil
	}
	ex := &Execution{Workload: w.Name, Start: time.Now()}
	once, _ := p.RunOnce(context.Background(), p.runDir("out", 1))
	ex.add(once, time.Millisecond)
	rep, err := p.sampleRuns(context.Background(), ex, sel, func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	st := rep.Sampling.Stopped
	if made != 1 || rep.Verdict != stats.Inconclusive || !strings.HasPrefix(st, "more candidate runs cannot settle it after 1 run(s): ") ||
		!strings.Contains(st, "step_time") || !strings.Contains(st, "has no time verdict: every baseline run was disturbed (the host was busy while the baseline was recorded); rerun gpugate baseline refresh when the machine is quiet") ||
		strings.Contains(st, "needs more baseline runs") {
		t.Errorf("%d run(s), %s, stopped %q; want 1 run, inconclusive, stopped naming the busy host", made, rep.Verdict, st)
	}
}

// binomialBound against tails computed independently (Python's
// math.comb): Binomial(40, 1%) exceeds 2 with probability 0.0075 and 3 with
// 0.00069; Binomial(300, 1%) exceeds 9 with 0.00102 and 10 with 0.00026.
func TestBinomialBound(t *testing.T) {
	for _, c := range []struct {
		n    int
		p    float64
		want int
	}{{40, 0.01, 3}, {300, 0.01, 10}, {40, 1, 40}} {
		if got := binomialBound(c.n, c.p, 0.001); got != c.want {
			t.Errorf("binomialBound(%d, %v, 0.001) = %d, want %d", c.n, c.p, got, c.want)
		}
	}
}
