package analysis

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/trace"
	"github.com/gpugate/gpugate/trace/kineto"
)

func TestTopLevel(t *testing.T) {
	// aten::linear [0, 100) runs aten::addmm [10, 90); a second thread's
	// mm overlaps in time and is counted on its own.
	ops := []trace.FLOPOp{
		{Start: 10, End: 90, Thread: 1, Kind: trace.FLOPAddmm, FLOPs: 5},
		{Start: 0, End: 100, Thread: 1, Kind: trace.FLOPLinear, FLOPs: 5},
		{Start: 20, End: 30, Thread: 2, Kind: trace.FLOPMM, FLOPs: 7},
		{Start: 100, End: 120, Thread: 1, Kind: trace.FLOPMM, FLOPs: 3},
	}
	got := topLevel(ops)
	if len(got) != 3 || got[0].Kind != trace.FLOPLinear || got[1].Start != 100 || got[2].Thread != 2 {
		t.Errorf("topLevel = %+v, want linear, the later mm, thread 2's mm", got)
	}
}

func TestPeakTFLOPS(t *testing.T) {
	for _, tc := range []struct {
		device, dtype string
		want          float64
		ok            bool
	}{
		{"Tesla V100-SXM2-32GB", "fp16", 125, true},
		{"Tesla V100-SXM2-16GB", "bf16", 0, false},
		{"Tesla V100-PCIE-16GB", "fp32", 14, true},
		{"NVIDIA A100-SXM4-80GB", "bf16", 312, true},
		{"NVIDIA A100-PCIE-40GB", "tf32", 156, true},
		{"NVIDIA A100 80GB PCIe", "bf16", 312, true},
		{"NVIDIA H100 80GB HBM3", "bf16", 989.5, true},
		{"NVIDIA H100 PCIe", "fp8", 1513, true},
		{"NVIDIA H200", "bf16", 989.5, true},
		{"NVIDIA H200 NVL", "bf16", 0, false},
		{"NVIDIA L4", "fp16", 121, true},
		{"NVIDIA A10", "bf16", 125, true},
		{"NVIDIA A10G", "bf16", 0, false},
		{"Tesla T4", "fp16", 65, true},
		{"none", "bf16", 0, false},
		{"", "bf16", 0, false},
	} {
		got, _, why, ok := PeakTFLOPS(tc.device, tc.dtype)
		if got != tc.want || ok != tc.ok || (!ok && why == "") {
			t.Errorf("PeakTFLOPS(%q, %q) = %v, %v (%s), want %v, %v", tc.device, tc.dtype, got, ok, why, tc.want, tc.ok)
		}
	}
}

func TestWorkPerStep(t *testing.T) {
	p := trace.New("t.json", trace.FormatKineto)
	p.Devices = []trace.Device{{ID: 0, Name: "NVIDIA A100-SXM4-80GB"}}
	p.FLOPOps = []trace.FLOPOp{
		{Start: 100, End: 200, Thread: 1, Kind: trace.FLOPMM, FLOPs: 3e12},
		{Start: 1_000_100, End: 1_000_200, Thread: 1, Kind: trace.FLOPMM, FLOPs: math.NaN()},
	}
	r := &Result{Profile: p, Steps: []Step{{HostStart: 0, HostEnd: 1_000_000, Start: 0, End: 1e9}, {HostStart: 1_000_000, HostEnd: 2_000_000, Start: 1e9, End: 2e9}}}
	w := r.work(Work{SamplesPerStep: 32, MFUDtype: "bf16"})
	if w.FLOPsSource != "shapes" || w.FLOPOps != 2 || w.Uncounted != 1 || *w.PeakTFLOPS != 312 {
		t.Fatalf("work %+v", w)
	}
	s := w.Steps[0]
	// 3e12 FLOPs in a 1 s step: 3 TFLOP/s, 3/312 of an A100's BF16 peak; 32 samples/s.
	if *s.SamplesPerSec != 32 || *s.FLOPs != 3e12 || *s.TFLOPS != 3 || math.Abs(*s.MFU-3.0/312) > 1e-15 {
		t.Errorf("step 0: %+v", s)
	}
	if w.Steps[1].FLOPs != nil || w.Steps[1].MFU != nil {
		t.Errorf("step 1 has only an uncounted op: %+v, want FLOPs absent", w.Steps[1])
	}
}

