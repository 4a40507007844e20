package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/trace"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/stats"
)

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

var compareCmd = &command{
	usage: "compare [-format text|markdown|json] [-allowance metric=15%]... [-alpha 0.05] [-runs] [-allow-mismatch] BASE HEAD | -base FILE... -head FILE...",
	short: "compare a candidate with a baseline: what regressed, whether it is real, and why",
	long: `
Compare reads a baseline and a candidate — traces or the JSON that
'gpugate analyze -format json' wrote — and compares every per-step metric
by the change of its mean per step: each run's mean over its measured
steps is one sample (the run is the unit: steps of one run cannot show how
much whole runs differ), and the change is the ratio of the two sides'
geometric means of run means with its t interval on the log scale (1-α,
α=0.05 by default; on the means themselves where one is 0). A metric
regresses when the interval excludes 0 and the change is beyond its
allowance (15% for times, tight for counts such as kernels and sync calls);
it passes only when the interval stays within the allowance; anything else
is "inconclusive", with what would settle it, in runs — never a silent
pass. step_time, kernels, cpu_wait, sync_calls and peak_memory gate the
verdict (peak memory: 5% and at least 64 MiB); the other metrics explain
it. The tables show each side's mean, the numbers the change compares.
docs/verdicts.md states the rule.

Several -base (or -head) files are the ranks of one run: they are combined
per step (times and memory: the slowest or largest rank; counts: the sum),
never pooled as samples. With -runs each file is a run of its own. With
one run on each side there is no run-to-run spread and no verdict
(inconclusive: record >= 3 baseline runs); with 3 or more the interval
covers run-to-run drift.

Both sides must have run on the same hardware under the same profiler: the
devices, device count, world size and profiler the traces record are
compared, and a mismatch is an error naming both sides, unless
-allow-mismatch (the report then says so at the top).

The report takes the change in step time apart (compute, exposed
communication and copies, host-wait and other idle), lists the kernels that
appeared, vanished or changed, runs the findings on both sides to say which
causes are new or worse in the candidate, and gives every regression its
why.

` + exitStatusHelp,
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		format := formatFlag(fs, "text", "markdown", "json")
		var allowances, bases, heads listFlag
		fs.Var(&allowances, "allowance", "override a metric's allowance, as `metric=15%` (repeatable)")
		fs.Var(&bases, "base", "baseline trace or analyze JSON `file` (repeatable)")
		fs.Var(&heads, "head", "candidate trace or analyze JSON `file` (repeatable)")
		runs := fs.Bool("runs", false, "each -base/-head file is a separate run, not a rank")
		alpha := fs.Float64("alpha", 0.05, "significance level: intervals are 1-alpha")
		allowMismatch := fs.Bool("allow-mismatch", false, "compare traces of different hardware or profilers all the same, saying so at the top of the report")
		a := analysisFlags(fs)
		return func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			switch *format {
			case "text", "markdown", "json":
			default:
				return usagef("-format must be text, markdown or json, not %q", *format)
			}
			if !(*alpha > 0 && *alpha < 1) { // NaN fails too
				return usagef("-alpha must be in range (0, 1), not %v", *alpha)
			}
			if len(bases) == 0 && len(heads) == 0 {
				if len(args) != 2 {
					return usagef("want BASE and HEAD, or -base and -head")
				}
				bases, heads = listFlag{args[0]}, listFlag{args[1]}
			} else if len(args) > 0 || len(bases) == 0 || len(heads) == 0 {
				return usagef("give -base and -head files, or BASE HEAD, not both")
			}
			opt := gate.Options{Allowances: map[string]float64{}, Thresholds: stats.Thresholds{Alpha: *alpha}}
			for _, s := range allowances {
				name, val, ok := strings.Cut(s, "=")
				m, known := analysis.MetricByName(name)
				if !ok || !known {
					return usagef("-allowance %q: want metric=percent with a metric that gpugate computes", s)
				}
				v, err := config.ParsePercent(val)
				if err != nil {
					return usagef("-allowance %s: %v", name, err)
				}
				opt.Allowances[m.Name] = v
			}
			aopt, err := a.options()
			if err != nil {
				return err
			}
			load := func(files []string) ([]gate.Run, error) {
				if !*runs {
					rs, err := loadResults(ctx, files, aopt, a)
					return []gate.Run{rs}, err
				}
				var out []gate.Run
				for _, f := range files {
					rs, err := loadResults(ctx, []string{f}, aopt, a)
					if err != nil {
						return nil, err
					}
					out = append(out, rs)
				}
				return out, nil
			}
			base, err := load(bases)
			if err != nil {
				return err
			}
			head, err := load(heads)
			if err != nil {
				return err
			}
			if err := gate.CheckSide("baseline", base); err != nil {
				return fmt.Errorf("compare: %w", err)
			}
			if err := gate.CheckSide("candidate", head); err != nil {
				return fmt.Errorf("compare: %w", err)
			}
			rep := gate.Compare(base, head, opt)
			// Trace files and analyze documents hold no run conditions:
			// the section says so rather than leaving it out.
			gate.ApplyConditions(rep, make([]*runcond.Conditions, len(base)), make([]*runcond.Conditions, len(head)), gate.DefaultConditionMargins,
				"not recorded: compare reads traces, which hold no run conditions (gpugate run samples them)")
			if mm := gate.Mismatch(rep.Baseline, rep.Candidate); len(mm) > 0 {
				if !*allowMismatch {
					return fmt.Errorf("compare: not the same hardware or profiler, no verdict: %s (-allow-mismatch compares them all the same)", strings.Join(mm, "; "))
				}
				rep.Mismatch = mm
			}
			switch *format {
			case "json":
				err = report.WriteCompareJSON(stdout, rep)
			case "markdown":
				err = report.WriteCompareMarkdown(stdout, rep)
			default:
				err = report.WriteCompareText(stdout, rep)
			}
			if err != nil {
				return err
			}
			return verdictError(rep.Verdict, false)
		}
	},
}

// loadResults reads traces, or analyze JSON documents, into results.
func loadResults(ctx context.Context, files []string, opt analysis.Options, a *analysisFlagSet) (gate.Run, error) {
	var traces []string
	var out gate.Run
	for _, f := range files {
		if doc, ok, err := readAnalysisJSON(f); err != nil {
			return nil, err
		} else if ok {
			out = append(out, doc.Results()...)
			continue
		}
		traces = append(traces, f)
	}
	if len(traces) > 0 {
		rs, err := analyzeFiles(ctx, traces, opt, a.loadOptions())
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// readAnalysisJSON reads f as gpugate analyze's JSON when it is one: a
// JSON object whose first member is "profiles".
func readAnalysisJSON(f string) (*report.Analysis, bool, error) {
	fh, err := os.Open(f)
	if err != nil {
		return nil, false, fmt.Errorf("read %w", trace.WithPath(err, f))
	}
	defer fh.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(fh, head)
	if !bytes.HasPrefix(bytes.Join(bytes.Fields(head[:n]), nil), []byte(`{"profiles":`)) {
		return nil, false, nil
	}
	if _, err := fh.Seek(0, io.SeekStart); err != nil {
		return nil, false, err
	}
	var doc report.Analysis
	if err := json.NewDecoder(fh).Decode(&doc); err != nil {
		return nil, false, fmt.Errorf("read %s: not a gpugate analyze document: %v", f, err)
	}
	return &doc, true, nil
}
