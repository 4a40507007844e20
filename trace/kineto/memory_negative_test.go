package kineto

import (
	"strings"
	"testing"
)

// TestMemoryNegativeTotals: an allocator's totals are never negative; an
// event that says so is dropped (and counted in the warning), rather than
// giving a step a negative peak memory that the gate compares.
func TestMemoryNegativeTotals(t *testing.T) {
	const doc = `{"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
  {"ph": "i", "name": "[memory]", "ts": 10, "args": {"Device Type": 1, "Device Id": 0, "Bytes": 512, "Total Allocated": -1024, "Total Reserved": 2048}},
  {"ph": "i", "name": "[memory]", "ts": 20, "args": {"Device Type": 1, "Device Id": 0, "Bytes": 512, "Total Allocated": 1024, "Total Reserved": -2048}},
  {"ph": "i", "name": "[memory]", "ts": 30, "args": {"Device Type": 1, "Device Id": 0, "Bytes": -512, "Total Allocated": 512, "Total Reserved": 2048}}
]}`
	p, err := Parse(strings.NewReader(doc), "mem.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Memory) != 1 || p.Memory[0].Allocated != 512 || p.Memory[0].Reserved != 2048 {
		t.Errorf("memory events %+v, want only the one at 30 µs", p.Memory)
	}
	warned := false
	for _, w := range p.Warnings {
		warned = warned || strings.Contains(w, "2 [memory] events dropped")
	}
	if !warned {
		t.Errorf("warnings %q, want the 2 dropped events", p.Warnings)
	}
}
