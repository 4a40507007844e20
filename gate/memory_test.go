package gate

import (
	"strings"
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/stats"
	"github.com/gpugate/gpugate/trace"
)

func memRun(peaks []int64) Run {
	p := trace.New("mem.json", trace.FormatKineto)
	steps := make([]analysis.Step, len(peaks))
	for i, v := range peaks {
		steps[i] = analysis.Step{Name: "ProfilerStep#1", Start: int64(i) * 100, End: int64(i+1) * 100, HostStart: int64(i) * 100, HostEnd: int64(i+1) * 100}
		if v >= 0 {
			steps[i].Memory = analysis.StepMemory{Source: analysis.MemFromTrace, Device: 0, Peak: v}
		}
	}
	return Run{analysis.FromSteps(p, false, steps, nil)}
}

// TestPeakMemoryGate: peak_memory gates by default and regresses only
// beyond 5% and 64 MiB; a side without memory leaves it out, with a
// warning, instead of making the verdict inconclusive.
func TestPeakMemoryGate(t *testing.T) {
	flat := func(v int64) []int64 {
		xs := make([]int64, 12)
		for i := range xs {
			xs[i] = v
		}
		return xs
	}
	const gib = int64(1) << 30
	verdict := func(base, cand []int64, opt Options) (stats.Verdict, *Report) {
		// Three baseline runs with the same peaks: an allocator's peak
		// repeats to the byte, so the runs' spread is 0 and the change is
		// exact.
		rep := Compare([]Run{memRun(base), memRun(base), memRun(base)}, []Run{memRun(cand)}, opt)
		for _, m := range rep.Metrics {
			if m.Name == "peak_memory" {
				if !m.Gate {
					t.Errorf("peak_memory does not gate by default")
				}
				return m.Verdict, rep
			}
		}
		return "", rep
	}
	// +10% and +102 MiB: beyond both.
	if v, _ := verdict(flat(gib), flat(gib+gib/10), Options{}); v != stats.Regression {
		t.Errorf("+10%% (+102 MiB): %s, want regression", v)
	}
	// +6% of 512 MiB is 31 MiB: under the 64 MiB floor.
	if v, _ := verdict(flat(gib/2), flat(gib/2+gib/2*6/100), Options{}); v == stats.Regression {
		t.Errorf("+6%% (+31 MiB): %s, want no regression under the floor", v)
	}
	// The same with the floor lowered to 16 MiB: a regression.
	if v, _ := verdict(flat(gib/2), flat(gib/2+gib/2*6/100), Options{MinAbs: map[string]float64{"peak_memory": 16}}); v != stats.Regression {
		t.Errorf("+6%% (+31 MiB), floor 16 MiB: %s, want regression", v)
	}
	// +80 MiB on 8 GiB is 1%: under the relative allowance.
	if v, _ := verdict(flat(8*gib), flat(8*gib+80<<20), Options{}); v == stats.Regression {
		t.Errorf("+1%% (+80 MiB): %s, want no regression under 5%%", v)
	}
	// No memory on the baseline side.
	v, rep := verdict(flat(-1), flat(gib), Options{})
	if v != "" || rep.Verdict != stats.Pass && rep.Verdict != stats.Inconclusive {
		t.Errorf("baseline without memory: peak_memory verdict %q, want left out", v)
	}
	found := false
	for _, w := range rep.Warnings {
		found = found || strings.Contains(w, "peak_memory: not measured in the baseline runs")
	}
	if !found {
		t.Errorf("warnings %q, want peak_memory not measured in the baseline", rep.Warnings)
	}
}

// TestMemoryCombine: the ranks of a run combine memory as the largest
// (each device runs out on its own), not the sum.
func TestMemoryCombine(t *testing.T) {
	m, _ := analysis.MetricByName("peak_memory")
	if got := Combine(m, []float64{1024, 2048, 512}); got != 2048 {
		t.Errorf("Combine(peak_memory, 1024, 2048, 512) = %v, want 2048", got)
	}
	run := Run{memRun([]int64{1 << 30, 1 << 30})[0], memRun([]int64{2 << 30, 3 << 30})[0]}
	got := samples([]Run{run}, m, new([]string))
	if len(got) != 1 || len(got[0]) != 2 || got[0][0] != 2048 || got[0][1] != 3072 {
		t.Errorf("samples of a 2-rank run = %v, want [[2048 3072]] MiB", got)
	}
}
