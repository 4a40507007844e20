package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/runner"
	"github.com/gpugate/gpugate/stats"
)

// Query says which baseline runs a candidate is compared with.
type Query struct {
	Workload string
	Branch   string
	// Fingerprint is the candidate's; only runs with the same hash are
	// picked, in the query itself.
	Fingerprint runner.Fingerprint
	// K is how many runs to pool: the newest K that match.
	K int
	// MergeBase, when set, is the commit the candidate's branch forked
	// from: only runs made on it or on one of its ancestors are picked,
	// so that later changes of the base branch are not blamed on the
	// candidate. Ancestry is asked of git in Repo, commit by commit (git
	// merge-base --is-ancestor); runs whose commit git does not know (a
	// shallow clone) cannot be placed.
	MergeBase string
	Repo      string
}

// Selection is the baseline runs picked for a candidate.
type Selection struct {
	Stored []baseline.Run
	Runs   []gate.Run
	// Conditions are the runs' stored run conditions, nil for a run
	// recorded without.
	Conditions []*runcond.Conditions
	// Timing are the timing runs stored with the picked runs
	// (report.Analysis.TimingRuns), in the order of Runs; none for
	// runs recorded before gpugate made timing runs.
	Timing []gate.TimingRun
	// TimingIDs are, for each of Timing, the store id of the run it was
	// stored with.
	TimingIDs []int64
	// MedianSteps are the runs' stored median steps (step.svg), nil for
	// a run stored without one.
	MedianSteps []*report.StepTimeline
	// Commits are the short commits of the picked runs, newest first.
	Commits []string
	Newest  time.Time
	// Mismatch lists, when nothing matched, how the newest baseline run of
	// the workload and branch (of another fingerprint) differs from the
	// candidate; nil when there is no baseline run at all.
	Mismatch []string
	// Note says how the runs were picked when that is not the plain rule
	// (no merge-base ancestry known: the newest were used).
	Note string
	// Unreadable says, one line each, which stored runs were skipped
	// because a value in them cannot be read (e.g. a step_time_ns of
	// 1e308 imported before imports were checked): one bad run must not
	// fail every later gate.
	Unreadable []string
}

// unreadableSpare is how many runs beyond K SelectBaseline reads, so that
// skipped unreadable runs are replaced by older ones.
const unreadableSpare = 8

// scanLimit bounds the matching runs SelectBaseline looks through for
// ones at or before the merge-base.
const scanLimit = 500

// SelectBaseline picks the baseline runs of q from the store.
func SelectBaseline(ctx context.Context, store *baseline.Store, q Query) (*Selection, error) {
	hash := q.Fingerprint.Hash()
	limit := q.K + unreadableSpare
	if q.MergeBase != "" {
		limit = scanLimit
	}
	stored, err := store.Baselines(ctx, q.Workload, q.Branch, hash, limit)
	if err != nil {
		return nil, err
	}
	sel := &Selection{}
	if len(stored) == 0 {
		newest, err := store.Newest(ctx, q.Workload, q.Branch)
		if err != nil {
			return nil, err
		}
		if newest != nil {
			var other runner.Fingerprint
			json.Unmarshal(newest.Fingerprint, &other)
			sel.Mismatch = other.Diff(q.Fingerprint)
			if len(sel.Mismatch) == 0 {
				sel.Mismatch = []string{"fingerprint_hash: " + newest.FingerprintHash + " != " + hash}
			}
		}
		return sel, nil
	}
	picked := stored
	if q.MergeBase != "" {
		picked = nil
		known := map[string]int{} // commit → 1 ancestor, 0 not, -1 unknown
		unknown := 0
		for _, s := range stored {
			a, ok := known[s.Commit]
			if !ok {
				a = isAncestor(ctx, q.Repo, s.Commit, q.MergeBase)
				known[s.Commit] = a
			}
			switch a {
			case 1:
				picked = append(picked, s)
			case -1:
				unknown++
			}
			if len(picked) == q.K+unreadableSpare {
				break
			}
		}
		if len(picked) == 0 {
			picked = stored
			if unknown > 0 {
				sel.Note = fmt.Sprintf("git does not know the commits of %d baseline run(s) (a shallow clone? fetch with fetch-depth: 0): the newest runs were used, not those at or before the merge-base %s", unknown, Short(q.MergeBase))
			} else {
				sel.Note = fmt.Sprintf("no baseline run at or before the merge-base %s: the newest runs were used", Short(q.MergeBase))
			}
		}
	}
	for _, s := range picked {
		if len(sel.Runs) == q.K {
			break
		}
		doc, cond, err := readStored(s)
		if err != nil {
			sel.Unreadable = append(sel.Unreadable, fmt.Sprintf("baseline run %d (commit %s) in %s cannot be read, skipped: %v; delete it or record newer baselines", s.ID, Short(s.Commit), store.Name(), err))
			continue
		}
		sel.Stored = append(sel.Stored, s)
		sel.Runs = append(sel.Runs, doc.Results())
		sel.Conditions = append(sel.Conditions, cond)
		sel.MedianSteps = append(sel.MedianSteps, doc.MedianStep)
		sel.Timing = append(sel.Timing, doc.TimingRuns...)
		for range doc.TimingRuns {
			sel.TimingIDs = append(sel.TimingIDs, s.ID)
		}
		sel.Commits = append(sel.Commits, Short(s.Commit))
		if s.Created.After(sel.Newest) {
			sel.Newest = s.Created
		}
	}
	return sel, nil
}

