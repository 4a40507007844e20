package gate

import (
	"strings"
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/trace"
)

func TestCheckSide(t *testing.T) {
	ok := func() Run { return synthetic(t, 5, 100, 0, 5) }
	with := func(f func(s *analysis.Step)) Run {
		r := ok()
		f(&r[0].Steps[2])
		return r
	}
	for _, c := range []struct {
		name string
		runs []Run
		want string // "" when fine
	}{
		{"fine", []Run{ok(), ok()}, ""},
		{"a zero-length step", []Run{with(func(s *analysis.Step) { s.End = s.Start })}, ""},
		{"no runs", nil, "candidate: no runs to compare"},
		{"a run without profiles", []Run{ok(), {}}, "candidate run 2: no profiles: nothing to compare"},
		{"a profile without steps", []Run{{analysis.FromSteps(trace.New("empty\x1b[31m.json", trace.FormatKineto), false, nil, nil)}},
			`candidate: "empty\x1b[31m.json": no steps: nothing to compare`},
		{"a step that ends before it starts", []Run{with(func(s *analysis.Step) { s.End = s.Start - 1 })},
			`candidate: "synthetic-0.json": step 3 ("ProfilerStep#2"): ends before it starts`},
		{"an inverted host range", []Run{with(func(s *analysis.Step) { s.HostEnd = s.HostStart - 5 })}, "its host range ends before it starts"},
		{"a negative time", []Run{with(func(s *analysis.Step) { s.Start, s.HostStart = -10, -10 })}, "step 3 (\"ProfilerStep#2\"): negative time"},
		{"a negative count", []Run{with(func(s *analysis.Step) { s.SyncCalls = -1 })}, "negative sync_calls (-1)"},
		{"a negative duration", []Run{with(func(s *analysis.Step) { s.GPUBusy = -1 })}, "negative gpu_busy (-1)"},
	} {
		err := CheckSide("candidate", c.runs)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want no error", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}
