package runner

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gpugate/gpugate/runcond"
)

// slurmHostScript samples one node's CPUs while a Slurm job runs, from
// a step that overlaps the job's, as nvidia-smi is sampled (smiWrapper):
// every half second the kernel's cumulative counters (/proc/stat's cpu
// line and CPU count, /proc/pressure/cpu's some line) and the schedstat
// of every thread of the job's tasks on this node. The job's tasks are
// the processes whose environment holds the run's token ($1) and this
// node's name (SLURMD_NODENAME=$2, set by slurmstepd for a task: not for
// srun on the submitting host, nor for another node's tasks where two
// nodes share a host; srun itself matches only when gpugate runs inside
// a batch step on one of the job's nodes, and adds its little CPU time to
// the job's there). Only sh, grep, cat, head, date and sleep: the
// nodes need no gpugate of their own. A block ends with "end", so that a
// block cut off by the step's end is never read.
const slurmHostScript = `tok="GPUGATE_JOB_TOKEN=$1"; node="SLURMD_NODENAME=$2"
while :; do
  echo "at $(date +%s%N)"
  head -n 1 /proc/stat
  echo "cpus $(grep -c '^cpu[0-9]' /proc/stat)"
  grep '^some' /proc/pressure/cpu 2>/dev/null
  for f in $(grep -lzx "$tok" /proc/[0-9]*/environ 2>/dev/null); do
    grep -qzx "$node" "$f" 2>/dev/null || continue
    for t in "${f%/environ}"/task/*; do
      s=$(cat "$t/schedstat" 2>/dev/null) && echo "task ${t##*/} $s"
    done
  done
  echo end
  sleep 0.5
done
`

// nodeHost samples one node (slurmHostScript) until stop.
type nodeHost struct {
	node   string
	cmd    *exec.Cmd
	mu     sync.Mutex
	first  *hostReading
	last   *hostReading
	blocks int
	tasks  map[int][2]int64 // tid: cpu ns, wait ns, the last reading
	done   chan struct{}
	err    error
}

// startNodeHost starts the sampler step on node, in the job's allocation.
func startNodeHost(ctx context.Context, job Job, sl *Slurm, jobID, name, node, token string) (*nodeHost, error) {
	srun := sl.bin("srun")
	if !strings.Contains(srun, "/") {
		p, err := exec.LookPath(srun)
		if err != nil {
			return nil, fmt.Errorf("srun: %w", err)
		}
		srun = p
	}
	dir, err := filepath.Abs(filepath.Join(job.Out, "slurm"))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// The script in a file of the shared folder, as the nvidia-smi
	// wrapper is: the step's command line stays short and says what runs.
	script := filepath.Join(dir, "host-"+node+".sh")
	if err := os.WriteFile(script, []byte(slurmHostScript), 0o644); err != nil {
		return nil, err
	}
	h := &nodeHost{node: node, tasks: map[int][2]int64{}, done: make(chan struct{})}
	h.cmd = exec.CommandContext(ctx, srun, "--jobid="+jobID, "--job-name="+name, "--overlap", "--nodes=1", "--ntasks=1",
		"--nodelist="+node, "--quiet", "sh", script, token, node)
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := h.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := h.cmd.Start(); err != nil {
		return nil, fmt.Errorf("srun host sampler on %s: %w", node, err)
	}
	go func() {
		defer close(h.done)
		h.read(out)
		h.cmd.Wait()
	}()
	return h, nil
}

// read parses the sampler's blocks; each complete one becomes the last
// reading (the first one stays the first).
func (h *nodeHost) read(r interface{ Read([]byte) (int, error) }) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	var cur *hostReading
	tasks := map[int][2]int64{}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch {
		case f[0] == "at" && len(f) == 2:
			ns, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				cur = nil
				continue
			}
			cur = &hostReading{at: time.Unix(0, ns), psiSome: -1, busy: -1, steal: -1, total: -1, periods: -1, throttled: -1}
			clear(tasks)
		case cur == nil:
		case f[0] == "cpu":
			cur.busy, cur.steal, cur.total = procStatCPU([]byte(sc.Text()))
		case f[0] == "cpus" && len(f) == 2:
			cur.cpus, _ = strconv.Atoi(f[1])
		case f[0] == "some":
			cur.psiSome = psiSomeTotal([]byte(sc.Text()))
		case f[0] == "task" && len(f) >= 4:
			tid, e1 := strconv.Atoi(f[1])
			cpu, e2 := strconv.ParseInt(f[2], 10, 64)
			wait, e3 := strconv.ParseInt(f[3], 10, 64)
			if e1 == nil && e2 == nil && e3 == nil && cpu >= 0 && wait >= 0 && len(tasks) < 100_000 {
				tasks[tid] = [2]int64{cpu, wait}
			}
		case f[0] == "end":
			h.mu.Lock()
			for tid, v := range tasks {
				h.tasks[tid] = v
			}
			var own int64
			for _, v := range h.tasks {
				own += v[0]
			}
			cur.own = time.Duration(own)
			if h.first == nil {
				h.first = cur
			}
			h.last = cur
			h.blocks++
			h.mu.Unlock()
			cur = nil
		}
	}
	h.err = sc.Err()
}

// stop waits for one more complete block (the job has ended: its counters
// are final), up to 3 s, ends the sampler step and returns the node's host
// conditions: what hostConditions makes of a single machine's readings,
// the job's CPU time being its tasks' (schedstat) on this node.
func (h *nodeHost) stop() *runcond.Host {
	h.mu.Lock()
	n := h.blocks
	h.mu.Unlock()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		h.mu.Lock()
		more := h.blocks > n
		h.mu.Unlock()
		if more {
			break
		}
	}
	if h.cmd.Process != nil {
		syscall.Kill(-h.cmd.Process.Pid, syscall.SIGTERM)
	}
	select {
	case <-h.done:
	case <-time.After(5 * time.Second):
		syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
		<-h.done
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.first == nil || h.last == h.first {
		return &runcond.Host{Node: h.node, NotSampled: "the node's sampler step took fewer than two readings"}
	}
	c := hostConditions(*h.first, *h.last)
	c.Node = h.node
	if len(h.tasks) > 0 {
		var cpu, wait int64
		for _, v := range h.tasks {
			cpu += v[0]
			wait += v[1]
		}
		cs, ws := float64(cpu)/1e9, float64(wait)/1e9
		c.JobCPUSec, c.JobWaitSec, c.JobThreads = &cs, &ws, len(h.tasks)
	}
	return c
}
