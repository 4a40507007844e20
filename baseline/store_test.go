package baseline_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/internal/pgtest"
)

// Another application's SQLite database is refused before anything is
// written to it: same bytes, no WAL switch, no -wal or -shm file.
func TestForeignSQLiteUntouched(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other_app.db")
	db, _ := sql.Open("sqlite", other)
	if _, err := db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('keep me')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, _ := os.ReadFile(other)
	for _, open := range []func(context.Context, string) (*baseline.Store, error){baseline.Open, baseline.OpenExisting} {
		if _, err := open(context.Background(), other); err == nil || !strings.Contains(err.Error(), "not a gpugate baseline store") {
			t.Errorf("open other_app.db: error %v, want a refusal", err)
		}
	}
	if after, _ := os.ReadFile(other); !bytes.Equal(before, after) {
		t.Error("another application's database was modified")
	}
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Stat(other + suffix); err == nil {
			t.Errorf("%s appeared", filepath.Base(other+suffix))
		}
	}
}

// File names are files, never URIs: '?', '#' and '%' are part of the name.
func TestPathsAreNotURIs(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a?b.db", "rank#1.db", "x%3Fy.db", "mode=ro?c.db"} {
		path := filepath.Join(dir, name)
		s, err := baseline.Open(context.Background(), path)
		if err != nil {
			t.Fatalf("Open(%q): %v", name, err)
		}
		if _, err := s.Record(context.Background(), run(doc(t), "c")); err != nil {
			t.Fatalf("Record in %q: %v", name, err)
		}
		s.Close()
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%q was not created: %v", name, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), "-wal") && !strings.HasSuffix(e.Name(), "-shm") {
			names = append(names, e.Name())
		}
	}
	if len(names) != 4 {
		t.Errorf("files %q, want exactly the four named ones", names)
	}
}

// A read-only store serves every read — runs, baselines, series, export —
// and refuses writes with a clear error, the file unchanged.
func TestReadOnlyServesReads(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ro.db")
	s, _ := baseline.Open(ctx, path)
	s.Record(ctx, run(doc(t), "c1"))
	s.Close()
	os.Chmod(path, 0o444)
	before, _ := os.ReadFile(path)
	s, err := baseline.OpenExisting(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.ReadOnly() {
		t.Error("ReadOnly() = false for a 0444 file")
	}
	if rs, err := s.Runs(ctx, baseline.Filter{}); err != nil || len(rs) != 1 {
		t.Errorf("Runs: %d, %v", len(rs), err)
	}
	if rs, err := s.Baselines(ctx, "w", "main", "abc", 5); err != nil || len(rs) != 1 {
		t.Errorf("Baselines: %d, %v", len(rs), err)
	}
	if pts, err := s.Series(ctx, "w", "main", "abc", "step_time_ns"); err != nil || len(pts) != 1 {
		t.Errorf("Series: %d, %v", len(pts), err)
	}
	if e, err := s.Export(ctx); err != nil || len(e.Runs) != 1 {
		t.Errorf("Export: %v", err)
	}
	if _, err := s.Record(ctx, run(doc(t), "c2")); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("Record into a read-only store: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("the read-only file changed")
	}
}

// Import checks every run first and imports all or nothing.
func TestImportValidates(t *testing.T) {
	d := doc(t)
	good := baseline.ExportedRun{ID: 1, Workload: "w", Branch: "main", Commit: "c", Created: 1700000000, Kind: "baseline", Profiler: "nsys",
		FingerprintHash: "abc", Fingerprint: json.RawMessage(`{"gpu":"A100"}`), Version: "t", Analysis: json.RawMessage(d)}
	cases := []struct {
		name string
		edit func(*baseline.ExportedRun)
		want string
	}{
		{"future", func(x *baseline.ExportedRun) { x.Created = time.Date(5138, 1, 1, 0, 0, 0, 0, time.UTC).Unix() }, "in the future"},
		{"null analysis", func(x *baseline.ExportedRun) { x.Analysis = json.RawMessage(`null`) }, "analysis"},
		{"no profiles", func(x *baseline.ExportedRun) { x.Analysis = json.RawMessage(`{"profiles":[]}`) }, "analysis"},
		{"bad utf-8", func(x *baseline.ExportedRun) { x.Workload = "w\xff" }, "UTF-8"},
		{"empty workload", func(x *baseline.ExportedRun) { x.Workload = "" }, "workload is empty"},
		{"kind", func(x *baseline.ExportedRun) { x.Kind = "other" }, "kind"},
		{"fingerprint", func(x *baseline.ExportedRun) { x.Fingerprint = json.RawMessage(`"x"`) }, "fingerprint"},
		{"conditions not an object", func(x *baseline.ExportedRun) { x.Conditions = json.RawMessage(`[1]`) }, "conditions is not a JSON object"},
	}
	each(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		target := be.new(t)
		s, err := baseline.Open(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, c := range cases {
			bad := good
			bad.ID = 2
			c.edit(&bad)
			_, err := s.Import(ctx, &baseline.Export{Format: 1, Runs: []baseline.ExportedRun{good, bad}})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nothing imported") {
				t.Errorf("%s: error %v, want %q and nothing imported", c.name, err, c.want)
			}
			if n := countIn(t, be, target, "runs"); n != 0 {
				t.Fatalf("%s: %d runs stored after a failed import, want 0", c.name, n)
			}
		}
		if n, err := s.Import(ctx, &baseline.Export{Format: 1, Runs: []baseline.ExportedRun{good}}); n != 1 || err != nil {
			t.Errorf("good import: %d, %v", n, err)
		}
	})
}

