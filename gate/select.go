package gate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/stats"
)

// The first step of a comparison: which runs of each side, and which of
// their values, each metric is judged on, and why every run left out was
// left out. Compare judges what it selects; everything that shows or
// judges again what a verdict compared reads the same step, rebuilt from
// the report (Report.selectIn): the Action's stored samples and Rejudge
// (JudgedSamples), the comment's and report.md's step chart (StepSeries)
// and its run bars (JudgedNames), the dashboard and baseline list and show
// (JudgedValue, one stored run at a time). Issue 36: the selection used to
// be interleaved with the judging, over gate.go, host.go and timing.go.
//
// A metric is judged on one of two kinds of run. Step time (TimedMetrics)
// comes from the timing runs when both sides have some timed by one clock
// (timing.go); every other metric, and step time otherwise, from the
// profiled runs. Of either kind, a run whose host was busy (HostBusy) is
// left out of the metrics that measure time (IsTime), paired runs a pair
// at a time; when a side has no quiet run left, the metric is judged on
// every run for its numbers and gets no verdict (hostBusyResult), or the
// contention rule (contention.go) judges step time. Counts keep every run.

// Selected is what one metric is judged on: the positions of the runs of
// each side, among the timing runs when Timing, else among the profiled
// runs.
type Selected struct {
	Metric string
	Timing bool
	Base   []int
	Cand   []int
	// quietBase and quietCand are the quiet runs of each side among those
	// of the metric's kind; busy the disturbances that bear on the metric
	// (none for a count, or when no run of its kind was disturbed).
	quietBase, quietCand int
	busy                 Disturbed
	pairs                bool
}

// paired reports whether the runs were paired (A/B): a pair is kept or
// left out whole.
func (s Selected) paired() bool { return s.pairs }

// noVerdict reports whether a side had no quiet run of the metric's kind:
// the metric was judged on every run for its numbers, and has no verdict
// but the contention rule's.
func (s Selected) noVerdict() bool {
	return s.busy.any() && (s.quietBase == 0 || s.quietCand == 0)
}

// LeftOutRun is a run that a comparison left out of some metrics, and
// why (Report.RunsLeftOut).
type LeftOutRun struct {
	Side string `json:"side"` // "baseline" or "candidate"
	// Run names it: "run 7" by its store id, else by its position; a
	// timing run as its stored run's ("run 7's timing run").
	Run    string `json:"run"`
	Timing bool   `json:"timing,omitempty"`
	// Metrics says which metrics it was left out of: "step_time", or
	// "the time metrics".
	Metrics string `json:"metrics"`
	Why     string `json:"why"`
}

// selectIn is what the selection rests on: how many runs of each kind
// each side has, which metrics are judged on timing runs, and which runs
// were disturbed. Compare builds it from its Options; a report rebuilds
// it from what it says (Report.selectIn), so that a view reads the same
// selection as the verdict.
type selectIn struct {
	nb, nc   int // profiled runs
	ntb, ntc int // timing runs
	timed    []string
	host     Disturbed // profiled runs
	timing   Disturbed // timing runs
	paired   bool
	// contended: step time was judged by the contention rule
	// (Timing.Contended; contendedSamples): on every candidate timing
	// run, and the baseline's quiet ones (every one when paired, or
	// when none is quiet).
	contended bool
}

// metric selects the runs metric m is judged on.
func (in selectIn) metric(m analysis.Metric) Selected {
	s := Selected{Metric: m.Name, pairs: in.paired}
	nb, nc, d := in.nb, in.nc, in.host
	quietOnly := IsTime(m) && in.host.any()
	if slices.Contains(in.timed, m.Name) {
		// Timing runs are always taken through quietIdx: paired, the
		// pairs both sides completed.
		s.Timing, nb, nc, d, quietOnly = true, in.ntb, in.ntc, in.timing, true
	}
	s.Base, s.Cand = upTo(nb), upTo(nc)
	if !quietOnly {
		return s
	}
	qb, qc := d.quietIdx(nb, nc, in.paired)
	s.quietBase, s.quietCand = len(qb), len(qc)
	if d.any() {
		s.busy = d
	}
	if len(qb) > 0 && len(qc) > 0 {
		s.Base, s.Cand = qb, qc
	}
	if s.Timing && in.contended && s.noVerdict() && !in.paired {
		if q, _ := d.quietIdx(nb, 0, false); len(q) > 0 {
			s.Base = q
		}
	}
	return s
}

