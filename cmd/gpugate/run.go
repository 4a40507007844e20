package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/internal/newfile"
	"github.com/gpugate/gpugate/pipeline"
	"github.com/gpugate/gpugate/report"
)

var configCheckCmd = &command{
	usage: "config check [-config] FILE",
	short: "validate a perf.yaml without running anything",
	long: `
Config check decodes a perf.yaml strictly — unknown keys, values of the wrong
type and missing commands are errors with file:line:column — fills in the
defaults and prints the workloads as gpugate will run them. The file may be
given as -config FILE, as for gpugate run.`,
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		cfg := fs.String("config", "", "the perf.yaml `file` (or the argument)")
		return func(_ context.Context, stdout, _ io.Writer, args []string) error {
			if *cfg != "" {
				args = append([]string{*cfg}, args...)
			}
			if len(args) != 1 {
				return usagef("want one perf.yaml")
			}
			c, err := config.Load(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s: ok, %d workload(s); baseline %s, branch %s, last %d runs\n", escape.Terminal(args[0]), len(c.Workloads), escape.Terminal(baseline.Mask(c.Baseline.DB)), escape.Terminal(c.Baseline.Branch), c.Baseline.Runs)
			for _, w := range c.Workloads {
				repeat := fmt.Sprint(int(w.Repeat))
				if w.Repeat.Auto() {
					repeat = fmt.Sprintf("auto: 1 to %d runs within %s", w.MaxRuns, time.Duration(w.Budget))
				}
				fmt.Fprintf(stdout, "  %s: %s (profiler %s, warmup %d, measure %d steps, repeat %s, timeout %s)\n",
					w.Name, escape.Terminal(fmt.Sprint(w.Command)), escape.Terminal(w.Profiler), w.WarmupSteps, w.MeasureSteps, repeat, time.Duration(w.Timeout))
			}
			return nil
		}
	},
}

var runCmd = &command{
	usage: "run -config perf.yaml [-workload NAME] [-format text|markdown|json] [-out DIR] [-db PATH] [-record-baseline]",
	short: "profile a training job and gate it against the stored baseline",
	long: `
Run starts the workload's command, unmodified, under a profiler: Nsight
Systems (nsys profile, then export to SQLite; on a machine without a GPU with
CPU sampling off and NVTX ranges injected from outside), torch.profiler
(injected through a sitecustomize on PYTHONPATH, advanced at every optimizer
step), or none. The job's output is streamed with a prefix and kept in the
artifacts folder; past its timeout, or on Ctrl-C, its whole process group is
killed.

The traces are analyzed and compared with the last runs of the base branch
recorded in the baseline database for the same workload and the same
hardware/software fingerprint. The report is the one compare prints; it is
also written into the artifacts folder as report.md (what the PR comment
would say) and report.json, each with the cost of the check (runs made,
their wall time and GPU-minutes). With no baseline yet the run passes and
says so. -record-baseline stores the run as a baseline of the current
branch instead.

` + exitStatusHelp,
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		cfgPath := fs.String("config", "perf.yaml", "the perf.yaml `file`")
		workload := fs.String("workload", "", "the workload to run (default: the only one)")
		format := formatFlag(fs, "text", "markdown", "json")
		outDir := fs.String("out", "", "artifacts `folder` (default .gpugate/runs/WORKLOAD/TIME)")
		dbPath := fs.String("db", "", "baseline store: a SQLite file `path` or a postgres:// URL (default: $GPUGATE_DB, else perf.yaml's baseline.db, else "+defaultDB+"; under GitHub Actions ~/.cache/gpugate/WORKLOAD/baseline.db, see docs/baseline.md)")
		record := fs.Bool("record-baseline", false, "store this run as a baseline of the current branch")
		nsysPath := fs.String("nsys", "", "`path` of nsys (default: $GPUGATE_NSYS, then PATH)")
		commPattern := fs.String("comm-pattern", "", "regular expression `RE` naming communication kernels (default: perf.yaml comm_pattern, else the table in docs/metrics.md)")
		return func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected arguments %q", args)
			}
			if *commPattern != "" {
				if _, err := regexp.Compile(*commPattern); err != nil {
					return usagef("-comm-pattern: %v", err)
				}
			}
			switch *format {
			case "text", "markdown", "json":
			default:
				return usagef("-format must be text, markdown or json, not %q", *format)
			}
			c, err := config.Load(*cfgPath)
			if err != nil {
				return err
			}
			w, err := c.Workload(*workload)
			if err != nil {
				return err
			}
			if *commPattern != "" {
				w.CommPattern = *commPattern
			}
			oc, err := runWorkload(ctx, stdout, stderr, c, w, runOptions{out: *outDir, db: *dbPath, record: *record, nsys: nsysFlag(*nsysPath)})
			if err != nil {
				return err
			}
			return finish(stdout, *format, oc)
		}
	},
}

