package runner

import (
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// writeTree writes files (path relative to dir: content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHostConditions checks the arithmetic on two readings of a made-up
// host against figures worked out by hand.
func TestHostConditions(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("host conditions are read on Linux only")
	}
	at := time.Unix(1000, 0)
	a := hostReading{at: at, psiSome: 1_000_000, busy: 5000, steal: 100, total: 20000, cpus: 2, periods: 100, throttled: 10, cgroup: "/ci", own: 3 * time.Second}
	// 10 s later: PSI some +3.8 s; the machine busy +1600 ticks = 16 CPU-s
	// of the 20 CPU-s there were (+2000 ticks in all), steal +100 ticks;
	// the job and gpugate used 9 s of CPU: others 7 CPU-s over 10 s = 0.7
	// CPUs. Throttled 25 of 100 periods.
	b := hostReading{at: at.Add(10 * time.Second), psiSome: 4_800_000, busy: 6600, steal: 200, total: 22000, cpus: 2, periods: 200, throttled: 35, cgroup: "/ci", own: 12 * time.Second}
	h := hostConditions(a, b)
	check := func(name string, got *float64, want float64) {
		t.Helper()
		if got == nil || math.Abs(*got-want) > 1e-9 {
			t.Errorf("%s = %v, want %g", name, got, want)
		}
	}
	check("CPUPressure", h.CPUPressure, 0.38)
	check("Steal", h.Steal, 0.05)
	check("OtherCPU", h.OtherCPU, 0.7)
	check("Throttled", h.Throttled, 0.25)
	if h.CPUs != 2 || h.WallSec != 10 || h.Cgroup != "/ci" || h.NotSampled != "" {
		t.Errorf("host = %+v", h)
	}
	// Absent counters stay absent, never zero; no quota, no throttling.
	none := hostReading{at: at, psiSome: -1, busy: -1, steal: -1, total: -1, periods: -1, throttled: -1}
	later := none
	later.at = at.Add(time.Second)
	h = hostConditions(none, later)
	if h.CPUPressure != nil || h.Steal != nil || h.OtherCPU != nil || h.Throttled != nil || h.NotSampled == "" {
		t.Errorf("nothing readable: host = %+v, want nil figures and NotSampled", h)
	}
	// More CPU used by the job than the machine counted (tick rounding)
	// is no negative other-CPU.
	b2 := b
	b2.own = 30 * time.Second
	if h := hostConditions(a, b2); h.OtherCPU == nil || *h.OtherCPU != 0 {
		t.Errorf("own > busy: OtherCPU = %v, want 0", h.OtherCPU)
	}
}

// TestReadHostFiles reads PSI, /proc/stat and cgroup v1 and v2 cpu.stat
// files as the kernel writes them.
func TestReadHostFiles(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("host conditions are read on Linux only")
	}
	for _, tc := range []struct {
		name              string
		files             map[string]string
		periods, throttle int64
		cgroup            string
	}{
		{"cgroup v2", map[string]string{
			"proc/self/cgroup":                   "0::/actions/job\n",
			"sys/fs/cgroup/actions/job/cpu.stat": "usage_usec 1\nuser_usec 1\nsystem_usec 0\nnr_periods 40\nnr_throttled 7\nthrottled_usec 900\n",
		}, 40, 7, "/actions/job"},
		{"cgroup v1, path not mounted (a container's own root)", map[string]string{
			"proc/self/cgroup":                   "12:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n",
			"sys/fs/cgroup/cpu,cpuacct/cpu.stat": "nr_periods 9\nnr_throttled 3\nthrottled_time 123456\n",
		}, 9, 3, "/docker/abc"},
		{"no cpu.stat", map[string]string{"proc/self/cgroup": "0::/\n"}, -1, -1, ""},
	} {
		dir := t.TempDir()
		writeTree(t, dir, tc.files)
		writeTree(t, dir, map[string]string{
			"proc/pressure/cpu": "some avg10=86.38 avg60=86.91 avg300=51.92 total=232462912\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
			"proc/stat":         "cpu  51653 0 12271 18634 709 0 209 47 0 0\ncpu0 25217 0 5462 10992 58 0 18 23 0 0\ncpu1 26436 0 6809 7642 651 0 191 24 0 0\nintr 1 2 3\n",
		})
		old := hostFS
		hostFS = dir
		r := readHost()
		hostFS = old
		if r.psiSome != 232462912 {
			t.Errorf("%s: psi some total = %d, want 232462912", tc.name, r.psiSome)
		}
		// busy = user+nice+system+irq+softirq = 51653+0+12271+0+209;
		// total = busy + idle 18634 + iowait 709 + steal 47.
		if r.busy != 64133 || r.steal != 47 || r.total != 64133+18634+709+47 || r.cpus != 2 {
			t.Errorf("%s: /proc/stat busy %d steal %d total %d cpus %d", tc.name, r.busy, r.steal, r.total, r.cpus)
		}
		if r.periods != tc.periods || r.throttled != tc.throttle || r.cgroup != tc.cgroup {
			t.Errorf("%s: cpu.stat periods %d throttled %d cgroup %q, want %d %d %q", tc.name, r.periods, r.throttled, r.cgroup, tc.periods, tc.throttle, tc.cgroup)
		}
	}
}

