package analysis

import (
	"math"
	"testing"

	"github.com/gpugate/gpugate/trace"
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
