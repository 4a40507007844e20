package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/pipeline"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/stats"
)

const defaultDB = baseline.DefaultDB

const dbUsage = "baseline store: a SQLite file `path` or a postgres:// URL (default: $GPUGATE_DB, else " + defaultDB + "; under GitHub Actions ~/.cache/gpugate/WORKLOAD/baseline.db, see docs/baseline.md)"

func dbFlag(fs *flag.FlagSet) *string {
	return fs.String("db", "", dbUsage)
}

// storeTarget resolves where the baseline store is, as the Action does:
// see baseline.Location. c may be nil; workload "" is a command that
// works on a whole store.
func storeTarget(flagValue string, c *config.Config, workload string) (string, error) {
	configured := ""
	if c != nil {
		configured = c.Baseline.DB
	}
	return baseline.Location(flagValue, configured, workload, os.Getenv)
}

// openStore opens the store of storeTarget for a command without
// perf.yaml: existing says it must already exist (all but import).
func openStore(ctx context.Context, flagValue, workload string, existing bool) (*baseline.Store, error) {
	target, err := storeTarget(flagValue, nil, workload)
	if err != nil {
		return nil, err
	}
	if existing {
		return baseline.OpenExisting(ctx, target)
	}
	return baseline.Open(ctx, target)
}

var baselineRefreshCmd = &command{
	usage: "baseline refresh -config perf.yaml [-workload NAME] [-runs N] [-db PATH] [-out DIR]",
	short: "run a workload N times on this commit and record the runs as baselines (the nightly job)",
	long: `
Baseline refresh runs the workload N times (default: perf.yaml's
baseline.runs) on the current commit, exactly as gpugate run does, and
records every run as a baseline of the current branch. Pooled, their
per-step samples and their run-to-run spread are what candidates are
compared with.`,
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		cfgPath := fs.String("config", "perf.yaml", "the perf.yaml `file`")
		workload := fs.String("workload", "", "the workload to run (default: the only one)")
		runs := fs.Int("runs", 0, "how many runs to record (default: baseline.runs of perf.yaml)")
		db := fs.String("db", "", "baseline store: a SQLite file `path` or a postgres:// URL (default: $GPUGATE_DB, else perf.yaml's baseline.db)")
		outDir := fs.String("out", "", "artifacts `folder` (default .gpugate/runs/WORKLOAD/TIME)")
		nsysPath := fs.String("nsys", "", "`path` of nsys (default: $GPUGATE_NSYS, then PATH)")
		return func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			c, err := config.Load(*cfgPath)
			if err != nil {
				return err
			}
			w, err := c.Workload(*workload)
			if err != nil {
				return err
			}
			n := *runs
			if n <= 0 {
				n = c.Baseline.Runs
			}
			w.Repeat = config.Repeat(n)
			oc, err := runWorkload(ctx, stdout, stderr, c, w, runOptions{db: *db, out: *outDir, record: true, nsys: nsysFlag(*nsysPath)})
			if err != nil {
				return err
			}
			return finish(stdout, "text", oc)
		}
	},
}

