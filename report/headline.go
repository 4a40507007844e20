package report

import (
	"fmt"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/stats"
)

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
	if o.Source != "" {
		medians = fmt.Sprintf("median step %.2f ms profiled, %.2f ms in the timing runs", o.ProfiledMs, o.UnprofiledMs)
	}
	switch {
	case o.Disturbed != "" && o.Ratio < 1:
		return fmt.Sprintf("not measured: ×%.2f, the profiled runs faster than the timing runs, comes from disturbed runs (%s; %s): a busy host, not the profiler", o.Ratio, o.Disturbed, medians)
	case o.Disturbed != "":
		return fmt.Sprintf("×%.2f from disturbed runs (%s; %s): the host's load as much as the profiler's cost", o.Ratio, o.Disturbed, medians)
	case o.WithinNoise:
		return fmt.Sprintf("within noise (%s; the steps' p10–p90 overlap: %.2f–%.2f ms profiled, %.2f–%.2f ms unprofiled)",
			medians, o.ProfiledP10, o.ProfiledP90, o.UnprofiledP10, o.UnprofiledP90)
	case o.Passes >= 2:
		return fmt.Sprintf("×%.2f [×%.2f, ×%.2f over %d profiled passes] (%s)", o.Ratio, o.Lo, o.Hi, o.Passes, medians)
	}
	return fmt.Sprintf("×%.2f (%s; one profiled pass)", o.Ratio, medians)
}
