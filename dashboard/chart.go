package dashboard

import (
	"fmt"
	"math"
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
	if hi == lo {
		lo, hi = lo-max(1, math.Abs(lo)*0.05), hi+max(1, math.Abs(hi)*0.05)
	}
	pad := (hi - lo) * 0.08
	lo, hi = lo-pad, hi+pad
	n := float64(len(w.Runs))
	x := func(i int) float64 { return c.Left + (float64(i)+0.5)*(c.Right-c.Left)/n }
	y := func(v float64) float64 { return c.Bottom - (v-lo)/(hi-lo)*(c.Bottom-c.Top) }
	for i := range 5 {
		v := lo + (hi-lo)*float64(i)/4
		c.YTicks = append(c.YTicks, Tick{y(v), num(v)})
	}
	step := max(1, len(w.Runs)/10)
	for i := 0; i < len(w.Runs); i += step {
		c.XTicks = append(c.XTicks, Tick{x(i), fmt.Sprintf("#%d", i+1)})
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
		s.Points = append(s.Points, &Point{Run: r, X: x(r.Index), Y: y(v), Value: v,
			Label: fmt.Sprintf("run %d (#%d), %s, %s on %s: %s %s", r.ID, r.Index+1, r.Kind, r.Short(), r.Branch, num(v), m.Unit)})
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
			mark := &ChangeMark{X: (s.Points[cp.Index-1].X + s.Points[cp.Index].X) / 2, Before: before, Run: after, Change: cp, Fingerprint: s.Fingerprint}
			mark.Label = fmt.Sprintf("change point: %s %s → %s %s (%+.1f%%%s), p=%.3f, between %s (run %d, #%d) and %s (run %d, #%d)",
				num(cp.Before), m.Unit, num(cp.After), m.Unit, 100*cp.Relative(), interval(cp, m.Unit), cp.P,
				before.Short(), before.ID, before.Index+1, after.Short(), after.ID, after.Index+1)
			c.Changes = append(c.Changes, mark)
		}
	}
	return c
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
