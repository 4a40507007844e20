package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"sync"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/trace"
	"github.com/gpugate/gpugate/trace/kineto"
	"github.com/gpugate/gpugate/trace/load"
)

var analyzeCmd = &command{
	usage: "analyze [-format text|json] [-step-pattern RE] TRACE...",
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
one window and a warning says so. A Kineto trace larger than
-max-trace-bytes, with more than -max-events events or with a name longer
than -max-string is refused with an error naming the limit. The JSON form
is a stable contract, documented in docs/json.md.`,
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		format := fs.String("format", "text", "output `format`: text or json")
		a := analysisFlags(fs)
		return func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			if *format != "text" && *format != "json" {
				return usagef("-format must be text or json, not %q", *format)
			}
			if len(args) == 0 {
				return usagef("no trace files given")
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
	nsys             *string
	maxBytes         *int64
	maxString        *int
	maxEvents        *int
}

func analysisFlags(fs *flag.FlagSet) *analysisFlagSet {
	return &analysisFlagSet{
		step:      fs.String("step-pattern", analysis.DefaultStepPattern.String(), "regular expression `RE` naming the host ranges that are training steps"),
		data:      fs.String("data-pattern", analysis.DefaultDataPattern.String(), "regular expression `RE` naming data-loader ranges"),
		comm:      fs.String("comm-pattern", analysis.DefaultCommPattern.String(), "regular expression `RE` naming communication kernels"),
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
		src  *string
		dst  **regexp.Regexp
	}{{"-step-pattern", a.step, &opt.StepPattern}, {"-data-pattern", a.data, &opt.DataPattern}, {"-comm-pattern", a.comm, &opt.CommPattern}} {
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

// analyzeFiles loads every file (an nsys export can hold several ranks) and
// analyzes each profile.
func analyzeFiles(ctx context.Context, paths []string, opt analysis.Options, lo load.Options) ([]*analysis.Result, error) {
	var profiles []*trace.Profile
	for _, path := range paths {
		ps, err := load.File(ctx, path, lo)
		if err != nil {
			return nil, fmt.Errorf("read trace %w", prefixPath(err, path))
		}
		profiles = append(profiles, ps...)
	}
	// Ranks are independent: analyze them on all cores.
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

// prefixPath makes sure an error names the file exactly once.
func prefixPath(err error, path string) error {
	switch err.(type) {
	case *trace.SyntaxError, *trace.LimitError:
		return err
	}
	if os.IsNotExist(err) {
		return fmt.Errorf("%s: no such file", path)
	}
	if pe, ok := err.(*os.PathError); ok {
		return fmt.Errorf("%s: %v", path, pe.Err)
	}
	return fmt.Errorf("%s: %w", path, err)
}
