// Package baseline stores runs of workloads in one SQLite file: the base
// branch's runs are the baselines candidates are compared with. The store
// computes nothing; it keeps each run's analysis document and fingerprint.
//
// This is the minimal store gpugate run needs; its schema is versioned with
// PRAGMA user_version so that it can grow without losing data.
package baseline

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite"
)

// migrations[i] takes the schema from version i to i+1.
var migrations = []string{
	`CREATE TABLE runs (
		id               INTEGER PRIMARY KEY,
		workload         TEXT    NOT NULL,
		branch           TEXT    NOT NULL,
		commit_sha       TEXT    NOT NULL DEFAULT '',
		created_at       INTEGER NOT NULL,                 -- unix seconds
		kind             TEXT    NOT NULL CHECK (kind IN ('baseline', 'candidate')),
		profiler         TEXT    NOT NULL,
		fingerprint_hash TEXT    NOT NULL,
		fingerprint      TEXT    NOT NULL,                 -- JSON, no secrets
		gpugate_version  TEXT    NOT NULL,
		analysis         TEXT    NOT NULL                  -- gpugate analyze JSON of the run
	);
	CREATE INDEX runs_lookup ON runs (workload, branch, kind, created_at);`,

	// 2: the numbers of each run, queryable without parsing its analysis.
	`CREATE TABLE samples (
		run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
		rank    INTEGER NOT NULL,   -- position of the profile in the run
		metric  TEXT    NOT NULL,
		step    INTEGER NOT NULL,
		value   REAL    NOT NULL,
		PRIMARY KEY (run_id, rank, metric, step)
	);
	CREATE TABLE kernels (
		run_id  INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
		rank    INTEGER NOT NULL,
		name    TEXT    NOT NULL,
		count   INTEGER NOT NULL,
		time_ns INTEGER NOT NULL,
		PRIMARY KEY (run_id, rank, name)
	);
	CREATE TABLE findings (
		run_id   INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
		rank     INTEGER NOT NULL,
		id       TEXT    NOT NULL,
		severity TEXT    NOT NULL,
		summary  TEXT    NOT NULL,
		share    REAL    NOT NULL,
		PRIMARY KEY (run_id, rank, id)
	);`,
}

// Store is an open baseline database.
type Store struct {
	db   *sql.DB
	path string
}

// Run is one stored run.
type Run struct {
	ID              int64
	Workload        string
	Branch          string
	Commit          string
	Created         time.Time
	Kind            string // "baseline" or "candidate"
	Profiler        string
	FingerprintHash string
	Fingerprint     []byte // JSON
	Version         string
	Analysis        []byte // JSON
}

