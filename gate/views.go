package gate

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/runcond"
)

// Judged is one stored run's value of a metric as a verdict compares it,
// and which of the run's runs it came from: the views (the dashboard's
// charts, run pages, health and change points) read it, so that they
// plot the number the verdict compares, not another.
type Judged struct {
	Value float64
	// Timing counts the timing runs the value came from (a timed metric
	// of a run stored with timing runs: their quiet ones, or every one
	// when none was quiet); 0 when it came from the profiled run.
	Timing int
	// TimingBusy says why the run's timing runs' host was busy, when
	// every one of them was (the value then comes from all of them, and
	// a verdict would leave the run out of step time); "" otherwise.
	TimingBusy string
}

// JudgedValue is a stored run's value of metric m as a verdict compares
// it: for a timed metric (IsTimed) of a run stored with timing runs, the
// geometric mean of the run means (each the mean of the timing run's
// steps, as stats takes a run's mean) of its quiet timing runs under
// margins — the samples JudgedSamples gives a verdict, one slice per
// timing run —, or of every timing run when none was quiet; otherwise
// the profiled run's value (RunValue). With one timing run stored per
// profiled run, as gpugate run stores them, the geometric mean of a
// side's values is the verdict's baseline.value or candidate.value.
func JudgedValue(run Run, timing []TimingRun, m analysis.Metric, margins HostMargins) (Judged, bool) {
	if !IsTimed(m.Name) || len(timing) == 0 {
		v, ok := RunValue(run, m)
		return Judged{Value: v}, ok
	}
	// The selection of one side: its quiet timing runs (selectIn.metric,
	// as a verdict takes them), or every one when none was quiet.
	cs := make([]*runcond.Conditions, len(timing))
	for i, t := range timing {
		cs[i] = t.Conditions
	}
	d := Disturbed{Base: Disturbances(cs, margins)}
	s := selectIn{ntb: len(timing), ntc: 1, timed: TimedMetrics, timing: d}.metric(m)
	var busy string
	if s.quietBase == 0 {
		busy = d.Base[0]
	}
	samples, _ := s.timingSamples(timing, nil)
	var logSum float64
	n := 0
	for _, s := range samples {
		if v, ok := runMean(s); ok && v > 0 {
			logSum += math.Log(v)
			n++
		}
	}
	if n == 0 {
		return Judged{}, false
	}
	v := math.Exp(logSum / float64(n))
	if n == 1 {
		for _, s := range samples {
			if x, ok := runMean(s); ok {
				v = x // the same bits as the verdict's run mean
			}
		}
	}
	return Judged{Value: v, Timing: n, TimingBusy: busy}, true
}

// runMean is the mean of a run's finite steps, summed in ascending order
// as stats sums them.
func runMean(xs []float64) (float64, bool) {
	var fs []float64
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			fs = append(fs, x)
		}
	}
	if len(fs) == 0 {
		return 0, false
	}
	slices.Sort(fs)
	var sum float64
	for _, x := range fs {
		sum += x
	}
	return sum / float64(len(fs)), true
}

// StepSeries are the step times (ms) of the first run of each side that
// step time was judged on (JudgedSamples): a timing run's when the
// verdict judged step time on timing runs, else a profiled run's, its
// ranks combined as the gate combines them. The PR comment, report.md
// and the step summary chart these, titled by StepRuns, so that every
// view shows the same steps.
func (rep *Report) StepSeries(base, cand []Run, bt, ct []TimingRun) (b, c []float64) {
	m, _ := analysis.MetricByName("step_time")
	bs, cs := rep.JudgedSamples(m, base, cand, bt, ct)
	first := func(runs [][]float64) []float64 {
		if len(runs) == 0 {
			return nil
		}
		return runs[0][:min(len(runs[0]), maxStepSeries)]
	}
	return first(bs), first(cs)
}

// maxStepSeries bounds the steps StepSeries gives of a run.
const maxStepSeries = 200

// StepRuns names the kind of run StepSeries's steps come from: "timing
// run" (no profiler) or "profiled run".
func (rep *Report) StepRuns() string {
	if rep != nil && rep.timed("step_time") {
		return "timing run"
	}
	return "profiled run"
}

// RunIDs are the store ids of a report's runs, by side, in the order of
// its runs (Side.Runs, RunConditions): the comment, report.md, the text
// report, baseline list and show and the dashboard all call a run by its
// id. A side whose runs are not stored has none. BaselineTiming and
// CandidateTiming are, for each timing run of a side in order, the id of
// the stored run it was stored with, 0 for one not stored (repeat: auto
// stores a candidate's timing runs with its profiled runs, and those made
// after its last profiled run with none); none where unknown.
type RunIDs struct {
	Baseline        []int64 `json:"baseline"`
	Candidate       []int64 `json:"candidate"`
	BaselineTiming  []int64 `json:"baseline_timing,omitempty"`
	CandidateTiming []int64 `json:"candidate_timing,omitempty"`
}

