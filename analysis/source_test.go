package analysis

import (
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/trace"
	"github.com/gpugate/gpugate/trace/kineto"
)

// TestSourceAtFixture: the MI300X ResNet-18 trace was recorded with
// with_stack. Its one hipDeviceSynchronize (ts 1305519698241.863 µs,
// tid 1) runs inside these Python frames, outermost first, read from the
// trace by hand: train_single_gpu.py(62): <module>, train_single_gpu.py(41):
// main, torch/profiler/profiler.py(853): __exit__, … torch/cuda/__init__.py
// (1098): synchronize, <built-in function _cuda_synchronize>. The user's
// line is the innermost frame outside torch: train_single_gpu.py:41 (main).
func TestSourceAtFixture(t *testing.T) {
	p, err := kineto.ReadFile(fixtures.Path(t, "kineto/tracelens-mi300x-ddp-resnet18-nosteps/train_resnet18.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Stack) == 0 {
		t.Fatal("no Python frames kept from a with_stack trace")
	}
	r := Analyze(p, Options{})
	found := false
	for i := range p.API {
		a := &p.API[i]
		if p.Names.String(a.Name) != "hipDeviceSynchronize" {
			continue
		}
		found = true
		if got := r.sourceAt(a.Thread, a.Start); got != "train_single_gpu.py:41 (main)" {
			t.Errorf("sourceAt(hipDeviceSynchronize) = %q, want train_single_gpu.py:41 (main)", got)
		}
	}
	if !found {
		t.Fatal("no hipDeviceSynchronize in the trace")
	}
	// Python frames are not ranges: no step, phase or data-loader rule
	// sees them.
	for _, rg := range p.Ranges {
		if strings.HasSuffix(p.Names.String(rg.Name), ": main") {
			t.Fatalf("a Python frame among the ranges: %q", p.Names.String(rg.Name))
		}
	}
}

// TestSyncCulpritsSource: the host-sync finding names the user's line
// that issued the sync, from the frames around it.
func TestSyncCulpritsSource(t *testing.T) {
	p := trace.New("t.json", trace.FormatKineto)
	name := func(s string) trace.Name { return p.Names.Intern([]byte(s)) }
	p.Ranges = []trace.Range{
		{Start: 0, End: 1000, Thread: 1, Name: name("ProfilerStep#1")},
		{Start: 400, End: 500, Thread: 1, Name: name("aten::item")},
		{Start: 410, End: 490, Thread: 1, Name: name("aten::_local_scalar_dense")},
		{Start: 1000, End: 2000, Thread: 1, Name: name("ProfilerStep#2")},
		{Start: 1400, End: 1500, Thread: 1, Name: name("aten::item")},
		{Start: 1410, End: 1490, Thread: 1, Name: name("aten::_local_scalar_dense")},
	}
	p.Stack = []trace.Range{
		{Start: 0, End: 2000, Thread: 1, Name: name("/home/u/proj/train.py(80): main")},
		{Start: 390, End: 510, Thread: 1, Name: name("/home/u/proj/train.py(33): log_loss")},
		{Start: 395, End: 505, Thread: 1, Name: name("/usr/lib/python3/dist-packages/torch/_tensor.py(10): item")},
		{Start: 1390, End: 1510, Thread: 1, Name: name("/home/u/proj/train.py(33): log_loss")},
	}
	r := Analyze(p, Options{})
	f := r.SyncFinding()
	if f == nil || len(f.Culprits) == 0 || !strings.Contains(f.Culprits[0], "at `train.py:33 (log_loss)`") {
		t.Fatalf("sync finding %+v: want the culprit at train.py:33 (log_loss)", f)
	}
}
