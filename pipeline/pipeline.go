// Package pipeline is what gpugate run, ab, action and baseline refresh
// share: run the workload under its profiler and analyze it (Execute), pick
// the baseline runs it is compared with (SelectBaseline), compare (Compare)
// and store the runs (Record). Run does all of it in order. The commands
// keep their flags and exit codes; everything between lives here, so that
// each step can be tested without a command line.
package pipeline

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/ci"
	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/internal/newfile"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/runner"
	"github.com/gpugate/gpugate/trace"
	"github.com/gpugate/gpugate/trace/load"
	"github.com/gpugate/gpugate/trace/nsys"
)

// Options configure a pipeline run.
type Options struct {
	Config   *config.Config
	Workload *config.Workload
	// Out is the artifacts folder; default .gpugate/runs/WORKLOAD/TIME.
	Out string
	// DB is the baseline store; default Config.Baseline.DB.
	DB string
	// Record stores the runs as baselines of Branch instead of comparing.
	Record bool
	// ReadOnly opens the store read-only (baseline.OpenReadOnly): the run
	// is compared, not recorded. For runs of untrusted code (a pull
	// request's), so that they cannot write the baselines others gate on.
	ReadOnly bool
	// Nsys is the nsys binary ("" finds it on PATH).
	Nsys string
	// NCU is the ncu binary for perf.yaml's deep_dive ("" finds it).
	NCU string
	// Dir overrides the folder the workload runs in (the workdir of the
	// config is relative to it); default the config file's folder. A/B
	// mode runs the base side in a worktree this way.
	Dir string
	// Branch and Commit describe the code that runs (GitInfo); Branch ""
	// means Config.Baseline.Branch, and "HEAD" or Detached a checkout
	// whose branch nobody could tell: compared, never recorded as a
	// baseline.
	Branch, Commit string
	// MergeBase is the commit whose ancestors' runs are the baseline; ""
	// asks git for the merge-base of HEAD and the base branch when Branch
	// is not the base branch.
	MergeBase string
	// Version is gpugate's version, stored with each run.
	Version string
	// Stdout gets the short results of unprofiled runs; Log gets progress
	// and the job's output. Nil discards.
	Stdout, Log io.Writer
}

func (o *Options) defaults() {
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.DB == "" {
		o.DB = o.Config.Baseline.DB
	}
	if o.Dir == "" {
		o.Dir = filepath.Dir(o.Config.File)
	}
}

// Outcome is what a pipeline run produced.
type Outcome struct {
	Workload   string
	Report     *gate.Report
	Base, Cand []gate.Run
	// BaseTiming and CandTiming are the two sides' timing runs
	// (timing.go), whose step times the gate judged (Report.Timing).
	BaseTiming, CandTiming []gate.TimingRun
	Fingerprint            runner.Fingerprint
	// Baseline describes what was compared with, for people.
	Baseline string
	// Err is set when the outcome is not a verdict (fingerprint mismatch
	// under lenient settings; no baseline with baseline.on_missing: fail):
	// the report says why, the exit status is 2.
	Err error
	// RecordCommand is set with verdict no-baseline: the command that
	// records a baseline.
	RecordCommand string
	// BaseStep is the median step of a stored baseline run (the newest
	// that has one), for step.svg: stored runs keep no trace.
	BaseStep *report.StepTimeline
	// Out is the artifacts folder of the runs (gpugate run writes
	// report.md and report.json there); "" for A/B.
	Out string
}

