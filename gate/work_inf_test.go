package gate

import (
	"encoding/json"
	"strings"
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

// TestCompareWorkRankMissing: FLOPs and rates add up over the ranks of a
// run; a run in which one rank has none has no total, rather than the
// other ranks' sum passing for it (half the FLOPs per sample, and a false
// "fewer FLOPs, not faster FLOPs").
func TestCompareWorkRankMissing(t *testing.T) {
	base := Run{workRun(10, 100, 3e11)[0], workRun(10, 100, 3e11)[0]}
	half := workRun(10, 90, 3e11)[0]
	bare := workRun(10, 90, 3e11)[0]
	bare.Work = nil
	rep := Compare([]Run{base}, []Run{{half, bare}}, Options{})
	for _, w := range rep.Warnings {
		if strings.Contains(w, "fewer FLOPs") {
			t.Errorf("warning %q from a rank without FLOPs", w)
		}
	}
	for _, r := range rep.Work.Rows {
		if r.Name == "flops_per_step" && r.Candidate != nil {
			t.Errorf("candidate flops_per_step %v from one of two ranks", *r.Candidate)
		}
	}
}
