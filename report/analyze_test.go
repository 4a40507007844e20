package report

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/internal/testdb"
	"github.com/gpugate/gpugate/trace/kineto"
	"github.com/gpugate/gpugate/trace/nsys"
)

func keys(m map[string]any) []string {
	var k []string
	for key := range m {
		k = append(k, key)
	}
	sort.Strings(k)
	return k
}

// checkKeys compares a JSON object's keys with the documented ones.
func checkKeys(t *testing.T, what string, got, want []string) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("%s keys = %v, want %v", what, got, want)
	}
}

// TestAnalysisJSONContract checks that the JSON has exactly the fields that
// docs/json.md documents, and that the document names each of them.
func TestAnalysisJSONContract(t *testing.T) {
	db := testdb.FromSQL(t, filepath.Join("..", "trace", "nsys", "testdata", "two-process-2022.4.sql"))
	ps, err := nsys.ReadFile(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	var rs []*analysis.Result
	for _, p := range ps {
		rs = append(rs, analysis.Analyze(p, analysis.Options{}))
	}
	var buf bytes.Buffer
	if err := NewAnalysis(rs).WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	check := func(what string, got []string, want ...string) { t.Helper(); checkKeys(t, what, got, want) }
	check("document", keys(doc), "profiles", "ranks")
	prof := doc["profiles"].([]any)[0].(map[string]any)
	check("profile", keys(prof), "path", "format", "variant", "rank", "world_size", "process", "devices", "has_gpu",
		"whole_profile", "step_method", "step_confidence", "window", "left_out", "steps", "summary", "kernel_stats", "findings", "warnings", "work")
	check("window", keys(prof["window"].(map[string]any)), "start_ns", "end_ns", "kernels", "memcpy_count", "memset_count", "gpu_busy_ns")
	step := prof["steps"].([]any)[0].(map[string]any)
	check("step", keys(step), "name", "start_ns", "end_ns", "host_start_ns", "host_end_ns", "step_time_ns", "kernels",
		"memcpy_count", "memset_count", "gpu_busy_ns", "gpu_util", "gpu_idle_ns", "cpu_wait_ns", "data_wait_ns", "sync_calls", "sync_time_ns", "memcpy",
		"comm_time_ns", "exposed_comm_ns", "exposed_copy_ns", "launch_overhead_ns", "short_kernels", "memory")
	check("memcpy", keys(step["memcpy"].(map[string]any)), "h2d", "d2h", "d2d")
	check("copies", keys(step["memcpy"].(map[string]any)["h2d"].(map[string]any)), "count", "bytes", "time_ns", "pageable")
	check("summary entry", keys(prof["summary"].(map[string]any)["step_time_ms"].(map[string]any)), "median", "mean", "p90", "min", "max", "n")
	ranks := doc["ranks"].(map[string]any)
	check("ranks", keys(ranks), "count", "slowest", "fastest", "spread_pct", "per_rank")
	check("rank stat", keys(ranks["slowest"].(map[string]any)), "index", "rank", "path", "steps", "step_time_ms", "gpu_util")

	// Every key is documented.
	md, err := os.ReadFile(filepath.Join("..", "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	all = append(all, keys(prof)...)
	all = append(all, keys(step)...)
	all = append(all, keys(prof["summary"].(map[string]any))...)
	all = append(all, keys(ranks)...)
	for _, k := range all {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(k, "_ms"), "_MB"), "_us"), "_count")
		if !strings.Contains(string(md), `"`+k+`"`) && !strings.Contains(string(md), base) {
			t.Errorf("JSON key %q is not documented in docs/json.md", k)
		}
	}
	// The step times of the hand-made export (see analysis tests).
	if got := step["step_time_ns"].(float64); got != 4500 {
		t.Errorf("step_time_ns = %v, want 4500", got)
	}
}

