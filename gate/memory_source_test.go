package gate

import (
	"strings"
	"testing"

	"github.com/gpugate/gpugate/analysis"
)

// TestPeakMemoryDifferentQuantities: peak_memory from the process's
// resident memory (hook-rss) and from an allocator's totals (the trace,
// torch.cuda's peaks) are different quantities: a CPU job's RSS is many
// times its allocator's level. A side of each is not compared, as a side
// without memory is not, rather than failing (or passing) on the
// difference between the two measures.
func TestPeakMemoryDifferentQuantities(t *testing.T) {
	const mib = int64(1) << 20
	side := func(source string, v int64) Run {
		r := memRun([]int64{v, v, v, v, v, v, v, v, v, v, v, v})
		for i := range r[0].Steps {
			m := &r[0].Steps[i].Memory
			m.Source = source
			if source == analysis.MemFromHookRSS {
				m.Device, m.RSS, m.HasRSS = -1, v, true
			}
		}
		return r
	}
	rep := Compare([]Run{side(analysis.MemFromTrace, 60*mib)}, []Run{side(analysis.MemFromHookRSS, 600*mib)}, Options{})
	for _, m := range rep.Metrics {
		if m.Name == "peak_memory" {
			t.Errorf("peak_memory compared across measures: %s (%.0f → %.0f MiB)", m.Verdict, m.Baseline.Median, m.Candidate.Median)
		}
	}
	if !strings.Contains(strings.Join(rep.Warnings, "\n"), "peak_memory") {
		t.Errorf("warnings %q: want one saying why peak_memory was not compared", rep.Warnings)
	}
	// The trace's CUDA totals and torch.cuda's own peaks measure the same
	// allocator: compared (with the warning that they were measured
	// differently).
	rep = Compare([]Run{side(analysis.MemFromTrace, 600*mib)}, []Run{side(analysis.MemFromHookCUDA, 900*mib)}, Options{})
	found := false
	for _, m := range rep.Metrics {
		found = found || m.Name == "peak_memory"
	}
	if !found {
		t.Errorf("trace vs hook-cuda: peak_memory not compared")
	}
}
