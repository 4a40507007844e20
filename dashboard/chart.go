package dashboard

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/stats"
)

// Chart is one metric over a workload's runs. Coordinates are SVG user
// units, computed here so that the template only places them.
type Chart struct {
	Metric analysis.Metric
	ID     string
	W, H   float64
	// Plot area.
	Left, Top, Right, Bottom float64
	Series                   []*Series
	Changes                  []*ChangeMark
	YTicks                   []Tick
	XTicks                   []Tick
}

// Tick is an axis label.
type Tick struct {
	Pos   float64
	Label string
	Value float64
}

// Series is the runs of one kind, branch and fingerprint: a history never
// joins two machines with a line.
type Series struct {
	Kind        string // "baseline" or "candidate"
	Branch      string
	Fingerprint string
	Color       string
	Points      []*Point
	// Line is the polyline through the points (baseline runs only).
	Line string
}

// Point is one run's value.
type Point struct {
	Run   *Run
	X, Y  float64
	Value float64
	Label string
}

// ChangeMark is a change point of a baseline series: the first run after
// the shift, and the run before it.
type ChangeMark struct {
	X           float64
	Before, Run *Run
	Change      stats.Change
	Fingerprint string
	Branch      string // the series' branch
	Label       string
}

// palette colours the fingerprints (machines) of a chart; it holds as
// many colours as a history usually has machines and then repeats.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"}

