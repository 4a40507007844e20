package kineto

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/trace"
)

// TestMemoryEvents reads [memory] instant events in the forms real traces
// write them and in hostile ones: members in any order, the 2021 form
// without totals, values that are not integers, other instants.
func TestMemoryEvents(t *testing.T) {
	const doc = `{"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
  {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 10,
   "args": {"Ev Idx": 1, "Device Type": 1, "Device Id": 3, "Addr": 1, "Bytes": 512, "Total Allocated": 1024, "Total Reserved": 2048}},
  {"name": "[memory]", "args": {"Bytes": -256, "Total Allocated": 768, "Device Type": 0, "Device Id": -1}, "ts": 20.5, "ph": "i"},
  {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 30, "args": {"Device Type": 1, "Device Id": 0, "Bytes": 4}},
  {"ph": "I", "args": {"Device Type": 0, "Bytes": 8}, "name": "[memory]", "ts": 40},
  {"ph": "i", "name": "[memory]", "ts": 50, "args": {"Device Type": 8, "Device Id": 0, "Bytes": 4, "Total Allocated": 4}},
  {"ph": "i", "name": "[memory]", "ts": 60, "args": {"Device Type": 1, "Bytes": "lots", "Total Allocated": 1.5e9}},
  {"ph": "i", "name": "[memory]", "args": {"Device Type": 1, "Bytes": 4}},
  {"ph": "i", "name": "[memory]", "ts": 70, "args": [1, 2]},
  {"ph": "i", "name": "Iteration Start: PyTorch Profiler", "ts": 80, "args": {"Bytes": 1, "Total Allocated": 1}},
  {"ph": "i", "name": "[memory]", "ts": 90, "args": {"Device Type": 1, "Device Id": 99999999, "Bytes": {"x": [1]}, "Total Allocated": 5}},
  {"ph": "C", "name": "[memory]", "ts": 95, "args": {"Bytes": 1}}
]}`
	p, err := Parse(strings.NewReader(doc), "mem.json")
	if err != nil {
		t.Fatal(err)
	}
	tot := trace.MemTotals
	want := []trace.MemEvent{
		{Time: 10000, Allocated: 1024, Reserved: 2048, Bytes: 512, Device: 3, Flags: trace.MemCUDA | tot | trace.MemReserved},
		{Time: 20500, Allocated: 768, Bytes: -256, Device: -1, Flags: tot},
		{Time: 30000, Bytes: 4, Device: 0, Flags: trace.MemCUDA},
		{Time: 40000, Bytes: 8, Device: -1},
		{Time: 60000, Allocated: 1500000000, Device: 0, Flags: trace.MemCUDA | tot}, // a total written as a float; Bytes a string
		{Time: 90000, Allocated: 5, Device: 0, Flags: trace.MemCUDA | tot},          // an ordinal out of range reads as 0
	}
	if !slices.Equal(p.Memory, want) {
		t.Errorf("memory events:\n got %+v\nwant %+v", p.Memory, want)
	}
	var warned [2]bool
	for _, w := range p.Warnings {
		warned[0] = warned[0] || strings.Contains(w, "2 [memory] events dropped")
		warned[1] = warned[1] || strings.Contains(w, "1 [memory] events of a device type other than")
	}
	if !warned[0] || !warned[1] {
		t.Errorf("warnings %q, want the 2 dropped events (no ts; neither Bytes nor a total) and the other device type", p.Warnings)
	}
	if len(p.Ranges) != 1 {
		t.Errorf("%d ranges, want the one step: instants must not disturb the rest", len(p.Ranges))
	}
}

// TestMemoryParallel: the parallel reader of plain files keeps the same
// memory events, in the same order, as the sequential one (the real
// profile_memory fixture, decompressed: 53 MB).
func TestMemoryParallel(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 53 MB trace")
	}
	zr, err := os.Open(fixtures.Path(t, "kineto/hta-df-index-resolver-v100-2rank/df_index_resolver.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	gz, err := gzip.NewReader(zr)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mem.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, gz); err != nil {
		t.Fatal(err)
	}
	f.Close()
	par, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := os.Open(path)
	defer g.Close()
	seq, err := Parse(g, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(seq.Memory) != 28010 || !slices.Equal(par.Memory, seq.Memory) {
		t.Errorf("memory events: parallel %d, sequential %d (want 28010, equal)", len(par.Memory), len(seq.Memory))
	}
}

// BenchmarkReadFileMemory reads the real profile_memory trace (53 MB,
// 216 k events of which 28 k [memory] instants), decompressed once into
// $TMPDIR/gpugate-bench.
func BenchmarkReadFileMemory(b *testing.B) {
	dir := filepath.Join(os.TempDir(), "gpugate-bench")
	os.MkdirAll(dir, 0o755)
	path := filepath.Join(dir, "df_index_resolver.json")
	if _, err := os.Stat(path); err != nil {
		zr, err := os.Open(fixtures.Path(b, "kineto/hta-df-index-resolver-v100-2rank/df_index_resolver.json.gz"))
		if err != nil {
			b.Fatal(err)
		}
		gz, err := gzip.NewReader(zr)
		if err != nil {
			b.Fatal(err)
		}
		f, _ := os.Create(path + ".tmp")
		if _, err := io.Copy(f, gz); err != nil {
			b.Fatal(err)
		}
		f.Close()
		zr.Close()
		os.Rename(path+".tmp", path)
	}
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadFile(path); err != nil {
			b.Fatal(err)
		}
	}
}
