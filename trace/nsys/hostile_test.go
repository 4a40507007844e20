package nsys

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/internal/testdb"
	"github.com/gpugate/gpugate/trace"
)

// ptsz returns a fresh copy of the hand-made export with per-thread-stream
// API variants, after running the SQL statements in edits on it.
func ptsz(t *testing.T, edits ...string) string {
	t.Helper()
	path := testdb.FromSQL(t, filepath.Join("testdata", "ptsz-2022.4.sql"))
	if len(edits) > 0 {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, e := range edits {
			if _, err := db.Exec(e); err != nil {
				t.Fatalf("%s: %v", e, err)
			}
		}
	}
	return path
}

func readOne(t *testing.T, path string) *trace.Profile {
	t.Helper()
	ps, err := ReadFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 {
		t.Fatalf("%d profiles, want 1", len(ps))
	}
	return ps[0]
}

// The numbers worked out by hand in testdata/ptsz-2022.4.sql.
func TestPerThreadStreamVariants(t *testing.T) {
	for _, lean := range []bool{false, true} {
		var opt Options
		if lean {
			opt.RangeNames = []*regexp.Regexp{analysis.DefaultStepPattern}
		}
		ps, err := ReadFileOptions(context.Background(), ptsz(t), opt)
		if err != nil {
			t.Fatal(err)
		}
		r := analysis.Analyze(ps[0], analysis.Options{})
		if len(r.Steps) != 2 {
			t.Fatalf("%d steps, want 2", len(r.Steps))
		}
		type want struct {
			start, end                 int64
			kernels, syncs             int
			syncTime, launchOver, busy int64
			launches                   int
			h2d, d2h                   analysis.Copies
		}
		wants := []want{
			{1000, 10000, 2, 2, 2500, 200, 3400, 2, analysis.Copies{Count: 1, Bytes: 1024, Time: 300, Pageable: 1}, analysis.Copies{Count: 1, Bytes: 4, Time: 100, Pageable: 1}},
			{10000, 20000, 1, 2, 2400, 200, 2200, 1, analysis.Copies{}, analysis.Copies{Count: 1, Bytes: 8, Time: 200}},
		}
		for i, w := range wants {
			s := r.Steps[i]
			got := want{s.Start, s.End, s.Kernels, s.SyncCalls, s.SyncTime, s.LaunchOverhead, s.GPUBusy, s.Launches, s.H2D, s.D2H}
			if got != w {
				t.Errorf("lean %v step %d:\n got %+v\nwant %+v", lean, i+1, got, w)
			}
		}
	}
}

// The SYNCHRONIZATION table's rows reach the profile, inside their calls.
func TestSyncWaits(t *testing.T) {
	p := readOne(t, ptsz(t))
	want := []trace.SyncWait{
		{Start: 1710, End: 3650, Corr: 3, Process: 300, Kind: trace.SyncStream},
		{Start: 10510, End: 12450, Corr: 8, Process: 300, Kind: trace.SyncStream},
	}
	if !slices.Equal(p.SyncWaits, want) {
		t.Errorf("sync waits %+v, want %+v", p.SyncWaits, want)
	}
}

func TestBaseAPIName(t *testing.T) {
	for in, want := range map[string]string{
		"cudaStreamSynchronize_ptsz_v7000":        "cudaStreamSynchronize",
		"cudaMemcpy_ptds_v7000":                   "cudaMemcpy",
		"cuMemcpyDtoH_v2_ptds":                    "cuMemcpyDtoH",
		"cudaStreamGetCaptureInfo_v2_ptsz_v11030": "cudaStreamGetCaptureInfo",
		"cudaLaunchKernel_v7000":                  "cudaLaunchKernel",
		"cuCtxSynchronize_v2":                     "cuCtxSynchronize",
		"ptsz":                                    "ptsz",
		"_v2":                                     "_v2",
	} {
		if got := trace.BaseAPIName(in); got != want {
			t.Errorf("BaseAPIName(%q) = %q, want %q", in, got, want)
		}
	}
	for name, sync := range map[string]bool{
		"cudaStreamSynchronize_ptsz": true, "cuStreamSynchronize_ptsz": true, "cudaMemcpy_ptds": true, "cuMemcpyDtoH_v2_ptds": true,
		"cuCtxSynchronize_v2": true, "cudaDeviceSynchronize": true, "cudaMemcpyAsync_ptsz": false, "cuMemcpyHtoDAsync_v2_ptsz": false,
		"cudaStreamWaitEvent_ptsz": false, "cudaEventQuery": false,
	} {
		if trace.SyncAPI(name) != sync {
			t.Errorf("SyncAPI(%q) = %v", name, !sync)
		}
	}
	for name, launch := range map[string]bool{
		"cudaLaunchKernel_ptsz": true, "cuLaunchKernel_ptsz": true, "cudaGraphLaunch_ptsz": true, "cuLaunchKernelEx": true,
		"cudaLaunchHostFunc_ptsz": false, "cudaLaunch": true, "cudaMemcpyAsync_ptsz": false,
	} {
		if trace.LaunchAPI(name) != launch {
			t.Errorf("LaunchAPI(%q) = %v", name, !launch)
		}
	}
}

