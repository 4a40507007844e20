package nsys

import (
	"context"
	"database/sql"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/internal/testdb"
	"github.com/gpugate/gpugate/trace"
)

type agg struct{ count, total int64 }

// readStats reads an `nsys stats --format csv` report into name -> (count,
// total ns), from the given column names.
func readStats(t *testing.T, path, countCol, nameCol string) map[string]agg {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	out := map[string]agg{}
	for _, r := range rows[1:] {
		c, _ := strconv.ParseInt(r[col[countCol]], 10, 64)
		tot, _ := strconv.ParseInt(r[col["Total Time (ns)"]], 10, 64)
		name := r[col[nameCol]]
		a := out[name]
		a.count += c
		a.total += tot
		out[name] = a
	}
	return out
}

// The H100 pair against `nsys stats` CSVs that Nsight Systems 2022.4 made
// from the same files (../shared/fixtures/nsys-stats-csv): an independent
// reading of the same rows.
func TestAgainstNsysStats(t *testing.T) {
	for _, side := range []string{"before", "after"} {
		t.Run(side, func(t *testing.T) {
			db := fixtures.Path(t, "nsys-sqlite/nsysai-mfu-2gpu-h100/mfu_2gpu_"+side+".sqlite")
			csvs := filepath.Join(fixtures.Dir(t), "nsys-stats-csv", "nsysai-mfu-2gpu-h100", "mfu_2gpu_"+side+"_")
			ps, err := ReadFile(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) != 2 {
				t.Fatalf("%d profiles, want 2 (one process per GPU)", len(ps))
			}
			kern, api, mem := map[string]agg{}, map[string]agg{}, map[string]agg{}
			for _, p := range ps {
				for _, op := range p.GPU {
					var key string
					switch op.Kind {
					case trace.Kernel:
						key = p.Names.String(op.Name)
						a := kern[key]
						a.count++
						a.total += op.End - op.Start
						kern[key] = a
						continue
					case trace.Memset:
						key = "[CUDA memset]"
					case trace.Memcpy:
						key = map[trace.CopyKind]string{trace.HtoD: "[CUDA memcpy HtoD]", trace.DtoH: "[CUDA memcpy DtoH]", trace.DtoD: "[CUDA memcpy DtoD]"}[op.Copy]
					}
					a := mem[key]
					a.count++
					a.total += op.End - op.Start
					mem[key] = a
				}
				for _, c := range p.API {
					key := p.Names.String(c.Name)
					a := api[key]
					a.count++
					a.total += c.End - c.Start
					api[key] = a
				}
			}
			wantKern := readStats(t, csvs+"gpukernsum.csv", "Instances", "Name")
			compare(t, "gpukernsum", kern, wantKern)
			// nsys 2022.4 strips only 4-digit version suffixes; gpugate strips all.
			wantAPI := map[string]agg{}
			for k, v := range readStats(t, csvs+"cudaapisum.csv", "Num Calls", "Name") {
				k = trace.StripAPIVersion(k)
				a := wantAPI[k]
				a.count += v.count
				a.total += v.total
				wantAPI[k] = a
			}
			// cudaapisum leaves out calls that are not CUDA runtime/driver
			// calls of interest only if absent; compare what it lists.
			for k := range api {
				if _, ok := wantAPI[k]; !ok {
					t.Errorf("API %s read but not in cudaapisum", k)
				}
			}
			compare(t, "cudaapisum", api, wantAPI)
			compare(t, "gpumemtimesum", mem, readStats(t, csvs+"gpumemtimesum.csv", "Count", "Operation"))
		})
	}
}

func compare(t *testing.T, what string, got, want map[string]agg) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d names, want %d", what, len(got), len(want))
	}
	for k, w := range want {
		if g := got[k]; g != w {
			t.Errorf("%s %s: count %d total %d ns, want %d and %d", what, trunc(k), g.count, g.total, w.count, w.total)
		}
	}
}

