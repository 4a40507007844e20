package pipeline

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/runner"
	"github.com/gpugate/gpugate/trace/ncu"
)

// The Nsight Compute deep-dive (perf.yaml deep_dive): after a regression,
// the job runs again under ncu once per kernel whose time per step grew
// most, each run profiling one launch of that kernel after the warm-up
// steps; the reports are read back (ncu --import) and each kernel gets one
// line that says what changed in it (ncu.KernelResult.Summary). The runs go
// through the runner package like the job's own: own process group,
// timeout, output kept in a capped log, leftovers killed.
//
// Without an ncu that can profile (no GPU, no driver, no ncu) nothing runs
// and the report says ncu's own reason (ncu.Probe). Nothing is ever made
// up: a side that was not profiled has no values.

// ncuTimeoutFactor: an ncu run of the job may take this many times the
// workload's timeout (ncu intercepts every CUDA call and replays the one
// profiled kernel for each pass).
const ncuTimeoutFactor = 2

// maxNote bounds a kernel's note (an ncu failure quotes the job's output).
const maxNote = 400

// ncuPath is the ncu to use: the option, else $GPUGATE_NCU, else ncu.FindCLI's
// search.
func ncuPath(opt string) string {
	if opt != "" {
		return opt
	}
	return os.Getenv("GPUGATE_NCU")
}

// pick is a kernel chosen for the deep-dive.
type pick struct {
	gate.KernelChange
	added bool // new in the candidate: the baseline does not run it
}

// regressedKernels returns the n kernels whose time per step grew most:
// changed kernels that got slower and kernels new in the candidate, by
// their growth in ms per step.
func regressedKernels(k gate.KernelDiff, n int) []pick {
	var ps []pick
	for _, c := range k.Changed {
		if c.DeltaMs > 0 {
			ps = append(ps, pick{KernelChange: c})
		}
	}
	for _, c := range k.Added {
		if c.DeltaMs > 0 {
			ps = append(ps, pick{KernelChange: c, added: true})
		}
	}
	slices.SortStableFunc(ps, func(a, b pick) int {
		return cmp.Or(cmp.Compare(b.DeltaMs, a.DeltaMs), strings.Compare(a.Name, b.Name))
	})
	return ps[:min(len(ps), n)]
}

// launchSkip is how many launches of a kernel to skip so that the profiled
// one comes after the warm-up steps: warmup_steps times its launches per
// step.
func launchSkip(w *config.Workload, perStep float64) int {
	return int(math.Round(float64(w.WarmupSteps) * perStep))
}

// profiled is one kernel's ncu result on one side.
type profiled struct {
	launch *ncu.Launch
	writer string // the ncu that wrote the report
	note   string // why there is no launch, or what is odd about it
}

// ncuRun is the ncu runs of one side of a deep-dive.
type ncuRun struct {
	ncu     string
	w       *config.Workload
	workdir string // the job's folder on this side
	out     string // the side's folder for reports and logs
	side    string // "head" or "base", for names and logs
	log     io.Writer
	spent   *Tally // counts each ncu run, for the report's cost; nil: not counted
}

// workdirOf is the folder the workload runs in when its config lives in dir
// (as Prepare resolves it).
func workdirOf(w *config.Workload, dir string) string {
	wd := cmp.Or(w.Workdir, ".")
	if !filepath.IsAbs(wd) {
		wd = filepath.Join(dir, wd)
	}
	return wd
}

