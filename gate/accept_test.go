package gate

import (
	"slices"
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/stats"
)

func TestGateListAndAccept(t *testing.T) {
	w4 := load(t, resnet+"num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	w0 := load(t, resnet+"num_workers_0/worker0.1623143089861.pt.trace.json.gz")
	gates := func(r *Report) []string {
		var g []string
		for _, m := range r.Metrics {
			if m.Gate {
				g = append(g, m.Name)
			}
		}
		return g
	}
	// The capture three times as baseline runs: a spread of 0, so that
	// the one candidate run is judged exactly (this tests the gate list
	// and Accept, not the statistics).
	w4x3 := []Run{w4, w4, w4}
	r := Compare(w4x3, []Run{w0}, Options{})
	if got := gates(r); !slices.Equal(got, []string{"step_time", "kernels", "cpu_wait", "sync_calls"}) {
		t.Errorf("default gate metrics %v", got)
	}
	if r.Verdict != stats.Regression {
		t.Fatalf("num_workers 4 -> 0: %s, want regression", r.Verdict)
	}
	// Only kernels gate: the loader stall shows, but does not fail.
	k := Compare(w4x3, []Run{w0}, Options{Gate: []string{"kernels"}})
	if got := gates(k); !slices.Equal(got, []string{"kernels"}) || k.Verdict != stats.Pass {
		t.Errorf("gate [kernels]: gates %v, verdict %s; want [kernels], pass", got, k.Verdict)
	}

	if !Accept(r, "gpugate/accept-regression") || r.Verdict != stats.Accepted || r.Accepted == nil ||
		r.Accepted.Label != "gpugate/accept-regression" || !slices.Contains(r.Accepted.Metrics, "step_time") || !slices.Contains(r.Accepted.Metrics, "cpu_wait") {
		t.Errorf("Accept: verdict %s, %+v", r.Verdict, r.Accepted)
	}
	for _, m := range r.Metrics {
		if m.Name == "step_time" && m.Verdict != stats.Regression {
			t.Errorf("accepted step_time says %s: the facts must stay", m.Verdict)
		}
	}
	// A trace against itself is no regression (with 4+4 steps the
	// interval verdict is inconclusive, not pass): Accept leaves it alone.
	p := Compare([]Run{w4}, []Run{w4}, Options{})
	before := p.Verdict
	if before == stats.Regression || Accept(p, "x") || p.Verdict != before || p.Accepted != nil {
		t.Errorf("Accept of a %s changed it: %s %+v", before, p.Verdict, p.Accepted)
	}
}

// CPU wait gates with a minimum absolute change: 0.2 -> 0.3 ms per step is
// +50% and significant, and no regression; 2 -> 6 ms is one.
func TestCPUWaitMinimum(t *testing.T) {
	m, _ := analysis.MetricByName("cpu_wait")
	allow, minAbs := DefaultAllowance(m)
	spec := stats.Spec{Name: m.Name, Unit: m.Unit, Better: int(m.Better), Allowance: allow, MinAbs: minAbs, Gate: true}
	// k runs of 30 steps, run i's level off by 1% per run.
	series := func(v float64, k int) [][]float64 {
		var out [][]float64
		for r := range k {
			xs := make([]float64, 30)
			for i := range xs {
				xs[i] = v * (1 + 0.01*float64(r)) * (1 + 0.01*float64(i%5))
			}
			out = append(out, xs)
		}
		return out
	}
	if r := stats.Compare(spec, series(0.2, 5), series(0.3, 1), stats.Thresholds{}); r.Verdict != stats.Pass || !r.Significant {
		t.Errorf("0.2 -> 0.3 ms: %s (significant %v), want a significant pass", r.Verdict, r.Significant)
	}
	if r := stats.Compare(spec, series(2, 5), series(6, 1), stats.Thresholds{}); r.Verdict != stats.Regression {
		t.Errorf("2 -> 6 ms: %s, want regression", r.Verdict)
	}
}
