package pipeline

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/stats"
)

// AutoAlpha is the two-sided level that repeat: auto spends over its
// looks, as ab does (DefaultABAlpha): one look after each candidate run,
// from the first to max_runs, each at AutoAlpha/max_runs, so that the
// chance of a false regression is at most 1% however the looks turn out
// (Bonferroni; pipeline.TestSequentialRuns gives the simulated rates).
const AutoAlpha = DefaultABAlpha

// sampleRuns is repeat: auto. ex holds the first candidate run; after each
// run it compares ex with the baseline at the look's level and stops at a
// settled verdict, at the workload's max_runs, or when another run, at the
// mean run time so far, would end past its budget. With timing runs
// (timing.go) each further run is a timing run, and a profiled run is
// added only while a gate metric judged on the profiled runs is
// undecided: counts barely vary, step time does. record stores each new
// profiled run as it is made, with the timing runs made by then (a
// candidate's timing runs after its last profiled run are not stored:
// only baseline runs, recorded by Execute, are judged against). The report
// says how many runs were needed and why sampling stopped.
func (p *Plan) sampleRuns(ctx context.Context, ex *Execution, sel *Selection, record func() error) (*gate.Report, error) {
	o, w := p.o, p.o.Workload
	lookAlpha := AutoAlpha / float64(w.MaxRuns)
	budget := time.Duration(w.Budget)
	_, of := p.planned()
	var rep *gate.Report
	stopped := ""
	for {
		var err error
		if rep, err = Compare(o.Config, sel, ex, time.Now(), stats.Thresholds{Alpha: lookAlpha, AutoAlpha: AutoAlpha, AutoMaxRuns: w.MaxRuns}); err != nil {
			return nil, err
		}
		n := p.runsMade(ex)
		fmt.Fprintf(o.Log, "gpugate: look after %d run(s) against %d baseline run(s) (α=%.3g): %s\n", n, len(sel.Runs), lookAlpha, rep.Verdict)
		if rep.Verdict != stats.Inconclusive {
			stopped = fmt.Sprintf("decided after %d run(s): %s", n, rep.Verdict)
			break
		}
		if base := cannotSettle(rep); base != "" {
			// Even max_runs candidate runs cannot settle it, whatever the
			// change within the interval: do not spend them. A metric that
			// needs baseline runs at the estimate so far, but might
			// settle at max_runs, samples on (issue 37: the estimate alone
			// stopped too soon and cost most of the power).
			stopped = fmt.Sprintf("more candidate runs cannot settle it after %d run(s): %s", n, base)
			break
		}
		if n >= w.MaxRuns {
			stopped = fmt.Sprintf("%d run(s), the most planned (max_runs)", n)
			break
		}
		mean := ex.RunTime / time.Duration(n)
		if elapsed := time.Since(ex.Start); elapsed+mean > budget {
			stopped = fmt.Sprintf("budget spent: %d run(s) in %s, and another (about %s) would pass the %s budget", n, elapsed.Round(time.Second), mean.Round(time.Second), budget)
			if n == 1 {
				// One look, at the level of one of max_runs looks: a
				// stricter judgement than repeat: 1's single one.
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("repeat: auto made one run only: the budget (%s) has no room for a second run of about %s, so the one look was at α=%.3g (repeat: 1 looks once at α=%.3g); raise budget or use repeat: N", budget, mean.Round(time.Second), lookAlpha, stats.DefaultThresholds.Alpha))
			}
			break
		}
		start, profiled := time.Now(), false
		if !p.timingOn(ex) || needsProfiles(rep) {
			once, err := p.RunOnce(ctx, p.runDir(ex.Out, n+1))
			if err != nil {
				return nil, fmt.Errorf("repeat: auto, run %d: %w", n+1, err)
			}
			if once.Run == nil {
				return nil, fmt.Errorf("repeat: auto, run %d: nothing was profiled", n+1)
			}
			ex.add(once, 0)
			p.logRun(once, n+1, of)
			ex.Spent.Add(time.Since(start))
			profiled = true
		}
		if p.timingOn(ex) {
			if _, err := p.timeOnce(ctx, ex, n+1); err != nil {
				return nil, fmt.Errorf("repeat: auto, run %d: %w", n+1, err)
			}
		}
		if profiled {
			if err := record(); err != nil {
				return nil, err
			}
		}
		ex.RunTime += time.Since(start) // the jobs and their analysis
	}
	if p.timing() {
		ex.Overhead = timingOverhead(HostMargins(o.Config), ex.Runs, ex.Conditions, ex.Timing)
		rep.Overhead = ex.Overhead
	}
	n := p.runsMade(ex)
	smp := &gate.Sampling{Unit: stats.UnitRun, Runs: n, MaxRuns: w.MaxRuns, MinRuns: 1, LookAlpha: lookAlpha,
		BudgetSec: budget.Seconds(), WallSec: time.Since(ex.Start).Seconds(), Stopped: stopped}
	for i := 1; i <= n; i++ {
		smp.Order = append(smp.Order, fmt.Sprintf("R%d", i))
	}
	if p.timingOn(ex) && len(ex.Runs) < n {
		smp.Profiled = len(ex.Runs)
	}
	smp.RunSec = ex.RunTime.Seconds() / float64(n)
	if need := moreNeeded(rep); need > 0 && smp.RunSec > 0 {
		more := time.Duration(float64(need)*smp.RunSec*float64(time.Second)) + time.Duration(smp.WallSec*float64(time.Second))
		smp.Advice = fmt.Sprintf("about %d more run(s) would settle it, about %.0f more minute(s) of this machine: max_runs: %d, budget: %s",
			need, math.Ceil(float64(need)*smp.RunSec/60), n+need, (more*6/5).Round(time.Minute)+time.Minute)
	}
	rep.Sampling = smp
	rep.Noise += "; " + smp.String()
	fmt.Fprintf(o.Log, "gpugate: repeat: auto stopped: %s\n", stopped)
	if smp.Advice != "" {
		fmt.Fprintf(o.Log, "gpugate: %s\n", smp.Advice)
	}
	return rep, nil
}

