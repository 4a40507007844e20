// Package baseline stores runs of workloads: the base branch's runs are
// the baselines candidates are compared with. The store computes nothing;
// it keeps each run's analysis document and fingerprint, and the numbers
// derived from the document so that they can be queried.
//
// Two backends hold the same schema with the same meaning: a SQLite file
// (the embedded default) and a PostgreSQL database (a postgres:// URL), for
// a fleet of runners that share one history. Their schemas are versioned
// and migrated forward on open.
package baseline

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// dialect is what differs between the backends' SQL.
type dialect int

const (
	sqliteDialect dialect = iota
	pgDialect
)

// rebind turns the ? placeholders of a query into PostgreSQL's $n.
func (d dialect) rebind(q string) string {
	if d != pgDialect {
		return q
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

// Store is an open baseline store.
type Store struct {
	db       *sql.DB
	name     string // the path, or the URL with its password masked
	d        dialect
	readOnly bool
	password string // scrubbed from errors
	// roleWarning: a read-only PostgreSQL store's role could write it
	// (checkRole).
	roleWarning string
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
	// Conditions are the run conditions as JSON (runcond.Conditions, which
	// the store does not interpret); empty for runs recorded without.
	Conditions []byte
}

// Open opens or creates the store at target, a SQLite file path or a
// postgres:// URL, for reading and writing. A file that is not an SQLite
// database, a database that holds another application's tables, or a
// file that cannot be written is an error and is left untouched.
func Open(ctx context.Context, target string) (*Store, error) {
	if IsURL(target) {
		return openPostgres(ctx, target, false, false)
	}
	return openSQLite(ctx, target, false, false)
}

// OpenExisting opens a store that must exist already, for reading: a
// SQLite file that cannot be written is opened read-only (ReadOnly
// reports it) and serves every read.
func OpenExisting(ctx context.Context, target string) (*Store, error) {
	if IsURL(target) {
		return openPostgres(ctx, target, true, false)
	}
	return openSQLite(ctx, target, true, false)
}

// OpenReadOnly opens a store that must exist already and never writes to
// it, even where it could: SQLite files are opened with mode=ro, and a
// PostgreSQL store refuses to record. Runs of untrusted code (a pull
// request's) gate against the store this way.
func OpenReadOnly(ctx context.Context, target string) (*Store, error) {
	if IsURL(target) {
		s, err := openPostgres(ctx, target, true, true)
		if err == nil {
			s.readOnly = true
			if err := s.checkRole(ctx); err != nil {
				s.Close()
				return nil, err
			}
		}
		return s, err
	}
	return openSQLite(ctx, target, true, true)
}

// checkRole asks PostgreSQL whether the role a read-only store was opened
// with could write it anyway (INSERT, UPDATE, DELETE or TRUNCATE on its
// tables): pr mode runs a pull request's code, which must not be one leak
// away from writing the baselines; RoleWarning says so, with the fix.
func (s *Store) checkRole(ctx context.Context) error {
	var role string
	var writes bool
	err := s.db.QueryRowContext(ctx, `SELECT current_user,
		has_table_privilege(current_user, $1, 'INSERT, UPDATE, DELETE, TRUNCATE') OR
		has_table_privilege(current_user, $2, 'INSERT, UPDATE, DELETE, TRUNCATE')`,
		pgSchema+".runs", pgSchema+".samples").Scan(&role, &writes)
	if err != nil {
		return s.wrap("check the role's privileges", err)
	}
	if writes {
		s.roleWarning = fmt.Sprintf("the PostgreSQL role %q that opened %s read-only can write the store (INSERT, UPDATE, DELETE or TRUNCATE on %s.runs or .samples): "+
			"pull requests should gate through a role that can only read it, so that their code, which runs on this machine, is never one leak away from rewriting the baselines; "+
			"create one with GRANT USAGE ON SCHEMA %s and GRANT SELECT ON ALL TABLES IN SCHEMA %s, and give pr mode its URL (docs/security.md)",
			role, s.name, pgSchema, pgSchema, pgSchema)
	}
	return nil
}

// RoleWarning is, for a PostgreSQL store opened read-only through a role
// that could write it, the warning that says so and how to fix it; "" when
// the role can only read (or the store is SQLite).
func (s *Store) RoleWarning() string { return s.roleWarning }

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// Name is the store's path or URL, password masked, for messages.
func (s *Store) Name() string { return s.name }

// ReadOnly reports whether the store was opened read-only.
func (s *Store) ReadOnly() bool { return s.readOnly }

// Postgres reports whether the store is a PostgreSQL database.
func (s *Store) Postgres() bool { return s.d == pgDialect }

// wrap makes an error from the store one line that names the store and
// never shows a password.
func (s *Store) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if s.d == pgDialect {
		err = scrub(err, s.name, s.password)
	}
	return fmt.Errorf("%s %s: %w", op, s.name, err)
}

func (s *Store) exec(ctx context.Context, q execer, query string, args ...any) (sql.Result, error) {
	return q.ExecContext(ctx, s.d.rebind(query), args...)
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (s *Store) backfill(ctx context.Context, tx *sql.Tx) error {
	return s.rederive(ctx, tx, func(id int64, d derived) error { return s.insertDerived(ctx, tx, id, d) })
}

// resample derives the samples of every run again from its analysis.
func (s *Store) resample(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM samples`); err != nil {
		return err
	}
	return s.rederive(ctx, tx, func(id int64, d derived) error {
		return s.insertDerived(ctx, tx, id, derived{samples: d.samples})
	})
}

// rederive derives every stored run's rows from its analysis again and
// hands them to store, for the migrations that add derived rows.
func (s *Store) rederive(ctx context.Context, tx *sql.Tx, store func(id int64, d derived) error) error {
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
		if err := store(o.id, d); err != nil {
			return err
		}
	}
	return nil
}

// Record stores a run, with its per-step samples, kernels and findings,
// in one transaction: a crash, or a server that goes away, leaves either
// all of it or none.
func (s *Store) Record(ctx context.Context, r Run) (int64, error) {
	if s.readOnly {
		return 0, s.wrap("record run in", errReadOnly)
	}
	if r.Created.IsZero() {
		r.Created = time.Now()
	}
	d, err := derive(r.Analysis)
	if err == nil {
		err = checkDerived(d)
	}
	for _, doc := range []struct {
		what string
		b    []byte
	}{{"analysis", r.Analysis}, {"fingerprint", r.Fingerprint}, {"conditions", r.Conditions}} {
		if err == nil {
			err = checkNumbers(doc.what, doc.b)
		}
	}
	if err != nil {
		return 0, s.wrap("record run in", err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, s.wrap("record run in", err)
	}
	defer tx.Rollback()
	id, err := s.insert(ctx, tx, r, d)
	if err != nil {
		return 0, s.wrap("record run in", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, s.wrap("record run in", err)
	}
	return id, nil
}

// compact is JSON without insignificant space: the form an export holds
// (encoding/json compacts raw messages), so that what is stored is what
// round-trips.
func compact(b []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(b)) // one allocation: a run's analysis may be 64 MiB
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// insert writes a run and its derived rows; r.ID is kept when non-zero
// (only the migrations' tests do that: Import never keeps an id).
func (s *Store) insert(ctx context.Context, tx *sql.Tx, r Run, d derived) (int64, error) {
	r.Fingerprint, r.Analysis = compact(r.Fingerprint), compact(r.Analysis)
	if len(r.Conditions) > 0 {
		r.Conditions = compact(r.Conditions)
	}
	cols := `workload, branch, commit_sha, created_at, kind, profiler, fingerprint_hash, fingerprint, gpugate_version, analysis, conditions`
	args := []any{r.Workload, r.Branch, r.Commit, r.Created.Unix(), r.Kind, r.Profiler, r.FingerprintHash, string(r.Fingerprint), r.Version, string(r.Analysis), string(r.Conditions)}
	marks := `?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?`
	if r.ID != 0 {
		cols, marks = "id, "+cols, "?, "+marks
		args = append([]any{r.ID}, args...)
	}
	var id int64
	if err := tx.QueryRowContext(ctx, s.d.rebind(`INSERT INTO runs (`+cols+`) VALUES (`+marks+`) RETURNING id`), args...).Scan(&id); err != nil {
		return 0, err
	}
	return id, s.insertDerived(ctx, tx, id, d)
}

func (s *Store) insertDerived(ctx context.Context, tx *sql.Tx, runID int64, d derived) error {
	// One prepared statement per table: a run of 100,000 steps has a
	// million samples, and preparing each INSERT anew cost most of an
	// import's time.
	insert := func(q string, n int, args func(i int) []any) error {
		if n == 0 {
			return nil
		}
		st, err := tx.PrepareContext(ctx, s.d.rebind(q))
		if err != nil {
			return err
		}
		defer st.Close()
		for i := range n {
			if _, err := st.ExecContext(ctx, args(i)...); err != nil {
				return err
			}
		}
		return nil
	}
	if err := insert(`INSERT INTO samples VALUES (?, ?, ?, ?, ?)`, len(d.samples), func(i int) []any {
		x := d.samples[i]
		return []any{runID, x.rank, x.metric, x.step, x.value}
	}); err != nil {
		return err
	}
	if err := insert(`INSERT INTO kernels VALUES (?, ?, ?, ?, ?)`, len(d.kernels), func(i int) []any {
		k := d.kernels[i]
		return []any{runID, k.rank, k.name, k.count, k.time}
	}); err != nil {
		return err
	}
	return insert(`INSERT INTO findings VALUES (?, ?, ?, ?, ?, ?)`, len(d.findings), func(i int) []any {
		f := d.findings[i]
		return []any{runID, f.rank, f.id, f.severity, f.summary, f.share}
	})
}

// Baselines returns the newest k baseline runs of workload on branch whose
// fingerprint hash is fp, newest first: the fingerprint is part of the
// query, so that newer runs of other machines never crowd out the ones
// that match.
func (s *Store) Baselines(ctx context.Context, workload, branch, fp string, k int) ([]Run, error) {
	return s.query(ctx, `SELECT `+runColumns+` FROM runs WHERE workload = ? AND branch = ? AND kind = 'baseline' AND fingerprint_hash = ?
		ORDER BY created_at DESC, id DESC LIMIT ?`, workload, branch, fp, k)
}

// Newest returns the newest baseline run of workload on branch, whatever
// its fingerprint; nil when there is none.
func (s *Store) Newest(ctx context.Context, workload, branch string) (*Run, error) {
	rs, err := s.query(ctx, `SELECT `+runColumns+` FROM runs WHERE workload = ? AND branch = ? AND kind = 'baseline'
		ORDER BY created_at DESC, id DESC LIMIT 1`, workload, branch)
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	return &rs[0], nil
}
