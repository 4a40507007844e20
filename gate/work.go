package gate

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpugate/gpugate/analysis"
)

// WorkComparison sets the two sides' throughput and FLOPs side by side.
// They are derived from step time and from FLOP counts, so they explain
// the verdict and never gate: a second gate on samples/s would only gate
// step time twice.
type WorkComparison struct {
	// Rows are the quantities both or either side has, in the order
	// samples_per_s, tokens_per_s, flops_per_step, flops_per_sample,
	// tflops, mfu.
	Rows []WorkRow `json:"rows"`
	// FLOPsSource is each side's (analysis.WorkResult.FLOPsSource).
	BaselineFLOPsSource  string `json:"baseline_flops_source"`
	CandidateFLOPsSource string `json:"candidate_flops_source"`
	// MFUAbsent says why a side has no MFU.
	MFUAbsent []string `json:"mfu_absent"`
}

// WorkRow is one quantity: the median over steps (ranks combined: rates,
// FLOPs and TFLOP/s add up over ranks, MFU is their mean) of each side's
// runs, the median over runs; nil where a side does not have it.
type WorkRow struct {
	Name      string   `json:"name"`
	Unit      string   `json:"unit"`
	Baseline  *float64 `json:"baseline"`
	Candidate *float64 `json:"candidate"`
	// DeltaPct is the candidate's change in % of the baseline; nil unless
	// both sides have the quantity.
	DeltaPct *float64 `json:"delta_pct"`
}

// compareWork builds the WorkComparison; nil when neither side has
// throughput or FLOPs. It adds a warning when the candidate is faster per
// step but does fewer FLOPs per sample: less work, not faster work.
func (r *Report) compareWork(base, cand []Run) {
	has := func(runs []Run) bool {
		for _, run := range runs {
			for _, res := range run {
				if res.Work != nil {
					return true
				}
			}
		}
		return false
	}
	if !has(base) && !has(cand) {
		return
	}
	wc := &WorkComparison{Rows: []WorkRow{}, MFUAbsent: []string{}}
	wc.BaselineFLOPsSource, wc.CandidateFLOPsSource = flopsSource(base), flopsSource(cand)
	perSample := func(runs []Run) *float64 {
		f, s := sideValue(runs, "flops"), samplesPerStep(runs)
		if f == nil {
			return nil
		}
		if v := *f / s; s > 0 && !math.IsInf(v, 0) {
			return &v
		}
		return nil
	}
	rows := []struct {
		name, unit string
		b, c       *float64
	}{
		{"samples_per_s", "1/s", sideValue(base, "samples_per_s"), sideValue(cand, "samples_per_s")},
		{"tokens_per_s", "1/s", sideValue(base, "tokens_per_s"), sideValue(cand, "tokens_per_s")},
		{"flops_per_step", "FLOP", sideValue(base, "flops"), sideValue(cand, "flops")},
		{"flops_per_sample", "FLOP", perSample(base), perSample(cand)},
		{"tflops", "TFLOP/s", sideValue(base, "tflops"), sideValue(cand, "tflops")},
		{"mfu", "ratio", sideValue(base, "mfu"), sideValue(cand, "mfu")},
	}
	for _, x := range rows {
		if x.b == nil && x.c == nil {
			continue
		}
		row := WorkRow{Name: x.name, Unit: x.unit, Baseline: x.b, Candidate: x.c}
		if x.b != nil && x.c != nil && *x.b != 0 {
			if d := 100 * (*x.c - *x.b) / *x.b; !math.IsInf(d, 0) && !math.IsNaN(d) {
				row.DeltaPct = &d // beyond float64: no change to show, never +Inf
			}
		}
		wc.Rows = append(wc.Rows, row)
	}
	for _, side := range []struct {
		name string
		runs []Run
	}{{"baseline", base}, {"candidate", cand}} {
		for _, run := range side.runs {
			for _, res := range run {
				if res.Work != nil && res.Work.MFUAbsent != "" {
					why := fmt.Sprintf("%s: no MFU: %s", side.name, res.Work.MFUAbsent)
					if !slices.Contains(wc.MFUAbsent, why) {
						wc.MFUAbsent = append(wc.MFUAbsent, why)
					}
				}
			}
		}
	}
	r.Work = wc
	// Faster per step, but less work per sample: say so. FLOP counts are
	// deterministic for a model and batch, so 1% is well above noise.
	var fb, fc *float64
	for _, row := range wc.Rows {
		if row.Name == "flops_per_sample" {
			fb, fc = row.Baseline, row.Candidate
		}
	}
	unit := "sample"
	if fb == nil || fc == nil {
		for _, row := range wc.Rows {
			if row.Name == "flops_per_step" {
				fb, fc, unit = row.Baseline, row.Candidate, "step (samples_per_step not set: the batch is taken to be the same)"
			}
		}
	}
	for _, m := range r.Metrics {
		if m.Name != "step_time" || fb == nil || fc == nil || *fb <= 0 {
			continue
		}
		if m.Candidate.Value < m.Baseline.Value && *fc < 0.99**fb {
			r.Warnings = append(r.Warnings, fmt.Sprintf("fewer FLOPs, not faster FLOPs: the candidate's step is %.1f%% shorter, but it does %.1f%% fewer FLOPs per %s (%s → %s): check that the model still computes what it should before calling it a speed-up",
				100*(m.Baseline.Value-m.Candidate.Value)/m.Baseline.Value, 100*(*fb-*fc) / *fb, unit, gflop(*fb), gflop(*fc)))
		}
	}
}

func gflop(v float64) string { return fmt.Sprintf("%.4g GFLOP", v/1e9) }

func flopsSource(runs []Run) string {
	for _, run := range runs {
		for _, res := range run {
			if res.Work != nil && res.Work.FLOPsSource != "" {
				return res.Work.FLOPsSource
			}
		}
	}
	return ""
}

func samplesPerStep(runs []Run) float64 {
	for _, run := range runs {
		for _, res := range run {
			if res.Work != nil && res.Work.SamplesPerStep > 0 {
				return res.Work.SamplesPerStep * float64(len(run))
			}
		}
	}
	return 0
}

// sideValue is the median over runs of each run's value of series: per
// rank the median over its steps, then summed over ranks (mean for mfu).
func sideValue(runs []Run, series string) *float64 {
	var perRun []float64
	for _, run := range runs {
		var sum float64
		n := 0
		for _, res := range run {
			xs := res.Work.WorkSeries(series)
			if len(xs) == 0 {
				continue
			}
			sum += analysis.Summarize(xs).Median
			n++
		}
		if n == 0 || (n < len(run) && series != "mfu") {
			// Totals over ranks: a run with a rank that lacks the series
			// has none (the others' sum is not the run's).
			continue
		}
		if series == "mfu" {
			sum /= float64(n)
		}
		perRun = append(perRun, sum)
	}
	if len(perRun) == 0 {
		return nil
	}
	v := analysis.Summarize(perRun).Median
	if math.IsNaN(v) || math.IsInf(v, 0) { // a sum over ranks beyond float64
		return nil
	}
	return &v
}
