// Command deepdive runs trace/ncu's deep-dive building blocks by hand
// (gpugate run and ab drive them after a regression with perf.yaml
// deep_dive; scripts/gpu-check.sh uses this command for its probe):
//
//	deepdive -out DIR -kernel NAME [-kernel NAME…] [-skip N] [-sections A,B] [-clock-control none] -- CMD ARGS…
//	deepdive -compare BASE.ncu-rep HEAD.ncu-rep
//	deepdive -probe
//
// The first form checks that ncu can profile here (ncu.Probe), runs the job
// under ncu once per kernel (ncu.DeepDive.Invocations), reads each report
// back (ncu.ReadReport) and writes DIR/deepdive.json. The second prints the
// one-line comparison (ncu.Compare) of the first launch of each report.
// The third only says whether ncu can profile here.
//
// Exit status: 0 done, 3 skipped (ncu cannot profile here; the note says
// why), 2 trouble.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/gpugate/gpugate/trace/ncu"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	os.Exit(deepdive(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func deepdive(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("deepdive", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cli := fs.String("ncu", os.Getenv("GPUGATE_NCU"), "ncu `path` (default $GPUGATE_NCU, then PATH)")
	out := fs.String("out", "", "`folder` for the reports and deepdive.json")
	skip := fs.Int("skip", 0, "launches of each kernel to skip (warm-up)")
	sections := fs.String("sections", "", "comma-separated ncu section identifiers (default SpeedOfLight,LaunchStats,Occupancy)")
	clock := fs.String("clock-control", "", "ncu --clock-control: base or none")
	timeout := fs.Duration("timeout", 3*time.Minute, "limit for each ncu run")
	compare := fs.Bool("compare", false, "compare two reports: deepdive -compare BASE HEAD")
	probe := fs.Bool("probe", false, "only say whether ncu can profile here (exit 0) or not (exit 3)")
	var kernels listFlag
	fs.Var(&kernels, "kernel", "kernel `name` as the trace has it (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "deepdive: %v\n", err)
		return 2
	}
	if *compare {
		if fs.NArg() != 2 {
			return fail(errors.New("-compare needs BASE and HEAD reports"))
		}
		return compareReports(ctx, *cli, fs.Arg(0), fs.Arg(1), stdout, stderr)
	}
	if *probe {
		a := ncu.Probe(ctx, *cli)
		if !a.OK {
			fmt.Fprintln(stdout, a.Note)
			return 3
		}
		fmt.Fprintf(stdout, "ncu %s can profile here\n", a.NCU)
		return 0
	}
	if *out == "" || len(kernels) == 0 || fs.NArg() == 0 {
		return fail(errors.New("usage: deepdive -out DIR -kernel NAME [...] -- CMD ARGS..."))
	}
	a := ncu.Probe(ctx, *cli)
	if !a.OK {
		fmt.Fprintln(stdout, a.Note)
		return 3
	}
	d := &ncu.DeepDive{NCU: a.NCU, OutDir: *out, Command: fs.Args(), ClockControl: *clock}
	if *sections != "" {
		d.Sections = strings.Split(*sections, ",")
	}
	var targets []ncu.Target
	for _, k := range kernels {
		targets = append(targets, ncu.Target{Name: k, Skip: *skip})
	}
	invs, err := d.Invocations(targets)
	if err != nil {
		return fail(err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fail(err)
	}
	type result struct {
		Kernel   string      `json:"kernel"`
		Function string      `json:"function"`
		Args     []string    `json:"args"`
		Seconds  float64     `json:"seconds"`
		Error    string      `json:"error,omitempty"`
		Report   *ncu.Report `json:"report"`
	}
	var results []result
	code := 0
	for _, inv := range invs {
		r := result{Kernel: inv.Kernel, Function: inv.Function, Args: inv.Args}
		fmt.Fprintf(stdout, "deepdive: %q\n", inv.Args)
		rctx, cancel := context.WithTimeout(ctx, *timeout)
		cmd := exec.CommandContext(rctx, inv.Args[0], inv.Args[1:]...)
		cmd.Stdout, cmd.Stderr = stderr, stderr
		// The job's own children (DataLoader workers) go with ncu on timeout.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = 10 * time.Second
		start := time.Now()
		err := cmd.Run()
		cancel()
		r.Seconds = time.Since(start).Seconds()
		if err == nil {
			r.Report, err = ncu.ReadReport(ctx, a.NCU, inv.Report)
		}
		if err == nil && len(r.Report.Launches) == 0 {
			err = fmt.Errorf("ncu profiled no launch of %s", inv.Function)
		}
		if err != nil {
			r.Error = err.Error()
			code = 2
			fmt.Fprintf(stdout, "deepdive: %q: %v\n", inv.Function, err)
		} else {
			for _, l := range r.Report.Launches {
				fmt.Fprintf(stdout, "deepdive: %q launch %d: grid %s block %s, %s registers/thread, %s, SM %s%%, memory %s%%, occupancy %s%% of %s%%: %s\n",
					inv.Function, l.ID, i64(l.GridSize), i64(l.BlockSize), i64(l.RegistersPerThread), dur(l.Duration),
					f64(l.SMThroughput), f64(l.MemoryThroughput), f64(l.AchievedOccupancy), f64(l.TheoreticalOccupancy), l.Limiter())
			}
		}
		results = append(results, r)
	}
	f, err := os.Create(*out + "/deepdive.json")
	if err != nil {
		return fail(err)
	}
	enc := json.NewEncoder(f)
	enc.SetIndent("", "  ")
	if err := enc.Encode(results); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	return code
}

func compareReports(ctx context.Context, cliFlag, basePath, headPath string, stdout, stderr io.Writer) int {
	cli, err := ncu.FindCLI(cliFlag)
	if err != nil {
		fmt.Fprintf(stderr, "deepdive: %v\n", err)
		return 2
	}
	var launches [2]*ncu.Launch
	for i, p := range []string{basePath, headPath} {
		rep, err := ncu.ReadReport(ctx, cli, p)
		if err != nil {
			fmt.Fprintf(stderr, "deepdive: %v\n", err)
			return 2
		}
		if len(rep.Launches) == 0 {
			fmt.Fprintf(stderr, "deepdive: %s: no launches\n", p)
			return 2
		}
		launches[i] = rep.Launches[0]
	}
	if a, b := ncu.FunctionName(launches[0].Name), ncu.FunctionName(launches[1].Name); a != b {
		fmt.Fprintf(stderr, "deepdive: different kernels: %q and %q\n", a, b)
		return 2
	}
	fmt.Fprintln(stdout, ncu.Compare(launches[0], launches[1], nil))
	return 0
}

func i64(v *int64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(*v)
}

func f64(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v)
}

func dur(v *float64) string {
	if v == nil {
		return "duration -"
	}
	return fmt.Sprintf("%.2f µs", *v/1e3)
}
