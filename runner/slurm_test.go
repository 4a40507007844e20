package runner

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/slurmtest"
)

// slurmPython is Debian 12's python3 with torch 1.13 (python3-torch).
func slurmPython(t *testing.T) string {
	t.Helper()
	if exec.Command("/usr/bin/python3", "-c", "import torch").Run() != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no torch for /usr/bin/python3 (scripts/setup-profilers.sh installs python3-torch)")
		}
		t.Skip("no torch for /usr/bin/python3")
	}
	return "/usr/bin/python3"
}

func ddpDir(t *testing.T) string {
	d, err := filepath.Abs(filepath.Join("..", "examples", "ddp"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSlurmDDP runs a 2-task DDP job (gloo) as one job step across the
// two nodes of a real Slurm cluster, under torch.profiler: one trace per
// rank, each rank's node from inside the task, the allocation cancelled
// and gone from squeue when Run returns.
func TestSlurmDDP(t *testing.T) {
	py := slurmPython(t)
	c := slurmtest.Start(t)
	var log bytes.Buffer
	start := time.Now()
	res, err := Run(context.Background(), Job{
		Name: "ddp", Args: []string{py, "train.py", "--steps", "10"}, Dir: ddpDir(t), Env: map[string]string{"USE_LIBUV": "0"},
		Timeout: 4 * time.Minute, Profiler: Torch, WarmupSteps: 2, MeasureSteps: 4, Out: cmpOr(os.Getenv("KEEPOUT"), t.TempDir()), Output: &log,
		Slurm: &Slurm{Nodes: 2, TasksPerNode: 1, GPUsPerNode: 1, Time: 5 * time.Minute, QueueTimeout: time.Minute},
	})
	t.Logf("2-node DDP step: %.1fs wall (queue wait %.2fs)", time.Since(start).Seconds(), queueWait(res))
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, log.String())
	}
	if testing.Verbose() {
		t.Logf("output:\n%s", log.String())
	}
	if len(res.Traces) != 2 {
		t.Fatalf("traces %v, want 2 (one per rank)\n%s", res.Traces, log.String())
	}
	nodes := map[int]string{}
	for _, p := range res.Processes {
		if p.Rank == nil || p.WorldSize != 2 {
			t.Errorf("process %+v: want a rank of world size 2", p)
			continue
		}
		nodes[*p.Rank] = p.Node
	}
	if nodes[0] != "n1" || nodes[1] != "n2" {
		t.Errorf("ranks ran on %v, want rank 0 on n1 and rank 1 on n2", nodes)
	}
	if res.Slurm == nil || len(res.Slurm.Nodes) != 2 || res.Slurm.Nodes[0].Name != "n1" || res.Slurm.Nodes[1].Name != "n2" || !res.Slurm.Own {
		t.Errorf("slurm info %+v, want its own allocation on n1 and n2", res.Slurm)
	}
	if got := res.Slurm.NodeGPUs(); got != "none; none" {
		t.Errorf("node GPUs %q, want none; none (no nvidia-smi on this machine)", got)
	}
	if res.Conditions == nil || res.Conditions.Sampled || !strings.Contains(res.Conditions.NotSampled, "node n1") || !strings.Contains(res.Conditions.NotSampled, "node n2") {
		t.Errorf("conditions %+v: want not sampled, saying so for n1 and n2", res.Conditions)
	}
	if q := c.Squeue(); q != "" {
		t.Errorf("squeue after Run: %q, want nothing", q)
	}
	for _, want := range []string{"granted after", "squeue no longer shows it", "--export=ALL,"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, log.String())
		}
	}
}

func queueWait(res *Result) float64 {
	if res == nil || res.Slurm == nil {
		return -1
	}
	return res.Slurm.QueueWait.Seconds()
}

