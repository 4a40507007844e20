package runner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func i64(v int64) *int64 { return &v }

func TestParseStepSamples(t *testing.T) {
	dev := 0
	good := `{"step":1,"t_ns":1796226357207835896,"pid":13789,"rss_bytes":284168192,"maxrss_bytes":283865088}
{"step":2,"t_ns":1796226357565511186,"pid":13789,"rss_bytes":286670848,"maxrss_bytes":286281728,"future_field":[1,2]}
{"step":1,"t_ns":1796226357600000000,"pid":77,"rss_bytes":1000,"cuda_device":0,"cuda_max_allocated_bytes":5000,"cuda_max_reserved_bytes":8192,"cuda_allocated_bytes":4000}
`
	got, err := ParseStepSamples(strings.NewReader(good), "steps.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := &StepSamples{Samples: []StepSample{
		{Step: 1, TimeNS: 1796226357207835896, PID: 13789, RSSBytes: 284168192, MaxRSSBytes: i64(283865088)},
		{Step: 2, TimeNS: 1796226357565511186, PID: 13789, RSSBytes: 286670848, MaxRSSBytes: i64(286281728)},
		{Step: 1, TimeNS: 1796226357600000000, PID: 77, RSSBytes: 1000, CUDADevice: &dev, CUDAMaxAllocatedBytes: i64(5000), CUDAMaxReservedBytes: i64(8192), CUDAAllocatedBytes: i64(4000)},
	}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}

	// The job was killed while the hook wrote its last line.
	cut := good + `{"step":3,"t_ns":17962263576`
	got, err = ParseStepSamples(strings.NewReader(cut), "steps.jsonl")
	if err != nil || len(got.Samples) != 3 || len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "line 4 cut short") {
		t.Errorf("cut last line: %+v, %v", got, err)
	}
	if got, err := ParseStepSamples(strings.NewReader(""), "e"); err != nil || len(got.Samples) != 0 {
		t.Errorf("empty file: %+v, %v", got, err)
	}

	for _, tc := range []struct{ in, want string }{
		{"{\"step\":1,\"t_ns\":1,\"pid\":2,\"rss_bytes\":3}\nnot json\n", "s.jsonl:line 2: not a step sample: invalid JSON at byte 2"},
		{`{"step":1.5,"t_ns":1,"pid":2,"rss_bytes":3}` + "\n", "s.jsonl:line 1: not a step sample: step is a JSON number 1.5, want int"},
		{`{"step":"1","t_ns":1,"pid":2,"rss_bytes":3}` + "\n", "s.jsonl:line 1: not a step sample: step is a JSON string, want int"},
		{`{"t_ns":1,"pid":2,"rss_bytes":3}` + "\n", `s.jsonl:line 1: step sample without "step"`},
		{`{"step":1,"t_ns":1,"pid":2}` + "\n", `s.jsonl:line 1: step sample without "rss_bytes"`},
		{`null` + "\n", `s.jsonl:line 1: step sample without "step"`},
		{`{"step":0,"t_ns":1,"pid":2,"rss_bytes":3}` + "\n", "s.jsonl:line 1: step 0: steps count from 1"},
		{`{"step":1,"t_ns":1,"pid":-2,"rss_bytes":3}` + "\n", "s.jsonl:line 1: pid -2"},
		{`{"step":1,"t_ns":1,"pid":2,"rss_bytes":-3}` + "\n", "s.jsonl:line 1: rss_bytes -3"},
		{`{"step":1,"t_ns":1,"pid":2,"rss_bytes":3,"maxrss_bytes":-1}` + "\n", "s.jsonl:line 1: negative byte count"},
		{`{"step":1,"t_ns":1,"pid":2,"rss_bytes":3,"cuda_device":0}` + "\n", "s.jsonl:line 1: cuda_device, cuda_max_allocated_bytes and cuda_max_reserved_bytes come together"},
		{`{"step":1,"t_ns":1,"pid":2,"rss_bytes":3,"cuda_allocated_bytes":7}` + "\n", "s.jsonl:line 1: cuda_allocated_bytes without cuda_device"},
		{`{"step":1,"t_ns":1,"pid":2,"rss_bytes":3,"cuda_device":-1,"cuda_max_allocated_bytes":1,"cuda_max_reserved_bytes":1}` + "\n", "s.jsonl:line 1: cuda_device -1"},
		{`{"step":1,"t_ns":1,"pid":2,"rss_bytes":3,"rss_bytes":99999999999999999999}` + "\n", "s.jsonl:line 1: not a step sample: rss_bytes is a JSON number 99999999999999999999, want int64"},
		{"{\"step\":2,\"t_ns\":1,\"pid\":2,\"rss_bytes\":3}\n{\"step\":2,\"t_ns\":1,\"pid\":2,\"rss_bytes\":3}\n", "s.jsonl:line 2: step 2 of pid 2 after its step 2: samples of two runs in one file?"},
		{`{"step":1,"t_ns":1,"pid":2,"rss_bytes":3,"pad":"` + strings.Repeat("x", MaxStepSampleLine) + "\"}\n", "s.jsonl:line 1: line longer than 4096 bytes: not a step sample"},
	} {
		_, err := ParseStepSamples(strings.NewReader(tc.in), "s.jsonl")
		if err == nil || err.Error() != tc.want {
			t.Errorf("ParseStepSamples(%.60q) error %v, want %s", tc.in, err, tc.want)
		}
	}
	if _, err := ReadStepSamples(nil, filepath.Join(t.TempDir(), "none.jsonl")); err == nil || !strings.HasPrefix(err.Error(), "read step samples ") {
		t.Errorf("missing file: %v", err)
	}
}

