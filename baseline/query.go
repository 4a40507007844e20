package baseline

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Filter selects runs; empty fields match everything.
type Filter struct {
	Workload, Branch, Kind string
}

const runColumns = `id, workload, branch, commit_sha, created_at, kind, profiler, fingerprint_hash, fingerprint, gpugate_version, analysis`

// Runs returns the runs matching f, oldest first.
func (s *Store) Runs(ctx context.Context, f Filter) ([]Run, error) {
	var where []string
	var args []any
	for _, c := range []struct{ col, v string }{{"workload", f.Workload}, {"branch", f.Branch}, {"kind", f.Kind}} {
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
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", s.path, err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var r Run
		var created int64
		var fp, an string
		if err := rows.Scan(&r.ID, &r.Workload, &r.Branch, &r.Commit, &created, &r.Kind, &r.Profiler, &r.FingerprintHash, &fp, &r.Version, &an); err != nil {
			return nil, fmt.Errorf("read %s: %w", s.path, err)
		}
		r.Created, r.Fingerprint, r.Analysis = time.Unix(created, 0), []byte(fp), []byte(an)
		out = append(out, r)
	}
	return out, rows.Err()
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
}

// Export returns every run of the store.
func (s *Store) Export(ctx context.Context) (*Export, error) {
	runs, err := s.Runs(ctx, Filter{})
	if err != nil {
		return nil, err
	}
	e := &Export{Format: 1, Runs: []ExportedRun{}}
	for _, r := range runs {
		e.Runs = append(e.Runs, ExportedRun{r.ID, r.Workload, r.Branch, r.Commit, r.Created.Unix(), r.Kind, r.Profiler,
			r.FingerprintHash, json.RawMessage(r.Fingerprint), r.Version, json.RawMessage(r.Analysis)})
	}
	return e, nil
}

// Import adds the runs of an export in one transaction. A run whose id is
// free keeps it; a run identical to one already stored (same workload,
// commit, time, kind and fingerprint) is skipped. It returns how many runs
// were added.
func (s *Store) Import(ctx context.Context, e *Export) (int, error) {
	if e.Format != 1 {
		return 0, fmt.Errorf("import into %s: unknown export format %d", s.path, e.Format)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	added := 0
	for _, x := range e.Runs {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE workload = ? AND commit_sha = ? AND created_at = ? AND kind = ? AND fingerprint_hash = ? AND analysis = ?`,
			x.Workload, x.Commit, x.Created, x.Kind, x.FingerprintHash, string(x.Analysis)).Scan(&n); err != nil {
			return 0, err
		}
		if n > 0 {
			continue
		}
		r := Run{Workload: x.Workload, Branch: x.Branch, Commit: x.Commit, Created: time.Unix(x.Created, 0), Kind: x.Kind, Profiler: x.Profiler,
			FingerprintHash: x.FingerprintHash, Fingerprint: x.Fingerprint, Version: x.Version, Analysis: x.Analysis}
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE id = ?`, x.ID).Scan(&n); err != nil {
			return 0, err
		}
		if n == 0 {
			r.ID = x.ID
		}
		d, err := derive(r.Analysis)
		if err != nil {
			return 0, fmt.Errorf("import run %d: %w", x.ID, err)
		}
		if _, err := insert(ctx, tx, r, d); err != nil {
			return 0, fmt.Errorf("import run %d: %w", x.ID, err)
		}
		added++
	}
	return added, tx.Commit()
}

// Prune keeps the newest keep runs of each (workload, fingerprint, kind)
// and deletes the rest; it returns how many runs went.
func (s *Store) Prune(ctx context.Context, keep int) (int, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM runs WHERE id IN (
		SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY workload, fingerprint_hash, kind ORDER BY created_at DESC, id DESC) AS n FROM runs)
		WHERE n > ?)`, keep)
	if err != nil {
		return 0, fmt.Errorf("prune %s: %w", s.path, err)
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
// "step_time_ns") for the baseline runs of workload on branch, oldest first.
func (s *Store) Series(ctx context.Context, workload, branch, metric string) ([]Point, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT r.id, r.commit_sha, r.created_at, s.value FROM runs r JOIN samples s ON s.run_id = r.id
		WHERE r.workload = ? AND r.branch = ? AND r.kind = 'baseline' AND s.metric = ? ORDER BY r.created_at, r.id`, workload, branch, metric)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", s.path, err)
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
			return nil, err
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
	return out, rows.Err()
}