// runsMade is how many candidate runs ex has made: its timing runs, or
// its profiled runs when it makes none.
func (p *Plan) runsMade(ex *Execution) int {
	if p.timing() && ex.TimingWhy == "" {
		return len(ex.Timing)
	}
	return len(ex.Runs)
}

// needsBaseRuns names the inconclusive gate metrics of an inconclusive
// verdict that more candidate runs alone cannot settle; "" when none.
func needsBaseRuns(rep *gate.Report) string {
	var names []string
	for _, m := range rep.Metrics {
		if m.Gate && m.Verdict == stats.Inconclusive && m.NeedBaseRuns > 0 {
			names = append(names, m.Name)
		}
	}
	return strings.Join(names, ", ")
}

// cannotSettle says which inconclusive gate metrics need more baseline
// runs that candidate runs up to max_runs could not settle either
// (stats.Result.CannotSettle), and why: too few or too alike baseline runs
// ("step_time needs more baseline runs"), or a baseline whose every run
// was disturbed, which names the busy host, not the baseline's size
// (issue 37); "" when none.
func cannotSettle(rep *gate.Report) string {
	var few, busy []string
	for _, m := range rep.Metrics {
		if m.Gate && m.Verdict == stats.Inconclusive && m.NeedBaseRuns > 0 && m.CannotSettle {
			if strings.HasPrefix(m.Reason, "no time verdict: ") {
				busy = append(busy, m.Name)
			} else {
				few = append(few, m.Name)
			}
		}
	}
	var why []string
	if len(busy) > 0 {
		why = append(why, fmt.Sprintf("%s has no time verdict: every baseline run was disturbed (the host was busy while the baseline was recorded); rerun gpugate baseline refresh when the machine is quiet", strings.Join(busy, ", ")))
	}
	if len(few) > 0 {
		why = append(why, fmt.Sprintf("%s needs more baseline runs (gpugate baseline refresh)", strings.Join(few, ", ")))
	}
	return strings.Join(why, "; ")
}

// moreNeeded is, for an inconclusive verdict, the most runs (or pairs) any
// inconclusive gate metric says would settle it; 0 otherwise.
func moreNeeded(rep *gate.Report) int {
	need := 0
	if rep.Verdict != stats.Inconclusive || needsBaseRuns(rep) != "" {
		return 0
	}
	for _, m := range rep.Metrics {
		if m.Gate && m.Verdict == stats.Inconclusive {
			need = max(need, m.NeedRuns)
		}
	}
	return need
}
