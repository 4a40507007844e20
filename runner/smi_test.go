package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/fakesmi"
	"github.com/gpugate/gpugate/runcond"
)

// TestMain turns the test binary into the stand-in nvidia-smi when it is
// run under that name (a link in a temporary folder on PATH).
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "nvidia-smi" {
		os.Exit(fakesmi.Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeOnPath puts the stand-in nvidia-smi for a recording on PATH and
// returns the folder where it marks the end of its replay.
func fakeOnPath(t *testing.T, recording, help string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, done := t.TempDir(), t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "nvidia-smi")); err != nil {
		t.Fatal(err)
	}
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	t.Setenv("PATH", bin)
	t.Setenv("GPUGATE_FAKE_SMI", abs(filepath.Join("testdata", "smi", recording)))
	t.Setenv("GPUGATE_FAKE_SMI_HELP", abs(filepath.Join("testdata", "smi", help)))
	t.Setenv("GPUGATE_FAKE_SMI_DONE", done)
	return done
}

// sample runs the sampler against the stand-in until it has replayed the
// whole recording.
func sample(t *testing.T, recording string, owned map[int]bool) *runcond.Conditions {
	t.Helper()
	done := fakeOnPath(t, recording, "help-query-gpu-580.txt")
	s := StartSMI(context.Background(), SMIOptions{Interval: 20 * time.Millisecond,
		Owned: func(pid int) (bool, bool) { return owned[pid], true }})
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, e1 := os.Stat(filepath.Join(done, "done.query-gpu"))
		_, e2 := os.Stat(filepath.Join(done, "done.query-compute-apps"))
		if e1 == nil && e2 == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stand-in nvidia-smi did not replay %s within 30 s", recording)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The last block is printed before the marker is written; give the
	// reader a moment to take it.
	time.Sleep(100 * time.Millisecond)
	return s.Stop()
}

func f(v float64) *float64 { return &v }

func TestSMIFields(t *testing.T) {
	for _, tc := range []struct {
		help, family string
		reasons      []string
	}{
		{"help-query-gpu-580.txt", "clocks_event_reasons", nil},
		{"help-query-gpu-old.txt", "clocks_throttle_reasons", nil},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "smi", tc.help))
		if err != nil {
			t.Fatal(err)
		}
		fields, family, missing := SMIFields(b)
		if family != tc.family {
			t.Errorf("%s: family %q, want %q", tc.help, family, tc.family)
		}
		if len(fields) < 2 || fields[0] != "index" || fields[1] != "uuid" || fields[len(fields)-1] != "name" {
			t.Errorf("%s: fields %q: want index, uuid first and name last", tc.help, fields)
		}
		for _, r := range smiReasons {
			if !strings.Contains(strings.Join(fields, ","), tc.family+"."+r) {
				t.Errorf("%s: %s.%s not queried: %q", tc.help, tc.family, r, fields)
			}
		}
		t.Logf("%s: missing %q", tc.help, missing)
	}
	b, _ := os.ReadFile(filepath.Join("testdata", "smi", "help-query-gpu-580.txt"))
	fields, _, missing := SMIFields(b)
	want := []string{"index", "uuid", "clocks.current.sm", "clocks.current.memory", "clocks.max.sm", "temperature.gpu",
		"power.draw", "utilization.gpu", "clocks_event_reasons.hw_slowdown", "clocks_event_reasons.hw_thermal_slowdown",
		"clocks_event_reasons.hw_power_brake_slowdown", "clocks_event_reasons.sw_thermal_slowdown",
		"clocks_event_reasons.sw_power_cap", "clocks_event_reasons.gpu_idle", "name"}
	if d := cmp.Diff(want, fields); d != "" || len(missing) != 0 {
		t.Errorf("580 help: fields (-want +got):\n%s\nmissing %q", d, missing)
	}
	// The old help excerpt has no clock or power entries: said, not faked.
	b, _ = os.ReadFile(filepath.Join("testdata", "smi", "help-query-gpu-old.txt"))
	_, _, missing = SMIFields(b)
	if !slicesContains(missing, "clocks.current.sm") || !slicesContains(missing, "power.draw") {
		t.Errorf("old help: missing %q, want clocks.current.sm and power.draw in it", missing)
	}
	if fields, _, _ := SMIFields([]byte("\"timestamp\"\n\"name\"\n")); fields != nil {
		t.Errorf("help without index and uuid gave fields %q, want none", fields)
	}
}

func slicesContains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

