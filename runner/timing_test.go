package runner

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpugate/gpugate/internal/safefile"
)

// TestTimingRun runs a real PyTorch training loop as a timing run, through
// Run (the job's isolation and the injection as a job gets them), on torch
// 1.13 (a wrapped Optimizer.step) and 2.x (the global step hooks): the
// hook must time exactly the steps a profiled run measures (warmup 2,
// measure 5: optimizer steps 4 to 8), and its times must agree with the
// loop's own clock, which the job prints for each step (time.perf_counter
// around the whole iteration): the same intervals measured a second way.
func TestTimingRun(t *testing.T) {
	for _, tc := range []struct{ name, py string }{
		{"torch 1.13", "/usr/bin/python3"},
		{"torch 2.x", "/opt/gpugate/bin/python3-torch2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probe := "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"
			if exec.Command(tc.py, "-c", probe).Run() != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s has no torch (scripts/setup-profilers.sh, scripts/setup-torch2.sh install it)", tc.py)
				}
				t.Skipf("%s has no torch", tc.py)
			}
			dir := t.TempDir()
			script := filepath.Join(dir, "loop.py")
			os.WriteFile(script, []byte(`
import time, torch
m = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512))
opt = torch.optim.SGD(m.parameters(), lr=0.01)
prev = None
for step in range(1, 13):
    x = torch.randn(128, 512)
    for _ in range(8 if step % 2 == 0 else 2):   # long even steps, short odd ones
        x = m(x)
    opt.zero_grad()
    x.sum().backward()
    opt.step()
    now = time.perf_counter()
    if prev is not None:
        print("step %d loop_ms=%.4f" % (step, (now - prev) * 1000), flush=True)
    prev = now
`), 0o644)
			res, err := Run(context.Background(), Job{Name: "timing", Args: []string{tc.py, script}, Dir: dir, Timeout: 2 * time.Minute,
				Profiler: None, Timing: true, WarmupSteps: 2, MeasureSteps: 5, Out: filepath.Join(dir, "out")})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Timing) != 1 {
				t.Fatalf("timing of %d ranks, want 1", len(res.Timing))
			}
			tm := res.Timing[0]
			if tm.Clock != ClockHost || tm.FirstStep != 4 || !tm.Complete || len(tm.StepMs) != 5 || tm.Rank != 0 {
				t.Fatalf("timing %+v, want clock host, steps 4 to 8 (5), complete, rank 0", tm)
			}
			log, _ := os.ReadFile(res.Log)
			loop := map[int]float64{}
			for _, m := range regexp.MustCompile(`step (\d+) loop_ms=([0-9.]+)`).FindAllStringSubmatch(string(log), -1) {
				n, _ := strconv.Atoi(m[1])
				loop[n], _ = strconv.ParseFloat(m[2], 64)
			}
			var hook, own float64
			for i, ms := range tm.StepMs {
				step := tm.FirstStep + i
				if ms <= 0 || loop[step] <= 0 {
					t.Fatalf("step %d: hook %.3f ms, loop %.3f ms", step, ms, loop[step])
				}
				hook += ms
				own += loop[step]
			}
			// The two clocks read the same boundaries a few statements
			// apart (the hook inside opt.step's return, the loop after
			// it): their sums over 5 steps agree (within 15%, for a
			// preemption between the two reads on a busy machine); steps
			// one off (3 to 7) would be 2 long and 3 short ones, about
			// 25% less.
			if r := hook / own; r < 0.85 || r > 1.15 {
				t.Errorf("hook timed %.3f ms over steps 4-8, the loop's own clock %.3f ms (ratio %.3f)", hook, own, r)
			}
			// And step by step: the even (long) steps are the long ones.
			for i, ms := range tm.StepMs {
				step := tm.FirstStep + i
				j := i - 1 // a neighbour: the other parity
				if i == 0 {
					j = 1
				}
				if long := step%2 == 0; long != (ms > tm.StepMs[j]) {
					t.Errorf("step %d timed %.3f ms, step %d %.3f ms: want the even step longer", step, ms, tm.FirstStep+j, tm.StepMs[j])
				}
			}
			// The job's threads' CPU time and run-queue wait, per step
			// (schedstat): the loop is CPU-bound and its thread always
			// runnable, so on a CPU or waiting for one it spends about
			// every step's wall time, whatever else the machine runs
			// (more with torch's own threads, less by a print).
			if len(tm.WaitMs) != 5 || len(tm.CPUMs) != 5 {
				t.Fatalf("wait %v, CPU %v: want one per timed step", tm.WaitMs, tm.CPUMs)
			}
			var busy float64
			for i := range tm.StepMs {
				busy += tm.CPUMs[i] + tm.WaitMs[i]
			}
			if busy < 0.7*hook {
				t.Errorf("CPU %v + wait %v ms = %.3f ms over steps whose wall time was %.3f ms: want at least 70%% of it", tm.CPUMs, tm.WaitMs, busy, hook)
			}
			if !strings.Contains(string(log), "timing run: steps 4 to 8 timed") {
				t.Errorf("no start line in the job's log:\n%s", log)
			}
			if _, err := os.Stat(filepath.Join(dir, "out", "trace-0.json")); err == nil {
				t.Error("a timing run wrote a trace")
			}
		})
	}
}

