package report

import (
	"fmt"
	"html"
	"io"
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
	type lane struct {
		name  string
		boxes []box
	}
	type group struct {
		title string
		lanes []lane
		idle  []box
		span  int64
	}
	var groups []group
	var span int64
	for _, sd := range sides {
		r := sd.Result
		i := MedianStep(r)
		if i < 0 {
			continue
		}
		st := r.Steps[i]
		p := r.Profile
		g := group{title: fmt.Sprintf("%s: %s, %.2f ms (median of the kept steps)", sd.Label, st.Name, float64(st.StepTime())/1e6), span: st.End - st.Start}
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
		host := lane{name: "host thread", boxes: []box{{st.HostStart - t0, st.HostEnd - t0, colHost, "host: the step's CPU side"}}}
		for _, rg := range p.Ranges {
			if rg.End <= st.Start || rg.Start >= st.End || (thread >= 0 && rg.Thread != thread) {
				continue
			}
			name := p.Names.String(rg.Name)
			switch {
			case analysis.DefaultDataPattern.MatchString(name):
				host.boxes = append(host.boxes, box{rg.Start - t0, rg.End - t0, colData, "data-loader wait: " + name})
			case analysis.DefaultSyncProxyPattern.MatchString(name):
				host.boxes = append(host.boxes, box{rg.Start - t0, rg.End - t0, colSync, "sync: " + name})
			}
		}
		for _, a := range p.API {
			if a.End <= st.Start || a.Start >= st.End || (thread >= 0 && a.Thread != thread) {
				continue
			}
			if name := p.Names.String(a.Name); trace.SyncAPI(name) {
				host.boxes = append(host.boxes, box{a.Start - t0, a.End - t0, colSync, "sync call: " + name})
			}
		}
		g.lanes = append(g.lanes, host)
		streams := map[[2]int32][]box{}
		var keys [][2]int32
		var busy []box
		for _, op := range p.GPU {
			if op.End <= st.Start || op.Start >= st.End {
				continue
			}
			name := p.Names.String(op.Name)
			col, kind := colCompute, "kernel"
			switch {
			case op.Kind == trace.Memcpy || op.Kind == trace.Memset:
				col, kind = colCopy, op.Kind.String()
				if op.Kind == trace.Memcpy {
					kind += " " + op.Copy.String()
				}
			case analysis.DefaultCommPattern.MatchString(name):
				col, kind = colComm, "communication"
			}
			k := [2]int32{op.Device, op.Stream}
			if _, ok := streams[k]; !ok {
				keys = append(keys, k)
			}
			b := box{max(op.Start, st.Start) - t0, min(op.End, st.End) - t0, col, fmt.Sprintf("%s: %s (%.3f ms)", kind, name, float64(op.End-op.Start)/1e6)}
			streams[k] = append(streams[k], b)
			busy = append(busy, b)
		}
		slices.SortFunc(keys, func(a, b [2]int32) int {
			if a[0] != b[0] {
				return int(a[0] - b[0])
			}
			return int(a[1] - b[1])
		})
		for _, k := range keys {
			g.lanes = append(g.lanes, lane{name: fmt.Sprintf("GPU %d stream %d", k[0], k[1]), boxes: streams[k]})
		}
		g.idle = idleGaps(busy, g.span, host.boxes[1:])
		groups = append(groups, g)
		span = max(span, g.span)
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
		height += 40 + float64(len(g.lanes))*(laneH+laneGap)
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
		fmt.Fprintf(&b, `<g class="side"><text x="4" y="%.1f" font-weight="bold">%s</text>`+"\n", y+14, xmlText(g.title))
		y += 22
		top := y
		for _, l := range g.lanes {
			fmt.Fprintf(&b, `<g class="lane" data-lane="%s"><text x="4" y="%.1f">%s</text><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#ddd"/>`, xmlText(l.name), y+13, xmlText(l.name), left, y, x(g.span)-left, laneH)
			for _, bx := range l.boxes {
				// Host ranges may start before the step's GPU window
				// or end after it: the picture is of the window.
				bx.start, bx.end = max(bx.start, 0), min(bx.end, g.span)
				if bx.end <= bx.start {
					continue
				}
				fmt.Fprintf(&b, `<rect x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="%s"><title>%s</title></rect>`, x(bx.start), y+1, max(0.5, x(bx.end)-x(bx.start)), laneH-2, bx.color, xmlText(bx.label))
			}
			b.WriteString("</g>\n")
			y += laneH + laneGap
		}
		for _, gap := range g.idle {
			fmt.Fprintf(&b, `<g class="idle"><rect x="%.2f" y="%.1f" width="%.2f" height="%.1f" fill="%s" fill-opacity="0.6"/><text x="%.2f" y="%.1f" font-size="10">%s</text><title>%s</title></g>`+"\n",
				x(gap.start), top+laneH+laneGap, x(gap.end)-x(gap.start), y-top-laneH-laneGap, colIdle, x(gap.start)+2, y+10, xmlText(gap.label), xmlText(gap.label))
		}
		b.WriteString("</g>\n")
		y += 18
	}
	fmt.Fprintf(&b, `<g class="legend" transform="translate(%.0f %.1f)">`, left, y+4)
	for i, l := range []struct{ c, s string }{{colCompute, "compute kernel"}, {colComm, "communication"}, {colCopy, "copy/memset"}, {colData, "data-loader wait"}, {colSync, "sync call"}, {colIdle, "GPU idle"}} {
		fmt.Fprintf(&b, `<rect x="%d" y="0" width="10" height="10" fill="%s"/><text x="%d" y="9">%s</text>`, i*130, l.c, i*130+14, l.s)
	}
	b.WriteString("</g>\n</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// box is an interval of a lane, relative to the step's start.
type box struct {
	start, end int64
	color      string
	label      string
}

// idleGaps are the gaps of at least 2% of the step in which no stream ran,
// with their cause: what the host lane did over most of the gap.
func idleGaps(busy []box, span int64, host []box) []box {
	slices.SortFunc(busy, func(a, b box) int { return int(sign(a.start - b.start)) })
	var out []box
	t := int64(0)
	add := func(s, e int64) {
		if e-s < span/50 || e <= s {
			return
		}
		cause := "host: the next kernel was not launched yet"
		var data, sync int64
		for _, h := range host {
			ov := min(e, h.end) - max(s, h.start)
			if ov <= 0 {
				continue
			}
			if h.color == colData {
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
		out = append(out, box{s, e, colIdle, fmt.Sprintf("GPU idle %.2f ms: %s", float64(e-s)/1e6, cause)})
	}
	for _, b := range busy {
		if b.start > t {
			add(t, b.start)
		}
		t = max(t, b.end)
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
