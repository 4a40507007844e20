package gate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/stats"
)

// HostMargins bound how busy the host may have been during a run before
// the run is disturbed: its step times then say as much about the other
// work on the machine as about the code. Shares are of the whole run
// (0..1); OtherCPU is a share of the host's CPUs. A margin of 1 (100%)
// or more turns its test off.
type HostMargins struct {
	// OtherCPU: processes outside the job's tree (and gpugate) used at
	// least this share of the host's CPUs.
	OtherCPU float64
	// CPUPressure: runnable tasks waited for a CPU during at least this
	// share of the run (PSI "some") while other processes used at least
	// PressureOther of the CPUs. The job's own threads raise the pressure
	// too (a job with more busy threads than CPUs), so the pressure
	// disturbs a run only when something else ran.
	CPUPressure   float64
	PressureOther float64
	// Steal: the hypervisor gave at least this share of the CPUs' time to
	// other guests.
	Steal float64
	// Throttled: the cgroup's CPU quota throttled it in at least this
	// share of its periods.
	Throttled float64
	// Contention is not a bound of a quiet host but the slowdown beside
	// other work that the job's measured run-queue wait leaves unexplained
	// (a share of the quiet step): the contention rule (contention.go)
	// judges disturbed candidate timing runs with it.
	Contention float64
}

// DefaultHostMargins are the margins perf.yaml's host: section starts
// from; docs/verdicts.md gives the measurements behind them.
var DefaultHostMargins = HostMargins{OtherCPU: 0.25, CPUPressure: 0.20, PressureOther: 0.10, Steal: 0.10, Throttled: 0.10,
	Contention: DefaultContentionMargin}

// HostBusy says why a run's host was busy beyond the margins ("the host
// was busy: other processes used 1.4 of 2 CPUs, CPU pressure 86% during
// the run"); "" when it was not, or when nothing was measured (a run
// stored before gpugate sampled the host disturbs nothing: nothing is
// known).
func HostBusy(c *runcond.Conditions, m HostMargins) string {
	if c == nil {
		return ""
	}
	why := hostBusyWhy(c.Host, m)
	// A Slurm job's nodes, each sampled on the node: the run is disturbed
	// when any of them was busy, named.
	for _, h := range c.HostNodes {
		if w := hostBusyWhy(h, m); len(w) > 0 {
			why = append(why, "node "+h.Node+": "+strings.Join(w, ", "))
		}
	}
	if len(why) == 0 {
		return ""
	}
	return "the host was busy: " + strings.Join(why, ", ") + " during the run"
}

// hostBusyWhy says what was beyond the margins on one machine; nothing
// for nil or a machine not sampled.
func hostBusyWhy(h *runcond.Host, m HostMargins) []string {
	if h == nil || h.NotSampled != "" {
		return nil
	}
	var why []string
	other := -1.0
	if h.OtherCPU != nil && h.CPUs > 0 {
		other = *h.OtherCPU / float64(h.CPUs)
	}
	if other >= 0 && other >= m.OtherCPU && m.OtherCPU < 1 {
		why = append(why, fmt.Sprintf("other processes used %.1f of %d CPUs", *h.OtherCPU, h.CPUs))
	}
	if h.CPUPressure != nil && *h.CPUPressure >= m.CPUPressure && m.CPUPressure < 1 && other >= m.PressureOther {
		s := fmt.Sprintf("CPU pressure %.0f%%", *h.CPUPressure*100)
		if len(why) == 0 {
			s += fmt.Sprintf(" with other processes on %.1f of %d CPUs", *h.OtherCPU, h.CPUs)
		}
		why = append(why, s)
	}
	if h.Steal != nil && *h.Steal >= m.Steal && m.Steal < 1 {
		why = append(why, fmt.Sprintf("steal time %.0f%%", *h.Steal*100))
	}
	if h.Throttled != nil && *h.Throttled >= m.Throttled && m.Throttled < 1 {
		why = append(why, fmt.Sprintf("its cgroup was CPU-throttled in %.0f%% of periods", *h.Throttled*100))
	}
	return why
}

