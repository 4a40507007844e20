package analysis

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/trace"
	"github.com/gpugate/gpugate/trace/nsys"

	_ "modernc.org/sqlite"
)

// Unified-memory page migrations, and any other GPU op without a launching
// API call, are no evidence of the loop: step inference takes the period of
// the launched ops only, and puts the others in the steps those define, by
// their start (docs/steps.md). These tests build nsys exports in the
// 2022.4.2.1 schema (the CREATE TABLE statements and ENUM rows of the
// hand-made ../trace/nsys/testdata/ptsz-2022.4.sql, copied from a real
// export, and CUPTI_ACTIVITY_KIND_MEMSET from
// ../shared/research/ddl-2022.4.sql) and read them with the nsys reader, as
// `gpugate analyze` does. nsys writes page migrations as
// CUPTI_ACTIVITY_KIND_MEMCPY rows of copyKind 11–13 (CUDA_MEMCPY_KIND_UVM_*,
// enums-2022.4.tsv) with a migrationCause; no runtime or driver call has
// their correlationId (0, NULL, or one no call uses: all three are
// generated).

// nsysExport builds an nsys SQLite export of one process (pid 300, thread
// 301) in the 2022.4 schema.
type nsysExport struct {
	strings             []string
	runtime, gpu, extra []string
	corr                int64
	t, dev              int64 // host clock (end of the last call), device clock
}

const (
	uvmPid = int64(1)<<48 | 300<<24
	uvmTid = uvmPid + 301
)

func (x *nsysExport) str(s string) int {
	for i, v := range x.strings {
		if v == s {
			return i + 1
		}
	}
	x.strings = append(x.strings, s)
	return len(x.strings)
}

// call records an API call of d ns after a host gap and returns its
// correlation id and start.
func (x *nsysExport) call(name string, gap, d int64) (int64, int64) {
	x.corr++
	start := x.t + gap
	x.runtime = append(x.runtime, fmt.Sprintf("(%d, %d, 0, %d, %d, %d, 0, NULL)", start, start+d, uvmTid, x.corr, x.str(name)))
	x.t = start + d
	return x.corr, start
}

// kernel launches a kernel of dur ns; the device runs ops in order.
func (x *nsysExport) kernel(name string, gap, dur int64) {
	c, start := x.call("cudaLaunchKernel_v7000", gap, 2000)
	s := max(start+1000, x.dev)
	x.gpu = append(x.gpu, fmt.Sprintf("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (%d, %d, 0, 1, 7, %d, %d, %d, %d, NULL, 1, 0, 32, 1, 1, 1, 128, 1, 1, 0, 0, 0, 0, %d, 0, NULL, NULL)",
		s, s+dur, c, uvmPid, x.str(name), x.str(name), c))
	x.dev = s + dur
}

// memset launches a cudaMemsetAsync of dur ns.
func (x *nsysExport) memset(gap, dur int64) {
	c, start := x.call("cudaMemsetAsync_v3020", gap, 1500)
	s := max(start+1000, x.dev)
	x.gpu = append(x.gpu, fmt.Sprintf("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (%d, %d, 0, 1, 7, %d, %d, 0, 4096, NULL, 2)", s, s+dur, c, uvmPid))
	x.dev = s + dur
}

// migration is a page migration host to device at [s, s+dur) on its own
// stream, with correlation id corr ("NULL" for none).
func (x *nsysExport) migration(s, dur int64, corr string) {
	x.gpu = append(x.gpu, fmt.Sprintf("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (%d, %d, 0, 1, 9, %s, %d, 65536, 11, NULL, 4, 4, 0, 1, 0, 1, 1, NULL, %d)", s, s+dur, corr, uvmPid, 0x7f0000000000+s))
}

// write writes the export into a file and returns its path.
func (x *nsysExport) write(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "trace", "nsys", "testdata", "ptsz-2022.4.sql"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("BEGIN;\n") // one transaction: a commit per row took seconds
	// The schema and the enum rows of the hand-made export; none of its
	// events.
	for _, st := range strings.Split(string(src), ";\n") {
		st = strings.TrimSpace(st)
		for strings.HasPrefix(st, "--") {
			_, st, _ = strings.Cut(st, "\n")
			st = strings.TrimSpace(st)
		}
		if strings.HasPrefix(st, "CREATE TABLE") || strings.HasPrefix(st, "INSERT INTO ENUM_") || strings.HasPrefix(st, "INSERT INTO EXPORT_META_DATA") {
			b.WriteString(st + ";\n")
		}
	}
	b.WriteString(`CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER);` + "\n")
	for i, s := range x.strings {
		fmt.Fprintf(&b, "INSERT INTO StringIds VALUES (%d, '%s');\n", i+1, s)
	}
	if len(x.runtime) > 0 {
		b.WriteString("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES " + strings.Join(x.runtime, ",\n") + ";\n")
	}
	for _, g := range append(x.gpu, x.extra...) {
		b.WriteString(g + ";\n")
	}
	b.WriteString("COMMIT;\n")
	path := filepath.Join(t.TempDir(), "uvm.sqlite")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(b.String()); err != nil {
		t.Fatalf("build export: %v", err)
	}
	return path
}

func readExport(t *testing.T, path string) *trace.Profile {
	t.Helper()
	ps, err := nsys.ReadFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 {
		t.Fatalf("%d profiles, want 1", len(ps))
	}
	return ps[0]
}

var corrNone = []string{"0", "NULL", "999999"}