// TestWorkTorch26 analyzes the real torch 2.6 trace of one SmallCNN step
// (trace/kineto/testdata/torch26-smallcnn; the hand arithmetic is in
// trace/kineto's TestFLOPOpsTorch26): it has no ProfilerStep ranges, so the
// whole profile is the step, and its top-level operators (conv2d, not the
// convolutions inside; linear, not its addmm) add up to the hand count.
func TestWorkTorch26(t *testing.T) {
	p, err := kineto.ReadFile(filepath.Join("..", "trace", "kineto", "testdata", "torch26-smallcnn", "trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := Analyze(p, Options{Work: Work{SamplesPerStep: 32, Device: "NVIDIA H100 80GB HBM3"}})
	w := r.Work
	if w == nil || len(w.Steps) != 1 || w.Steps[0].FLOPs == nil {
		t.Fatalf("work %+v", w)
	}
	if got := *w.Steps[0].FLOPs; got != 287047680 || w.FLOPOps != 7 || w.Uncounted != 0 || w.FLOPsSource != "shapes" {
		t.Errorf("FLOPs %v over %d ops (%d uncounted, source %q), want 287047680 over 7", got, w.FLOPOps, w.Uncounted, w.FLOPsSource)
	}
	// The device named in Work (the fingerprint's) is used when the trace
	// names none: the H100 SXM's dense BF16 peak.
	sec := float64(r.Steps[0].StepTime()) / 1e9
	if *w.PeakTFLOPS != 989.5 || math.Abs(*w.Steps[0].MFU-287047680/sec/1e12/989.5) > 1e-12 || math.Abs(*w.Steps[0].SamplesPerSec-32/sec) > 1e-9 {
		t.Errorf("peak %v, step %+v", *w.PeakTFLOPS, w.Steps[0])
	}
}

// TestWorkFixtures counts the FLOPs of real GPU traces that recorded
// shapes (torch.profiler record_shapes; ../shared/fixtures/PROVENANCE.md).
// The expected per-step counts were computed independently of gpugate: a
// Python script read the same traces with json, took the top-level
// aten::mm/addmm/bmm/baddbmm/linear events per thread in each
// ProfilerStep's host window, and summed torch 2.6's own formulas
// (torch.utils.flop_counter mm_flop, addmm_flop, bmm_flop; linear as mm of
// the flattened input). These traces hold matmuls only, no convolutions.
func TestWorkFixtures(t *testing.T) {
	for _, tc := range []struct {
		rel    string
		flops  float64 // per measured step, every step the same
		device string
		peak   float64 // dense BF16 TFLOP/s; 0: none (V100 has no BF16)
	}{
		{"kineto/hta-negative-queue-length-a100-16rank/rank0.json.gz", 4505731072, "NVIDIA A100-SXM4-80GB", 312},
		{"kineto/hta-trace-diff/test.json.gz", 26007830528, "Tesla V100-SXM2-16GB", 0},
		{"kineto/param-dlrm-8rank-v100/worker0_step_12.1694128201545.pt.trace.json.gz", 60487168, "Tesla V100-SXM2-32GB", 0},
	} {
		p, err := kineto.ReadFile(fixtures.Path(t, tc.rel))
		if err != nil {
			t.Fatal(err)
		}
		r := Analyze(p, Options{})
		w := r.Work
		if w == nil || w.FLOPsSource != "shapes" || w.Uncounted != 0 || w.Device != tc.device {
			t.Fatalf("%s: work %+v", tc.rel, w)
		}
		for i, s := range w.Steps {
			if s.FLOPs == nil || *s.FLOPs != tc.flops {
				t.Errorf("%s step %d: FLOPs %v, want %v", tc.rel, i, s.FLOPs, tc.flops)
				continue
			}
			sec := float64(r.Steps[i].StepTime()) / 1e9
			if math.Abs(*s.TFLOPS-tc.flops/sec/1e12) > 1e-12 {
				t.Errorf("%s step %d: %v TFLOP/s, want %v", tc.rel, i, *s.TFLOPS, tc.flops/sec/1e12)
			}
			switch {
			case tc.peak == 0 && (s.MFU != nil || w.MFUAbsent == ""):
				t.Errorf("%s: MFU %v without a BF16 peak (%q)", tc.rel, s.MFU, w.MFUAbsent)
			case tc.peak > 0 && (s.MFU == nil || math.Abs(*s.MFU-tc.flops/sec/1e12/tc.peak) > 1e-15):
				t.Errorf("%s step %d: MFU %v, want %v", tc.rel, i, s.MFU, tc.flops/sec/1e12/tc.peak)
			}
		}
		t.Logf("%s: %d steps, %.4g FLOP/step, median step %.2f ms, MFU %v (%s)", tc.rel, len(w.Steps), tc.flops, Summarize(stepMs(r)).Median, w.WorkSeries("mfu"), w.MFUAbsent)
	}
}

func stepMs(r *Result) []float64 {
	var out []float64
	for _, s := range r.Steps {
		out = append(out, float64(s.StepTime())/1e6)
	}
	return out
}

// TestWorkMixedSources: an operator's own flops arg counts where the trace
// has one (torch writes them for mm and conv2d on CUDA), its shapes
// elsewhere (convolution_backward, linear): both in one step.
func TestWorkMixedSources(t *testing.T) {
	p := trace.New("t.json", trace.FormatKineto)
	p.FLOPOps = []trace.FLOPOp{
		{Start: 100, End: 200, Thread: 1, Kind: trace.FLOPConv, FLOPs: 5e6, FromTrace: true},
		{Start: 300, End: 400, Thread: 2, Kind: trace.FLOPConvBackward, FLOPs: 1e7},
	}
	r := &Result{Profile: p, Steps: []Step{{HostStart: 0, HostEnd: 1000, Start: 0, End: 1000}}}
	w := r.work(Work{})
	if w.FLOPsSource != "trace+shapes" || *w.Steps[0].FLOPs != 1.5e7 || w.MFUAbsent == "" {
		t.Errorf("work %+v step %+v", w, w.Steps[0])
	}
}

// TestWorkOps: the operators behind the FLOPs, per step, by kind, most
// FLOPs first; an uncounted call counts as a call and adds no FLOPs.
func TestWorkOps(t *testing.T) {
	p := trace.New("t.json", trace.FormatKineto)
	p.FLOPOps = []trace.FLOPOp{
		{Start: 100, End: 200, Thread: 1, Kind: trace.FLOPLinear, FLOPs: 4e9},
		{Start: 300, End: 400, Thread: 1, Kind: trace.FLOPLinear, FLOPs: 2e9},
		{Start: 500, End: 600, Thread: 1, Kind: trace.FLOPMM, FLOPs: 1e9},
		{Start: 1_000_100, End: 1_000_200, Thread: 1, Kind: trace.FLOPLinear, FLOPs: 4e9},
		{Start: 1_000_300, End: 1_000_400, Thread: 1, Kind: trace.FLOPMM, FLOPs: math.NaN()},
		{Start: 5_000_000, End: 5_000_100, Thread: 1, Kind: trace.FLOPBmm, FLOPs: 9e9}, // in no step
	}
	r := &Result{Profile: p, Steps: []Step{{HostStart: 0, HostEnd: 1_000_000, Start: 0, End: 1e9}, {HostStart: 1_000_000, HostEnd: 2_000_000, Start: 1e9, End: 2e9}}}
	w := r.work(Work{})
	// By hand over 2 steps: linear 3 calls, 10e9 FLOPs → 1.5 and 5e9 per
	// step; mm 2 calls (one uncounted), 1e9 → 1 and 0.5e9; bmm outside.
	want := []OpWork{{"aten::linear", 1.5, 5e9}, {"aten::mm", 1, 0.5e9}}
	if len(w.Ops) != 2 || w.Ops[0] != want[0] || w.Ops[1] != want[1] {
		t.Errorf("ops %+v, want %+v", w.Ops, want)
	}
}

// TestWorkLeavesOutTheLoader: the operators a single-process DataLoader
// runs inside its __next__ range on the training thread (its transforms'
// convolutions) are not the model's work: the demo's slow loader, under
// torch 1.13 without FLOPs, was named more-work ("aten::conv1d/2d/3d 2 →
// 514 calls per step") ahead of data-loader-bound. The same operator on
// another thread, or outside the range, counts.
func TestWorkLeavesOutTheLoader(t *testing.T) {
	p := trace.New("t.json", trace.FormatKineto)
	loader := p.Names.Intern([]byte("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"))
	p.Ranges = []trace.Range{{Name: loader, Start: 100, End: 500, Thread: 1}}
	p.FLOPOps = []trace.FLOPOp{
		{Start: 150, End: 160, Thread: 1, Kind: trace.FLOPConv, FLOPs: 1e6}, // the loader's
		{Start: 100, End: 110, Thread: 1, Kind: trace.FLOPConv, FLOPs: 1e6}, // the loader's, at its start
		{Start: 200, End: 210, Thread: 2, Kind: trace.FLOPConv, FLOPs: 1e6}, // another thread's
		{Start: 600, End: 700, Thread: 1, Kind: trace.FLOPLinear, FLOPs: 2e6},
	}
	r := &Result{Profile: p, Steps: []Step{{HostStart: 0, HostEnd: 1000, Start: 0, End: 1000}}}
	r.loader = loaderByThread(p, DefaultDataPattern)
	w := r.work(Work{})
	want := []OpWork{{"aten::linear", 1, 2e6}, {"aten::conv1d/2d/3d", 1, 1e6}}
	if w == nil || len(w.Ops) != 2 || w.Ops[0] != want[0] || w.Ops[1] != want[1] {
		t.Errorf("ops %+v, want %+v (the loader's two convolutions left out)", w.Ops, want)
	}
}