// timeRuns are the profiled runs that what is read as time comes from
// (where the step time went, the findings' shares, the ranks line, the
// nodes, the headline, throughput): the quiet ones, as the time metrics'
// are; every run when a side has none, and then fromBusy says which
// sides had none (disturbedSides).
func (in selectIn) timeRuns() (b, c []int, fromBusy string) {
	if !in.host.any() {
		return upTo(in.nb), upTo(in.nc), ""
	}
	qb, qc := in.host.quietIdx(in.nb, in.nc, in.paired)
	if len(qb) > 0 && len(qc) > 0 {
		return qb, qc, ""
	}
	return upTo(in.nb), upTo(in.nc), disturbedSides(len(qb), len(qc))
}

// upTo is 0, 1, …, n-1; none for n below 1, and at most MaxTimingRuns
// (a report read from an artifact may say any number of runs).
func upTo(n int) []int {
	out := make([]int, runCount(n))
	for i := range out {
		out[i] = i
	}
	return out
}

// selectIn rebuilds from rep what its comparison selected on: the runs
// each side had, the metrics judged on timing runs, the disturbed runs.
//
// A report read from an artifact may say any number of runs: each count
// is taken between 0 and MaxTimingRuns, so that no view (the Action's
// trusted phase among them) allocates or loops by a forged number.
func (rep *Report) selectIn() selectIn {
	in := selectIn{nb: runCount(rep.Baseline.Runs), nc: runCount(rep.Candidate.Runs), paired: rep.Paired || rep.SampleUnit == stats.UnitPair}
	if rep.HostBusy != nil {
		in.host = *rep.HostBusy
	}
	if t := rep.Timing; t != nil {
		// Only the metrics Compare times (TimedMetrics): a forged
		// timing.metrics naming a count would give the count no verdict
		// by the timing runs' disturbances (ReapplyHost).
		in.ntb, in.ntc = runCount(t.BaseRuns), runCount(t.CandRuns)
		in.timed = slices.DeleteFunc(slices.Clone(t.Metrics), func(n string) bool { return !IsTimed(n) })
		if t.Disturbed != nil {
			in.timing = *t.Disturbed
		}
		in.contended = t.Contended
	}
	return in
}

// runCount is n between 0 and MaxTimingRuns.
func runCount(n int) int { return min(max(n, 0), MaxTimingRuns) }

// Selection is what rep's comparison judged metric m on (selectIn.metric).
func (rep *Report) Selection(m analysis.Metric) Selected {
	return rep.selectIn().metric(m)
}

// profiledSamples are the samples of the selected profiled runs.
func (s Selected) profiledSamples(m analysis.Metric, base, cand []Run, warnings *[]string) (bs, cs [][]float64) {
	return samples(pickIn(base, s.Base), m, warnings), samples(pickIn(cand, s.Cand), m, warnings)
}

// timingSamples are the step times of the selected timing runs.
func (s Selected) timingSamples(bt, ct []TimingRun) (bs, cs [][]float64) {
	return pickIn(timingSamples(bt), s.Base), pickIn(timingSamples(ct), s.Cand)
}

// pickIn is pick that leaves out positions past xs (a report read from a
// file may say more runs than its caller has).
func pickIn[T any](xs []T, idx []int) []T {
	out := make([]T, 0, len(idx))
	for _, i := range idx {
		if i >= 0 && i < len(xs) {
			out = append(out, xs[i])
		}
	}
	return out
}

