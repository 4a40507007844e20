package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/mdcheck"
	"github.com/gpugate/gpugate/runcond"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/stats"
)

// hostileName is what a trace, a config or a forged artifact may put in a name.
const hostileName = "x</details><img src=x onerror=alert(1)> @octocat **bold** [link](https://evil.example) `tick\n::error::injected\x1b[31m|pipe"

func TestCommentEscapesEveryName(t *testing.T) {
	r := &gate.Report{
		Verdict: stats.Regression,
		Metrics: []stats.Result{{Name: "step_time" + hostileName, Unit: "ms", Verdict: stats.Regression, Gate: true, Notes: []string{hostileName}}},
		Findings: []gate.Finding{{Finding: analysis.Finding{ID: "host-sync" + hostileName, Severity: "high" + hostileName,
			Summary: "waits in `" + "aten::item" + "` " + hostileName, Evidence: hostileName, Suggestion: hostileName}, New: true}},
		Kernels:       gate.KernelDiff{Added: []gate.KernelChange{{Name: hostileName, CandidateCount: 1}}},
		Warnings:      []string{hostileName},
		Noise:         hostileName,
		Baseline:      gate.Side{Paths: []string{"/tmp/" + hostileName}},
		Candidate:     gate.Side{Paths: []string{hostileName}},
		Decomposition: gate.Decomposition{Parts: []gate.Part{{Name: hostileName}}},
	}
	// Run conditions: GPU and process names come from nvidia-smi, and so
	// from whoever started the process.
	used := 12.0
	hot := &runcond.Conditions{Sampled: true, JobGPUsKnown: true, Warnings: []string{hostileName}, GPUs: []runcond.GPUConditions{{
		Index: 0, Name: hostileName, Samples: 3, Busy: 3, JobSeen: true, ReasonShare: map[string]float64{"hw_slowdown": 0.5},
		Others:       []runcond.ComputeProcess{{PID: 7, Name: hostileName, UsedMiB: &used}},
		Unattributed: []runcond.ComputeProcess{{PID: 8, Name: hostileName}}}}}
	r.Verdict = stats.Regression
	gate.ApplyConditions(r, []*runcond.Conditions{{NotSampled: hostileName}}, []*runcond.Conditions{hot}, gate.DefaultConditionMargins, hostileName)
	if !r.Conditions.Voided {
		t.Fatalf("hostile conditions did not void: %+v", r.Conditions)
	}
	var b bytes.Buffer
	if err := WriteComment(&b, r, CommentInfo{Marker: "<!-- gpugate:w -->", Workload: hostileName, Baseline: hostileName, Fingerprint: hostileName,
		ArtifactName: hostileName, ArtifactURL: "javascript:alert(1)", Traces: []string{"a.pt.trace.json.gz"}}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	// What GitHub would make of it (goldmark as the stand-in, as the
	// fuzzers do): only gpugate's own HTML, no live mention, no link.
	h := mdcheck.HTML(out)
	for tag := range mdcheck.Tags(h) {
		if !allowed[strings.TrimPrefix(tag, "/")] {
			t.Errorf("tag <%s> in the rendered comment:\n%s\n----\n%s", tag, out, h)
		}
	}
	if live := mdcheck.Live(mdcheck.Text(h)); live != "" {
		t.Errorf("live mention or reference %q in:\n%s", live, out)
	}
	if strings.Contains(h, "<a ") || strings.Contains(h, "<strong>bold") {
		t.Errorf("a link or emphasis from a name in:\n%s", h)
	}
	for _, bad := range []string{"\n::error", "\x1b", "javascript:", "`tick\n"} {
		if strings.Contains(out, bad) {
			t.Errorf("comment contains raw %q:\n%s", bad, out)
		}
	}
	// Exactly the <details> blocks the renderer opens are closed.
	if tags := mdcheck.Tags(h); tags["details"] != tags["/details"] {
		o, c := tags["details"], tags["/details"]
		t.Errorf("%d <details> but %d </details>", o, c)
	}
	if !strings.Contains(out, "#### Run conditions") || !strings.Contains(out, "pid 7 ") {
		t.Errorf("no run conditions section with the other process:\n%s", out)
	}
	var txt bytes.Buffer
	WriteConditionsText(&txt, r)
	for _, bad := range []string{"\x1b", "\n::error", "\n\n\n"} {
		if strings.Contains(txt.String(), bad) || !strings.Contains(txt.String(), "pid 7 ") {
			t.Errorf("text run conditions contain raw %q:\n%s", bad, txt.String())
		}
	}
	// Code spans survive in free text.
	if !strings.Contains(out, "`aten::item`") {
		t.Errorf("the finding's code span is gone:\n%s", out)
	}
	// Every line is one the renderer wrote: no injected line starts.
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "::") || strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "### gpugate") && !strings.HasPrefix(line, "#### ") {
			t.Errorf("injected line %q", line)
		}
	}
}

