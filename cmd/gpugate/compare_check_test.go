package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// analyzeDoc writes an analyze JSON document of one CPU profile whose
// steps last the given ms, back to back from start ns, with the given
// sync calls per step (cycled).
func analyzeDoc(t *testing.T, dir, name string, start int64, ms []float64, syncs []int) string {
	t.Helper()
	var steps []string
	at := start
	for i, d := range ms {
		end := at + int64(d*1e6)
		steps = append(steps, fmt.Sprintf(`{"name":"ProfilerStep#%d","start_ns":%d,"end_ns":%d,"host_start_ns":%d,"host_end_ns":%d,"data_wait_ns":0,"sync_calls":%d,"sync_time_ns":0}`,
			i, at, end, at, end, syncs[i%len(syncs)]))
		at = end
	}
	doc := fmt.Sprintf(`{"profiles":[{"path":%q,"format":"kineto","has_gpu":false,"left_out":[],"steps":[%s]}]}`, name, strings.Join(steps, ","))
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func flat(n int, ms float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = ms + float64(i%3)*0.2
	}
	return out
}

// An empty side, a profile without steps and an inverted or negative step
// are trouble (exit 2) with a message naming them, never inconclusive
// (exit 3, which on-inconclusive: pass turns green) or a verdict.
func TestCompareBadSides(t *testing.T) {
	dir := t.TempDir()
	base := analyzeDoc(t, dir, "base.json", 1e9, flat(20, 100), []int{0})
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(doc), 0o644)
		return p
	}
	inverted := analyzeDoc(t, dir, "inverted.json", 1e9, append(flat(5, 100), -3), []int{0})
	negative := analyzeDoc(t, dir, "negative.json", -50e6, flat(5, 100), []int{0})
	for _, c := range []struct {
		name, head, want string
	}{
		{"no profiles", write("empty.json", `{"profiles": []}`), "compare: candidate: no profiles: nothing to compare"},
		{"a profile without steps", write("nosteps.json", `{"profiles":[{"path":"x.json","format":"kineto","has_gpu":false,"left_out":[],"steps":[]}]}`),
			`compare: candidate: "x.json": no steps: nothing to compare`},
		{"a step that ends before it starts", inverted, `compare: candidate: "inverted.json": step 6 ("ProfilerStep#5"): ends before it starts`},
		{"negative times", negative, `compare: candidate: "negative.json": step 1 ("ProfilerStep#0"): negative time`},
	} {
		for _, args := range [][]string{{"compare", base, c.head}, {"compare", "-runs", "-base", base, "-base", base, "-base", base, "-head", c.head}} {
			code, out, errOut := run(t, args...)
			if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
				t.Errorf("%s (%s): exit %d, stdout %q, stderr %q; want 2 and %q", c.name, strings.Join(args[:2], " "), code, out, errOut, c.want)
			}
		}
		// The bad side as the baseline: the same, naming the baseline.
		code, _, errOut := run(t, "compare", c.head, base)
		if want := strings.Replace(c.want, "candidate", "baseline", 1); code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("%s as the baseline: exit %d, stderr %q; want 2 and %q", c.name, code, errOut, want)
		}
	}
}

// A new sync in every 3rd step (0 → 0.33 a step), through compare -runs:
// a regression (exit 1) with a new host-sync finding.
func TestCompareNewSyncInSomeSteps(t *testing.T) {
	dir := t.TempDir()
	var args []string
	for i := range 3 {
		args = append(args, "-base", analyzeDoc(t, dir, fmt.Sprintf("base%d.json", i), 1e9, flat(30, 100+float64(i)), []int{0}))
	}
	head := analyzeDoc(t, dir, "head.json", 1e9, flat(30, 101), []int{0, 0, 1})
	code, out, errOut := run(t, append(append([]string{"compare", "-runs", "-format", "json"}, args...), "-head", head)...)
	if code != 1 || !strings.Contains(out, `"id": "host-sync"`) || !strings.Contains(out, "blocking host syncs in 10 of 30 steps (0.33 per step)") {
		t.Errorf("exit %d (%s); want 1 and a host-sync finding for 10 of 30 steps\n%s", code, errOut, out)
	}
}
