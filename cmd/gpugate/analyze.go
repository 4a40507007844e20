package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/pipeline"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/trace"
	"github.com/gpugate/gpugate/trace/kineto"
	"github.com/gpugate/gpugate/trace/load"
)

var analyzeCmd = &command{
	usage: "analyze [-format text|json] [-step-pattern RE] [-ncu path] TRACE...",
	short: "reduce profiler traces to per-step metrics",
	long: `
Analyze reads one or more traces — torch.profiler/Kineto JSON (.json or
.json.gz), Nsight Systems SQLite exports, or .nsys-rep reports (exported
with the nsys CLI first) — finds the training steps and prints per-step
metrics: step time, kernels, GPU busy/idle/utilization, CPU-side wait, data
loader wait, sync calls, copies, communication and launch overhead, with their
median, mean, p90, min and max over the steps.

Several files are the ranks of one job: each is analyzed, and a cross-rank
view names the slowest rank and the spread of step time across ranks.

Steps are Kineto ProfilerStep#N ranges or, for nsys, NVTX ranges matching
-step-pattern. Without step markers they are inferred from optimizer-step
ranges, FSDP root forwards or the period of the GPU op sequence, and a
warning says how (docs/steps.md); when nothing repeats the whole profile is
one window and a warning says so. A TRACE of - reads standard input. A
Kineto trace larger than -max-trace-bytes, with more than -max-events events
or with a name longer than -max-string is refused with an error naming the
limit. The JSON form is a stable contract, documented in docs/json.md.

Nsight Compute results — .ncu-rep reports (read with the ncu CLI) or the
CSV pages ncu exports (--page details, --page raw) — give one row per kernel
launch instead: grid and block, registers per thread, duration, SM clock, SM
and memory throughput (% of peak), achieved and theoretical occupancy, the
limiter ncu's rules name, and the rules' warnings. Values a report lacks
(sections not collected) are shown as "-" and are null in JSON. A report
written by a newer ncu than the installed one is an error naming both
versions.`,

	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		format := formatFlag(fs, "text", "json")
		a := analysisFlags(fs)
		ncuPath := fs.String("ncu", "", "`path` of the ncu CLI used to read .ncu-rep reports (default: $GPUGATE_NCU, then PATH)")
		return func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			if *format != "text" && *format != "json" {
				return usagef("-format must be text or json, not %q", *format)
			}
			if len(args) == 0 {
				return usagef("no trace files given")
			}
			if n := countNCU(args); n == len(args) {
				return analyzeNCU(ctx, stdout, args, *format, ncuFlag(*ncuPath))
			} else if n > 0 {
				return usagef("Nsight Compute results and timeline traces cannot be analyzed together: give one kind")
			}
			opt, err := a.options()
			if err != nil {
				return err
			}
			results, err := analyzeFiles(ctx, args, opt, a.loadOptions())
			if err != nil {
				return err
			}
			doc := report.NewAnalysis(results)
			doc.RunConditions = conditionsBeside(args)
			if *format == "json" {
				return doc.WriteJSON(stdout)
			}
			return doc.WriteText(stdout)
		}
	},
}

// analysisFlagSet holds the flags shared by commands that analyze traces.
type analysisFlagSet struct {
	step, data, comm *string
	samples, tokens  *float64
	mfuDtype         *string
	nsys             *string
	maxBytes         *int64
	maxString        *int
	maxEvents        *int
}

func analysisFlags(fs *flag.FlagSet) *analysisFlagSet {
	return &analysisFlagSet{
		step:      fs.String("step-pattern", analysis.DefaultStepPattern.String(), "regular expression `RE` naming the host ranges that are training steps"),
		samples:   fs.Float64("samples-per-step", 0, "samples one step of one process consumes (`N`): reports samples/s per step (perf.yaml samples_per_step)"),
		tokens:    fs.Float64("tokens-per-step", 0, "tokens one step of one process consumes (`N`): reports tokens/s per step (perf.yaml tokens_per_step)"),
		mfuDtype:  fs.String("mfu-dtype", "bf16", "`dtype` whose datasheet peak MFU is measured against: "+strings.Join(analysis.MFUDtypes, ", ")),
		data:      fs.String("data-pattern", analysis.DefaultDataPattern.String(), "regular expression `RE` naming data-loader ranges"),
		comm:      fs.String("comm-pattern", "", "regular expression `RE` naming communication kernels (default: the NCCL, RCCL, NVSHMEM, DeepEP, multimem, custom all-reduce and MSCCL++ kernels listed in docs/metrics.md)"),
		nsys:      fs.String("nsys", "", "`path` of the nsys CLI used to export .nsys-rep reports (default: $GPUGATE_NSYS, then PATH)"),
		maxBytes:  fs.Int64("max-trace-bytes", kineto.DefaultMaxBytes, "refuse a Kineto trace larger than `N` bytes after decompression"),
		maxString: fs.Int("max-string", kineto.DefaultMaxString, "refuse a Kineto trace holding a name longer than `N` bytes"),
		maxEvents: fs.Int("max-events", kineto.DefaultMaxEvents, "refuse a Kineto trace with more than `N` events"),
	}
}

