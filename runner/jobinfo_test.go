package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Two ranks' step lines: progress says which rank, Steps is the furthest.
func TestRankedStepLines(t *testing.T) {
	res, out, _, err := runJob(t, Job{Args: []string{"sh", "-c",
		`for i in 1 2 3 4 5 6 7 8 9 10; do echo "gpugate-step $i rank 0" >&2; echo "gpugate-step $i rank 1" >&2; done; echo "gpugate-step 11 rank 1" >&2; echo done`}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 11 {
		t.Errorf("Steps = %d, want 11 (rank 1's)", res.Steps)
	}
	for _, want := range []string{"[t] rank 0: step 10, ", "[t] rank 1: step 10, "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "gpugate-step") {
		t.Errorf("step lines echoed:\n%s", out)
	}
}

func TestMissingRanks(t *testing.T) {
	r := func(n int) *int { return &n }
	two := []Process{{Rank: r(0), WorldSize: 2}, {Rank: r(1), WorldSize: 2}}
	for _, tc := range []struct {
		name   string
		ps     []Process
		traces []string
		want   string
	}{
		{"single process", []Process{{}}, []string{"/a/trace-0.json"}, ""},
		{"both ranks", two, []string{"/a/trace-0.json", "/a/trace-1.json"}, ""},
		{"rank 1 no trace", two, []string{"/a/trace-0.json"}, "is a job of world size 2, but rank 1 wrote no trace"},
		{"rank 1 never stepped", two[:1], []string{"/a/trace-0.json"}, "is a job of world size 2, but rank 1 never called optimizer.step()"},
	} {
		if got := missingRanks(tc.ps, tc.traces); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestFingerprintFromJob(t *testing.T) {
	r := func(n int) *int { return &n }
	probed := Fingerprint{Torch: "", Python: "", CUDA: "", CPU: "x"}
	f := probed
	src, err := f.FromJob([]Process{
		{Rank: r(1), PID: 11, Python: "3.13.5", Torch: "2.6.0", CUDA: "12.4", CUDNN: "90100", NCCL: "2.21.5"},
		{Rank: r(0), PID: 10, Python: "3.13.5", Torch: "2.6.0", CUDA: "12.4", CUDNN: "90100", NCCL: "2.21.5"},
	})
	if err != nil || f.Torch != "2.6.0" || f.CUDNN != "90100" || f.NCCL != "2.21.5" || f.CPU != "x" {
		t.Errorf("FromJob: %+v, %v", f, err)
	}
	// readProcesses sorts by rank; FromJob takes the first that reported.
	if !strings.Contains(src, "from inside the job (rank 1, pid 11)") {
		t.Errorf("source %q", src)
	}
	f = probed
	if _, err := f.FromJob([]Process{{Rank: r(0), Torch: "2.6.0"}, {Rank: r(1), Torch: "2.5.1"}}); err == nil {
		t.Error("ranks on different torch versions: no error")
	}
	f = probed
	if src, err := f.FromJob(nil); src != "" || err != nil || f != probed {
		t.Errorf("no processes: %q %v %+v", src, err, f)
	}
}

// A launcher that imports torch but never trains starts 2 ranks through
// the environment contract (RANK, WORLD_SIZE): under profiler torch each
// rank writes its own trace and job-{rank}.json from its own pid, and the
// launcher none (torch 1.13, Debian's python3-torch).
func TestTorchProfLauncher(t *testing.T) {
	py := python(t)
	if exec.Command(py, "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)").Run() != nil {
		t.Skip("no torch for " + py)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "launch.py")
	os.WriteFile(script, []byte(`
import os, subprocess, sys
import torch  # a launcher may import torch: it still never steps
if len(sys.argv) > 1:
    m = torch.nn.Linear(8, 4)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for _ in range(6):
        opt.zero_grad()
        m(torch.randn(2, 8)).sum().backward()
        opt.step()
    sys.exit(0)
print("launcher", os.getpid(), flush=True)
ps = [subprocess.Popen([sys.executable, __file__, "worker"], env=dict(os.environ, RANK=str(r), WORLD_SIZE="2")) for r in range(2)]
sys.exit(max(p.wait() for p in ps))
`), 0o644)
	out := filepath.Join(dir, "out")
	// The job's folder holds its script: its private /tmp keeps it.
	res, _, log, err := runJob(t, Job{Args: []string{py, script}, Dir: dir, Profiler: Torch, WarmupSteps: 1, MeasureSteps: 2, Out: out, Timeout: 3 * time.Minute})
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if len(res.Traces) != 2 || filepath.Base(res.Traces[0]) != "trace-0.json" || filepath.Base(res.Traces[1]) != "trace-1.json" {
		t.Errorf("traces %v", res.Traces)
	}
	if len(res.Processes) != 2 || res.Processes[0].RankOr(-1) != 0 || res.Processes[1].RankOr(-1) != 1 || res.Processes[0].WorldSize != 2 {
		t.Fatalf("processes %+v", res.Processes)
	}
	if n := strings.Count(string(log), "profiler started"); n != 2 {
		t.Errorf("%d profilers started, want 2 (the ranks, not the launcher):\n%s", n, log)
	}
	for _, p := range res.Processes {
		if strings.Contains(string(log), "launcher "+strconv.Itoa(p.PID)) || p.Torch == "" || p.Python == "" {
			t.Errorf("process %+v: the launcher's, or without versions", p)
		}
	}
}
