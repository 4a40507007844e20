package nsys

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/gpugate/gpugate/internal/testdb"
	"github.com/gpugate/gpugate/trace"
)

// TestMemoryUsage reads the CUDA memory usage table of a hand-made export
// in the real 2022.4 schema (testdata/memory-usage-2022.4.sql): frees are
// negative, events go to the process that made them, and they are
// relative (the table has no totals).
func TestMemoryUsage(t *testing.T) {
	db := testdb.FromSQL(t, filepath.Join("testdata", "two-process-2022.4.sql"))
	extra, err := os.ReadFile(filepath.Join("testdata", "memory-usage-2022.4.sql"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(string(extra)); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	ps, err := ReadFile(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int][]trace.MemEvent{
		100: {
			{Time: 1200, Bytes: 1 << 20, Device: 0, Flags: trace.MemCUDA},
			{Time: 1400, Bytes: 2 << 20, Device: 0, Flags: trace.MemCUDA},
			{Time: 3000, Bytes: -1 << 20, Device: 0, Flags: trace.MemCUDA},
			{Time: 6500, Bytes: 4 << 20, Device: 0, Flags: trace.MemCUDA},
			{Time: 7000, Bytes: -4 << 20, Device: 0, Flags: trace.MemCUDA},
			{Time: 8000, Bytes: 512, Device: 0, Flags: trace.MemCUDA},
		},
		200: {{Time: 1500, Bytes: 8 << 20, Device: 1, Flags: trace.MemCUDA}},
	}
	if len(ps) != 2 {
		t.Fatalf("%d profiles, want 2", len(ps))
	}
	for _, p := range ps {
		w := want[p.Process]
		if len(p.Memory) != len(w) {
			t.Fatalf("process %d: memory %+v, want %+v", p.Process, p.Memory, w)
		}
		for i := range w {
			if p.Memory[i] != w[i] {
				t.Errorf("process %d event %d = %+v, want %+v", p.Process, i, p.Memory[i], w[i])
			}
		}
	}
}

// TestMemoryUsageAbsent: an export without the table has no memory events.
func TestMemoryUsageAbsent(t *testing.T) {
	db := testdb.FromSQL(t, filepath.Join("testdata", "two-process-2022.4.sql"))
	ps, err := ReadFile(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Memory != nil {
			t.Errorf("process %d: memory %v without the table", p.Process, p.Memory)
		}
	}
}