// profile runs the job under ncu once per target, in order, and reads each
// report back. A failure of one run (ncu crashed, timed out, wrote no
// report or one without the kernel) is that kernel's note; the others go
// on.
func (r *ncuRun) profile(ctx context.Context, targets []ncu.Target) []profiled {
	out := make([]profiled, len(targets))
	dd := r.w.DeepDive
	if r.log == nil {
		r.log = io.Discard
	}
	// Every ncu --import of this deep-dive together gets the workload's
	// timeout: one import alone was bounded only by 5 min a page (301 s
	// seen for one kernel).
	importLeft := time.Duration(r.w.Timeout)
	for i, t := range targets {
		if ctx.Err() != nil {
			out[i].note = "not profiled: interrupted"
			continue
		}
		d := &ncu.DeepDive{NCU: r.ncu, Sections: dd.Sections, ClockControl: dd.ClockControl,
			OutDir: filepath.Join(r.out, fmt.Sprintf("k%d", i+1)), Command: r.w.Command.Args()}
		invs, err := d.Invocations([]ncu.Target{t})
		if err != nil {
			out[i].note = "not profiled: " + err.Error()
			continue
		}
		inv := invs[0]
		fmt.Fprintf(r.log, "gpugate: deep-dive %s %d/%d: ncu on %s (launch-skip %d)\n", r.side, i+1, len(targets), escape.Terminal(inv.Function), t.Skip)
		start := time.Now()
		_, err = runner.Run(ctx, runner.Job{
			Name: fmt.Sprintf("%s ncu %s %d", r.w.Name, r.side, i+1), Args: inv.Args, Dir: r.workdir, Env: r.w.Env,
			Timeout: ncuTimeoutFactor * time.Duration(r.w.Timeout), Profiler: runner.None, Out: d.OutDir,
			Output: r.log, StopCommands: inActions(), Network: r.w.Network,
		})
		r.spent.Add(time.Since(start))
		if err != nil {
			out[i].note = clipNote("ncu run failed: " + err.Error())
			continue
		}
		if _, err := os.Stat(inv.Report); err != nil {
			out[i].note = fmt.Sprintf("ncu wrote no report: it profiled no launch of %s after skipping %d (log: %s)", inv.Function, t.Skip, filepath.Join(d.OutDir, "job.log"))
			continue
		}
		if importLeft <= 0 {
			out[i].note = fmt.Sprintf("ncu report not read: reading the deep-dive's reports (ncu --import) took the workload's timeout, %s (report: %s)", time.Duration(r.w.Timeout), inv.Report)
			continue
		}
		ictx, cancel := context.WithTimeout(ctx, importLeft)
		t0 := time.Now()
		rep, err := ncu.ReadReport(ictx, r.ncu, inv.Report)
		cancel()
		importLeft -= time.Since(t0)
		if err != nil {
			out[i].note = clipNote("ncu report unreadable: " + err.Error())
			continue
		}
		out[i] = pickLaunch(rep, inv.Function)
		fmt.Fprintf(r.log, "gpugate: deep-dive %s %d/%d: %s in %.1fs\n", r.side, i+1, len(targets), escape.Terminal(cmp.Or(out[i].note, "profiled")), time.Since(start).Seconds())
	}
	return out
}

// pickLaunch finds the launch of function in a report. ncu with
// --launch-count 1 writes one; a report with several launches of it gets
// the first, with a note, and one with none names what it holds instead.
func pickLaunch(rep *ncu.Report, function string) profiled {
	var match []*ncu.Launch
	var others []string
	for _, l := range rep.Launches {
		if fn := ncu.FunctionName(l.Name); fn == function {
			match = append(match, l)
		} else if !slices.Contains(others, fn) {
			others = append(others, fn)
		}
	}
	p := profiled{writer: rep.Writer}
	switch {
	case len(match) == 0 && len(others) == 0:
		p.note = fmt.Sprintf("ncu's report holds no launch at all (%s)", rep.Path)
	case len(match) == 0:
		if len(others) > 3 {
			others = append(others[:3], fmt.Sprintf("%d more", len(others)-3))
		}
		p.note = fmt.Sprintf("ncu's report holds no launch of %s, only of %s", function, strings.Join(others, ", "))
	default:
		p.launch = match[0]
		if len(match) > 1 {
			p.note = fmt.Sprintf("ncu's report holds %d launches of %s; the first (ID %d) is shown", len(match), function, match[0].ID)
		}
	}
	return p
}

func clipNote(s string) string {
	if r := []rune(s); len(r) > maxNote {
		s = string(r[:maxNote-1]) + "…"
	}
	return s
}