var baselineRecordCmd = &command{
	usage: "baseline record -workload W [-config perf.yaml] [-branch B] [-commit C] [-db PATH|URL] TRACE...",
	short: "record traces profiled elsewhere as a baseline run",
	long: `
Baseline record analyzes the traces (the ranks of one run) and stores them
as a baseline run of the workload, with the fingerprint a gpugate run of it
would have on this machine: the machine's facts, the Python and torch of
the workload's command in perf.yaml (-config), and the profiler the traces'
format implies (Kineto: torch, nsys: nsys). A GPU model the traces name that
this machine lacks replaces the machine's. So traces of a gpugate run,
recorded on the machine that made them, gate the next gpugate run there.`,
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		workload := fs.String("workload", "", "workload `name`")
		cfgPath := fs.String("config", "", "the perf.yaml `file` that defines the workload (default perf.yaml, when it exists)")
		branch := fs.String("branch", "main", "branch the run belongs to")
		commit := fs.String("commit", "", "commit the run was made on")
		db := dbFlag(fs)
		a := analysisFlags(fs)
		return func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			if *workload == "" || len(args) == 0 {
				return usagef("want -workload and at least one trace")
			}
			var c *config.Config
			var w *config.Workload
			path := *cfgPath
			if path == "" {
				if _, err := os.Stat("perf.yaml"); err == nil {
					path = "perf.yaml"
				}
			}
			if path != "" {
				var err error
				if c, err = config.Load(path); err != nil {
					return err
				}
				if w, err = c.Workload(*workload); err != nil {
					return err
				}
			}
			opt, err := a.options()
			if err != nil {
				return err
			}
			results, err := analyzeFiles(ctx, args, opt, a.loadOptions())
			if err != nil {
				return err
			}
			if w == nil {
				fmt.Fprintf(stderr, "gpugate: no perf.yaml defines %s: the fingerprint has no Python or torch version, so only runs recorded the same way will match (pass -config)\n", escape.Terminal(*workload))
			}
			// A gpugate run's folder holds each trace's node (Slurm) in
			// the job's process files: the stored run keeps it.
			for _, wn := range pipeline.NodesFromJobFiles(results) {
				fmt.Fprintf(stderr, "gpugate: warning: %s\n", escape.Terminal(wn))
			}
			fp := pipeline.TraceFingerprint(ctx, w, nsysFlag(*a.nsys), results)
			doc := report.NewStoredAnalysis(results)
			var buf bytes.Buffer
			if err := doc.WriteJSON(&buf); err != nil {
				return err
			}
			fpJSON, _ := json.Marshal(fp)
			target, err := storeTarget(*db, c, *workload)
			if err != nil {
				return err
			}
			store, err := baseline.Open(ctx, target)
			if err != nil {
				return err
			}
			defer store.Close()
			id, err := store.Record(ctx, baseline.Run{Workload: *workload, Branch: *branch, Commit: *commit, Kind: "baseline",
				Profiler: fp.Profiler, FingerprintHash: fp.Hash(), Fingerprint: fpJSON, Version: version(), Analysis: buf.Bytes()})
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "recorded run %d of %s (%d profile(s), %d steps) as baseline of %s in %s, fingerprint %s\n", id, escape.Terminal(*workload), len(results), len(results[0].Steps), escape.Terminal(*branch), escape.Terminal(store.Name()), fp.Hash())
			return nil
		}
	},
}

