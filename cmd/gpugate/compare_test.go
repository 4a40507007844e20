package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
)

// The pair: an A100 rank 3/8 (hta-trace-diff control) against a V100
// rank 1/2 (test). No verdict: exit 2 naming both sides, in a fixed order.
func TestCompareMismatch(t *testing.T) {
	control := fixtures.Path(t, "kineto/hta-trace-diff/control.json.gz")
	test := fixtures.Path(t, "kineto/hta-trace-diff/test.json.gz")
	code, out, errOut := run(t, "compare", control, test)
	want := "devices: baseline NVIDIA A100-PG509-200, candidate Tesla V100-SXM2-16GB; world size: baseline 8, candidate 2"
	if code != 2 || out != "" || !strings.Contains(errOut, want) || strings.Count(errOut, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line naming %q", code, out, errOut, want)
	}
	code, out, _ = run(t, "compare", "-allow-mismatch", "-format", "markdown", control, test)
	if code == 2 || !strings.Contains(out, "> ⚠️ **Not the same hardware or profiler, compared anyway**") || !strings.Contains(out, want) {
		t.Errorf("-allow-mismatch: exit %d\n%s", code, out)
	}
	if i := strings.Index(out, "Not the same hardware"); i < 0 || i > strings.Index(out, "| metric |") {
		t.Errorf("-allow-mismatch: the mismatch is not at the top\n%s", out)
	}
}

// The 8 ranks of the DLRM job compared with themselves: n counts the job's
// steps (1), not steps × ranks (8).
func TestCompareDLRMWithItself(t *testing.T) {
	files := fixtures.Glob(t, "kineto/param-dlrm-8rank-v100/*.json.gz")
	var args []string
	for _, f := range files {
		args = append(args, "-base", f)
	}
	for _, f := range files {
		args = append(args, "-head", f)
	}
	code, out, errOut := run(t, append([]string{"compare", "-format", "json"}, args...)...)
	var doc struct {
		Verdict  string
		Baseline struct{ Steps, Ranks int }
		Metrics  []struct {
			Name     string
			Verdict  string
			Reason   string
			Baseline struct {
				N      int
				Median float64
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("exit %d (%s): %v", code, errOut, err)
	}
	if doc.Baseline.Steps != 1 || doc.Baseline.Ranks != 8 {
		t.Errorf("baseline: %d steps of %d ranks, want 1 of 8", doc.Baseline.Steps, doc.Baseline.Ranks)
	}
	for _, m := range doc.Metrics {
		if m.Baseline.N != 1 {
			t.Errorf("%s: n=%d, want 1", m.Name, m.Baseline.N)
		}
		if m.Name == "step_time" && math.Abs(m.Baseline.Median-19.901) > 0.0005 {
			t.Errorf("step_time %.4f ms, want the slowest rank's 19.901 ms", m.Baseline.Median)
		}
	}
	// One run a side bounds nothing: said, exit 3; never a pass.
	if code != 3 || doc.Verdict != "inconclusive" {
		t.Errorf("exit %d, verdict %s", code, doc.Verdict)
	}
}

// analyze and compare report the same median step for the ResNet
// num_workers=4 capture: 121.129 ms, the median of its steps 2..5
// (computed in Python from the JSON).
func TestAnalyzeCompareSameSteps(t *testing.T) {
	f := fixtures.Path(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	_, out, _ := run(t, "analyze", "-format", "json", f)
	var a struct {
		Profiles []struct {
			Summary map[string]struct{ Median float64 }
			LeftOut []struct{ Name string } `json:"left_out"`
		}
	}
	json.Unmarshal([]byte(out), &a)
	_, out, _ = run(t, "compare", "-format", "json", f, f)
	var c struct {
		Metrics []struct {
			Name     string
			Baseline struct{ Median float64 }
		}
	}
	json.Unmarshal([]byte(out), &c)
	if len(a.Profiles) != 1 || len(c.Metrics) == 0 || c.Metrics[0].Name != "step_time" {
		t.Fatalf("analyze %s / compare %+v", out, c)
	}
	am, cm := a.Profiles[0].Summary["step_time_ms"].Median, c.Metrics[0].Baseline.Median
	if am != cm || math.Abs(am-121.1285) > 0.001 {
		t.Errorf("median step: analyze %.4f ms, compare %.4f ms; want both 121.1285", am, cm)
	}
	if lo := a.Profiles[0].LeftOut; len(lo) != 2 || lo[0].Name != "ProfilerStep#16" || lo[1].Name != "ProfilerStep#21" {
		t.Errorf("left out %+v", lo)
	}
	_, text, _ := run(t, "analyze", f)
	if !strings.Contains(text, "left out: ProfilerStep#16 (first step: one-time work (warm-up), 170.1 ms); ProfilerStep#21 (last step: closes the capture, 202.6 ms)") {
		t.Errorf("analyze text does not say which steps it left out:\n%s", text)
	}
}

// One allowance language on the command line, and no NaN.
func TestCompareFlags(t *testing.T) {
	d := "kineto/kineto-tbplugin-resnet50-v100-legacy/"
	w4 := fixtures.Path(t, d+"num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	a := fixtures.Path(t, d+"num_workers_0/worker0.1623143089861.pt.trace.json.gz")
	dir := t.TempDir()
	for _, f := range []struct{ in, out string }{{w4, "base.json"}, {a, "head.json"}} {
		_, js, _ := run(t, "analyze", "-format", "json", f.in)
		os.WriteFile(filepath.Join(dir, f.out), []byte(js), 0o644)
	}
	base, head := filepath.Join(dir, "base.json"), filepath.Join(dir, "head.json")
	// +46.7%: 60% and 0.6 both let it through; 40% does not.
	for allowance, want := range map[string]int{"step_time=60%": 0, "step_time=0.6": 0, "step_time=40%": 1} {
		if code, _, errOut := run(t, "compare", "-allowance", allowance, "-allowance", "gpu_util=100%", "-allowance", "gpu_idle=1000%",
			"-allowance", "cpu_wait=1000%", "-allowance", "data_wait=1000%", "-runs", "-base", base, "-base", base, "-base", base, "-head", head); code != want {
			t.Errorf("-allowance %s: exit %d (%s), want %d", allowance, code, errOut, want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-allowance", "step_time=60"}, `"60" is a bare number above 1: write 60% for 60 percent`},
		{[]string{"-allowance", "step_time=NaN"}, "is not a percentage"},
		{[]string{"-allowance", "step_time=-5%"}, "cannot be negative"},
		{[]string{"-alpha", "NaN"}, "-alpha must be in range (0, 1)"},
		{[]string{"-alpha", "1"}, "-alpha must be in range (0, 1)"},
	} {
		code, _, errOut := run(t, append(append([]string{"compare"}, c.args...), base, head)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
	// The α used is the α reported.
	_, out, _ := run(t, "compare", "-alpha", "0.01", "-format", "markdown", base, head)
	if !strings.Contains(out, "(α=0.01, 99% intervals, runs as samples)") {
		t.Errorf("-alpha 0.01: header does not say so:\n%s", out[:min(len(out), 400)])
	}
}