// TestSlurmTimeout: a job that outlives its timeout is cancelled, and Run
// returns only once squeue no longer shows it.
func TestSlurmTimeout(t *testing.T) {
	c := slurmtest.Start(t)
	var log bytes.Buffer
	start := time.Now()
	_, err := Run(context.Background(), Job{
		Name: "sleepy", Args: []string{"sh", "-c", "echo started; exec sleep 600"}, Dir: t.TempDir(),
		Timeout: 3 * time.Second, Profiler: None, Out: t.TempDir(), Output: &log, KillGrace: time.Second,
		Slurm: &Slurm{Nodes: 2, TasksPerNode: 1, Time: 5 * time.Minute, QueueTimeout: time.Minute},
	})
	took := time.Since(start)
	q := c.Squeue()
	t.Logf("timed-out job: Run returned after %.1fs; squeue then: %q", took.Seconds(), q)
	var je *Error
	if !errors.As(err, &je) || !strings.Contains(je.What, "timed out") {
		t.Fatalf("Run: %v, want a timeout\n%s", err, log.String())
	}
	if q != "" {
		t.Errorf("squeue after a timed-out job: %q, want nothing", q)
	}
	if out, _ := exec.Command("pgrep", "-f", "sleep 600").Output(); len(out) > 0 {
		t.Errorf("the job's task still runs: pids %s", out)
	}
}

// TestSlurmCancel: a cancelled context (Ctrl-C, SIGTERM) cancels the job.
func TestSlurmCancel(t *testing.T) {
	c := slurmtest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	var log bytes.Buffer
	go func() {
		time.Sleep(3 * time.Second)
		cancel()
	}()
	_, err := Run(ctx, Job{
		Name: "interrupted", Args: []string{"sh", "-c", "echo started; exec sleep 601"}, Dir: t.TempDir(),
		Timeout: time.Minute, Profiler: None, Out: t.TempDir(), Output: &log, KillGrace: time.Second,
		Slurm: &Slurm{Nodes: 2, TasksPerNode: 1, Time: 5 * time.Minute, QueueTimeout: time.Minute},
	})
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("Run: %v, want interrupted\n%s", err, log.String())
	}
	if q := c.Squeue(); q != "" {
		t.Errorf("squeue after an interrupted job: %q, want nothing", q)
	}
}

// TestSlurmNodeFails: a job whose task on n2 fails is reported with n2
// and that task's output.
func TestSlurmNodeFails(t *testing.T) {
	c := slurmtest.Start(t)
	var log bytes.Buffer
	_, err := Run(context.Background(), Job{
		// The failing task waits a second after its message: srun can drop
		// the output of a task that exits at once when --kill-on-bad-exit
		// ends the step (seen once in the full suite: no "1:" line in the
		// log at all), and gpugate can report only what srun delivered.
		Name: "broken", Args: []string{"sh", "-c", `if [ "$SLURM_PROCID" = 1 ]; then echo "disk full on $SLURMD_NODENAME"; sleep 1; exit 3; fi; echo fine; sleep 20`},
		Dir: t.TempDir(), Timeout: time.Minute, Profiler: None, Out: t.TempDir(), Output: &log,
		Slurm: &Slurm{Nodes: 2, TasksPerNode: 1, Time: 5 * time.Minute, QueueTimeout: time.Minute},
	})
	var je *Error
	if !errors.As(err, &je) {
		t.Fatalf("Run: %v, want a failure\n%s", err, log.String())
	}
	t.Logf("reported: %v", err)
	if !strings.Contains(je.What, "on node n2, task 1: Exited with exit code 3") {
		t.Errorf("error %q does not name node n2's failure", je.What)
	}
	if tail := strings.Join(je.Tail, "\n"); !strings.Contains(tail, "n2 task 1: disk full on n2") || strings.Contains(tail, "fine") {
		t.Errorf("tail %q: want n2's output only", tail)
	}
	if q := c.Squeue(); q != "" {
		t.Errorf("squeue after a failed job: %q, want nothing", q)
	}
}