// Execution is the runs of a workload, analyzed.
type Execution struct {
	Workload    string
	Profiler    string
	Fingerprint runner.Fingerprint
	// Runs are the analyzed runs and Docs their analyze JSON, in order.
	Runs []gate.Run
	Docs [][]byte
	// Overhead is the unprofiled timing pass's measure of the profiler's
	// cost; nil without step_log.
	Overhead *gate.Overhead
	// StepTimes are the job's own logged step times (ms) over all runs.
	StepTimes []float64
	// Out is the artifacts folder; RunIDs are the ids Record gave the
	// runs in the store. The deep-dive writes beside and stores with them.
	Out    string
	RunIDs []int64
	// Conditions are each run's run conditions, in the order of Runs.
	Conditions []*runcond.Conditions
	// Made is when each run was done (its job ended and its traces were
	// analyzed), in the order of Runs: the store's created time of each,
	// so that the runs of one refresh do not share one.
	Made []time.Time
	// Start is when the first run started; RunTime the wall time of the
	// profiled runs (each: the job, its analysis, its record), for repeat:
	// auto's budget.
	Start   time.Time
	RunTime time.Duration
	// Isolation is how the first run's job was isolated; IsolationWarnings
	// what any run's isolation could not do (runner.Result), for the
	// report.
	Isolation         string
	IsolationWarnings []string
	// Spent counts every run of the job this check made (the profiled
	// ones, the timing runs or the unprofiled pass, ncu's) and their wall
	// time: its cost.
	Spent Tally
	// Timed says that timing runs were asked for (timing.go): step time
	// is judged on Timing, or, when TimingWhy says why there are none, on
	// the profiled runs.
	Timed     bool
	Timing    []gate.TimingRun
	TimingWhy string
	// timingWall is each timing run's wall time, in the order of Timing.
	timingWall []time.Duration
	// timingStored is how many of Timing Record stored (timingOf);
	// timingIDs the store id of the run each of them was stored with.
	timingStored int
	timingIDs    []int64
}

// Tally counts job runs and their wall time, for a report's Cost.
type Tally struct {
	Runs int
	Wall time.Duration
}

// Add counts one run that took d; a nil Tally counts nothing.
func (t *Tally) Add(d time.Duration) {
	if t != nil {
		t.Runs++
		t.Wall += d
	}
}

// Cost is the tally as a report's cost on a machine of gpus GPUs; nil
// when no run was made.
func (t Tally) Cost(gpus int) *gate.Cost {
	if t.Runs == 0 {
		return nil
	}
	s := t.Wall.Seconds()
	return &gate.Cost{Runs: t.Runs, WallSeconds: s, GPUs: gpus, GPUSeconds: s * float64(gpus)}
}

// add appends one run that took wall time took.
func (ex *Execution) add(once *Once, took time.Duration) {
	ex.StepTimes = append(ex.StepTimes, once.StepTimes...)
	ex.RunTime += took
	ex.noteIsolation(once)
	if took > 0 { // repeat: auto's runs count their own (auto.go)
		ex.Spent.Add(took)
	}
	if once.Run == nil {
		return
	}
	ex.Runs = append(ex.Runs, once.Run)
	ex.Docs = append(ex.Docs, once.Doc)
	ex.Conditions = append(ex.Conditions, once.Conditions)
	ex.Made = append(ex.Made, time.Now())
}

// noteIsolation keeps the first run's isolation and every run's warnings.
func (ex *Execution) noteIsolation(once *Once) {
	if ex.Isolation == "" {
		ex.Isolation = once.Isolation
	}
	for _, w := range once.IsolationWarnings {
		if !slices.Contains(ex.IsolationWarnings, w) {
			ex.IsolationWarnings = append(ex.IsolationWarnings, w)
		}
	}
}

// Plan is a workload made ready to run: profiler resolved, fingerprint
// taken. RunOnce runs it; Execute runs it Repeat times.
type Plan struct {
	o        Options
	name     string // the job's name in its log lines
	Profiler string
	FP       runner.Fingerprint
	gpu      bool
	nsysBin  string
	workdir  string
	stepLog  *regexp.Regexp
	aopt     analysis.Options
	// fpFallback says where FP's versions come from until a run's
	// training process reports its own (ranks.go), and fpLogged that
	// the source was logged.
	fpFallback string
	fpLogged   bool
	// job, when set, stands in for running the job and analyzing its
	// traces: the tests of the stopping rules (sequential_test.go) drive
	// sampleRuns and ab's loop with a simulated job whose noise they
	// control, thousands of times.
	job func(ctx context.Context, out string) (*Once, error)
	// timingJob stands in for a timing run, as job for a profiled one.
	timingJob func(ctx context.Context, out string) (*Once, error)
}

