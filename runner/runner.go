// Package runner starts a user's unmodified training job under a profiler
// (Nsight Systems, torch.profiler injected through sitecustomize, or none),
// streams and keeps its output, enforces the timeout by killing the job's
// whole process group, and returns the trace files it wrote.
package runner

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/internal/newfile"
	"github.com/gpugate/gpugate/internal/safefile"
	"github.com/gpugate/gpugate/runcond"
)

//go:embed inject
var injectFS embed.FS

// Profilers.
const (
	Torch = "torch"
	Nsys  = "nsys"
	None  = "none"
)

// Job is one run of a workload.
type Job struct {
	Name     string
	Args     []string
	Dir      string
	Env      map[string]string // added to the inherited environment
	Timeout  time.Duration
	Profiler string // Torch, Nsys or None
	// WarmupSteps and MeasureSteps shape torch.profiler's schedule.
	WarmupSteps, MeasureSteps int
	// Out is the artifacts folder: traces, the job's log, injection files.
	Out string
	// NsysPath, NsysTrace and NsysArgs configure the nsys backend.
	NsysPath  string
	NsysTrace string
	NsysArgs  []string
	// GPU says whether the machine has one; without, nsys's CPU sampling
	// and context-switch tracing are turned off (they hang at random there).
	GPU bool
	// StepLog, when set, matches a step time in ms (first group) in the
	// job's output: the timing of an unprofiled pass.
	StepLog *regexp.Regexp
	// Output receives the job's output, each line prefixed and with
	// control characters shown as escapes, and progress.
	Output io.Writer
	// StopCommands wraps the echoed output in ::stop-commands::TOKEN and
	// ::TOKEN:: with a random token, so that the Actions runner reads no
	// workflow command from it; set it when running in Actions.
	StopCommands bool
	// KillGrace is how long the process group gets between SIGTERM and
	// SIGKILL; 5 s by default.
	KillGrace time.Duration
	// FLOPs makes the torch injection record operator shapes and flops
	// (perf.yaml flops: true), for FLOP counting.
	FLOPs bool
	// SMIPath is the nvidia-smi that samples the run conditions; empty
	// finds it on PATH, and without one the conditions say "not sampled".
	SMIPath string
	// Hide lists files (or folders) that hold credentials, to be covered
	// with an empty read-only file in the job's mount namespace, besides
	// those set with SetHidden.
	Hide []string
	// Plain marks a helper command (ab's setup) run with the job's
	// protections: no conditions are sampled (Conditions stays nil) and
	// it may print nothing.
	Plain bool
	// Slurm, when set, runs the job as the tasks of one Slurm job step
	// (slurm.go).
	Slurm *Slurm
	// Network is NetHost (the default, "") or NetNone: a network
	// namespace of the job's own, loopback only, with the machine's Unix
	// sockets covered (perf.yaml network:). NetNone where no namespace
	// can be made fails the run.
	Network string
	// keep are folders of gpugate's own that the job uses below /tmp or
	// /var/tmp (nsys's TMPDIR): they stay reachable in its private ones.
	keep []string
	// token, when set, is the run's GPUGATE_JOB_TOKEN (run makes one
	// otherwise): under Slurm the node samplers know the job's tasks by it.
	token string
	// afterExit, when set, is called once the job's processes have ended,
	// before what they left is swept (Slurm's node samplers stop there).
	afterExit func()
	// Timing makes a run of profiler None a timing run: gpugate's step
	// hook times the steps that a profiled run measures (WarmupSteps,
	// MeasureSteps) at the optimizer step, with no profiler
	// (inject/timing/gpugate_timing.py); Result.Timing has them.
	Timing bool
}

