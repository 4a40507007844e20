package report

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/stats"
	"github.com/gpugate/gpugate/trace"
)

// slurmRank is one CPU rank of a 2-node job on node: 8 steps, each own ms
// of its own work then wait ms in a gloo all-reduce.
func slurmRank(node string, rank int, own, wait []float64) *analysis.Result {
	p := trace.New("trace-"+node+".json", trace.FormatKineto)
	p.Node, p.Rank, p.WorldSize = node, rank, 2
	var steps []analysis.Step
	t := int64(0)
	for i := range own {
		o, w := int64(own[i]*1e6), int64(wait[i]*1e6)
		p.Ranges = append(p.Ranges, trace.Range{Start: t + o, End: t + o + w, Name: p.Names.InternString("gloo:all_reduce")})
		steps = append(steps, analysis.Step{Name: "ProfilerStep#" + string(rune('0'+i)), Start: t, End: t + o + w, HostStart: t, HostEnd: t + o + w})
		t += o + w
	}
	return analysis.FromSteps(p, false, steps, nil)
}

// storedRun is a 2-node run (rank 0 on n1, rank 1 on n2) as a later
// comparison reads it back from the store: through the stored analysis
// document, which keeps no host ranges.
func storedRun(t *testing.T, n1Own, n2Own float64) gate.Run {
	t.Helper()
	return storedRunOn(t, "n1", "n2", n1Own, n2Own)
}

// storedRunOn is storedRun with the nodes named a and b.
func storedRunOn(t *testing.T, a, b string, n1Own, n2Own float64) gate.Run {
	t.Helper()
	var o1, o2, w1, w2 []float64
	for i := range 8 {
		jit := 0.3 * float64(i%3) // steps differ a little
		a, b := n1Own+jit, n2Own+jit
		step := math.Max(a, b) + 1 // the all-reduce takes 1 ms once both are in
		o1, o2 = append(o1, a), append(o2, b)
		w1, w2 = append(w1, step-a), append(w2, step-b)
	}
	doc := NewStoredAnalysis([]*analysis.Result{slurmRank(a, 0, o1, w1), slurmRank(b, 1, o2, w2)})
	var buf bytes.Buffer
	if err := doc.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back Analysis
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	return gate.Run(back.Results())
}

// TestStragglerAgainstBaseline: each node's own work is stored with the
// run and judged against the same node's in the baseline. With the same
// code on both nodes, n2 (whose own work is the larger, run after run)
// is the slowest node but never "slower than its baseline"; when n2 does
// 50 ms more work a step, the report says n2 is slower than its baseline
// by about 50 ms, with its interval, and step time's why names it. The
// nodes table lists the nodes in the ranks line's order.
func TestStragglerAgainstBaseline(t *testing.T) {
	var base, same, slow []gate.Run
	for i := range 5 {
		d := 0.4 * float64(i%3) // run-to-run drift
		base = append(base, storedRun(t, 10+d, 20+d))
		same = append(same, storedRun(t, 10+0.4*float64((i+1)%3), 20+0.4*float64((i+1)%3)))
		slow = append(slow, storedRun(t, 10+d, 70+d))
	}
	o := gate.Options{Allowances: map[string]float64{"step_time": 0.5}}
	rep := gate.Compare(base, same, o)
	if rep.Nodes == nil || rep.Nodes.SlowestNode != "n2" {
		t.Fatalf("nodes %+v: want n2 the slowest", rep.Nodes)
	}
	for _, n := range rep.Nodes.PerNode {
		if n.VsBaseline == nil {
			t.Fatalf("node %s: own work not judged against the stored baseline (own work not stored?)", n.Node)
		}
	}
	var txt, md bytes.Buffer
	WriteCompareText(&txt, rep)
	WriteCompareMarkdown(&md, rep)
	if rep.Nodes.Straggler != "" || strings.Contains(txt.String()+md.String(), "slower than its baseline") {
		t.Errorf("the same code on both nodes reports a straggler %q:\n%s", rep.Nodes.Straggler, txt.String())
	}

	rep = gate.Compare(base, slow, o)
	if rep.Nodes.Straggler != "n2" {
		t.Fatalf("n2 50 ms slower: straggler %q, nodes %+v", rep.Nodes.Straggler, rep.Nodes.PerNode)
	}
	var n2 *gate.NodeStat
	for i := range rep.Nodes.PerNode {
		if rep.Nodes.PerNode[i].Node == "n2" {
			n2 = &rep.Nodes.PerNode[i]
		}
	}
	if r := n2.VsBaseline; r.Verdict != stats.Regression || math.Abs(r.Delta-50) > 0.5 || !(r.DeltaLo < 50 && r.DeltaHi > 50) {
		t.Errorf("n2 against its baseline: %+.2f ms (%v to %v), %s; want +50 ms within its interval, a regression", r.Delta, r.DeltaLo, r.DeltaHi, r.Verdict)
	}
	txt.Reset()
	md.Reset()
	WriteCompareText(&txt, rep)
	WriteCompareMarkdown(&md, rep)
	var why string
	for _, m := range rep.Metrics {
		if m.Name == "step_time" {
			why = m.Why
		}
	}
	if !strings.Contains(why, "node n2 is slower than its baseline by 50.") {
		t.Errorf("step time's why does not name n2: %q", why)
	}
	for what, s := range map[string]string{"text": txt.String(), "markdown": md.String()} {
		if !strings.Contains(s, "straggler: node n2 is slower than its baseline by 50.") || !strings.Contains(s, "interval +") {
			t.Errorf("%s report lacks the straggler sentence:\n%s", what, s)
		}
	}
	// The ranks line leads with the straggler, and the nodes table lists
	// the nodes in the ranks line's order.
	line := gate.RanksLine(rep.Ranks)
	tab := md.String()[strings.Index(md.String(), "| node |"):]
	if !strings.HasPrefix(line, "rank 1 on n2 (the straggler, slower than its baseline)") || strings.Index(tab, "`n2`") > strings.Index(tab, "`n1`") {
		t.Errorf("ranks line %q and nodes table disagree on the order:\n%s", line, tab)
	}
}