var baselineListCmd = &command{
	usage: "baseline list [-db PATH] [-workload W] [-config perf.yaml] [-format text|json]",
	short: "list the stored runs",
	long: `
Baseline list prints the stored runs, oldest first, with their step time:
the run's mean step, its ranks combined as the gate combines them (a step
takes its slowest rank's time), the number the gate compares and baseline
show charts; and whether the host was busy while each ran (column host:
"busy" for a disturbed run, which comparisons leave out of the time
metrics; "quiet"; "-" for a run stored before gpugate sampled the host),
under the host: margins of -config (default: perf.yaml when it exists,
else gpugate's).`,
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		db := dbFlag(fs)
		workload := fs.String("workload", "", "only this workload")
		format := formatFlag(fs, "text", "json")
		cfgPath := fs.String("config", "", "the perf.yaml `file` whose host: margins judge the runs (default perf.yaml, when it exists)")
		return func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			margins, err := hostMargins(*cfgPath)
			if err != nil {
				return err
			}
			store, err := openStore(ctx, *db, *workload, true)
			if err != nil {
				return err
			}
			defer store.Close()
			runs, err := store.Runs(ctx, baseline.Filter{Workload: *workload})
			if err != nil {
				return err
			}
			type row struct {
				ID          int64   `json:"id"`
				Workload    string  `json:"workload"`
				Branch      string  `json:"branch"`
				Commit      string  `json:"commit"`
				Created     string  `json:"created_at"`
				Kind        string  `json:"kind"`
				Profiler    string  `json:"profiler"`
				Fingerprint string  `json:"fingerprint_hash"`
				Steps       int     `json:"steps"`
				StepTimeMs  float64 `json:"step_time_ms"`
				// TimedStepMs is the run's step time in its timing
				// runs (no profiler): what a comparison judges step
				// time on; omitted for a run stored without them.
				TimedStepMs *float64 `json:"timed_step_time_ms,omitempty"`
				// TimingHost is "busy" when its timing run was
				// disturbed (left out of step_time), else omitted.
				TimingHost string `json:"timing_host,omitempty"`
				// Host is "busy" (disturbed: left out of the time
				// metrics), "quiet", or "" when the host was not sampled;
				// HostBusy says why it was busy.
				Host     string `json:"host"`
				HostBusy string `json:"host_busy,omitempty"`
			}
			rows := []row{}
			stepTime, _ := analysis.MetricByName("step_time")
			for _, r := range runs {
				var doc report.Analysis
				json.Unmarshal(r.Analysis, &doc)
				x := row{ID: r.ID, Workload: r.Workload, Branch: r.Branch, Commit: short(r.Commit), Created: r.Created.UTC().Format(time.RFC3339),
					Kind: r.Kind, Profiler: r.Profiler, Fingerprint: r.FingerprintHash}
				if len(doc.Profiles) > 0 {
					x.Steps = len(doc.Profiles[0].Steps)
					if v, ok := doc.RunValue(stepTime); ok {
						x.StepTimeMs = v
					}
				}
				x.Host, x.HostBusy = hostState(r, margins)
				// The step time a verdict compares, as the dashboard plots
				// it (gate.JudgedValue): the run's quiet timing runs'.
				if j, ok := gate.JudgedValue(gate.Run(doc.Results()), doc.TimingRuns, stepTime, margins); ok && j.Timing > 0 {
					v := j.Value
					x.TimedStepMs = &v
				}
				for _, t := range doc.TimingRuns {
					if gate.HostBusy(t.Conditions, margins) != "" {
						x.TimingHost = "busy"
					}
				}
				rows = append(rows, x)
			}
			if *format == "json" {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "id\tworkload\tbranch\tcommit\tcreated (UTC)\tkind\tprofiler\tfingerprint\thost\tsteps\ttimed step ms\tmean step ms")
			var busy []string
			for _, x := range rows {
				// To the second: the runs of one refresh are seconds apart.
				created := strings.Replace(strings.TrimSuffix(x.Created, "Z"), "T", " ", 1)
				timed := "-"
				if x.TimedStepMs != nil {
					timed = fmt.Sprintf("%.2f", *x.TimedStepMs)
					if x.TimingHost != "" {
						timed += " (busy)"
					}
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%.2f\n", x.ID, escape.Terminal(x.Workload), escape.Terminal(x.Branch), escape.Terminal(x.Commit), created, escape.Terminal(x.Kind), escape.Terminal(x.Profiler), escape.Terminal(x.Fingerprint), cmp.Or(x.Host, "-"), x.Steps, timed, x.StepTimeMs)
				if x.HostBusy != "" {
					busy = append(busy, fmt.Sprintf("run %d: %s", x.ID, x.HostBusy))
				}
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if slices.ContainsFunc(rows, func(x row) bool { return x.TimedStepMs != nil }) {
				fmt.Fprintf(stdout, "\ntimed step ms: the mean step of the run's timing run (no profiler; the geometric mean of its quiet ones when it has several), which comparisons judge step_time on and the dashboard and baseline show plot; mean step ms: the profiled run's, which the other metrics come from\n")
			}
			if len(busy) > 0 {
				fmt.Fprintf(stdout, "\ndisturbed runs (left out of the time metrics of every comparison):\n")
				for _, b := range busy {
					fmt.Fprintf(stdout, "  %s\n", b)
				}
			}
			return nil
		}
	},
}

func short(commit string) string { return pipeline.Short(commit) }