// Result is what a run produced.
type Result struct {
	Traces    []string
	Log       string
	Duration  time.Duration
	Steps     int       // optimizer steps seen while it ran
	StepTimes []float64 // ms, from StepLog
	// Killed lists, as "pid (comm)", the processes the job left running
	// (daemons, stray workers) that were killed after it: a few of them
	// (the init names at most maxNamed); Ended counts them all.
	Killed []string
	Ended  int
	// Conditions are the run conditions nvidia-smi reported while the job
	// ran (StartSMI); never nil after the job started, NotSampled says why
	// when nothing was measured.
	Conditions *runcond.Conditions
	// StepSamples are the step hook's memory samples files, one per rank
	// (GPUGATE_STEP_SAMPLES; ReadStepSamples reads them).
	StepSamples []string
	// MaxRSSBytes is the job's peak resident memory, the largest of any
	// one of its processes, gpugate's own excluded (isolate_linux.go); 0
	// when unknown.
	MaxRSSBytes int64
	// Processes are the job's training processes, by rank, as they
	// reported themselves from inside (jobinfo.go); none for profiler none.
	Processes []Process
	// Isolation says how the job was kept from seeing other processes
	// and the files that hold credentials: namespaces, or none and why.
	Isolation string
	// Slurm is the Slurm job a Slurm run ran as (slurm.go); nil otherwise.
	Slurm *SlurmInfo
	// IsolationWarnings say what the isolation could not do here (no
	// namespace: credential files readable; no cgroup: leftovers possible),
	// for the report.
	IsolationWarnings []string
	// Timing are a timing run's timed steps, one per rank (Job.Timing).
	Timing []RankTiming
	// Files is the run's folder, opened before the job ran: Traces and
	// StepSamples are files of it, written by the job, and are read
	// through it (Files.Open, internal/safefile), never by path.
	Files *safefile.Dir
}

// Error is a failed run: the job crashed, timed out or wrote no trace.
type Error struct {
	Job  string
	What string
	Log  string
	Tail []string // last lines of output
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("job %s %s (log: %s)", e.Job, e.What, e.Log)
	if len(e.Tail) > 0 {
		msg += "; last output: " + strings.Join(e.Tail, " | ")
	}
	return msg
}

// prepare writes one embedded injection, with the modules all injections
// share, into out and returns its folder.
func prepare(out, which string) (string, error) {
	dst := filepath.Join(out, "inject", which)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return "", err
	}
	for _, dir := range []string{which, "common"} {
		files, err := fs.ReadDir(injectFS, "inject/"+dir)
		if err != nil {
			return "", err
		}
		for _, f := range files {
			data, err := injectFS.ReadFile("inject/" + dir + "/" + f.Name())
			if err != nil {
				return "", err
			}
			if err := os.WriteFile(filepath.Join(dst, f.Name()), data, 0o644); err != nil {
				return "", err
			}
		}
	}
	return dst, nil
}

