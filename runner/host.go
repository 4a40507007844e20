package runner

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gpugate/gpugate/runcond"
)

// hostFS is where the host readings come from; tests point it at a
// folder that holds proc/ and sys/ trees.
var hostFS = "/"

// userHZ is the unit of /proc/stat's CPU times: USER_HZ, 100 on every
// Linux architecture (sysconf(_SC_CLK_TCK)).
const userHZ = 100

// hostReading is one reading of the kernel's cumulative counters.
type hostReading struct {
	at time.Time
	// psiSome is /proc/pressure/cpu's "some total" (µs); -1 when absent.
	psiSome int64
	// busy, steal and total are /proc/stat's first line, in USER_HZ
	// ticks: busy is user+nice+system+irq+softirq (guest time is within
	// user), total every field but guest; -1 when absent.
	busy, steal, total int64
	cpus               int // cpuN lines
	// cgroup's cpu.stat: periods and throttled periods; -1 without a
	// quota or a cpu.stat.
	periods, throttled int64
	cgroup             string
	// own is the CPU time of gpugate and of every child it reaped
	// (getrusage SELF + CHILDREN): the job's tree, since gpugate is a
	// subreaper (reap_linux.go) and the init reaps within the tree.
	own time.Duration
}

// readHost takes a reading.
func readHost() hostReading {
	r := hostReading{at: time.Now(), psiSome: -1, busy: -1, steal: -1, total: -1, periods: -1, throttled: -1}
	if b, err := os.ReadFile(filepath.Join(hostFS, "proc/pressure/cpu")); err == nil {
		r.psiSome = psiSomeTotal(b)
	}
	if b, err := os.ReadFile(filepath.Join(hostFS, "proc/stat")); err == nil {
		r.busy, r.steal, r.total = procStatCPU(b)
		r.cpus = bytes.Count(b, []byte("\ncpu")) // the cpuN lines; "cpu " is the first line
	}
	r.cgroup, r.periods, r.throttled = cgroupThrottling()
	var self, children syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) == nil && syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) == nil {
		r.own = tv(self.Utime) + tv(self.Stime) + tv(children.Utime) + tv(children.Stime)
	}
	return r
}

func tv(t syscall.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}

// psiSomeTotal is the "some" line's total= (µs), -1 when there is none.
func psiSomeTotal(b []byte) int64 {
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "some" {
			continue
		}
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "total="); ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
					return n
				}
			}
		}
	}
	return -1
}

// procStatCPU reads the aggregate "cpu" line of /proc/stat: user nice
// system idle iowait irq softirq steal guest guest_nice (the last three
// from Linux 2.6.11, 2.6.24, 2.6.33).
func procStatCPU(b []byte) (busy, steal, total int64) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 || f[0] != "cpu" {
			continue
		}
		v := make([]int64, 0, len(f)-1)
		for _, s := range f[1:] {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return -1, -1, -1
			}
			v = append(v, n)
		}
		user, nice, system, idle, iowait, irq, softirq := v[0], v[1], v[2], v[3], v[4], v[5], v[6]
		busy = user + nice + system + irq + softirq
		steal = v[7]
		total = busy + idle + iowait + steal
		return busy, steal, total
	}
	return -1, -1, -1
}

// cgroupThrottling finds gpugate's cgroup (the job's: it inherits it) and
// reads its cpu.stat: cgroup v2's unified hierarchy ("0::/path") or v1's
// cpu controller. The path in /proc/self/cgroup is relative to the
// hierarchy's root, which a container may have mounted as its own root,
// so the path is tried first and the mount's root after.
func cgroupThrottling() (cgroup string, periods, throttled int64) {
	b, err := os.ReadFile(filepath.Join(hostFS, "proc/self/cgroup"))
	if err != nil {
		return "", -1, -1
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var roots []string
		switch {
		case parts[0] == "0" && parts[1] == "":
			roots = []string{"sys/fs/cgroup", "sys/fs/cgroup/unified"}
		case slices.Contains(strings.Split(parts[1], ","), "cpu"):
			roots = []string{"sys/fs/cgroup/" + parts[1], "sys/fs/cgroup/cpu", "sys/fs/cgroup/cpu,cpuacct"}
		default:
			continue
		}
		for _, root := range roots {
			for _, dir := range []string{filepath.Join(root, filepath.Clean("/"+parts[2])), root} {
				st, err := os.ReadFile(filepath.Join(hostFS, dir, "cpu.stat"))
				if err != nil {
					continue
				}
				p, t := cpuStatThrottling(st)
				if p < 0 {
					continue
				}
				return parts[2], p, t
			}
		}
	}
	return "", -1, -1
}

// cpuStatThrottling reads nr_periods and nr_throttled (both cgroup
// versions spell them so); -1, -1 when either is missing.
func cpuStatThrottling(b []byte) (periods, throttled int64) {
	periods, throttled = -1, -1
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || n < 0 {
			continue
		}
		switch f[0] {
		case "nr_periods":
			periods = n
		case "nr_throttled":
			throttled = n
		}
	}
	if periods < 0 || throttled < 0 {
		return -1, -1
	}
	return periods, throttled
}

