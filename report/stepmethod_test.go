package report

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/trace/kineto"
)

// TestStepMethodShown checks that analyze's JSON and text say how the steps
// were found: by their markers, and inferred when the step pattern matches
// nothing; and that compare reads the method back.
func TestStepMethodShown(t *testing.T) {
	p, err := kineto.ReadFile(fixtures.Path(t, "kineto/hta-negative-queue-length-a100-16rank/rank0.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pattern, method string
		inferred        bool
	}{
		{"", analysis.StepsMarked, false},
		{`^no such range$`, "", true},
	} {
		opt := analysis.Options{}
		if c.pattern != "" {
			opt.StepPattern = regexp.MustCompile(c.pattern)
		}
		r := analysis.Analyze(p, opt)
		if c.inferred && (r.StepMethod == analysis.StepsMarked || r.StepMethod == "") {
			t.Fatalf("pattern %q: method %q, want an inferred one", c.pattern, r.StepMethod)
		}
		a := NewAnalysis([]*analysis.Result{r})
		var js, text bytes.Buffer
		if err := a.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		a.WriteText(&text)
		var doc struct {
			Profiles []struct {
				Method     string  `json:"step_method"`
				Confidence float64 `json:"step_confidence"`
			}
		}
		if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		got := doc.Profiles[0]
		if got.Method != r.StepMethod || got.Confidence != r.StepConfidence || (!c.inferred && (got.Method != c.method || got.Confidence != 1)) {
			t.Errorf("pattern %q: JSON says %q %v, result %q %v", c.pattern, got.Method, got.Confidence, r.StepMethod, r.StepConfidence)
		}
		line := "steps found by: " + r.StepMethod + " (confidence "
		if !strings.Contains(text.String(), line) {
			t.Errorf("pattern %q: text has no %q line:\n%s", c.pattern, line, text.String())
		}
		back := a.Results()[0]
		if back.StepMethod != r.StepMethod || back.StepConfidence != r.StepConfidence {
			t.Errorf("pattern %q: read back %q %v", c.pattern, back.StepMethod, back.StepConfidence)
		}
	}
}