// Disturbances is HostBusy of each run, in order.
func Disturbances(cs []*runcond.Conditions, m HostMargins) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = HostBusy(c, m)
	}
	return out
}

// Disturbed are the runs of each side whose host was busy (HostBusy), by
// index into the runs, "" for a run that was not. They take no part in
// the time metrics (IsTime): a busy host lengthens steps, so their step
// times would make a no-change candidate a regression, or a baseline an
// easy mark. Counts (kernels, syncs, copies, memory) do not depend on
// the host's load and keep every run.
type Disturbed struct {
	Base []string `json:"baseline"`
	Cand []string `json:"candidate"`
}

// IsTime reports whether a metric measures time, or a ratio of times,
// and so moves with the host's load.
func IsTime(m analysis.Metric) bool {
	return m.Unit == "ms" || m.Unit == "us" || m.Name == "gpu_util" || m.Name == "short_kernels"
}

// quietIdx picks the indices of the runs of each side that were not
// disturbed; paired, a pair goes when either run of it was.
func (d Disturbed) quietIdx(nb, nc int, paired bool) (b, c []int) {
	busy := func(rs []string, i int) bool { return i < len(rs) && rs[i] != "" }
	if paired {
		for i := range min(nb, nc) {
			if !busy(d.Base, i) && !busy(d.Cand, i) {
				b, c = append(b, i), append(c, i)
			}
		}
		return b, c
	}
	for i := range nb {
		if !busy(d.Base, i) {
			b = append(b, i)
		}
	}
	for i := range nc {
		if !busy(d.Cand, i) {
			c = append(c, i)
		}
	}
	return b, c
}

// pick returns xs at the indices.
func pick[T any](xs []T, idx []int) []T {
	out := make([]T, 0, len(idx))
	for _, i := range idx {
		out = append(out, xs[i])
	}
	return out
}

// busyLines are the warnings naming each disturbed run of each side:
// line(side, "run 7: why"), each run named by name (Report.runNames).
func (d Disturbed) busyLines(name func(side string, i int) string, line func(side, run string) string) []string {
	var out []string
	for _, s := range []struct {
		name string
		runs []string
	}{{"baseline", d.Base}, {"candidate", d.Cand}} {
		for _, b := range BusyNamed(s.runs, func(i int) string { return name(s.name, i) }) {
			out = append(out, line(s.name, b))
		}
	}
	return out
}

// any reports whether any run is disturbed.
func (d Disturbed) any() bool {
	for _, rs := range [][]string{d.Base, d.Cand} {
		for _, r := range rs {
			if r != "" {
				return true
			}
		}
	}
	return false
}

// Busy lists the disturbed runs of one side as "run N: why", by
// position (from 1).
func Busy(side []string) []string {
	return BusyNamed(side, RunByPosition)
}

// BusyNamed lists the disturbed runs of one side as "NAME: why", run i
// (from 0) named by name(i): its store id where it has one ("run 7").
func BusyNamed(side []string, name func(int) string) []string {
	var out []string
	for i, r := range side {
		if r != "" {
			out = append(out, fmt.Sprintf("%s: %s", name(i), r))
		}
	}
	return out
}

// RunByPosition names run i (from 0) by its position, "run 1": a run
// without a store id.
func RunByPosition(i int) string { return fmt.Sprintf("run %d", i+1) }