// runPoint is one stored run's value of a metric (report.Analysis.RunValue),
// for baseline show.
type runPoint struct {
	RunID   int64
	Commit  string
	Created time.Time
	Value   float64
}

var baselineShowCmd = &command{
	usage: "baseline show -workload W [-metric step_time] [-branch main] [-fingerprint HASH] [-db PATH|URL]",
	short: "show a metric's history over the baseline runs, and any sustained shift",
	long: `
Baseline show prints a metric's value per run over the baseline runs of a
branch as a small text chart, each run by its store id — the number the
gate compares, as the dashboard plots it: step time from the run's timing
runs where it has them (their quiet ones under -config's host: margins),
else the run's mean per step, ranks combined as the gate combines them (a
time the slowest rank's, a count the sum over ranks) — and tests the history for one sustained shift
(a change point: permutation test at α=0.01) so that slow regressions that no
single pull request crossed are seen. A history is one machine's: it holds
the runs of one fingerprint (-fingerprint, default the newest baseline
run's), and says how many runs of other fingerprints it left out.`,
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		db := dbFlag(fs)
		workload := fs.String("workload", "", "workload `name`")
		metric := fs.String("metric", "step_time", "metric `name`")
		branch := fs.String("branch", "main", "branch")
		fingerprint := fs.String("fingerprint", "", "fingerprint `hash` whose runs to show (default: the newest baseline run's)")
		cfgPath := fs.String("config", "", "the perf.yaml `file` whose host: margins judge the runs (default perf.yaml, when it exists)")
		return func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			if *workload == "" {
				return usagef("want -workload")
			}
			margins, err := hostMargins(*cfgPath)
			if err != nil {
				return err
			}
			m, ok := analysis.MetricByName(*metric)
			if !ok {
				return usagef("-metric %q: unknown metric", *metric)
			}
			store, err := openStore(ctx, *db, *workload, true)
			if err != nil {
				return err
			}
			defer store.Close()
			fp := *fingerprint
			all, err := store.Runs(ctx, baseline.Filter{Workload: *workload, Branch: *branch, Kind: "baseline"})
			if err != nil {
				return err
			}
			if fp == "" && len(all) > 0 {
				fp = all[len(all)-1].FingerprintHash
			}
			others := 0
			for _, r := range all {
				if r.FingerprintHash != fp {
					others++
				}
			}
			// Each run's value as the gate computes it from the stored
			// analysis (report.Analysis.RunValue), not the median of
			// its pooled rank-steps: one number per run everywhere.
			var pts []runPoint
			for _, r := range all {
				if r.FingerprintHash != fp {
					continue
				}
				var doc report.Analysis
				if err := json.Unmarshal(r.Analysis, &doc); err != nil {
					return fmt.Errorf("baseline run %d: stored analysis: %v", r.ID, err)
				}
				if gate.CheckTimingRuns(doc.TimingRuns) != nil {
					return fmt.Errorf("baseline run %d: stored timing runs are not gpugate's", r.ID)
				}
				if j, ok := gate.JudgedValue(gate.Run(doc.Results()), doc.TimingRuns, m, margins); ok {
					pts = append(pts, runPoint{RunID: r.ID, Commit: r.Commit, Created: r.Created, Value: j.Value})
				}
			}
			if len(pts) == 0 {
				return fmt.Errorf("no baseline runs of %s on %s with %s and fingerprint %q in %s", *workload, *branch, m.Name, fp, store.Name())
			}
			var xs []float64
			lo, hi := pts[0].Value, pts[0].Value
			for _, p := range pts {
				xs = append(xs, p.Value)
				lo, hi = min(lo, p.Value), max(hi, p.Value)
			}
			cp := stats.ChangePoint(xs, 0.01, 999)
			fmt.Fprintf(stdout, "%s of %s on %s, mean per run (%s; ranks combined as the gate combines them), %d runs\n", m.Name, escape.Terminal(*workload), escape.Terminal(*branch), m.Unit, len(pts))
			fmt.Fprintf(stdout, "fingerprint %s: one machine's history\n", escape.Terminal(fp))
			if others > 0 {
				fmt.Fprintf(stdout, "(%d baseline run(s) of other fingerprints left out: -fingerprint picks another machine's history; baseline list shows them)\n", others)
			}
			fmt.Fprintln(stdout)
			for i, p := range pts {
				bar := 1
				if hi > lo {
					bar = 1 + int(40*(p.Value-lo)/(hi-lo))
				}
				mark := " "
				if cp.Found && i == cp.Index {
					mark = "▶"
				}
				fmt.Fprintf(stdout, "%s run %-5d %s %-10s %9.3f %s\n", mark, p.RunID, p.Created.UTC().Format("2006-01-02 15:04"), escape.Terminal(short(p.Commit)), p.Value, strings.Repeat("█", bar))
			}
			if cp.Found {
				fmt.Fprintf(stdout, "\nsustained shift at run %d (%s): %.3f → %.3f %s (%+.1f%%), p=%.3f\n", pts[cp.Index].RunID, escape.Terminal(short(pts[cp.Index].Commit)),
					cp.Before, cp.After, m.Unit, 100*(cp.After-cp.Before)/cp.Before, cp.P)
			} else {
				fmt.Fprintf(stdout, "\nno sustained shift (p=%.3f)\n", cp.P)
			}
			if err := showConditions(stdout, all, fp, margins); err != nil {
				return err
			}
			return showNCU(ctx, stdout, store, pts)
		}
	},
}