// leftOut lists every run the selection in left out of some metric, and
// why, each by its name (RunName, TimingRunName): a disturbed run, or the
// other half of a pair with a disturbed or missing run, where the
// metric's selection (selectIn.metric) left it out; every timing run, when
// the timing runs' clocks kept step time on the profiled runs
// (clocksWhy). The profiled runs are read off a time metric judged on
// them, the timing runs off step time.
func (rep *Report) leftOut(in selectIn, clocksWhy string) []LeftOutRun {
	var out []LeftOutRun
	add := func(s Selected, d Disturbed, nb, nc int, metrics string) {
		for _, side := range []struct {
			name, other string
			n           int
			kept        []int
			own, theirs []string
		}{{"baseline", "candidate", nb, s.Base, d.Base, d.Cand}, {"candidate", "baseline", nc, s.Cand, d.Cand, d.Base}} {
			for i := range side.n {
				if slices.Contains(side.kept, i) {
					continue
				}
				var why string
				switch {
				case i < len(side.own) && side.own[i] != "":
					why = side.own[i]
				case in.paired && i < len(side.theirs) && side.theirs[i] != "":
					why = fmt.Sprintf("its pair's %s run was disturbed (%s)", side.other, side.theirs[i])
				case in.paired:
					why = "its pair is incomplete"
				default:
					continue
				}
				name := rep.RunName(side.name, i)
				if s.Timing {
					name = rep.TimingRunName(side.name, i)
				}
				out = append(out, LeftOutRun{Side: side.name, Run: name, Timing: s.Timing, Metrics: metrics, Why: why})
			}
		}
	}
	for _, m := range analysis.Metrics {
		if IsTime(m) && !slices.Contains(in.timed, m.Name) {
			add(in.metric(m), in.host, in.nb, in.nc, "the time metrics")
			break
		}
	}
	for _, name := range in.timed {
		if m, ok := analysis.MetricByName(name); ok {
			add(in.metric(m), in.timing, in.ntb, in.ntc, strings.Join(in.timed, ", "))
			break
		}
	}
	if clocksWhy != "" {
		for _, side := range []struct {
			name string
			n    int
		}{{"baseline", in.ntb}, {"candidate", in.ntc}} {
			for i := range side.n {
				out = append(out, LeftOutRun{Side: side.name, Run: rep.TimingRunName(side.name, i), Timing: true, Metrics: strings.Join(TimedMetrics, ", "), Why: clocksWhy})
			}
		}
	}
	return out
}

// selectFrom is Compare's selection input from opt: the timing runs step
// time is judged on, if any (tim, with Why set when their clocks keep it
// on the profiled runs, and clocksWhy then says why), the disturbed runs.
// It fills in what rep says of them (HostBusy, Timing) and warns of each
// disturbed run, by name.
func (rep *Report) selectFrom(base, cand []Run, opt Options) (in selectIn, tim *TimingRuns, clocksWhy string) {
	in = selectIn{nb: len(base), nc: len(cand), host: opt.Disturbed, paired: opt.Thresholds.Paired}
	tim = opt.Timing
	useTiming := tim != nil && len(tim.Base) > 0 && len(tim.Cand) > 0
	if why := clocksDiffer(tim); useTiming && why != "" {
		// A step is what its clock says it is: the GPU's events, the
		// host's clock around the optimizer step, the job's own log.
		useTiming, clocksWhy = false, why
		tim = &TimingRuns{Base: tim.Base, Cand: tim.Cand, Margins: tim.Margins, Why: why}
	}
	leftOut := "step_time and the other times"
	if useTiming {
		leftOut = "the times from the traces; step_time comes from the timing runs"
	}
	if opt.Disturbed.any() {
		rep.HostBusy = &opt.Disturbed
		rep.Warnings = append(rep.Warnings, opt.Disturbed.busyLines(rep.RunName, func(side, run string) string {
			return fmt.Sprintf("%s %s: left out of the time metrics (%s)", side, run, leftOut)
		})...)
	}
	if tim == nil {
		return in, tim, clocksWhy
	}
	in.ntb, in.ntc = len(tim.Base), len(tim.Cand)
	rep.Timing = &Timing{BaseRuns: len(tim.Base), CandRuns: len(tim.Cand), BaseProfiled: len(base), CandProfiled: len(cand), Clock: clocks(tim.Base, tim.Cand)}
	if useTiming {
		rep.Timing.Metrics = slices.Clone(TimedMetrics)
		in.timed = rep.Timing.Metrics
		if d := tim.disturbed(); d.any() {
			rep.Timing.Disturbed, in.timing = &d, d
			rep.Warnings = append(rep.Warnings, d.busyLines(rep.TimingRunName, func(side, run string) string {
				return fmt.Sprintf("%s %s: left out of step_time", side, run)
			})...)
		}
		return in, tim, clocksWhy
	}
	why := tim.Why
	switch {
	case why != "":
	case len(tim.Base) == 0 && len(tim.Cand) == 0:
		why = "neither side has timing runs"
	case len(tim.Base) == 0:
		why = "the baseline has no timing runs (recorded before gpugate made timing runs, or with profiler_timing: true); gpugate baseline refresh records them"
	default:
		why = "the candidate has no timing runs"
	}
	rep.Timing.Note = why + ": step time is judged on the profiled runs of both sides, profiler overhead included"
	rep.Warnings = append(rep.Warnings, "step_time: "+rep.Timing.Note)
	return in, tim, clocksWhy
}
