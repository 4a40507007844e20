// Package stats compares a metric's samples between a baseline and a
// candidate and decides, from the Hodges–Lehmann shift and its
// distribution-free confidence interval, whether it regressed, improved,
// passed or cannot be judged yet (docs/verdicts.md). benchmath's
// Mann–Whitney U test gives the p-value shown beside it. It knows nothing
// of traces.
package stats

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	moremath "github.com/aclements/go-moremath/stats"
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
	// Allowance is the relative change (0.15 = 15%) that is tolerated:
	// profiling overhead and noise.
	Allowance float64
	// MinAbs is the smallest absolute change that counts, for counts whose
	// baseline may be 0 (sync calls: 0 -> 1 is a change) and for times
	// below the trace's resolution.
	MinAbs float64
	// Gate metrics decide the overall verdict; the others are reported.
	Gate bool
}

// Thresholds configure the tests, as benchmath.Thresholds does.
type Thresholds struct {
	Alpha float64 // significance level, 0.05 by default: intervals are 1-Alpha
	// MinRuns is how many runs each side needs before the run (its median
	// step) becomes the unit of the comparison; 3 by default.
	MinRuns int
}

// DefaultThresholds are the defaults.
var DefaultThresholds = Thresholds{Alpha: 0.05, MinRuns: 3}

// Units of a comparison: the samples the test and the interval are over.
const (
	UnitRun  = "run"  // one sample per run: its median step
	UnitStep = "step" // one sample per step, the steps of every run pooled
)

// Summary describes one side's samples.
type Summary struct {
	Median float64 `json:"median"` // of the steps, every run pooled
	Mean   float64 `json:"mean"`
	P90    float64 `json:"p90"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"` // samples in the test: runs or steps, as sample_unit says
	Steps  int     `json:"steps"`
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
	// SampleUnit is UnitRun or UnitStep.
	SampleUnit string `json:"sample_unit"`
	// Delta is the Hodges–Lehmann shift from baseline to candidate in the
	// metric's unit; DeltaLo and DeltaHi bound its confidence interval
	// (±Inf when the samples are too few for one).
	Delta, DeltaLo, DeltaHi float64 `json:"-"`
	// DeltaPct, CILoPct and CIHiPct are the same relative to the baseline's
	// median, in percent; ±Inf when that median is 0 and the change is not.
	DeltaPct, CILoPct, CIHiPct float64 `json:"-"`
	// Confidence is the level of the interval, 1 - α.
	Confidence float64 `json:"confidence"`
	// AllowancePct is the allowance applied, in percent of the baseline;
	// MinAbs the smallest absolute change that counts.
	AllowancePct float64 `json:"allowance_pct"`
	MinAbs       float64 `json:"min_abs"`
	// P is the two-sided Mann–Whitney U p-value (benchmath), for reference:
	// the verdict comes from the interval, which excludes 0 exactly when the
	// test is significant.
	P       float64 `json:"p_value"`
	Verdict Verdict `json:"verdict"`
	Gate    bool    `json:"gate"`
	// Significant is true when the interval excludes 0.
	Significant bool `json:"significant"`
	// Reason says, for an inconclusive verdict, why and what would settle
	// it.
	Reason string `json:"reason"`
	// Why explains a regression: the finding behind it, or where in the
	// step the metric moved (set by package gate).
	Why      string   `json:"why"`
	Notes    []string `json:"notes"`
	Warnings []string `json:"warnings"` // benchmath's, and dropped values
}

