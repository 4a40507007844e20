package report

import (
	"cmp"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/trace"
)

// StepSide is one side of a step picture: a label ("baseline",
// "candidate") and the analysis whose median step it draws.
type StepSide struct {
	Label  string
	Result *analysis.Result
}

// MedianStep is the index in r.Steps of the step whose time is the
// median of the kept steps (analysis.Trim; the lower median for an even
// count); -1 when there is none.
func MedianStep(r *analysis.Result) int {
	lo, hi := analysis.Trim(len(r.Steps))
	if hi <= lo {
		return -1
	}
	idx := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		idx = append(idx, i)
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return int(sign(r.Steps[a].StepTime() - r.Steps[b].StepTime()))
	})
	return idx[(len(idx)-1)/2]
}

func sign(v int64) int64 {
	switch {
	case v < 0:
		return -1
	case v > 0:
		return 1
	}
	return 0
}

// Step picture colours: kernels by kind, host ranges by cause.
const (
	colCompute = "#1f77b4"
	colComm    = "#9467bd"
	colCopy    = "#2ca02c"
	colData    = "#d62728"
	colSync    = "#ff7f0e"
	colHost    = "#c7c7c7"
	colIdle    = "#fbe3d6"
)

// StepTimeline is the layout of one median step: what StepSVG draws for
// a side. gpugate run stores the candidate's in the run's analysis
// document (Analysis.MedianStep), so that the dashboard and a later
// comparison can draw a stored run's step; such a document is read from
// a store anyone may have imported into, so RenderStepSVG trusts none of
// it: kinds pick colours from a fixed table, names are escaped, numbers
// are clamped to the step.
type StepTimeline struct {
	Title string `json:"title"` // e.g. "ProfilerStep#7, 12.30 ms (median of the kept steps)"
	// Label names the side when drawn ("baseline", "candidate"); set by
	// whoever draws it, not stored.
	Label  string `json:"-"`
	SpanNS int64  `json:"span_ns"` // the step's GPU window: every box is within [0, span_ns]
	// Names are the boxes' texts, each once (a box refers to one by
	// index): kernel names repeat hundreds of times in a step.
	Names []string   `json:"names"`
	Lanes []StepLane `json:"lanes"` // the host thread first, then one per GPU stream
	Idle  []StepBox  `json:"idle"`  // the GPU's idle gaps (kind "idle"), named by their cause
	// Merged counts boxes drawn together with a neighbour of their kind
	// (MaxStepBoxes): 0 when every box is its own.
	Merged int `json:"merged,omitempty"`
	// Dropped counts the short boxes left out where kinds alternated too
	// often on a lane for merging to bound the timeline.
	Dropped int `json:"dropped,omitempty"`

	idx map[string]int // Names' indexes, while laid out
}

// StepLane is one lane of a StepTimeline.
type StepLane struct {
	Name  string    `json:"name"`
	Boxes []StepBox `json:"boxes"`
}

// StepBox is an interval of a lane, in ns from the step's start, of a
// kind: host, data, sync, compute, comm, copy or idle. Name indexes the
// timeline's Names; Count, when above 1, is how many operations of the
// kind it draws as one (StepTimeline.merge).
type StepBox struct {
	Start int64  `json:"s"`
	End   int64  `json:"e"`
	Kind  string `json:"k"`
	Name  int    `json:"n"`
	Count int    `json:"c,omitempty"`
}

// maxStepName bounds a stored name, in runes (C++ kernel names run to
// thousands).
const maxStepName = 160

// name is the index of s in g.Names, added when new.
func (g *StepTimeline) name(s string) int {
	if r := []rune(s); len(r) > maxStepName {
		s = string(r[:maxStepName-1]) + "…"
	}
	if g.idx == nil {
		g.idx = map[string]int{}
	}
	if i, ok := g.idx[s]; ok {
		return i
	}
	g.Names = append(g.Names, s)
	g.idx[s] = len(g.Names) - 1
	return len(g.Names) - 1
}