// Open opens or creates the store at path. A file that is not an SQLite
// database, or that cannot be written, is an error and is left untouched.
func Open(ctx context.Context, path string) (*Store, error) {
	if f, err := os.Open(path); err == nil {
		hdr := make([]byte, 16)
		n, _ := io.ReadFull(f, hdr)
		f.Close()
		if n > 0 && !bytes.HasPrefix(hdr[:n], []byte("SQLite format 3\x00")) {
			return nil, fmt.Errorf("open baseline %s: not an SQLite database; refusing to touch it (move it away or pass another -db)", path)
		}
		// A file without write permission is read-only even for root, who
		// could open it anyway: never write what its owner protected.
		if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o222 == 0 {
			return nil, fmt.Errorf("open baseline %s: the file is read-only (mode %04o); make it writable or pass another -db", path, st.Mode().Perm())
		}
		if fh, err := os.OpenFile(path, os.O_RDWR, 0); err != nil {
			return nil, fmt.Errorf("open baseline %s: cannot write it: %v (it is read-only; check its permissions, or pass another -db)", path, errors.Unwrap(err))
		} else {
			fh.Close()
		}
	} else if !os.IsNotExist(err) {
		return nil, fmt.Errorf("open baseline %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open baseline %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open baseline %s: %w", path, err)
	}
	s := &Store{db: db, path: path}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open baseline %s: %w", path, err)
	}
	return s, nil
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w (is it a corrupt database?)", err)
	}
	if v > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this gpugate knows (%d): upgrade gpugate", v, len(migrations))
	}
	for ; v < len(migrations); v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migrate schema to version %d: %w", v+1, err)
		}
		if v+1 == 2 {
			// Runs recorded before version 2 get their rows from their
			// analysis document.
			if err := backfill(ctx, tx); err != nil {
				return fmt.Errorf("migrate schema to version 2: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, v+1)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func backfill(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, analysis FROM runs`)
	if err != nil {
		return err
	}
	type old struct {
		id int64
		an string
	}
	var runs []old
	for rows.Next() {
		var o old
		if err := rows.Scan(&o.id, &o.an); err != nil {
			rows.Close()
			return err
		}
		runs = append(runs, o)
	}
	rows.Close()
	for _, o := range runs {
		d, err := derive([]byte(o.an))
		if err != nil {
			return fmt.Errorf("run %d: %w", o.id, err)
		}
		if err := insertDerived(ctx, tx, o.id, d); err != nil {
			return err
		}
	}
	return nil
}

// Record stores a run, with its per-step samples, kernels and findings,
// in one transaction: a crash leaves either all of it or none.
func (s *Store) Record(ctx context.Context, r Run) (int64, error) {
	if r.Created.IsZero() {
		r.Created = time.Now()
	}
	d, err := derive(r.Analysis)
	if err != nil {
		return 0, fmt.Errorf("record run in %s: %w", s.path, err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("record run in %s: %w", s.path, err)
	}
	defer tx.Rollback()
	id, err := insert(ctx, tx, r, d)
	if err != nil {
		return 0, fmt.Errorf("record run in %s: %w", s.path, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("record run in %s: %w", s.path, err)
	}
	return id, nil
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// insert writes a run and its derived rows; r.ID is kept when non-zero.
func insert(ctx context.Context, tx execer, r Run, d derived) (int64, error) {
	var id any
	if r.ID != 0 {
		id = r.ID
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO runs
		(id, workload, branch, commit_sha, created_at, kind, profiler, fingerprint_hash, fingerprint, gpugate_version, analysis)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		id, r.Workload, r.Branch, r.Commit, r.Created.Unix(), r.Kind, r.Profiler, r.FingerprintHash, string(r.Fingerprint), r.Version, string(r.Analysis))
	if err != nil {
		return 0, err
	}
	runID, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	return runID, insertDerived(ctx, tx, runID, d)
}

func insertDerived(ctx context.Context, tx execer, runID int64, d derived) error {
	for _, x := range d.samples {
		if _, err := tx.ExecContext(ctx, `INSERT INTO samples VALUES (?, ?, ?, ?, ?)`, runID, x.rank, x.metric, x.step, x.value); err != nil {
			return err
		}
	}
	for _, k := range d.kernels {
		if _, err := tx.ExecContext(ctx, `INSERT INTO kernels VALUES (?, ?, ?, ?, ?)`, runID, k.rank, k.name, k.count, k.time); err != nil {
			return err
		}
	}
	for _, f := range d.findings {
		if _, err := tx.ExecContext(ctx, `INSERT INTO findings VALUES (?, ?, ?, ?, ?, ?)`, runID, f.rank, f.id, f.severity, f.summary, f.share); err != nil {
			return err
		}
	}
	return nil
}

// Baselines returns the last k baseline runs of workload on branch, newest
// first, whatever their fingerprint: the caller decides which match.
func (s *Store) Baselines(ctx context.Context, workload, branch string, k int) ([]Run, error) {
	return s.query(ctx, `SELECT `+runColumns+` FROM runs WHERE workload = ? AND branch = ? AND kind = 'baseline'
		ORDER BY created_at DESC, id DESC LIMIT ?`, workload, branch, k)
}

// Name is the store's path, for messages.
func (s *Store) Name() string { return s.path }
