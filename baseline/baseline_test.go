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
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/internal/pgtest"
	"github.com/gpugate/gpugate/internal/testdb"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/trace"
	"github.com/gpugate/gpugate/trace/nsys"
)

// TestMain lets the test binary act as a separate process that records
// runs: GPUGATE_BASELINE_CHILD=DB:N records N runs (N < 0: forever).
func TestMain(m *testing.M) {
	if spec := os.Getenv("GPUGATE_BASELINE_CHILD"); spec != "" {
		i := strings.LastIndex(spec, ":")
		db, n := spec[:i], spec[i+1:]
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
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
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

// backend is one kind of store the tests run against.
type backend struct {
	name string
	// new returns the target of a new, empty store.
	new func(t *testing.T) string
	// raw opens a store's tables directly.
	raw func(t *testing.T, target string) *sql.DB
}

// backends are SQLite and PostgreSQL: every store test runs on both.
var backends = []backend{
	{"sqlite",
		func(t *testing.T) string { return filepath.Join(t.TempDir(), "b.db") },
		func(t *testing.T, target string) *sql.DB {
			db, err := sql.Open("sqlite", target)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		}},
	{"postgres",
		func(t *testing.T) string { return pgtest.DB(t) },
		func(t *testing.T, target string) *sql.DB { return pgtest.Super(t, pgtest.Name(target)) }},
}

func each(t *testing.T, f func(t *testing.T, be backend)) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) { f(t, be) })
	}
}

func countIn(t *testing.T, be backend, target, table string) int {
	t.Helper()
	var n int
	if err := be.raw(t, target).QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func count(t *testing.T, path, table string) int {
	t.Helper()
	return countIn(t, backends[0], path, table)
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
	each(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		target := be.new(t)
		s, err := baseline.Open(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Record(ctx, run(doc(t), "c1")); err != nil {
			t.Fatal(err)
		}
		pts, err := s.Series(ctx, "w", "main", "abc", "step_time_ns")
		s.Close()
		if err != nil || len(pts) != 1 || pts[0].N != 3 {
			t.Fatalf("series %+v, %v: want one run with 3 step samples (2 + 1 steps over two ranks)", pts, err)
		}
		// The two ranks' step times are 4500, 3000 and 3000 ns (analysis tests).
		if pts[0].Median != 3000 {
			t.Errorf("median step time %v, want 3000", pts[0].Median)
		}
		// Rank 0 ran gemm_kernel and an NCCL kernel, rank 1 gemm_kernel.
		if n := countIn(t, be, target, "kernels"); n != 3 {
			t.Errorf("%d kernel rows, want 3", n)
		}
	})
}

// Every per-step metric of the analysis is stored, copies included, and
// the values are the document's.
func TestRecordStoresEveryMetric(t *testing.T) {
	ctx := context.Background()
	d := doc(t)
	var a struct {
		Profiles []struct {
			Steps []map[string]any `json:"steps"`
		} `json:"profiles"`
	}
	if err := json.Unmarshal(d, &a); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "b.db")
	s, _ := baseline.Open(ctx, path)
	s.Record(ctx, run(d, "c1"))
	s.Close()
	for _, m := range analysis.Metrics {
		name, _ := baseline.SampleName(m.Name, m.Unit)
		want := 0
		for _, p := range a.Profiles {
			for _, st := range p.Steps {
				if name, _ := baseline.SampleName(m.Name, m.Unit); m.Unit == "MiB" {
					// Memory metrics are stored where the step's memory
					// object has them (absent, not 0).
					if mem, ok := st["memory"].(map[string]any); ok && mem[name] != nil {
						want++
					}
				} else if st["gpu_busy_ns"] != nil || !m.GPU {
					want++
				}
			}
		}
		var n int
		backends[0].raw(t, path).QueryRow(`SELECT count(*) FROM samples WHERE metric = ?`, name).Scan(&n)
		if n != want {
			t.Errorf("metric %s (stored as %s): %d samples, want %d", m.Name, name, n, want)
		}
	}
	// The first step's host-to-device copies, by hand from the document.
	h2d := a.Profiles[0].Steps[0]["memcpy"].(map[string]any)["h2d"].(map[string]any)
	var got float64
	backends[0].raw(t, path).QueryRow(`SELECT value FROM samples WHERE metric = 'memcpy_h2d_bytes' AND rank = 0 AND step = 0`).Scan(&got)
	if got != h2d["bytes"].(float64) {
		t.Errorf("memcpy_h2d_bytes of step 0 = %v, want %v", got, h2d["bytes"])
	}
}