// readStored decodes a stored run's analysis and run conditions as the
// gate reads them.
func readStored(s baseline.Run) (*report.Analysis, *runcond.Conditions, error) {
	var doc report.Analysis
	if err := json.Unmarshal(s.Analysis, &doc); err != nil {
		return nil, nil, fmt.Errorf("analysis: %v", err)
	}
	if len(doc.Profiles) == 0 {
		return nil, nil, errors.New("analysis: no profile")
	}
	if err := gate.CheckTimingRuns(doc.TimingRuns); err != nil {
		return nil, nil, fmt.Errorf("analysis: %v", err)
	}
	cond, err := storedConditions(s)
	if err != nil {
		return nil, nil, err
	}
	return &doc, cond, nil
}

// CheckExport refuses an export (gpugate baseline import) holding a run
// that CheckRun refuses.
func CheckExport(e *baseline.Export) error {
	for i := range e.Runs {
		if err := CheckRun(&e.Runs[i]); err != nil {
			return fmt.Errorf("check export: run %d (#%d in the file): %v; nothing imported", e.Runs[i].ID, i+1, err)
		}
	}
	return nil
}

// CheckRun refuses a run of an export (gpugate baseline import,
// baseline.Store.ImportFrom's check) that the gate could not read back or
// that no gpugate run records: the store checks each number's range and
// the documents' shape, and this checks them against the types that read
// them (an integer field holds an integer: cpus 1.5 is refused) and the
// workload's name against perf.yaml's rule (config.CheckName: it names
// folders, outputs and the PR comment's marker).
func CheckRun(x *baseline.ExportedRun) error {
	if err := config.CheckName(x.Workload); err != nil {
		return err
	}
	var fp runner.Fingerprint
	if err := json.Unmarshal(x.Fingerprint, &fp); err != nil {
		return fmt.Errorf("fingerprint: %v", err)
	}
	if fp.GPUCount < 0 || fp.CPUs < 0 {
		return fmt.Errorf("fingerprint: %d GPUs and %d CPUs are not counts", fp.GPUCount, fp.CPUs)
	}
	r := baseline.Run{Analysis: x.Analysis, Conditions: x.Conditions}
	_, _, err := readStored(r)
	return err
}

// isAncestor asks git whether commit is base or one of its ancestors: 1
// yes, 0 no, -1 unknown (git cannot tell: a commit it lacks).
func isAncestor(ctx context.Context, repo, commit, base string) int {
	if commit == "" || strings.HasPrefix(commit, "-") {
		return -1
	}
	cmd := gitCommand(ctx, repo, "merge-base", "--is-ancestor", commit, base)
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 1
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return 0
	}
	return -1
}

