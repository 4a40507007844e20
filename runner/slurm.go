package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpugate/gpugate/internal/bounded"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/internal/safefile"
	"github.com/gpugate/gpugate/runcond"
)

// Slurm runs a job as the tasks of one Slurm job step (docs/slurm.md):
// inside the allocation JobID when it is set, else in one gpugate
// requests with salloc --no-shell and cancels when the run ends.
type Slurm struct {
	Nodes, TasksPerNode, GPUsPerNode int
	Partition                        string
	// Time is the allocation's time limit.
	Time time.Duration
	// Args go to salloc, StepArgs to the job step's srun.
	Args, StepArgs []string
	// SharedDir is where the tasks write their traces, job info and
	// injection: a folder every node sees at the same path. Empty: the
	// artifacts folder (Job.Out).
	SharedDir string
	// QueueTimeout bounds the wait for the allocation.
	QueueTimeout time.Duration
	// JobID is an existing allocation to run in (SLURM_JOB_ID): gpugate
	// then requests none and cancels only its own steps.
	JobID string
	// Bin is the folder of srun, salloc, squeue and scancel; empty: PATH.
	Bin string
	// GoneTimeout bounds the wait for squeue to stop showing a cancelled
	// job; 2 minutes by default.
	GoneTimeout time.Duration
}

// SlurmInfo is what a Slurm run reports about the job.
type SlurmInfo struct {
	JobID string `json:"job_id"`
	// Own says gpugate requested the allocation (and cancelled it).
	Own bool `json:"own_allocation"`
	// QueueWait is how long the allocation took to be granted; 0 inside an
	// existing allocation. Apart from the run's own time (Result.Duration).
	QueueWait time.Duration `json:"queue_wait_ns"`
	Nodes     []SlurmNode   `json:"nodes"`
	// SharedDir is the folder the tasks wrote into.
	SharedDir string `json:"shared_dir"`
}

// SlurmNode is one allocated node as the probe step saw it.
type SlurmNode struct {
	Name string `json:"name"`
	// Index is the node's place in the step (the probe's task number, one
	// task per node): rank 0 runs on the node of index 0.
	Index    int    `json:"index"`
	Host     string `json:"host"` // its hostname, for MASTER_ADDR
	GPU      string `json:"gpu"`  // first GPU's model, "none" without nvidia-smi or GPU
	Driver   string `json:"driver"`
	GPUCount int    `json:"gpu_count"`
	CPU      string `json:"cpu"`
	CPUs     int    `json:"cpus"`
}