var baselineExportCmd = &command{
	usage: "baseline export [-db PATH|URL]",
	short: "write every stored run as portable JSON to stdout",
	long: `
Baseline export writes the store as JSON, so that ephemeral runners can
carry baselines as CI artifacts or caches, and so that a store moves between
SQLite and PostgreSQL (gpugate baseline import reads it). Runs are in the
order of their creation time, then id; each run keeps its fingerprint and
analysis documents byte for byte (import gives runs fresh ids, in the
order of the export's ids). An export of one backend,
imported into an empty store of the other and exported again, is identical.`,
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		db := dbFlag(fs)
		return func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			store, err := openStore(ctx, *db, "", true)
			if err != nil {
				return err
			}
			defer store.Close()
			e, err := store.Export(ctx)
			if err != nil {
				return err
			}
			return json.NewEncoder(stdout).Encode(e)
		}
	},
}

var baselineImportCmd = &command{
	usage: "baseline import [-db PATH|URL] FILE",
	short: "add the runs of an export to the store",
	long: `
Baseline import adds the runs of a gpugate baseline export (FILE, or - for
stdin), skipping runs already present. Every run is checked — names are
UTF-8 text, the workload's a name perf.yaml takes (letters, digits, '.', '_'
and '-'), the kind is baseline or candidate, the time is not in the future
(10 minutes of clock skew allowed), the analysis is a gpugate analyze
document with at least one profile that the gate can read back, every
number fits the type that holds it (an integer where one is meant), every
time ("*_ns") is not negative and within its bound, no object has a key
twice, sizes are within the caps of docs/baseline.md (64 MiB and 100,000
steps per profile in a run, 10,000 boxes in its median step) — and one bad
run imports nothing. The import holds one run in memory at a time. The
export's ids are labels: the store gives each run a fresh id.`,
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		db := dbFlag(fs)
		return func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			if len(args) != 1 {
				return usagef("want one export file")
			}
			// The export is read twice, from a file (stdin is copied to a
			// temporary one first): an index of where its runs lie, then
			// one run at a time (baseline.Store.ImportFrom).
			f, err := importFile(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			fi, err := f.Stat()
			if err != nil {
				return err
			}
			store, err := openStore(ctx, *db, "", false)
			if err != nil {
				return err
			}
			defer store.Close()
			n, total, err := store.ImportFrom(ctx, f, fi.Size(), pipeline.CheckRun)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "imported %d of %d run(s) into %s\n", n, total, escape.Terminal(store.Name()))
			return nil
		}
	},
}