// MergeBase returns the commit where head forked from the base branch, as
// git in repo sees it: the merge-base of head with origin/BASE, else with
// BASE. "" and an error when git cannot tell (no such branch, a shallow
// clone without the fork point).
func MergeBase(ctx context.Context, repo, head, base string) (string, error) {
	if head == "" {
		head = "HEAD"
	}
	var last error
	for _, ref := range []string{"origin/" + base, base} {
		if strings.HasPrefix(ref, "-") {
			continue
		}
		cmd := gitCommand(ctx, repo, "merge-base", head, ref)
		out, err := cmd.Output()
		if err == nil {
			return strings.TrimSpace(string(out)), nil
		}
		last = err
	}
	return "", fmt.Errorf("git merge-base %s %s: %v", head, base, last)
}

// Short is a commit's first 10 characters.
func Short(commit string) string {
	if len(commit) > 10 {
		return commit[:10]
	}
	return commit
}

// MinAbs turns perf.yaml's memory_min_change into gate's smallest
// absolute changes of the memory metrics (MiB); nil keeps the defaults.
func MinAbs(c *config.Config) map[string]float64 {
	if c.MemoryMinChange == nil {
		return nil
	}
	v := float64(*c.MemoryMinChange) / (1 << 20)
	return map[string]float64{"peak_memory": v, "peak_reserved": v, "rss": v, "alloc_growth": v}
}

// Allowances turns perf.yaml's allowances into gate's, by metric name.
func Allowances(c *config.Config) (map[string]float64, error) {
	allow := map[string]float64{}
	for k, v := range c.Allowances {
		m, ok := analysis.MetricByName(k)
		if !ok {
			return nil, fmt.Errorf("%s: allowances: unknown metric %q", c.File, k)
		}
		allow[m.Name] = float64(v)
	}
	return allow, nil
}

// Compare compares the candidate runs with the selected baseline runs
// (th.Alpha 0: stats.DefaultThresholds' level).
func Compare(c *config.Config, sel *Selection, ex *Execution, now time.Time, th stats.Thresholds) (*gate.Report, error) {
	allow, err := Allowances(c)
	if err != nil {
		return nil, err
	}
	if err := gate.CheckSide("baseline", sel.Runs); err != nil {
		return nil, err
	}
	if err := gate.CheckSide("candidate", ex.Runs); err != nil {
		return nil, err
	}
	rep := gate.Compare(sel.Runs, ex.Runs, gate.Options{Allowances: allow, Gate: c.Gate, MinAbs: MinAbs(c), Thresholds: th,
		Disturbed: disturbed(c, sel.Conditions, ex.Conditions), Timing: timingOptions(HostMargins(c), sel.Timing, ex), IDs: runIDs(sel, ex)})
	rep.Overhead = ex.Overhead
	applyConditions(rep, sel.Conditions, ex.Conditions)
	gate.ApplyTimingConditions(rep, sel.Timing, ex.Timing, gate.DefaultConditionMargins, notRecordedWhy)
	applyIsolation(rep, ex)
	rep.Baseline.Newest = sel.Newest.UTC().Format(time.RFC3339)
	if age := now.Sub(sel.Newest); c.Baseline.MaxAge > 0 && age > time.Duration(c.Baseline.MaxAge) {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("stale baseline: the newest baseline run is %s old (max_age %s); run gpugate baseline refresh on %s",
			age.Round(time.Hour), time.Duration(c.Baseline.MaxAge), c.Baseline.Branch))
	}
	return rep, nil
}

// Meta describes where runs come from, for the store.
type Meta struct {
	Branch, Commit string
	Kind           string // "baseline" or "candidate"
	Version        string
}

// Record stores every analyzed run of ex not stored yet, each in its own
// transaction.
func Record(ctx context.Context, store *baseline.Store, ex *Execution, m Meta) error {
	fpJSON, _ := json.Marshal(ex.Fingerprint)
	for i := len(ex.RunIDs); i < len(ex.Docs); i++ {
		var cond []byte
		if i < len(ex.Conditions) {
			cond = conditionsJSON(ex.Conditions[i])
		}
		var created time.Time // zero: the store's now
		if i < len(ex.Made) {
			created = ex.Made[i]
		}
		timing, wall := timingWallOf(ex, i, len(ex.Docs))
		doc, err := withTiming(ex.Docs[i], timing, wall)
		if err != nil {
			return err
		}
		id, err := store.Record(ctx, baseline.Run{Workload: ex.Workload, Branch: m.Branch, Commit: m.Commit, Created: created, Kind: m.Kind, Profiler: ex.Profiler,
			FingerprintHash: ex.Fingerprint.Hash(), Fingerprint: fpJSON, Version: m.Version, Analysis: doc, Conditions: cond})
		if err != nil {
			return err
		}
		ex.RunIDs = append(ex.RunIDs, id)
		for range timing {
			ex.timingIDs = append(ex.timingIDs, id)
		}
	}
	return nil
}