// The password of a postgres:// URL is in no message: not in the store's
// name, not in errors of a wrong password, not in the database.
func TestPostgresPasswordNeverShown(t *testing.T) {
	ctx := context.Background()
	target := pgtest.DB(t)
	s, err := baseline.Open(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.Name(), "S3cret") || !strings.Contains(s.Name(), "***") {
		t.Errorf("Name() = %q", s.Name())
	}
	s.Record(ctx, run(doc(t), "c"))
	s.Close()
	wrong := strings.Replace(target, "S3cret", "Wr0ng", 1)
	_, err = baseline.Open(ctx, wrong)
	if err == nil {
		t.Fatal("a wrong password opened the store")
	}
	msg := err.Error()
	if strings.Contains(msg, "Wr0ng") || strings.Contains(msg, "S3cret") || strings.Contains(msg, "\n") {
		t.Errorf("error shows the password or spans lines: %q", msg)
	}
	t.Logf("wrong password: %s", msg)
	if m := baseline.Mask(target); strings.Contains(m, "S3cret") {
		t.Errorf("Mask = %q", m)
	}
	// PGPASSWORD works as with libpq: a URL without the password.
	bare := strings.Replace(target, ":"+strings.Split(strings.Split(target, "://")[1], "@")[0][len(pgtest.Role)+1:]+"@", "@", 1)
	t.Setenv("PGPASSWORD", pgtest.Password)
	s, err = baseline.OpenExisting(ctx, bare)
	if err != nil {
		t.Fatalf("PGPASSWORD: %v", err)
	}
	s.Close()
	// Nothing stored holds it.
	var n int
	pgtest.Super(t, pgtest.Name(target)).QueryRow(`SELECT count(*) FROM runs WHERE fingerprint LIKE '%S3cret%' OR analysis LIKE '%S3cret%'`).Scan(&n)
	if n != 0 {
		t.Errorf("%d stored runs hold the password", n)
	}
}

// Recorders whose server goes away mid-run fail with one line, and what
// is stored afterwards is whole: no run without its rows.
func TestPostgresServerGone(t *testing.T) {
	db := pgtest.DB(t)
	docPath := filepath.Join(t.TempDir(), "doc.json")
	os.WriteFile(docPath, doc(t), 0o644)
	var out [4]bytes.Buffer
	var cmds []*childProc
	for i := range out {
		c := child(t, db, docPath, -1)
		c.Stderr = &out[i]
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, &childProc{c})
	}
	time.Sleep(2 * time.Second)
	if err := pgtest.StopServer(); err != nil {
		t.Fatal(err)
	}
	for i, c := range cmds {
		err := c.Wait()
		ee, ok := err.(interface{ Sys() any })
		if err == nil || !ok {
			t.Fatalf("recorder %d: %v, want a failure", i, err)
		}
		if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || ws.ExitStatus() != 4 {
			t.Errorf("recorder %d exit %v, want 4 (Record failed)", i, err)
		}
		msg := strings.TrimSpace(out[i].String())
		if strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "record run in postgres://") || strings.Contains(msg, "S3cret") {
			t.Errorf("recorder %d said %q, want one line naming the masked store", i, msg)
		}
	}
	t.Logf("recorder error: %s", strings.TrimSpace(out[0].String()))
	if err := pgtest.StartServer(); err != nil {
		t.Fatal(err)
	}
	runs := checkWhole(t, backends[1], db)
	t.Logf("%d whole runs stored before the server stopped", runs)
	_ = fmt.Sprint
}

