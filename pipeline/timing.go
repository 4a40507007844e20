package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/runner"
	"github.com/gpugate/gpugate/stats"
)

// Timing runs and explaining runs (docs/verdicts.md §5d). Step time is
// judged on timing runs: the same job, the same environment, no profiler,
// its steps timed by gpugate's step hook at the optimizer step (CUDA
// events on a GPU, the host's clock otherwise; the job's step_log when
// the hook timed nothing). Counts and the explanation come from the
// profiled runs, which repeat: auto and ab make only while a metric
// judged on them is undecided.

// timing reports whether the plan makes timing runs: unless perf.yaml
// asks for profiler_timing, or for profiler none (every run is
// unprofiled). Under Slurm the timing run is a job step as the profiled
// run is, each task timing its rank.
func (p *Plan) timing() bool {
	w := p.o.Workload
	if p.job != nil && p.timingJob == nil {
		return false // a simulated job without simulated timing runs
	}
	return p.Profiler != runner.None && !w.ProfilerTiming
}

// RunTiming runs the job once as a timing run, its artifacts in out.
// Once.Timing is nil, and Once.TimingWhy says why, when neither the step
// hook nor the step_log timed a step.
func (p *Plan) RunTiming(ctx context.Context, out string) (*Once, error) {
	if p.timingJob != nil {
		return p.timingJob(ctx, out)
	}
	w := p.o.Workload
	res, err := runner.Run(ctx, runner.Job{
		Name: p.name + " timing", Args: w.Command.Args(), Dir: p.workdir, Env: w.Env, Timeout: time.Duration(w.Timeout),
		Profiler: runner.None, Timing: true, WarmupSteps: w.WarmupSteps, MeasureSteps: w.MeasureSteps, Out: out,
		GPU: p.gpu, StepLog: p.stepLog, Output: p.o.Log, StopCommands: inActions(), Slurm: p.slurmJob(), Network: w.Network,
	})
	if err != nil {
		return nil, err
	}
	writeConditions(out, res.Conditions)
	once := &Once{StepTimes: res.StepTimes, Duration: res.Duration, Conditions: res.Conditions, MaxRSSBytes: res.MaxRSSBytes,
		Isolation: res.Isolation, IsolationWarnings: res.IsolationWarnings}
	once.Timing, once.TimingWhy = timingRun(res, w.WarmupSteps, w.MeasureSteps)
	if once.Timing != nil {
		if err := gate.CheckTimingRuns([]gate.TimingRun{*once.Timing}); err != nil {
			// A step_log line of 0.00 ms: the job's own numbers, not a
			// step time to judge.
			once.Timing, once.TimingWhy = nil, fmt.Sprintf("the timing run's step times (by %s) cannot be judged: %v", once.Timing.Clock, err)
			return once, nil
		}
		once.Timing.Conditions = res.Conditions
	}
	return once, nil
}

// timingRun makes a timing run of a runner result: the ranks' timed steps,
// each step the slowest rank's; else the step_log's steps of the window a
// profiled run measures.
func timingRun(res *runner.Result, warmup, measure int) (*gate.TimingRun, string) {
	if len(res.Timing) > 0 {
		n := len(res.Timing[0].StepMs)
		var cl []string
		for _, t := range res.Timing {
			n = min(n, len(t.StepMs))
			if !slices.Contains(cl, t.Clock) {
				cl = append(cl, t.Clock)
			}
		}
		tr := &gate.TimingRun{Ranks: len(res.Timing), Clock: cl[0], StepMs: make([]float64, n)}
		if len(cl) > 1 { // some ranks on CUDA, some not
			tr.Clock = "mixed"
		}
		sched := true
		for _, t := range res.Timing {
			sched = sched && t.WaitMs != nil && t.CPUMs != nil
		}
		if sched {
			tr.WaitMs, tr.CPUMs = make([]float64, n), make([]float64, n)
		}
		for i := range tr.StepMs {
			left := math.Inf(-1) // the largest of the ranks' step less its wait
			for _, t := range res.Timing {
				tr.StepMs[i] = max(tr.StepMs[i], t.StepMs[i])
				if sched {
					left = max(left, t.StepMs[i]-t.WaitMs[i])
					tr.CPUMs[i] += t.CPUMs[i]
				}
			}
			if sched {
				tr.WaitMs[i] = tr.StepMs[i] - left
			}
		}
		return tr, ""
	}
	if xs := res.StepTimes; len(xs) > 1+warmup {
		// The steps a profiled run measures: after the first and the
		// warm-up ones, never a cold step instead.
		lo := 1 + warmup
		hi := min(lo+measure, len(xs))
		return &gate.TimingRun{Ranks: 1, Clock: runner.ClockStepLog, StepMs: slices.Clone(xs[lo:hi])}, ""
	}
	return nil, fmt.Sprintf("the timing run timed no step: gpugate's step hook saw %d optimizer step(s) and step_log matched %d line(s) (timing needs 1 + warmup_steps + 1 optimizer steps of a PyTorch job, or as many step_log lines)", res.Steps, len(res.StepTimes))
}

