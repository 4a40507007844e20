package gate

import (
	"fmt"
	"math"

	"github.com/gpugate/gpugate/stats"
)

// DefaultContentionMargin is how much longer than a quiet step a step
// beside other work may take once the job's own measured run-queue wait
// is taken off: the slowdown that contention causes without making the
// job wait for a CPU (shared caches, memory bandwidth, a busy SMT
// sibling, the scheduler's own work). Measured by
// scripts/contention-margin.sh (docs/verdicts.md §5c); perf.yaml
// host.contention_margin sets it.
const DefaultContentionMargin = 0.60

// contentionFloor is a lower bound on the step times a disturbed timing
// run would have measured on a quiet host: each step less the run-queue
// wait the job's threads measured in it, divided by 1 + margin. The wait
// is all that other work can have taken from a step by holding the CPUs;
// the margin bounds what it takes otherwise. A step whose wait exceeds
// it (threads that waited at the same time, each counted) floors at 0.
// ok is false when the run has no measured wait.
func contentionFloor(r TimingRun, margin float64) (floor []float64, ok bool) {
	if r.WaitMs == nil || len(r.WaitMs) != len(r.StepMs) {
		return nil, false
	}
	floor = make([]float64, len(r.StepMs))
	for i, x := range r.StepMs {
		floor[i] = math.Max(x-r.WaitMs[i], 0) / (1 + margin)
	}
	return floor, true
}

// meanWait is the mean wait a step over runs, ms.
func meanWait(runs []TimingRun) float64 {
	var sum float64
	var n int
	for _, r := range runs {
		for _, w := range r.WaitMs {
			sum += w
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// compareContended judges step time when a side has no quiet timing run
// left, where it would otherwise get no verdict. It can only find a
// regression, never a pass:
//
//   - each disturbed candidate run counts by its contentionFloor, a lower
//     bound on its quiet step time (a quiet candidate run by its own times);
//   - the baseline counts by its quiet runs, or, when it has none, by every
//     run as measured: other work only ever lengthens a step, so a busy
//     baseline run is an upper bound on its quiet time.
//
// Both bounds lean against a regression, so a regression found on them is
// one a quiet host would show too: a slowdown larger than the measured
// wait (and the margin) can explain. The same code beside CPU hogs floors
// at or below its quiet time and is never a regression by it. Anything
// short of a regression keeps the no-verdict result (pass would need the
// opposite bounds, which a busy run does not give). ok is false when the
// rule does not apply: a disturbed candidate run without a measured wait.
func compareContended(spec stats.Spec, t *TimingRuns, d Disturbed, th stats.Thresholds) (stats.Result, bool) {
	b, c, ok := contendedSamples(t.Base, t.Cand, d, t.Margins.Contention, th.Paired)
	if !ok {
		return stats.Result{}, false
	}
	res := stats.Compare(spec, b, c, th)
	if res.Verdict != stats.Regression {
		return res, false
	}
	res.Notes = append(res.Notes, fmt.Sprintf("beside other work: each disturbed candidate timing run's steps less the run-queue wait its threads measured (%.1f ms a step on average), ÷ %.2f", meanWait(t.Cand), 1+t.Margins.Contention), contendedNote)
	return res, true
}

// contendedNote says what a regression found by the contention rule means.
const contendedNote = "a slowdown larger than the busy host explains: judged on a lower bound of the candidate's quiet step time (docs/verdicts.md §5c)"

// contendedSamples are the samples compareContended judges: the candidate
// runs' (floors for the disturbed ones) and the baseline's (its quiet
// runs, or every run when it has none or the runs are paired). ok is
// false when a disturbed candidate run has no measured wait.
func contendedSamples(bt, ct []TimingRun, d Disturbed, margin float64, paired bool) (b, c [][]float64, ok bool) {
	busy := func(rs []string, i int) bool { return i < len(rs) && rs[i] != "" }
	qb, _ := d.quietIdx(len(bt), len(ct), false)
	for i, r := range ct {
		if !busy(d.Cand, i) {
			c = append(c, r.StepMs)
			continue
		}
		f, ok := contentionFloor(r, margin)
		if !ok {
			return nil, nil, false
		}
		c = append(c, f)
	}
	for i, r := range bt {
		// Paired runs stay pairs: every baseline run, each an upper bound.
		if paired || len(qb) == 0 || !busy(d.Base, i) {
			b = append(b, r.StepMs)
		}
	}
	return b, c, true
}