// TestSlurmQueueTimeout: an allocation that waits in the queue (another
// job holds every node) is given up after queue_timeout and its request
// cancelled; the other job is left alone.
func TestSlurmQueueTimeout(t *testing.T) {
	c := slurmtest.Start(t)
	if out, err := exec.Command("salloc", "--no-shell", "--nodes=2", "--exclusive", "--time=5", "--job-name=blocker").CombinedOutput(); err != nil {
		t.Fatalf("salloc blocker: %v: %s", err, out)
	}
	var log bytes.Buffer
	start := time.Now()
	_, err := Run(context.Background(), Job{
		Name: "toobig", Args: []string{"true"}, Dir: t.TempDir(), Timeout: time.Minute, Profiler: None, Out: t.TempDir(), Output: &log,
		Slurm: &Slurm{Nodes: 2, TasksPerNode: 1, Time: 5 * time.Minute, QueueTimeout: 3 * time.Second},
	})
	if err == nil {
		t.Fatalf("Run on nodes another job holds succeeded\n%s", log.String())
	}
	t.Logf("queue timeout: Run returned after %.1fs: %v", time.Since(start).Seconds(), err)
	if !strings.Contains(err.Error(), "queue_timeout (3s)") {
		t.Errorf("error %v: want the queue timeout", err)
	}
	if q := c.Squeue(); !strings.Contains(q, "blocker RUNNING") || strings.Contains(q, "toobig") {
		t.Errorf("squeue after giving up: %q, want the blocker alone", q)
	}
}

// TestSlurmNsys: under nsys, each task writes a report of its own
// (report-RANK.nsys-rep), each exported and named as its rank's trace.
func TestSlurmNsys(t *testing.T) {
	py := slurmPython(t)
	nsysBin := cmpOr(os.Getenv("GPUGATE_NSYS"), "/opt/gpugate/nsight-systems/usr/lib/nsight-systems/bin/nsys")
	if _, err := os.Stat(nsysBin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no nsys: %v (scripts/setup-profilers.sh)", err)
		}
		t.Skipf("no nsys: %v", err)
	}
	c := slurmtest.Start(t)
	var log bytes.Buffer
	out := t.TempDir()
	res, err := Run(context.Background(), Job{
		Name: "ddp-nsys", Args: []string{py, "train.py", "--steps", "10"}, Dir: ddpDir(t), Env: map[string]string{"USE_LIBUV": "0"},
		Timeout: 4 * time.Minute, Profiler: Nsys, NsysPath: nsysBin, NsysTrace: "cuda,nvtx,osrt", Out: out, Output: &log,
		Slurm: &Slurm{Nodes: 2, TasksPerNode: 1, Time: 5 * time.Minute, QueueTimeout: time.Minute},
	})
	if err != nil {
		// Every task's output (the error names the first task to fail,
		// which may be the one that saw the other die).
		jl, _ := os.ReadFile(filepath.Join(out, "job.log"))
		t.Fatalf("Run: %v\n%s\njob.log:\n%s", err, log.String(), jl)
	}
	want := []string{filepath.Join(out, "report-0.sqlite"), filepath.Join(out, "report-1.sqlite")}
	if strings.Join(res.Traces, " ") != strings.Join(want, " ") {
		t.Errorf("traces %v, want %v\n%s", res.Traces, want, log.String())
	}
	byRank := map[int]Process{}
	for _, p := range res.Processes {
		if p.Rank != nil {
			byRank[*p.Rank] = p
		}
	}
	for r, node := range []string{"n1", "n2"} {
		if p := byRank[r]; p.Node != node || p.Trace != want[r] {
			t.Errorf("rank %d: %+v, want node %s and trace %s", r, p, node, want[r])
		}
	}
	if q := c.Squeue(); q != "" {
		t.Errorf("squeue after Run: %q", q)
	}
}

