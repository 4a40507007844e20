package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
)

// TestAnalyzeCommPattern: on the B200 capture (world size 8) the default
// table finds the multimem all-reduces; -comm-pattern replaces it, and a
// pattern that matches nothing brings a warning naming the option.
func TestAnalyzeCommPattern(t *testing.T) {
	trace := fixtures.Path(t, "kineto/tracelens-b200-eager-nosteps/eager_trace.json.gz")
	type doc struct {
		Profiles []struct {
			Summary  map[string]struct{ Median float64 } `json:"summary"`
			Warnings []string                            `json:"warnings"`
		} `json:"profiles"`
	}
	analyze := func(args ...string) doc {
		t.Helper()
		code, out, errOut := run(t, append(append([]string{"analyze", "-format", "json"}, args...), trace)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var d doc
		if err := json.Unmarshal([]byte(out), &d); err != nil || len(d.Profiles) != 1 {
			t.Fatalf("bad JSON (%v): %.200s", err, out)
		}
		return d
	}
	warned := func(d doc) bool {
		for _, w := range d.Profiles[0].Warnings {
			if strings.Contains(w, "-comm-pattern") && strings.Contains(w, "world size 8") {
				return true
			}
		}
		return false
	}
	d := analyze()
	if warned(d) {
		t.Errorf("default pattern: warns that no kernel is communication: %q", d.Profiles[0].Warnings)
	}
	if d = analyze("-comm-pattern", `^no such kernel$`); !warned(d) {
		t.Errorf("-comm-pattern matching nothing: no warning naming the option: %q", d.Profiles[0].Warnings)
	}
	if code, _, errOut := run(t, "analyze", "-comm-pattern", "(", trace); code != 2 || !strings.Contains(errOut, "-comm-pattern") {
		t.Errorf("bad -comm-pattern: exit %d, %q", code, errOut)
	}
}

// TestAnalyzePreCaptureJSON: the A100 rank-0 capture's ops launched before
// the capture (705 kernels, 140 copies, 27 memsets: analysis/testdata/
// precapture.py) are in the JSON, and no kept step counts them.
func TestAnalyzePreCaptureJSON(t *testing.T) {
	code, out, errOut := run(t, "analyze", "-format", "json", fixtures.Path(t, "kineto/hta-negative-queue-length-a100-16rank/rank0.json.gz"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var d struct {
		Profiles []struct {
			PreCapture *struct{ Kernels, Memcpy, Memset int } `json:"pre_capture"`
			Steps      []struct{ Kernels int }                `json:"steps"`
		} `json:"profiles"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || len(d.Profiles) != 1 {
		t.Fatalf("bad JSON (%v)", err)
	}
	p := d.Profiles[0]
	if p.PreCapture == nil || *p.PreCapture != (struct{ Kernels, Memcpy, Memset int }{705, 140, 27}) {
		t.Errorf("pre_capture %+v, want 705 kernels, 140 copies, 27 memsets", p.PreCapture)
	}
	for i, s := range p.Steps {
		if s.Kernels != 1075 {
			t.Errorf("step %d: %d kernels, want 1075", i, s.Kernels)
		}
	}
}