// Copy and memory kinds come from the export's ENUM tables: swapping two
// ids there swaps the reading; an empty table falls back to the documented
// ids.
func TestEnumTables(t *testing.T) {
	kinds := func(p *trace.Profile) string {
		var out []string
		for _, op := range p.GPU {
			if op.Kind == trace.Memcpy {
				out = append(out, fmt.Sprintf("%v %v->%v", op.Copy, op.Src, op.Dst))
			}
		}
		return strings.Join(out, ", ")
	}
	const asDocumented = "d2h device->pageable, h2d pageable->device, d2h device->pinned"
	if got := kinds(readOne(t, ptsz(t))); got != asDocumented {
		t.Errorf("2022.4 enums: %s, want %s", got, asDocumented)
	}
	swapped := ptsz(t,
		`UPDATE ENUM_CUDA_MEMCPY_OPER SET name = CASE id WHEN 1 THEN 'CUDA_MEMCPY_KIND_DTOH' WHEN 2 THEN 'CUDA_MEMCPY_KIND_HTOD' ELSE name END`,
		`UPDATE ENUM_CUDA_MEM_KIND SET name = CASE id WHEN 0 THEN 'CUDA_MEMOPR_MEMORY_KIND_PINNED' WHEN 1 THEN 'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE' ELSE name END`)
	if got, want := kinds(readOne(t, swapped)), "h2d device->pinned, d2h pinned->device, h2d device->pageable"; got != want {
		t.Errorf("swapped enums: %s, want %s", got, want)
	}
	empty := ptsz(t, `DELETE FROM ENUM_CUDA_MEMCPY_OPER`, `DROP TABLE ENUM_CUDA_MEM_KIND`)
	if got := kinds(readOne(t, empty)); got != asDocumented {
		t.Errorf("no enum rows: %s, want the documented %s", got, asDocumented)
	}
}

// Exports that are not what nsys writes get a clear error or a warning
// with counts, never wrong numbers or silently no kernels.
func TestHostileExports(t *testing.T) {
	for _, c := range []struct {
		name  string
		edits []string
		err   string // "" for no error
		warn  string
	}{
		{"text in a time column", []string{`UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = '1400x' WHERE correlationId = 1`}, `column "start" holds a TEXT value`, ""},
		{"spaced number in a time column", []string{`UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET "end" = '1 300' WHERE correlationId = 1`}, `column "end" holds a TEXT value`, ""},
		{"real time", []string{`UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET start = 3500.5 WHERE correlationId = 2`}, `column "start" holds a REAL value`, ""},
		// SQLite stores 9.2e18 as the integer it equals: caught by the range check.
		{"near-int64 real time", []string{`UPDATE NVTX_EVENTS SET "end" = 9.2e18`}, "out of range", ""},
		{"huge real time", []string{`UPDATE NVTX_EVENTS SET "end" = 9.3e18`}, `holds a REAL value`, ""},
		{"near-int64 time", []string{`UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = 9223372036854775000 WHERE correlationId = 5`}, "out of range", ""},
		{"blob time", []string{`UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = x'00' WHERE correlationId = 6`}, "holds a BLOB value", ""},
		{"null times", []string{
			`CREATE TABLE k2 AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL`, `DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL`,
			`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL AS SELECT * FROM k2`, `UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = NULL WHERE correlationId = 7`,
			`INSERT INTO NVTX_EVENTS (start, "end", eventType, text, globalTid) VALUES (30000, NULL, 59, 'unended', 281479009875757)`,
		}, "", "2 rows with a NULL start or end"},
		{"reversed", []string{`UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start - 5 WHERE correlationId = 1`}, "", "1 rows end before they start"},
		{"view for the kernel table", []string{
			`CREATE TABLE k2 AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL`, `DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL`,
			`CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS SELECT * FROM k2`,
		}, "CUPTI_ACTIVITY_KIND_KERNEL is a view, not a table", ""},
		{"missing string", []string{`DELETE FROM StringIds WHERE value = 'k2_relu'`}, "", "1 names refer to StringIds ids that the export lacks"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := ptsz(t, c.edits...)
			ps, err := ReadFile(context.Background(), path)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), path) {
					t.Fatalf("error %v, want %q naming the file", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(ps[0].Warnings, "\n"), c.warn) {
				t.Errorf("warnings %q, want %q", ps[0].Warnings, c.warn)
			}
		})
	}
}