// hostConditions is what happened between two readings: a the job's
// start, b its end (after its processes were reaped).
func hostConditions(a, b hostReading) *runcond.Host {
	cpus := b.cpus
	h := &runcond.Host{WallSec: b.at.Sub(a.at).Seconds(), CPUs: cpus}
	if runtime.GOOS != "linux" {
		h.NotSampled = "not Linux: no /proc/pressure, /proc/stat or cgroups"
		return h
	}
	wallUS := float64(b.at.Sub(a.at).Microseconds())
	if wallUS <= 0 {
		h.NotSampled = "the run took no measurable time"
		return h
	}
	if a.psiSome >= 0 && b.psiSome >= a.psiSome {
		v := min(float64(b.psiSome-a.psiSome)/wallUS, 1)
		h.CPUPressure = &v
	}
	if a.total >= 0 && b.total > a.total {
		dt := float64(b.total - a.total)
		steal := float64(b.steal-a.steal) / dt
		h.Steal = &steal
		// The ticks are the machine's; the job's and gpugate's own CPU
		// time comes from getrusage. Other processes' CPUs on average:
		// what the machine was busy with beyond those, over the wall time.
		busySec := float64(b.busy-a.busy) / userHZ
		other := max((busySec-(b.own-a.own).Seconds())/(wallUS/1e6), 0)
		if cpus > 0 {
			other = min(other, float64(cpus))
		}
		h.OtherCPU = &other
	}
	if a.periods >= 0 && b.periods > a.periods && b.throttled >= a.throttled {
		t := float64(b.throttled-a.throttled) / float64(b.periods-a.periods)
		h.Throttled = &t
		h.Cgroup = b.cgroup
	}
	if h.CPUPressure == nil && h.Steal == nil && h.OtherCPU == nil && h.Throttled == nil {
		h.NotSampled = "neither /proc/pressure/cpu, /proc/stat nor a cgroup cpu.stat could be read"
	}
	return h
}

// schedEvery is how often jobSched reads the job's threads.
const schedEvery = 200 * time.Millisecond

// jobSched keeps the scheduler statistics of every thread of a job
// (/proc/PID/task/TID/schedstat: time on a CPU, time waiting in a run
// queue), read from gpugate's /proc every schedEvery over the job's
// process tree: the job's first process (the init, in a PID namespace,
// whose pids gpugate sees as the host's) and every process below it,
// found through /proc/PID/task/TID/children. The job's threads exit
// during the run, and their figures go with them, so each thread keeps
// its last reading: what a thread did after it (at most schedEvery) is
// not counted. Why not the cgroup's cpu.pressure: PSI says how long some
// thread waited, not how much, it needs a cgroup v2 of the job's own,
// which the job has only without a namespace; taskstats' exit records
// need delay accounting, off by default since Linux 5.14.
type jobSched struct {
	root int
	last map[int][2]int64 // tid: cpu ns, wait ns
	stop chan struct{}
	done chan struct{}
}

// startJobSched reads the tree under pid until stop.
func startJobSched(pid int) *jobSched {
	j := &jobSched{root: pid, last: map[int][2]int64{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(j.done)
		t := time.NewTicker(schedEvery)
		defer t.Stop()
		for {
			j.read()
			select {
			case <-j.stop:
				return
			case <-t.C:
			}
		}
	}()
	return j
}

// read takes one reading of every thread in the tree.
func (j *jobSched) read() {
	todo, walked := []int{j.root}, map[int]bool{}
	for len(todo) > 0 && len(walked) < 100_000 {
		pid := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if walked[pid] {
			continue
		}
		walked[pid] = true
		task := filepath.Join(hostFS, "proc", strconv.Itoa(pid), "task")
		ents, err := os.ReadDir(task)
		if err != nil {
			continue
		}
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if b, err := os.ReadFile(filepath.Join(task, e.Name(), "schedstat")); err == nil {
				if f := strings.Fields(string(b)); len(f) >= 2 {
					cpu, err1 := strconv.ParseInt(f[0], 10, 64)
					wait, err2 := strconv.ParseInt(f[1], 10, 64)
					if err1 == nil && err2 == nil && cpu >= 0 && wait >= 0 {
						j.last[tid] = [2]int64{cpu, wait}
					}
				}
			}
			if b, err := os.ReadFile(filepath.Join(task, e.Name(), "children")); err == nil {
				for _, c := range strings.Fields(string(b)) {
					if n, err := strconv.Atoi(c); err == nil && n > 0 {
						todo = append(todo, n)
					}
				}
			}
		}
	}
}

// Stop ends the sampling; a second call does nothing.
func (j *jobSched) Stop() {
	select {
	case <-j.stop:
	default:
		close(j.stop)
	}
	<-j.done
}

// fill stops the sampling and puts the tree's CPU time, run-queue wait
// and thread count into h; nothing when no thread had a schedstat (a
// kernel without CONFIG_SCHED_INFO, not Linux).
func (j *jobSched) fill(h *runcond.Host) {
	j.Stop()
	if len(j.last) == 0 {
		return
	}
	var cpu, wait int64
	for _, v := range j.last {
		cpu += v[0]
		wait += v[1]
	}
	c, w := float64(cpu)/1e9, float64(wait)/1e9
	h.JobCPUSec, h.JobWaitSec, h.JobThreads = &c, &w, len(j.last)
}

// SampleHost measures the host over d while gpugate runs no job: what
// its CPUs were busy with beyond gpugate's own (runcond.Host, as a run's
// host is measured). A recording that waits for a quiet host
// (baseline.wait_quiet) judges each sample as it would judge a run's
// host. Nil when ctx ends first.
func SampleHost(ctx context.Context, d time.Duration) *runcond.Host {
	a := readHost()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil
	case <-t.C:
	}
	return hostConditions(a, readHost())
}
