package analysis

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/trace/kineto"
)

// TestPreCapture checks launch attribution on the fixtures whose captures
// begin while earlier work still runs on the GPU: ops whose correlation id
// lies below the first API call in the trace belong to no step. The
// expected numbers come from analysis/testdata/precapture.py (plain json,
// no gpugate code):
//
//	python3 analysis/testdata/precapture.py ../shared/fixtures/kineto/hta-negative-queue-length-a100-16rank/rank0.json.gz
//
// Before, the A100 rank-0 trace's first step counted 1,780 kernels: its own
// 1,075 and the 705 launched before the capture.
func TestPreCapture(t *testing.T) {
	for _, c := range []struct {
		rel             string
		kernels, copies int // per step, every step
		pre             PreCaptureOps
	}{
		{"kineto/hta-negative-queue-length-a100-16rank/rank0.json.gz", 1075, 250, PreCaptureOps{705, 140, 27}},
		{"kineto/hta-trace-diff/test.json.gz", 1555, 803, PreCaptureOps{546, 38, 30}},
		{resnet + "num_workers_0_nometa/worker0.pt.trace.json.gz", 1467, 2, PreCaptureOps{736, 0, 29}},
		{"kineto/param-dlrm-8rank-v100/worker1_step_12.1694128201556.pt.trace.json.gz", 246, 16, PreCaptureOps{64, 0, 0}},
		{"kineto/param-dlrm-8rank-v100/worker0_step_12.1694128201545.pt.trace.json.gz", 245, 16, PreCaptureOps{}},
	} {
		p, err := kineto.ReadFile(fixtures.Path(t, c.rel))
		if err != nil {
			t.Fatal(err)
		}
		r := Analyze(p, Options{KeepEdges: true})
		if r.PreCapture != c.pre {
			t.Errorf("%s: pre-capture ops %+v, want %+v", c.rel, r.PreCapture, c.pre)
		}
		for _, s := range r.Steps {
			copies := s.H2D.Count + s.D2H.Count + s.D2D.Count
			if s.Kernels != c.kernels || copies != c.copies {
				t.Errorf("%s %s: %d kernels, %d copies; want %d, %d", c.rel, s.Name, s.Kernels, copies, c.kernels, c.copies)
			}
		}
		warned := slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "launched before the capture began") })
		if warned != (c.pre.Total() > 0) {
			t.Errorf("%s: pre-capture warning %v, want %v: %q", c.rel, warned, c.pre.Total() > 0, r.Warnings)
		}
		if c.pre.Total() == 0 {
			continue
		}
		// They are no step's work: the first window's busy time is the
		// union of its own ops only (docs/metrics.md), within the window.
		if r.Steps[0].GPUBusy <= 0 || r.Steps[0].GPUBusy > r.Steps[0].StepTime() {
			t.Errorf("%s: first step busy %d of %d ns", c.rel, r.Steps[0].GPUBusy, r.Steps[0].StepTime())
		}
	}
}