// Run runs the job.
func Run(ctx context.Context, job Job) (*Result, error) {
	if job.Output == nil {
		job.Output = io.Discard
	}
	if job.KillGrace == 0 {
		job.KillGrace = 5 * time.Second
	}
	if err := os.MkdirAll(job.Out, 0o755); err != nil {
		return nil, err
	}
	out, err := filepath.Abs(job.Out)
	if err != nil {
		return nil, err
	}
	env := jobEnv(os.Environ())
	for k, v := range job.Env {
		env = append(env, k+"="+v)
	}
	args := job.Args
	res := &Result{Log: filepath.Join(out, "job.log")}
	if job.Slurm != nil { // the tasks write into a folder all nodes share
		if out, err = slurmOut(job, out); err != nil {
			return nil, err
		}
		job.keep = append(job.keep, out) // reachable in the job's private /tmp
	}
	// The folder the job writes into, opened now, before the job can
	// replace it: everything gpugate reads back is opened through it.
	files, err := safefile.OpenDir(out)
	if err != nil {
		return nil, err
	}
	res.Files = files
	args, env, cleanup, err := inject(&job, out, args, env)
	if err != nil {
		return nil, err
	}
	defer cleanup()

	start := time.Now()
	for attempt := 1; ; attempt++ {
		var err error
		if job.Slurm != nil {
			err = runSlurm(ctx, job, args, env, res, out)
		} else {
			err = run(ctx, job, args, env, res)
		}
		if err == nil {
			break
		}
		why := ""
		if job.Profiler == Nsys && res.Steps == 0 && ctx.Err() == nil {
			why = nsysTransient(res.Log)
		}
		if why == "" || attempt == nsysAttempts {
			if why != "" {
				fmt.Fprintf(job.Output, "[%s] gpugate: nsys failed before the job made a step, %d times (%s): giving up\n", job.Name, attempt, why)
			}
			return res, err
		}
		// The failed attempt's log stays beside the next one's.
		kept := filepath.Join(out, fmt.Sprintf("job-attempt%d.log", attempt))
		os.Rename(res.Log, kept)
		fmt.Fprintf(job.Output, "[%s] gpugate: nsys failed before the job made a step (%s): a failure of nsys itself, which a busy machine brings out, not of the job; retrying, attempt %d of %d (log of this one: %s)\n",
			job.Name, why, attempt+1, nsysAttempts, kept)
		for _, pat := range []string{"report.nsys-rep", "report.qdstrm", "steps-*.jsonl", "job-*.json"} {
			olds, _ := files.Glob(pat)
			for _, f := range olds {
				files.Remove(f)
			}
		}
		*res = Result{Log: res.Log, Files: files}
		start = time.Now()
	}
	res.Duration = time.Since(start)
	if res.Slurm != nil { // the queue's time is not the run's
		res.Duration -= res.Slurm.QueueWait
	}
	if job.Profiler != None || job.Timing {
		res.StepSamples, _ = files.Glob("steps-*.jsonl")
		if res.Processes, err = readProcesses(files); err != nil {
			return res, &Error{Job: job.Name, What: "left an unreadable rank report: " + err.Error(), Log: res.Log}
		}
	}
	if job.Timing {
		if res.Timing, err = readTimings(files); err != nil {
			return res, &Error{Job: job.Name, What: "left unreadable step times: " + err.Error(), Log: res.Log}
		}
		// Never a timing run of fewer ranks than the job had: the
		// slowest rank's steps are the job's.
		if miss := untimedRanks(res.Processes, res.Timing); len(res.Timing) > 0 && miss != "" {
			return res, &Error{Job: job.Name, What: miss, Log: res.Log}
		}
	}

	switch job.Profiler {
	case Torch:
		res.Traces, _ = files.Glob("trace-*.json")
		if len(res.Traces) == 0 {
			return res, &Error{Job: job.Name, What: fmt.Sprintf("wrote no torch.profiler trace: it ran %d optimizer steps, and the profiler needs 1 + warmup_steps (%d) + measure_steps (%d) of them; is it a PyTorch training loop calling optimizer.step()?", res.Steps, job.WarmupSteps, job.MeasureSteps), Log: res.Log}
		}
		// Never a run of fewer ranks than the job had: a rank that wrote
		// no trace would silently leave the comparison.
		if miss := missingRanks(res.Processes, res.Traces); miss != "" {
			return res, &Error{Job: job.Name, What: miss, Log: res.Log}
		}
	case Nsys:
		if job.Slurm != nil { // one report per task
			if err := slurmNsysReports(ctx, job, out, res); err != nil {
				return res, err
			}
			break
		}
		if reps, _ := files.Glob("report.nsys-rep"); len(reps) == 0 {
			return res, &Error{Job: job.Name, What: "ran under nsys but no report was written (see the log for nsys's messages)", Log: res.Log}
		}
		db, err := exportReport(ctx, job, files, "report.nsys-rep")
		if err != nil {
			return res, &Error{Job: job.Name, What: "report could not be exported to SQLite: " + err.Error(), Log: res.Log}
		}
		res.Traces = []string{db}
	}
	return res, nil
}

