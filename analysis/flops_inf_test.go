package analysis

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/gpugate/gpugate/trace"
)

// TestWorkNotFinite: FLOP counts that overflow float64 (two flops args of
// 1.7e308 in one step, or shapes whose product is beyond it) must not
// reach the result as +Inf: encoding/json refuses it, and analyze -format
// json failed on such a trace. The step has no FLOPs instead.
func TestWorkNotFinite(t *testing.T) {
	p := trace.New("t.json", trace.FormatKineto)
	p.Devices = []trace.Device{{ID: 0, Name: "NVIDIA A100-SXM4-80GB"}}
	p.FLOPOps = []trace.FLOPOp{
		{Start: 100, End: 200, Thread: 1, Kind: trace.FLOPMM, FLOPs: 1.7e308, FromTrace: true},
		{Start: 300, End: 400, Thread: 1, Kind: trace.FLOPMM, FLOPs: 1.7e308, FromTrace: true},
		{Start: 1_000_100, End: 1_000_200, Thread: 1, Kind: trace.FLOPConv, FLOPs: math.Inf(1)},
		{Start: 2_000_100, End: 2_000_200, Thread: 1, Kind: trace.FLOPMM, FLOPs: 1e300, FromTrace: true},
	}
	r := &Result{Profile: p, Steps: []Step{
		{HostStart: 0, HostEnd: 1_000_000, Start: 0, End: 1e9},
		{HostStart: 1_000_000, HostEnd: 2_000_000, Start: 1e9, End: 2e9},
		// 1e300 FLOPs in 1 ns: finite FLOPs, TFLOP/s beyond float64.
		{HostStart: 2_000_000, HostEnd: 3_000_000, Start: 2e9, End: 2e9 + 1},
	}}
	w := r.work(Work{MFUDtype: "bf16"})
	if _, err := json.Marshal(w); err != nil {
		t.Fatalf("json.Marshal(work): %v", err)
	}
	for i, s := range w.Steps {
		for name, v := range map[string]*float64{"flops": s.FLOPs, "tflops": s.TFLOPS, "mfu": s.MFU} {
			if v != nil && (math.IsInf(*v, 0) || math.IsNaN(*v)) {
				t.Errorf("step %d: %s = %v, want absent", i, name, *v)
			}
		}
	}
	if w.Steps[0].FLOPs != nil || w.Steps[1].FLOPs != nil {
		t.Errorf("steps 0, 1: FLOPs %v, %v, want absent (beyond float64)", w.Steps[0].FLOPs, w.Steps[1].FLOPs)
	}
	if w.Steps[2].TFLOPS != nil || w.Steps[2].MFU != nil {
		t.Errorf("step 2: TFLOP/s %v, MFU %v, want absent (beyond float64)", w.Steps[2].TFLOPS, w.Steps[2].MFU)
	}
}
