package gate

import (
	"slices"

	"github.com/gpugate/gpugate/analysis"
)

// Overhead compares the job's own step times with and without the profiler
// (gpugate run with step_log: every profiled pass, then one unprofiled
// pass, each timed by the job's own log). It is a measurement with noise
// of its own: from one pass of each it printed ×0.93 and ×0.68 (profiled
// faster than unprofiled) on noisy minutes (issue 19), so it says when
// the two cannot be told apart and, over several profiled passes, gives
// the range of the ratio.
type Overhead struct {
	ProfiledMs   float64 `json:"profiled_ms"`   // median step time the job logged under the profiler, over every profiled pass
	UnprofiledMs float64 `json:"unprofiled_ms"` // the same without it
	Ratio        float64 `json:"ratio"`         // profiled / unprofiled
	// Passes is the number of profiled passes. With two or more, Lo and Hi
	// are the smallest and largest ratio of one pass's median step to the
	// unprofiled median (0 with one pass): the spread of the ratio from
	// pass to pass, which one unprofiled pass cannot narrow further.
	Passes int     `json:"passes"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
	// WithinNoise is set when the profiled and unprofiled steps' middle
	// 80% (p10 to p90) overlap: the step times of the two passes do not
	// tell the profiler's cost from the steps' own spread, and the ratio
	// is noise, not a measure.
	WithinNoise bool `json:"within_noise"`
	// ProfiledP10, ProfiledP90, UnprofiledP10 and UnprofiledP90 are those
	// spreads (ms).
	ProfiledP10   float64 `json:"profiled_p10_ms"`
	ProfiledP90   float64 `json:"profiled_p90_ms"`
	UnprofiledP10 float64 `json:"unprofiled_p10_ms"`
	UnprofiledP90 float64 `json:"unprofiled_p90_ms"`
	// Source says what was compared when it is not the job's own log of
	// a profiled and an unprofiled pass: "the profiled runs' traces
	// against the timing runs" (pipeline, timing runs).
	Source string `json:"source,omitempty"`
	// Disturbed says, when every run of a kind (profiled or timing) ran
	// on a busy host (HostBusy), that the figure comes from disturbed
	// runs: a busy host slows the two kinds by different amounts, so the
	// ratio is the host's as much as the profiler's (×0.30 under Slurm
	// beside a 1,042 ms timing run, issue 37). Below ×1 it is no
	// measurement at all, and the report says so (report.OverheadText).
	// Where some runs of each kind were quiet, only those are compared,
	// and Disturbed is empty.
	Disturbed string `json:"disturbed,omitempty"`
}

// NewOverhead measures the profiler's cost from the step times (ms) of each
// profiled pass and of the unprofiled pass; nil when either side has no
// step.
func NewOverhead(profiled [][]float64, unprofiled []float64) *Overhead {
	var all []float64
	for _, p := range profiled {
		all = append(all, p...)
	}
	if len(all) == 0 || len(unprofiled) == 0 {
		return nil
	}
	pm, um := analysis.Summarize(all).Median, analysis.Summarize(unprofiled).Median
	if !(um > 0) {
		return nil
	}
	o := &Overhead{ProfiledMs: pm, UnprofiledMs: um, Ratio: pm / um}
	for _, p := range profiled {
		if len(p) > 0 {
			o.Passes++
		}
	}
	if o.Passes >= 2 {
		for _, p := range profiled {
			if len(p) == 0 {
				continue
			}
			r := analysis.Summarize(p).Median / um
			if o.Lo == 0 || r < o.Lo {
				o.Lo = r
			}
			o.Hi = max(o.Hi, r)
		}
	}
	o.ProfiledP10, o.ProfiledP90 = quantile(all, 0.1), quantile(all, 0.9)
	o.UnprofiledP10, o.UnprofiledP90 = quantile(unprofiled, 0.1), quantile(unprofiled, 0.9)
	o.WithinNoise = o.ProfiledP10 <= o.UnprofiledP90 && o.UnprofiledP10 <= o.ProfiledP90
	return o
}

// quantile is the q-quantile of xs by linear interpolation between order
// statistics (type 7, numpy's default).
func quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	h := q * float64(len(s)-1)
	i := int(h)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (h-float64(i))*(s[i+1]-s[i])
}
