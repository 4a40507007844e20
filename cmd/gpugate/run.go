package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/runner"
	"github.com/gpugate/gpugate/stats"
	"github.com/gpugate/gpugate/trace/load"
	"github.com/gpugate/gpugate/trace/nsys"
)

var configCheckCmd = &command{
	usage: "config check FILE",
	short: "validate a perf.yaml without running anything",
	long: `
Config check decodes a perf.yaml strictly — unknown keys, values of the wrong
type and missing commands are errors with file:line:column — fills in the
defaults and prints the workloads as gpugate will run them.`,
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		return func(_ context.Context, stdout, _ io.Writer, args []string) error {
			if len(args) != 1 {
				return usagef("want one perf.yaml")
			}
			c, err := config.Load(args[0])
			if err != nil {
				return err
			}
			if err := checkRunnable(c); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s: ok, %d workload(s); baseline %s, branch %s, last %d runs\n", args[0], len(c.Workloads), c.Baseline.DB, c.Baseline.Branch, c.Baseline.Runs)
			for _, w := range c.Workloads {
				fmt.Fprintf(stdout, "  %s: %s (profiler %s, warmup %d, measure %d steps, repeat %d, timeout %s)\n",
					w.Name, w.Command, w.Profiler, w.WarmupSteps, w.MeasureSteps, w.Repeat, time.Duration(w.Timeout))
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
hardware/software fingerprint. The report is the one compare prints. With no
baseline yet the run passes and says so. -record-baseline stores the run as a
baseline of the current branch instead.

Exit status: 0 no regression, 1 regression, 2 trouble (bad config, the job
failed, a fingerprint that matches no baseline).`,
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		cfgPath := fs.String("config", "perf.yaml", "the perf.yaml `file`")
		workload := fs.String("workload", "", "the workload to run (default: the only one)")
		format := formatFlag(fs, "text", "markdown", "json")
		outDir := fs.String("out", "", "artifacts `folder` (default .gpugate/runs/WORKLOAD/TIME)")
		dbPath := fs.String("db", "", "baseline database `path` (default: perf.yaml's baseline.db, else .gpugate/baseline.db)")
		record := fs.Bool("record-baseline", false, "store this run as a baseline of the current branch")
		nsysPath := fs.String("nsys", "", "`path` of nsys (default: $GPUGATE_NSYS, then PATH)")
		return func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected arguments %q", args)
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
			if err := checkRunnable(c); err != nil {
				return err
			}
			w, err := c.Workload(*workload)
			if err != nil {
				return err
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
}

// outcome is what a run of a workload produced.
type outcome struct {
	Workload    string
	Report      *gate.Report
	Base, Cand  []gate.Run
	Fingerprint runner.Fingerprint
	// Baseline describes what was compared with, for people.
	Baseline string
	// Err is set when the outcome is not a verdict (fingerprint mismatch
	// under lenient settings): the report says why, the exit status is 2.
	Err error
}

// finish renders an outcome and maps its verdict to the exit status.
func finish(stdout io.Writer, format string, oc *outcome) error {
	if err := render(stdout, format, oc.Report, oc.Cand); err != nil {
		return err
	}
	switch {
	case oc.Err != nil:
		return oc.Err
	case oc.Report.Verdict == stats.Regression:
		return &exitError{exitRegression}
	case oc.Report.Verdict == stats.Inconclusive:
		return errors.New("inconclusive: too few steps to judge a gate metric; raise measure_steps")
	}
	return nil
}

// gitInfo returns the current branch and commit, from GPUGATE_BRANCH /
// GitHub's variables or git; "" when unknown.
func gitInfo(ctx context.Context, dir string) (branch, commit string) {
	git := func(args ...string) string {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	for _, k := range []string{"GPUGATE_BRANCH", "GITHUB_HEAD_REF", "GITHUB_REF_NAME"} {
		if v := os.Getenv(k); v != "" {
			branch = v
			break
		}
	}
	if branch == "" {
		branch = git("rev-parse", "--abbrev-ref", "HEAD")
	}
	commit = os.Getenv("GITHUB_SHA")
	if commit == "" {
		commit = git("rev-parse", "HEAD")
	}
	return branch, commit
}

func runWorkload(ctx context.Context, stdout, stderr io.Writer, c *config.Config, w *config.Workload, o runOptions) (*outcome, error) {
	profiler := w.Profiler
	gpu := runner.HasGPU(ctx)
	nsysBin := ""
	if p, err := nsys.FindCLI(o.nsys); err == nil {
		nsysBin = p
	}
	if profiler == "auto" {
		profiler = runner.Torch
		if gpu && nsysBin != "" {
			profiler = runner.Nsys
		}
	}
	if profiler == runner.Nsys && nsysBin == "" {
		return nil, fmt.Errorf("workload %s: profiler nsys, but nsys is not installed (scripts/setup-profilers.sh installs it; or set -nsys)", w.Name)
	}
	dir := filepath.Dir(c.File)
	workdir := w.Workdir
	if workdir == "" {
		workdir = "."
	}
	if !filepath.IsAbs(workdir) {
		workdir = filepath.Join(dir, workdir)
	}
	out := o.out
	if out == "" {
		out = filepath.Join(".gpugate", "runs", w.Name, time.Now().UTC().Format("20060102T150405Z"))
	}
	var stepLog *regexp.Regexp
	if w.StepLog != "" {
		stepLog = regexp.MustCompile(w.StepLog) // validated by config
	}
	aopt := analysis.Options{}
	if w.StepPattern != "" {
		aopt.StepPattern = regexp.MustCompile(w.StepPattern)
	}
	if w.DataPattern != "" {
		aopt.DataPattern = regexp.MustCompile(w.DataPattern)
	}
	if profiler == runner.Nsys {
		// NVTX marks every step of the run; torch.profiler's schedule
		// already leaves out the warm-up.
		aopt.FirstStep, aopt.MaxSteps = w.WarmupSteps, w.MeasureSteps
	}
	python := ""
	if args := w.Command.Args(); len(args) > 0 && strings.HasPrefix(filepath.Base(args[0]), "python") {
		python = args[0]
	}
	fp := runner.TakeFingerprint(ctx, python, nsysBin, profiler)
	fmt.Fprintf(stderr, "gpugate: running %s with profiler %s (%s, %d× %s); artifacts in %s\n", w.Name, profiler, fp.CPU, fp.GPUCount, fp.GPU, out)

	var cand []gate.Run
	var docs [][]byte
	var profiledSteps []float64
	for i := 1; i <= w.Repeat; i++ {
		runOut := out
		if w.Repeat > 1 {
			runOut = filepath.Join(out, fmt.Sprintf("run%d", i))
		}
		res, err := runner.Run(ctx, runner.Job{
			Name: w.Name, Args: w.Command.Args(), Dir: workdir, Env: w.Env, Timeout: time.Duration(w.Timeout),
			Profiler: profiler, WarmupSteps: w.WarmupSteps, MeasureSteps: w.MeasureSteps, Out: runOut,
			NsysPath: nsysBin, NsysTrace: w.Nsys.Trace, NsysArgs: w.Nsys.ExtraArgs, GPU: gpu, StepLog: stepLog, Output: stderr,
		})
		if err != nil {
			return nil, err
		}
		profiledSteps = append(profiledSteps, res.StepTimes...)
		if profiler == runner.None {
			if len(res.StepTimes) == 0 {
				return nil, fmt.Errorf("workload %s: profiler none needs step_log, a regular expression whose first group is the step time in ms in the job's output", w.Name)
			}
			fmt.Fprintf(stdout, "%s: %d steps, median %.2f ms (unprofiled, from the job's log)\n", w.Name, len(res.StepTimes), analysis.Summarize(res.StepTimes).Median)
			continue
		}
		results, err := analyzeFiles(ctx, res.Traces, aopt, load.Options{Nsys: nsysBin})
		if err != nil {
			return nil, err
		}
		doc := report.NewAnalysis(results)
		var buf bytes.Buffer
		if err := doc.WriteJSON(&buf); err != nil {
			return nil, err
		}
		os.WriteFile(filepath.Join(runOut, "analysis.json"), buf.Bytes(), 0o644)
		docs = append(docs, buf.Bytes())
		cand = append(cand, results)
		fmt.Fprintf(stderr, "gpugate: run %d/%d of %s: %d steps analyzed in %.1fs\n", i, w.Repeat, w.Name, len(results[0].Steps), res.Duration.Seconds())
	}
	if profiler == runner.None {
		return &outcome{Workload: w.Name, Fingerprint: fp, Report: gate.NoBaseline(nil, "profiler none: a timing pass only; nothing was profiled or compared")}, nil
	}
	var overhead *gate.Overhead
	if stepLog != nil && len(profiledSteps) > 0 {
		// The unprofiled timing pass: the same job, the same environment,
		// no profiler; the job's own log gives both sides' step times.
		res, err := runner.Run(ctx, runner.Job{
			Name: w.Name + "-unprofiled", Args: w.Command.Args(), Dir: workdir, Env: w.Env, Timeout: time.Duration(w.Timeout),
			Profiler: runner.None, Out: filepath.Join(out, "unprofiled"), StepLog: stepLog, Output: stderr,
		})
		if err != nil {
			return nil, err
		}
		if len(res.StepTimes) > 0 {
			p, u := analysis.Summarize(profiledSteps).Median, analysis.Summarize(res.StepTimes).Median
			overhead = &gate.Overhead{ProfiledMs: p, UnprofiledMs: u, Ratio: p / u}
			fmt.Fprintf(stderr, "gpugate: profiling overhead ×%.2f: median step %.2f ms profiled, %.2f ms unprofiled (from the job's log)\n", overhead.Ratio, p, u)
		}
	}

	dbPath := o.db
	if dbPath == "" {
		dbPath = c.Baseline.DB
	}
	store, err := baseline.Open(ctx, dbPath)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	branch, commit := gitInfo(ctx, dir)
	if branch == "" || branch == "HEAD" {
		branch = c.Baseline.Branch
	}
	fpJSON, _ := json.Marshal(fp)
	kind := "candidate"
	if o.record {
		kind = "baseline"
	}
	for _, d := range docs {
		if o.readOnly && !o.record {
			break
		}
		if _, err := store.Record(ctx, baseline.Run{Workload: w.Name, Branch: branch, Commit: commit, Kind: kind, Profiler: profiler,
			FingerprintHash: fp.Hash(), Fingerprint: fpJSON, Version: version(), Analysis: d}); err != nil {
			return nil, err
		}
	}
	if o.record {
		fmt.Fprintf(stderr, "gpugate: recorded %d run(s) of %s as baseline of branch %s in %s\n", len(docs), w.Name, branch, dbPath)
		rep := gate.NoBaseline(cand, fmt.Sprintf("recorded as baseline of %s", branch))
		rep.Overhead = overhead
		return &outcome{Workload: w.Name, Report: rep, Cand: cand, Fingerprint: fp, Baseline: "recorded as baseline of " + branch}, nil
	}

	stored, err := store.Baselines(ctx, w.Name, c.Baseline.Branch, c.Baseline.Runs)
	if err != nil {
		return nil, err
	}
	var base []gate.Run
	var mismatch, commits []string
	var newest time.Time
	for _, s := range stored {
		if s.FingerprintHash != fp.Hash() {
			var other runner.Fingerprint
			json.Unmarshal(s.Fingerprint, &other)
			mismatch = other.Diff(fp)
			continue
		}
		var doc report.Analysis
		if err := json.Unmarshal(s.Analysis, &doc); err != nil {
			return nil, fmt.Errorf("baseline run %d in %s: %v", s.ID, dbPath, err)
		}
		base = append(base, doc.Results())
		commits = append(commits, short(s.Commit))
		if s.Created.After(newest) {
			newest = s.Created
		}
	}
	if len(base) == 0 {
		if len(stored) > 0 {
			msg := fmt.Sprintf("no baseline of %s on %s matches this machine's fingerprint; differences: %s (record a baseline here with -record-baseline)", w.Name, c.Baseline.Branch, strings.Join(mismatch, "; "))
			if !c.Baseline.Lenient {
				return nil, errors.New(msg)
			}
			rep := gate.NoBaseline(cand, msg)
			rep.Verdict = stats.Inconclusive
			return &outcome{Workload: w.Name, Report: rep, Cand: cand, Fingerprint: fp, Baseline: "none matching", Err: errors.New(msg)}, nil
		}
		rep := gate.NoBaseline(cand, fmt.Sprintf("no baseline of %s on branch %s in %s yet: nothing to compare with (record one with gpugate run -record-baseline on %s)", w.Name, c.Baseline.Branch, dbPath, c.Baseline.Branch))
		rep.Overhead = overhead
		return &outcome{Workload: w.Name, Report: rep, Cand: cand, Fingerprint: fp, Baseline: "none yet"}, nil
	}
	allow := map[string]float64{}
	for k, v := range c.Allowances {
		m, ok := analysis.MetricByName(k)
		if !ok {
			return nil, fmt.Errorf("%s: allowances: unknown metric %q", c.File, k)
		}
		allow[m.Name] = float64(v)
	}
	rep := gate.Compare(base, cand, gate.Options{Allowances: allow, Gate: c.Gate})
	rep.Overhead = overhead
	rep.Baseline.Newest = newest.UTC().Format(time.RFC3339)
	if age := time.Since(newest); c.Baseline.MaxAge > 0 && age > time.Duration(c.Baseline.MaxAge) {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("stale baseline: the newest baseline run is %s old (max_age %s); run gpugate baseline refresh on %s",
			age.Round(time.Hour), time.Duration(c.Baseline.MaxAge), c.Baseline.Branch))
	}
	desc := fmt.Sprintf("%s@%s, %d run(s), newest %s", c.Baseline.Branch, strings.Join(commits, ","), len(base), newest.UTC().Format("2006-01-02 15:04 UTC"))
	return &outcome{Workload: w.Name, Report: rep, Base: base, Cand: cand, Fingerprint: fp, Baseline: desc}, nil
}

// render prints a run's report; without a baseline the text form shows the
// candidate's own analysis.
func render(w io.Writer, format string, rep *gate.Report, cand []gate.Run) error {
	switch format {
	case "json":
		return report.WriteCompareJSON(w, rep)
	case "markdown":
		return report.WriteCompareMarkdown(w, rep)
	}
	if len(rep.Metrics) == 0 {
		if len(cand) > 0 {
			if err := report.NewAnalysis(cand[len(cand)-1]).WriteText(w); err != nil {
				return err
			}
		}
		for _, wn := range rep.Warnings {
			fmt.Fprintf(w, "\ngpugate: %s\n", wn)
		}
		return nil
	}
	return report.WriteCompareText(w, rep)
}