func TestSMINormalLoad(t *testing.T) {
	// gpu_burn (10309) is the job; the two memhogs are someone else's.
	c := sample(t, "h200-load", map[int]bool{10309: true})
	zero := map[string]float64{"hw_slowdown": 0, "hw_thermal_slowdown": 0, "hw_power_brake_slowdown": 0, "sw_thermal_slowdown": 0, "sw_power_cap": 0}
	want := &runcond.Conditions{
		Sampled: true, ReasonFields: "clocks_event_reasons", IntervalMS: 20, JobGPUsKnown: true,
		GPUs: []runcond.GPUConditions{{
			Index: 0, UUID: "GPU-00000000-0000-0000-0000-000000000000", Name: "NVIDIA H200",
			Samples: 1, Busy: 1,
			SMClockMedianMHz: f(1980), SMClockMinMHz: f(1980), SMClockMaxMHz: f(1980), MemClockMedianMHz: f(3201),
			TempMaxC: f(52), PowerMedianW: f(627.40), UtilMedianPct: f(100),
			ReasonShare: zero, JobSeen: true,
			Others: []runcond.ComputeProcess{
				{PID: 10291, Name: "/root/tools/memhog", UsedMiB: f(2566), Samples: 1},
				{PID: 10293, Name: "/root/tools/memhog", UsedMiB: f(1542), Samples: 1},
			},
		}},
	}
	if d := cmp.Diff(want, c); d != "" {
		t.Fatalf("conditions (-want +got):\n%s", d)
	}
	// Against itself as the baseline, only the other processes void it.
	got := gate.VoidReasons(c, c, gate.DefaultConditionMargins)
	wantR := []string{"GPU 0: other compute processes on it: pid 10291 /root/tools/memhog (2566 MiB), pid 10293 /root/tools/memhog (1542 MiB): rerun"}
	if d := cmp.Diff(wantR, got); d != "" {
		t.Errorf("VoidReasons (-want +got):\n%s", d)
	}
	// With every process the job's, nothing voids it.
	clean := sample(t, "h200-load", map[int]bool{10291: true, 10293: true, 10309: true})
	if r := gate.VoidReasons(clean, clean, gate.DefaultConditionMargins); len(r) != 0 {
		t.Errorf("normal run voided: %q", r)
	}
	// The summary is stored as JSON and read back unchanged.
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back runcond.Conditions
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(c, &back); d != "" {
		t.Errorf("JSON round trip (-before +after):\n%s", d)
	}
}

func TestSMIThrottled(t *testing.T) {
	base := sample(t, "h200-load", map[int]bool{10291: true, 10293: true, 10309: true})
	c := sample(t, "throttled-constructed", map[int]bool{10291: true, 10293: true, 10309: true})
	g := c.GPUs[0]
	// 10 samples, 4 with HW slowdown at 990 MHz, 6 at 1980 MHz.
	if g.Samples != 10 || g.ReasonShare["hw_slowdown"] != 0.4 || g.ReasonShare["hw_thermal_slowdown"] != 0.4 ||
		*g.SMClockMedianMHz != 1980 || *g.SMClockMinMHz != 990 || *g.TempMaxC != 87 {
		t.Fatalf("throttled summary: %+v", g)
	}
	want := []string{"GPU 0: HW slowdown 40% of samples, HW thermal slowdown 40% of samples: rerun"}
	if d := cmp.Diff(want, gate.VoidReasons(c, base, gate.DefaultConditionMargins)); d != "" {
		t.Errorf("VoidReasons (-want +got):\n%s", d)
	}
	// Without a baseline the throttling voids it all the same.
	if d := cmp.Diff(want, gate.VoidReasons(c, nil, gate.DefaultConditionMargins)); d != "" {
		t.Errorf("VoidReasons without baseline (-want +got):\n%s", d)
	}
}

func TestSMIIdle(t *testing.T) {
	// An idle GPU (the job never used it): no busy sample, so the clocks
	// are those of all samples, and against a busy baseline they void.
	base := sample(t, "h200-load", map[int]bool{10291: true, 10293: true, 10309: true})
	c := sample(t, "h200-idle", nil)
	g := c.GPUs[0]
	if c.JobGPUsKnown || g.JobSeen || g.Busy != 0 || g.Samples != 1 || *g.SMClockMedianMHz != 345 || *g.UtilMedianPct != 0 || *g.PowerMedianW != 85.12 {
		t.Fatalf("idle summary: %+v", c)
	}
	want := []string{"GPU 0: SM clock 1980 → 345 MHz: rerun"}
	if d := cmp.Diff(want, gate.VoidReasons(c, base, gate.DefaultConditionMargins)); d != "" {
		t.Errorf("VoidReasons (-want +got):\n%s", d)
	}
}

func TestSMIDriverFails(t *testing.T) {
	c := sample(t, "driver-fails", nil)
	want := "nvidia-smi printed no GPU sample: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."
	if c.Sampled || c.NotSampled != want || len(c.GPUs) != 0 {
		t.Errorf("conditions %+v, want not sampled: %q", c, want)
	}
}

func TestSMINotFound(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	c := StartSMI(context.Background(), SMIOptions{}).Stop()
	b, _ := json.Marshal(c)
	if string(b) != `{"sampled":false,"not_sampled":"no nvidia-smi","job_gpus_known":false}` {
		t.Errorf("without nvidia-smi: %s", b)
	}
}

// TestSMIThisMachine is the real CPU path: on a machine without
// nvidia-smi (this project's CI) the summary says so and holds nothing.
func TestSMIThisMachine(t *testing.T) {
	if p, err := exec.LookPath("nvidia-smi"); err == nil {
		t.Skipf("this machine has %s: the CPU path is not testable here", p)
	}
	s := StartSMI(context.Background(), SMIOptions{JobPID: os.Getpid()})
	time.Sleep(50 * time.Millisecond)
	c := s.Stop()
	if c.Sampled || c.NotSampled != "no nvidia-smi" || len(c.GPUs) != 0 || c.ReasonFields != "" {
		t.Errorf("without nvidia-smi: %+v", c)
	}
}