// ids are the report's store ids (RunIDs, whose methods take a nil one
// as unknown); nil on a nil report too.
func (rep *Report) ids() *RunIDs {
	if rep == nil {
		return nil
	}
	return rep.RunIDs
}

// of are the store ids of a side's runs (timing: of its timing runs'
// stored runs); nil where unknown, on a nil RunIDs too.
func (ids *RunIDs) of(side string, timing bool) []int64 {
	if ids == nil {
		return nil
	}
	switch {
	case side == "candidate" && timing:
		return ids.CandidateTiming
	case side == "candidate":
		return ids.Candidate
	case timing:
		return ids.BaselineTiming
	}
	return ids.Baseline
}

// RunName is run i (from 0) of a side by its store id (RunIDs.RunName).
func (rep *Report) RunName(side string, i int) string {
	return rep.ids().RunName(side, i)
}

// TimingRunName is timing run i (from 0) of a side by the stored run it
// was stored with (RunIDs.TimingRunName).
func (rep *Report) TimingRunName(side string, i int) string {
	return rep.ids().TimingRunName(side, i)
}

// RunName is run i (from 0) of a side ("baseline" or "candidate") by its
// store id, "run 7"; "run N" by position (from 1) where ids are unknown
// (a nil ids too).
func (ids *RunIDs) RunName(side string, i int) string {
	if of := ids.of(side, false); i >= 0 && i < len(of) {
		return fmt.Sprintf("run %d", of[i])
	}
	return RunByPosition(i)
}

// TimingRunName is timing run i (from 0) of a side by the stored run it
// was stored with: "run 7's timing run", or "run 7's timing run 2" where
// run 7 has several; "timing run N (not stored)" by position for one
// stored with none, "timing run N" where unknown (a nil ids too).
func (ids *RunIDs) TimingRunName(side string, i int) string {
	of := ids.of(side, true)
	if i < 0 || i >= len(of) {
		return fmt.Sprintf("timing run %d", i+1)
	}
	if of[i] == 0 {
		return fmt.Sprintf("timing run %d (not stored)", i+1)
	}
	k, n := ordinals(of)
	if n[i] == 1 {
		return fmt.Sprintf("run %d's timing run", of[i])
	}
	return fmt.Sprintf("run %d's timing run %d", of[i], k[i]+1)
}

// ordinals are, for each of ids, how many equal ids come before it (k)
// and how many there are (n): one pass, where TimingRunName scans ids for
// each run. 0, no stored run, is never counted as one.
func ordinals(ids []int64) (k, n []int) {
	k, n = make([]int, len(ids)), make([]int, len(ids))
	seen := map[int64]int{}
	for i, id := range ids {
		if id == 0 {
			continue
		}
		k[i] = seen[id]
		seen[id]++
	}
	for i, id := range ids {
		n[i] = seen[id]
	}
	return k, n
}

// runNames names the runs of either side, the timing runs (timing) or
// the profiled ones.
func (rep *Report) runNames(timing bool) func(side string, i int) string {
	if timing {
		return rep.TimingRunName
	}
	return rep.RunName
}

// JudgedNames are the names of the runs behind metric m's run means
// (stats.Summary.RunMeans), each side's in order, as its selection
// (select.go) took them: "run 7" by store id, a timing run as its stored
// run's ("run 7", or "run 7.2" for the second of run 7's; "timing run 3"
// by position for one not stored). A side is nil
// where a run of it has no id, or where the selection's runs are not as
// many as want (nb, nc: the run means): the caller then names them by
// position.
func (rep *Report) JudgedNames(m analysis.Metric, nb, nc int) (b, c []string) {
	if rep == nil || rep.RunIDs == nil {
		return nil, nil
	}
	s := rep.Selection(m)
	names := func(side string, idx []int, want int) []string {
		ids := rep.ids().of(side, s.Timing)
		if len(idx) != want {
			return nil
		}
		for _, i := range idx {
			if i < 0 || i >= len(ids) {
				return nil
			}
		}
		var k, n []int
		if s.Timing {
			k, n = ordinals(ids)
		}
		var out []string
		for _, i := range idx {
			name := fmt.Sprintf("run %d", ids[i])
			if s.Timing && ids[i] == 0 {
				name = fmt.Sprintf("timing run %d", i+1) // not stored
			} else if s.Timing && n[i] > 1 {
				name = fmt.Sprintf("run %d.%d", ids[i], k[i]+1)
			}
			out = append(out, name)
		}
		return out
	}
	return names("baseline", s.Base, nb), names("candidate", s.Cand, nc)
}