// inject sets up the profiler job.Profiler names (or the timing runs'
// step timer): what gpugate injects into the job's Python (PYTHONPATH and
// its variables, in env), and nsys's command line before args. cleanup
// removes what it made for the run alone (nsys's TMPDIR).
func inject(job *Job, out string, args, env []string) (_, _ []string, cleanup func(), err error) {
	cleanup = func() {}
	switch job.Profiler {
	case Torch:
		dir, err := prepare(out, "torch")
		if err != nil {
			return nil, nil, nil, err
		}
		env = append(env,
			"PYTHONPATH="+joinPath(dir, lookup(env, "PYTHONPATH")),
			"GPUGATE_TORCH_PROFILE=1",
			"GPUGATE_STEP_LOG=1",
			"GPUGATE_TRACE_OUT="+filepath.Join(out, "trace-{rank}.json"),
			"GPUGATE_STEP_SAMPLES="+filepath.Join(out, stepSamplesName),
			"GPUGATE_JOB_OUT="+filepath.Join(out, jobInfoName),
			fmt.Sprintf("GPUGATE_SCHEDULE=1,%d,%d", job.WarmupSteps, job.MeasureSteps))
		if job.FLOPs {
			env = append(env, "GPUGATE_FLOPS=1")
		}
	case Nsys:
		dir, err := prepare(out, "nvtx")
		if err != nil {
			return nil, nil, nil, err
		}
		// The target's own variables go through -e, so that nsys's own
		// Python tools do not load the injection.
		target := []string{"PYTHONPATH=" + joinPath(dir, lookup(env, "PYTHONPATH")), "GPUGATE_NVTX=1", "GPUGATE_STEP_LOG=1",
			"GPUGATE_STEP_SAMPLES=" + filepath.Join(out, stepSamplesName), "GPUGATE_JOB_OUT=" + filepath.Join(out, jobInfoName)}
		for _, t := range target {
			if strings.Contains(t, ",") {
				return nil, nil, nil, fmt.Errorf("nsys -e cannot pass %q: it contains a comma", t)
			}
		}
		nargs := []string{job.NsysPath, "profile", "--trace=" + job.NsysTrace, "--trace-fork-before-exec=true",
			"--force-overwrite=true", "--output=" + filepath.Join(out, reportName(*job)), "--env-var=" + strings.Join(target, ",")}
		if !job.GPU {
			nargs = append(nargs, "--sample=none", "--cpuctxsw=none")
		}
		nargs = append(nargs, job.NsysArgs...)
		args = append(nargs, args...)
		fmt.Fprintf(job.Output, "[%s] gpugate: nsys follows the job's child processes (--trace-fork-before-exec=true): a launcher's workers (torchrun) and DataLoader workers are traced in one report\n", job.Name)
		// nsys writes its temporary report in a folder of this run's own,
		// not in a /tmp shared with other runs. The folder's path must stay
		// short: the job's processes make Unix sockets in TMPDIR (a
		// DataLoader with workers shares tensors through one), and a socket
		// path is at most 107 bytes; beside a deep artifacts folder
		// (.../runs/demo/TIME-ID/run1/tmp/pymp-…/listener-…) the workers
		// failed with "AF_UNIX path too long" and the job hung until its
		// timeout.
		// Under /var/tmp itself, not $TMPDIR, which may be as deep (a test
		// harness's work folder was). nsys 2022.4 keeps its session files
		// under TMPDIR too (TMPDIR/nvidia/nsight_systems), so each run has
		// its own. Its "Agent launcher failed" inside the job's PID
		// namespace came from /dev/shm, not from here: the init gives the
		// job a /dev/shm of its own (isolate_linux.go, setupNS).
		tmp, err := os.MkdirTemp("/var/tmp", "gpugate-nsys-")
		if err != nil {
			if tmp, err = os.MkdirTemp("", "gpugate-nsys-"); err != nil {
				return nil, nil, nil, err
			}
		}
		cleanup = func() { os.RemoveAll(tmp) }
		env = append(env, "TMPDIR="+tmp)
		job.keep = append(job.keep, tmp)
	case None:
		if job.Timing {
			dir, err := prepare(out, "timing")
			if err != nil {
				return nil, nil, nil, err
			}
			env = append(env,
				"PYTHONPATH="+joinPath(dir, lookup(env, "PYTHONPATH")),
				"GPUGATE_TIMING=1",
				"GPUGATE_STEP_LOG=1",
				"GPUGATE_TIMING_OUT="+filepath.Join(out, timingName),
				"GPUGATE_JOB_OUT="+filepath.Join(out, jobInfoName),
				fmt.Sprintf("GPUGATE_SCHEDULE=1,%d,%d", job.WarmupSteps, job.MeasureSteps))
		}
	default:
		return nil, nil, nil, fmt.Errorf("unknown profiler %q", job.Profiler)
	}
	return args, env, cleanup, nil
}

// nsysAttempts is how often a job is started under nsys when nsys itself
// fails before the job made a step (nsysTransient). Under scripts/busy.sh
// beside another nsys loop (load 15–20 on 2 cores), 5 of 30 starts failed
// so, each within a second; at that rate five attempts all fail about once
// in 7,000 runs.
const nsysAttempts = 5

