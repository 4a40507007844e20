package gate

import (
	"fmt"
	"math"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/stats"
)

// Samples returns the per-step values of metric m in each run, ranks
// combined: what Compare judges the metric on. gpugate-result.json carries
// them so that a job that did not run the comparison (the fork flow's
// comment job) can judge it again with Rejudge.
func Samples(runs []Run, m analysis.Metric) [][]float64 {
	var ws []string
	return samples(runs, m, &ws)
}

// Rejudge judges a reported metric again from its samples with
// stats.Compare, the rule Compare applies, and returns the new result: a
// report read from an artifact is believed for its numbers only, never
// for its verdicts. The metric's name, unit and direction are gpugate's
// own for that name; its allowance, smallest change and gate flag are the
// reported ones (what the comment shows), checked to be numbers that
// perf.yaml can give. The reported explanation of a regression (Why) is
// kept only while the new verdict is a regression. th is the level the
// run judged at (repeat: auto looks at 2%/max_runs); one above the default
// 5% is refused. A forged lower level would widen every interval (a
// regression turned inconclusive): the caller checks that the level is
// one gpugate judges at (action's rejudgeLevel).
func Rejudge(old stats.Result, base, cand [][]float64, th stats.Thresholds) (stats.Result, error) {
	if th.Alpha == 0 {
		th.Alpha = stats.DefaultThresholds.Alpha
	}
	if !(th.Alpha > 0 && th.Alpha <= stats.DefaultThresholds.Alpha) {
		return old, fmt.Errorf("metric %s: level α=%v is not one gpugate judges at", old.Name, th.Alpha)
	}
	th.Paired = false
	m, ok := analysis.MetricByName(old.Name)
	if !ok || m.Name != old.Name {
		return old, fmt.Errorf("metric %q is not one gpugate computes", old.Name)
	}
	allow, minAbs := old.AllowancePct/100, old.MinAbs
	if !(allow >= 0 && allow <= 100) || !(minAbs >= 0) || math.IsInf(minAbs, 0) {
		return old, fmt.Errorf("metric %s: allowance %v%% and smallest change %v are not ones perf.yaml gives", old.Name, old.AllowancePct, old.MinAbs)
	}
	r := stats.Compare(stats.Spec{Name: m.Name, Unit: m.Unit, Better: int(m.Better), Allowance: allow, MinAbs: minAbs, Gate: old.Gate},
		base, cand, th)
	if r.Verdict == stats.Regression {
		r.Why = old.Why
	}
	return r, nil
}