// TestStepHookWritesSamples runs the real injected hook in a real PyTorch
// training loop (Debian's torch 1.13 and, where scripts/setup-torch2.sh
// made it, torch 2.6 in its chroot) and reads what it wrote.
func TestStepHookWritesSamples(t *testing.T) {
	for _, tc := range []struct{ name, py, mode string }{
		{"torch 1.13", "/usr/bin/python3", ""},
		{"torch 2.x", "/opt/gpugate/bin/python3-torch2", "auto"},
		// The wrapper's fallback for machines without mount namespaces.
		{"torch 2.x loader", "/opt/gpugate/bin/python3-torch2", "loader"},
	} {
		py := tc.py
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GPUGATE_TORCH2_MODE", tc.mode)
			// find_spec, not import: importing torch takes seconds.
			probe := "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"
			if exec.Command(py, "-c", probe).Run() != nil {
				t.Skipf("%s has no torch", py)
			}
			dir := t.TempDir()
			inject, err := prepare(dir, "torch")
			if err != nil {
				t.Fatal(err)
			}
			script := `
import os, sys, torch
sys.path.insert(0, os.environ["INJECT"])
import gpugate_stephook
print("how:", gpugate_stephook.around_optimizer_step(lambda: None))
print("pid:", os.getpid())
m = torch.nn.Linear(64, 8)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
kept = []
for _ in range(6):
    opt.zero_grad()
    m(torch.randn(256, 64)).sum().backward()
    opt.step()
    kept.append(torch.empty(4 << 20, dtype=torch.uint8).fill_(1))  # 4 MiB a step, touched
`
			cmd := exec.Command(py, "-c", script)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "INJECT="+inject, "GPUGATE_STEP_SAMPLES="+filepath.Join(dir, "steps-{rank}.jsonl"), "RANK=3")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", py, err, out)
			}
			var pid int
			for _, l := range strings.Split(string(out), "\n") {
				if p, ok := strings.CutPrefix(l, "pid: "); ok {
					pid, _ = strconv.Atoi(p)
				}
			}
			got, err := ReadStepSamples(nil, filepath.Join(dir, "steps-3.jsonl"))
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if len(got.Samples) != 6 || len(got.Warnings) != 0 {
				t.Fatalf("samples %+v\n%s", got, out)
			}
			for i, s := range got.Samples {
				if s.Step != i+1 || s.PID != pid || s.RSSBytes <= 0 || s.MaxRSSBytes == nil || *s.MaxRSSBytes < s.RSSBytes/2 || s.CUDADevice != nil {
					t.Errorf("sample %d: %+v (pid %d)", i, s, pid)
				}
			}
			// 4 MiB kept a step: RSS at step 6 is at least 16 MiB above step 1.
			if grow := got.Samples[5].RSSBytes - got.Samples[0].RSSBytes; grow < 16<<20 {
				t.Errorf("RSS grew %d bytes over 5 steps that kept 20 MiB", grow)
			}
			t.Logf("%s", strings.TrimSpace(string(out)))
		})
	}
}