// label is what a box's tooltip says.
func (g *StepTimeline) label(b StepBox) string {
	n := ""
	if b.Name >= 0 && b.Name < len(g.Names) {
		n = g.Names[b.Name]
	}
	ms := float64(b.End-b.Start) / 1e6
	switch {
	case b.Count > 1:
		return fmt.Sprintf("%d %s operations drawn as one, %.3f ms in all", b.Count, b.Kind, ms)
	case b.Kind == "host":
		return "host: the step's CPU side"
	case b.Kind == "data":
		return "data-loader wait: " + n
	case b.Kind == "sync":
		return "sync: " + n
	case b.Kind == "idle":
		return fmt.Sprintf("GPU idle %.2f ms: %s", ms, n)
	}
	return fmt.Sprintf("%s (%.3f ms)", n, ms)
}

// Box kinds and their colours.
var stepColors = map[string]string{
	"host": colHost, "data": colData, "sync": colSync,
	"compute": colCompute, "comm": colComm, "copy": colCopy, "idle": colIdle,
}

// Bounds of a picture: lanes drawn, and boxes kept per timeline (above
// it, neighbouring boxes of a kind on a lane are drawn as one, as they
// would share a pixel: 810 px across a step).
const (
	// maxStepSpan is the longest step drawn: 3 hours.
	maxStepSpan  = int64(3 * 3600 * 1e9)
	MaxStepLanes = 64
	MaxStepBoxes = 600
)

// StepSVG writes a picture of the median step of each side as a
// standalone SVG document: every side on one time axis (from its step's
// start), a host lane (the step's host thread: data-loader waits and
// synchronizing calls marked) and one lane per GPU stream that ran in
// the step (kernels coloured by kind: compute, communication, copies),
// with the GPU's idle gaps shaded and labelled with their cause: the
// data loader, a synchronizing call, or the host (launching late).
//
// Names come from the trace and are hostile: each is made visible text
// (escape.Terminal, so that no control character reaches an XML parser)
// and then XML-escaped; file names are never built from them.
func StepSVG(w io.Writer, sides []StepSide) error {
	var tls []*StepTimeline
	for _, sd := range sides {
		if tl := StepLayout(sd.Label, sd.Result); tl != nil {
			tls = append(tls, tl)
		}
	}
	return RenderStepSVG(w, tls)
}