// Run is the whole pipeline: execute, store, and (unless recording) pick
// the baseline and compare.
func Run(ctx context.Context, o Options) (*Outcome, error) {
	o.defaults()
	var store *baseline.Store
	if o.Workload.Profiler != runner.None && !missingReadOnly(o) {
		// The store is opened first: an unreachable server or a refused
		// file fails before the job spends its minutes.
		var err error
		if store, err = openStore(ctx, o); err != nil {
			return nil, err
		}
		defer store.Close()
	}
	p, err := Prepare(ctx, o)
	if err != nil {
		return nil, err
	}
	ex, err := p.Execute(ctx)
	if err != nil {
		return nil, err
	}
	if ex, err = p.waitQuiet(ctx, ex); err != nil {
		return nil, err
	}
	oc, err := judge(ctx, o, ex, store, p)
	if oc != nil {
		oc.Out = ex.Out
		if oc.Report != nil {
			oc.Report.Cost = ex.Spent.Cost(ex.Fingerprint.GPUCount)
		}
	}
	return oc, err
}

// missingReadOnly reports a read-only run whose SQLite store does not exist:
// nothing to compare with, and nothing may be created.
func missingReadOnly(o Options) bool {
	return o.ReadOnly && !o.Record && !baseline.IsURL(o.DB) && !exists(o.DB)
}

// openStore opens the store for recording (o.Record) or for gating: a
// store that does not exist yet is created, a read-only one serves reads.
func openStore(ctx context.Context, o Options) (*baseline.Store, error) {
	if !baseline.IsURL(o.DB) {
		runner.SetStore(o.DB) // read-only for the job (runner.SetStore)
	}
	if o.ReadOnly && !o.Record {
		return baseline.OpenReadOnly(ctx, o.DB)
	}
	if o.Record {
		return baseline.Open(ctx, o.DB)
	}
	if baseline.IsURL(o.DB) {
		// A new database gets its schema; a role that may only read
		// gates without recording.
		store, err := baseline.OpenExisting(ctx, o.DB)
		if err != nil && strings.Contains(err.Error(), "no gpugate store in this database yet") {
			return baseline.Open(ctx, o.DB)
		}
		return store, err
	}
	store, err := baseline.OpenExisting(ctx, o.DB)
	if err != nil && !exists(o.DB) {
		// No store yet: create it, so that this candidate is kept.
		return baseline.Open(ctx, o.DB)
	}
	return store, err
}

// Judge stores an execution and compares it with its baseline, once:
// repeat: auto's further runs need the plan, which Run holds.
func Judge(ctx context.Context, o Options, ex *Execution) (*Outcome, error) {
	o.defaults()
	return judge(ctx, o, ex, nil, nil)
}