// hostBusyResult notes on a time metric's result which runs were left
// out; when a side has no quiet run left, the result (computed over every
// run, for its numbers) gets no verdict: inconclusive, with what to do.
// Runs are named by name (Report.runNames).
func hostBusyResult(r *stats.Result, d Disturbed, quietBase, quietCand int, name func(side string, i int) string) {
	nb, nc := len(Busy(d.Base)), len(Busy(d.Cand))
	if quietBase > 0 && quietCand > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d baseline and %d candidate run(s) left out: the host was busy", nb, nc))
		return
	}
	var sides []string
	n := maxBusyList
	if quietBase == 0 && quietCand == 0 {
		n /= 2
	}
	if quietCand == 0 {
		sides = append(sides, fmt.Sprintf("every candidate run was disturbed (%s)", busyList(d.Cand, n, func(i int) string { return name("candidate", i) })))
	}
	if quietBase == 0 {
		sides = append(sides, fmt.Sprintf("every baseline run was disturbed (%s)", busyList(d.Base, n, func(i int) string { return name("baseline", i) })))
	}
	r.Verdict, r.NeedRuns, r.NeedBaseRuns = stats.Inconclusive, 0, 0
	if quietCand == 0 {
		r.NeedRuns = 1
	}
	if quietBase == 0 {
		// More candidate runs cannot give the baseline a quiet run:
		// repeat: auto stops (pipeline.sampleRuns), naming the host.
		r.NeedBaseRuns = 1
	}
	r.CannotSettle = quietBase == 0
	r.Reason = fmt.Sprintf("no time verdict: %s; rerun when the machine is quiet, or on a runner of its own (perf.yaml host: sets how busy a host may be)", strings.Join(sides, ", and "))
}

// maxBusyList bounds, in characters, the lists of disturbed runs in a
// reason (half of it each when both sides have one), so that the advice after it survives any cut of the
// reason (the comment bounds free text; issue 37 saw "…run 5: the host was
// busy: other p…" and no advice). The warnings name every run in full.
const maxBusyList = 200

// busyList lists the disturbed runs of a side ("run 7: why; run 8: why"),
// each named by name, within n characters: the runs that fit in full,
// then how many more, by name.
func busyList(side []string, n int, name func(int) string) string {
	var out, rest []string
	used, more := 0, 0
	for i, r := range side {
		if r == "" {
			continue
		}
		if more == 0 {
			b := []rune(fmt.Sprintf("%s: %s", name(i), r))
			switch {
			case len(out) > 0 && used+len(b) > n:
			case len(b) > n:
				out = append(out, string(b[:n-1])+"…")
				used += n
				continue
			default:
				out = append(out, string(b))
				used += len(b) + 2
				continue
			}
		}
		// Past the list: counted, and only the first few named (a name
		// may cost a scan of the side's ids, TimingRunName).
		more++
		switch {
		case more < 7:
			rest = append(rest, name(i))
		case more == 7:
			rest = append(rest, "…")
		}
	}
	if more > 0 {
		return fmt.Sprintf("%s; and %d more: %s, named in the warnings", strings.Join(out, "; "), more, strings.Join(rest, ", "))
	}
	return strings.Join(out, "; ")
}

// disturbedSides says which sides had no quiet run.
func disturbedSides(quietBase, quietCand int) string {
	switch {
	case quietBase == 0 && quietCand == 0:
		return "every run of both sides was disturbed"
	case quietBase == 0:
		return "every baseline run was disturbed"
	}
	return "every candidate run was disturbed"
}

// ReapplyHost gives the time metrics of a report judged again from its
// samples (Rejudge) what Compare gave them for disturbed runs (the
// report's selection, select.go): the note, or no verdict when a side had
// no quiet run. A step-time regression found by the contention rule
// stands, judged again on the contention floors it was judged on
// (JudgedSamples). The overall verdict is the caller's to derive again.
func (r *Report) ReapplyHost() {
	in := r.selectIn()
	for i, res := range r.Metrics {
		m, ok := analysis.MetricByName(res.Name)
		if !ok {
			continue
		}
		s := in.metric(m)
		if !s.busy.any() {
			continue
		}
		if s.Timing && r.Timing.Contended && s.noVerdict() && res.Verdict == stats.Regression {
			r.Metrics[i].Notes = append(r.Metrics[i].Notes, contendedNote)
			continue
		}
		hostBusyResult(&r.Metrics[i], s.busy, s.quietBase, s.quietCand, r.runNames(s.Timing))
	}
}

// timed reports whether r judged metric name on timing runs.
func (r *Report) timed(name string) bool {
	return r.Timing != nil && slices.Contains(r.Timing.Metrics, name)
}
