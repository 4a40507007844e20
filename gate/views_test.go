package gate

import (
	"math"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/runcond"
)

// TestJudgedValue: a stored run's step time is that of its timing runs,
// as a verdict takes it — each timing run's mean, the geometric mean of
// the quiet ones, every one when none is quiet — and every other metric
// (and step time without timing runs) the profiled run's.
func TestJudgedValue(t *testing.T) {
	st, _ := analysis.MetricByName("step_time")
	run := Run{rankRun("", 0, []int64{40, 44})} // profiled: 42 ms
	busy := func(other float64) *runcond.Conditions {
		return &runcond.Conditions{Host: &runcond.Host{CPUs: 2, OtherCPU: &other}}
	}
	quiet, hog := busy(0.1), busy(1.8)
	for _, c := range []struct {
		name   string
		timing []TimingRun
		want   float64
		n      int
		busy   bool
	}{
		{"no timing runs", nil, 42, 0, false},
		{"one", []TimingRun{{StepMs: []float64{10, 12}, Clock: "host", Ranks: 1}}, 11, 1, false},
		{"two: geometric mean", []TimingRun{{StepMs: []float64{10, 12}, Clock: "host", Ranks: 1}, {StepMs: []float64{20, 20}, Clock: "host", Ranks: 1}}, math.Sqrt(11 * 20), 2, false},
		{"a busy one left out", []TimingRun{{StepMs: []float64{10, 12}, Clock: "host", Ranks: 1, Conditions: quiet}, {StepMs: []float64{90}, Clock: "host", Ranks: 1, Conditions: hog}}, 11, 1, false},
		{"all busy: all, said so", []TimingRun{{StepMs: []float64{10, 12}, Clock: "host", Ranks: 1, Conditions: hog}, {StepMs: []float64{20}, Clock: "host", Ranks: 1, Conditions: hog}}, math.Sqrt(11 * 20), 2, true},
	} {
		j, ok := JudgedValue(run, c.timing, st, DefaultHostMargins)
		if !ok || math.Abs(j.Value-c.want) > 1e-9 || j.Timing != c.n || (j.TimingBusy != "") != c.busy {
			t.Errorf("%s: %+v (%v), want %v from %d timing run(s), busy %v", c.name, j, ok, c.want, c.n, c.busy)
		}
		if c.busy && !strings.Contains(j.TimingBusy, "other processes") {
			t.Errorf("%s: busy %q", c.name, j.TimingBusy)
		}
	}
	// A metric not judged on timing runs is the profiled run's.
	sc, _ := analysis.MetricByName("sync_calls")
	want, _ := RunValue(run, sc)
	if j, ok := JudgedValue(run, []TimingRun{{StepMs: []float64{10}, Clock: "host", Ranks: 1}}, sc, DefaultHostMargins); !ok || j.Value != want || j.Timing != 0 {
		t.Errorf("sync_calls: %+v, want the profiled run's %v", j, want)
	}
}