// judge stores ex and compares it with its baseline; with repeat: auto
// and the plan p, it runs more candidate runs until the verdict is
// decided (sampleRuns).
func judge(ctx context.Context, o Options, ex *Execution, store *baseline.Store, p *Plan) (*Outcome, error) {
	c, w := o.Config, o.Workload
	if ex.Profiler == runner.None {
		rep := gate.NoBaseline(nil, "profiler none: a timing pass only; nothing was profiled or compared")
		applyIsolation(rep, ex)
		return &Outcome{Workload: w.Name, Fingerprint: ex.Fingerprint, Report: rep}, nil
	}
	branch := o.Branch
	if branch == "" {
		branch = c.Baseline.Branch
	}
	if branch == "HEAD" { // git's name for a detached HEAD, never a branch
		branch = Detached
	}
	kind := "candidate"
	if o.Record {
		kind = "baseline"
		if branch == Detached {
			return nil, fmt.Errorf("workload %s: cannot record a baseline: the checkout is a detached HEAD and no variable names its branch (set GPUGATE_BRANCH; GitHub, GitLab CI and Buildkite variables are read too)", w.Name)
		}
	}
	if store == nil && missingReadOnly(o) {
		// Read-only and nothing there: nothing to compare with, and
		// nothing may be created.
		return noBaseline(o, ex, baseline.Mask(o.DB)), nil
	}
	if store == nil {
		var err error
		if store, err = openStore(ctx, o); err != nil {
			return nil, err
		}
		defer store.Close()
	}
	meta := Meta{Branch: branch, Commit: o.Commit, Kind: kind, Version: o.Version}
	if store.ReadOnly() {
		fmt.Fprintf(o.Log, "gpugate: %s is read-only: this run is compared but not recorded\n", escape.Terminal(store.Name()))
		if w := store.RoleWarning(); w != "" {
			fmt.Fprintf(o.Log, "gpugate: WARNING: %s\n", escape.Terminal(w))
		}
	} else if err := Record(ctx, store, ex, meta); err != nil {
		return nil, err
	}
	cand := ex.Runs
	if o.Record {
		fmt.Fprintf(o.Log, "gpugate: recorded %d run(s) of %s as baseline of branch %s in %s\n", len(ex.Docs), w.Name, escape.Terminal(branch), escape.Terminal(store.Name()))
		if w.DeepDive != nil && !store.ReadOnly() {
			recordDeepDive(ctx, o, ex, store)
		}
		rep := gate.NoBaseline(cand, fmt.Sprintf("recorded as baseline of %s", branch))
		// Recording is what was asked for: said by Recorded, not as a
		// warning (the nightly raised ::warning on every success).
		rep.Warnings, rep.Recorded = rep.Warnings[1:], branch
		rep.Overhead = ex.Overhead
		applyConditions(rep, nil, ex.Conditions)
		applyIsolation(rep, ex)
		if why := noQuietRun(c, ex); why != "" && !store.ReadOnly() {
			busyBaseline(o, rep, branch, why)
		}
		if v := rep.Conditions.Void; len(v) > 0 {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("recorded as a baseline although its run conditions were bad (%s): a candidate that passes against baselines pooled with it can be voided as inconclusive; record another with gpugate baseline refresh", strings.Join(v, "; ")))
		}
		return &Outcome{Workload: w.Name, Report: rep, Cand: cand, Fingerprint: ex.Fingerprint, Baseline: "recorded as baseline of " + branch}, nil
	}

	q := Query{Workload: w.Name, Branch: c.Baseline.Branch, Fingerprint: ex.Fingerprint, K: c.Baseline.Runs, Repo: o.Dir, MergeBase: o.MergeBase}
	if q.MergeBase == "" && branch != c.Baseline.Branch {
		// A pull request: compare with the base branch where this branch
		// forked from it, not with whatever it has become since.
		mb, err := MergeBase(ctx, o.Dir, "HEAD", c.Baseline.Branch)
		if err != nil {
			fmt.Fprintf(o.Log, "gpugate: no merge-base with %s (%v): the newest baseline runs are used\n", escape.Terminal(c.Baseline.Branch), escape.Terminal(fmt.Sprint(err)))
		}
		q.MergeBase = mb
	}
	sel, err := SelectBaseline(ctx, store, q)
	if err != nil {
		return nil, err
	}
	for _, u := range sel.Unreadable {
		fmt.Fprintf(o.Log, "gpugate: warning: %s\n", escape.Terminal(u))
	}
	if len(sel.Runs) == 0 {
		if len(sel.Mismatch) > 0 {
			msg := fmt.Sprintf("no baseline of %s on %s matches this machine's fingerprint; differences: %s (record a baseline here with -record-baseline)", w.Name, c.Baseline.Branch, strings.Join(sel.Mismatch, "; "))
			if !c.Baseline.Lenient {
				return nil, errors.New(msg)
			}
			rep := gate.NoBaseline(cand, msg)
			rep.Verdict = stats.Inconclusive
			applyConditions(rep, nil, ex.Conditions)
			applyIsolation(rep, ex)
			return &Outcome{Workload: w.Name, Report: rep, Cand: cand, Fingerprint: ex.Fingerprint, Baseline: "none matching", Err: errors.New(msg)}, nil
		}
		return noBaseline(o, ex, store.Name()), nil
	}
	var rep *gate.Report
	if p != nil && w.Repeat.Auto() {
		rep, err = p.sampleRuns(ctx, ex, sel, func() error {
			if store.ReadOnly() {
				return nil
			}
			return Record(ctx, store, ex, meta)
		})
	} else {
		rep, err = Compare(c, sel, ex, time.Now(), stats.Thresholds{})
	}
	if err != nil {
		return nil, err
	}
	cand = ex.Runs
	rep.RunIDs = runIDs(sel, ex)
	if sel.Note != "" {
		rep.Warnings = append(rep.Warnings, sel.Note)
	}
	rep.Warnings = append(rep.Warnings, sel.Unreadable...)
	if w := store.RoleWarning(); w != "" {
		rep.Warnings = append(rep.Warnings, w)
	}
	if w.DeepDive != nil && rep.Verdict == stats.Regression {
		rep.DeepDive = deepDive(ctx, o, ex, rep, sel, store)
	}
	at := ""
	if q.MergeBase != "" && sel.Note == "" {
		at = ", at or before merge-base " + Short(q.MergeBase)
	}
	desc := fmt.Sprintf("%s%s, %d run(s)%s%s, newest %s", c.Baseline.Branch, commitList(sel.Commits), len(sel.Runs), idList(rep.RunIDs.Baseline), at, sel.Newest.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(o.Log, "gpugate: baseline: %s\n", escape.Terminal(desc))
	oc := &Outcome{Workload: w.Name, Report: rep, Base: sel.Runs, Cand: cand, Fingerprint: ex.Fingerprint, Baseline: desc, BaseTiming: sel.Timing, CandTiming: ex.Timing}
	for i, ms := range sel.MedianSteps {
		if ms != nil {
			cp := *ms
			oc.BaseStep = &cp
			oc.BaseStep.Label = fmt.Sprintf("baseline (stored run %d)", sel.Stored[i].ID)
			break
		}
	}
	return oc, nil
}