// TestSlurmSharedDirNotShared: a node that cannot write the shared folder
// (n2 sees a filesystem of its own there) is refused before the job runs,
// naming the folder and what the node said.
func TestSlurmSharedDirNotShared(t *testing.T) {
	c := slurmtest.StartWith(t, slurmtest.Options{Private: true})
	var log bytes.Buffer
	_, err := Run(context.Background(), Job{
		Name: "unshared", Args: []string{"sh", "-c", "echo should not run"}, Dir: t.TempDir(), Timeout: time.Minute, Profiler: None,
		Out: t.TempDir(), Output: &log,
		Slurm: &Slurm{Nodes: 2, TasksPerNode: 1, Time: 5 * time.Minute, QueueTimeout: time.Minute, SharedDir: filepath.Join(c.Private, "runs")},
	})
	if err == nil || !strings.Contains(err.Error(), "node n2 cannot write there (") || !strings.Contains(err.Error(), "cannot create "+filepath.Join(c.Private, "runs")) || strings.Contains(err.Error(), "node n1") {
		t.Fatalf("Run: %v, want the shared folder refused, naming n2\n%s", err, log.String())
	}
	t.Logf("refused: %v", err)
	var je *Error
	if b, rerr := os.ReadFile(je2(err, &je)); rerr != nil || !strings.Contains(string(b), "node n2 cannot write there") {
		t.Errorf("job.log: %q, %v; want the refusal", b, rerr)
	}
	if strings.Contains(log.String(), "should not run") {
		t.Error("the job ran")
	}
	if q := c.Squeue(); q != "" {
		t.Errorf("squeue after the refusal: %q", q)
	}
}

func je2(err error, je **Error) string {
	if errors.As(err, je) {
		return (*je).Log
	}
	return ""
}

// TestSlurmConditions: nvidia-smi (the stand-in, replaying an H200
// recording) answers on each node: the probe's GPU model and driver go
// into the nodes, and each node's sampler step marks its GPUs with the
// node.
func TestSlurmConditions(t *testing.T) {
	c := slurmtest.Start(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "nvidia-smi")); err != nil {
		t.Fatal(err)
	}
	rec, _ := filepath.Abs(filepath.Join("testdata", "smi", "h200-load"))
	help, _ := filepath.Abs(filepath.Join("testdata", "smi", "help-query-gpu-580.txt"))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("GPUGATE_FAKE_SMI", rec)
	t.Setenv("GPUGATE_FAKE_SMI_HELP", help)
	t.Setenv("GPUGATE_FAKE_SMI_DONE", t.TempDir())
	t.Setenv("GPUGATE_FAKE_SMI_INTERVAL_MS", "20")
	t.Setenv("GPUGATE_FAKE_SMI_ONESHOT", "1")
	t.Setenv("GPUGATE_FAKE_SMI_DRIVER", "580.65.06")
	var log bytes.Buffer
	res, err := Run(context.Background(), Job{
		Name: "sampled", Args: []string{"sh", "-c", "echo started; sleep 4"}, Dir: t.TempDir(), Timeout: time.Minute, Profiler: None,
		Out: t.TempDir(), Output: &log,
		Slurm: &Slurm{Nodes: 2, TasksPerNode: 1, GPUsPerNode: 1, Time: 5 * time.Minute, QueueTimeout: time.Minute},
	})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, log.String())
	}
	for _, n := range res.Slurm.Nodes {
		if n.GPU != "NVIDIA H200" || n.GPUCount != 1 || n.Driver != "580.65.06" {
			t.Errorf("node %+v: want one NVIDIA H200, driver 580.65.06", n)
		}
	}
	if got := res.Slurm.NodeGPUs(); got != "NVIDIA H200 ×1; NVIDIA H200 ×1" {
		t.Errorf("node GPUs %q", got)
	}
	cond := res.Conditions
	if cond == nil || !cond.Sampled || len(cond.GPUs) != 2 {
		t.Fatalf("conditions %+v: want two GPUs sampled\n%s", cond, log.String())
	}
	for i, node := range []string{"n1", "n2"} {
		if g := cond.GPUs[i]; g.Node != node || g.Name != "NVIDIA H200" || g.Samples == 0 {
			t.Errorf("GPU %d: %+v, want an H200 on %s with samples", i, g, node)
		}
	}
	if q := c.Squeue(); q != "" {
		t.Errorf("squeue after Run: %q (the sampler steps must be cancelled too)", q)
	}
}

