package action

import (
	"testing"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/pipeline"
	"github.com/gpugate/gpugate/stats"
)

// An artifact is judged again at the default level, or at repeat: auto's
// AutoAlpha/max_runs with no more runs than max_runs; a forged level (a
// tiny α would widen every interval and turn a regression inconclusive)
// is refused.
func TestRejudgeLevel(t *testing.T) {
	two := map[string]MetricSamples{"step_time": {Baseline: [][]float64{{1}, {1}, {1}}, Candidate: [][]float64{{2}, {2}}}}
	auto := func(alpha float64, maxRuns int) *gate.Report {
		return &gate.Report{Alpha: alpha, Sampling: &gate.Sampling{Unit: stats.UnitRun, Runs: 2, MaxRuns: maxRuns}}
	}
	for _, c := range []struct {
		name string
		rep  *gate.Report
		want float64 // the level; 0: refused
	}{
		{"default", &gate.Report{Alpha: 0.05}, 0.05},
		{"repeat: auto, max_runs 5", auto(pipeline.AutoAlpha/5, 5), pipeline.AutoAlpha / 5},
		{"forged tiny level", &gate.Report{Alpha: 1e-300}, 0},
		{"forged tiny level under repeat: auto", auto(1e-300, 5), 0},
		{"a level not of its max_runs", auto(pipeline.AutoAlpha/7, 5), 0},
		{"max_runs below the 2 runs made", auto(pipeline.AutoAlpha/1, 1), 0},
		{"max_runs above what perf.yaml takes", auto(pipeline.AutoAlpha/1000, 1000), 0},
		{"ab's pairs", &gate.Report{Alpha: 0.0025, Sampling: &gate.Sampling{Unit: stats.UnitPair, Pairs: 3}}, 0},
	} {
		th, err := rejudgeLevel(c.rep, two)
		switch {
		case c.want == 0 && err == nil:
			t.Errorf("%s: accepted at α=%v", c.name, th.Alpha)
		case c.want > 0 && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want > 0 && c.rep.Sampling != nil && (th.Alpha != c.want || th.AutoMaxRuns != c.rep.Sampling.MaxRuns):
			t.Errorf("%s: α=%v max_runs %d, want α=%v", c.name, th.Alpha, th.AutoMaxRuns, c.want)
		case c.want > 0 && c.rep.Sampling == nil && th.Alpha != 0:
			t.Errorf("%s: α=%v, want the default (0)", c.name, th.Alpha)
		}
	}
}
