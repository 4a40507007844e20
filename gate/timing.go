package gate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/stats"
)

// TimingRun is one timing run: the job run without a profiler, its steps
// timed by gpugate's step hook at the optimizer step (or by the job's own
// step_log). Step time is judged on timing runs, where both sides have
// them: the profiler's cost grows with the number of ops, so profiled
// step times are noisier and biased against exactly the changes that add
// or remove many small kernels. Counts and the explanation come from the
// profiled runs.
type TimingRun struct {
	// StepMs are the timed steps (ms) in order, the ranks combined as
	// Combine combines a time: the slowest rank's.
	StepMs []float64 `json:"step_ms"`
	Ranks  int       `json:"ranks"`
	// Clock is what timed the steps: "cuda-events", "host" or "step_log"
	// (runner.Clock*), or "mixed" when ranks were timed differently.
	Clock string `json:"clock"`
	// Conditions are the timing run's own run conditions (nvidia-smi and
	// the host): a timing run on a busy host is disturbed as a profiled
	// run is.
	Conditions *runcond.Conditions `json:"conditions,omitempty"`
	// WaitMs are, per step, how long the job's threads waited in a CPU run
	// queue (schedstat, read by the step hook at each boundary): the time
	// other work on a busy host can have taken from the step. Ranks
	// combined so that StepMs[i] - WaitMs[i] is the largest of the ranks'
	// step times less their wait. CPUMs are the job's CPU time per step,
	// the ranks' summed. Both nil when not measured (a step_log clock, a
	// kernel without schedstat, a run stored before gpugate measured
	// them); else as long as StepMs. The contention rule (contention.go)
	// judges a disturbed candidate run by them.
	WaitMs []float64 `json:"wait_ms,omitempty"`
	CPUMs  []float64 `json:"cpu_ms,omitempty"`
}

// Clocks a timing run may name (runner.Clock*, and "mixed" for ranks
// timed by different clocks).
var timingClocks = []string{"cuda-events", "host", "step_log", "mixed"}

// Limits of a timing run that CheckTimingRuns enforces on stored ones.
const (
	MaxTimingSteps = 100_000
	MaxTimingRuns  = 10_000
	MaxStepMs      = 1e8 // 27 hours
)

// CheckTimingRuns refuses timing runs that no gpugate run makes: an
// unknown clock, no steps, too many, or a step time that is not positive
// and finite within MaxStepMs. Stored baselines are read through it (an
// imported one could hold anything), so that no such run reaches a verdict.
func CheckTimingRuns(runs []TimingRun) error {
	if len(runs) > MaxTimingRuns {
		return fmt.Errorf("timing_runs: %d runs, more than %d", len(runs), MaxTimingRuns)
	}
	for i, r := range runs {
		switch {
		case !slices.Contains(timingClocks, r.Clock):
			return fmt.Errorf("timing_runs[%d]: clock %q is not one gpugate times by", i, r.Clock)
		case len(r.StepMs) == 0 || len(r.StepMs) > MaxTimingSteps:
			return fmt.Errorf("timing_runs[%d]: %d steps (1 to %d)", i, len(r.StepMs), MaxTimingSteps)
		case r.Ranks < 1:
			return fmt.Errorf("timing_runs[%d]: %d ranks", i, r.Ranks)
		}
		for k, x := range r.StepMs {
			if !(x > 0 && x <= MaxStepMs) {
				return fmt.Errorf("timing_runs[%d]: step %d: %v ms is not a step time (above 0, at most %.0g ms)", i, k+1, x, MaxStepMs)
			}
		}
		for _, f := range []struct {
			name string
			xs   []float64
		}{{"wait_ms", r.WaitMs}, {"cpu_ms", r.CPUMs}} {
			if f.xs != nil && len(f.xs) != len(r.StepMs) {
				return fmt.Errorf("timing_runs[%d]: %d steps but %d %s", i, len(r.StepMs), len(f.xs), f.name)
			}
			for k, x := range f.xs {
				if !(x >= 0 && x <= MaxStepMs) {
					return fmt.Errorf("timing_runs[%d]: step %d: %s %v is not a time (0 to %.0g ms)", i, k+1, f.name, x, MaxStepMs)
				}
			}
		}
	}
	return nil
}

