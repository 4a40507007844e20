package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/stats"
)

var codeSpans = regexp.MustCompile("`[^`\n]*`")

// hostile is what a trace, a config or a forged artifact may put in a name.
const hostile = "x</details><img src=x onerror=alert(1)> @octocat **bold** [link](https://evil.example) `tick\n::error::injected\x1b[31m|pipe"

func TestCommentEscapesEveryName(t *testing.T) {
	r := &gate.Report{
		Verdict: stats.Regression,
		Metrics: []stats.Result{{Name: "step_time" + hostile, Unit: "ms", Verdict: stats.Regression, Gate: true, Notes: []string{hostile}}},
		Findings: []gate.Finding{{Finding: analysis.Finding{ID: "host-sync" + hostile, Severity: "high" + hostile,
			Summary: "waits in `" + "aten::item" + "` " + hostile, Evidence: hostile, Suggestion: hostile}, New: true}},
		Kernels:       gate.KernelDiff{Added: []gate.KernelChange{{Name: hostile, CandidateCount: 1}}},
		Warnings:      []string{hostile},
		Noise:         hostile,
		Baseline:      gate.Side{Paths: []string{"/tmp/" + hostile}},
		Candidate:     gate.Side{Paths: []string{hostile}},
		Decomposition: gate.Decomposition{Parts: []gate.Part{{Name: hostile}}},
	}
	var b bytes.Buffer
	if err := WriteComment(&b, r, CommentInfo{Marker: "<!-- gpugate:w -->", Workload: hostile, Baseline: hostile, Fingerprint: hostile,
		ArtifactName: hostile, ArtifactURL: "javascript:alert(1)", Traces: []string{"a.pt.trace.json.gz"}}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	// Code spans show their content literally (GitHub neither renders HTML
	// nor links mentions in them); outside them nothing may be raw.
	outside := codeSpans.ReplaceAllString(out, "`…`")
	for _, bad := range []string{"</details><img", "<img", "@octocat", "[link](", "**bold**"} {
		if strings.Contains(outside, bad) {
			t.Errorf("comment contains raw %q outside code spans:\n%s", bad, out)
		}
	}
	for _, bad := range []string{"\n::error", "\x1b", "javascript:", "`tick\n"} {
		if strings.Contains(out, bad) {
			t.Errorf("comment contains raw %q:\n%s", bad, out)
		}
	}
	// Exactly the <details> blocks the renderer opens are closed.
	if o, c := strings.Count(outside, "<details>"), strings.Count(outside, "</details>"); o != c {
		t.Errorf("%d <details> but %d </details>", o, c)
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
