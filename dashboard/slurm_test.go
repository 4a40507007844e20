package dashboard

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/trace"
)

// slurmDoc is the stored analysis of a 2-node CPU run: rank 0 on node a,
// rank 1 on node b, 8 steps each, aOwn and bOwn ms of own work a step
// then a gloo all-reduce that ends 1 ms after the later rank joins it.
func slurmDoc(t *testing.T, a, b string, aOwn, bOwn float64) []byte {
	t.Helper()
	rank := func(node string, r int, own, other float64) *analysis.Result {
		p := trace.New("trace-"+string(rune('0'+r))+".json", trace.FormatKineto)
		p.Node, p.Rank, p.WorldSize = node, r, 2
		var steps []analysis.Step
		at := int64(0)
		for i := range 8 {
			jit := 0.3 * float64(i%3)
			o := int64((own + jit) * 1e6)
			step := int64((math.Max(own, other) + jit + 1) * 1e6)
			p.Ranges = append(p.Ranges, trace.Range{Start: at + o, End: at + step, Name: p.Names.InternString("gloo:all_reduce")})
			steps = append(steps, analysis.Step{Name: "ProfilerStep#" + string(rune('0'+i)), Start: at, End: at + step, HostStart: at, HostEnd: at + step})
			at += step
		}
		return analysis.FromSteps(p, false, steps, nil)
	}
	doc := report.NewStoredAnalysis([]*analysis.Result{rank(a, 0, aOwn, bOwn), rank(b, 1, bOwn, aOwn)})
	doc.Job = &report.Job{WallSeconds: 3, Slurm: &report.SlurmJob{JobID: "42", Nodes: []string{a, b}, QueueWaitMs: 1500, RunMs: 2500}}
	var buf bytes.Buffer
	if err := doc.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestSlurmRunPage: a Slurm run's page shows its nodes, each node's own
// work against the same node's in the baseline runs before it, and the
// straggler, with node names that come from the job's environment (and
// are hostile) escaped. The same code on both nodes names no straggler.
func TestSlurmRunPage(t *testing.T) {
	a, b := "n1", `n2<img src=x onerror=alert(1)>`
	var runs []baseline.Run
	start := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	add := func(kind string, doc []byte) {
		id := int64(len(runs) + 1)
		runs = append(runs, baseline.Run{ID: id, Workload: "ddp2", Branch: "main", Commit: "c" + string(rune('0'+id)), Created: start.Add(time.Duration(id) * time.Hour),
			Kind: kind, Profiler: "torch", FingerprintHash: "fp", Fingerprint: []byte(`{}`), Version: "test", Analysis: doc})
	}
	for i := range 4 {
		d := 0.4 * float64(i%3)
		add("baseline", slurmDoc(t, a, b, 10+d, 20+d))
	}
	add("candidate", slurmDoc(t, a, b, 10.4, 20.4)) // run 5: the same code
	add("candidate", slurmDoc(t, a, b, 10.4, 70.4)) // run 6: b 50 ms slower
	dir := t.TempDir()
	if _, err := Write(dir, runs, Options{}); err != nil {
		t.Fatal(err)
	}
	same, slow := read(t, dir, "run-5.html"), read(t, dir, "run-6.html")
	for name, page := range map[string]string{"run 5": same, "run 6": slow} {
		if !strings.Contains(page, `<table id="nodes">`) || !strings.Contains(page, `<td><code>`+esc(b)+`</code></td><td>[1]</td>`) ||
			!strings.Contains(page, "Slurm job <code>42</code>") {
			t.Errorf("%s: no nodes table with node b escaped, or no Slurm job:\n%s", name, page)
		}
		if strings.Contains(page, "<img") {
			t.Errorf("%s: the node name is on the page unescaped", name)
		}
	}
	if strings.Contains(same, "slower than its baseline") || !strings.Contains(same, "No node's own work regressed against its baseline") {
		t.Errorf("run 5, the same code: a straggler is named:\n%s", same)
	}
	if !strings.Contains(slow, "Straggler: node "+esc(b)+" is slower than its baseline by 50.") || !strings.Contains(slow, `<span class="regression">regression</span>`) {
		t.Errorf("run 6: node b is not named the straggler, slower than its baseline by 50 ms:\n%s", slow)
	}
	if strings.Contains(read(t, dir, "run-1.html"), "Straggler:") {
		t.Error("run 1, with no baseline before it, names a straggler")
	}
}