// TimedMetrics are the metrics judged on timing runs: step time. The other
// time metrics (GPU busy and idle, CPU wait, copies, communication) are
// what a trace measures and come from the profiled runs.
var TimedMetrics = []string{"step_time"}

// IsTimed reports whether a metric is judged on timing runs when both
// sides have them.
func IsTimed(name string) bool { return slices.Contains(TimedMetrics, name) }

// TimingRuns are the timing runs of both sides (Options.Timing). Nil in
// Options means step time is judged on the profiled runs (perf.yaml
// profiler_timing: true, or a comparison of stored results).
type TimingRuns struct {
	Base, Cand []TimingRun
	// Margins judge each timing run's host (HostBusy).
	Margins HostMargins
	// Why, when set, says why a side made no timing run although timing
	// runs were asked for (the step hook timed no step): step time is
	// then judged on the profiled runs of both sides.
	Why string
}

// Timing says in a report which runs each metric came from; omitted when
// step time was judged on the profiled runs by configuration.
type Timing struct {
	// Metrics are judged on timing runs; empty when a side had none (Note
	// says why) and every metric came from the profiled runs.
	Metrics []string `json:"metrics"`
	// BaseRuns and CandRuns are the timing runs (pairs: both the same)
	// of each side; BaseProfiled and CandProfiled the profiled runs the
	// other metrics came from.
	BaseRuns     int    `json:"baseline_runs"`
	CandRuns     int    `json:"candidate_runs"`
	BaseProfiled int    `json:"baseline_profiled_runs"`
	CandProfiled int    `json:"candidate_profiled_runs"`
	Clock        string `json:"clock"`
	// Disturbed are the timing runs whose host was busy, by side;
	// omitted when none was.
	Disturbed *Disturbed `json:"disturbed,omitempty"`
	// Contended: a side had no quiet timing run, and step time was judged
	// by the contention rule (contention.go) on the candidate runs' step
	// times less their measured wait, ÷ 1 + ContentionMargin; set only
	// when that found a regression.
	Contended        bool    `json:"contended,omitempty"`
	ContentionMargin float64 `json:"contention_margin,omitempty"`
	Note             string  `json:"note,omitempty"`
}

// Text says it in a sentence, for reports.
func (t *Timing) Text() string {
	if t == nil {
		return ""
	}
	if len(t.Metrics) == 0 {
		return "step time from the profiled runs: " + t.Note
	}
	s := fmt.Sprintf("%s from %d baseline and %d candidate timing run(s) (no profiler, steps timed by %s); every other metric from %d baseline and %d candidate profiled run(s)",
		strings.Join(t.Metrics, ", "), t.BaseRuns, t.CandRuns, t.Clock, t.BaseProfiled, t.CandProfiled)
	if t.Contended {
		s += fmt.Sprintf("; every run of a side was disturbed: step_time judged on the candidate's steps less the run-queue wait its threads measured, ÷ %.2f (docs/verdicts.md §5c)", 1+t.ContentionMargin)
	}
	if t.Note != "" {
		s += "; " + t.Note
	}
	return s
}

// clocks names the clocks of runs: one name, or "a, b" when they differ.
func clocks(runs ...[]TimingRun) string {
	var cs []string
	for _, rs := range runs {
		for _, r := range rs {
			if !slices.Contains(cs, r.Clock) {
				cs = append(cs, r.Clock)
			}
		}
	}
	slices.Sort(cs)
	return strings.Join(cs, ", ")
}

// clocksDiffer says why t's two sides cannot be judged on their timing
// runs: their clocks differ, or a side mixes clocks (docs/verdicts.md §5d:
// "same clock or profiled runs"); "" when every timing run of both sides
// was timed by one clock. Mixed clocks on both sides are not the same
// clock: a step timed by step_log is not a step timed by the host (120 ms
// against 80 in issue 37's repro), so the mix would judge the clocks'
// spread, and which clock each side happened to draw, as a change.
func clocksDiffer(t *TimingRuns) string {
	bc, cc := clocks(t.baseRuns()), clocks(t.candRuns())
	switch {
	case bc != cc:
		return fmt.Sprintf("the baseline's timing runs were timed by %s, the candidate's by %s: different clocks", bc, cc)
	case strings.Contains(bc, ", "):
		return fmt.Sprintf("the timing runs of each side mix clocks (%s): a step is not the same length on two clocks", bc)
	}
	return ""
}