func trunc(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// The oldest schema (2.9.1, nsys 2022.1, EXPORT_META_DATA, extra foreign
// tables), against the counts in PROVENANCE.md.
func TestSchema2022_1(t *testing.T) {
	ps, err := ReadFile(context.Background(), fixtures.Path(t, "nsys-sqlite/extrap-concurrent-gtx1060-toy/profile1.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 {
		t.Fatalf("%d profiles, want 1", len(ps))
	}
	p := ps[0]
	n := map[trace.Kind]int{}
	for _, op := range p.GPU {
		n[op.Kind]++
	}
	if n[trace.Kernel] != 12 || n[trace.Memcpy] != 30 || n[trace.Memset] != 17 || len(p.API) != 184 || len(p.Ranges) != 76 {
		t.Errorf("kernels %d memcpy %d memset %d runtime %d nvtx ranges %d; want 12 30 17 184 76",
			n[trace.Kernel], n[trace.Memcpy], n[trace.Memset], len(p.API), len(p.Ranges))
	}
	if !strings.HasPrefix(p.Variant, "nsys 2022.1.1.61 (schema 2.9.1)") {
		t.Errorf("variant %q", p.Variant)
	}
	if len(p.Devices) != 1 || p.Devices[0].Name != "GeForce GTX 1060 with Max-Q Design" {
		t.Errorf("devices %+v", p.Devices)
	}
}

func TestNotAnExport(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.sql")
	os.WriteFile(plain, []byte("CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1);"), 0o644)
	db := testdb.FromSQL(t, plain)
	_, err := ReadFile(context.Background(), db)
	if err == nil || !strings.Contains(err.Error(), "not an Nsight Systems export") || !strings.HasPrefix(err.Error(), db) {
		t.Errorf("ReadFile(plain SQLite) error = %v", err)
	}
	junk := filepath.Join(dir, "junk.sqlite")
	os.WriteFile(junk, []byte("SQLite format 3\x00 but then garbage, not a database page at all ..........."), 0o644)
	if _, err := ReadFile(context.Background(), junk); err == nil || !strings.HasPrefix(err.Error(), junk) {
		t.Errorf("ReadFile(corrupt) error = %v", err)
	}
}

// TestDevicesWithoutActivity: a capture without GPU activity still lists
// the GPUs its export names (TARGET_INFO_GPU), as Kineto's
// deviceProperties do; before, "devices" was empty. Only an export without
// that table (a machine without a GPU) lists none.
func TestDevicesWithoutActivity(t *testing.T) {
	strip := func(t *testing.T, db string, extra ...string) {
		t.Helper()
		conn, err := sql.Open("sqlite", db)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, q := range append([]string{`DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL`, `DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY`}, extra...) {
			if _, err := conn.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	names := func(ds []trace.Device) string {
		var s []string
		for _, d := range ds {
			s = append(s, fmt.Sprintf("%d:%s", d.ID, d.Name))
		}
		return strings.Join(s, ", ")
	}
	read := func(t *testing.T, db string) *trace.Profile {
		t.Helper()
		ps, err := ReadFile(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) != 1 || len(ps[0].GPU) != 0 {
			t.Fatalf("%d profiles, want 1 without GPU activity", len(ps))
		}
		return ps[0]
	}
	t.Run("hand-made", func(t *testing.T) {
		db := testdb.FromSQL(t, filepath.Join("testdata", "two-process-2022.4.sql"))
		strip(t, db)
		if got, want := names(read(t, db).Devices), "0:NVIDIA A100-SXM4-80GB, 1:NVIDIA A100-SXM4-80GB"; got != want {
			t.Errorf("devices %s, want %s", got, want)
		}
	})
	t.Run("process's own devices", func(t *testing.T) {
		db := testdb.FromSQL(t, filepath.Join("testdata", "two-process-2022.4.sql"))
		// The 2026 table that maps a process's CUDA ordinals to GPUs: the
		// trainer (pid 100, the one with most ranges) sees GPU 1 as cuda:0.
		strip(t, db, `CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER, pid INTEGER, uuid TEXT, numMultiprocessors INTEGER)`,
			`INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (1, 0, 100, '', 108), (0, 0, 200, '', 108)`)
		p := read(t, db)
		if got, want := names(p.Devices), "0:NVIDIA A100-SXM4-80GB"; p.Process != 100 || got != want {
			t.Errorf("pid %d devices %s, want pid 100 with %s", p.Process, got, want)
		}
	})
	t.Run("real export", func(t *testing.T) {
		src, err := os.ReadFile(fixtures.Path(t, "nsys-sqlite/extrap-concurrent-gtx1060-toy/profile1.sqlite"))
		if err != nil {
			t.Fatal(err)
		}
		db := filepath.Join(t.TempDir(), "profile1.sqlite")
		if err := os.WriteFile(db, src, 0o644); err != nil {
			t.Fatal(err)
		}
		strip(t, db, `DELETE FROM CUPTI_ACTIVITY_KIND_MEMSET`)
		if got, want := names(read(t, db).Devices), "0:GeForce GTX 1060 with Max-Q Design"; got != want {
			t.Errorf("devices %s, want %s", got, want)
		}
	})
	t.Run("no GPU on the machine", func(t *testing.T) {
		db := testdb.FromSQL(t, filepath.Join("testdata", "two-process-2022.4.sql"))
		strip(t, db, `DROP TABLE TARGET_INFO_GPU`)
		if d := read(t, db).Devices; len(d) != 0 {
			t.Errorf("devices %+v from an export that names none", d)
		}
	})
}
