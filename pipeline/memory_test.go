package pipeline

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/trace"
)

// stepsResult is an analysis of ProfilerStep#first.. with n steps.
func stepsResult(path, format string, pid, first, n int) *analysis.Result {
	p := trace.New(path, format)
	p.Process = pid
	steps := make([]analysis.Step, n)
	for i := range steps {
		steps[i] = analysis.Step{Name: "ProfilerStep#" + itoa(first+i), HostStart: int64(i) * 10, HostEnd: int64(i+1) * 10, Start: int64(i) * 10, End: int64(i+1) * 10}
	}
	return analysis.FromSteps(p, false, steps, nil)
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestJoinStepSamples: sample N (the Nth optimizer step) belongs to
// ProfilerStep#(N-1); Kineto traces take their rank's file, nsys profiles
// their pid's samples; a file of two processes for one trace is not joined.
func TestJoinStepSamples(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// rank 0: pid 10, steps 1..6 (RSS = step MiB); rank 1: pid 20 and 21.
	var b strings.Builder
	for s := 1; s <= 6; s++ {
		b.WriteString(`{"step":` + itoa(s) + `,"t_ns":1,"pid":10,"rss_bytes":` + itoa(s) + `000000}` + "\n")
	}
	f0 := write("steps-0.jsonl", b.String())
	f1 := write("steps-1.jsonl", `{"step":1,"t_ns":1,"pid":20,"rss_bytes":1}`+"\n"+`{"step":1,"t_ns":1,"pid":21,"rss_bytes":1}`+"\n")

	k0 := stepsResult(filepath.Join(dir, "trace-0.json"), trace.FormatKineto, 0, 2, 3) // ProfilerStep#2..#4 ← samples 3..5
	k1 := stepsResult(filepath.Join(dir, "trace-1.json"), trace.FormatKineto, 0, 0, 1)
	ns := stepsResult(filepath.Join(dir, "report.sqlite"), trace.FormatNsys, 10, 0, 2) // pid 10: samples 1, 2
	ws, _ := joinStepSamples([]*analysis.Result{k0, k1, ns}, nil, []string{f0, f1})
	for i, want := range []int64{3000000, 4000000, 5000000} {
		if m := k0.Steps[i].Memory; m.Source != analysis.MemFromHookRSS || m.Peak != want || !m.HasRSS {
			t.Errorf("trace-0 %s: memory %+v, want the hook's RSS %d", k0.Steps[i].Name, m, want)
		}
	}
	for i, want := range []int64{1000000, 2000000} {
		if m := ns.Steps[i].Memory; m.Peak != want {
			t.Errorf("nsys pid 10 %s: memory %+v, want %d", ns.Steps[i].Name, m, want)
		}
	}
	if m := k1.Steps[0].Memory; m.Source != "" {
		t.Errorf("trace-1 with samples of two processes: memory %+v, want none", m)
	}
	if len(ws) != 1 || !strings.Contains(ws[0], "2 processes") {
		t.Errorf("warnings %q, want one about the two processes", ws)
	}
}