// Prepare resolves the workload's profiler and takes the machine's
// fingerprint.
func Prepare(ctx context.Context, o Options) (*Plan, error) {
	o.defaults()
	w := o.Workload
	p := &Plan{o: o, name: w.Name, Profiler: w.Profiler, gpu: runner.HasGPU(ctx)}
	if b, err := nsys.FindCLI(o.Nsys); err == nil {
		p.nsysBin = b
	}
	if p.Profiler == "auto" {
		p.Profiler = runner.Torch
		if p.gpu && p.nsysBin != "" {
			p.Profiler = runner.Nsys
		}
	}
	if p.Profiler == runner.Nsys && p.nsysBin == "" {
		return nil, fmt.Errorf("workload %s: profiler nsys, but nsys is not installed (scripts/setup-profilers.sh installs it; or set -nsys)", w.Name)
	}
	p.workdir = w.Workdir
	if p.workdir == "" {
		p.workdir = "."
	}
	if !filepath.IsAbs(p.workdir) {
		p.workdir = filepath.Join(o.Dir, p.workdir)
	}
	if w.StepLog != "" {
		p.stepLog = regexp.MustCompile(w.StepLog) // validated by config
	}
	if w.StepPattern != "" {
		p.aopt.StepPattern = regexp.MustCompile(w.StepPattern)
	}
	if w.DataPattern != "" {
		p.aopt.DataPattern = regexp.MustCompile(w.DataPattern)
	}
	if w.CommPattern != "" {
		p.aopt.CommPattern = regexp.MustCompile(w.CommPattern) // validated by config
	}
	if p.Profiler == runner.Nsys {
		// NVTX marks every step of the run; torch.profiler's schedule
		// already leaves out the warm-up.
		p.aopt.FirstStep, p.aopt.MaxSteps = w.WarmupSteps, w.MeasureSteps
	}
	python := ""
	if args := w.Command.Args(); len(args) > 0 && strings.HasPrefix(filepath.Base(args[0]), "python") {
		python = args[0]
	}
	p.FP = runner.TakeFingerprint(ctx, python, p.nsysBin, p.Profiler)
	p.fpFallback = fmt.Sprintf("torch %s, CUDA %s, Python %s, probed with %s -c (fallback: no training process reported its own)", p.FP.Torch, p.FP.CUDA, p.FP.Python, python)
	if python == "" {
		p.fpFallback = "none: the command does not start with python, and no training process reported its own (profiler none, or no optimizer step)"
	}
	p.aopt.Work = analysis.Work{SamplesPerStep: w.SamplesPerStep, TokensPerStep: w.TokensPerStep, MFUDtype: w.MFUDtype, Device: p.FP.GPU}
	return p, nil
}

// Once is one run of a plan.
type Once struct {
	Run       gate.Run // nil for profiler none
	Doc       []byte   // analyze JSON; nil for profiler none
	StepTimes []float64
	Duration  time.Duration
	// Conditions are what nvidia-smi saw while the job ran.
	Conditions *runcond.Conditions
	// MaxRSSBytes is the job's peak resident memory (runner.Result).
	MaxRSSBytes int64
	// Isolation and IsolationWarnings are runner.Result's.
	Isolation         string
	IsolationWarnings []string
	// Timing is a timing run's timed steps (RunTiming); nil, with
	// TimingWhy saying why, when it timed none.
	Timing    *gate.TimingRun
	TimingWhy string
}

