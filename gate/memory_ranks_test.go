package gate

import (
	"strings"
	"testing"

	"github.com/gpugate/gpugate/stats"
)

// TestPeakMemoryRankMissing: the ranks of a run combine as the largest
// peak; a run in which one rank has no memory numbers (its samples not
// joined, its allocator events missing) has no known largest peak. Taking
// the maximum of the ranks that have one compared rank 0 alone with both
// ranks of the baseline: an improvement that is none, or a regression of
// rank 1 passed unseen.
func TestPeakMemoryRankMissing(t *testing.T) {
	const mib = int64(1) << 20
	flat := func(v int64) []int64 {
		xs := make([]int64, 12)
		for i := range xs {
			xs[i] = v
		}
		return xs
	}
	none := flat(-1)
	base := Run{memRun(flat(1000 * mib))[0], memRun(flat(3000 * mib))[0]}
	cand := Run{memRun(flat(1000 * mib))[0], memRun(none)[0]}
	rep := Compare([]Run{base}, []Run{cand}, Options{})
	for _, m := range rep.Metrics {
		if m.Name == "peak_memory" {
			t.Errorf("peak_memory compared (%s, %.0f → %.0f MiB) although rank 1 of the candidate has no memory numbers", m.Verdict, m.Baseline.Median, m.Candidate.Median)
		}
	}
	if !strings.Contains(strings.Join(rep.Warnings, "\n"), "peak_memory") {
		t.Errorf("warnings %q: want one saying peak_memory was not compared", rep.Warnings)
	}
	if rep.Verdict == stats.Improvement {
		t.Errorf("verdict %s", rep.Verdict)
	}
}