// nsysTransient says why the log of a job that failed under nsys shows a
// failure of nsys 2022.4 itself that another attempt can get past, "" when
// it does not. Seen on a busy 2-core machine (scripts/busy.sh), where one
// start in 6 to 10 failed within a second, before the target ran:
//
//   - the process waiter's sem_open of nsys_sem_<pid> fails with ENOENT:
//     nsys's agent opens the semaphore that its launcher creates for the
//     target (strace: the launcher makes /dev/shm/sem.nsys_sem_<pid>, the
//     agent opens it without O_CREAT), and on a busy machine the agent
//     can come first;
//   - "Connection reset by peer" inside nsys's own exception report (a
//     boost/QuadD exception): its launcher or agent went away while the
//     other talked to it.
//
// Only nsys's own exception reports count: a job that fails with
// "Connection reset by peer" of its own (a lost NCCL or gloo peer) is not
// retried, nor is any failure after the job's first step.
func nsysTransient(log string) string {
	b, err := safefile.ReadFile(log, maxLogFile)
	if err != nil {
		return ""
	}
	s := string(b)
	if !strings.Contains(s, "QuadDCommon::") && !strings.Contains(s, "boost::wrapexcept") {
		return ""
	}
	switch {
	case strings.Contains(s, "ProcessWaiter") && strings.Contains(s, "sem_open"):
		return "its process waiter's sem_open failed, a start-up race inside nsys"
	case strings.Contains(s, "Connection reset by peer"):
		return "Connection reset by peer between nsys's own processes"
	}
	return ""
}

func lookup(env []string, key string) string {
	v := ""
	for _, e := range env {
		if k, val, ok := strings.Cut(e, "="); ok && k == key {
			v = val
		}
	}
	return v
}

