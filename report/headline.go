package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/stats"
)

// notGated names the metrics that moved but do not gate, with their
// change, as "data_wait +32.0%", the three largest changes first: the
// headline says they moved without counting them in the verdict (the
// table has them all).
func notGated(r *gate.Report) []string {
	var moved []stats.Result
	for _, m := range r.Metrics {
		if !m.Gate && (m.Verdict == stats.Regression || m.Verdict == stats.Improvement) {
			moved = append(moved, m)
		}
	}
	slices.SortStableFunc(moved, func(a, b stats.Result) int { return cmp.Compare(math.Abs(b.DeltaPct), math.Abs(a.DeltaPct)) })
	var out []string
	for i, m := range moved {
		if i == 3 {
			out = append(out, fmt.Sprintf("%d more", len(moved)-3))
			break
		}
		d := "changed"
		if !math.IsNaN(m.DeltaPct) && !math.IsInf(m.DeltaPct, 0) {
			d = fmt.Sprintf("%+.1f%%", m.DeltaPct)
		} else if math.IsInf(m.DeltaPct, 0) {
			d = "new"
			if m.Candidate.Median == 0 {
				d = "gone"
			}
		}
		out = append(out, m.Name+" "+d)
	}
	return out
}

// cause is the finding the headline names: the one the gate found to
// explain the headline regression (gate.Report.Cause), only when the
// verdict is a regression (an accepted one included) and the finding is
// new or worse than in the baseline.
func cause(r *gate.Report) *gate.Finding {
	if r.Cause == "" || (r.Verdict != stats.Regression && r.Verdict != stats.Accepted) {
		return nil
	}
	for i := range r.Findings {
		if f := &r.Findings[i]; f.ID == r.Cause && (f.New || f.Worse) {
			return f
		}
	}
	return nil
}

// OverheadText says what the unprofiled timing pass measured: "within
// noise" when the two passes' steps cannot tell the profiler's cost from
// their spread, a range over several profiled passes, else the ratio of
// one pass to the other.
func OverheadText(o *gate.Overhead) string {
	medians := fmt.Sprintf("median step %.2f ms profiled, %.2f ms unprofiled", o.ProfiledMs, o.UnprofiledMs)
	switch {
	case o.WithinNoise:
		return fmt.Sprintf("within noise (%s; the steps' p10–p90 overlap: %.2f–%.2f ms profiled, %.2f–%.2f ms unprofiled)",
			medians, o.ProfiledP10, o.ProfiledP90, o.UnprofiledP10, o.UnprofiledP90)
	case o.Passes >= 2:
		return fmt.Sprintf("×%.2f [×%.2f, ×%.2f over %d profiled passes] (%s)", o.Ratio, o.Lo, o.Hi, o.Passes, medians)
	}
	return fmt.Sprintf("×%.2f (%s; one profiled pass)", o.Ratio, medians)
}
