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
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteMigrations[i] takes the schema from version i to i+1; the version
// is PRAGMA user_version.
var sqliteMigrations = []string{
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

	// 3: baselines are picked by fingerprint in the query.
	`CREATE INDEX runs_fingerprint ON runs (workload, branch, kind, fingerprint_hash, created_at);`,

	// 4: the Nsight Compute deep-dive's kernels of a run (baseline/ncu.go).
	sqliteNCUMigration,

	// 5: the run conditions nvidia-smi saw while the run ran (JSON of
	// runcond.Conditions; '' for runs recorded before). It depends on no
	// other migration's content.
	`ALTER TABLE runs ADD COLUMN conditions TEXT NOT NULL DEFAULT ''`,
}

// sqliteURI makes path a SQLite URI that names exactly that file: '?', '#'
// and '%' in a file name are data, never URI syntax (a plain name with '?'
// would lose everything after it).
func sqliteURI(path string, params ...string) string {
	var b strings.Builder
	b.WriteString("file:")
	for i := 0; i < len(path); i++ {
		switch c := path[i]; c {
		case '?', '#', '%':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	if len(params) > 0 {
		b.WriteString("?" + strings.Join(params, "&"))
	}
	return b.String()
}

// openSQLite opens the store at path: an existing gpugate store, or a new
// or empty file that becomes one. Nothing is written to any other file,
// not even a PRAGMA: the file is inspected read-only first. A file that
// cannot be written is opened read-only when readOK, else refused; forceRO
// opens even a writable file read-only (mode=ro).
func openSQLite(ctx context.Context, path string, readOK, forceRO bool) (*Store, error) {
	fail := func(format string, args ...any) (*Store, error) {
		return nil, fmt.Errorf("open baseline %s: %s", path, fmt.Sprintf(format, args...))
	}
	exists, writable := false, true
	if f, err := os.Open(path); err == nil {
		exists = true
		hdr := make([]byte, 16)
		n, _ := io.ReadFull(f, hdr)
		f.Close()
		if n > 0 && !bytes.HasPrefix(hdr[:n], []byte("SQLite format 3\x00")) {
			return fail("not an SQLite database; refusing to touch it (move it away or pass another -db)")
		}
		// A file without write permission is read-only even for root, who
		// could open it anyway: never write what its owner protected.
		if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o222 == 0 {
			writable = false
		} else if fh, err := os.OpenFile(path, os.O_RDWR, 0); err != nil {
			writable = false
		} else {
			fh.Close()
		}
		if forceRO {
			writable = false
		}
		if !writable && !readOK {
			return fail("the file is read-only; make it writable or pass another -db")
		}
		if n > 0 {
			v, err := inspectSQLite(ctx, path)
			if err != nil {
				return fail("%v", err)
			}
			if v > len(sqliteMigrations) {
				return fail("schema version %d is newer than this gpugate knows (%d): upgrade gpugate", v, len(sqliteMigrations))
			}
			if !writable {
				if v < len(sqliteMigrations) {
					return fail("the file is read-only and its schema (version %d) needs upgrading to %d; open it writable once", v, len(sqliteMigrations))
				}
				// mode=ro: no write at all, no journal mode change.
				db, err := sql.Open("sqlite", sqliteURI(path, readOnlyParams(path)...))
				if err != nil {
					return fail("%v", err)
				}
				return &Store{db: db, name: path, d: sqliteDialect, readOnly: true}, nil
			}
		}
	} else if !os.IsNotExist(err) {
		return nil, fmt.Errorf("open baseline %s: %w", path, err)
	} else if readOK {
		return nil, fmt.Errorf("open baseline %s: no such file", path)
	}
	if !exists {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("open baseline %s: %w", path, err)
		}
	}
	// SQLite answers SQLITE_BUSY at once, without the busy timeout, in a
	// few cases: a connection that finds another one recovering the WAL
	// index, or turning the file to WAL, as processes that create one
	// store together do (1 open in about 1,000 of 8 at once here). The
	// open is taken again then, for up to the same 30 s.
	deadline := time.Now().Add(30 * time.Second)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		db, err := sql.Open("sqlite", sqliteURI(path, "_pragma=busy_timeout(30000)", "_pragma=journal_mode(WAL)", "_pragma=synchronous(NORMAL)", "_pragma=foreign_keys(1)", "_txlock=immediate"))
		if err != nil {
			return nil, fmt.Errorf("open baseline %s: %w", path, err)
		}
		s := &Store{db: db, name: path, d: sqliteDialect}
		err = s.migrateSQLite(ctx)
		if err == nil {
			return s, nil
		}
		db.Close()
		if !isBusy(err) || time.Now().Add(wait).After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("open baseline %s: %w", path, err)
		}
		time.Sleep(wait)
	}
}