// deepDiveDir is where a deep-dive writes: the run's artifacts folder.
func deepDiveDir(o Options, ex *Execution) (string, error) {
	out := cmp.Or(ex.Out, o.Out)
	if out == "" {
		var err error
		if out, err = runner.NewRunDir(filepath.Join(".gpugate", "runs"), o.Workload.Name, time.Now()); err != nil {
			return "", err
		}
	}
	// ncu runs in the job's folder: its --export path must not be
	// relative to ours.
	abs, err := filepath.Abs(filepath.Join(out, "deepdive"))
	if err != nil {
		return "", err
	}
	return abs, nil
}

// result makes a kernel's result from its pick and the two sides.
func result(p pick, head profiled, base *profiled, baseFrom string) ncu.KernelResult {
	k := ncu.KernelResult{Kernel: p.Name, Function: ncu.FunctionName(p.Name), DeltaMs: p.DeltaMs, Head: head.launch}
	if !p.added && p.BaselineMs > 0 {
		c := 100 * p.DeltaMs / p.BaselineMs
		k.ChangePct = &c
	}
	var notes []string
	if head.note != "" {
		notes = append(notes, "candidate: "+head.note)
	}
	switch {
	case p.added:
		notes = append(notes, "base: the baseline does not run this kernel")
	case base == nil:
		notes = append(notes, "base: no ncu data for the baseline")
	default:
		k.Base = base.launch
		if k.Base != nil {
			k.BaseFrom = baseFrom
		}
		if base.note != "" {
			notes = append(notes, "base: "+base.note)
		}
	}
	k.Note = strings.Join(notes, "; ")
	return k
}

// skipped is the deep-dive report of one that did not run.
func skipped(note string) *ncu.DeepDiveReport {
	return &ncu.DeepDiveReport{Note: note, Kernels: []ncu.KernelResult{}}
}

// deepDive is the deep-dive of gpugate run after a regression: the
// candidate's side is profiled now; the baseline's comes from the
// deep-dive stored with the selected baseline runs (gpugate baseline
// refresh with deep_dive set records one), else it has no values: the base
// commit's code is not checked out here. The candidate's kernels are
// stored with its runs when the store may be written.
func deepDive(ctx context.Context, o Options, ex *Execution, rep *gate.Report, sel *Selection, store *baseline.Store) *ncu.DeepDiveReport {
	w := o.Workload
	a := ncu.Probe(ctx, ncuPath(o.NCU))
	if !a.OK {
		return skipped(a.Note)
	}
	picks := regressedKernels(rep.Kernels, w.DeepDive.Kernels)
	if len(picks) == 0 {
		return skipped("deep-dive: no kernel's time per step grew; nothing to profile")
	}
	dir, err := deepDiveDir(o, ex)
	if err != nil {
		return skipped("deep-dive not run: " + err.Error())
	}
	targets := make([]ncu.Target, len(picks))
	for i, p := range picks {
		targets[i] = ncu.Target{Name: p.Name, Skip: launchSkip(w, p.CandidateCount)}
	}
	head := (&ncuRun{ncu: a.NCU, w: w, workdir: workdirOf(w, o.Dir), out: filepath.Join(dir, "head"), side: "head", log: o.Log, spent: &ex.Spent}).profile(ctx, targets)

	// The baseline's side, from the store: the newest stored deep-dive of
	// each kernel among the selected runs.
	stored := map[string]*profiled{}
	var ids []int64
	for _, s := range sel.Stored {
		ids = append(ids, s.ID)
	}
	rows, err := store.NCUKernels(ctx, ids)
	if err != nil {
		fmt.Fprintf(o.Log, "gpugate: deep-dive: %s\n", escape.Terminal(err.Error()))
	}
	for _, r := range rows {
		if _, ok := stored[r.Kernel]; ok {
			continue
		}
		var l ncu.Launch
		if err := json.Unmarshal(r.Launch, &l); err != nil {
			continue
		}
		stored[r.Kernel] = &profiled{launch: &l, writer: r.Writer}
	}
	res := &ncu.DeepDiveReport{Kernels: []ncu.KernelResult{}}
	fromStore := 0
	for i, p := range picks {
		base := stored[p.Name]
		if base != nil {
			fromStore++
		}
		res.Kernels = append(res.Kernels, result(p, head[i], base, "store"))
	}
	baseWords := "the baseline's values come from the deep-dive stored with its runs"
	switch {
	case fromStore == 0:
		baseWords = "the baseline runs have no ncu data (record them with deep_dive set: gpugate baseline refresh), so only the candidate's values are shown"
	case fromStore < len(picks):
		baseWords = fmt.Sprintf("the baseline runs have ncu data for %d of the %d kernels", fromStore, len(picks))
	}
	res.Note = fmt.Sprintf("Nsight Compute profiled one launch of each of the %d kernel(s) whose time per step grew most, after %d warm-up step(s); %s. Reports: %s",
		len(picks), w.WarmupSteps, baseWords, filepath.Join(dir, "head"))
	if store != nil && !store.ReadOnly() {
		storeDeepDive(ctx, o.Log, store, ex.RunIDs, picks, head)
	}
	return res
}

