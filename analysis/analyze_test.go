package analysis

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpugate/gpugate/internal/testdb"
	"github.com/gpugate/gpugate/trace/kineto"
	"github.com/gpugate/gpugate/trace/nsys"
)

// The hand-made 2022.4-schema export trace/nsys/testdata/two-process-2022.4.sql;
// every number below was worked out on paper from its rows.
func TestHandMadeNsys(t *testing.T) {
	db := testdb.FromSQL(t, filepath.Join("..", "trace", "nsys", "testdata", "two-process-2022.4.sql"))
	ps, err := nsys.ReadFile(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Process != 100 || ps[1].Process != 200 {
		t.Fatalf("got %d profiles, want pids 100 and 200", len(ps))
	}
	if ps[0].Variant != "nsys 2022.4.2.1 (schema 3.0.0)" {
		t.Errorf("variant = %q", ps[0].Variant)
	}
	if d := ps[0].Devices; len(d) != 1 || d[0].Name != "NVIDIA A100-SXM4-80GB" || d[0].SMs != 108 {
		t.Errorf("devices = %+v", d)
	}
	r := Analyze(ps[0], Options{})
	if r.WholeProfile || len(r.Steps) != 2 {
		t.Fatalf("steps = %d (whole profile %v), want 2", len(r.Steps), r.WholeProfile)
	}
	want := []Step{{
		Name: "train_step", HostStart: 1000, HostEnd: 5000, Start: 1000, End: 5500,
		Kernels: 3, Memcpys: 1, GPUBusy: 2800, CPUWait: 1700, DataWait: 0,
		SyncCalls: 1, SyncTime: 240,
		D2H:     Copies{Count: 1, Bytes: 4096, Time: 100, Pageable: 1},
		Compute: 1900, CommTime: 1000, ExposedComm: 800, ExposedCopy: 100,
		LaunchOverhead: 40, ShortKernels: 0, Launches: 3,
	}, {
		Name: "train_step", HostStart: 6000, HostEnd: 9000, Start: 6000, End: 9000,
		Kernels: 2, Memcpys: 1, GPUBusy: 1100, CPUWait: 1900, DataWait: 800,
		SyncCalls: 1, SyncTime: 200,
		H2D:     Copies{Count: 1, Bytes: 1048576, Time: 100},
		Compute: 1000, ExposedCopy: 100,
		LaunchOverhead: 45, ShortKernels: 0.5, Launches: 2,
	}}
	if diff := cmp.Diff(want, r.Steps); diff != "" {
		t.Errorf("process 100 steps (-want +got):\n%s", diff)
	}

	// Process 200 reuses correlation ids 1 and 5; a join on correlationId
	// alone would give process 100's kernels these launches.
	r2 := Analyze(ps[1], Options{})
	want2 := []Step{{
		Name: "train_step", HostStart: 1000, HostEnd: 4000, Start: 1000, End: 4000,
		Kernels: 1, GPUBusy: 1000, CPUWait: 2000, Compute: 1000,
		LaunchOverhead: 100, Launches: 1,
	}}
	if diff := cmp.Diff(want2, r2.Steps); diff != "" {
		t.Errorf("process 200 steps (-want +got):\n%s", diff)
	}
}

// A CPU-only autograd trace, made by hand: two steps; the first has a
// data-loader wait with the Dataset's own .item() inside it (CPU work, not a
// sync) and one .item() outside it; the second has none.
func TestCPUProxies(t *testing.T) {
	in := `[
{"name": "ProfilerStep#1", "ph": "X", "ts": 0, "dur": 100, "tid": 1, "pid": "CPU functions", "args": {}},
{"name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "ph": "X", "ts": 0, "dur": 40, "tid": 1, "pid": "CPU functions", "args": {}},
{"name": "aten::_local_scalar_dense", "ph": "X", "ts": 10, "dur": 1, "tid": 1, "pid": "CPU functions", "args": {}},
{"name": "aten::item", "ph": "X", "ts": 60, "dur": 3, "tid": 1, "pid": "CPU functions", "args": {}},
{"name": "aten::_local_scalar_dense", "ph": "X", "ts": 61, "dur": 2, "tid": 1, "pid": "CPU functions", "args": {}},
{"name": "ProfilerStep#2", "ph": "X", "ts": 100, "dur": 50, "tid": 1, "pid": "CPU functions", "args": {}}
]`
	p, err := kineto.Parse(strings.NewReader(in), "cpu.json")
	if err != nil {
		t.Fatal(err)
	}
	r := Analyze(p, Options{})
	if len(r.Steps) != 2 || r.HasGPU {
		t.Fatalf("%d steps, HasGPU %v", len(r.Steps), r.HasGPU)
	}
	s0, s1 := r.Steps[0], r.Steps[1]
	if s0.StepTime() != 100_000 || s0.DataWait != 40_000 || s0.SyncCalls != 1 || s0.SyncTime != 2_000 {
		t.Errorf("step 1: time %d, data wait %d, syncs %d (%d ns); want 100000, 40000, 1 (2000 ns)", s0.StepTime(), s0.DataWait, s0.SyncCalls, s0.SyncTime)
	}
	if s1.StepTime() != 50_000 || s1.DataWait != 0 || s1.SyncCalls != 0 {
		t.Errorf("step 2: time %d, data wait %d, syncs %d; want 50000, 0, 0", s1.StepTime(), s1.DataWait, s1.SyncCalls)
	}
}

// CUDA launches whose GPU activity is missing (CUPTI buffers lost): a
// warning, GPU metrics absent rather than 0, the CUDA sync calls still
// counted, and no low-utilization finding.
func TestLaunchesWithoutGPUActivity(t *testing.T) {
	in := `{"traceEvents": [
{"name": "ProfilerStep#1", "ph": "X", "cat": "user_annotation", "ts": 0, "dur": 100, "tid": 1, "pid": 1, "args": {}},
{"name": "cudaLaunchKernel", "ph": "X", "cat": "cuda_runtime", "ts": 10, "dur": 5, "tid": 1, "pid": 1, "args": {"correlation": 1}},
{"name": "cudaStreamSynchronize", "ph": "X", "cat": "cuda_runtime", "ts": 20, "dur": 50, "tid": 1, "pid": 1, "args": {"correlation": 2}},
{"name": "ProfilerStep#2", "ph": "X", "cat": "user_annotation", "ts": 100, "dur": 100, "tid": 1, "pid": 1, "args": {}},
{"name": "cudaLaunchKernel", "ph": "X", "cat": "cuda_runtime", "ts": 110, "dur": 5, "tid": 1, "pid": 1, "args": {"correlation": 3}}
]}`
	p, err := kineto.Parse(strings.NewReader(in), "lost.json")
	if err != nil {
		t.Fatal(err)
	}
	r := Analyze(p, Options{})
	if r.HasGPU || len(r.Steps) != 2 {
		t.Fatalf("HasGPU %v, %d steps; want false, 2", r.HasGPU, len(r.Steps))
	}
	if len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "2 CUDA kernel launches but no GPU activity") {
		t.Errorf("warnings %q", r.Warnings)
	}
	sum := r.Summaries()
	for _, k := range []string{"kernels", "gpu_util", "gpu_busy_ms", "cpu_wait_ms"} {
		if _, ok := sum[k]; ok {
			t.Errorf("summary has %s: GPU metrics must be absent", k)
		}
	}
	if r.Steps[0].SyncCalls != 1 || r.Steps[1].SyncCalls != 0 {
		t.Errorf("sync calls %d, %d; want the cudaStreamSynchronize counted: 1, 0", r.Steps[0].SyncCalls, r.Steps[1].SyncCalls)
	}
	for _, f := range r.Findings() {
		if f.ID == "low-utilization" {
			t.Errorf("low-utilization without GPU activity: %+v", f)
		}
	}
}