// baseRuns and candRuns are t's sides; nil for a nil t.
func (t *TimingRuns) baseRuns() []TimingRun {
	if t == nil {
		return nil
	}
	return t.Base
}

func (t *TimingRuns) candRuns() []TimingRun {
	if t == nil {
		return nil
	}
	return t.Cand
}

// timingSamples are the runs' step times, one slice per run.
func timingSamples(runs []TimingRun) [][]float64 {
	out := make([][]float64, len(runs))
	for i, r := range runs {
		out[i] = r.StepMs
	}
	return out
}

// timingDisturbed is HostBusy of each timing run of each side.
func (t *TimingRuns) disturbed() Disturbed {
	cs := func(rs []TimingRun) []*runcond.Conditions {
		out := make([]*runcond.Conditions, len(rs))
		for i, r := range rs {
			out[i] = r.Conditions
		}
		return out
	}
	return Disturbed{Base: Disturbances(cs(t.Base), t.Margins), Cand: Disturbances(cs(t.Cand), t.Margins)}
}

// compareTimed judges a timed metric on the timing runs s selected: their
// quiet runs, or every run (and no verdict, unless the contention rule
// finds a regression) when a side has no quiet run left.
func (rep *Report) compareTimed(spec stats.Spec, t *TimingRuns, s Selected, th stats.Thresholds) stats.Result {
	b, c := s.timingSamples(t.Base, t.Cand)
	res := stats.Compare(spec, b, c, th)
	from := fmt.Sprintf("from timing runs: %d baseline and %d candidate run(s) without the profiler, steps timed by %s", len(t.Base), len(t.Cand), clocks(t.Base, t.Cand))
	res.Notes = append(res.Notes, from)
	if s.noVerdict() {
		if cres, ok := compareContended(spec, t, s.busy, th); ok {
			rep.Timing.Contended, rep.Timing.ContentionMargin = true, t.Margins.Contention
			cres.Notes = append([]string{from}, cres.Notes...)
			return cres
		}
	}
	if s.busy.any() {
		hostBusyResult(&res, s.busy, s.quietBase, s.quietCand, rep.runNames(true))
	}
	return res
}

// JudgedSamples are the samples a metric of rep was judged on, one slice
// per run: those of the runs rep's selection judged it on (select.go), a
// timed metric's from the timing runs (bt, ct) when rep used them. The
// Action stores these (Result.Samples), so that judging them again
// (Rejudge) judges what the gate judged.
//
// A side with no quiet run has no samples of a time metric (an empty
// slice): the metric had no verdict, and a result that carried that
// side's disturbed runs would get one back from whoever deleted its
// host_busy flags (issue 34). The Action's trusted phase judges a time
// metric with an empty side as no time verdict (action/judge.go). A
// regression found by the contention rule keeps its samples: the
// candidate's contention floors and the baseline as measured (§5c).
func (rep *Report) JudgedSamples(m analysis.Metric, base, cand []Run, bt, ct []TimingRun) (bs, cs [][]float64) {
	s := rep.Selection(m)
	if s.Timing {
		if rep.Timing.Contended {
			if b, c, ok := contendedSamples(bt, ct, s.busy, rep.Timing.ContentionMargin, s.paired()); ok {
				return b, c
			}
		}
		bs, cs = s.timingSamples(bt, ct)
	} else {
		var ws []string
		bs, cs = s.profiledSamples(m, base, cand, &ws)
	}
	if s.noVerdict() {
		return noneIfNoQuiet(bs, s.quietBase), noneIfNoQuiet(cs, s.quietCand)
	}
	return bs, cs
}

// noneIfNoQuiet is a side's samples, or none when it had no quiet run.
func noneIfNoQuiet(s [][]float64, quiet int) [][]float64 {
	if quiet == 0 {
		return [][]float64{}
	}
	return s
}
