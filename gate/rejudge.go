package gate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/stats"
)

// Samples returns the per-step values of metric m in each run, ranks
// combined: what Compare judges the metric on. gpugate-result.json carries
// them so that a job that did not run the comparison (the post step, the
// fork flow's comment job) can judge it again with Rejudge.
func Samples(runs []Run, m analysis.Metric) [][]float64 {
	var ws []string
	return samples(runs, m, &ws)
}

// Rejudge judges a reported metric again from its samples with
// stats.Compare, the rule Compare applies, and returns the new result: a
// report read from an artifact is believed for its numbers only, never
// for its verdicts, nor for how it was to be judged. Everything the rule
// takes besides the samples comes from opt, which the caller builds from
// the trusted perf.yaml as Compare's caller does: the allowance, the
// smallest change and whether the metric gates (perf.yaml's allowances,
// memory_min_change and gate:, else the defaults), and the level
// (opt.Thresholds; repeat: auto looks at 2%/max_runs). The artifact's
// allowance_pct, min_abs, gate flag and α are ignored: a forged gate=false
// or allowance of 5000% would turn a regression into a pass. The reported
// explanation of a regression (Why) is kept only while the new verdict is
// a regression. A level above the default 5% is refused.
func Rejudge(old stats.Result, base, cand [][]float64, opt Options) (stats.Result, error) {
	th := opt.Thresholds
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
	r := stats.Compare(spec(m, opt, Gates(opt), base), base, cand, th)
	if r.Verdict == stats.Regression {
		r.Why = old.Why
	}
	return r, nil
}

// CheckMetricList refuses a list of compared metrics (the names a result
// carries samples of) that no comparison by Compare yields, so that a
// result cannot escape a gate metric by leaving it out. Compare compares
// every metric that both sides measured: the host metrics (step_time,
// data_wait, sync_calls, sync_time) always, the GPU metrics all together
// or none (a profile without GPU activity has none of them), the memory
// metrics (analysis.Metric.Optional) where measured. It returns the
// memory metrics that gate under opt but are absent, which the caller
// states; an empty list (no baseline) is the caller's to judge.
func CheckMetricList(names []string, opt Options) (absentGates []string, err error) {
	have := map[string]bool{}
	for _, n := range names {
		m, ok := analysis.MetricByName(n)
		if !ok || m.Name != n {
			return nil, fmt.Errorf("metric %q is not one gpugate computes", n)
		}
		have[n] = true
	}
	var missing, gpuHave, gpuMissing []string
	for _, m := range analysis.Metrics {
		switch {
		case m.Optional():
			if !have[m.Name] && Gates(opt)[m.Name] {
				absentGates = append(absentGates, m.Name)
			}
		case m.GPU:
			if have[m.Name] {
				gpuHave = append(gpuHave, m.Name)
			} else {
				gpuMissing = append(gpuMissing, m.Name)
			}
		case !have[m.Name]:
			missing = append(missing, m.Name)
		}
	}
	if len(gpuHave) > 0 && len(gpuMissing) > 0 {
		missing = append(missing, gpuMissing...)
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("the result lacks metric(s) %s, which every comparison of such runs has", strings.Join(missing, ", "))
	}
	return absentGates, nil
}
