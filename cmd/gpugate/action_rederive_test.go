package main

import (
	"strings"
	"testing"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/stats"
)

// TestRederiveKeepsConditions: the fork flow's comment re-derives the
// verdict from the artifact's metrics; the run conditions that voided it
// in the run must void it again, or a regression measured on a throttled
// GPU is posted as a regression and a pass against a baseline that ran
// throttled is posted as a pass.
func TestRederiveKeepsConditions(t *testing.T) {
	sm := 1410.0
	gpu := func(share float64) *gate.Conditions {
		return &gate.Conditions{Sampled: true, GPUs: []gate.GPUConditions{{Index: 0, Name: "NVIDIA H100", Samples: 10, Busy: 10,
			SMClockMedianMHz: &sm, ReasonShare: map[string]float64{"hw_slowdown": share}}}}
	}
	for _, tc := range []struct {
		name       string
		metric     stats.Verdict
		base, cand *gate.Conditions
		want       stats.Verdict
	}{
		{"regression on a throttled candidate", stats.Regression, gpu(0), gpu(0.4), stats.Inconclusive},
		{"pass against a throttled baseline", stats.Pass, gpu(0.4), gpu(0), stats.Inconclusive},
		{"regression under good conditions", stats.Regression, gpu(0), gpu(0), stats.Regression},
		{"pass on a throttled candidate", stats.Pass, gpu(0), gpu(0.4), stats.Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := &gate.Report{Verdict: tc.metric, Metrics: []stats.Result{{Name: "step_time", Gate: true, Verdict: tc.metric}}}
			gate.ApplyConditions(rep, []*gate.Conditions{tc.base}, []*gate.Conditions{tc.cand}, gate.DefaultConditionMargins, "")
			if rep.Verdict != tc.want {
				t.Fatalf("the run's verdict %s, want %s", rep.Verdict, tc.want)
			}
			before := len(rep.Warnings)
			rederive(rep) // what the comment posts
			if rep.Verdict != tc.want {
				t.Errorf("re-derived verdict %s, want %s (conditions %+v)", rep.Verdict, tc.want, rep.Conditions)
			}
			n := 0
			for _, w := range rep.Warnings {
				if strings.HasPrefix(w, "run conditions void") {
					n++
				}
			}
			if len(rep.Warnings) != before || n > 1 {
				t.Errorf("warnings %q: the reasons said twice", rep.Warnings)
			}
		})
	}
}