type childProc struct{ *exec.Cmd }

// A reader in the middle of a transaction does not keep a writer from
// recording.
func TestReadsDoNotBlockWriters(t *testing.T) {
	each(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		target := be.new(t)
		s, err := baseline.Open(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		d := doc(t)
		s.Record(ctx, run(d, "c1"))
		tx, err := be.raw(t, target).BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		var n int
		if err := tx.QueryRow(`SELECT count(*) FROM runs`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("reader: %d, %v", n, err)
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := s.Record(wctx, run(d, "c2")); err != nil {
			t.Fatalf("record while a reader is open: %v", err)
		}
		// The reader's snapshot is unchanged; the store has both.
		tx.QueryRow(`SELECT count(*) FROM runs`).Scan(&n)
		if rs, _ := s.Runs(ctx, baseline.Filter{}); len(rs) != 2 {
			t.Errorf("%d runs after the write, want 2", len(rs))
		}
	})
}

// A PostgreSQL role that may only read serves reads and refuses writes
// with a clear error; OpenExisting of a database with no store says so.
func TestPostgresReadOnlyRole(t *testing.T) {
	ctx := context.Background()
	target := pgtest.DB(t)
	if _, err := baseline.OpenExisting(ctx, target); err == nil || !strings.Contains(err.Error(), "no gpugate store in this database yet") {
		t.Errorf("OpenExisting of an empty database: %v", err)
	}
	s, _ := baseline.Open(ctx, target)
	s.Record(ctx, run(doc(t), "c1"))
	s.Close()
	super := pgtest.Super(t, pgtest.Name(target))
	for _, q := range []string{`DROP ROLE IF EXISTS gpugate_reader`, `CREATE ROLE gpugate_reader LOGIN PASSWORD 'reader-pw'`,
		`GRANT USAGE ON SCHEMA gpugate TO gpugate_reader`, `GRANT SELECT ON ALL TABLES IN SCHEMA gpugate TO gpugate_reader`} {
		if _, err := super.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		super.Exec(`REVOKE ALL ON ALL TABLES IN SCHEMA gpugate FROM gpugate_reader`)
		super.Exec(`REVOKE ALL ON SCHEMA gpugate FROM gpugate_reader`)
	})
	ro := pgtest.URLAs("gpugate_reader", "reader-pw", pgtest.Name(target))
	if _, err := baseline.Open(ctx, ro); err == nil || !strings.Contains(err.Error(), "may not write") {
		t.Errorf("Open as a reader: %v", err)
	}
	r, err := baseline.OpenExisting(ctx, ro)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.ReadOnly() {
		t.Error("ReadOnly() = false for a role without INSERT")
	}
	if rs, err := r.Baselines(ctx, "w", "main", "abc", 5); err != nil || len(rs) != 1 {
		t.Errorf("Baselines as a reader: %d, %v", len(rs), err)
	}
	if _, err := r.Record(ctx, run(doc(t), "c2")); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("Record as a reader: %v", err)
	}
}

func TestMask(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://u:pw@db.example:5432/gates?sslmode=require", "postgres://u:***@db.example:5432/gates?sslmode=require"},
		{"postgresql://u:p%40ss%3Aw@h/db", "postgresql://u:***@h/db"},
		{"postgres://u@h/db?password=topsecret&sslmode=disable", "postgres://u@h/db?password=***&sslmode=disable"},
		{"postgres://u@h/db", "postgres://u@h/db"},
		{"postgres://u:pw@h:bad port/db", "postgres://***@h:bad port/db"},
		{".gpugate/baseline.db", ".gpugate/baseline.db"},
	} {
		got := baseline.Mask(c.in)
		if got != c.want {
			t.Errorf("Mask(%q) = %q, want %q", c.in, got, c.want)
		}
		for _, secret := range []string{"pw@", "p%40ss", "topsecret"} {
			if strings.Contains(got, secret) {
				t.Errorf("Mask(%q) = %q shows the password", c.in, got)
			}
		}
	}
}