// RunOnce runs the job once, its artifacts in out, and analyzes its traces.
func (p *Plan) RunOnce(ctx context.Context, out string) (*Once, error) {
	if p.job != nil {
		return p.job(ctx, out)
	}
	w := p.o.Workload
	res, err := runner.Run(ctx, runner.Job{
		Name: p.name, Args: w.Command.Args(), Dir: p.workdir, Env: w.Env, Timeout: time.Duration(w.Timeout),
		Profiler: p.Profiler, WarmupSteps: w.WarmupSteps, MeasureSteps: w.MeasureSteps, Out: out,
		NsysPath: p.nsysBin, NsysTrace: w.Nsys.Trace, NsysArgs: w.Nsys.ExtraArgs, GPU: p.gpu, StepLog: p.stepLog, Output: p.o.Log, StopCommands: inActions(),
		FLOPs: w.FLOPs, Slurm: p.slurmJob(), Network: w.Network,
	})
	if err != nil {
		return nil, err
	}
	sj, err := p.fromSlurm(res) // slurm.go
	if err != nil {
		return nil, err
	}
	once := &Once{StepTimes: res.StepTimes, Duration: res.Duration, Conditions: res.Conditions, MaxRSSBytes: res.MaxRSSBytes,
		Isolation: res.Isolation, IsolationWarnings: res.IsolationWarnings}
	writeConditions(out, res.Conditions)
	if p.Profiler == runner.None {
		if len(res.StepTimes) == 0 {
			return nil, fmt.Errorf("workload %s: profiler none needs step_log, a regular expression whose first group is the step time in ms in the job's output", w.Name)
		}
		return once, nil
	}
	// The traces are the job's files: opened through the folder the
	// runner opened before the job (never a link, never a FIFO, capped).
	results, err := AnalyzeFiles(ctx, res.Traces, p.aopt, load.Options{Nsys: p.nsysBin, Open: res.Files.Open})
	if err != nil {
		return nil, err
	}
	if err := p.fromJob(res, results); err != nil {
		return nil, err
	}
	if err := gate.CheckRun(results); err != nil {
		return nil, fmt.Errorf("workload %s: %w", w.Name, err)
	}
	ws, err := joinStepSamples(results, res.Files, res.StepSamples) // memory.go
	if err != nil {
		return nil, fmt.Errorf("workload %s: %w", w.Name, err)
	}
	if len(ws) > 0 && len(results) > 0 {
		results[0].Warnings = append(results[0].Warnings, ws...)
	}
	doc := report.NewStoredAnalysis(results)
	doc.Job = &report.Job{MaxRSSBytes: res.MaxRSSBytes, Slurm: sj, WallSeconds: res.Duration.Seconds(), GPUs: p.FP.GPUCount}
	if sj != nil && sj.RunMs > 0 {
		// Under Slurm the wall time holds the queue wait: the run's cost
		// is its own time.
		doc.Job.WallSeconds = sj.RunMs / 1000
	}
	var buf bytes.Buffer
	if err := doc.WriteJSON(&buf); err != nil {
		return nil, err
	}
	newfile.Replace(filepath.Join(out, "analysis.json"), buf.Bytes()) // the job's folder: never through what it left there
	once.Run, once.Doc = results, buf.Bytes()
	return once, nil
}

// inActions reports whether gpugate runs as a GitHub Actions step, where
// the job's echoed output is fenced with ::stop-commands:: so that it
// cannot issue workflow commands.
func inActions() bool { return ci.Detect(os.Getenv).CI == ci.GitHub }

// Execute runs the workload Repeat times, profiled, each run followed by a
// timing run (timing.go; with profiler_timing, once more unprofiled when
// it has a step_log instead), and analyzes every run.
func Execute(ctx context.Context, o Options) (*Execution, error) {
	p, err := Prepare(ctx, o)
	if err != nil {
		return nil, err
	}
	return p.Execute(ctx)
}

