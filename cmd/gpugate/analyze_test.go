package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/trace/nsys"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = gpugate(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

func TestAnalyzeEightRanks(t *testing.T) {
	files := fixtures.Glob(t, "kineto/param-dlrm-8rank-v100/*.json.gz")
	if len(files) != 8 {
		t.Fatalf("%d DLRM rank files, want 8", len(files))
	}
	code, out, errOut := run(t, append([]string{"analyze", "-format", "json"}, files...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Profiles []struct {
			Rank      *int `json:"rank"`
			WorldSize *int `json:"world_size"`
		} `json:"profiles"`
		Ranks struct {
			Count   int `json:"count"`
			Slowest struct {
				Rank       *int    `json:"rank"`
				StepTimeMs float64 `json:"step_time_ms"`
			} `json:"slowest"`
			Fastest struct {
				Rank       *int    `json:"rank"`
				StepTimeMs float64 `json:"step_time_ms"`
			} `json:"fastest"`
		} `json:"ranks"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range doc.Profiles {
		if p.Rank == nil || p.WorldSize == nil || *p.WorldSize != 8 {
			t.Fatalf("profile rank/world_size missing: %+v", p)
		}
		seen[*p.Rank] = true
	}
	if len(doc.Profiles) != 8 || len(seen) != 8 || doc.Ranks.Count != 8 {
		t.Fatalf("%d profiles, %d distinct ranks, ranks.count %d; want 8", len(doc.Profiles), len(seen), doc.Ranks.Count)
	}
	// PROVENANCE.md: the ranks are imbalanced, step 12.5–19.9 ms.
	if s := doc.Ranks.Slowest; *s.Rank != 1 || s.StepTimeMs < 19.8 || s.StepTimeMs > 20.0 {
		t.Errorf("slowest = rank %d %.2f ms, want rank 1 at 19.9 ms", *s.Rank, s.StepTimeMs)
	}
	if f := doc.Ranks.Fastest; *f.Rank != 7 || f.StepTimeMs < 12.4 || f.StepTimeMs > 12.6 {
		t.Errorf("fastest = rank %d %.2f ms, want rank 7 at 12.5 ms", *f.Rank, f.StepTimeMs)
	}
	code, out, _ = run(t, append([]string{"analyze"}, files...)...)
	if code != 0 || !strings.Contains(out, "ranks: 8") || !strings.Contains(out, "(slowest, rank 1)") {
		t.Errorf("text output lacks the cross-rank line:\n%s", out)
	}
}

func TestAnalyzeCPUOnly(t *testing.T) {
	f := fixtures.Path(t, "kineto/hta-cpu-only-edge/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
	code, out, errOut := run(t, "analyze", "-format", "json", f)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Profiles []struct {
			HasGPU   bool `json:"has_gpu"`
			Steps    []map[string]any
			LeftOut  []map[string]any `json:"left_out"`
			Warnings []string
		}
	}
	json.Unmarshal([]byte(out), &doc)
	p := doc.Profiles[0]
	// 5 steps: the first and the last are left out, and listed.
	if p.HasGPU || len(p.Steps) != 3 || len(p.LeftOut) != 2 || len(p.Warnings) == 0 {
		t.Fatalf("has_gpu %v, %d steps, %d left out, warnings %q", p.HasGPU, len(p.Steps), len(p.LeftOut), p.Warnings)
	}
	for _, s := range p.Steps {
		if v, ok := s["kernels"]; !ok || v != nil {
			t.Errorf("step kernels = %v, want null (absent, never zero)", v)
		}
		if v := s["gpu_util"]; v != nil {
			t.Errorf("step gpu_util = %v, want null", v)
		}
	}
}

func TestAnalyzeBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"traceEvents": [` + strings.Repeat(`{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2},`, 200) + `{}]}`))
	zw.Close()
	plainDB := filepath.Join(dir, "plain.sqlite")
	mkPlainSQLite(t, plainDB)
	cases := []struct{ file, want string }{
		{write("truncated.json.gz", gz.Bytes()[:gz.Len()/2]), "truncated gzip"},
		{write("truncated.json", []byte(`{"traceEvents": [{"ph": "X", "cat": "kernel", "na`)), "truncated trace"},
		{write("notes.txt", []byte("this is not a trace\n")), "not a trace"},
		{write("empty.json", nil), "empty file"},
		{write("object.json", []byte(`{"hello": "world"}`)), `no "traceEvents"`},
		{plainDB, "not an Nsight Systems export"},
		{filepath.Join(dir, "missing.json"), "no such file"},
	}
	for _, c := range cases {
		code, out, errOut := run(t, "analyze", c.file)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != 2 || out != "" || len(lines) != 1 || !strings.Contains(errOut, c.file) || !strings.Contains(errOut, c.want) {
			t.Errorf("analyze %s: exit %d, stderr %q; want exit 2 and one line naming the file and %q", filepath.Base(c.file), code, errOut, c.want)
		}
	}
}

