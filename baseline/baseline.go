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
		if fh, err := os.OpenFile(path, os.O_RDWR, 0); err != nil {
			return nil, fmt.Errorf("open baseline %s: cannot write it: %v (check its permissions, or pass another -db)", path, errors.Unwrap(err))
		} else {
			fh.Close()
		}
	} else if !os.IsNotExist(err) {
		return nil, fmt.Errorf("open baseline %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open baseline %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
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
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, v+1)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Record stores a run and returns its id.
func (s *Store) Record(ctx context.Context, r Run) (int64, error) {
	if r.Created.IsZero() {
		r.Created = time.Now()
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO runs
		(workload, branch, commit_sha, created_at, kind, profiler, fingerprint_hash, fingerprint, gpugate_version, analysis)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.Workload, r.Branch, r.Commit, r.Created.Unix(), r.Kind, r.Profiler, r.FingerprintHash, string(r.Fingerprint), r.Version, string(r.Analysis))
	if err != nil {
		return 0, fmt.Errorf("record run in %s: %w", s.path, err)
	}
	return res.LastInsertId()
}

// Baselines returns the last k baseline runs of workload on branch, newest
// first, whatever their fingerprint: the caller decides which match.
func (s *Store) Baselines(ctx context.Context, workload, branch string, k int) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, workload, branch, commit_sha, created_at, kind, profiler,
		fingerprint_hash, fingerprint, gpugate_version, analysis
		FROM runs WHERE workload = ? AND branch = ? AND kind = 'baseline' ORDER BY created_at DESC, id DESC LIMIT ?`,
		workload, branch, k)
	if err != nil {
		return nil, fmt.Errorf("read baselines from %s: %w", s.path, err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var r Run
		var created int64
		var fp, an string
		if err := rows.Scan(&r.ID, &r.Workload, &r.Branch, &r.Commit, &created, &r.Kind, &r.Profiler, &r.FingerprintHash, &fp, &r.Version, &an); err != nil {
			return nil, err
		}
		r.Created, r.Fingerprint, r.Analysis = time.Unix(created, 0), []byte(fp), []byte(an)
		out = append(out, r)
	}
	return out, rows.Err()
}