// timeOnce makes timing run i of ex (in run i's folder, timing/) and keeps
// it; after a timing run that timed nothing, ex makes no more (TimingWhy)
// and step time comes from the profiled runs. It returns the run's wall
// time.
func (p *Plan) timeOnce(ctx context.Context, ex *Execution, i int) (time.Duration, error) {
	start := time.Now()
	once, err := p.RunTiming(ctx, filepath.Join(p.runDir(ex.Out, i), "timing"))
	if err != nil {
		return 0, fmt.Errorf("timing run %d: %w", i, err)
	}
	took := time.Since(start)
	ex.Spent.Add(took)
	ex.noteIsolation(once)
	if once.Timing == nil {
		ex.Timing, ex.timingWall, ex.TimingWhy = nil, nil, once.TimingWhy
		fmt.Fprintf(p.o.Log, "gpugate: warning: %s; step time is judged on the profiled runs\n", once.TimingWhy)
		return took, nil
	}
	ex.Timing = append(ex.Timing, *once.Timing)
	ex.timingWall = append(ex.timingWall, took)
	s := analysis.Summarize(once.Timing.StepMs)
	fmt.Fprintf(p.o.Log, "gpugate: timing run %d of %s: %d steps, median %.2f ms (no profiler, timed by %s) in %.1fs\n",
		i, p.o.Workload.Name, len(once.Timing.StepMs), s.Median, escape.Terminal(once.Timing.Clock), once.Duration.Seconds())
	return took, nil
}

// timingOn reports whether ex is still making timing runs.
func (p *Plan) timingOn(ex *Execution) bool { return p.timing() && ex.TimingWhy == "" }

// timingOptions are the timing runs gate.Compare judges step time on; nil
// when the candidate was not timed by choice (profiler_timing, profiler
// none), so that both sides' step time is the profiled runs'.
func timingOptions(m gate.HostMargins, base []gate.TimingRun, ex *Execution) *gate.TimingRuns {
	if !ex.Timed {
		return nil
	}
	return &gate.TimingRuns{Base: base, Cand: ex.Timing, Margins: m, Why: ex.TimingWhy}
}

// timingOverhead is the profiler's cost: the profiled runs' step times
// (from their traces) against the timing runs'; nil without both. conds
// are the profiled runs' run conditions, in order. Runs of either kind on
// a busy host (gate.HostBusy under m) are left out where quiet ones of that
// kind remain; where none does, every run is compared and the figure says
// it comes from disturbed runs (gate.Overhead.Disturbed).
func timingOverhead(m gate.HostMargins, runs []gate.Run, conds []*runcond.Conditions, timing []gate.TimingRun) *gate.Overhead {
	st, _ := analysis.MetricByName("step_time")
	var tconds []*runcond.Conditions
	for _, t := range timing {
		tconds = append(tconds, t.Conditions)
	}
	dp, dt := gate.Disturbances(conds, m), gate.Disturbances(tconds, m)
	quietRuns, quietTiming := quietOf(runs, dp), quietOf(timing, dt)
	var why []string
	if len(quietRuns) > 0 {
		runs = quietRuns
	} else if len(gate.Busy(dp)) > 0 {
		why = append(why, "every profiled run was disturbed")
	}
	if len(quietTiming) > 0 {
		timing = quietTiming
	} else if len(gate.Busy(dt)) > 0 {
		why = append(why, "every timing run was disturbed")
	}
	var timed []float64
	for _, t := range timing {
		timed = append(timed, t.StepMs...)
	}
	o := gate.NewOverhead(gate.Samples(runs, st), timed)
	if o != nil {
		o.Source = "the profiled runs' traces against the timing runs"
		o.Disturbed = strings.Join(why, ", ")
	}
	return o
}

// quietOf returns the xs whose disturbance (by index; "" or absent: quiet)
// is empty.
func quietOf[T any](xs []T, disturbed []string) []T {
	var out []T
	for i, x := range xs {
		if i >= len(disturbed) || disturbed[i] == "" {
			out = append(out, x)
		}
	}
	return out
}

// needsProfiles reports whether another profiled run could help: a gate
// metric judged on the profiled runs is undecided (or no look was made).
func needsProfiles(rep *gate.Report) bool {
	if rep == nil {
		return true
	}
	for _, m := range rep.Metrics {
		if m.Gate && m.Verdict == stats.Inconclusive && (rep.Timing == nil || !slices.Contains(rep.Timing.Metrics, m.Name)) {
			return true
		}
	}
	return false
}

// withTiming is a stored run's analysis JSON with its timing runs added
// (report.Analysis.TimingRuns).
func withTiming(doc []byte, runs []gate.TimingRun, wall time.Duration) ([]byte, error) {
	if len(runs) == 0 {
		return doc, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, err
	}
	b, err := json.Marshal(runs)
	if err != nil {
		return nil, err
	}
	m["timing_runs"] = b
	// The job's cost counts the timing runs stored with it (report.Job):
	// the dashboard's run page shows what the check spent on the run.
	if j, ok := m["job"]; ok && string(j) != "null" {
		var job report.Job
		if err := json.Unmarshal(j, &job); err != nil {
			return nil, err
		}
		job.TimingRuns, job.TimingWallSeconds = len(runs), wall.Seconds()
		if m["job"], err = json.Marshal(job); err != nil {
			return nil, err
		}
	}
	return json.Marshal(m)
}

// timingOf are the timing runs to store with profiled run i of ex, the
// newest of n, and marks them stored (Execution.timingStored): the i-th
// when it is not the newest, every one not stored yet with the newest,
// so that repeat: auto's timing runs after a profiled run go with the
// next one recorded and none is stored twice.
func timingOf(ex *Execution, i, n int) []gate.TimingRun {
	runs, _ := timingWallOf(ex, i, n)
	return runs
}

// timingWallOf is timingOf with the timing runs' wall time, summed.
func timingWallOf(ex *Execution, i, n int) ([]gate.TimingRun, time.Duration) {
	from := ex.timingStored
	to := min(i+1, len(ex.Timing))
	if i == n-1 {
		to = len(ex.Timing)
	}
	if from >= to {
		return nil, 0
	}
	ex.timingStored = to
	var wall time.Duration
	for k := from; k < to && k < len(ex.timingWall); k++ {
		wall += ex.timingWall[k]
	}
	return ex.Timing[from:to], wall
}