type runOptions struct {
	out, db, nsys string
	record        bool
	// readOnly: the store serves the comparison and is not written (runs
	// of untrusted code: a pull request's).
	readOnly bool
	// mergeBase is the commit whose ancestors' runs are the baseline
	// (pipeline.Options.MergeBase); "" asks git.
	mergeBase string
}

// outcome is what a run of a workload produced.
type outcome = pipeline.Outcome

// finish renders an outcome, writes report.md and report.json into its
// artifacts folder, and maps its verdict to the exit status.
func finish(stdout io.Writer, format string, oc *outcome) error {
	if err := render(stdout, format, oc.Report, oc.Cand); err != nil {
		return err
	}
	if err := writeReports(oc); err != nil {
		return err
	}
	if oc.Err != nil {
		return oc.Err
	}
	return verdictError(oc.Report.Verdict, false)
}

// gitInfo returns the current branch and commit (pipeline.GitInfo).
func gitInfo(ctx context.Context, dir string) (branch, commit string) {
	return pipeline.GitInfo(ctx, dir, os.Getenv)
}

// pipelineOptions fills in what the environment says: branch, commit,
// version.
func pipelineOptions(ctx context.Context, stdout, stderr io.Writer, c *config.Config, w *config.Workload, o runOptions) pipeline.Options {
	branch, commit := gitInfo(ctx, filepath.Dir(c.File))
	return pipeline.Options{Config: c, Workload: w, Out: o.out, DB: o.db, Record: o.record, ReadOnly: o.readOnly, Nsys: o.nsys,
		Branch: branch, Commit: commit, MergeBase: o.mergeBase, Version: version(), Stdout: stdout, Log: stderr}
}

// runWorkload runs the whole pipeline for a workload; see pipeline.Run.
func runWorkload(ctx context.Context, stdout, stderr io.Writer, c *config.Config, w *config.Workload, o runOptions) (*outcome, error) {
	var err error
	if o.db, err = storeTarget(o.db, c, w.Name); err != nil {
		return nil, err
	}
	return pipeline.Run(ctx, pipelineOptions(ctx, stdout, stderr, c, w, o))
}

// writeReports writes the outcome's report as report.md (what the PR
// comment would say) and report.json (gpugate compare -format json's
// document) into its artifacts folder, beside the traces, as the Action
// does; nothing without a folder (ab).
func writeReports(oc *outcome) error {
	if oc.Out == "" || oc.Report == nil {
		return nil
	}
	var md, js bytes.Buffer
	if err := report.WriteComment(&md, oc.Report, commentInfo(oc)); err != nil {
		return err
	}
	if err := report.WriteCompareJSON(&js, oc.Report); err != nil {
		return err
	}
	for name, data := range map[string][]byte{"report.md": md.Bytes(), "report.json": js.Bytes()} {
		if err := writeNew(filepath.Join(oc.Out, name), data); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	return nil
}

// commentInfo is what report.md says besides the report: the workload,
// what it was compared with, the machine, and the step series. gpugate ci
// posts the same, with the marker that finds its note again.
func commentInfo(oc *outcome) report.CommentInfo {
	f := oc.Fingerprint
	machine := "no GPU"
	if f.GPUCount > 0 {
		machine = fmt.Sprintf("%d× %s", f.GPUCount, f.GPU)
	}
	info := report.CommentInfo{Workload: oc.Workload, Baseline: oc.Baseline, Fingerprint: machine + "; fingerprint " + f.Hash(), Record: oc.RecordCommand}
	info.BaseSteps, info.CandSteps = oc.Report.StepSeries(oc.Base, oc.Cand, oc.BaseTiming, oc.CandTiming)
	return info
}

// writeNew writes a file the job did not plant: whatever is at path (a
// file, or a symlink the job left to a file of the user's) is unlinked,
// never followed, and the file is created anew.
func writeNew(path string, data []byte) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return newfile.Write(path, data)
}

// render prints a run's report; without a baseline the text form shows the
// candidate's own analysis.
func render(w io.Writer, format string, rep *gate.Report, cand []gate.Run) error {
	switch format {
	case "json":
		return report.WriteCompareJSON(w, rep)
	case "markdown":
		// As the comment renders it: every name (a node's, a kernel's in
		// a why) escaped for Markdown.
		return report.WriteCompareMarkdown(w, report.SafeReport(rep))
	}
	if len(rep.Metrics) == 0 {
		if len(cand) > 0 {
			if err := report.NewAnalysis(cand[len(cand)-1]).WriteText(w); err != nil {
				return err
			}
		}
		report.WriteConditionsText(w, rep)
		if rep.Isolation != "" {
			fmt.Fprintf(w, "\nisolation: %s\n", escape.Terminal(rep.Isolation))
		}
		for _, wn := range rep.Warnings {
			fmt.Fprintf(w, "\ngpugate: %s\n", escape.Terminal(wn))
		}
		if c := report.CostText(rep.Cost); c != "" {
			fmt.Fprintf(w, "\ncost: %s\n", c)
		}
		return nil
	}
	return report.WriteCompareText(w, rep)
}