// TestSlurmInsideAllocation: with an allocation given (SLURM_JOB_ID),
// gpugate requests none, runs its steps in it, and cancels only its own
// steps: the allocation is still there when Run returns, without them.
func TestSlurmInsideAllocation(t *testing.T) {
	c := slurmtest.Start(t)
	out, err := exec.Command("salloc", "--no-shell", "--nodes=2", "--ntasks-per-node=1", "--time=5", "--job-name=users-own").CombinedOutput()
	if err != nil {
		t.Fatalf("salloc: %v: %s", err, out)
	}
	id, err := exec.Command("squeue", "--noheader", "--name=users-own", "--format=%i").Output()
	if err != nil || len(bytes.TrimSpace(id)) == 0 {
		t.Fatalf("squeue: %v: %q", err, id)
	}
	jobID := string(bytes.TrimSpace(id))
	var log bytes.Buffer
	res, err := Run(context.Background(), Job{
		Name: "inside", Args: []string{"sh", "-c", `echo "task $SLURM_PROCID in job $SLURM_JOB_ID"; sleep 600`}, Dir: t.TempDir(),
		Timeout: 4 * time.Second, Profiler: None, Out: t.TempDir(), Output: &log, KillGrace: time.Second,
		Slurm: &Slurm{Nodes: 2, TasksPerNode: 1, Time: 5 * time.Minute, QueueTimeout: time.Minute, JobID: jobID},
	})
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("Run: %v, want a timeout\n%s", err, log.String())
	}
	if res.Slurm == nil || res.Slurm.Own || res.Slurm.JobID != jobID || res.Slurm.QueueWait != 0 {
		t.Errorf("slurm info %+v: want job %s, not its own, no queue wait", res.Slurm, jobID)
	}
	if !strings.Contains(log.String(), "task 1 in job "+jobID) {
		t.Errorf("the step did not run in job %s:\n%s", jobID, log.String())
	}
	if q := c.Squeue(); q != jobID+" users-own RUNNING" {
		t.Errorf("squeue after Run: %q, want the user's allocation alone, still running", q)
	}
	steps, _ := exec.Command("squeue", "--noheader", "--steps", "--format=%i %j").CombinedOutput()
	if strings.Contains(string(steps), "gpugate-") {
		t.Errorf("gpugate's steps outlived Run: %s\n%s", steps, log.String())
	}
}