// One run of this machine's fingerprint and five newer runs of another:
// the matching run is the baseline.
func TestBaselinesByFingerprint(t *testing.T) {
	each(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		s, err := baseline.Open(ctx, be.new(t))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		d := doc(t)
		old := run(d, "match")
		old.Created = time.Now().Add(-time.Hour)
		if _, err := s.Record(ctx, old); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			r := run(d, fmt.Sprint("other", i))
			r.FingerprintHash, r.Fingerprint = "def", []byte(`{"gpu":"V100"}`)
			s.Record(ctx, r)
		}
		got, err := s.Baselines(ctx, "w", "main", "abc", 5)
		if err != nil || len(got) != 1 || got[0].Commit != "match" {
			t.Fatalf("Baselines(abc, 5) = %d runs %v, want the one matching run", len(got), err)
		}
		n, _ := s.Newest(ctx, "w", "main")
		if n == nil || n.FingerprintHash != "def" {
			t.Errorf("Newest = %+v, want a def run", n)
		}
	})
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
	pts, err := s.Series(ctx, "w", "main", "abc", "step_time_ns")
	old, err2 := s.Baselines(ctx, "w", "main", "abc", 1)
	s.Close()
	if err != nil || len(pts) != 1 || pts[0].RunID != 7 || pts[0].N != 3 {
		t.Errorf("after migration from version 1: %+v, %v", pts, err)
	}
	// A run from before schema 5 has no run conditions: nil, not "".
	if err2 != nil || len(old) != 1 || old[0].Conditions != nil {
		t.Errorf("after migration: run %+v, %v; want it without conditions", old, err2)
	}
	for _, p := range []string{empty, v1} {
		db, _ := sql.Open("sqlite", p)
		var v int
		db.QueryRow(`PRAGMA user_version`).Scan(&v)
		db.Close()
		if v != 5 {
			t.Errorf("%s: user_version %d, want 5", filepath.Base(p), v)
		}
		integrity(t, p)
	}
}

func dump(t *testing.T, be backend, target string) string {
	t.Helper()
	db := be.raw(t, target)
	var b strings.Builder
	for _, q := range []string{
		`SELECT id, workload, branch, commit_sha, created_at, kind, profiler, fingerprint_hash, fingerprint, gpugate_version, analysis, conditions FROM runs ORDER BY id`,
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
			for i, v := range vals {
				if x, ok := v.(int32); ok { // PostgreSQL INTEGER
					vals[i] = int64(x)
				}
			}
			fmt.Fprintln(&b, vals...)
		}
		rows.Close()
	}
	return b.String()
}

