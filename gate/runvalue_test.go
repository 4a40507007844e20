package gate

import (
	"math"
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/trace"
)

// cpuRank is a rank without GPU activity whose steps take ms[i]
// milliseconds and make syncs[i] sync calls.
func cpuRank(rank int, ms []float64, syncs []int) *analysis.Result {
	p := trace.New("rank"+string(rune('0'+rank))+".json", "kineto")
	p.Rank, p.WorldSize = rank, 2
	steps := make([]analysis.Step, len(ms))
	var t int64
	for i, v := range ms {
		d := int64(v * 1e6)
		steps[i] = analysis.Step{Name: "ProfilerStep#" + string(rune('0'+i)), HostStart: t, HostEnd: t + d, Start: t, End: t + d, SyncCalls: syncs[i]}
		t += d
	}
	return analysis.FromSteps(p, false, steps, nil)
}

// RunValue combines ranks per step as the gate does (the slowest rank's
// step time, the sum of the ranks' sync calls), then takes the mean over
// steps; and it is the run mean the comparison's samples hold.
func TestRunValue(t *testing.T) {
	run := Run{
		cpuRank(0, []float64{10, 30, 20}, []int{4, 4, 6}),
		cpuRank(1, []float64{12, 20, 25}, []int{1, 2, 0}),
	}
	st, _ := analysis.MetricByName("step_time")
	sc, _ := analysis.MetricByName("sync_calls")
	// By hand: max per step 12, 30, 25 → mean 22.333 ms; syncs 5, 6, 6 → 5.667.
	if v, ok := RunValue(run, st); !ok || math.Abs(v-67.0/3) > 1e-9 {
		t.Errorf("RunValue(step_time) = %v, %v; want 22.333 (the slowest rank's step, then the mean)", v, ok)
	}
	if v, ok := RunValue(run, sc); !ok || math.Abs(v-17.0/3) > 1e-9 {
		t.Errorf("RunValue(sync_calls) = %v, %v; want 5.667 (summed over ranks, then the mean)", v, ok)
	}
	if _, ok := RunValue(run, mustMetric(t, "gpu_util")); ok {
		t.Errorf("RunValue(gpu_util) of a CPU run: ok, want absent")
	}
	other := Run{cpuRank(0, []float64{11, 21, 19}, []int{4, 4, 4}), cpuRank(1, []float64{9, 22, 18}, []int{0, 1, 0})}
	rep := Compare([]Run{run, other, run}, []Run{other}, Options{})
	for _, m := range rep.Metrics {
		mt := mustMetric(t, m.Name)
		for i, r := range []Run{run, other, run} {
			if v, _ := RunValue(r, mt); v != m.Baseline.RunMeans[i] {
				t.Errorf("%s run %d: RunValue %v, the comparison's run mean %v", m.Name, i, v, m.Baseline.RunMeans[i])
			}
		}
	}
}

func mustMetric(t *testing.T, name string) analysis.Metric {
	t.Helper()
	m, ok := analysis.MetricByName(name)
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	return m
}