// A report from nsys 2025.5 cannot be opened by the nsys 2022.4 that Debian
// ships; gpugate must say so, naming both versions.
func TestAnalyzeReportTooNew(t *testing.T) {
	rep := fixtures.Path(t, "nsys-rep/jax-toolbox-cuda-examples-2025.5/pdl_2p2c.nsys-rep")
	cli, err := nsys.FindCLI(os.Getenv("GPUGATE_NSYS"))
	if err != nil {
		t.Skipf("needs the nsys CLI (scripts/setup-profilers.sh installs it): %v", err)
	}
	installed := nsys.CLIVersion(context.Background(), cli)
	code, _, errOut := run(t, "analyze", "-nsys", cli, rep)
	if code != 2 || !strings.Contains(errOut, "2025.5.1") || !strings.Contains(errOut, installed) || !strings.Contains(errOut, rep) {
		t.Errorf("exit %d, stderr %q; want exit 2 naming the report, 2025.5.1 and the installed %s", code, errOut, installed)
	}
	if strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("error is not one line: %q", errOut)
	}
}

func TestAnalyzeUsage(t *testing.T) {
	if code, _, errOut := run(t, "analyze"); code != 2 || !strings.Contains(errOut, "usage:") {
		t.Errorf("analyze without files: exit %d, %q", code, errOut)
	}
	if code, _, errOut := run(t, "analyze", "-step-pattern", "(", "x.json"); code != 2 || !strings.Contains(errOut, "-step-pattern") {
		t.Errorf("bad pattern: exit %d, %q", code, errOut)
	}
	if code, _, errOut := run(t, "analyze", "-format", "xml", "x.json"); code != 2 || !strings.Contains(errOut, "-format") {
		t.Errorf("bad format: exit %d, %q", code, errOut)
	}
	if code, _, _ := run(t, "frobnicate"); code != 2 {
		t.Errorf("unknown command: exit %d", code)
	}
	if code, out, _ := run(t, "help", "analyze"); code != 0 || !strings.Contains(out, "-step-pattern") {
		t.Errorf("help analyze: exit %d\n%s", code, out)
	}
}