// TestProcOwned checks the job's process tree against real processes: the
// job's process group, a grandchild in it, a grandchild that left it, and
// processes outside.
func TestProcOwned(t *testing.T) {
	dir := t.TempDir()
	// The job leads its group; its child stays in it; setsid's child leaves
	// the group but stays below the job.
	cmd := exec.Command("sh", "-c", `sleep 30 & echo $! > `+dir+`/child; setsid sleep 30 & echo $! > `+dir+`/detached; wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	read := func(name string) int {
		for i := 0; i < 500; i++ {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if n, err2 := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && err2 == nil {
				return n
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("no %s pid", name)
		return 0
	}
	child, detached := read("child"), read("detached")
	defer syscall.Kill(detached, syscall.SIGKILL)
	job := cmd.Process.Pid
	for _, tc := range []struct {
		name         string
		pid          int
		own, visible bool
	}{
		{"job", job, true, true},
		{"child in the group", child, true, true},
		{"child in its own session", detached, true, true},
		{"the test itself", os.Getpid(), false, true},
		{"init", 1, false, true},
		{"no such process", 1 << 22, false, false},
	} {
		own, visible := procOwned(job, tc.pid)
		if own != tc.own || visible != tc.visible {
			t.Errorf("%s (pid %d): own %v visible %v, want %v %v", tc.name, tc.pid, own, visible, tc.own, tc.visible)
		}
	}
	// Without the job's pid nothing can be attributed, so nothing voids.
	if own, visible := procOwned(0, os.Getpid()); own || visible {
		t.Errorf("job 0: own %v visible %v, want neither", own, visible)
	}
}

// TestRunSamplesConditions: Run samples nvidia-smi while the job runs and
// returns the summary; the job waits until the stand-in has replayed the
// whole throttled recording.
func TestRunSamplesConditions(t *testing.T) {
	done := fakeOnPath(t, "throttled-constructed", "help-query-gpu-580.txt")
	t.Setenv("GPUGATE_FAKE_SMI_INTERVAL_MS", "20")
	wait := fmt.Sprintf("while [ ! -e %s/done.query-gpu ] || [ ! -e %s/done.query-compute-apps ]; do sleep 0.05; done; sleep 0.2; echo replayed", done, done)
	// The job's folder is where it waits for the stand-in's marks: its
	// private /tmp keeps it.
	res, _, _, err := runJob(t, Job{Args: []string{"/bin/sh", "-c", wait}, Dir: done, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Conditions
	if c == nil || !c.Sampled || len(c.GPUs) != 1 || c.GPUs[0].Samples != 10 || c.GPUs[0].ReasonShare["hw_slowdown"] != 0.4 {
		t.Fatalf("conditions %+v, want 10 samples of GPU 0 with hw_slowdown in 4", c)
	}
	// The recorded pids are not the job's: outside its process tree (or
	// not visible here), never counted as its own.
	if c.JobGPUsKnown || c.GPUs[0].JobSeen {
		t.Errorf("recorded processes taken for the job's: %+v", c.GPUs[0])
	}
}

// TestRunWithoutSMI: the CPU path through Run says why nothing was sampled.
func TestRunWithoutSMI(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	res, _, _, err := runJob(t, Job{Args: []string{"/bin/sh", "-c", "echo hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Conditions; c == nil || c.Sampled || c.NotSampled != "no nvidia-smi" {
		t.Errorf("conditions %+v, want not sampled: no nvidia-smi", c)
	}
}

// A wrapper still open for writing somewhere ("text file busy", as a
// Slurm node's nvidia-smi wrapper was once under scripts/busy.sh, while a
// process forked meanwhile held its descriptor) is retried, not taken for
// a machine without nvidia-smi.
func TestSMITextFileBusy(t *testing.T) {
	done := fakeOnPath(t, "h200-load", "help-query-gpu-580.txt")
	// The stand-in is reached through PATH's symlink named nvidia-smi.
	wrapper := filepath.Join(t.TempDir(), "nvidia-smi-n1")
	os.WriteFile(wrapper, []byte("#!/bin/sh\nexec nvidia-smi \"$@\"\n"), 0o755)
	busy, err := os.OpenFile(wrapper, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command(wrapper, "--help-query-gpu").Run(); err == nil || !errors.Is(err, syscall.ETXTBSY) {
		busy.Close()
		t.Skipf("exec of a file open for writing gave %v, not ETXTBSY, here", err)
	}
	time.AfterFunc(120*time.Millisecond, func() { busy.Close() })
	s := StartSMI(context.Background(), SMIOptions{Path: wrapper, Interval: 20 * time.Millisecond})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(done, "done.query-gpu")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			s.Stop()
			t.Fatal("no sampling within 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if c := s.Stop(); !c.Sampled {
		t.Errorf("not sampled: %s", c.NotSampled)
	}
}