func TestCommentBanners(t *testing.T) {
	r := &gate.Report{Verdict: stats.Regression, Metrics: []stats.Result{{Name: "step_time", Unit: "ms", Verdict: stats.Regression, Gate: true}}}
	gate.Accept(r, "gpugate/accept-regression")
	var b bytes.Buffer
	WriteComment(&b, r, CommentInfo{Marker: "<!-- gpugate:w -->"})
	if s := b.String(); !strings.Contains(s, "Regression accepted** by the label `gpugate/accept-regression`: `step_time`") || !strings.Contains(s, "regression accepted") {
		t.Errorf("accepted comment:\n%s", s)
	}
	b.Reset()
	nb := &gate.Report{Verdict: stats.NoBaseline, Warnings: []string{"no baseline of w on branch main yet"}}
	WriteComment(&b, nb, CommentInfo{Marker: "<!-- gpugate:w -->", Record: "gpugate baseline refresh -config perf.yaml"})
	s := b.String()
	if i := strings.Index(s, "**No baseline**"); i < 0 || i > 120 || !strings.Contains(s, "`gpugate baseline refresh -config perf.yaml`") {
		t.Errorf("no-baseline comment does not say so at the top with the command:\n%s", s)
	}
	b.Reset()
	WriteComment(&b, r, CommentInfo{Marker: "<!-- gpugate:w -->", ArtifactName: "gpugate-w", ArtifactURL: "https://github.com/a/b/actions/runs/1/artifacts/2",
		Traces: []string{"run1/a.pt.trace.json.gz", "r.nsys-rep.gz"}, Omitted: 1})
	s = b.String()
	for _, want := range []string{"https://github.com/a/b/actions/runs/1/artifacts/2 ", "ui.perfetto.dev", "chrome://tracing", "Nsight Systems", "1 trace(s) were left out"} {
		if !strings.Contains(s, want) {
			t.Errorf("evidence section lacks %q:\n%s", want, s)
		}
	}
}

// The comment charts the mean step time of each run compared: the
// baseline's runs, then this PR's, with the baseline's mean as a line.
func TestCommentRunChart(t *testing.T) {
	r := &gate.Report{Verdict: stats.Regression, Metrics: []stats.Result{{Name: "step_time", Unit: "ms", Verdict: stats.Regression, Gate: true,
		Baseline:  stats.Summary{RunMeans: []float64{10, 11, 12}},
		Candidate: stats.Summary{RunMeans: []float64{15.5, 16.25}}}}}
	var b bytes.Buffer
	WriteComment(&b, r, CommentInfo{Marker: "<!-- gpugate:w -->"})
	s := b.String()
	for _, want := range []string{
		"<details><summary>Step time per run</summary>",
		"3 baseline run(s), then this PR's 2",
		`x-axis ["b1", "b2", "b3", "PR1", "PR2"]`,
		"bar [10.000, 11.000, 12.000, 15.500, 16.250]",
		// (10·11·12)^(1/3) = 10.9696: the baseline's geometric mean.
		"line [10.970, 10.970, 10.970, 10.970, 10.970]",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("comment lacks %q:\n%s", want, s)
		}
	}
	// A number that is not one draws no chart, and no run on a side none.
	for _, cand := range [][]float64{{math.NaN()}, {}, {1.7e308}} {
		r.Metrics[0].Candidate.RunMeans = cand
		b.Reset()
		WriteComment(&b, r, CommentInfo{Marker: "<!-- gpugate:w -->"})
		if strings.Contains(b.String(), "Step time per run") {
			t.Errorf("candidate %v: a chart was drawn:\n%s", cand, b.String())
		}
	}
}