// noQuietRun says why a baseline of ex would have no quiet run to judge
// time by: every profiled run was disturbed (gate.HostBusy), or the runs
// were timed and every timing run was; "" when a run of each kind was
// quiet.
func noQuietRun(c *config.Config, ex *Execution) string {
	quiet := func(ds []string) bool { return slices.Contains(ds, "") }
	ids := &gate.RunIDs{Candidate: ex.RunIDs, CandidateTiming: timingIDs(ex.timingIDs, len(ex.Timing))}
	name := func(timing bool) func(int) string {
		if timing {
			return func(i int) string { return ids.TimingRunName("candidate", i) }
		}
		return func(i int) string { return ids.RunName("candidate", i) }
	}
	if d := disturbed(c, nil, ex.Conditions).Cand; len(d) > 0 && !quiet(d) {
		return fmt.Sprintf("every run was disturbed (%s)", strings.Join(gate.BusyNamed(d, name(false)), "; "))
	}
	var tc []*runcond.Conditions
	for _, t := range ex.Timing {
		tc = append(tc, t.Conditions)
	}
	if d := disturbed(c, nil, tc).Cand; len(d) > 0 && !quiet(d) {
		return fmt.Sprintf("every timing run was disturbed (%s)", strings.Join(gate.BusyNamed(d, name(true)), "; "))
	}
	return ""
}

// busyBaseline makes the report of a baseline refresh (or
// -record-baseline) in which no run was quiet inconclusive (exit 3), with a
// warning naming the busy host, never "✅ baseline recorded" (the
// renderers say "no quiet baseline run" for a recording that is
// inconclusive; JSON "recorded" still names the branch). The runs are
// stored all the same, each marked by its run conditions (baseline list and
// show say "busy"): their counts and memory judge pull requests as any
// run's do, and every comparison leaves them out of the time metrics
// (docs/verdicts.md §5c), saying so. Not storing them was rejected: on a
// host that is always shared (a CI machine running other jobs, this
// project's own test machine) no baseline would ever be recorded, and the
// count gates, which a busy host does not move, would be lost with the
// time ones. The cost, said in the warning: they are now the newest runs,
// so until a quiet refresh the time metrics of pull requests have no
// verdict.
func busyBaseline(o Options, rep *gate.Report, branch, why string) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "this machine"
	}
	msg := fmt.Sprintf("no quiet baseline run: %s on host %s; the runs are stored as baselines of %s, marked disturbed: their counts and memory are judged, but every comparison leaves them out of the time metrics, so pull requests get no time verdict until a refresh on a quiet host (rerun gpugate baseline refresh when the machine is quiet, or on a runner of its own; perf.yaml host: sets how busy a host may be)",
		why, host, branch)
	fmt.Fprintf(o.Log, "gpugate: WARNING: %s\n", escape.Terminal(msg))
	rep.Verdict = stats.Inconclusive
	rep.Warnings = append([]string{msg}, rep.Warnings...)
}