func exportJSON(t *testing.T, target string) []byte {
	t.Helper()
	s, err := baseline.OpenExisting(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e, err := s.Export(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(e)
	return b
}

// Export from either backend, import into either: the stores hold the
// same rows, and the second export is byte for byte the first.
func TestExportImportLossless(t *testing.T) {
	for _, from := range backends {
		for _, to := range backends {
			t.Run(from.name+"-to-"+to.name, func(t *testing.T) {
				ctx := context.Background()
				a, b := from.new(t), to.new(t)
				s, err := baseline.Open(ctx, a)
				if err != nil {
					t.Fatal(err)
				}
				d := doc(t)
				for i := range 3 {
					r := run(d, fmt.Sprint("c", i))
					r.Created = time.Unix(1700000000-int64(i)*60, 0) // ids and times in opposite orders
					if i == 1 {
						// Run conditions (schema 5) travel too; the others have none.
						r.Conditions = []byte(`{"sampled": true, "gpus": [{"index": 0, "name": "NVIDIA H200\n::x", "reason_share": {"hw_slowdown": 0.4}}]}`)
					}
					s.Record(ctx, r)
				}
				e, err := s.Export(ctx)
				s.Close()
				if err != nil {
					t.Fatal(err)
				}
				s2, err := baseline.Open(ctx, b)
				if err != nil {
					t.Fatal(err)
				}
				n, err := s2.Import(ctx, e)
				if err != nil || n != 3 {
					t.Fatalf("import: %d, %v", n, err)
				}
				if n, _ := s2.Import(ctx, e); n != 0 {
					t.Errorf("second import added %d runs, want 0", n)
				}
				if da, db := dump(t, from, a), dump(t, to, b); da != db || da == "" {
					t.Errorf("stores differ after export and import:\n%.500s\n---\n%.500s", da, db)
				}
				// A run recorded after the import gets a fresh id.
				if id, err := s2.Record(ctx, run(d, "after")); err != nil || id != 4 {
					t.Errorf("record after import: id %d, %v; want 4", id, err)
				}
				s2.Close()
				ea := exportJSON(t, a)
				first, _ := json.Marshal(e)
				if !bytes.Equal(ea, first) {
					t.Errorf("export changed between two reads")
				}
			})
		}
	}
}

// PostgreSQL → SQLite → export: byte-identical to the PostgreSQL export.
func TestCrossBackendRoundTrip(t *testing.T) {
	ctx := context.Background()
	pg, lite := backends[1].new(t), backends[0].new(t)
	s, err := baseline.Open(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	d := doc(t)
	for i := range 4 {
		r := run(d, fmt.Sprint("c", i))
		r.Created = time.Unix(1700000000+int64((i*7)%4)*60, 0)
		if i == 2 {
			r.Kind, r.Branch = "candidate", "feature/x"
		}
		s.Record(ctx, r)
	}
	s.Close()
	e1 := exportJSON(t, pg)
	var e baseline.Export
	json.Unmarshal(e1, &e)
	s2, _ := baseline.Open(ctx, lite)
	if _, err := s2.Import(ctx, &e); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	e2 := exportJSON(t, lite)
	if !bytes.Equal(e1, e2) {
		t.Errorf("export PostgreSQL → import SQLite → export differs:\n%.300s\n%.300s", e1, e2)
	}
	if da, dl := dump(t, backends[1], pg), dump(t, backends[0], lite); da != dl {
		al, bl := strings.Split(da, "\n"), strings.Split(dl, "\n")
		for i := range min(len(al), len(bl)) {
			if al[i] != bl[i] {
				t.Errorf("rows differ between the PostgreSQL store and its SQLite copy, line %d:\n%.300s\n%.300s", i, al[i], bl[i])
				break
			}
		}
	}
}

func child(t *testing.T, db, docPath string, n int) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GPUGATE_BASELINE_CHILD="+db+":"+strconv.Itoa(n), "GPUGATE_BASELINE_DOC="+docPath)
	cmd.Stderr = os.Stderr
	return cmd
}

// Concurrent recording processes lose nothing: 8 into SQLite, 16 into
// PostgreSQL (each opening, and so migrating, a fresh store at once).
func TestConcurrentProcesses(t *testing.T) {
	each(t, func(t *testing.T, be backend) {
		dir := t.TempDir()
		db, docPath := be.new(t), filepath.Join(dir, "doc.json")
		os.WriteFile(docPath, doc(t), 0o644)
		procs, each := 8, 10
		if be.name == "postgres" {
			procs = 16
		}
		var cmds []*exec.Cmd
		start := time.Now()
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
		t.Logf("%d processes × %d runs into %s: %v", procs, each, be.name, time.Since(start).Round(time.Millisecond))
		if be.name == "sqlite" {
			integrity(t, db)
		}
		if n := countIn(t, be, db, "runs"); n != procs*each {
			t.Errorf("%d runs, want %d", n, procs*each)
		}
		var distinct int
		be.raw(t, db).QueryRow(`SELECT count(DISTINCT commit_sha) FROM runs`).Scan(&distinct)
		if distinct != procs*each {
			t.Errorf("%d distinct runs, want %d", distinct, procs*each)
		}
		// Every run has the same document: the same rows each.
		one := filepath.Join(dir, "one.db")
		s, _ := baseline.Open(context.Background(), one)
		d, _ := os.ReadFile(docPath)
		s.Record(context.Background(), run(d, "x"))
		s.Close()
		for _, table := range []string{"samples", "kernels", "findings"} {
			if n, per := countIn(t, be, db, table), count(t, one, table); n != procs*each*per {
				t.Errorf("%d %s rows, want %d", n, table, procs*each*per)
			}
		}
	})
}

// A process killed in the middle of writing leaves a consistent database:
// every run it committed has all its rows, and nothing else is there.
func TestKilledWriter(t *testing.T) {
	each(t, func(t *testing.T, be backend) {
		dir := t.TempDir()
		db, docPath := be.new(t), filepath.Join(dir, "doc.json")
		os.WriteFile(docPath, doc(t), 0o644)
		c := child(t, db, docPath, -1)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		c.Process.Signal(syscall.SIGKILL)
		c.Wait()
		if be.name == "sqlite" {
			integrity(t, db)
		}
		checkWhole(t, be, db)
	})
}

// checkWhole fails unless every stored run has all its rows and no row
// lacks its run.
func checkWhole(t *testing.T, be backend, db string) int {
	t.Helper()
	runs := countIn(t, be, db, "runs")
	if runs == 0 {
		t.Fatal("the writer committed nothing")
	}
	raw := be.raw(t, db)
	var orphans, partial int
	raw.QueryRow(`SELECT count(*) FROM samples WHERE run_id NOT IN (SELECT id FROM runs)`).Scan(&orphans)
	raw.QueryRow(`SELECT count(*) FROM runs WHERE id NOT IN (SELECT run_id FROM samples)`).Scan(&partial)
	if orphans != 0 || partial != 0 {
		t.Errorf("%d orphan samples, %d runs without samples (of %d)", orphans, partial, runs)
	}
	return runs
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

// Memory is stored in bytes under the step's memory object's names, and
// read back by SampleName; a step without memory stores none (absent).
func TestRecordStoresMemory(t *testing.T) {
	ctx := context.Background()
	p := trace.New("trace-0.json", trace.FormatKineto)
	steps := []analysis.Step{
		{Name: "ProfilerStep#1", End: 10, HostEnd: 10, Memory: analysis.StepMemory{Source: analysis.MemFromHookCUDA, Device: 0, Peak: 3 << 20, Reserved: 4 << 20, HasReserved: true, RSS: 5 << 20, HasRSS: true}},
		{Name: "ProfilerStep#2", Start: 10, End: 20, HostStart: 10, HostEnd: 20},
	}
	var buf bytes.Buffer
	report.NewAnalysis([]*analysis.Result{analysis.FromSteps(p, false, steps, nil)}).WriteJSON(&buf)
	path := filepath.Join(t.TempDir(), "b.db")
	s, _ := baseline.Open(ctx, path)
	if _, err := s.Record(ctx, run(buf.Bytes(), "c1")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for metric, want := range map[string]float64{"peak_memory": 3 << 20, "peak_reserved": 4 << 20, "rss": 5 << 20} {
		m, _ := analysis.MetricByName(metric)
		name, scale := baseline.SampleName(m.Name, m.Unit)
		var n int
		var v float64
		backends[0].raw(t, path).QueryRow(`SELECT count(*), max(value) FROM samples WHERE metric = ?`, name).Scan(&n, &v)
		if n != 1 || v != want || scale != 1<<20 {
			t.Errorf("%s stored as %s: %d samples, value %v (scale %v); want 1 sample of %v bytes (scale 2^20)", metric, name, n, v, scale, want)
		}
	}
	var n int
	backends[0].raw(t, path).QueryRow(`SELECT count(*) FROM samples WHERE metric = 'alloc_growth_bytes'`).Scan(&n)
	if n != 0 {
		t.Errorf("%d alloc_growth samples, want none (absent)", n)
	}
}