// storeDeepDive records the profiled kernels with each of the runs.
func storeDeepDive(ctx context.Context, log io.Writer, store *baseline.Store, runIDs []int64, picks []pick, ps []profiled) {
	var rows []baseline.NCUKernel
	for i, p := range ps {
		if p.launch == nil {
			continue
		}
		b, err := json.Marshal(p.launch)
		if err != nil {
			continue
		}
		rows = append(rows, baseline.NCUKernel{Rank: i + 1, Kernel: picks[i].Name, Function: ncu.FunctionName(picks[i].Name), Writer: p.writer, Launch: b})
	}
	if len(rows) == 0 {
		return
	}
	for _, id := range runIDs {
		if err := store.RecordNCU(ctx, id, rows); err != nil {
			fmt.Fprintf(log, "gpugate: deep-dive not stored: %s\n", escape.Terminal(err.Error()))
			return
		}
	}
	fmt.Fprintf(log, "gpugate: deep-dive of %d kernel(s) stored with %d run(s) in %s\n", len(rows), len(runIDs), escape.Terminal(store.Name()))
}

// recordDeepDive is the deep-dive of a recording (gpugate baseline
// refresh, run -record-baseline) with deep_dive set: the kernels that take
// the most time per step are profiled and stored with the recorded runs,
// so that a later regression has the baseline's side from the store. It
// runs only where ncu can profile; it says so in the log either way.
func recordDeepDive(ctx context.Context, o Options, ex *Execution, store *baseline.Store) {
	w := o.Workload
	a := ncu.Probe(ctx, ncuPath(o.NCU))
	if !a.OK {
		fmt.Fprintf(o.Log, "gpugate: %s; no ncu data recorded with the baseline\n", escape.Terminal(a.Note))
		return
	}
	picks := busiestKernels(ex.Runs, w.DeepDive.Kernels)
	if len(picks) == 0 {
		fmt.Fprintf(o.Log, "gpugate: deep-dive: the runs have no kernels; no ncu data recorded\n")
		return
	}
	dir, err := deepDiveDir(o, ex)
	if err != nil {
		fmt.Fprintf(o.Log, "gpugate: deep-dive not run: %s\n", escape.Terminal(err.Error()))
		return
	}
	targets := make([]ncu.Target, len(picks))
	for i, p := range picks {
		targets[i] = ncu.Target{Name: p.Name, Skip: launchSkip(w, p.CandidateCount)}
	}
	ps := (&ncuRun{ncu: a.NCU, w: w, workdir: workdirOf(w, o.Dir), out: filepath.Join(dir, "baseline"), side: "baseline", log: o.Log, spent: &ex.Spent}).profile(ctx, targets)
	for i, p := range ps {
		if p.launch != nil {
			fmt.Fprintf(o.Log, "gpugate: deep-dive %s: %s\n", escape.Terminal(picks[i].Name), ncu.Describe(p.launch))
		} else {
			fmt.Fprintf(o.Log, "gpugate: deep-dive %s: %s\n", escape.Terminal(picks[i].Name), escape.Terminal(p.note))
		}
	}
	storeDeepDive(ctx, o.Log, store, ex.RunIDs, picks, ps)
}

