package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/runner"
)

// waitQuietEvery is how long each sample of the host lasts while a
// recording waits for a quiet one.
var waitQuietEvery = 10 * time.Second

// waitQuiet is baseline.wait_quiet (issue 37: "a nightly has time"). A
// recording in which no run was quiet (noQuietRun) is not stored: it
// waits, within wait_quiet from its first run's start, for a quiet host
// (sampled every waitQuietEvery while no job runs, judged by the host:
// margins as a run's host is) and runs again. When the time runs out, the
// last runs are returned, to be stored marked disturbed (busyBaseline:
// exit 3), as without wait_quiet. Every run made counts in the check's
// cost. ex is returned as it is for anything but a recording with
// wait_quiet set.
func (p *Plan) waitQuiet(ctx context.Context, ex *Execution) (*Execution, error) {
	c, o := p.o.Config, p.o
	budget := time.Duration(c.Baseline.WaitQuiet)
	if budget <= 0 || !o.Record || ex.Profiler == runner.None {
		return ex, nil
	}
	deadline := ex.Start.Add(budget)
	margins := HostMargins(c)
	out := p.o.Out
	defer func() { p.o.Out = out }()
	for attempt := 2; ; attempt++ {
		why := noQuietRun(c, ex)
		if why == "" {
			return ex, nil
		}
		left := time.Until(deadline).Round(time.Second)
		if left <= 0 {
			fmt.Fprintf(o.Log, "gpugate: baseline.wait_quiet: %s spent and no run was quiet (%s): these runs are recorded, marked disturbed\n", budget, escape.Terminal(why))
			return ex, nil
		}
		fmt.Fprintf(o.Log, "gpugate: no quiet run (%s): not recorded; waiting up to %s for a quiet host (baseline.wait_quiet %s)\n", escape.Terminal(why), left, budget)
		h, quiet := waitHost(ctx, margins, deadline)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !quiet {
			last := report.HostText(h)
			if last == "" {
				last = "no sample"
			}
			fmt.Fprintf(o.Log, "gpugate: baseline.wait_quiet: the host stayed busy for %s (last: %s): the last runs are recorded, marked disturbed\n", budget, escape.Terminal(last))
			return ex, nil
		}
		fmt.Fprintf(o.Log, "gpugate: the host is quiet (%s): running %s again (attempt %d)\n", escape.Terminal(report.HostText(h)), o.Workload.Name, attempt)
		if out != "" {
			// The disturbed attempt's folders stay, as evidence; the
			// report goes where it was asked for.
			p.o.Out = filepath.Join(out, fmt.Sprintf("wait-quiet-%d", attempt))
		}
		again, err := p.Execute(ctx)
		if err != nil {
			return nil, err
		}
		again.Spent.Runs += ex.Spent.Runs
		again.Spent.Wall += ex.Spent.Wall
		if out != "" {
			again.Out = out
		}
		ex = again
	}
}

// waitHost samples the host until a sample is quiet under margins
// (gate.HostBusy) or deadline passes; it returns the last sample and
// whether it was quiet.
func waitHost(ctx context.Context, margins gate.HostMargins, deadline time.Time) (*runcond.Host, bool) {
	var last *runcond.Host
	for {
		d := min(waitQuietEvery, time.Until(deadline))
		if d <= 0 || ctx.Err() != nil {
			return last, false
		}
		h := runner.SampleHost(ctx, d)
		if h == nil {
			return last, false
		}
		last = h
		if gate.HostBusy(&runcond.Conditions{Host: h}, margins) == "" {
			return h, true
		}
	}
}