func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// readOnlyParams open path for reading only. A WAL database opened with
// mode=ro alone still creates its -wal and -shm beside it; with no -wal
// there, every page is in the file, so it is read as immutable and nothing
// is created. (A writer that starts during the read is not seen: the reads
// that gate are short.) With a -wal present a writer is about, and its
// -shm is used as it is.
func readOnlyParams(path string) []string {
	params := []string{"mode=ro", "_pragma=busy_timeout(30000)", "_pragma=query_only(1)"}
	_, errWAL := os.Stat(path + "-wal")
	_, errJournal := os.Stat(path + "-journal")
	if os.IsNotExist(errWAL) && os.IsNotExist(errJournal) {
		params = append(params, "immutable=1")
	}
	return params
}

// inspectSQLite reads an existing database without writing to it and
// returns its gpugate schema version: 0 for an empty database, an error
// for one that holds another application's tables.
//
// The read takes no lock when no -wal is beside the file (immutable, see
// readOnlyParams), so a gpugate process that creates or checkpoints the
// same store meanwhile can hand it a torn page set: tables without their
// schema version, or "malformed". Such a read is seen by the file having
// changed under it (size, modification time, a -wal or -journal appearing
// or going), and is taken again; a store nobody writes reads the same the
// first time.
func inspectSQLite(ctx context.Context, path string) (int, error) {
	var v int
	var err error
	for try := 0; try < 20; try++ {
		before := fileState(path)
		v, err = inspectOnce(ctx, path)
		if fileState(path) == before {
			return v, err
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Duration(10*(try+1)) * time.Millisecond):
		}
	}
	return v, err
}

// sqliteFileState is what changes when a writer touches a database file.
type sqliteFileState struct {
	size         int64
	mtime        time.Time
	wal, journal bool
}

func fileState(path string) sqliteFileState {
	var s sqliteFileState
	if st, err := os.Stat(path); err == nil {
		s.size, s.mtime = st.Size(), st.ModTime()
	}
	_, err := os.Stat(path + "-wal")
	s.wal = err == nil
	_, err = os.Stat(path + "-journal")
	s.journal = err == nil
	return s
}

func inspectOnce(ctx context.Context, path string) (int, error) {
	db, err := sql.Open("sqlite", sqliteURI(path, readOnlyParams(path)...))
	if err != nil {
		return 0, err
	}
	defer db.Close()
	// One read transaction: the version and the tables are of one
	// snapshot. (Read apart, a gpugate process creating the store between
	// the two reads showed its tables at version 0: "not a gpugate store".)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w (is it a corrupt database?)", err)
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w (is it a corrupt database?)", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		return 0, fmt.Errorf("read tables: %w (is it a corrupt database?)", err)
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return 0, err
		}
		tables = append(tables, n)
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read tables: %w (is it a corrupt database?)", err)
	}
	if len(tables) == 0 && v == 0 {
		return 0, nil
	}
	if v == 0 || !contains(tables, "runs") {
		if len(tables) > 5 {
			tables = append(tables[:5], "…")
		}
		return 0, fmt.Errorf("not a gpugate baseline store (it holds tables %s); refusing to touch it (pass another -db)", strings.Join(tables, ", "))
	}
	return v, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (s *Store) migrateSQLite(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w (is it a corrupt database?)", err)
	}
	if v > len(sqliteMigrations) {
		return fmt.Errorf("schema version %d is newer than this gpugate knows (%d): upgrade gpugate", v, len(sqliteMigrations))
	}
	if v == len(sqliteMigrations) {
		return nil
	}
	for ; v < len(sqliteMigrations); v++ {
		if _, err := tx.ExecContext(ctx, sqliteMigrations[v]); err != nil {
			return fmt.Errorf("migrate schema to version %d: %w", v+1, err)
		}
		if v+1 == 2 {
			// Runs recorded before version 2 get their rows from their
			// analysis document.
			if err := s.backfill(ctx, tx); err != nil {
				return fmt.Errorf("migrate schema to version 2: %w", err)
			}
		}
		if v+1 == 3 {
			// Version 3 stores every metric analyze reports.
			if err := s.resample(ctx, tx); err != nil {
				return fmt.Errorf("migrate schema to version 3: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, v+1)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

var errReadOnly = errors.New("the store is read-only")