// Execute runs the plan Repeat times; see the package function.
func (p *Plan) Execute(ctx context.Context) (*Execution, error) {
	o, w := p.o, p.o.Workload
	if o.Out == "" {
		// A folder of its own, even for two runs started in the same second.
		out, err := runner.NewRunDir(filepath.Join(".gpugate", "runs"), w.Name, time.Now())
		if err != nil {
			return nil, err
		}
		o.Out = out
	}
	fmt.Fprintf(o.Log, "gpugate: running %s with profiler %s (%s, %d× %s); artifacts in %s\n", w.Name, p.Profiler, escape.Terminal(p.FP.CPU), p.FP.GPUCount, escape.Terminal(p.FP.GPU), escape.Terminal(o.Out))
	ex := &Execution{Workload: w.Name, Profiler: p.Profiler, Fingerprint: p.FP, Out: o.Out, Start: time.Now(), Timed: p.timing()}
	// repeat: auto runs once here and again in judge until decided; a
	// baseline recorded with it gets baseline.runs runs.
	n, of := p.planned()
	var passes [][]float64 // each profiled pass's step times, for the overhead
	for i := 1; i <= n; i++ {
		start := time.Now()
		once, err := p.RunOnce(ctx, p.runDir(o.Out, i))
		if err != nil {
			return nil, err
		}
		passes = append(passes, once.StepTimes)
		ex.add(once, time.Since(start))
		if once.Run == nil {
			fmt.Fprintf(o.Stdout, "%s: %d steps, median %.2f ms (unprofiled, from the job's log)\n", w.Name, len(once.StepTimes), analysis.Summarize(once.StepTimes).Median)
			continue
		}
		ex.Fingerprint = p.FP // with the versions the job reported (ranks.go)
		p.logRun(once, i, of)
		if p.timingOn(ex) {
			took, err := p.timeOnce(ctx, ex, i)
			if err != nil {
				return nil, err
			}
			ex.RunTime += took
		}
	}
	if p.timing() {
		if ex.Overhead = timingOverhead(HostMargins(o.Config), ex.Runs, ex.Conditions, ex.Timing); ex.Overhead != nil {
			fmt.Fprintf(o.Log, "gpugate: profiling overhead %s\n", report.OverheadText(ex.Overhead))
		}
		return ex, nil
	}
	if p.Profiler == runner.None || p.stepLog == nil || len(ex.StepTimes) == 0 {
		return ex, nil
	}
	// The unprofiled timing pass: the same job, the same environment, no
	// profiler; the job's own log gives both sides' step times.
	res, err := runner.Run(ctx, runner.Job{
		Name: w.Name + "-unprofiled", Args: w.Command.Args(), Dir: p.workdir, Env: w.Env, Timeout: time.Duration(w.Timeout),
		Profiler: runner.None, Out: filepath.Join(o.Out, "unprofiled"), StepLog: p.stepLog, Output: o.Log, StopCommands: inActions(), Network: w.Network,
	})
	if err != nil {
		return nil, err
	}
	ex.Spent.Add(res.Duration)
	if ex.Overhead = gate.NewOverhead(passes, res.StepTimes); ex.Overhead != nil {
		fmt.Fprintf(o.Log, "gpugate: profiling overhead %s (from the job's log)\n", report.OverheadText(ex.Overhead))
	}
	return ex, nil
}

// planned is how many runs Execute makes, and how the log counts them
// ("3", or "up to 5 (repeat: auto)").
func (p *Plan) planned() (int, string) {
	w := p.o.Workload
	switch {
	case !w.Repeat.Auto():
		return int(w.Repeat), fmt.Sprint(int(w.Repeat))
	case p.o.Record:
		return p.o.Config.Baseline.Runs, fmt.Sprint(p.o.Config.Baseline.Runs)
	}
	return 1, fmt.Sprintf("up to %d (repeat: auto)", w.MaxRuns)
}