func TestCompareResNet(t *testing.T) {
	d := "kineto/kineto-tbplugin-resnet50-v100-legacy/"
	w4 := fixtures.Path(t, d+"num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	a := fixtures.Path(t, d+"num_workers_0/worker0.1623143089861.pt.trace.json.gz")
	b := fixtures.Path(t, d+"num_workers_0/worker0.1623143566756.pt.trace.json.gz")
	// One run a side: no run-to-run spread, nothing judged: exit 3, the
	// reason in runs, and the findings still there.
	code, out, errOut := run(t, "compare", w4, a)
	if code != 3 || !strings.Contains(out, "data-loader-bound") || !strings.Contains(out, "record ≥ 3 baseline runs") || !strings.Contains(errOut, "inconclusive") {
		t.Errorf("compare nw4 -> nw0, one run each: exit %d (%s)\n%s", code, errOut, out)
	}
	// The capture three times as the baseline's runs (spread 0): judged.
	x3 := func(base, head string) []string {
		return []string{"-runs", "-base", base, "-base", base, "-base", base, "-head", head}
	}
	code, out, errOut = run(t, append([]string{"compare"}, x3(w4, a)...)...)
	if code != 1 || !strings.Contains(out, "data-loader-bound") || !strings.Contains(out, "step_time") {
		t.Errorf("compare nw4 ×3 -> nw0: exit %d (%s)\n%s", code, errOut, out)
	}
	if i, j := strings.Index(out, "data-loader-bound"), strings.Index(out, "launch-bound"); j >= 0 && j < i {
		t.Errorf("data-loader-bound is not the leading reason:\n%s", out)
	}
	if code, out, _ := run(t, append([]string{"compare", "-format", "json"}, x3(a, w4)...)...); code != 0 || !strings.Contains(out, `"improvement"`) {
		t.Errorf("compare nw0 ×3 -> nw4: exit %d, want 0 with an improvement\n%s", code, out)
	}
	// Two captures of nw0, 20% apart, as baseline runs and the second as
	// the candidate: never a regression.
	if code, _, errOut := run(t, "compare", "-runs", "-base", a, "-base", b, "-base", a, "-head", b); code == 1 {
		t.Errorf("compare nw0 captures: exit %d (%s), want no regression", code, errOut)
	}
	// analyze JSON as input gives the same verdict as the traces.
	dir := t.TempDir()
	for _, f := range []struct{ in, out string }{{w4, "base.json"}, {a, "head.json"}} {
		code, js, _ := run(t, "analyze", "-format", "json", f.in)
		if code != 0 {
			t.Fatal("analyze failed")
		}
		os.WriteFile(filepath.Join(dir, f.out), []byte(js), 0o644)
	}
	code, out, errOut = run(t, append([]string{"compare", "-format", "markdown"}, x3(filepath.Join(dir, "base.json"), filepath.Join(dir, "head.json"))...)...)
	if code != 1 || !strings.Contains(out, "data-loader-bound") {
		t.Errorf("compare analyze JSON: exit %d (%s)\n%s", code, errOut, out)
	}
	// A wider allowance lets the same change through; CPU wait gates too
	// (17 -> 75 ms per step), so it needs one as well.
	if code, out, _ := run(t, append([]string{"compare", "-allowance", "step_time=60%"}, x3(w4, a)...)...); code != 1 || !strings.Contains(out, "*cpu_wait") {
		t.Errorf("-allowance step_time=60%%: exit %d, want 1 for the gating cpu_wait\n%s", code, out)
	}
	if code, _, _ := run(t, append([]string{"compare", "-allowance", "step_time=60%", "-allowance", "cpu_wait=400%"}, x3(w4, a)...)...); code != 0 {
		t.Errorf("-allowance step_time=60%% -allowance cpu_wait=400%%: exit %d, want 0", code)
	}
	// Two baseline runs 20% apart: the prediction interval for one run
	// against them is wide; inconclusive, saying the spread it saw and
	// what would settle it, in runs.
	if code, out, _ := run(t, "compare", "-runs", "-base", b, "-base", a, "-head", a); code != 3 || !strings.Contains(out, "runs, whose mean step times spread by") || !strings.Contains(out, "runs") || strings.Contains(out, "steps per side") {
		t.Errorf("-runs with two baseline runs: exit %d\n%s", code, out)
	}
	for _, bad := range [][]string{{"compare", a}, {"compare", "-allowance", "nonsense=5%", a, b}, {"compare", "-allowance", "step_time=x", a, b}, {"compare", "-format", "xml", a, b}} {
		if code, _, _ := run(t, bad...); code != 2 {
			t.Errorf("%q: exit %d, want 2", bad, code)
		}
	}
	// One step each: nothing can be significant, never a silent pass.
	alex := fixtures.Path(t, "kineto/hta-alexnet-a100/benchmark_result_2869224_1695835535_trace.json.gz")
	if code, out, _ := run(t, "compare", "-format", "json", alex, alex); code != 3 || !strings.Contains(out, `"inconclusive"`) {
		t.Errorf("compare single-window profiles: exit %d, want 3 and inconclusive", code)
	}
}