// TestReadTimingsRefuses: the timing files are written by the job's own
// processes; an impossible one is an error that names it, never a step
// time.
func TestReadTimingsRefuses(t *testing.T) {
	for _, tc := range []struct{ name, files, want string }{
		{"negative", `{"rank":0,"clock":"host","step_ms":[1,-2]}`, "step 2: time -2 ms"},
		{"absurd", `{"rank":0,"clock":"host","step_ms":[1e300]}`, "is not a step time"},
		{"no steps", `{"rank":0,"clock":"host","step_ms":[]}`, "no step times"},
		{"clock", `{"rank":0,"clock":"sundial","step_ms":[1]}`, `unknown clock (want cuda-events or host)`},
		{"rank", `{"rank":-1,"clock":"host","step_ms":[1]}`, "rank -1 out of range"},
		{"not json", `{"rank":0,`, "timing-0.json"},
		{"twice", `{"rank":0,"clock":"host","step_ms":[1]}|{"rank":0,"clock":"host","step_ms":[2]}`, "rank 0 timed twice"},
		{"waits", `{"rank":0,"clock":"host","step_ms":[1,2],"wait_ms":[1]}`, "2 steps but 1 waits"},
		{"negative wait", `{"rank":0,"clock":"host","step_ms":[1],"wait_ms":[-1],"cpu_ms":[1]}`, "step 1: time -1 ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for i, f := range strings.Split(tc.files, "|") {
				os.WriteFile(filepath.Join(dir, "timing-"+strconv.Itoa(i)+".json"), []byte(f), 0o644)
			}
			_, err := readTimings(openDir(t, dir))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
	dir := t.TempDir()
	big := make([]byte, maxTimingFile+10)
	os.WriteFile(filepath.Join(dir, "timing-0.json"), big, 0o644)
	if _, err := readTimings(openDir(t, dir)); err == nil || !strings.Contains(err.Error(), "larger than its limit of 8 MiB") {
		t.Errorf("oversized file: err %v", err)
	}
}

// A rank that trained but timed nothing is named: the job's step is its
// slowest rank's, and a missing rank could be that one.
func TestUntimedRanks(t *testing.T) {
	r0, r1 := 0, 1
	ps := []Process{{Rank: &r0}, {Rank: &r1}}
	if got := untimedRanks(ps, []RankTiming{{Rank: 0}, {Rank: 1}}); got != "" {
		t.Errorf("both timed: %q", got)
	}
	if got := untimedRanks(ps, []RankTiming{{Rank: 0}}); !strings.Contains(got, "not of rank(s) 1, which trained") {
		t.Errorf("rank 1 untimed: %q", got)
	}
}

// A job that plants a FIFO or a symlink where its step times go gets an
// error, at once: gpugate never waits on a pipe nobody writes.
func TestReadTimingsPlanted(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "timing-0.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := readTimings(openDir(t, dir)); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("readTimings waited on a FIFO")
	}
	dir = t.TempDir()
	os.WriteFile(filepath.Join(dir, "secret"), []byte(`{"rank":0,"clock":"host","step_ms":[1]}`), 0o600)
	os.Symlink(filepath.Join(dir, "secret"), filepath.Join(dir, "timing-0.json"))
	if _, err := readTimings(openDir(t, dir)); err == nil {
		t.Error("a symlink was followed")
	}
}

// TestTimingRunCUDAPath drives the hook's CUDA path without a GPU (none
// here): torch.cuda is replaced, inside the job, by a stand-in whose
// events record the host's clock and count their waits. The hook must
// record one event per boundary, wait once, on the last event, only after
// the last timed step (no synchronisation inside the window), and write
// the events' times as the steps, clock cuda-events. What a real GPU's
// events measure is for scripts/gpu-check.sh.
func TestTimingRunCUDAPath(t *testing.T) {
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import torch").Run() != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s has no torch (scripts/setup-profilers.sh)", py)
		}
		t.Skipf("%s has no torch", py)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "loop.py")
	os.WriteFile(script, []byte(`
import sys, time, torch
log = []
class Event:
    def __init__(self, enable_timing=False):
        assert enable_timing
        self.t = None
    def record(self):
        self.t = time.perf_counter()
        log.append("record")
    def synchronize(self):
        log.append("sync")
    def elapsed_time(self, other):
        return (other.t - self.t) * 1000.0 + 1000.0   # +1 s: the events' times, not the host's
torch.cuda.is_available = lambda: True
torch.cuda.is_initialized = lambda: True
torch.cuda.Event = Event
m = torch.nn.Linear(8, 8)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for step in range(1, 11):
    opt.zero_grad()
    m(torch.randn(4, 8)).sum().backward()
    opt.step()
    log.append("step%d" % step)
print("LOG " + " ".join(log), flush=True)
`), 0o644)
	res, err := Run(context.Background(), Job{Name: "cuda", Args: []string{py, script}, Dir: dir, Timeout: time.Minute,
		Profiler: None, Timing: true, WarmupSteps: 1, MeasureSteps: 4, Out: filepath.Join(dir, "out")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Timing) != 1 {
		t.Fatalf("%d ranks timed", len(res.Timing))
	}
	tm := res.Timing[0]
	if tm.Clock != ClockCUDAEvents || len(tm.StepMs) != 4 || tm.FirstStep != 3 {
		t.Fatalf("timing %+v, want 4 steps (3 to 6) by cuda-events", tm)
	}
	for i, ms := range tm.StepMs {
		if ms < 1000 || ms-1000 > 10_000 || math.Abs(tm.HostMs[i]-(ms-1000)) > 50 {
			t.Errorf("step %d: %.3f ms by the events, %.3f ms by the host: want the events' (+1000 ms)", tm.FirstStep+i, ms, tm.HostMs[i])
		}
	}
	b, _ := os.ReadFile(res.Log)
	want := "LOG step1 record step2 record step3 record step4 record step5 record sync step6 step7 step8 step9 step10"
	if !strings.Contains(string(b), want) {
		t.Errorf("the job's log:\n%s\nwant %q: an event at boundaries 2 to 6, one wait after the last", b, want)
	}
}

func openDir(t *testing.T, dir string) *safefile.Dir {
	t.Helper()
	d, err := safefile.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
