package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/trace"
)

// lanes parses an SVG document (it must be well-formed XML) and returns
// the data-lane of each lane, and the texts of the idle gaps.
func lanes(t *testing.T, svg []byte) (names, idle []string) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	inIdle := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("step.svg is not well-formed XML: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			for _, a := range e.Attr {
				if a.Name.Local == "data-lane" {
					names = append(names, a.Value)
				}
				if a.Name.Local == "class" && a.Value == "idle" {
					inIdle = 1
				}
			}
			if inIdle > 0 && e.Name.Local == "text" {
				inIdle = 2
			}
		case xml.CharData:
			if inIdle == 2 {
				idle = append(idle, string(e))
				inIdle = 0
			}
		}
	}
	return names, idle
}

// The V100 ResNet-50 num_workers=4 run against num_workers=0: both
// median steps on one axis, one host lane and one lane per stream (the
// traces' GPU work is all on stream 7, counted in Python), and the
// num_workers=0 step's idle gap put down to the data loader.
func TestStepSVG(t *testing.T) {
	base := run(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_4/worker0.1623213129365.pt.trace.json.gz")[0]
	cand := run(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_0/worker0.1623143089861.pt.trace.json.gz")[0]
	var b bytes.Buffer
	if err := StepSVG(&b, []StepSide{{"baseline", base}, {"candidate", cand}}); err != nil {
		t.Fatal(err)
	}
	names, idle := lanes(t, b.Bytes())
	if strings.Join(names, ",") != "host thread,GPU 0 stream 7,host thread,GPU 0 stream 7" {
		t.Errorf("lanes %q, want a host lane and stream 7 for each side", names)
	}
	data := 0
	for _, s := range idle {
		if strings.HasSuffix(s, ": data loader") {
			data++
		}
	}
	if data == 0 {
		t.Errorf("no idle gap put down to the data loader: %q", idle)
	}
	for _, want := range []string{"data-loader wait: enumerate(DataLoader)", "baseline: ProfilerStep#", "candidate: ProfilerStep#"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("step.svg lacks %q", want)
		}
	}
	t.Logf("idle gaps: %q", idle)
}

// One lane per stream on a multi-stream trace: rank 0 of the DLRM job ran
// on streams 7, 22, 24 and 84 in its one step (Python, plain json).
func TestStepSVGStreams(t *testing.T) {
	r := run(t, "kineto/param-dlrm-8rank-v100/worker0_step_12.1694128201545.pt.trace.json.gz")[0]
	if MedianStep(r) < 0 {
		t.Skip("no kept step in a one-step trace")
	}
	var b bytes.Buffer
	StepSVG(&b, []StepSide{{"run", r}})
	names, _ := lanes(t, b.Bytes())
	if strings.Join(names, ",") != "host thread,GPU 0 stream 7,GPU 0 stream 22,GPU 0 stream 24,GPU 0 stream 84" {
		t.Errorf("lanes %q", names)
	}
}

// Hostile kernel names stay text in well-formed XML.
func TestStepSVGHostile(t *testing.T) {
	r := run(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_4/worker0.1623213129365.pt.trace.json.gz")[0]
	p := r.Profile
	for _, s := range []string{"</title><script>alert(1)</script>", "\x1b[31mred\x00\x07", "a]]>b&c\"d'e", "\xff\xfe"} {
		i := MedianStep(r)
		for j := range p.GPU {
			if p.GPU[j].Start >= r.Steps[i].Start {
				p.GPU[j].Name = p.Names.InternString(s)
				break
			}
		}
		var b bytes.Buffer
		StepSVG(&b, []StepSide{{s, r}})
		lanes(t, b.Bytes())
		if strings.Contains(b.String(), "<script") || strings.Contains(b.String(), "\x1b") {
			t.Errorf("%q reached the SVG as markup or a control character", s)
		}
	}
	_ = trace.Kernel
}

// The comment points at step.svg when the artifact holds it, and only then.
func TestCommentStepPicture(t *testing.T) {
	base := run(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	rep := gate.Compare([]gate.Run{base}, []gate.Run{base}, gate.Options{})
	for _, pic := range []bool{false, true} {
		var b bytes.Buffer
		if err := WriteComment(&b, rep, CommentInfo{Marker: "<!-- m -->", Workload: "w", ArtifactName: "gpugate-w", ArtifactURL: "https://github.example/a/1", StepPicture: pic}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "Its `step.svg` pictures the median step"); got != pic {
			t.Errorf("StepPicture %v: comment mentions step.svg: %v", pic, got)
		}
	}
}

// merge bounds every timeline, however its boxes alternate and however
// long its step: the host lane too (300 .item() calls make 600 host
// boxes), kinds alternating on a stream (copy, kernel, copy, …), and a
// span near the int64 limit (the doubling gap must not overflow).
func TestStepMergeBounds(t *testing.T) {
	for _, span := range []int64{10_000_000, 4_600_000_000_000_000_000} {
		g := &StepTimeline{SpanNS: span}
		host := StepLane{Name: "host thread", Boxes: []StepBox{{0, span, "host", g.name(""), 0}}}
		gpu := StepLane{Name: "GPU 0 stream 7"}
		step := span / 5000
		for i := int64(0); i < 2000; i++ {
			host.Boxes = append(host.Boxes, StepBox{(1999 - i) * step, (1999-i)*step + step/2, "sync", g.name(fmt.Sprint("sync ", i%7)), 0})
			kind := []string{"compute", "copy"}[i%2]
			gpu.Boxes = append(gpu.Boxes, StepBox{i * step, i*step + step/2, kind, g.name(fmt.Sprint(kind, ": op ", i)), 0})
		}
		g.Lanes = []StepLane{host, gpu}
		done := make(chan struct{})
		go func() { g.merge(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("span %d: merge did not end", span)
		}
		n := 0
		for _, l := range g.Lanes {
			n += len(l.Boxes)
			for _, b := range l.Boxes {
				if b.Name < 0 || b.Name >= len(g.Names) {
					t.Fatalf("span %d: box names %d of %d names", span, b.Name, len(g.Names))
				}
			}
		}
		if n > MaxStepBoxes || g.Lanes[0].Boxes[0].Kind != "host" || g.Merged+g.Dropped != 4001-n {
			t.Errorf("span %d: %d boxes (want ≤ %d, the host box first: %v), merged %d + dropped %d, want %d", span, n, MaxStepBoxes, g.Lanes[0].Boxes[0], g.Merged, g.Dropped, 4001-n)
		}
		if len(g.Names) > n+1 {
			t.Errorf("span %d: %d names kept for %d boxes", span, len(g.Names), n)
		}
		var b bytes.Buffer
		RenderStepSVG(&b, []*StepTimeline{g})
		lanes(t, b.Bytes())
	}
}

// A stored timeline is drawn within bounds: a forged span of 9e18 ns is
// no step (not drawn, so the other side keeps its scale), and millions of
// boxes draw at most 2×MaxStepBoxes.
func TestRenderStoredBounds(t *testing.T) {
	real := &StepTimeline{Label: "candidate", SpanNS: 10_000_000, Names: []string{"k"}, Lanes: []StepLane{{Name: "GPU 0 stream 7", Boxes: []StepBox{{0, 5_000_000, "compute", 0, 0}}}}}
	forged := &StepTimeline{Label: "baseline", SpanNS: 9_000_000_000_000_000_000, Names: []string{"k"}, Lanes: []StepLane{{Name: "x", Boxes: []StepBox{{0, 1, "compute", 0, 0}}}}}
	var b bytes.Buffer
	RenderStepSVG(&b, []*StepTimeline{forged, real})
	if strings.Contains(b.String(), ">baseline: ") || !strings.Contains(b.String(), "(0 to 10.00 ms)") {
		t.Errorf("a forged 9e18 ns step was drawn, or set the axis:\n%.600s", b.String())
	}
	many := &StepTimeline{SpanNS: 10_000_000, Names: []string{"k"}, Lanes: []StepLane{{Name: "GPU 0 stream 7"}}}
	for i := range int64(100_000) {
		many.Lanes[0].Boxes = append(many.Lanes[0].Boxes, StepBox{i * 100, i*100 + 50, "compute", 0, 0})
	}
	b.Reset()
	RenderStepSVG(&b, []*StepTimeline{many})
	if n := strings.Count(b.String(), "<title>"); n > 2*MaxStepBoxes+10 || !strings.Contains(b.String(), "box(es) past") {
		t.Errorf("100,000 stored boxes: %d drawn", n)
	}
}