// TestStragglerHostileNode: a node's name comes from the job's
// environment (or a stored document) and is hostile; the straggler
// sentence carries it into the nodes line, step time's why and the ranks
// line, each escaped for its output.
func TestStragglerHostileNode(t *testing.T) {
	bad := "n2</details>\n::error::x @admin `x` \x1b[31m<img src=x>"
	var base, slow []gate.Run
	for i := range 5 {
		d := 0.4 * float64(i%3)
		base = append(base, storedRunOn(t, "n1", bad, 10+d, 20+d))
		slow = append(slow, storedRunOn(t, "n1", bad, 10+d, 70+d))
	}
	rep := gate.Compare(base, slow, gate.Options{Allowances: map[string]float64{"step_time": 0.5}})
	if rep.Nodes == nil || rep.Nodes.Straggler != bad {
		t.Fatalf("straggler %q, want the hostile node", rep.Nodes.Straggler)
	}
	var txt, md, cm bytes.Buffer
	WriteCompareText(&txt, rep)
	WriteCompareMarkdown(&md, SafeReport(rep))
	if err := WriteComment(&cm, rep, CommentInfo{Marker: "<!-- m -->", Workload: "w"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(txt.String(), "\x1b") || strings.Contains(txt.String(), "\n::error") {
		t.Errorf("text report carries the node's escape or workflow command raw:\n%s", txt.String())
	}
	// Inside a code span (the nodes table's cells) a name is literal:
	// no tag, mention or command; outside one it must be escaped.
	spans := regexp.MustCompile("``[^\n]*?``")
	raw := regexp.MustCompile(`[^\\\n](</details|<img)`) // a tag inside a line (gpugate's own start lines), not escaped by a backslash
	for what, s := range map[string]string{"markdown": md.String(), "comment": cm.String()} {
		s = spans.ReplaceAllString(s, "")
		if raw.MatchString(s) || strings.Contains(s, "@admin") || strings.Contains(s, "\x1b") {
			t.Errorf("%s carries the node's name unescaped (%q, %v, %v)", what, raw.FindString(s), strings.Contains(s, "@admin"), strings.Contains(s, "\x1b"))
		}
		if !strings.Contains(s, "slower than its baseline") {
			t.Errorf("%s does not name the straggler:\n%s", what, s)
		}
	}
}
