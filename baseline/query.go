package baseline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Filter selects runs; empty fields match everything.
type Filter struct {
	Workload, Branch, Kind string
	// Fingerprint is a fingerprint hash.
	Fingerprint string
}

const runColumns = `id, workload, branch, commit_sha, created_at, kind, profiler, fingerprint_hash, fingerprint, gpugate_version, analysis, conditions`

// Runs returns the runs matching f, oldest first (by creation time, then
// id).
func (s *Store) Runs(ctx context.Context, f Filter) ([]Run, error) {
	var where []string
	var args []any
	for _, c := range []struct{ col, v string }{{"workload", f.Workload}, {"branch", f.Branch}, {"kind", f.Kind}, {"fingerprint_hash", f.Fingerprint}} {
		if c.v != "" {
			where = append(where, c.col+" = ?")
			args = append(args, c.v)
		}
	}
	q := `SELECT ` + runColumns + ` FROM runs`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return s.query(ctx, q+" ORDER BY created_at, id", args...)
}

func (s *Store) query(ctx context.Context, q string, args ...any) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, s.d.rebind(q), args...)
	if err != nil {
		return nil, s.wrap("read", err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var r Run
		var created int64
		var fp, an, cond string
		if err := rows.Scan(&r.ID, &r.Workload, &r.Branch, &r.Commit, &created, &r.Kind, &r.Profiler, &r.FingerprintHash, &fp, &r.Version, &an, &cond); err != nil {
			return nil, s.wrap("read", err)
		}
		r.Created, r.Fingerprint, r.Analysis = time.Unix(created, 0), []byte(fp), []byte(an)
		if cond != "" {
			r.Conditions = []byte(cond)
		}
		out = append(out, r)
	}
	return out, s.wrap("read", rows.Err())
}

// Export is the portable form of a store.
type Export struct {
	Format int           `json:"gpugate_baseline_export"` // 1
	Runs   []ExportedRun `json:"runs"`
}

// ExportedRun is one run in an export; fingerprint and analysis are JSON.
type ExportedRun struct {
	ID              int64           `json:"id"`
	Workload        string          `json:"workload"`
	Branch          string          `json:"branch"`
	Commit          string          `json:"commit"`
	Created         int64           `json:"created_at"`
	Kind            string          `json:"kind"`
	Profiler        string          `json:"profiler"`
	FingerprintHash string          `json:"fingerprint_hash"`
	Fingerprint     json.RawMessage `json:"fingerprint"`
	Version         string          `json:"gpugate_version"`
	Analysis        json.RawMessage `json:"analysis"`
	// Conditions are the run conditions (JSON object), absent for runs
	// recorded without.
	Conditions json.RawMessage `json:"conditions,omitempty"`
	// NCU is the run's Nsight Compute deep-dive, absent when it has none.
	NCU []ExportedNCUKernel `json:"ncu_kernels,omitempty"`
}

// Export returns every run of the store.
func (s *Store) Export(ctx context.Context) (*Export, error) {
	runs, err := s.Runs(ctx, Filter{})
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	ncu, err := s.exportNCU(ctx, ids)
	if err != nil {
		return nil, err
	}
	e := &Export{Format: 1, Runs: []ExportedRun{}}
	for _, r := range runs {
		e.Runs = append(e.Runs, ExportedRun{r.ID, r.Workload, r.Branch, r.Commit, r.Created.Unix(), r.Kind, r.Profiler,
			r.FingerprintHash, json.RawMessage(r.Fingerprint), r.Version, json.RawMessage(r.Analysis), json.RawMessage(r.Conditions), ncu[r.ID]})
	}
	return e, nil
}

// clockSkew is how far in the future an imported run's time may be: the
// clocks of the runners that made it may be a little ahead.
const clockSkew = 10 * time.Minute