// TestHostOtherCPU runs a real job beside two CPU-bound processes that are
// not the job's: the host conditions must count them as other processes'
// CPU (at least most of one CPU, whatever else the machine runs) and not
// count the job's own CPU-bound loop.
func TestHostOtherCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("host conditions are read on Linux only")
	}
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc/stat")
	}
	startHogs(t, 2)
	out := t.TempDir()
	res, err := Run(t.Context(), Job{Name: "spin", Args: []string{"sh", "-c", "end=$(($(date +%s) + 3)); while [ $(date +%s) -lt $end ]; do :; done; times"}, Profiler: None, Out: out, Output: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	h := res.Conditions.Host
	if h == nil || h.OtherCPU == nil {
		t.Fatalf("host conditions %+v, want other CPU measured", h)
	}
	// Two hogs on the machine's CPUs, the job a third runnable loop: on
	// n CPUs the hogs get about 2n/3 of them when nothing else runs. At
	// least half a CPU, on any machine with 1 or more.
	if *h.OtherCPU < 0.5 {
		t.Errorf("other CPU %.2f with two CPU hogs beside the job, want ≥ 0.5 (host %+v)", *h.OtherCPU, h)
	}
	b, _ := os.ReadFile(res.Log)
	t.Logf("job's times: %s", b)
	t.Logf("host with two hogs: other CPU %.2f of %d, pressure %.2f, job log %s", *h.OtherCPU, h.CPUs, *h.CPUPressure, res.Log)
}

// TestJobSchedWait runs a one-thread shell loop through Run, beside two
// CPU hogs, and checks the job's measured CPU time and run-queue wait
// (schedstat of the job's tree, runcond.Host.JobCPUSec and JobWaitSec)
// against independent figures: the CPU time is what the shell's own
// `times` says it used, and, the loop being always runnable, its CPU time
// and wait together are its wall time, whatever else the machine does.
// Without the wait (CPU time alone) the second check fails on any busy
// machine, and on every machine beside the two hogs when it has 2 CPUs.
func TestJobSchedWait(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("schedstat is Linux's")
	}
	if _, err := os.Stat("/proc/self/schedstat"); err != nil {
		t.Skip("no schedstat in this kernel (CONFIG_SCHED_INFO)")
	}
	startHogs(t, 2)
	out := t.TempDir()
	res, err := Run(t.Context(), Job{Name: "loop", Args: []string{"sh", "-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done; times"}, Profiler: None, Out: out, Output: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	h := res.Conditions.Host
	if h == nil || h.JobCPUSec == nil || h.JobWaitSec == nil {
		t.Fatalf("host conditions %+v, want the job's CPU time and wait", h)
	}
	b, err := os.ReadFile(res.Log)
	if err != nil {
		t.Fatal(err)
	}
	// times: "0m1.23s 0m0.01s" for the shell, then for its children.
	var used float64
	for _, f := range regexp.MustCompile(`(\d+)m([0-9.]+)s`).FindAllStringSubmatch(string(b), -1) {
		m, _ := strconv.ParseFloat(f[1], 64)
		s, _ := strconv.ParseFloat(f[2], 64)
		used += 60*m + s
	}
	cpu, wait, wall := *h.JobCPUSec, *h.JobWaitSec, res.Duration.Seconds()
	t.Logf("job: %.2fs on a CPU, %.2fs waiting, %d threads; times says %.2fs; wall %.2fs", cpu, wait, h.JobThreads, used, wall)
	// The sampling misses what the shell did after the last reading
	// (200 ms at most); the init's own CPU time adds a little.
	if cpu < used-0.3 || cpu > used+0.3 {
		t.Errorf("job CPU %.2fs, want the shell's %.2fs ± 0.3", cpu, used)
	}
	if cpu+wait > 1.05*wall+0.2 || cpu+wait < 0.8*wall-0.3 {
		t.Errorf("job CPU %.2fs + wait %.2fs = %.2fs, want about the wall time %.2fs (one thread, always runnable)", cpu, wait, cpu+wait, wall)
	}
}

// startHogs starts n CPU-bound processes (a shell loop each, not the
// job's) and stops them when the test ends: other work on the machine.
func startHogs(t *testing.T, n int) {
	t.Helper()
	for range n {
		h := exec.Command("sh", "-c", "while :; do :; done")
		if err := h.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			h.Process.Kill()
			h.Wait()
		})
	}
}