// runDir is run i's artifacts folder: out itself for a single run, runN
// when there are several or may be (repeat: auto).
func (p *Plan) runDir(out string, i int) string {
	if w := p.o.Workload; w.Repeat == 1 {
		return out
	}
	return filepath.Join(out, fmt.Sprintf("run%d", i))
}

func (p *Plan) logRun(once *Once, i int, of string) {
	rss := ""
	if once.MaxRSSBytes > 0 {
		rss = fmt.Sprintf(", peak resident memory %.0f MiB", float64(once.MaxRSSBytes)/(1<<20))
	}
	fmt.Fprintf(p.o.Log, "gpugate: run %d/%s of %s: %d steps analyzed in %.1fs%s\n", i, of, p.o.Workload.Name, len(once.Run[0].Steps), once.Duration.Seconds(), rss)
}

// AnalyzeFiles reads the traces (the ranks of one run) and analyzes each
// profile in them, on all cores.
func AnalyzeFiles(ctx context.Context, paths []string, opt analysis.Options, lo load.Options) ([]*analysis.Result, error) {
	// The nsys reader keeps only the NVTX ranges that these patterns name
	// (and those around syncs and idle gaps), not millions of op ranges.
	lo.RangeNames = []*regexp.Regexp{
		cmp.Or(opt.StepPattern, analysis.DefaultStepPattern),
		cmp.Or(opt.DataPattern, analysis.DefaultDataPattern),
		cmp.Or(opt.SyncProxyPattern, analysis.DefaultSyncProxyPattern),
	}
	lo.RangeNames = append(lo.RangeNames, analysis.InferencePatterns()...)
	var profiles []*trace.Profile
	for _, path := range paths {
		ps, err := load.File(ctx, path, lo)
		if err != nil {
			return nil, fmt.Errorf("read trace %w", trace.WithPath(err, path))
		}
		profiles = append(profiles, ps...)
	}
	results := make([]*analysis.Result, len(profiles))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, p := range profiles {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = analysis.Analyze(p, opt)
		})
	}
	wg.Wait()
	return results, nil
}

// Fingerprint is the fingerprint a run of w on this machine has, as
// Prepare takes it, for the given profiler (runner.Torch, runner.Nsys).
func Fingerprint(ctx context.Context, w *config.Workload, nsysPath, profiler string) runner.Fingerprint {
	nsysBin := ""
	if b, err := nsys.FindCLI(nsysPath); err == nil {
		nsysBin = b
	}
	python := ""
	if w != nil {
		if args := w.Command.Args(); len(args) > 0 && strings.HasPrefix(filepath.Base(args[0]), "python") {
			python = args[0]
		}
	}
	return runner.TakeFingerprint(ctx, python, nsysBin, profiler)
}

// TraceFingerprint is the fingerprint of a run whose traces were profiled
// outside gpugate run (gpugate baseline record): this machine's facts as a
// run of w would take them, the profiler the traces' format implies, and
// the GPU model and count the traces name when they differ from this
// machine's. Traces of a gpugate run on this machine get the very
// fingerprint of that run, so that recorded baselines gate.
func TraceFingerprint(ctx context.Context, w *config.Workload, nsysPath string, results []*analysis.Result) runner.Fingerprint {
	profiler := runner.Torch
	if len(results) > 0 && results[0].Profile.Format == trace.FormatNsys {
		profiler = runner.Nsys
	}
	fp := Fingerprint(ctx, w, nsysPath, profiler)
	names := map[string]bool{}
	devices := map[int]bool{}
	first := ""
	for _, r := range results {
		for _, d := range r.Profile.Devices {
			if first == "" {
				first = d.Name
			}
			names[d.Name] = true
			devices[d.ID] = true
		}
	}
	if first != "" && !names[fp.GPU] {
		fp.GPU, fp.GPUCount = first, len(devices)
	}
	return fp
}