// noBaseline is the outcome of a run with nothing stored to compare with:
// a stated verdict with the command that records a baseline, exit 0 unless
// baseline.on_missing is fail.
func noBaseline(o Options, ex *Execution, where string) *Outcome {
	c, w := o.Config, o.Workload
	record := RecordCommand(c, w, o.DB)
	msg := fmt.Sprintf("no baseline of %s on branch %s in %s yet: nothing to compare with; record one on %s with: %s", w.Name, c.Baseline.Branch, where, c.Baseline.Branch, record)
	rep := gate.NoBaseline(ex.Runs, msg)
	rep.Verdict = stats.NoBaseline
	rep.Overhead = ex.Overhead
	applyConditions(rep, nil, ex.Conditions)
	applyIsolation(rep, ex)
	oc := &Outcome{Workload: w.Name, Report: rep, Cand: ex.Runs, Fingerprint: ex.Fingerprint, Baseline: "none yet", RecordCommand: record}
	if c.Baseline.OnMissing == "fail" {
		oc.Err = fmt.Errorf("no baseline of %s on %s (baseline.on_missing: fail); record one with: %s", w.Name, c.Baseline.Branch, record)
	}
	return oc
}

// runIDs are the store ids of a comparison's runs (gate.Report.RunIDs):
// the baseline's picked runs, and the candidate's when every one of them
// was recorded (a read-only store records none); of the timing runs, the
// id of the run each was stored with (timingIDs).
func runIDs(sel *Selection, ex *Execution) *gate.RunIDs {
	ids := &gate.RunIDs{Baseline: []int64{}, Candidate: []int64{}}
	for _, s := range sel.Stored {
		ids.Baseline = append(ids.Baseline, s.ID)
	}
	if len(ex.RunIDs) == len(ex.Runs) {
		ids.Candidate = append(ids.Candidate, ex.RunIDs...)
	}
	ids.BaselineTiming = timingIDs(sel.TimingIDs, len(sel.Timing))
	ids.CandidateTiming = timingIDs(ex.timingIDs, len(ex.Timing))
	return ids
}

// timingIDs are, for each of n timing runs, the id of the run it was
// stored with (ids, in order), 0 for each after them: repeat: auto stores
// a candidate's timing runs with its profiled runs, and those made after
// its last profiled run with none. nil where none was stored, or ids are
// more than the runs.
func timingIDs(ids []int64, n int) []int64 {
	if len(ids) == 0 || len(ids) > n {
		return nil
	}
	out := make([]int64, n)
	copy(out, ids)
	return out
}

// idList is ": run 7, run 6, run 5", the runs by their store ids.
func idList(ids []int64) string {
	if len(ids) == 0 {
		return ""
	}
	var s []string
	for _, id := range ids {
		s = append(s, fmt.Sprintf("run %d", id))
	}
	return ": " + strings.Join(s, ", ")
}

// commitList is "@c1,c2" for the known commits, "" when none is known.
func commitList(commits []string) string {
	var known []string
	for _, c := range commits {
		if c != "" {
			known = append(known, c)
		}
	}
	if len(known) == 0 {
		return ""
	}
	return "@" + strings.Join(known, ",")
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// RecordCommand is the one command that records a baseline for the
// workload on its base branch, for messages.
func RecordCommand(c *config.Config, w *config.Workload, db string) string {
	cmd := "gpugate baseline refresh -config " + shellQuote(c.File)
	if len(c.Workloads) > 1 {
		cmd += " -workload " + shellQuote(w.Name)
	}
	if db != "" && db != c.Baseline.DB {
		cmd += " -db " + shellQuote(baseline.Mask(db))
	}
	return cmd
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
