package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/trace/kineto"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

func run(t *testing.T, rel string) gate.Run {
	t.Helper()
	p, err := kineto.ReadFile(fixtures.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	p.Path = filepath.Base(p.Path) // keep the golden file free of local paths
	return gate.Run{analysis.Analyze(p, analysis.Options{})}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		os.WriteFile(path+".got", got, 0o644)
		t.Errorf("%s differs from the golden file; got written to %s.got (go test -update to accept)", path, path)
	}
}

const resnet = "kineto/kineto-tbplugin-resnet50-v100-legacy/"

func TestCompareMarkdownGolden(t *testing.T) {
	base := run(t, resnet+"num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	head := run(t, resnet+"num_workers_0/worker0.1623143089861.pt.trace.json.gz")
	// The capture three times a side: runs with a spread of 0, so that
	// the verdicts are exact (one run a side can judge nothing).
	rep := gate.Compare([]gate.Run{base, base, base}, []gate.Run{head}, gate.Options{})
	var buf bytes.Buffer
	WriteCompareMarkdown(&buf, rep)
	golden(t, "regression.md", buf.Bytes())
	if buf.Len() > 65536 {
		t.Errorf("comment is %d bytes, over GitHub's 65,536", buf.Len())
	}
	rep = gate.Compare([]gate.Run{head, head, head}, []gate.Run{base}, gate.Options{})
	buf.Reset()
	WriteCompareMarkdown(&buf, rep)
	golden(t, "improvement.md", buf.Bytes())
}

func TestCompareJSONContract(t *testing.T) {
	base := run(t, resnet+"num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	head := run(t, resnet+"num_workers_0/worker0.1623143089861.pt.trace.json.gz")
	var buf bytes.Buffer
	if err := WriteCompareJSON(&buf, gate.Compare([]gate.Run{base, base, base}, []gate.Run{head}, gate.Options{})); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	check := func(what string, got []string, want ...string) { t.Helper(); checkKeys(t, what, got, want) }
	check("document", keys(doc), "verdict", "baseline", "candidate", "alpha", "mismatch", "sample_unit", "noise", "metrics", "decomposition", "kernels", "findings", "cause", "warnings", "profiling_overhead", "run_conditions", "work")
	if doc["verdict"] != "regression" {
		t.Errorf("verdict %v", doc["verdict"])
	}
	m := doc["metrics"].([]any)[0].(map[string]any)
	check("metric", keys(m), "name", "unit", "direction", "baseline", "candidate", "sample_unit", "delta", "delta_ci", "delta_pct", "ci_pct", "confidence",
		"allowance_pct", "min_abs", "p_value", "significant", "verdict", "gate", "reason", "why", "notes", "warnings", "scale", "need_runs")
	check("summary", keys(m["baseline"].(map[string]any)), "median", "mean", "p90", "min", "max", "n", "steps", "runs", "run_spread", "run_means", "run_cv", "value")
	if ci := m["ci_pct"].([]any); len(ci) != 2 || ci[0].(float64) > m["delta_pct"].(float64) || ci[1].(float64) < m["delta_pct"].(float64) {
		t.Errorf("step_time ci_pct %v around delta_pct %v", ci, m["delta_pct"])
	}
	if doc["alpha"] != 0.05 || doc["sample_unit"] != "run" || m["why"] == "" {
		t.Errorf("alpha %v, sample_unit %v, why %q", doc["alpha"], doc["sample_unit"], m["why"])
	}
	check("kernels", keys(doc["kernels"].(map[string]any)), "added", "removed", "changed")
	f := doc["findings"].([]any)[0].(map[string]any)
	check("finding", keys(f), "id", "severity", "summary", "evidence", "suggestion", "share", "new", "worse", "baseline_share", "accounts_ms")
	// data_wait goes from 0 to 60 ms: an infinite change is null in JSON.
	for _, x := range doc["metrics"].([]any) {
		if x.(map[string]any)["name"] == "data_wait" && x.(map[string]any)["delta_pct"] != nil {
			t.Errorf("data_wait delta_pct = %v, want null", x.(map[string]any)["delta_pct"])
		}
	}
	md, _ := os.ReadFile(filepath.Join("..", "docs", "json.md"))
	for _, k := range append(append(keys(doc), keys(m)...), keys(f)...) {
		if !strings.Contains(string(md), `"`+k+`"`) {
			t.Errorf("compare JSON key %q is not documented in docs/json.md", k)
		}
	}
}

// Many changed kernels with long names must not push a comment past
// GitHub's limit.
func TestCommentSize(t *testing.T) {
	var b, c []analysis.KernelStat
	for i := range 5000 {
		name := strings.Repeat("void very_long_templated_kernel_name<float, 128, 6, 7>", 4) + string(rune('a'+i%26)) + strings.Repeat("x", i%97)
		b = append(b, analysis.KernelStat{Name: name + "b", Count: 1, Time: 1000})
		c = append(c, analysis.KernelStat{Name: name + "c", Count: 2, Time: 5000})
	}
	steps := []analysis.Step{{Start: 0, End: 1e6}, {Start: 1e6, End: 2e6}}
	rb := analysis.FromSteps(run(t, resnet+"num_workers_4/worker0.1623213129365.pt.trace.json.gz")[0].Profile, true, steps, b)
	rc := analysis.FromSteps(rb.Profile, true, steps, c)
	var buf bytes.Buffer
	WriteCompareMarkdown(&buf, gate.Compare([]gate.Run{{rb}}, []gate.Run{{rc}}, gate.Options{}))
	if buf.Len() > 65536/2 {
		t.Errorf("comment with 10000 kernel changes is %d bytes", buf.Len())
	}
}

func TestCommentGolden(t *testing.T) {
	base := run(t, resnet+"num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	head := run(t, resnet+"num_workers_0/worker0.1623143089861.pt.trace.json.gz")
	rep := gate.Compare([]gate.Run{base, base, base}, []gate.Run{head}, gate.Options{})
	var buf bytes.Buffer
	info := CommentInfo{Marker: "<!-- gpugate:resnet -->", Workload: "resnet", Baseline: "main@3f2c1a0, 3 run(s)", Fingerprint: "1× Tesla V100-DGXS-32GB"}
	info.BaseSteps, info.CandSteps = rep.StepSeries([]gate.Run{base, base, base}, []gate.Run{head}, nil, nil)
	if err := WriteComment(&buf, rep, info); err != nil {
		t.Fatal(err)
	}
	golden(t, "comment.md", buf.Bytes())
	if !strings.HasPrefix(buf.String(), info.Marker+"\n") || !strings.Contains(buf.String(), "```mermaid\nxychart-beta") {
		t.Errorf("comment lacks the marker or the chart")
	}
	// A comment whose report is far too long is cut below GitHub's limit.
	huge := *rep
	huge.Warnings = nil
	for i := range 400 {
		huge.Warnings = append(huge.Warnings, strings.Repeat("w", 500)+fmt.Sprint(i))
	}
	buf.Reset()
	info.SummaryURL = "https://github.com/acme/train/actions/runs/1"
	WriteComment(&buf, &huge, info)
	if buf.Len() > MaxComment || !strings.Contains(buf.String(), "job summary: https://") {
		t.Errorf("long comment: %d bytes, ends %q", buf.Len(), buf.String()[max(0, buf.Len()-200):])
	}
}