// StepLayout lays out the median step of r (MedianStep) under label; nil
// when r has no step or no profile.
func StepLayout(label string, r *analysis.Result) *StepTimeline {
	i := MedianStep(r)
	if i < 0 || r.Profile == nil {
		return nil
	}
	st := r.Steps[i]
	p := r.Profile
	g := &StepTimeline{Label: label, Title: fmt.Sprintf("%s, %.2f ms (median of the kept steps)", st.Name, float64(st.StepTime())/1e6), SpanNS: st.End - st.Start}
	t0 := st.Start
	// The host lane is the thread that ran the step's marker, or
	// every thread when steps were inferred.
	thread := int64(-1)
	for _, rg := range p.Ranges {
		if rg.Start == st.HostStart && analysis.DefaultStepPattern.MatchString(p.Names.String(rg.Name)) {
			thread = rg.Thread
			break
		}
	}
	host := StepLane{Name: "host thread", Boxes: []StepBox{{st.HostStart - t0, st.HostEnd - t0, "host", g.name(""), 0}}}
	for _, rg := range p.Ranges {
		if rg.End <= st.Start || rg.Start >= st.End || (thread >= 0 && rg.Thread != thread) {
			continue
		}
		name := p.Names.String(rg.Name)
		switch {
		case analysis.DefaultDataPattern.MatchString(name):
			host.Boxes = append(host.Boxes, StepBox{rg.Start - t0, rg.End - t0, "data", g.name(name), 0})
		case analysis.DefaultSyncProxyPattern.MatchString(name):
			host.Boxes = append(host.Boxes, StepBox{rg.Start - t0, rg.End - t0, "sync", g.name(name), 0})
		}
	}
	for _, a := range p.API {
		if a.End <= st.Start || a.Start >= st.End || (thread >= 0 && a.Thread != thread) {
			continue
		}
		if name := p.Names.String(a.Name); trace.SyncAPI(name) {
			host.Boxes = append(host.Boxes, StepBox{a.Start - t0, a.End - t0, "sync", g.name(name), 0})
		}
	}
	g.Lanes = append(g.Lanes, host)
	streams := map[[2]int32][]StepBox{}
	var keys [][2]int32
	var busy []StepBox
	for _, op := range p.GPU {
		if op.End <= st.Start || op.Start >= st.End {
			continue
		}
		name := p.Names.String(op.Name)
		k, kind := "compute", "kernel"
		switch {
		case op.Kind == trace.Memcpy || op.Kind == trace.Memset:
			k, kind = "copy", op.Kind.String()
			if op.Kind == trace.Memcpy {
				kind += " " + op.Copy.String()
			}
		case analysis.DefaultCommPattern.MatchString(name):
			k, kind = "comm", "communication"
		}
		key := [2]int32{op.Device, op.Stream}
		if _, ok := streams[key]; !ok {
			keys = append(keys, key)
		}
		b := StepBox{max(op.Start, st.Start) - t0, min(op.End, st.End) - t0, k, g.name(kind + ": " + name), 0}
		streams[key] = append(streams[key], b)
		busy = append(busy, b)
	}
	slices.SortFunc(keys, func(a, b [2]int32) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, k := range keys {
		g.Lanes = append(g.Lanes, StepLane{Name: fmt.Sprintf("GPU %d stream %d", k[0], k[1]), Boxes: streams[k]})
	}
	g.Idle = g.idleGaps(busy, host.Boxes[1:])
	g.merge()
	return g
}

// merge bounds the timeline to MaxStepBoxes boxes. First it draws
// neighbouring boxes of a kind on a lane as one (the host lane's own box
// aside), those within 1/1000 of the step of each other, then ever wider
// up to the whole step; where kinds alternate too often for that, it keeps
// each lane's longest boxes and counts the rest in Dropped. Names no box
// uses any more are dropped.
func (g *StepTimeline) merge() {
	total := func() int {
		n := len(g.Idle)
		for _, l := range g.Lanes {
			n += len(l.Boxes)
		}
		return n
	}
	if total() <= MaxStepBoxes {
		return
	}
	if len(g.Lanes) > 0 && len(g.Lanes[0].Boxes) > 1 {
		rest := g.Lanes[0].Boxes[1:]
		slices.SortStableFunc(rest, func(a, b StepBox) int { return cmp.Compare(a.Start, b.Start) })
	}
	span := max(g.SpanNS, 1)
	for gap := max(span/1000, 1); total() > MaxStepBoxes; gap *= 2 {
		for li := range g.Lanes {
			l := &g.Lanes[li]
			first := 0
			if li == 0 {
				first = 1 // the host lane's own box spans the others
			}
			out := slices.Clone(l.Boxes[:min(first, len(l.Boxes))])
			for _, b := range l.Boxes[min(first, len(l.Boxes)):] {
				if k := len(out) - 1; k >= first && out[k].Kind == b.Kind && b.Start-out[k].End <= gap {
					out[k].End = max(out[k].End, b.End)
					out[k].Count = max(out[k].Count, 1) + max(b.Count, 1)
					g.Merged++
					continue
				}
				out = append(out, b)
			}
			l.Boxes = out
		}
		if gap > span || gap > math.MaxInt64/4 {
			break
		}
	}
	if total() > MaxStepBoxes {
		// Kinds alternate on some lane: keep the longest boxes of each
		// lane, each lane its share.
		share := max(1, (MaxStepBoxes-len(g.Idle))/max(1, len(g.Lanes)))
		for li := range g.Lanes {
			l := &g.Lanes[li]
			if len(l.Boxes) <= share {
				continue
			}
			idx := make([]int, len(l.Boxes))
			for i := range idx {
				idx[i] = i
			}
			slices.SortStableFunc(idx, func(a, b int) int {
				return cmp.Compare(l.Boxes[b].End-l.Boxes[b].Start, l.Boxes[a].End-l.Boxes[a].Start)
			})
			keep := idx[:share]
			if li == 0 && !slices.Contains(keep, 0) {
				keep[len(keep)-1] = 0
			}
			slices.Sort(keep)
			var out []StepBox
			for _, i := range keep {
				out = append(out, l.Boxes[i])
			}
			g.Dropped += len(l.Boxes) - len(out)
			l.Boxes = out
		}
	}
	// Drop the names no box uses any more.
	used := make([]bool, len(g.Names))
	mark := func(bs []StepBox) {
		for _, b := range bs {
			if b.Name >= 0 && b.Name < len(used) {
				used[b.Name] = true
			}
		}
	}
	for _, l := range g.Lanes {
		mark(l.Boxes)
	}
	mark(g.Idle)
	remap := make([]int, len(g.Names))
	var names []string
	for i, u := range used {
		remap[i] = len(names)
		if u {
			names = append(names, g.Names[i])
		}
	}
	fix := func(bs []StepBox) {
		for i := range bs {
			if bs[i].Name >= 0 && bs[i].Name < len(remap) {
				bs[i].Name = remap[bs[i].Name]
			}
		}
	}
	for li := range g.Lanes {
		fix(g.Lanes[li].Boxes)
	}
	fix(g.Idle)
	g.Names, g.idx = names, nil
}

// RenderStepSVG draws timelines (StepLayout, or read back from a stored
// document) as one SVG on one time axis. Nothing in them is trusted: a
// box of an unknown kind or outside its step is not drawn, lanes past
// MaxStepLanes are not drawn (the picture says so), and every name is
// escaped (xmlText).
func RenderStepSVG(w io.Writer, timelines []*StepTimeline) error {
	var groups []*StepTimeline
	var span int64
	for _, g := range timelines {
		// A step longer than maxStepSpan is no step: a stored timeline
		// forged so would squash the other side's to nothing.
		if g == nil || g.SpanNS <= 0 || g.SpanNS > maxStepSpan || len(g.Lanes) == 0 {
			continue
		}
		groups = append(groups, g)
		span = max(span, g.SpanNS)
	}
	const (
		width   = 960.0
		left    = 130.0
		right   = 940.0
		laneH   = 18.0
		laneGap = 4.0
	)
	height := 30.0
	for _, g := range groups {
		height += 40 + float64(min(len(g.Lanes), MaxStepLanes))*(laneH+laneGap)
		height += 16 // a note, when there is one
	}
	height += 30
	x := func(t int64) float64 {
		if span <= 0 {
			return left
		}
		return left + float64(t)/float64(span)*(right-left)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="step" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<text x="%.0f" y="16" font-weight="bold">One median step per side, on one time axis (0 to %.2f ms)</text>`+"\n", left, float64(span)/1e6)
	y := 30.0
	for _, g := range groups {
		fmt.Fprintf(&b, `<g class="side"><text x="4" y="%.1f" font-weight="bold">%s</text>`+"\n", y+14, xmlText(strings.TrimPrefix(g.Label+": ", ": ")+g.Title))
		y += 22
		top := y
		drawn, skipped := 0, 0 // boxes: a stored timeline may hold millions
		for _, l := range g.Lanes[:min(len(g.Lanes), MaxStepLanes)] {
			fmt.Fprintf(&b, `<g class="lane" data-lane="%s"><text x="4" y="%.1f">%s</text><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#ddd"/>`, xmlText(l.Name), y+13, xmlText(l.Name), left, y, x(g.SpanNS)-left, laneH)
			for _, bx := range l.Boxes {
				col, ok := stepColors[bx.Kind]
				// Host ranges may start before the step's GPU window
				// or end after it: the picture is of the window.
				bx.Start, bx.End = max(bx.Start, 0), min(bx.End, g.SpanNS)
				if !ok || bx.Kind == "idle" || bx.End <= bx.Start {
					continue
				}
				if drawn >= 2*MaxStepBoxes {
					skipped++
					continue
				}
				drawn++
				fmt.Fprintf(&b, `<rect x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="%s"><title>%s</title></rect>`, x(bx.Start), y+1, max(0.5, x(bx.End)-x(bx.Start)), laneH-2, col, xmlText(g.label(bx)))
			}
			b.WriteString("</g>\n")
			y += laneH + laneGap
		}
		for i, gap := range g.Idle {
			gap.Start, gap.End = max(gap.Start, 0), min(gap.End, g.SpanNS)
			if gap.End <= gap.Start || len(g.Lanes) < 2 || gap.Kind != "idle" {
				continue
			}
			if i >= MaxStepBoxes {
				skipped++
				continue
			}
			fmt.Fprintf(&b, `<g class="idle"><rect x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="%s" fill-opacity="0.6"/><text x="%.2f" y="%.1f" font-size="10">%s</text><title>%s</title></g>`+"\n",
				x(gap.Start), top+laneH+laneGap, x(gap.End)-x(gap.Start), y-top-laneH-laneGap, colIdle, x(gap.Start)+2, y+10, xmlText(g.label(gap)), xmlText(g.label(gap)))
		}
		var notes []string
		if n := len(g.Lanes) - MaxStepLanes; n > 0 {
			notes = append(notes, fmt.Sprintf("%d more lane(s) not drawn", n))
		}
		if g.Merged > 0 {
			notes = append(notes, fmt.Sprintf("%d operation(s) drawn together with a neighbour of their kind", g.Merged))
		}
		if g.Dropped > 0 {
			notes = append(notes, fmt.Sprintf("%d short operation(s) not drawn", g.Dropped))
		}
		if skipped > 0 {
			notes = append(notes, fmt.Sprintf("%d box(es) past %d not drawn", skipped, 2*MaxStepBoxes))
		}
		if len(notes) > 0 {
			fmt.Fprintf(&b, `<text x="4" y="%.1f" font-size="10">%s</text>`+"\n", y+24, xmlText(strings.Join(notes, "; ")))
		}
		y += 16
		b.WriteString("</g>\n")
		y += 18
	}
	fmt.Fprintf(&b, `<g class="legend" transform="translate(%.0f %.1f)">`, left, y+4)
	legend := []struct{ c, s string }{{colCompute, "compute kernel"}, {colComm, "communication"}, {colCopy, "copy/memset"}, {colData, "data-loader wait"}, {colSync, "sync call"}, {colIdle, "GPU idle"}}
	if !slices.ContainsFunc(groups, func(g *StepTimeline) bool { return len(g.Lanes) > 1 }) {
		// The host thread alone (a CPU run): no GPU, so no GPU idle, and
		// no kernels or copies either.
		legend = []struct{ c, s string }{{colData, "data-loader wait"}, {colSync, "sync call"}}
	}
	for i, l := range legend {
		fmt.Fprintf(&b, `<rect x="%d" y="0" width="10" height="10" fill="%s"/><text x="%d" y="9">%s</text>`, i*130, l.c, i*130+14, l.s)
	}
	b.WriteString("</g>\n</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// idleGaps are the gaps of at least 2% of the step in which no stream ran,
// with their cause: what the host lane did over most of the gap.
func (g *StepTimeline) idleGaps(busy []StepBox, host []StepBox) []StepBox {
	span := g.SpanNS
	slices.SortFunc(busy, func(a, b StepBox) int { return int(sign(a.Start - b.Start)) })
	var out []StepBox
	t := int64(0)
	add := func(s, e int64) {
		if e-s < span/50 || e <= s {
			return
		}
		cause := "host: the next kernel was not launched yet"
		var data, sync int64
		for _, h := range host {
			ov := min(e, h.End) - max(s, h.Start)
			if ov <= 0 {
				continue
			}
			if h.Kind == "data" {
				data += ov
			} else {
				sync += ov
			}
		}
		switch {
		case data*2 >= e-s:
			cause = "data loader"
		case sync*2 >= e-s:
			cause = "sync call"
		}
		out = append(out, StepBox{s, e, "idle", g.name(cause), 0})
	}
	for _, b := range busy {
		if b.Start > t {
			add(t, b.Start)
		}
		t = max(t, b.End)
	}
	add(t, span)
	return out
}

// xmlText is s as XML character data: visible (no control character,
// which XML 1.0 forbids, and no invalid UTF-8) and escaped.
func xmlText(s string) string {
	s = escape.Terminal(s)
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == 0xFFFE || r == 0xFFFF {
			return '?'
		}
		return r
	}, s)
	return html.EscapeString(s)
}
