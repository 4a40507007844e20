// Package stats compares a metric's per-step samples between a baseline and
// a candidate and decides whether it regressed: worse by more than its
// allowance and significant by a two-sided Mann–Whitney U test
// (golang.org/x/perf/benchmath). It knows nothing of traces.
package stats

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"golang.org/x/perf/benchmath"
)

// Verdict is the outcome for one metric or a whole comparison.
type Verdict string

const (
	Pass         Verdict = "pass"
	Regression   Verdict = "regression"
	Improvement  Verdict = "improvement"
	Inconclusive Verdict = "inconclusive"
	// NoBaseline: nothing matching was stored to compare with. A stated
	// outcome, never a silent pass (perf.yaml baseline.on_missing decides
	// its exit status).
	NoBaseline Verdict = "no-baseline"
	// Accepted: a regression that a PR label declared intended.
	Accepted Verdict = "accepted"
)

// Spec says how to judge one metric.
type Spec struct {
	Name   string
	Unit   string
	Better int // -1: lower is better; +1: higher is better
	// Allowance is the relative change (0.15 = 15%) that is tolerated
	// before a significant change counts: profiling overhead and noise.
	Allowance float64
	// MinAbs is the smallest absolute change of the median that counts,
	// for counts whose baseline may be 0 (sync calls: 0 -> 1 is a change).
	MinAbs float64
	// Gate metrics decide the overall verdict; the others are reported.
	Gate bool
}

// Thresholds configure the tests, as benchmath.Thresholds does.
type Thresholds struct {
	Alpha float64 // significance level, 0.05 by default
}

// DefaultThresholds are the defaults.
var DefaultThresholds = Thresholds{Alpha: 0.05}