// importFile opens an export to import: the file, or for "-" a temporary
// copy of stdin (removed once opened), which the import reads twice.
func importFile(name string) (*os.File, error) {
	if name != "-" {
		return os.Open(name)
	}
	f, err := os.CreateTemp("", "gpugate-import-")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	if _, err := io.Copy(f, os.Stdin); err != nil {
		f.Close()
		return nil, fmt.Errorf("read the export from stdin: %w", err)
	}
	return f, nil
}

var baselinePruneCmd = &command{
	usage: "baseline prune [-db PATH|URL] -keep N",
	short: "keep the newest N runs per workload, fingerprint and kind",
	long:  "Baseline prune deletes all but the newest N runs of each workload, fingerprint and kind (baseline or candidate).",
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		db := dbFlag(fs)
		keep := fs.Int("keep", 0, "runs to keep per workload, fingerprint and kind")
		return func(ctx context.Context, stdout, stderr io.Writer, args []string) error {
			if *keep < 1 {
				return usagef("-keep must be at least 1")
			}
			store, err := openStore(ctx, *db, "", true)
			if err != nil {
				return err
			}
			defer store.Close()
			n, err := store.Prune(ctx, *keep)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "pruned %d run(s) from %s\n", n, escape.Terminal(store.Name()))
			return nil
		}
	},
}

// showConditions prints the run conditions of the baseline runs of
// fingerprint fp (runs: oldest first), for baseline show.
func showConditions(w io.Writer, runs []baseline.Run, fp string, m gate.HostMargins) error {
	var cs []*runcond.Conditions
	var host []string
	for _, r := range runs {
		if r.FingerprintHash != fp {
			continue
		}
		var c *runcond.Conditions
		if len(r.Conditions) > 0 {
			c = new(runcond.Conditions)
			if err := json.Unmarshal(r.Conditions, c); err != nil {
				return fmt.Errorf("baseline run %d: run conditions: %v", r.ID, err)
			}
		} else {
			c = &runcond.Conditions{NotSampled: "not recorded (stored before gpugate sampled run conditions)"}
		}
		cs = append(cs, c)
		if h := report.HostText(c.Host); h != "" {
			line := fmt.Sprintf("run %d (%s): %s", r.ID, r.Created.UTC().Format("2006-01-02 15:04"), h)
			host = append(host, line)
			if why := gate.HostBusy(c, m); why != "" {
				host = append(host, "  DISTURBED, left out of the time metrics: "+why)
			}
		}
	}
	if len(cs) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nRun conditions (nvidia-smi while each run ran):")
	for _, l := range report.ConditionsText(cs) {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if len(host) > 0 {
		fmt.Fprintln(w, "\nHost (the CPUs while each run ran):")
		for _, l := range host {
			fmt.Fprintf(w, "  %s\n", escape.Terminal(l))
		}
	}
	return nil
}

// hostMargins are the host: margins of the perf.yaml at path (default
// ./perf.yaml when it exists), else gpugate's defaults.
func hostMargins(path string) (gate.HostMargins, error) {
	if path == "" {
		if _, err := os.Stat("perf.yaml"); err != nil {
			return pipeline.HostMargins(nil), nil
		}
		path = "perf.yaml"
	}
	c, err := config.Load(path)
	if err != nil {
		return gate.HostMargins{}, err
	}
	return pipeline.HostMargins(c), nil
}

// hostState is whether a stored run's host was "busy" (with why) or
// "quiet" under m; "" for a run without host conditions.
func hostState(r baseline.Run, m gate.HostMargins) (state, why string) {
	if len(r.Conditions) == 0 {
		return "", ""
	}
	var c runcond.Conditions
	if json.Unmarshal(r.Conditions, &c) != nil || c.Host == nil || c.Host.NotSampled != "" {
		return "", ""
	}
	if why := gate.HostBusy(&c, m); why != "" {
		return "busy", why
	}
	return "quiet", ""
}