func (a *analysisFlagSet) options() (analysis.Options, error) {
	var opt analysis.Options
	if *a.maxBytes <= 0 || *a.maxString <= 0 || *a.maxEvents <= 0 {
		return opt, usagef("-max-trace-bytes, -max-string and -max-events must be positive")
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"-samples-per-step", *a.samples}, {"-tokens-per-step", *a.tokens}} {
		if f.v < 0 || f.v > 1e15 || math.IsNaN(f.v) {
			return opt, usagef("%s must be a positive number (up to 1e15), not %v", f.name, f.v)
		}
	}
	if !slices.Contains(analysis.MFUDtypes, *a.mfuDtype) {
		return opt, usagef("-mfu-dtype %q: want one of %s", *a.mfuDtype, strings.Join(analysis.MFUDtypes, ", "))
	}
	opt.Work = analysis.Work{SamplesPerStep: *a.samples, TokensPerStep: *a.tokens, MFUDtype: *a.mfuDtype}
	for _, f := range []struct {
		name string
		src  *string
		dst  **regexp.Regexp
	}{{"-step-pattern", a.step, &opt.StepPattern}, {"-data-pattern", a.data, &opt.DataPattern}, {"-comm-pattern", a.comm, &opt.CommPattern}} {
		if *f.src == "" {
			continue // the default
		}
		re, err := regexp.Compile(*f.src)
		if err != nil {
			return opt, usagef("%s: %v", f.name, err)
		}
		*f.dst = re
	}
	return opt, nil
}

func (a *analysisFlagSet) loadOptions() load.Options {
	return load.Options{Nsys: nsysFlag(*a.nsys), MaxBytes: *a.maxBytes, MaxString: *a.maxString, MaxEvents: *a.maxEvents}
}

// nsysFlag resolves an -nsys flag: the flag, else $GPUGATE_NSYS (read at
// run time, so that help and doc.go do not depend on the environment).
func nsysFlag(v string) string {
	if v != "" {
		return v
	}
	return os.Getenv("GPUGATE_NSYS")
}

// ncuFlag resolves an -ncu flag: the flag, else $GPUGATE_NCU.
func ncuFlag(v string) string {
	if v != "" {
		return v
	}
	return os.Getenv("GPUGATE_NCU")
}

func countNCU(paths []string) int {
	n := 0
	for _, p := range paths {
		if isNCUFile(p) {
			n++
		}
	}
	return n
}

// analyzeFiles loads every file (an nsys export can hold several ranks) and
// analyzes each profile.
func analyzeFiles(ctx context.Context, paths []string, opt analysis.Options, lo load.Options) ([]*analysis.Result, error) {
	n := 0
	for _, p := range paths {
		if p == "-" {
			n++
		}
	}
	if n > 1 {
		return nil, usagef("standard input (-) given twice")
	}
	tmp := ""
	if n == 1 {
		var err error
		if tmp, err = spoolStdin(); err != nil {
			return nil, err
		}
		defer os.Remove(tmp)
		paths = slices.Clone(paths)
		paths[slices.Index(paths, "-")] = tmp
	}
	results, err := pipeline.AnalyzeFiles(ctx, paths, opt, lo)
	if tmp == "" {
		return results, err
	}
	if err != nil {
		return nil, renamePath(err, tmp, "stdin")
	}
	for _, r := range results {
		if r.Profile.Path == tmp {
			r.Profile.Path = "stdin"
		}
	}
	return results, nil
}

// stdin is what "-" reads; tests replace it.
var stdin io.Reader = os.Stdin

// spoolStdin copies standard input to a temporary file: the readers detect
// the format from the first bytes and the Kineto reader reads its file in
// parallel pieces, so they need a file, not a stream. The copy streams;
// memory stays bounded whatever the size.
func spoolStdin() (string, error) {
	f, err := os.CreateTemp("", "gpugate-stdin-*")
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, stdin); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("read standard input: %v", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// renamePath replaces the temporary file's name in an error with the name
// the user gave.
func renamePath(err error, tmp, name string) error {
	if se, ok := errors.AsType[*trace.SyntaxError](err); ok && se.File == tmp {
		c := *se
		c.File = name
		return fmt.Errorf("read trace %w", &c)
	}
	return errors.New(strings.ReplaceAll(err.Error(), tmp, name))
}

// conditionsBeside reads the run conditions gpugate run wrote beside the
// traces (conditions.json in their folder) when they all come from one
// run's folder; otherwise the analysis says they are not recorded.
func conditionsBeside(paths []string) *runcond.Conditions {
	none := &runcond.Conditions{NotSampled: "not recorded: the traces hold none (gpugate run samples them and writes conditions.json beside its traces)"}
	dir := ""
	for _, p := range paths {
		d := filepath.Dir(p)
		if p == "-" || (dir != "" && d != dir) {
			return none
		}
		dir = d
	}
	b, err := os.ReadFile(filepath.Join(dir, "conditions.json"))
	if err != nil {
		return none
	}
	var c runcond.Conditions
	if json.Unmarshal(b, &c) != nil {
		return &runcond.Conditions{NotSampled: "not recorded: conditions.json beside the traces is not a gpugate run-conditions document"}
	}
	return &c
}