func joinPath(dir, rest string) string {
	if rest == "" {
		return dir
	}
	return dir + string(os.PathListSeparator) + rest
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// stepSamplesName is the step hook's samples file in the artifacts
// folder; the hook replaces {rank} with the process's RANK.
const stepSamplesName = "steps-{rank}.jsonl"

// stepLine is an injection's step line: "gpugate-step N", with " rank R"
// in a ranked process.
var stepLine = regexp.MustCompile(`^gpugate-step (\d+)(?: rank (\d+))?$`)

// tokenVar carries a random token into the job's environment, by which the
// processes it leaves behind are recognised.
const tokenVar = "GPUGATE_JOB_TOKEN"

// progressEvery is how often a progress line redrawn with \r is echoed.
const progressEvery = 10 * time.Second

// run starts args in its own process group and waits for it, streaming its
// output; on timeout or cancellation the whole group is killed, and
// whatever the job left behind (even in a session of its own) is killed
// when it ends.
func run(ctx context.Context, job Job, args, env []string, res *Result) error {
	// A new file: what a job of an earlier attempt left at the log's path
	// (a link to a file of the user's) is removed, never written through.
	os.Remove(res.Log)
	f, err := newfile.Create(res.Log)
	if err != nil {
		return err
	}
	logf := &capLog{f: f}
	defer logf.Close()
	becomeSubreaper()
	// What gpugate holds (its environment, its memory) is out of the
	// job's reach from here on; see notDumpable.
	if err := notDumpable(); err != nil {
		return fmt.Errorf("job %s: mark gpugate non-dumpable: %w", job.Name, err)
	}
	token := job.token
	if token == "" {
		token = escape.Token(16)
	}
	ji, err := isolateJob(job, res, token)
	if err != nil {
		return err
	}
	defer ji.done(job.Output, job.Name)
	for _, w := range res.IsolationWarnings {
		fmt.Fprintf(job.Output, "[%s] gpugate: WARNING: %s\n", job.Name, escape.Terminal(w))
	}
	cmd, envFile, err := ji.command(args, job.Dir, append(append(env, ji.env...), tokenVar+"="+token))
	if err != nil {
		return &Error{Job: job.Name, What: err.Error(), Log: res.Log}
	}
	if envFile != nil {
		defer envFile.Close()
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	var repR, repW *os.File
	if haveInit {
		if repR, repW, err = os.Pipe(); err != nil {
			pr.Close()
			pw.Close()
			return err
		}
		defer repR.Close()
		cmd.ExtraFiles = []*os.File{repW}
		if envFile != nil {
			cmd.ExtraFiles = append(cmd.ExtraFiles, envFile) // fd 4: jobEnvFD
		}
	}
	before := descendants()
	rssBefore := childrenMaxRSS()
	var hostStart, hostEnd hostReading
	if !job.Plain {
		hostStart = readHost()
	}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		if repW != nil {
			repW.Close()
		}
		return &Error{Job: job.Name, What: fmt.Sprintf("could not start %q: %v", args[0], err), Log: res.Log}
	}
	pw.Close()
	if repW != nil {
		repW.Close()
	}
	var sched *jobSched
	if !job.Plain && job.Slurm == nil { // Slurm: on each node (slurm.go)
		smi := StartSMI(ctx, SMIOptions{Path: job.SMIPath, JobPID: cmd.Process.Pid})
		sched = startJobSched(cmd.Process.Pid)
		defer func() {
			res.Conditions = smi.Stop()
			if !hostEnd.at.IsZero() {
				res.Conditions.Host = hostConditions(hostStart, hostEnd)
				if sched != nil {
					sched.fill(res.Conditions.Host)
				}
			}
		}()
	}
	start := time.Now()
	if job.StopCommands {
		defer escape.StopCommands(job.Output)()
	}
	fmt.Fprintf(job.Output, "[%s] gpugate: isolation: %s\n", job.Name, res.Isolation)

	out := &jobOutput{job: job, res: res, start: start, echo: &echoCap{w: job.Output}}
	sp := &splitter{emit: out.emit}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		// Blocks, not lines: no line is too long to read.
		io.Copy(io.MultiWriter(logf, sp), pr)
		sp.flush()
		out.flush()
	}()

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var timeout <-chan time.Time
	if job.Timeout > 0 {
		t := time.NewTimer(job.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var killed string
	select {
	case err = <-done:
	case <-timeout:
		killed = fmt.Sprintf("timed out after %s; its process group was killed", job.Timeout)
		err = killGroup(cmd.Process.Pid, done, job.KillGrace)
	case <-ctx.Done():
		killed = "was interrupted; its process group was killed"
		err = killGroup(cmd.Process.Pid, done, job.KillGrace)
	}
	// Whatever the job left in its group (a forgotten background worker)
	// or started in a session of its own (a setsid daemon) goes with it;
	// it would hold the pipe open and keep writing after gpugate is gone.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if job.afterExit != nil {
		job.afterExit()
	}
	var rep *initReport
	var repErr error
	if repR != nil {
		rep, repErr = readInitReport(repR)
	}
	if rep != nil {
		res.MaxRSSBytes = rep.MaxRSS
	} else if !haveInit {
		res.MaxRSSBytes = jobMaxRSS(cmd.ProcessState, rssBefore)
	}
	sweepLeftovers(job, res, rep, ji, cmd.Process.Pid, token, before)
	if !job.Plain {
		hostEnd = readHost()
		if sched != nil {
			sched.Stop()
		}
	}
	select {
	case <-copied:
	case <-time.After(2 * time.Second):
		pr.Close() // a process beyond reach still holds the pipe
		<-copied
	}
	pr.Close()
	tail := out.end(res.Log)
	switch {
	case killed != "":
		return &Error{Job: job.Name, What: killed, Log: res.Log, Tail: tail}
	case repErr != nil:
		return &Error{Job: job.Name, What: repErr.Error(), Log: res.Log, Tail: tail}
	case rep != nil && rep.Err != "":
		return &Error{Job: job.Name, What: rep.Err, Log: res.Log, Tail: tail}
	case rep != nil && (rep.Exit != 0 || rep.Signal != 0):
		return &Error{Job: job.Name, What: "failed: " + rep.status(), Log: res.Log, Tail: tail}
	case err != nil:
		var ee *exec.ExitError
		what := err.Error()
		if errors.As(err, &ee) {
			what = "failed: " + ee.ProcessState.String()
		}
		return &Error{Job: job.Name, What: what, Log: res.Log, Tail: tail}
	case out.lines == 0 && !job.Plain:
		return &Error{Job: job.Name, What: "exited without printing anything: is the command right?", Log: res.Log}
	}
	return nil
}

// sweepLeftovers ends what the job left running that its init's sweep
// (rep) did not (a cgroup's processes, what escaped an init that was
// killed), notes in res how many ended and names a few, and says so on
// the job's output.
func sweepLeftovers(job Job, res *Result, rep *initReport, ji *jobIsolation, pid int, token string, before map[int]bool) {
	if rep != nil {
		res.Killed, res.Ended = rep.Killed, rep.Ended
	}
	more := func(k []string) {
		res.Ended += len(k)
		res.Killed = append(res.Killed, k...)
	}
	more(ji.killCgroup())
	// The init's sweep came first; this one finds what escaped an init
	// that was killed (and, elsewhere than Linux, everything).
	more(killLeftovers(pid, token, before))
	if len(res.Killed) > maxNamed {
		res.Killed = res.Killed[:maxNamed]
	}
	if res.Ended == 0 {
		return
	}
	others := ""
	if n := res.Ended - len(res.Killed); n > 0 {
		others = fmt.Sprintf(" and %d more", n)
	}
	took := ""
	if rep != nil && rep.Ended > 0 {
		took = fmt.Sprintf(" (its init's sweep took %.1fs)", float64(rep.SweepMS)/1000)
	}
	fmt.Fprintf(job.Output, "[%s] gpugate: killed %d process(es) the job left running: %s%s%s\n", job.Name, res.Ended, strings.Join(res.Killed, ", "), others, took)
}

// clipLine is a line of output as echoed: cut to maxEcho characters, with
// control characters shown as escapes and the bytes left out counted.
func clipLine(line string, dropped int) string {
	if r := []rune(line); len(r) > maxEcho {
		dropped += len(string(r[maxEcho:]))
		line = string(r[:maxEcho])
	}
	line = escape.Terminal(line)
	if dropped > 0 {
		line += fmt.Sprintf(" … (%d more bytes)", dropped)
	}
	return line
}

// chatter reports whether an output line comes from gpugate's injection or
// from nsys rather than from the job.
func chatter(line string) bool {
	for _, p := range []string{"[gpugate ", "Generating '", "Generated:", "Collecting data", "WARNING: CPU", "Processing events"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return strings.HasPrefix(line, "    /") || strings.HasPrefix(line, "[1/")
}

// jobCommand is the command that starts the job: through the init
// (isolate_linux.go) where there is one. A bare name is looked up on
// gpugate's PATH, as exec.Command does.
func jobCommand(args []string, spec initSpec) (*exec.Cmd, error) {
	path := args[0]
	if !strings.Contains(path, "/") {
		p, err := exec.LookPath(path)
		if err != nil {
			return nil, fmt.Errorf("could not start %q: %v", args[0], err)
		}
		path = p
	}
	if !haveInit {
		cmd := exec.Command(path, args[1:]...)
		cmd.Args[0] = args[0]
		return cmd, nil
	}
	cmd := exec.Command(selfExe) // the running binary, never a path the job can write (isolate_linux.go)
	cmd.Args = initArgs(spec, path, args)
	return cmd, nil
}

// killGroup sends SIGTERM to the process group, then SIGKILL after grace.
func killGroup(pgid int, done <-chan error, grace time.Duration) error {
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case err := <-done:
		syscall.Kill(-pgid, syscall.SIGKILL) // stragglers that ignored SIGTERM
		return err
	case <-time.After(grace):
		syscall.Kill(-pgid, syscall.SIGKILL)
		return <-done
	}
}

// NewRunDir creates a new artifacts folder for a run of workload under
// root: root/WORKLOAD/TIME-RANDOM, made with os.Mkdir, so that two runs
// started in the same second never share one (and one never records the
// other's traces). workload must be a single path element.
func NewRunDir(root, workload string, now time.Time) (string, error) {
	if workload == "" || workload == "." || workload == ".." || strings.ContainsAny(workload, `/\`+"\x00") {
		return "", fmt.Errorf("artifacts folder for workload %q: not a single folder name", workload)
	}
	parent := filepath.Join(root, workload)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	for range 16 {
		dir := filepath.Join(parent, now.UTC().Format("20060102T150405Z")+"-"+escape.Token(4))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("artifacts folder under %s: no free name", parent)
}