// busiestKernels returns the n kernels with the most time per step over
// the runs (the ranks of a run summed, per job step), as picks whose
// candidate side is the runs.
func busiestKernels(runs []gate.Run, n int) []pick {
	type acc struct{ count, ns float64 }
	sum := map[string]*acc{}
	steps := 0
	for _, run := range runs {
		s := -1
		for _, r := range run {
			if s < 0 || len(r.Steps) < s {
				s = len(r.Steps)
			}
			for _, k := range r.KernelStats {
				a := sum[k.Name]
				if a == nil {
					a = &acc{}
					sum[k.Name] = a
				}
				a.count += float64(k.Count)
				a.ns += float64(k.Time)
			}
		}
		steps += max(s, 0)
	}
	var ps []pick
	for name, a := range sum {
		d := float64(max(steps, 1))
		ps = append(ps, pick{KernelChange: gate.KernelChange{Name: name, CandidateCount: a.count / d, CandidateMs: a.ns / 1e6 / d, DeltaMs: a.ns / 1e6 / d}, added: true})
	}
	slices.SortFunc(ps, func(a, b pick) int {
		return cmp.Or(cmp.Compare(b.CandidateMs, a.CandidateMs), strings.Compare(a.Name, b.Name))
	})
	return ps[:min(len(ps), n)]
}

// abDeepDive is the deep-dive of gpugate ab after a regression: both sides
// are checked out, so both are profiled, base first, each in its own
// checkout.
func abDeepDive(ctx context.Context, o ABOptions, rep *gate.Report, base, head *Plan, out string, spent *Tally) *ncu.DeepDiveReport {
	w := o.Workload
	a := ncu.Probe(ctx, ncuPath(o.NCU))
	if !a.OK {
		return skipped(a.Note)
	}
	picks := regressedKernels(rep.Kernels, w.DeepDive.Kernels)
	if len(picks) == 0 {
		return skipped("deep-dive: no kernel's time per step grew; nothing to profile")
	}
	dir, err := filepath.Abs(filepath.Join(out, "deepdive"))
	if err != nil {
		return skipped("deep-dive not run: " + err.Error())
	}
	var baseTargets []ncu.Target
	var baseIdx []int
	headTargets := make([]ncu.Target, len(picks))
	for i, p := range picks {
		headTargets[i] = ncu.Target{Name: p.Name, Skip: launchSkip(w, p.CandidateCount)}
		if !p.added {
			baseTargets = append(baseTargets, ncu.Target{Name: p.Name, Skip: launchSkip(w, p.BaselineCount)})
			baseIdx = append(baseIdx, i)
		}
	}
	bs := (&ncuRun{ncu: a.NCU, w: w, workdir: base.workdir, out: filepath.Join(dir, "base"), side: "base", log: o.Log, spent: spent}).profile(ctx, baseTargets)
	hs := (&ncuRun{ncu: a.NCU, w: w, workdir: head.workdir, out: filepath.Join(dir, "head"), side: "head", log: o.Log, spent: spent}).profile(ctx, headTargets)
	baseOf := map[int]*profiled{}
	for j, i := range baseIdx {
		baseOf[i] = &bs[j]
	}
	res := &ncu.DeepDiveReport{Kernels: []ncu.KernelResult{}}
	for i, p := range picks {
		res.Kernels = append(res.Kernels, result(p, hs[i], baseOf[i], "ncu"))
	}
	res.Note = fmt.Sprintf("Nsight Compute profiled one launch of each of the %d kernel(s) whose time per step grew most, after %d warm-up step(s), on both sides. Reports: %s",
		len(picks), w.WarmupSteps, dir)
	return res
}