func BenchmarkParseStepSamples(b *testing.B) {
	var sb strings.Builder
	for i := 1; i <= 100000; i++ {
		fmt.Fprintf(&sb, `{"step":%d,"t_ns":%d,"pid":4242,"rss_bytes":%d,"maxrss_bytes":%d,"cuda_device":0,"cuda_max_allocated_bytes":%d,"cuda_max_reserved_bytes":%d,"cuda_allocated_bytes":%d}`+"\n",
			i, 1796226357207835896+int64(i)*1e7, 284168192+i*4096, 284168192+i*4096, 1<<30+i, 2<<30, 1<<29)
	}
	data := sb.String()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		s, err := ParseStepSamples(strings.NewReader(data), "bench")
		if err != nil || len(s.Samples) != 100000 {
			b.Fatal(err)
		}
	}
}

// TestStepHookCUDALine checks the hook's CUDA branch without a GPU: a
// stand-in torch.cuda with the allocator statistics of a real one
// (memory_stats keys as torch documents them) and a record of the resets.
func TestStepHookCUDALine(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := exec.LookPath(py); err != nil {
		t.Skip("no " + py)
	}
	dir := t.TempDir()
	inject, err := prepare(dir, "torch")
	if err != nil {
		t.Fatal(err)
	}
	script := `
import os, sys, types
sys.path.insert(0, os.environ["INJECT"])
import gpugate_stephook as h
resets = []
peak = [100 << 20]
cuda = types.SimpleNamespace(
    is_initialized=lambda: True,
    current_device=lambda: 1,
    memory_stats=lambda dev: {"allocated_bytes.all.peak": peak[0], "reserved_bytes.all.peak": 2 * peak[0],
                              "allocated_bytes.all.current": peak[0] // 2},
    reset_peak_memory_stats=lambda dev: resets.append(dev))
s = h._step_samples()
s()  # opens the file, finds no torch: a CPU sample
s.torch = types.SimpleNamespace(cuda=cuda)
for _ in range(3):
    s()
    peak[0] += 1 << 20
print("resets:", resets)
`
	cmd := exec.Command(py, "-c", script)
	cmd.Env = append(os.Environ(), "INJECT="+inject, "GPUGATE_STEP_SAMPLES="+filepath.Join(dir, "s.jsonl"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "resets: [1, 1, 1]") {
		t.Fatalf("%v\n%s", err, out)
	}
	got, err := ReadStepSamples(nil, filepath.Join(dir, "s.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Samples) != 4 || got.Samples[0].CUDADevice != nil {
		t.Fatalf("%+v", got)
	}
	for i, s := range got.Samples[1:] {
		p := int64(100+i) << 20
		if *s.CUDADevice != 1 || *s.CUDAMaxAllocatedBytes != p || *s.CUDAMaxReservedBytes != 2*p || *s.CUDAAllocatedBytes != p/2 {
			t.Errorf("step %d: %+v", s.Step, s)
		}
	}
}
