package baseline_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/internal/testdb"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/trace/nsys"
)

// TestMain lets the test binary act as a separate process that records
// runs: GPUGATE_BASELINE_CHILD=DB:N records N runs (N < 0: forever).
func TestMain(m *testing.M) {
	if spec := os.Getenv("GPUGATE_BASELINE_CHILD"); spec != "" {
		db, n, _ := strings.Cut(spec, ":")
		count, _ := strconv.Atoi(n)
		doc, _ := os.ReadFile(os.Getenv("GPUGATE_BASELINE_DOC"))
		s, err := baseline.Open(context.Background(), db)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		for i := 0; count < 0 || i < count; i++ {
			if _, err := s.Record(context.Background(), run(doc, fmt.Sprintf("pid%d-%d", os.Getpid(), i))); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(4)
			}
		}
		s.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func run(doc []byte, commit string) baseline.Run {
	return baseline.Run{Workload: "w", Branch: "main", Commit: commit, Kind: "baseline", Profiler: "nsys",
		FingerprintHash: "abc", Fingerprint: []byte(`{"gpu":"A100"}`), Version: "test", Analysis: doc}
}

// doc is a real analysis document: the hand-made two-process export.
func doc(t *testing.T) []byte {
	t.Helper()
	db := testdb.FromSQL(t, filepath.Join("..", "trace", "nsys", "testdata", "two-process-2022.4.sql"))
	ps, err := nsys.ReadFile(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	var rs []*analysis.Result
	for _, p := range ps {
		rs = append(rs, analysis.Analyze(p, analysis.Options{}))
	}
	var buf bytes.Buffer
	report.NewAnalysis(rs).WriteJSON(&buf)
	return buf.Bytes()
}

func count(t *testing.T, path, table string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func integrity(t *testing.T, path string) {
	t.Helper()
	db, _ := sql.Open("sqlite", path)
	defer db.Close()
	var s string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&s); err != nil || s != "ok" {
		t.Fatalf("integrity_check = %q, %v", s, err)
	}
}

func TestRecordDerives(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "b.db")
	s, err := baseline.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Record(ctx, run(doc(t), "c1")); err != nil {
		t.Fatal(err)
	}
	pts, err := s.Series(ctx, "w", "main", "step_time_ns")
	s.Close()
	if err != nil || len(pts) != 1 || pts[0].N != 3 {
		t.Fatalf("series %+v, %v: want one run with 3 step samples (2 + 1 steps over two ranks)", pts, err)
	}
	// The two ranks' step times are 4500, 3000 and 3000 ns (analysis tests).
	if pts[0].Median != 3000 {
		t.Errorf("median step time %v, want 3000", pts[0].Median)
	}
	// Rank 0 ran gemm_kernel and an NCCL kernel, rank 1 gemm_kernel.
	if n := count(t, path, "kernels"); n != 3 {
		t.Errorf("%d kernel rows, want 3", n)
	}
}

func TestMigrations(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// From an empty file.
	empty := filepath.Join(dir, "empty.db")
	os.WriteFile(empty, nil, 0o644)
	s, err := baseline.Open(ctx, empty)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	// From version 1, with a run: the run keeps its data and gets its rows.
	v1 := filepath.Join(dir, "v1.db")
	db, _ := sql.Open("sqlite", v1)
	_, err = db.Exec(`CREATE TABLE runs (
		id INTEGER PRIMARY KEY, workload TEXT NOT NULL, branch TEXT NOT NULL, commit_sha TEXT NOT NULL DEFAULT '',
		created_at INTEGER NOT NULL, kind TEXT NOT NULL CHECK (kind IN ('baseline', 'candidate')), profiler TEXT NOT NULL,
		fingerprint_hash TEXT NOT NULL, fingerprint TEXT NOT NULL, gpugate_version TEXT NOT NULL, analysis TEXT NOT NULL);
		CREATE INDEX runs_lookup ON runs (workload, branch, kind, created_at);
		PRAGMA user_version = 1;`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO runs VALUES (7, 'w', 'main', 'c0', 1, 'baseline', 'nsys', 'abc', '{}', 'old', ?)`, string(doc(t))); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err = baseline.Open(ctx, v1)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := s.Series(ctx, "w", "main", "step_time_ns")
	s.Close()
	if err != nil || len(pts) != 1 || pts[0].RunID != 7 || pts[0].N != 3 {
		t.Errorf("after migration from version 1: %+v, %v", pts, err)
	}
	for _, p := range []string{empty, v1} {
		db, _ := sql.Open("sqlite", p)
		var v int
		db.QueryRow(`PRAGMA user_version`).Scan(&v)
		db.Close()
		if v != 2 {
			t.Errorf("%s: user_version %d, want 2", filepath.Base(p), v)
		}
		integrity(t, p)
	}
}

func dump(t *testing.T, path string) string {
	t.Helper()
	db, _ := sql.Open("sqlite", path)
	defer db.Close()
	var b strings.Builder
	for _, q := range []string{
		`SELECT id, workload, branch, commit_sha, created_at, kind, profiler, fingerprint_hash, fingerprint, gpugate_version, analysis FROM runs ORDER BY id`,
		`SELECT * FROM samples ORDER BY run_id, rank, metric, step`,
		`SELECT * FROM kernels ORDER BY run_id, rank, name`,
		`SELECT * FROM findings ORDER BY run_id, rank, id`,
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			rows.Scan(ptrs...)
			fmt.Fprintln(&b, vals...)
		}
		rows.Close()
	}
	return b.String()
}

func TestExportImportLossless(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	s, _ := baseline.Open(ctx, a)
	d := doc(t)
	for i := range 3 {
		s.Record(ctx, run(d, fmt.Sprint("c", i)))
	}
	e, err := s.Export(ctx)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := baseline.Open(ctx, b)
	n, err := s2.Import(ctx, e)
	if err != nil || n != 3 {
		t.Fatalf("import: %d, %v", n, err)
	}
	if n, _ := s2.Import(ctx, e); n != 0 {
		t.Errorf("second import added %d runs, want 0", n)
	}
	s2.Close()
	if da, db := dump(t, a), dump(t, b); da != db || da == "" {
		t.Errorf("stores differ after export and import:\n%s\n---\n%s", da, db)
	}
}

func child(t *testing.T, db, docPath string, n int) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GPUGATE_BASELINE_CHILD="+db+":"+strconv.Itoa(n), "GPUGATE_BASELINE_DOC="+docPath)
	cmd.Stderr = os.Stderr
	return cmd
}

// Eight processes record into one database at the same time: nothing lost.
func TestConcurrentProcesses(t *testing.T) {
	dir := t.TempDir()
	db, docPath := filepath.Join(dir, "b.db"), filepath.Join(dir, "doc.json")
	os.WriteFile(docPath, doc(t), 0o644)
	const procs, each = 8, 10
	var cmds []*exec.Cmd
	for range procs {
		c := child(t, db, docPath, each)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("recording process failed: %v", err)
		}
	}
	integrity(t, db)
	if n := count(t, db, "runs"); n != procs*each {
		t.Errorf("%d runs, want %d", n, procs*each)
	}
	// Every run has the same document: the same rows each.
	one := filepath.Join(dir, "one.db")
	s, _ := baseline.Open(context.Background(), one)
	d, _ := os.ReadFile(docPath)
	s.Record(context.Background(), run(d, "x"))
	s.Close()
	for _, table := range []string{"samples", "kernels", "findings"} {
		if n, per := count(t, db, table), count(t, one, table); n != procs*each*per {
			t.Errorf("%d %s rows, want %d", n, table, procs*each*per)
		}
	}
}

// A process killed in the middle of writing leaves a consistent database:
// every run it committed has all its rows, and nothing else is there.
func TestKilledWriter(t *testing.T) {
	dir := t.TempDir()
	db, docPath := filepath.Join(dir, "b.db"), filepath.Join(dir, "doc.json")
	os.WriteFile(docPath, doc(t), 0o644)
	c := child(t, db, docPath, -1)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	c.Process.Signal(syscall.SIGKILL)
	c.Wait()
	integrity(t, db)
	runs := count(t, db, "runs")
	if runs == 0 {
		t.Fatal("the writer committed nothing in 1.5 s")
	}
	sqlDB, _ := sql.Open("sqlite", db)
	defer sqlDB.Close()
	var orphans, partial int
	sqlDB.QueryRow(`SELECT count(*) FROM samples WHERE run_id NOT IN (SELECT id FROM runs)`).Scan(&orphans)
	sqlDB.QueryRow(`SELECT count(*) FROM runs WHERE id NOT IN (SELECT run_id FROM samples)`).Scan(&partial)
	if orphans != 0 || partial != 0 {
		t.Errorf("after kill: %d orphan samples, %d runs without samples (of %d)", orphans, partial, runs)
	}
}

func TestBadFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.db")
	content := []byte("this is not a database, but precious data\n")
	os.WriteFile(junk, content, 0o644)
	if _, err := baseline.Open(ctx, junk); err == nil || !strings.Contains(err.Error(), "not an SQLite database") {
		t.Errorf("Open(junk) error = %v", err)
	}
	if got, _ := os.ReadFile(junk); !bytes.Equal(got, content) {
		t.Error("a non-SQLite file was modified")
	}
	// A corrupt database: a valid header, garbage after it.
	corrupt := filepath.Join(dir, "corrupt.db")
	bad := append([]byte("SQLite format 3\x00"), bytes.Repeat([]byte{0xAB}, 4096)...)
	os.WriteFile(corrupt, bad, 0o644)
	if _, err := baseline.Open(ctx, corrupt); err == nil {
		t.Error("Open(corrupt) succeeded")
	}
	if got, _ := os.ReadFile(corrupt); !bytes.Equal(got, bad) {
		t.Error("a corrupt file was modified")
	}
	ro := filepath.Join(dir, "ro.db")
	s, _ := baseline.Open(ctx, ro)
	s.Close()
	os.Chmod(ro, 0o444)
	before, _ := os.ReadFile(ro)
	if _, err := baseline.Open(ctx, ro); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("Open(read-only) error = %v", err)
	}
	if after, _ := os.ReadFile(ro); !bytes.Equal(before, after) {
		t.Error("a read-only file was modified")
	}
}