// summarize describes the runs and returns the pooled steps and the run
// medians, both sorted and finite.
func summarize(runs [][]float64) (Summary, []float64, []float64, int) {
	var all, medians []float64
	dropped := 0
	for _, r := range runs {
		s, d := sortedFinite(r)
		dropped += d
		if len(s) == 0 {
			continue
		}
		all = append(all, s...)
		medians = append(medians, quantile(s, 0.5))
	}
	if len(all) == 0 {
		return Summary{}, nil, nil, dropped
	}
	slices.Sort(all)
	slices.Sort(medians)
	var sum float64
	for _, x := range all {
		sum += x
	}
	s := Summary{
		Median: quantile(all, 0.5), Mean: sum / float64(len(all)), P90: quantile(all, 0.9),
		Min: all[0], Max: all[len(all)-1], Steps: len(all), Runs: len(medians),
	}
	if len(medians) > 1 {
		if m := quantile(medians, 0.5); m != 0 {
			s.Spread = (medians[len(medians)-1] - medians[0]) / math.Abs(m)
		}
	}
	return s, all, medians, dropped
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

// minP is the smallest two-sided p-value the U test can reach with samples
// of sizes n1 and n2: 2 / C(n1+n2, n1).
func minP(n1, n2 int) float64 {
	// log C(n1+n2, n1) with lgamma to avoid overflow.
	a, _ := math.Lgamma(float64(n1 + n2 + 1))
	b, _ := math.Lgamma(float64(n1 + 1))
	c, _ := math.Lgamma(float64(n2 + 1))
	return math.Min(1, 2*math.Exp(-(a-b-c)))
}

// relative expresses an absolute change in percent of ref; ±Inf when ref
// is 0 and the change is not.
func relative(v, ref float64) float64 {
	switch {
	case math.IsInf(v, 0):
		return v
	case ref != 0:
		return 100 * v / math.Abs(ref)
	case v > 0:
		return math.Inf(1)
	case v < 0:
		return math.Inf(-1)
	}
	return 0
}

// Compare judges one metric from the interval of its change (docs/verdicts.md):
//
//   - regression: the interval lies on the worse side of 0 (significant) and
//     the estimated change is worse than the allowance;
//   - improvement: the same on the better side;
//   - pass: the interval bounds the worse change within the allowance and
//     the estimate is within it on both sides;
//   - inconclusive otherwise, with the reason and what would settle it.
//
// A change estimated beyond the allowance is never a pass. base and cand
// hold per-step samples, one slice per run, ranks already combined. With
// at least th.MinRuns runs on both sides each run's median step is one
// sample, so the verdict covers run-to-run drift; otherwise the steps of
// every run are pooled and a note says what that cannot see.
func Compare(spec Spec, base, cand [][]float64, th Thresholds) Result {
	if th.Alpha == 0 {
		th.Alpha = DefaultThresholds.Alpha
	}
	if th.MinRuns == 0 {
		th.MinRuns = DefaultThresholds.MinRuns
	}
	r := Result{Name: spec.Name, Unit: spec.Unit, Gate: spec.Gate, Direction: "lower", P: 1, Notes: []string{}, Warnings: []string{},
		Confidence: 1 - th.Alpha, MinAbs: spec.MinAbs, AllowancePct: 100 * spec.Allowance}
	if spec.Better > 0 {
		r.Direction = "higher"
	}
	var bSteps, cSteps, bRuns, cRuns []float64
	var bd, cd int
	r.Baseline, bSteps, bRuns, bd = summarize(base)
	r.Candidate, cSteps, cRuns, cd = summarize(cand)
	if bd+cd > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d+%d non-finite values left out", bd, cd))
	}
	bs, cs := bSteps, cSteps
	r.SampleUnit = UnitStep
	if r.Baseline.Runs >= th.MinRuns && r.Candidate.Runs >= th.MinRuns {
		r.SampleUnit = UnitRun
		bs, cs = bRuns, cRuns
	} else if len(bs) > 0 && len(cs) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("steps as samples (%d+%d runs, fewer than %d on a side): the interval covers step-to-step noise, not run-to-run drift", r.Baseline.Runs, r.Candidate.Runs, th.MinRuns))
	}
	r.Baseline.N, r.Candidate.N = len(bs), len(cs)
	if len(bs) == 0 || len(cs) == 0 {
		r.Verdict = Inconclusive
		r.DeltaLo, r.DeltaHi, r.CILoPct, r.CIHiPct = math.Inf(-1), math.Inf(1), math.Inf(-1), math.Inf(1)
		r.Reason = "no samples on one side"
		return r
	}
	ref := quantile(bs, 0.5)
	sh := HodgesLehmann(bs, cs, th.Alpha)
	r.Delta, r.DeltaLo, r.DeltaHi = sh.Estimate, sh.Lo, sh.Hi
	r.DeltaPct, r.CILoPct, r.CIHiPct = relative(sh.Estimate, ref), relative(sh.Lo, ref), relative(sh.Hi, ref)

	thr := benchmath.Thresholds{CompareAlpha: th.Alpha}
	c := benchmath.AssumeNothing.Compare(benchmath.NewSample(slices.Clone(bs), &thr), benchmath.NewSample(slices.Clone(cs), &thr))
	r.P = c.P
	for _, w := range c.Warnings {
		// Identical samples are not a problem here: their interval is
		// exact, [0, 0] when both sides hold one same value.
		if !errors.Is(w, moremath.ErrSamplesEqual) {
			r.Warnings = append(r.Warnings, w.Error())
		}
	}

	// Work on the worse-is-positive scale: w is the estimate, [lo, hi] the
	// interval, limit the allowance in the metric's unit.
	sign := 1.0
	if spec.Better > 0 {
		sign = -1
	}
	w, lo, hi := sign*sh.Estimate, sign*sh.Lo, sign*sh.Hi
	if lo > hi {
		lo, hi = hi, lo
	}
	limit := math.Max(spec.Allowance*math.Abs(ref), spec.MinAbs)
	r.Significant = sh.Bounded && (lo > 0 || hi < 0)
	switch {
	case sh.Bounded && lo > 0 && w > limit:
		r.Verdict = Regression
	case sh.Bounded && hi < 0 && -w > limit:
		r.Verdict = Improvement
	case sh.Bounded && hi <= limit && math.Abs(w) <= limit:
		r.Verdict = Pass
	default:
		r.Verdict = Inconclusive
		r.Reason = settle(r, w, lo, hi, limit, sh.Bounded, th)
	}
	return r
}