// validate checks an exported run before anything is written: every field
// that the store and the reports rely on. It returns the rows the run's
// analysis yields (derive), which are what is written.
func (x *ExportedRun) validate(now time.Time) (derived, error) {
	for _, f := range []struct{ name, v string }{{"workload", x.Workload}, {"branch", x.Branch}, {"commit", x.Commit},
		{"profiler", x.Profiler}, {"fingerprint_hash", x.FingerprintHash}, {"gpugate_version", x.Version}} {
		if !utf8.ValidString(f.v) || strings.ContainsRune(f.v, 0) {
			return derived{}, fmt.Errorf("%s is not valid UTF-8 text", f.name)
		}
	}
	switch {
	case x.ID < 0 || x.ID > maxExportID:
		return derived{}, fmt.Errorf("id %d is not an export's id (0 to 2^53)", x.ID)
	case x.Workload == "":
		return derived{}, errors.New("workload is empty")
	case x.Branch == "":
		return derived{}, errors.New("branch is empty")
	case x.Kind != "baseline" && x.Kind != "candidate":
		return derived{}, fmt.Errorf("kind %q is not baseline or candidate", x.Kind)
	case x.FingerprintHash == "":
		return derived{}, errors.New("fingerprint_hash is empty")
	case x.Created <= 0:
		return derived{}, fmt.Errorf("created_at %d is not a time", x.Created)
	case time.Unix(x.Created, 0).After(now.Add(clockSkew)):
		return derived{}, fmt.Errorf("created_at %s is in the future", time.Unix(x.Created, 0).UTC().Format(time.RFC3339))
	}
	var fp map[string]any
	if err := json.Unmarshal(x.Fingerprint, &fp); err != nil || fp == nil {
		return derived{}, errors.New("fingerprint is not a JSON object")
	}
	if len(x.Conditions) > 0 {
		var c map[string]any
		if err := json.Unmarshal(x.Conditions, &c); err != nil || c == nil || !utf8.Valid(x.Conditions) {
			return derived{}, errors.New("conditions is not a JSON object")
		}
	}
	if !utf8.Valid(x.Fingerprint) || !utf8.Valid(x.Analysis) {
		return derived{}, errors.New("fingerprint or analysis is not valid UTF-8")
	}
	for _, doc := range []struct {
		what string
		b    []byte
	}{{"fingerprint", x.Fingerprint}, {"conditions", x.Conditions}} {
		// The analysis, the large one, was checked token by token
		// (indexExport), as every number of the run was.
		if err := checkNumbers(doc.what, doc.b); err != nil {
			return derived{}, err
		}
	}
	d, err := derive(x.Analysis)
	if err != nil || d.profiles == 0 {
		return derived{}, errors.New("analysis is not a gpugate analyze document with at least one profile")
	}
	if err := checkMedianStep(x.Analysis); err != nil {
		return derived{}, err
	}
	if err := checkDerived(d); err != nil {
		return derived{}, err
	}
	_, err = importedNCU(x.NCU)
	return d, err
}

// Prune keeps the newest keep runs of each (workload, fingerprint, kind)
// and deletes the rest; it returns how many runs went.
func (s *Store) Prune(ctx context.Context, keep int) (int, error) {
	if s.readOnly {
		return 0, s.wrap("prune", errReadOnly)
	}
	res, err := s.exec(ctx, s.db, `DELETE FROM runs WHERE id IN (
		SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY workload, fingerprint_hash, kind ORDER BY created_at DESC, id DESC) AS n FROM runs) AS ranked
		WHERE n > ?)`, keep)
	if err != nil {
		return 0, s.wrap("prune", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// Point is one run's median of a metric.
type Point struct {
	RunID   int64
	Commit  string
	Created time.Time
	Median  float64
	N       int
}

// Series returns the per-run medians of a stored sample metric (e.g.
// "step_time_ns", see SampleName) for the baseline runs of workload on
// branch with fingerprint hash fp, oldest first. A history never mixes
// machines: runs of other fingerprints are not in it.
func (s *Store) Series(ctx context.Context, workload, branch, fp, metric string) ([]Point, error) {
	rows, err := s.db.QueryContext(ctx, s.d.rebind(`SELECT r.id, r.commit_sha, r.created_at, s.value FROM runs r JOIN samples s ON s.run_id = r.id
		WHERE r.workload = ? AND r.branch = ? AND r.kind = 'baseline' AND r.fingerprint_hash = ? AND s.metric = ? ORDER BY r.created_at, r.id, s.rank, s.step`), workload, branch, fp, metric)
	if err != nil {
		return nil, s.wrap("read", err)
	}
	defer rows.Close()
	byRun := map[int64]*Point{}
	values := map[int64][]float64{}
	var order []int64
	for rows.Next() {
		var id, created int64
		var commit string
		var v float64
		if err := rows.Scan(&id, &commit, &created, &v); err != nil {
			return nil, s.wrap("read", err)
		}
		if byRun[id] == nil {
			byRun[id] = &Point{RunID: id, Commit: commit, Created: time.Unix(created, 0)}
			order = append(order, id)
		}
		values[id] = append(values[id], v)
	}
	var out []Point
	for _, id := range order {
		vs := values[id]
		sort.Float64s(vs)
		p := byRun[id]
		p.N = len(vs)
		if n := len(vs); n%2 == 1 {
			p.Median = vs[n/2]
		} else {
			p.Median = (vs[n/2-1] + vs[n/2]) / 2
		}
		out = append(out, *p)
	}
	return out, s.wrap("read", rows.Err())
}