// Summary describes one side's pooled samples.
type Summary struct {
	Median float64 `json:"median"`
	Mean   float64 `json:"mean"`
	P90    float64 `json:"p90"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
	Runs   int     `json:"runs"`
	// Spread is the run-to-run spread: (max - min) / median of the run
	// medians; 0 with one run.
	Spread float64 `json:"run_spread"`
}

// Result is the comparison of one metric.
type Result struct {
	Name      string  `json:"name"`
	Unit      string  `json:"unit"`
	Direction string  `json:"direction"` // "lower" or "higher" is better
	Baseline  Summary `json:"baseline"`
	Candidate Summary `json:"candidate"`
	// DeltaPct is the relative change in percent, estimated as the median
	// of candidate/baseline ratios over all pairs of steps (Hodges–Lehmann);
	// ±Inf (null in JSON) when the baseline median is 0 and the candidate's
	// is not.
	DeltaPct float64 `json:"delta_pct"`
	// AllowancePct is the allowance applied, after any widening for
	// run-to-run spread.
	AllowancePct float64 `json:"allowance_pct"`
	P            float64 `json:"p_value"`
	Verdict      Verdict `json:"verdict"`
	Gate         bool    `json:"gate"`
	// Significant is p < alpha.
	Significant bool     `json:"significant"`
	Notes       []string `json:"notes"`
}

// summarize pools runs and describes them.
func summarize(runs [][]float64) (Summary, []float64) {
	var all, medians []float64
	for _, r := range runs {
		if len(r) == 0 {
			continue
		}
		all = append(all, r...)
		s := slices.Sorted(slices.Values(r))
		medians = append(medians, quantile(s, 0.5))
	}
	if len(all) == 0 {
		return Summary{}, nil
	}
	slices.Sort(all)
	var sum float64
	for _, x := range all {
		sum += x
	}
	s := Summary{
		Median: quantile(all, 0.5), Mean: sum / float64(len(all)), P90: quantile(all, 0.9),
		Min: all[0], Max: all[len(all)-1], N: len(all), Runs: len(medians),
	}
	if len(medians) > 1 {
		slices.Sort(medians)
		if m := quantile(medians, 0.5); m != 0 {
			s.Spread = (medians[len(medians)-1] - medians[0]) / math.Abs(m)
		}
	}
	return s, all
}

// Quantile returns the q-quantile of sorted xs, interpolating linearly
// between order statistics (numpy's default, type 7); NaN for no values.
func Quantile(sorted []float64, q float64) float64 { return quantile(sorted, q) }

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	h := q * float64(len(sorted)-1)
	i := int(h)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (h-float64(i))*(sorted[i+1]-sorted[i])
}

// hodgesLehmann estimates the relative shift from a to b as the median of
// b[j]/a[i] - 1 over all pairs, the estimator that goes with the U test.
// Unlike the ratio of medians it does not jump when a sample's median falls
// between two clusters of steps (a first step that does extra work).
func hodgesLehmann(a, b []float64) float64 {
	// Bound the work: with many samples, pair every value of the smaller
	// side with an even subsample of the other.
	stride := max(1, len(a)*len(b)/(1<<20))
	ratios := make([]float64, 0, len(a)*len(b)/stride+1)
	k := 0
	for _, x := range a {
		for _, y := range b {
			if k++; k%stride != 0 || x == 0 {
				continue
			}
			ratios = append(ratios, y/x-1)
		}
	}
	if len(ratios) == 0 {
		return 0
	}
	slices.Sort(ratios)
	return quantile(ratios, 0.5)
}

// minP is the smallest two-sided p-value the U test can reach with samples
// of sizes n1 and n2: 2 / C(n1+n2, n1).
func minP(n1, n2 int) float64 {
	// log C(n1+n2, n1) with lgamma to avoid overflow.
	a, _ := math.Lgamma(float64(n1 + n2 + 1))
	b, _ := math.Lgamma(float64(n1 + 1))
	c, _ := math.Lgamma(float64(n2 + 1))
	return math.Min(1, 2*math.Exp(-(a-b-c)))
}

// Compare judges one metric. base and cand hold per-step samples, one slice
// per run. With several runs on either side the allowance is widened by the
// observed run-to-run spread (the baseline's when it has several runs, else
// the candidate's): per-step samples of one run understate how much whole
// runs differ.
func Compare(spec Spec, base, cand [][]float64, th Thresholds) Result {
	if th.Alpha == 0 {
		th = DefaultThresholds
	}
	r := Result{Name: spec.Name, Unit: spec.Unit, Gate: spec.Gate, Direction: "lower", P: 1, Notes: []string{}}
	if spec.Better > 0 {
		r.Direction = "higher"
	}
	var bs, cs []float64
	r.Baseline, bs = summarize(base)
	r.Candidate, cs = summarize(cand)
	allowance := spec.Allowance
	switch {
	case r.Baseline.Runs > 1:
		allowance += r.Baseline.Spread
		r.Notes = append(r.Notes, fmt.Sprintf("allowance widened by the baseline's run-to-run spread, %.1f%% over %d runs", 100*r.Baseline.Spread, r.Baseline.Runs))
	case r.Candidate.Runs > 1:
		allowance += r.Candidate.Spread
		r.Notes = append(r.Notes, fmt.Sprintf("allowance widened by the candidate's run-to-run spread, %.1f%% over %d runs", 100*r.Candidate.Spread, r.Candidate.Runs))
	}
	r.AllowancePct = 100 * allowance
	if len(bs) == 0 || len(cs) == 0 {
		r.Verdict = Inconclusive
		r.Notes = append(r.Notes, "no samples on one side")
		return r
	}
	mb, mc := r.Baseline.Median, r.Candidate.Median
	switch {
	case mb != 0:
		r.DeltaPct = 100 * hodgesLehmann(bs, cs)
	case mc > 0:
		r.DeltaPct = math.Inf(1)
	case mc < 0:
		r.DeltaPct = math.Inf(-1)
	}
	thr := benchmath.Thresholds{CompareAlpha: th.Alpha}
	c := benchmath.AssumeNothing.Compare(benchmath.NewSample(slices.Clone(bs), &thr), benchmath.NewSample(slices.Clone(cs), &thr))
	r.P = c.P
	r.Significant = c.P < th.Alpha
	if mp := minP(len(bs), len(cs)); mp >= th.Alpha {
		r.Verdict = Inconclusive
		r.Notes = append(r.Notes, fmt.Sprintf("too few samples (n=%d+%d): no difference could be significant at α=%.2g", len(bs), len(cs), th.Alpha))
		return r
	}
	big := math.Abs(r.DeltaPct) > r.AllowancePct && math.Abs(mc-mb) >= spec.MinAbs
	worse := (spec.Better < 0 && mc > mb) || (spec.Better > 0 && mc < mb)
	switch {
	case !r.Significant || !big:
		r.Verdict = Pass
	case worse:
		r.Verdict = Regression
	default:
		r.Verdict = Improvement
	}
	return r
}

// Overall is the verdict of a set of metric results: regression if a gate
// metric regressed, else inconclusive if a gate metric was inconclusive,
// else pass.
func Overall(rs []Result) Verdict {
	v := Pass
	for _, r := range rs {
		if !r.Gate {
			continue
		}
		switch r.Verdict {
		case Regression:
			return Regression
		case Inconclusive:
			v = Inconclusive
		}
	}
	return v
}

// MarshalJSON writes an infinite DeltaPct as null: JSON has no infinity.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	out := struct {
		plain
		DeltaPct *float64 `json:"delta_pct"`
	}{plain: plain(r)}
	if !math.IsInf(r.DeltaPct, 0) && !math.IsNaN(r.DeltaPct) {
		out.DeltaPct = &r.DeltaPct
	}
	return json.Marshal(out)
}