// TestUVMOneShot is the one-shot program: cudaMallocManaged, a
// prefetch, one kernel, a sync, and 2,370 page migrations without a
// launch. Before, the migrations were ordered by their own start and
// repeated "every 1 ops": 2,371 steps at confidence 0.90. Now fewer than two
// periods of launched ops means one whole-profile window at confidence 0
// holding every op.
func TestUVMOneShot(t *testing.T) {
	var x nsysExport
	x.t = 1_000_000
	x.call("cudaMallocManaged_v6000", 0, 50_000)
	x.call("cudaMemPrefetchAsync_v8000", 1000, 20_000)
	x.kernel("vectorAdd", 1000, 30_000_000)
	// Pages fault in while the kernel runs: 2,370 migrations of 64 KiB.
	s := x.dev - 30_000_000
	for i := range 2370 {
		x.migration(s, 9000, corrNone[i%3])
		s += 12_000
	}
	_, sy := x.call("cudaDeviceSynchronize_v3020", 1000, 0)
	x.runtime[len(x.runtime)-1] = fmt.Sprintf("(%d, %d, 0, %d, %d, %d, 0, NULL)", sy, x.dev+500, uvmTid, x.corr, x.str("cudaDeviceSynchronize_v3020"))
	p := readExport(t, x.write(t))
	if got := opTotals(p); got != (OpCounts{Kernels: 1, Memcpy: 2370}) {
		t.Fatalf("the reader kept %+v GPU ops, want 1 kernel and 2370 copies", got)
	}
	r := checkInvariants(t, "one-shot UVM", p, Options{})
	if !r.WholeProfile || r.StepMethod != StepsWhole || r.StepConfidence != 0 || len(r.Steps) != 1 {
		t.Fatalf("%s, %d steps, confidence %v; want one whole-profile window at confidence 0", r.StepMethod, len(r.Steps), r.StepConfidence)
	}
	if got := r.Steps[0].Ops(); got != (OpCounts{Kernels: 1, Memcpy: 2370}) {
		t.Errorf("the window holds %+v, want every op: 1 kernel, 2370 copies", got)
	}
	// The migrations run under the kernel: nothing is memcpy-bound (before,
	// each one-copy step was all exposed copy).
	for _, f := range r.Findings() {
		if f.ID == "memcpy-bound" {
			t.Errorf("finding %+v: the copies run under the kernel", f)
		}
	}
}

// TestUVMLaunchedPeriod is the CLUE capture's shape: launched ops repeat
// with period 13 (5 kernels and 8 memsets), and page migrations without a
// launch come in bursts of varying size between and during them. Before,
// the migrations took part in the period: steps of other lengths, some
// without a kernel. The period now comes from the launched ops; every kept
// step holds their 5 kernels and 8 memsets, and the migrations join the
// step they start in or are counted outside the steps.
func TestUVMLaunchedPeriod(t *testing.T) {
	rnd := rand.New(rand.NewPCG(36, 13))
	for trial := range 20 {
		var x nsysExport
		x.t = 1_000_000
		migrations := 0
		for it := range 25 {
			// A burst of migrations before the iteration's first launch,
			// shrinking as pages settle, and a few during it.
			burst := rnd.IntN(40) / (1 + it/5)
			s := x.t + 500
			for range burst {
				x.migration(s, 700, corrNone[rnd.IntN(3)])
				s += 800
				migrations++
			}
			x.t = max(x.t, s)
			for k := range 5 {
				x.memset(int64(500+rnd.IntN(500)), 2000)
				if k < 3 {
					x.memset(int64(500+rnd.IntN(500)), 2000)
				}
				x.kernel(fmt.Sprintf("clue_kernel_%d", k), int64(500+rnd.IntN(1000)), int64(20_000+rnd.IntN(5000)))
				if rnd.IntN(3) == 0 {
					x.migration(x.dev-10_000, 700, corrNone[rnd.IntN(3)])
					migrations++
				}
			}
			_, sy := x.call("cudaStreamSynchronize_v3020", 300, 0)
			x.runtime[len(x.runtime)-1] = fmt.Sprintf("(%d, %d, 0, %d, %d, %d, 0, NULL)", sy, x.dev+500, uvmTid, x.corr, x.str("cudaStreamSynchronize_v3020"))
			x.t = x.dev + 500 + int64(50_000+rnd.IntN(5000)) // host work between iterations
		}
		p := readExport(t, x.write(t))
		if got := opTotals(p); got != (OpCounts{Kernels: 125, Memcpy: migrations, Memset: 200}) {
			t.Fatalf("the reader kept %+v GPU ops, want 125 kernels, %d copies, 200 memsets", got, migrations)
		}
		name := fmt.Sprintf("CLUE-like trial %d (%d migrations)", trial, migrations)
		r := checkInvariants(t, name, p, Options{})
		if r.StepMethod != StepsKernelPeriod {
			t.Fatalf("%s: %s, want kernel-period", name, r.StepMethod)
		}
		if !strings.Contains(strings.Join(r.Warnings, "\n"), "repeats every 13 ops") {
			t.Errorf("%s: the period is not the launched ops' 13: %q", name, r.Warnings)
		}
		for _, s := range r.Steps {
			if s.Kernels != 5 || s.Memsets != 8 {
				t.Errorf("%s: %s holds %d kernels and %d memsets, want 5 and 8 (every launched period has them)", name, s.Name, s.Kernels, s.Memsets)
			}
		}
		for _, l := range r.LeftOut {
			if l.Kernels == 0 {
				t.Errorf("%s: left-out %s holds no kernel", name, l.Name)
			}
		}
		if r.StepConfidence < 0.8 {
			t.Errorf("%s: confidence %.2f for an exact period", name, r.StepConfidence)
		}
	}
}
