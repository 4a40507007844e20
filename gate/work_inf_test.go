package gate

import (
	"encoding/json"
	"testing"
)

// TestCompareWorkNotFinite: FLOPs per step that are finite per rank
// (1e308) but whose sum over ranks is beyond float64 must not reach the
// report as +Inf: encoding/json refuses it, so compare -format json and
// the stored report would fail.
func TestCompareWorkNotFinite(t *testing.T) {
	huge := Run{workRun(10, 100, 1e308)[0], workRun(10, 100, 1e308)[0]}
	rep := Compare([]Run{huge}, []Run{workRun(10, 100, 3e11)}, Options{})
	if _, err := json.Marshal(rep); err != nil {
		t.Fatalf("json.Marshal(report): %v", err)
	}
	// A baseline of almost no FLOPs: the change in % is beyond float64.
	rep = Compare([]Run{workRun(10, 100, 1e-300)}, []Run{workRun(10, 100, 1e300)}, Options{})
	if _, err := json.Marshal(rep); err != nil {
		t.Fatalf("json.Marshal(report): %v", err)
	}
}

// TestCompareWorkPerSampleNotFinite: samples_per_step may be any positive
// number (1e-300 included): FLOPs per sample beyond float64 are absent.
func TestCompareWorkPerSampleNotFinite(t *testing.T) {
	b, c := workRun(10, 100, 1e300), workRun(10, 100, 1e300)
	b[0].Work.SamplesPerStep, c[0].Work.SamplesPerStep = 1e-300, 1e-300
	rep := Compare([]Run{b}, []Run{c}, Options{})
	if _, err := json.Marshal(rep); err != nil {
		t.Fatalf("json.Marshal(report): %v", err)
	}
}