// A write-ahead log beside the export holds data the file lacks: the
// reader refuses it rather than read stale data, and changes nothing.
func TestWALBesideTheExport(t *testing.T) {
	path := ptsz(t)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{`PRAGMA journal_mode=WAL`, `PRAGMA wal_autocheckpoint=0`, `UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + 1`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	// The connection stays open: the -wal file holds the update.
	wal, err := os.Stat(path + "-wal")
	if err != nil || wal.Size() == 0 {
		t.Fatalf("no -wal: %v", err)
	}
	before := snapshot(t, filepath.Dir(path))
	_, err = ReadFile(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), "-wal lies beside the export") {
		t.Errorf("error %v, want a refusal naming the -wal", err)
	}
	if after := snapshot(t, filepath.Dir(path)); after != before {
		t.Errorf("reading changed the folder:\n%s\n%s", before, after)
	}
}

func snapshot(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range es {
		info, _ := e.Info()
		fmt.Fprintf(&b, "%s %d %v\n", e.Name(), info.Size(), info.ModTime().UnixNano())
	}
	return b.String()
}

// File names are names, not SQLite URIs: '?' and '#' are part of the name,
// the reader opens exactly that file and creates nothing.
func TestPathsAreFilesNotURIs(t *testing.T) {
	src := ptsz(t)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"r?1.sqlite", "rank#1.sqlite", "a%20b.sqlite", "mode=rw&x.sqlite", "file:x.sqlite"} {
		dir := t.TempDir()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o444); err != nil {
			t.Fatal(err)
		}
		// A decoy where a URI parser would look: r, rank, "a b.sqlite".
		decoy := filepath.Join(dir, strings.NewReplacer("?1.sqlite", "", "#1.sqlite", "", "%20", " ").Replace(name))
		before := snapshot(t, dir)
		p := readOne(t, path)
		if len(p.GPU) != 6 {
			t.Errorf("%s: %d GPU ops, want 6", name, len(p.GPU))
		}
		if after := snapshot(t, dir); after != before {
			t.Errorf("%s: reading changed the folder:\n%s\n%s", name, before, after)
		}
		if decoy != path {
			if _, err := os.Stat(decoy); err == nil {
				t.Errorf("%s: %s was created", name, decoy)
			}
		}
	}
	// Relative paths too.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "r?1.sqlite"), data, 0o444); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if p := readOne(t, "r?1.sqlite"); len(p.GPU) != 6 {
		t.Errorf("relative r?1.sqlite: %d GPU ops", len(p.GPU))
	}
	if _, err := os.Stat(filepath.Join(dir, "r")); err == nil {
		t.Errorf("relative r?1.sqlite created r")
	}
}

// Names are read only for the StringIds the records use: an export with a
// great many unused strings costs nothing for them.
func TestUnusedStringIds(t *testing.T) {
	path := ptsz(t, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000)
		INSERT INTO StringIds SELECT 1000 + x, 'unused string number ' || x FROM c`)
	p := readOne(t, path)
	if n := p.Names.Len(); n > 32 {
		t.Errorf("%d names interned, want only the used ones (under 32)", n)
	}
	if got := p.Names.String(p.GPU[0].Name); got != "k1_gemm" {
		t.Errorf("first kernel %q", got)
	}
}

// Damaged pages give an error or a reading, never a panic or a hang: the
// direct page reader checks every offset. Bytes past the first page are
// overwritten at random (a fixed seed) and the export read each time.
func TestDamagedPages(t *testing.T) {
	src, err := os.ReadFile(ptsz(t))
	if err != nil {
		t.Fatal(err)
	}
	const pageSize = 4096
	if len(src) < 2*pageSize {
		t.Fatalf("export of %d bytes", len(src))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	for i := range 300 {
		b := slices.Clone(src)
		for range 1 + rng.IntN(8) {
			b[pageSize+rng.IntN(len(b)-pageSize)] = byte(rng.IntN(256))
		}
		path := filepath.Join(dir, fmt.Sprintf("damaged%d.sqlite", i))
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		ReadFile(ctx, path) // must return
		cancel()
	}
}