// TestAnalysisJSONConservation reads the analyze JSON of fixtures that
// have steps left out, ops launched before the capture and ops outside the
// steps, and checks docs/json.md's identity on the document alone: the
// window's kernels, memcpy_count and memset_count are the sums over steps,
// left_out, pre_capture and outside_steps.
func TestAnalysisJSONConservation(t *testing.T) {
	var rs []*analysis.Result
	ps, err := nsys.ReadFile(context.Background(), fixtures.Path(t, "nsys-sqlite/nsysai-mfu-2gpu-h100/mfu_2gpu_before.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	kp, err := kineto.ReadFile(fixtures.Path(t, "kineto/hta-negative-queue-length-a100-16rank/rank0.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(ps, kp) {
		rs = append(rs, analysis.Analyze(p, analysis.Options{}))
	}
	var buf bytes.Buffer
	if err := NewAnalysis(rs).WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Profiles []struct {
			Path   string
			Window struct {
				K int `json:"kernels"`
				C int `json:"memcpy_count"`
				S int `json:"memset_count"`
			}
			Steps []struct {
				K int `json:"kernels"`
				C int `json:"memcpy_count"`
				S int `json:"memset_count"`
			}
			LeftOut []map[string]any `json:"left_out"`
			Pre     *struct {
				K int `json:"kernels"`
				C int `json:"memcpy"`
				S int `json:"memset"`
			} `json:"pre_capture"`
			Outside *struct {
				K int `json:"kernels"`
				C int `json:"memcpy"`
				S int `json:"memset"`
			} `json:"outside_steps"`
			Warnings []string
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Profiles) != 3 {
		t.Fatalf("%d profiles, want 3", len(doc.Profiles))
	}
	for i, p := range doc.Profiles {
		var k, c, s int
		for _, st := range p.Steps {
			k, c, s = k+st.K, c+st.C, s+st.S
		}
		for _, l := range p.LeftOut {
			checkKeys(t, "left_out entry", keys(l), []string{"name", "reason", "start_ns", "end_ns", "host_start_ns", "host_end_ns", "step_time_ns", "kernels", "memcpy", "memset"})
			k, c, s = k+int(l["kernels"].(float64)), c+int(l["memcpy"].(float64)), s+int(l["memset"].(float64))
		}
		if p.Pre != nil {
			k, c, s = k+p.Pre.K, c+p.Pre.C, s+p.Pre.S
		}
		if p.Outside != nil {
			k, c, s = k+p.Outside.K, c+p.Outside.C, s+p.Outside.S
		}
		if [3]int{k, c, s} != [3]int{p.Window.K, p.Window.C, p.Window.S} {
			t.Errorf("profile %d: steps + left_out + pre_capture + outside_steps = %v, window %v", i, [3]int{k, c, s}, [3]int{p.Window.K, p.Window.C, p.Window.S})
		}
		warned := slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "are in no step") })
		if warned != (p.Outside != nil) {
			t.Errorf("profile %d: outside_steps %v, warning %v", i, p.Outside, warned)
		}
	}
	// The first H100 process has ops after its last step (108: 77
	// kernels, 27 copies, 4 memsets), the A100 trace none but pre-capture.
	if o := doc.Profiles[0].Outside; o == nil || o.K+o.C+o.S != 108 {
		t.Errorf("H100 pid 144 outside_steps %+v, want 108 ops", o)
	}
	if doc.Profiles[2].Outside != nil || doc.Profiles[2].Pre == nil {
		t.Errorf("A100 rank 0: outside %+v, pre-capture %+v; want none outside, some before the capture", doc.Profiles[2].Outside, doc.Profiles[2].Pre)
	}
}

// An analyze document written before analyze trimmed steps itself (no
// "left_out") is trimmed when read, so stored baselines and new runs are
// judged on the same kind of steps; a new document is taken as it is.
func TestResultsTrimsOlderDocuments(t *testing.T) {
	steps := `{"name":"s1","start_ns":0,"end_ns":10},{"name":"s2","start_ns":10,"end_ns":20},{"name":"s3","start_ns":20,"end_ns":30},` +
		`{"name":"s4","start_ns":30,"end_ns":40},{"name":"s5","start_ns":40,"end_ns":50},{"name":"s6","start_ns":50,"end_ns":60}`
	for _, c := range []struct {
		doc  string
		want []string
	}{
		{`{"profiles":[{"path":"old.json","steps":[` + steps + `]}]}`, []string{"s2", "s3", "s4", "s5"}},
		{`{"profiles":[{"path":"new.json","left_out":[],"steps":[` + steps + `]}]}`, []string{"s1", "s2", "s3", "s4", "s5", "s6"}},
	} {
		var a Analysis
		if err := json.Unmarshal([]byte(c.doc), &a); err != nil {
			t.Fatal(err)
		}
		r := a.Results()[0]
		var got []string
		for _, s := range r.Steps {
			got = append(got, s.Name)
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: steps %v, want %v", r.Profile.Path, got, c.want)
		}
	}
}

// The text report lists steps left out for one reason together (an nsys
// run's warm-up steps and those after measure_steps), and escapes names.
func TestLeftOutText(t *testing.T) {
	lo := func(name, why string, ms int64) analysis.LeftOut {
		return analysis.LeftOut{Name: name, Reason: why, StepTime: ms * 1e6}
	}
	a := &Analysis{Profiles: []Profile{{Path: "x.sqlite", HasGPU: true, LeftOut: []analysis.LeftOut{
		lo("train_step", "warm-up step (warmup_steps)", 9), lo("train_step", "warm-up step (warmup_steps)", 5), lo("train_step", "warm-up step (warmup_steps)", 6),
		lo("train_step\x1b[2J", "first step: one-time work (warm-up)", 7),
		lo("s", "last step: closes the capture", 8),
		lo("train_step", "after the measured steps (measure_steps)", 4), lo("train_step", "after the measured steps (measure_steps)", 4),
	}}}}
	var buf bytes.Buffer
	if err := a.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	want := "left out: 3 steps train_step … train_step (warm-up step (warmup_steps), 5–9 ms); train_step\\x1b[2J (first step: one-time work (warm-up), 7 ms); " +
		"s (last step: closes the capture, 8 ms); 2 steps train_step … train_step (after the measured steps (measure_steps), 4–4 ms)\n"
	if got := buf.String(); !strings.Contains(got, want) {
		t.Errorf("text:\n%s\nwant the line\n%s", got, want)
	}
}