// TestSlurmHostPerNode: under Slurm the host's CPUs are sampled on each
// node, in a step beside the job's (as nvidia-smi is), and the job's
// tasks there are found by the run's token: two CPU hogs on the machine
// (not the job's) show as other processes' CPU on both nodes, the job's
// own loop as its CPU time and run-queue wait, and the run is disturbed,
// by node. The sampler steps are gone from squeue afterwards.
func TestSlurmHostPerNode(t *testing.T) {
	c := slurmtest.Start(t)
	startHogs(t, 2)
	var log bytes.Buffer
	res, err := Run(context.Background(), Job{
		Name: "hosts", Args: []string{"sh", "-c", "echo started; end=$(($(date +%s) + 4)); while [ $(date +%s) -lt $end ]; do i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; done"}, Dir: t.TempDir(),
		Timeout: 3 * time.Minute, Profiler: None, Out: t.TempDir(), Output: &log,
		Slurm: &Slurm{Nodes: 2, TasksPerNode: 1, Time: 5 * time.Minute, QueueTimeout: time.Minute},
	})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, log.String())
	}
	cond := res.Conditions
	if cond == nil || cond.Host != nil || len(cond.HostNodes) != 2 {
		t.Fatalf("conditions %+v: want the host of each of the 2 nodes\n%s", cond, log.String())
	}
	for i, node := range []string{"n1", "n2"} {
		h := cond.HostNodes[i]
		if h.Node != node || h.NotSampled != "" || h.OtherCPU == nil || h.JobCPUSec == nil || h.JobWaitSec == nil {
			t.Errorf("node %d: %+v, want %s sampled with the job's CPU and wait", i, h, node)
			continue
		}
		t.Logf("%s: other %.2f of %d CPUs, job %.2fs CPU + %.2fs wait over %d thread(s), %.1fs", node, *h.OtherCPU, h.CPUs, *h.JobCPUSec, *h.JobWaitSec, h.JobThreads, h.WallSec)
		// Each node ran one task, the shell loop, for at least 4 s of the
		// clock (however fast the machine, so that the node's sampler,
		// polling every 0.5 s from a step of its own, finds it): its CPU
		// time is more than nothing; the hogs are
		// the other processes on this machine's CPUs.
		if *h.JobCPUSec <= 0.05 || h.JobThreads < 1 {
			t.Errorf("%s: job CPU %.2fs over %d threads, want the loop's", node, *h.JobCPUSec, h.JobThreads)
		}
		if *h.OtherCPU < 0.5 {
			t.Errorf("%s: other CPU %.2f with two hogs on the machine, want ≥ 0.5", node, *h.OtherCPU)
		}
	}
	if why := gate.HostBusy(cond, gate.DefaultHostMargins); !strings.Contains(why, "node n1: other processes used") || !strings.Contains(why, "node n2: ") {
		t.Errorf("HostBusy = %q, want both nodes named", why)
	}
	if q := c.Squeue(); q != "" {
		t.Errorf("squeue after Run: %q (the host sampler steps must be gone)", q)
	}
}

// TestRendezvousPortBelowEphemeral: the rendezvous port gpugate picks is
// never one the kernel may hand an outgoing connection.
func TestRendezvousPortBelowEphemeral(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skipf("no ephemeral port range to compare with: %v", err)
	}
	lo, _ := strconv.Atoi(strings.Fields(string(b))[0])
	for range 5000 {
		if p := rendezvousPort(); p < 20000 || p >= lo {
			t.Fatalf("rendezvous port %d: outside [20000, %d)", p, lo)
		}
	}
}

// TestSlurmNsysAgentHint: a node whose nsys cannot start its agent
// ("Agent launcher failed.", as every nsys 2022.4 on this machine said
// after a killed one left /dev/shm/NSys-2022.4.2.1 behind, until it was
// removed) is named, with the stale registry and what to do. The log is
// the one TestSlurmNsys's job wrote then.
func TestSlurmNsysAgentHint(t *testing.T) {
	log := filepath.Join(t.TempDir(), "job.log")
	os.WriteFile(log, []byte("srun: error: n1: task 0: Exited with exit code 1\nsrun: launch/slurm: _step_signal: Terminating StepId=1.3\nsrun: error: n2: task 1: Exited with exit code 1\n0: Agent launcher failed.\n1: Agent launcher failed.\n"), 0o644)
	je := &Error{Job: "ddp-nsys", What: "failed: exit status 1", Log: log}
	failedNode(je, log)
	if !strings.Contains(je.What, "on node n1, task 0: Exited with exit code 1; nsys on node n1 could not start its agent") || !strings.Contains(je.What, "/dev/shm/NSys-<version>") {
		t.Errorf("error %q: want node n1 named, with the stale nsys registry", je.What)
	}
	os.WriteFile(log, []byte("srun: error: n1: task 0: Exited with exit code 1\n0: Traceback: Agent launcher failed in my code\n"), 0o644)
	je = &Error{Job: "ddp", What: "failed: exit status 1", Log: log}
	if failedNode(je, log); strings.Contains(je.What, "/dev/shm") {
		t.Errorf("error %q: a job's own line is not nsys's", je.What)
	}
}