// settle says why a comparison is inconclusive and what would settle it:
// more samples, by how many the interval's width suggests (it narrows as
// 1/√n).
func settle(r Result, w, lo, hi, limit float64, bounded bool, th Thresholds) string {
	nb, nc := r.Baseline.N, r.Candidate.N
	what := fmt.Sprintf("n=%d+%d %ss", nb, nc, r.SampleUnit)
	more := func(n int) string {
		if r.SampleUnit == UnitRun {
			return fmt.Sprintf("repeat ≥ %d runs per side", n)
		}
		return fmt.Sprintf("measure ≥ %d steps per side, or repeat ≥ %d runs on both sides", n, th.MinRuns)
	}
	d := FormatDelta(r)
	if !bounded {
		return fmt.Sprintf("Δ %s but %s cannot bound any change at α=%.2g: %s", d, what, th.Alpha, more(minSamples(nb, nc, th.Alpha)))
	}
	// The interval must move off 0 (estimate beyond the allowance) or
	// below the allowance (estimate within it): f is how much narrower.
	var f float64
	switch {
	case w > limit:
		f = (w - lo) / w
	case w < -limit:
		f = (hi - w) / -w
	case limit > w:
		f = (hi - w) / (limit - w)
	}
	need := ""
	if f > 0 && !math.IsInf(f, 0) && !math.IsNaN(f) {
		n := int(math.Ceil(float64(max(nb, nc)) * f * f * 1.1))
		need = ": " + more(min(max(n, max(nb, nc)+1), 100000))
	}
	switch {
	case w > limit || w < -limit:
		return fmt.Sprintf("Δ %s is beyond the ±%s allowance but %s cannot tell it from noise%s", d, allowanceString(r), what, need)
	}
	return fmt.Sprintf("Δ %s, but with %s the interval does not rule out a change beyond the ±%s allowance%s", d, what, allowanceString(r), need)
}

func allowanceString(r Result) string {
	return strconv.FormatFloat(r.AllowancePct, 'f', -1, 64) + "%"
}

// FormatDelta formats a result's relative change with its interval, as
// "+7.5% [+2.1, +12.9]"; "new" and "gone" for changes from or to a
// baseline median of 0.
func FormatDelta(r Result) string {
	if math.IsInf(r.DeltaPct, 1) {
		return "new"
	}
	if math.IsInf(r.DeltaPct, -1) {
		return "gone"
	}
	b := func(v float64) string {
		switch {
		case math.IsInf(v, 1):
			return "+∞"
		case math.IsInf(v, -1):
			return "−∞"
		}
		return fmt.Sprintf("%+.1f", v)
	}
	return fmt.Sprintf("%+.1f%% [%s, %s]", r.DeltaPct, b(r.CILoPct), b(r.CIHiPct))
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

// jsonNum is a float64 that JSON writes as null when it is not finite:
// JSON has no infinity.
type jsonNum float64

func (v jsonNum) MarshalJSON() ([]byte, error) {
	f := float64(v)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

// MarshalJSON writes the changes and their intervals with infinite bounds
// as null.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	return json.Marshal(struct {
		plain
		Delta    jsonNum    `json:"delta"`
		DeltaCI  [2]jsonNum `json:"delta_ci"`
		DeltaPct jsonNum    `json:"delta_pct"`
		CIPct    [2]jsonNum `json:"ci_pct"`
	}{plain: plain(r), Delta: jsonNum(r.Delta), DeltaCI: [2]jsonNum{jsonNum(r.DeltaLo), jsonNum(r.DeltaHi)},
		DeltaPct: jsonNum(r.DeltaPct), CIPct: [2]jsonNum{jsonNum(r.CILoPct), jsonNum(r.CIHiPct)}})
}
