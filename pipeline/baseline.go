package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/runner"
	"github.com/gpugate/gpugate/stats"
)

// Query says which baseline runs a candidate is compared with.
type Query struct {
	Workload string
	Branch   string
	// Fingerprint is the candidate's; only runs with the same hash match.
	Fingerprint runner.Fingerprint
	// K is how many runs to pool (the newest K that match).
	K int
}

// Selection is the baseline runs picked for a candidate.
type Selection struct {
	Stored []baseline.Run
	Runs   []gate.Run
	// Commits are the short commits of the picked runs, newest first.
	Commits []string
	Newest  time.Time
	// Mismatch lists, when nothing matched, how the newest stored run of
	// another fingerprint differs from the candidate.
	Mismatch []string
	// Others counts the baseline runs of the workload and branch with
	// another fingerprint.
	Others int
}

// SelectBaseline picks the baseline runs of q from the store.
func SelectBaseline(ctx context.Context, store *baseline.Store, q Query) (*Selection, error) {
	stored, err := store.Baselines(ctx, q.Workload, q.Branch, q.K)
	if err != nil {
		return nil, err
	}
	sel := &Selection{}
	hash := q.Fingerprint.Hash()
	for _, s := range stored {
		if s.FingerprintHash != hash {
			var other runner.Fingerprint
			json.Unmarshal(s.Fingerprint, &other)
			sel.Mismatch = other.Diff(q.Fingerprint)
			sel.Others++
			continue
		}
		var doc report.Analysis
		if err := json.Unmarshal(s.Analysis, &doc); err != nil {
			return nil, fmt.Errorf("baseline run %d in %s: %v", s.ID, store.Name(), err)
		}
		sel.Stored = append(sel.Stored, s)
		sel.Runs = append(sel.Runs, doc.Results())
		sel.Commits = append(sel.Commits, Short(s.Commit))
		if s.Created.After(sel.Newest) {
			sel.Newest = s.Created
		}
	}
	return sel, nil
}

// Short is a commit's first 10 characters.
func Short(commit string) string {
	if len(commit) > 10 {
		return commit[:10]
	}
	return commit
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

// Compare compares the candidate runs with the selected baseline runs.
func Compare(c *config.Config, sel *Selection, ex *Execution, now time.Time) (*gate.Report, error) {
	allow, err := Allowances(c)
	if err != nil {
		return nil, err
	}
	rep := gate.Compare(sel.Runs, ex.Runs, gate.Options{Allowances: allow})
	rep.Overhead = ex.Overhead
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

// Record stores every analyzed run of ex, each in its own transaction.
func Record(ctx context.Context, store *baseline.Store, ex *Execution, m Meta) error {
	fpJSON, _ := json.Marshal(ex.Fingerprint)
	for _, d := range ex.Docs {
		if _, err := store.Record(ctx, baseline.Run{Workload: ex.Workload, Branch: m.Branch, Commit: m.Commit, Kind: m.Kind, Profiler: ex.Profiler,
			FingerprintHash: ex.Fingerprint.Hash(), Fingerprint: fpJSON, Version: m.Version, Analysis: d}); err != nil {
			return err
		}
	}
	return nil
}

// Run is the whole pipeline: execute, store, and (unless recording) pick
// the baseline and compare.
func Run(ctx context.Context, o Options) (*Outcome, error) {
	o.defaults()
	ex, err := Execute(ctx, o)
	if err != nil {
		return nil, err
	}
	return Judge(ctx, o, ex)
}

// Judge stores an execution and compares it with its baseline.
func Judge(ctx context.Context, o Options, ex *Execution) (*Outcome, error) {
	o.defaults()
	c, w := o.Config, o.Workload
	if ex.Profiler == runner.None {
		return &Outcome{Workload: w.Name, Fingerprint: ex.Fingerprint, Report: gate.NoBaseline(nil, "profiler none: a timing pass only; nothing was profiled or compared")}, nil
	}
	store, err := baseline.Open(ctx, o.DB)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	branch := o.Branch
	if branch == "" || branch == "HEAD" {
		branch = c.Baseline.Branch
	}
	kind := "candidate"
	if o.Record {
		kind = "baseline"
	}
	if err := Record(ctx, store, ex, Meta{Branch: branch, Commit: o.Commit, Kind: kind, Version: o.Version}); err != nil {
		return nil, err
	}
	cand := ex.Runs
	if o.Record {
		fmt.Fprintf(o.Log, "gpugate: recorded %d run(s) of %s as baseline of branch %s in %s\n", len(ex.Docs), w.Name, branch, store.Name())
		rep := gate.NoBaseline(cand, fmt.Sprintf("recorded as baseline of %s", branch))
		rep.Overhead = ex.Overhead
		return &Outcome{Workload: w.Name, Report: rep, Cand: cand, Fingerprint: ex.Fingerprint, Baseline: "recorded as baseline of " + branch}, nil
	}

	sel, err := SelectBaseline(ctx, store, Query{Workload: w.Name, Branch: c.Baseline.Branch, Fingerprint: ex.Fingerprint, K: c.Baseline.Runs})
	if err != nil {
		return nil, err
	}
	if len(sel.Runs) == 0 {
		if sel.Others > 0 {
			msg := fmt.Sprintf("no baseline of %s on %s matches this machine's fingerprint; differences: %s (record a baseline here with -record-baseline)", w.Name, c.Baseline.Branch, strings.Join(sel.Mismatch, "; "))
			if !c.Baseline.Lenient {
				return nil, errors.New(msg)
			}
			rep := gate.NoBaseline(cand, msg)
			rep.Verdict = stats.Inconclusive
			return &Outcome{Workload: w.Name, Report: rep, Cand: cand, Fingerprint: ex.Fingerprint, Baseline: "none matching", Err: errors.New(msg)}, nil
		}
		rep := gate.NoBaseline(cand, fmt.Sprintf("no baseline of %s on branch %s in %s yet: nothing to compare with (record one with gpugate run -record-baseline on %s)", w.Name, c.Baseline.Branch, store.Name(), c.Baseline.Branch))
		rep.Overhead = ex.Overhead
		return &Outcome{Workload: w.Name, Report: rep, Cand: cand, Fingerprint: ex.Fingerprint, Baseline: "none yet"}, nil
	}
	rep, err := Compare(c, sel, ex, time.Now())
	if err != nil {
		return nil, err
	}
	desc := fmt.Sprintf("%s@%s, %d run(s), newest %s", c.Baseline.Branch, strings.Join(sel.Commits, ","), len(sel.Runs), sel.Newest.UTC().Format("2006-01-02 15:04 UTC"))
	return &Outcome{Workload: w.Name, Report: rep, Base: sel.Runs, Cand: cand, Fingerprint: ex.Fingerprint, Baseline: desc}, nil
}