// newChart charts metric m over w's runs; nil when no run has it.
func newChart(w *Workload, m analysis.Metric, co stats.ChangeOptions) *Chart {
	c := &Chart{Metric: m, ID: "chart-" + m.Name, W: 760, H: 260, Left: 70, Top: 20, Right: 740, Bottom: 210}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range w.Runs {
		if v, ok := r.Values[m.Name]; ok {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if math.IsInf(lo, 1) {
		return nil
	}
	lo, hi, ticks := axis(lo, hi, fromZero(m))
	n := float64(len(w.Runs))
	x := func(i int) float64 { return c.Left + (float64(i)+0.5)*(c.Right-c.Left)/n }
	y := func(v float64) float64 { return c.Bottom - (v-lo)/(hi-lo)*(c.Bottom-c.Top) }
	for _, t := range ticks {
		c.YTicks = append(c.YTicks, Tick{Pos: y(t.Value), Label: t.Label, Value: t.Value})
	}
	step := max(1, len(w.Runs)/10)
	for i := 0; i < len(w.Runs); i += step {
		c.XTicks = append(c.XTicks, Tick{Pos: x(i), Label: fmt.Sprintf("#%d", i+1), Value: float64(i + 1)})
	}
	colors := map[string]string{}
	byKey := map[string]*Series{}
	for _, r := range w.Runs {
		v, ok := r.Values[m.Name]
		if !ok {
			continue
		}
		if colors[r.FingerprintHash] == "" {
			colors[r.FingerprintHash] = palette[len(colors)%len(palette)]
		}
		key := r.Kind + "\x00" + r.Branch + "\x00" + r.FingerprintHash
		s := byKey[key]
		if s == nil {
			s = &Series{Kind: r.Kind, Branch: r.Branch, Fingerprint: r.FingerprintHash, Color: colors[r.FingerprintHash]}
			byKey[key] = s
			c.Series = append(c.Series, s)
		}
		from := "profiled run"
		if n := r.Timed[m.Name]; n > 0 {
			from = fmt.Sprintf("%d timing run(s)", n)
			if r.TimingBusy != "" {
				from += " (busy host: a comparison leaves them out)"
			}
		}
		s.Points = append(s.Points, &Point{Run: r, X: x(r.Index), Y: y(v), Value: v,
			Label: fmt.Sprintf("run %d (#%d), %s, %s on %s, from its %s: %s %s", r.ID, r.Index+1, r.Kind, r.Short(), r.Branch, from, num(v), m.Unit)})
	}
	for _, s := range c.Series {
		if s.Kind != "baseline" {
			continue
		}
		var b strings.Builder
		xs := make([]float64, len(s.Points))
		for i, p := range s.Points {
			fmt.Fprintf(&b, "%.1f,%.1f ", p.X, p.Y)
			xs[i] = p.Value
		}
		s.Line = strings.TrimSpace(b.String())
		for _, cp := range stats.ChangePoints(xs, co) {
			after, before := s.Points[cp.Index].Run, s.Points[cp.Index-1].Run
			mark := &ChangeMark{X: (s.Points[cp.Index-1].X + s.Points[cp.Index].X) / 2, Before: before, Run: after, Change: cp, Fingerprint: s.Fingerprint, Branch: s.Branch}
			mark.Label = fmt.Sprintf("change point: %s %s → %s %s (%+.1f%%%s), p=%.3f, between %s (run %d, #%d) and %s (run %d, #%d)",
				num(cp.Before), m.Unit, num(cp.After), m.Unit, 100*cp.Relative(), interval(cp, m.Unit), cp.P,
				before.Short(), before.ID, before.Index+1, after.Short(), after.ID, after.Index+1)
			c.Changes = append(c.Changes, mark)
		}
	}
	return c
}

// fromZero reports whether m's axis starts at 0: counts and ratios, whose
// size is read from the bar's height (a count axis from 2.8 to 3.2 made
// one more kernel look like a doubling, one from −0.08 a negative count).
// Times and sizes keep an axis around their values, where a drift of a
// few per cent shows.
func fromZero(m analysis.Metric) bool { return m.Unit == "count" || m.Unit == "ratio" }

// axis picks a value axis for values from lo to hi: about five ticks at
// steps of 1, 2 or 5 × 10^k, the bounds on ticks, so that every label is
// a round number (not 2.814, 46.35, 89.88); from 0 when zero is set.
func axis(lo, hi float64, zero bool) (float64, float64, []Tick) {
	if zero && lo < 0 {
		zero = false // not a count after all: keep the values in view
	}
	if zero {
		lo = 0
	}
	if hi == lo {
		d := math.Abs(lo) * 0.05
		if d == 0 {
			d = 1
		}
		if zero {
			lo, hi = 0, hi+d
		} else {
			lo, hi = lo-d, hi+d
		}
	}
	step := niceStep(lo, hi)
	a, b := math.Floor(lo/step), math.Ceil(hi/step)
	if zero {
		a = 0
	}
	dec := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	var ticks []Tick
	for k := a; k <= b; k++ {
		label := strconv.FormatFloat(k*step, 'f', dec, 64)
		v, _ := strconv.ParseFloat(label, 64) // 0.3, not 0.30000000000000004
		if v == 0 {
			v, label = 0, "0" // not -0
		}
		ticks = append(ticks, Tick{Value: v, Label: label})
	}
	// The ticks' values are their labels' (0.3, not 0.30000000000000004):
	// a value a rounding beyond them still lies on the axis.
	return min(ticks[0].Value, lo), max(ticks[len(ticks)-1].Value, hi), ticks
}

// niceStep is the step of 1, 2 or 5 × 10^k whose ticks cut lo..hi into
// the number of intervals closest to 5 (the larger step on a tie).
func niceStep(lo, hi float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10((hi-lo)/5)))
	best, bestD := 0.0, math.Inf(1)
	for _, f := range []float64{1, 2, 5, 10} {
		step := f * p
		n := math.Ceil(hi/step-1e-9) - math.Floor(lo/step+1e-9)
		if d := math.Abs(n - 5); d <= bestD {
			best, bestD = step, d
		}
	}
	return best
}

// interval is the Hodges–Lehmann shift and its interval, for a label.
func interval(cp stats.Change, unit string) string {
	if !cp.Shift.Bounded {
		return ""
	}
	return fmt.Sprintf("; shift %s %s, interval [%s, %s]", signed(cp.Shift.Estimate), unit, signed(cp.Shift.Lo), signed(cp.Shift.Hi))
}

func signed(v float64) string {
	if v >= 0 {
		return "+" + num(v)
	}
	return num(v)
}

// num prints a value with 4 significant digits.
func num(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 10:
		return fmt.Sprintf("%.2f", v)
	case a >= 1:
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.4g", v)
}

// sparkChart is a series as a 120×28 trend line.
func sparkChart(s *Series) *Chart {
	c := &Chart{W: 120, H: 28}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range s.Points {
		lo, hi = min(lo, p.Value), max(hi, p.Value)
	}
	if hi == lo {
		hi = lo + 1
	}
	var b strings.Builder
	n := max(1, len(s.Points)-1)
	for i, p := range s.Points {
		fmt.Fprintf(&b, "%.1f,%.1f ", 2+116*float64(i)/float64(n), 26-24*(p.Value-lo)/(hi-lo))
	}
	c.Series = []*Series{{Color: s.Color, Line: strings.TrimSpace(b.String()), Kind: s.Kind}}
	return c
}
