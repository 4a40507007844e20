package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/stats"
)

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

var compareCmd = &command{
	usage: "compare [-format text|markdown|json] [-allowance metric=15%]... [-runs] BASE HEAD | -base FILE... -head FILE...",
	short: "compare a candidate with a baseline: what regressed, whether it is real, and why",
	long: `
Compare reads a baseline and a candidate — traces or the JSON that
'gpugate analyze -format json' wrote — and compares every per-step metric.
A metric regresses only when its median is worse by more than its allowance
(15% for times, tight for counts such as kernels and sync calls) and the
difference is significant (two-sided Mann–Whitney U, α=0.05). Too few
samples give "inconclusive", never a silent pass. step_time, kernels and
sync_calls gate the verdict; the other metrics explain it.

The report takes the change in step time apart (compute, exposed
communication and copies, host-wait and other idle), lists the kernels that
appeared, vanished or changed, and runs the findings on both sides to say
which causes are new or worse in the candidate.

Several -base (or -head) files are the ranks of one run; with -runs each
file is a run of its own, and the allowance for time metrics is widened by
the run-to-run spread of medians seen on that side.

Exit status: 0 no regression, 1 regression, 2 trouble or inconclusive.`,
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		format := formatFlag(fs, "text", "markdown", "json")
		var allowances, bases, heads listFlag
		fs.Var(&allowances, "allowance", "override a metric's allowance, as `metric=15%` (repeatable)")
		fs.Var(&bases, "base", "baseline trace or analyze JSON `file` (repeatable)")
		fs.Var(&heads, "head", "candidate trace or analyze JSON `file` (repeatable)")
		runs := fs.Bool("runs", false, "each -base/-head file is a separate run, not a rank")
		alpha := fs.Float64("alpha", 0.05, "significance level of the U test")
		a := analysisFlags(fs)
		return func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			switch *format {
			case "text", "markdown", "json":
			default:
				return usagef("-format must be text, markdown or json, not %q", *format)
			}
			if *alpha <= 0 || *alpha >= 1 {
				return usagef("-alpha must be in range (0, 1)")
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
				if _, known := analysis.MetricByName(name); !ok || !known {
					return usagef("-allowance %q: want metric=percent with a metric that gpugate computes", s)
				}
				v, err := strconv.ParseFloat(strings.TrimSuffix(val, "%"), 64)
				if err != nil || v < 0 {
					return usagef("-allowance %q: %q is not a percentage", s, val)
				}
				m, _ := analysis.MetricByName(name)
				opt.Allowances[m.Name] = v / 100
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
			rep := gate.Compare(base, head, opt)
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
			switch rep.Verdict {
			case stats.Regression:
				return &exitError{exitRegression}
			case stats.Inconclusive:
				fmt.Fprintln(stderr, "gpugate: inconclusive: too few steps to judge a gate metric (see the report)")
				return &exitError{exitTrouble}
			}
			return nil
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
		return nil, false, fmt.Errorf("read %w", prefixPath(err, f))
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