// NodeGPUs is the fingerprint's view of the nodes: each node's GPU model
// and count ("NVIDIA H100 80GB HBM3 ×8", "none"), sorted, joined by "; ",
// without the node names (a fingerprint holds no host names).
func (s *SlurmInfo) NodeGPUs() string {
	var out []string
	for _, n := range s.Nodes {
		if n.GPUCount == 0 {
			out = append(out, "none")
		} else {
			out = append(out, fmt.Sprintf("%s ×%d", n.GPU, n.GPUCount))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// slurmName is what a Slurm name (node, partition) may hold, so that it
// can be passed through srun and a shell script unquoted.
var slurmName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func (s *Slurm) bin(name string) string {
	if s.Bin == "" {
		return name
	}
	return filepath.Join(s.Bin, name)
}

// slurmOut is the folder the tasks of a Slurm job write into: out itself
// (the artifacts folder) by default, else a new folder of this run under
// the shared folder.
func slurmOut(job Job, out string) (string, error) {
	if job.Slurm.SharedDir == "" {
		return out, nil
	}
	dir, err := filepath.Abs(job.Slurm.SharedDir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("slurm shared_dir %s: %w", escape.Terminal(dir), err)
	}
	return os.MkdirTemp(dir, "gpugate-"+job.Name+"-")
}

// taskLabel is srun --label's prefix of a task's output line.
var taskLabel = regexp.MustCompile(`^\s*(\d+): `)

// unlabel strips srun's task label from a line of output.
func unlabel(line string) string {
	if m := taskLabel.FindStringIndex(line); m != nil {
		return line[m[1]:]
	}
	return line
}

// runSlurm runs args (the command, already wrapped in nsys when profiled
// so) as the tasks of one job step, its injection files in out, and
// cancels what it started before it returns.
func runSlurm(ctx context.Context, job Job, args, env []string, res *Result, out string) (err error) {
	sl := job.Slurm
	name := "gpugate-" + job.Name + "-" + escape.Token(4)
	info := &SlurmInfo{JobID: sl.JobID, SharedDir: out}
	res.Slurm = info
	// What gpugate says before the step is kept for job.log, which the
	// step's run (run) starts afresh: a job refused before its step still
	// leaves a log that says why.
	var pre strings.Builder
	say := func(format string, a ...any) {
		line := fmt.Sprintf("gpugate: slurm: %s\n", fmt.Sprintf(format, a...))
		pre.WriteString(line)
		fmt.Fprintf(job.Output, "[%s] %s", job.Name, line)
	}
	fail := func(what string) error {
		os.WriteFile(res.Log, []byte(pre.String()+"gpugate: "+what+"\n"), 0o644)
		return &Error{Job: job.Name, What: what, Log: res.Log}
	}
	defer func() {
		// Cancelled whatever happened (a timeout, Ctrl-C, SIGTERM, a
		// failure, success), with a context of its own: ctx may be what
		// was cancelled.
		if cerr := slurmCancel(context.WithoutCancel(ctx), sl, info, name, say); cerr != nil {
			if err == nil {
				err = &Error{Job: job.Name, What: cerr.Error(), Log: res.Log}
			} else {
				err = fmt.Errorf("%w; and %v", err, cerr)
			}
		}
	}()
	if sl.JobID == "" {
		info.Own = true
		if err := slurmAllocate(ctx, job, name, info, say); err != nil {
			return fail(err.Error())
		}
	} else if !slurmName.MatchString(sl.JobID) {
		return fail(fmt.Sprintf("SLURM_JOB_ID %s is not a job id", strconv.QuoteToASCII(sl.JobID)))
	} else {
		say("inside the existing allocation %s (SLURM_JOB_ID): only gpugate's own steps are cancelled", sl.JobID)
	}
	nodes, err := slurmProbe(ctx, job, name, info.JobID, out)
	if err != nil {
		return fail(err.Error())
	}
	info.Nodes = nodes
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	say("job %s on %d node(s): %s", info.JobID, len(nodes), escape.Terminal(strings.Join(names, ", ")))

	// The launcher contract's rendezvous, unless the job sets its own:
	// rank 0 runs on the first node of the step (Slurm's order, not the
	// names': gpu9 comes before gpu10).
	if lookup(env, "MASTER_ADDR") == "" {
		for _, n := range nodes {
			if n.Index == 0 {
				env = append(env, "MASTER_ADDR="+n.Host)
			}
		}
	}
	if lookup(env, "MASTER_PORT") == "" {
		env = append(env, "MASTER_PORT="+strconv.Itoa(rendezvousPort()))
	}
	// nsys's own TMPDIR (runner.go) is a folder of gpugate's machine; the
	// nodes use their own.
	env = slices.DeleteFunc(env, func(kv string) bool {
		return strings.HasPrefix(kv, "TMPDIR=") && strings.HasPrefix(filepath.Base(kv), "gpugate-nsys-")
	})
	env = append(env, "GPUGATE_SLURM=1")
	export := []string{"ALL"}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		// Named, beside ALL (which carries the rest, the workload's env:
		// among it), so that the step's command line shows what gpugate
		// injects; a value with a comma cannot be named (--export splits
		// at commas) and reaches the tasks through ALL alone.
		if (strings.HasPrefix(k, "GPUGATE_") || k == "MASTER_ADDR" || k == "MASTER_PORT") && !strings.ContainsAny(v, ",\n") {
			export = append(export, kv)
		}
	}
	step := []string{sl.bin("srun"), "--jobid=" + info.JobID, "--job-name=" + name,
		"--nodes=" + strconv.Itoa(sl.Nodes), "--ntasks-per-node=" + strconv.Itoa(sl.TasksPerNode),
		"--label", "--kill-on-bad-exit=1", "--export=" + strings.Join(export, ",")}
	if sl.GPUsPerNode > 0 {
		step = append(step, "--gres=gpu:"+strconv.Itoa(sl.GPUsPerNode))
	}
	step = append(step, sl.StepArgs...)
	step = append(step, args...)

	// Run conditions per node: nvidia-smi on each node in a step that
	// overlaps the job's.
	samplers := map[string]*SMISampler{}
	for _, n := range nodes {
		if n.GPUCount == 0 {
			continue
		}
		wrapper, err := smiWrapper(job, sl, info.JobID, name, n.Name)
		if err != nil {
			return fail(err.Error())
		}
		samplers[n.Name] = StartSMI(ctx, SMIOptions{Path: wrapper, Owned: func(int) (bool, bool) { return false, false }})
	}
	// The host's CPUs per node, in a step of their own too
	// (slurmhost.go): the job's tasks are known there by the run's token.
	job.token = escape.Token(16)
	hosts := map[string]*nodeHost{}
	for _, n := range nodes {
		h, err := startNodeHost(ctx, job, sl, info.JobID, name, n.Name, job.token)
		if err != nil {
			say("warning: no host conditions of node %s: %s", escape.Terminal(n.Name), escape.Terminal(err.Error()))
			continue
		}
		hosts[n.Name] = h
	}
	// The host samplers stop as soon as the job's step has ended (their
	// last reading is then the job's end), before gpugate sweeps what the
	// job left: where slurmd runs below gpugate (a test cluster), the
	// sweep would take their slurmstepd for the job's and kill it, and the
	// steps would never end.
	var hostNodes []*runcond.Host
	stopHosts := func() {
		for _, n := range nodes {
			if h := hosts[n.Name]; h != nil {
				hostNodes = append(hostNodes, h.stop())
				delete(hosts, n.Name)
			}
		}
	}
	job.afterExit = stopHosts
	defer func() {
		per := map[string]*runcond.Conditions{}
		for node, s := range samplers {
			per[node] = s.Stop()
		}
		res.Conditions = nodeConditions(nodes, per)
		stopHosts() // the job did not start: nothing stopped them yet
		res.Conditions.HostNodes = hostNodes
	}()
	say("step: %s", escape.Terminal(strings.Join(step, " ")))
	err = run(ctx, job, step, env, res)
	if err != nil {
		var je *Error
		if errors.As(err, &je) {
			failedNode(je, res.Log)
		}
	}
	return err
}

// slurmAllocate requests the allocation with salloc --no-shell, which
// returns once it is granted: the wait is the queue's, apart from the
// run's. A wait beyond QueueTimeout (or ctx's end) gives up; the caller
// cancels the request by its name.
func slurmAllocate(ctx context.Context, job Job, name string, info *SlurmInfo, say func(string, ...any)) error {
	sl := job.Slurm
	secs := int((sl.Time + time.Second - 1) / time.Second)
	args := []string{"--no-shell", "--job-name=" + name, "--nodes=" + strconv.Itoa(sl.Nodes),
		"--ntasks-per-node=" + strconv.Itoa(sl.TasksPerNode),
		fmt.Sprintf("--time=%d:%02d:%02d", secs/3600, secs/60%60, secs%60)}
	if sl.GPUsPerNode > 0 {
		args = append(args, "--gres=gpu:"+strconv.Itoa(sl.GPUsPerNode))
	}
	if sl.Partition != "" {
		args = append(args, "--partition="+sl.Partition)
	}
	args = append(args, sl.Args...)
	say("requesting %d node(s) × %d task(s): salloc %s", sl.Nodes, sl.TasksPerNode, escape.Terminal(strings.Join(args, " ")))
	start := time.Now()
	r, err := bounded.Run(ctx, bounded.Options{Limit: sl.QueueTimeout, MaxOutput: 64 << 10, Stderr: true}, sl.bin("salloc"), args...)
	info.QueueWait = time.Since(start)
	if m := regexp.MustCompile(`(?m)job allocation (\d+)`).FindSubmatch(r.Out); m != nil {
		info.JobID = string(m[1])
	}
	switch {
	case r.TimedOut && ctx.Err() != nil:
		return fmt.Errorf("was interrupted while waiting %.1fs in the queue for its Slurm allocation", info.QueueWait.Seconds())
	case r.TimedOut:
		return fmt.Errorf("waited longer than slurm.queue_timeout (%s) in the queue for its Slurm allocation; the request was cancelled", sl.QueueTimeout)
	case err != nil:
		return fmt.Errorf("salloc failed: %v: %s", err, escape.Terminal(lastLine(string(r.Out))))
	case info.JobID == "":
		return fmt.Errorf("salloc granted no job allocation it named: %s", escape.Terminal(lastLine(string(r.Out))))
	}
	say("allocation %s granted after %.1fs in the queue", info.JobID, info.QueueWait.Seconds())
	return nil
}

// probeScript runs once on each node (one task per node): it writes the
// node's name, hostname, GPUs and CPUs into the shared folder ($1), so
// that gpugate learns the nodes and that the folder is shared and
// writable there.
const slurmProbeScript = `f="$1/.gpugate-node-$SLURMD_NODENAME"
g=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | tr '\n' ';')
c=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
{ echo "$SLURMD_NODENAME"; hostname; echo "$g"; echo "$c"; nproc; } >"$f.tmp" && mv -f "$f.tmp" "$f" && echo "gpugate-probe $SLURMD_NODENAME"`

var probeLine = regexp.MustCompile(`^\s*(\d+): gpugate-probe (\S+)$`)

// slurmProbe runs the probe step and reads what each node wrote.
func slurmProbe(ctx context.Context, job Job, name, jobID, out string) ([]SlurmNode, error) {
	sl := job.Slurm
	args := []string{"--jobid=" + jobID, "--job-name=" + name, "--overlap", "--nodes=" + strconv.Itoa(sl.Nodes),
		"--ntasks-per-node=1", "--label", "--export=ALL"}
	if sl.GPUsPerNode > 0 {
		args = append(args, "--gres=gpu:"+strconv.Itoa(sl.GPUsPerNode))
	}
	args = append(args, "/bin/sh", "-c", slurmProbeScript, "sh", out)
	r, err := bounded.Run(ctx, bounded.Options{Limit: 2 * time.Minute, MaxOutput: 256 << 10, Stderr: true}, sl.bin("srun"), args...)
	var probed, tasks []string
	for _, l := range strings.Split(string(r.Out), "\n") {
		if m := probeLine.FindStringSubmatch(l); m != nil {
			probed, tasks = append(probed, m[2]), append(tasks, m[1])
		}
	}
	if err != nil || len(probed) < sl.Nodes {
		return nil, fmt.Errorf("cannot use %s as its shared folder: %s; slurm.shared_dir must be a folder every node can write at the same path",
			escape.Terminal(out), probeFailure(string(r.Out), err))
	}
	var nodes []SlurmNode
	for i, p := range probed {
		if !slurmName.MatchString(p) {
			return nil, fmt.Errorf("node name %s: not a plain Slurm node name", strconv.QuoteToASCII(p))
		}
		f := filepath.Join(out, ".gpugate-node-"+p)
		b, err := safefile.ReadFile(f, 64<<10) // the shared folder: a regular file, never a link or FIFO
		if err != nil {
			return nil, fmt.Errorf("node %s wrote %s, but it is not here: %s is not on a filesystem that node shares with gpugate's machine; set slurm.shared_dir to one", p, escape.Terminal(f), escape.Terminal(out))
		}
		os.Remove(f)
		lines := strings.Split(string(b), "\n")
		for len(lines) < 5 {
			lines = append(lines, "")
		}
		n := SlurmNode{Name: p, Host: strings.TrimSpace(lines[1]), GPU: "none", CPU: strings.TrimSpace(lines[3])}
		n.Index, _ = strconv.Atoi(tasks[i])
		n.CPUs, _ = strconv.Atoi(strings.TrimSpace(lines[4]))
		for _, g := range strings.Split(lines[2], ";") {
			if g = strings.TrimSpace(g); g != "" {
				if n.GPUCount == 0 {
					// "NAME, DRIVER": the name may hold a comma, the
					// driver version does not.
					if i := strings.LastIndexByte(g, ','); i >= 0 {
						n.GPU, n.Driver = strings.TrimSpace(g[:i]), strings.TrimSpace(g[i+1:])
					} else {
						n.GPU = g
					}
				}
				n.GPUCount++
			}
		}
		if n.Host == "" || strings.ContainsAny(n.Host, ", \t") {
			n.Host = p
		}
		nodes = append(nodes, n)
	}
	// The step's nodes in Slurm's order are the probe's by task number;
	// gpugate sorts them by name for a stable report.
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	return nodes, nil
}

// probeFailure says which node failed the probe step and what it printed.
func probeFailure(out string, err error) string {
	byTask := map[string][]string{}
	var fails []string
	for _, l := range strings.Split(out, "\n") {
		if m := srunFailure.FindStringSubmatch(l); m != nil {
			fails = append(fails, m[1]+"\x00"+m[2])
		} else if m := taskLabel.FindStringSubmatch(l); m != nil && !probeLine.MatchString(l) {
			byTask[m[1]] = append(byTask[m[1]], l[len(m[0]):])
		}
	}
	var msgs []string
	for _, f := range fails {
		node, task, _ := strings.Cut(f, "\x00")
		said := strings.Join(byTask[task], " | ")
		if said == "" {
			said = "no output"
		}
		msgs = append(msgs, fmt.Sprintf("node %s cannot write there (%s)", escape.Terminal(node), escape.Terminal(said)))
	}
	if len(msgs) == 0 {
		return fmt.Sprintf("the probe step failed (%v): %s", err, escape.Terminal(strings.Join(lastLines(out, 5), " | ")))
	}
	return strings.Join(msgs, "; ")
}

// smiWrapper writes a script that runs nvidia-smi on one node of the job
// in a step overlapping the job's; StartSMI runs it as its nvidia-smi.
func smiWrapper(job Job, sl *Slurm, jobID, name, node string) (string, error) {
	srun := sl.bin("srun")
	if !strings.Contains(srun, "/") {
		p, err := exec.LookPath(srun)
		if err != nil {
			return "", fmt.Errorf("srun: %w", err)
		}
		srun = p
	}
	gres := ""
	if sl.GPUsPerNode > 0 {
		gres = " --gres=gpu:" + strconv.Itoa(sl.GPUsPerNode)
	}
	script := fmt.Sprintf("#!/bin/sh\nexec %s --jobid=%s --job-name=%s --overlap --nodes=1 --ntasks=1 --nodelist=%s --quiet%s nvidia-smi \"$@\"\n",
		shQuote(srun), jobID, name, node, gres)
	dir, err := filepath.Abs(filepath.Join(job.Out, "slurm"))
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f := filepath.Join(dir, "nvidia-smi-"+node)
	return f, os.WriteFile(f, []byte(script), 0o755)
}

// shQuote quotes s for /bin/sh.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// nodeConditions merges each node's run conditions into one, every GPU
// marked with its node; a node that was not sampled says so.
func nodeConditions(nodes []SlurmNode, per map[string]*runcond.Conditions) *runcond.Conditions {
	c := &runcond.Conditions{}
	var not []string
	for _, n := range nodes {
		nc := per[n.Name]
		if nc == nil {
			not = append(not, fmt.Sprintf("node %s: no GPU seen by nvidia-smi there", n.Name))
			continue
		}
		if !nc.Sampled {
			not = append(not, fmt.Sprintf("node %s: %s", n.Name, nc.NotSampled))
			continue
		}
		c.Sampled = true
		c.ReasonFields = cmpOr(c.ReasonFields, nc.ReasonFields)
		c.IntervalMS = nc.IntervalMS
		for _, g := range nc.GPUs {
			g.Node = n.Name
			c.GPUs = append(c.GPUs, g)
		}
		for _, w := range nc.Warnings {
			c.Warnings = append(c.Warnings, "node "+n.Name+": "+w)
		}
	}
	if !c.Sampled {
		c.NotSampled = strings.Join(not, "; ")
		if c.NotSampled == "" {
			c.NotSampled = "no node sampled"
		}
	} else {
		c.Warnings = append(c.Warnings, not...)
	}
	return c
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// slurmCancel cancels what gpugate started (its allocation, or its steps
// inside an existing one) and waits until squeue no longer shows it.
func slurmCancel(ctx context.Context, sl *Slurm, info *SlurmInfo, name string, say func(string, ...any)) error {
	limit := sl.GoneTimeout
	if limit <= 0 {
		limit = 2 * time.Minute
	}
	start := time.Now()
	opt := bounded.Options{Limit: 30 * time.Second, MaxOutput: 256 << 10, Stderr: true}
	// What squeue shows of gpugate's own: its job (by its unique name), or
	// its steps inside the user's allocation.
	mine := func() ([]string, error) {
		var r bounded.Result
		var err error
		if info.Own {
			r, err = bounded.Run(ctx, opt, sl.bin("squeue"), "--noheader", "--name="+name, "--format=%i")
		} else {
			r, err = bounded.Run(ctx, opt, sl.bin("squeue"), "--noheader", "--steps", "--jobs="+info.JobID, "--format=%i %j")
		}
		if err != nil {
			if strings.Contains(string(r.Out), "Invalid job id") {
				return nil, nil // gone from the controller's memory
			}
			return nil, fmt.Errorf("squeue: %v: %s", err, lastLine(string(r.Out)))
		}
		var ids []string
		for _, l := range strings.Split(strings.TrimSpace(string(r.Out)), "\n") {
			f := strings.Fields(l)
			switch {
			case len(f) == 0:
			case info.Own:
				ids = append(ids, f[0])
			case len(f) == 2 && f[1] == name:
				ids = append(ids, f[0])
			}
		}
		return ids, nil
	}
	ids, err := mine()
	if err != nil {
		return fmt.Errorf("slurm: cannot tell whether its job is gone: %w", err)
	}
	if len(ids) == 0 {
		return nil
	}
	if info.Own {
		bounded.Run(ctx, opt, sl.bin("scancel"), "--name="+name)
	} else {
		bounded.Run(ctx, opt, sl.bin("scancel"), ids...)
	}
	for {
		ids, err = mine()
		if err == nil && len(ids) == 0 {
			say("job %s cancelled (scancel); squeue no longer shows it (%.1fs)", cmpOr(info.JobID, name), time.Since(start).Seconds())
			return nil
		}
		if time.Since(start) > limit {
			return fmt.Errorf("slurm: squeue still shows %s %.0fs after scancel", strings.Join(ids, ", "), time.Since(start).Seconds())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// srunFailure is srun's line naming a task that failed on a node.
var srunFailure = regexp.MustCompile(`^srun: error: (\S+): tasks? (\d+)(?:[-,]\S*)?: (.*)$`)

// failedNode rewrites a failed step's error to name the node where a task
// failed first, with that task's last lines of output from the log.
func failedNode(je *Error, log string) {
	f, err := safefile.Open(log, maxLogFile)
	if err != nil {
		return
	}
	defer f.Close()
	type failure struct{ node, task, what string }
	var fails []failure
	byTask := map[string][]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if m := srunFailure.FindStringSubmatch(l); m != nil {
			fails = append(fails, failure{m[1], m[2], m[3]})
			continue
		}
		if m := taskLabel.FindStringSubmatch(l); m != nil {
			t := byTask[m[1]]
			if len(t) == 5 {
				t = t[1:]
			}
			byTask[m[1]] = append(t, l[len(m[0]):])
		}
	}
	if len(fails) == 0 {
		return
	}
	// The task that exited on its own, before --kill-on-bad-exit ended
	// the others ("Killed", "Terminated").
	first := fails[0]
	if i := slices.IndexFunc(fails, func(x failure) bool { return strings.HasPrefix(x.what, "Exited with exit code") }); i >= 0 {
		first = fails[i]
	}
	je.What += fmt.Sprintf(": on node %s, task %s: %s", escape.Terminal(first.node), first.task, escape.Terminal(first.what))
	if slices.Contains(byTask[first.task], "Agent launcher failed.") {
		je.What += fmt.Sprintf("; nsys on node %s could not start its agent: an nsys killed there earlier (a job's timeout, scancel) can leave its shared-memory registry /dev/shm/NSys-<version> behind, and every later nsys on the node then fails so; remove it on the node when no nsys runs there (a local run is immune: its job has a /dev/shm of its own)", escape.Terminal(first.node))
	}
	if lines := byTask[first.task]; len(lines) > 0 {
		je.Tail = nil
		for _, l := range lines {
			je.Tail = append(je.Tail, fmt.Sprintf("%s task %s: %s", escape.Terminal(first.node), first.task, escape.Terminal(l)))
		}
	}
}

func lastLines(s string, n int) []string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return ls
}

// slurmNsysReports exports each task's nsys report (report-RANK.nsys-rep)
// to SQLite and names it as the trace of the process of that rank.
func slurmNsysReports(ctx context.Context, job Job, out string, res *Result) error {
	reps, _ := res.Files.Glob("report-*.nsys-rep")
	if len(reps) == 0 {
		return &Error{Job: job.Name, What: "ran under nsys but no task wrote a report (see the log for nsys's messages)", Log: res.Log}
	}
	var mu sync.Mutex
	var errs []string
	for _, rep := range reps {
		db, err := exportReport(ctx, job, res.Files, filepath.Base(rep))
		if err != nil {
			mu.Lock()
			errs = append(errs, fmt.Sprintf("%s: %v", filepath.Base(rep), err))
			mu.Unlock()
			continue
		}
		res.Traces = append(res.Traces, db)
		rank := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(rep), "report-"), ".nsys-rep")
		for i := range res.Processes {
			if p := &res.Processes[i]; p.Rank != nil && strconv.Itoa(*p.Rank) == rank && p.Trace == "" {
				p.Trace = db
			}
		}
	}
	if len(errs) > 0 {
		return &Error{Job: job.Name, What: "reports could not be exported to SQLite: " + escape.Terminal(strings.Join(errs, "; ")), Log: res.Log}
	}
	return nil
}

// reportName is nsys's --output in the artifacts folder: one report per
// task under Slurm, named by its rank (nsys expands %q{VAR}).
func reportName(job Job) string {
	if job.Slurm != nil {
		return "report-%q{SLURM_PROCID}"
	}
	return "report"
}

// rendezvousPort picks rank 0's rendezvous port at random below the
// kernel's ephemeral range (32768 by default, net.ipv4.ip_local_port_range):
// a port in that range may be the source port of any outgoing connection
// on the node, and rank 0's store then fails to bind (a 2-node test job
// died so in _create_c10d_store with the port drawn from 20000–39999).
// gpugate reads the range of its own machine; the nodes of one cluster
// share it as a rule.
func rendezvousPort() int {
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 20000+1024 {
				lo = n
			}
		}
	}
	return 20000 + rand.IntN(lo-20000)
}
