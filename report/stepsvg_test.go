package report

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"

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
