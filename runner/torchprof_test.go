package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTorchProfInstalls loads the real torch.profiler injection the way a
// job does (sitecustomize on PYTHONPATH, GPUGATE_TORCH_PROFILE=1) into a
// short training loop, with and without perf.yaml's flops, and checks that
// install() runs to its end: an exception in it is printed by Python as
// "Error in sitecustomize" into the job's output, and whatever install()
// had not done yet is silently missing.
func TestTorchProfInstalls(t *testing.T) {
	for _, tc := range []struct{ name, py, mem string }{
		{"torch 1.13", "/usr/bin/python3", "profile_memory=False"},
		{"torch 2.x", "/opt/gpugate/bin/python3-torch2", "profile_memory=True"},
	} {
		for _, flops := range []string{"0", "1"} {
			t.Run(tc.name+" flops="+flops, func(t *testing.T) {
				probe := "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"
				if exec.Command(tc.py, "-c", probe).Run() != nil {
					t.Skipf("%s has no torch", tc.py)
				}
				dir := t.TempDir()
				inject, err := prepare(dir, "torch")
				if err != nil {
					t.Fatal(err)
				}
				script := `
import torch
m = torch.nn.Linear(8, 4)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for _ in range(5):
    opt.zero_grad()
    m(torch.randn(2, 8)).sum().backward()
    opt.step()
`
				cmd := exec.Command(tc.py, "-c", script)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "PYTHONPATH="+inject, "GPUGATE_TORCH_PROFILE=1", "GPUGATE_SCHEDULE=1,1,2",
					"GPUGATE_FLOPS="+flops, "GPUGATE_TRACE_OUT="+filepath.Join(dir, "trace-{rank}.json"))
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%s: %v\n%s", tc.py, err, out)
				}
				s := string(out)
				if strings.Contains(s, "Error in sitecustomize") || !strings.Contains(s, "profiler started") || !strings.Contains(s, tc.mem) {
					t.Errorf("injection's output:\n%s\nwant %q in its start line and no error", s, tc.mem)
				}
				if _, err := os.Stat(filepath.Join(dir, "trace-0.json")); err != nil {
					t.Errorf("no trace: %v\n%s", err, s)
				}
			})
		}
	}
}
