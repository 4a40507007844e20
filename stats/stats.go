// Package stats compares a metric's runs between a baseline and a
// candidate and decides, from a t interval of the change of the runs'
// mean per step on the log scale (the prediction interval of a new run
// against the baseline's runs, or the paired interval of A/B log-ratios),
// whether it regressed, improved, passed or cannot be judged yet
// (docs/verdicts.md). It knows nothing of traces.
package stats

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"

	moremath "github.com/aclements/go-moremath/stats"
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
	// Paired says that base[i] and cand[i] ran as a pair, in the same
	// minutes of the same machine (gpugate ab): the interval is then over
	// the per-pair log-ratios head/base. Without it, or when the two sides
	// hold different numbers of runs, the runs are two independent samples.
	Paired bool
	// AutoAlpha, for candidate runs sampled until decided (perf.yaml
	// repeat: auto), is the level spent over the looks, one after each of
	// up to AutoMaxRuns runs (Alpha is then AutoAlpha/AutoMaxRuns): advice
	// names max_runs, and counts the runs that would settle it at the
	// level each look would then have. 0 otherwise.
	AutoAlpha   float64
	AutoMaxRuns int
}

// DefaultThresholds are the defaults.
var DefaultThresholds = Thresholds{Alpha: 0.05}

// Units of a comparison: the samples the interval is over. A step is never
// one: steps of one run cannot show run-to-run drift.
const (
	UnitRun  = "run"  // one sample per run: its mean step
	UnitPair = "pair" // one sample per A/B pair: log(head mean / base mean)
)

// Scales of a comparison.
const (
	// ScaleLog: the interval is computed on the log of the run means and
	// reported as a ratio; used whenever every run mean is positive.
	ScaleLog = "log"
	// ScaleAbsolute: on the run means themselves; used when a run mean is
	// 0 (a count such as sync_calls that is 0 in the baseline).
	ScaleAbsolute = "absolute"
)

// Summary describes one side's samples.
type Summary struct {
	// Value is what the change is of: the geometric mean of the side's
	// run means (ScaleLog), or their arithmetic mean (ScaleAbsolute),
	// over the runs (pairs) the interval used. So candidate.Value /
	// baseline.Value − 1 is DeltaPct/100 on the log scale and
	// candidate.Value − baseline.Value is Delta on both. 0 when the side
	// has no runs with values.
	Value float64 `json:"value"`
	// Median, Mean, P90, Min and Max describe the steps of every run
	// pooled, for people; the verdict rests on RunMeans.
	Median float64 `json:"median"`
	Mean   float64 `json:"mean"`
	P90    float64 `json:"p90"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"` // samples in the interval: runs, or pairs
	Steps  int     `json:"steps"`
	Runs   int     `json:"runs"`
	// RunMeans is each run's mean per step over its measured steps, in
	// the order of the runs: the samples of the comparison.
	RunMeans []float64 `json:"run_means"`
	// Spread is the run-to-run spread: (max - min) / mean of the run
	// means; 0 with one run.
	Spread float64 `json:"run_spread"`
	// RunCV is the standard deviation of the run means over their mean; 0
	// with one run.
	RunCV float64 `json:"run_cv"`
}

// Result is the comparison of one metric.
type Result struct {
	Name      string  `json:"name"`
	Unit      string  `json:"unit"`
	Direction string  `json:"direction"` // "lower" or "higher" is better
	Baseline  Summary `json:"baseline"`
	Candidate Summary `json:"candidate"`
	// SampleUnit is UnitRun or UnitPair; Scale is ScaleLog or
	// ScaleAbsolute.
	SampleUnit string `json:"sample_unit"`
	Scale      string `json:"scale"`
	// Delta is the change of the mean per step from baseline to
	// candidate in the metric's unit; DeltaLo and DeltaHi bound its
	// confidence interval (±Inf when the runs are too few for one).
	Delta, DeltaLo, DeltaHi float64 `json:"-"`
	// DeltaPct, CILoPct and CIHiPct are the same relative to the baseline
	// (its geometric mean of run means on the log scale), in percent; ±Inf
	// when that is 0 and the change is not.
	DeltaPct, CILoPct, CIHiPct float64 `json:"-"`
	// Confidence is the level of the interval, 1 - α.
	Confidence float64 `json:"confidence"`
	// AllowancePct is the allowance applied, in percent of the baseline;
	// MinAbs the smallest absolute change that counts.
	AllowancePct float64 `json:"allowance_pct"`
	MinAbs       float64 `json:"min_abs"`
	// P is the two-sided p-value of the same t statistic, for reference:
	// the verdict comes from the interval.
	P       float64 `json:"p_value"`
	Verdict Verdict `json:"verdict"`
	Gate    bool    `json:"gate"`
	// Significant is true when the interval excludes 0.
	Significant bool `json:"significant"`
	// Reason says, for an inconclusive verdict, why and what would settle
	// it; NeedRuns is how many more runs (pairs, for UnitPair) on the
	// candidate side the interval's width suggests would settle it, 0 when
	// none would or it is not known.
	Reason   string `json:"reason"`
	NeedRuns int    `json:"need_runs"`
	// NeedBaseRuns is how many more baseline runs it needs besides (their
	// spread unknown, or too few of them for more candidate runs to be
	// enough); 0 when candidate runs alone would do.
	NeedBaseRuns int `json:"need_base_runs,omitempty"`
	// CannotSettle is, for repeat: auto (Thresholds.AutoAlpha) when
	// NeedBaseRuns > 0, whether sampling candidate runs up to AutoMaxRuns
	// cannot settle it either, projected conservatively: no change within
	// this interval would be decided at AutoMaxRuns runs, at the lower
	// bound of the run-to-run spread; always, when the spread is unknown.
	// repeat: auto stops early on it (pipeline.sampleRuns).
	CannotSettle bool `json:"cannot_settle,omitempty"`
	// Why explains a regression: the finding behind it, or where in the
	// step the metric moved (set by package gate).
	Why      string   `json:"why"`
	Notes    []string `json:"notes"`
	Warnings []string `json:"warnings"` // dropped values, and the like
}

// summarize describes the runs and returns each run's mean per step, in
// run order, NaN for a run without finite values.
func summarize(runs [][]float64) (Summary, []float64, int) {
	var all []float64
	means := make([]float64, len(runs))
	dropped := 0
	for i, r := range runs {
		s, d := sortedFinite(r)
		dropped += d
		means[i] = math.NaN()
		if len(s) == 0 {
			continue
		}
		all = append(all, s...)
		means[i] = meanOf(s)
	}
	if len(all) == 0 {
		return Summary{RunMeans: []float64{}}, means, dropped
	}
	slices.Sort(all)
	rm := finite(means)
	s := Summary{
		Median: quantile(all, 0.5), Mean: meanOf(all), P90: quantile(all, 0.9),
		Min: all[0], Max: all[len(all)-1], Steps: len(all), Runs: len(rm), RunMeans: rm,
	}
	if len(rm) > 1 {
		if m := meanOf(rm); m != 0 {
			s.Spread = (slices.Max(rm) - slices.Min(rm)) / math.Abs(m)
			s.RunCV = math.Sqrt(sumSq(rm)/float64(len(rm)-1)) / math.Abs(m)
		}
	}
	return s, means, dropped
}

func meanOf(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// sumSq is the sum of squared deviations from the mean.
func sumSq(xs []float64) float64 {
	m := meanOf(xs)
	var s float64
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s
}

func finite(xs []float64) []float64 {
	out := []float64{}
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
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

// interval is a t interval for a difference of means: est ± t·se with df
// degrees of freedom. Bounded is false when df < 1 (no spread known).
type interval struct {
	est, lo, hi, se float64
	df              int
	bounded         bool
	p               float64
}

// twoSample is the interval for mean(y) - mean(x), x and y independent
// samples with a common spread (the pooled variance). With one candidate
// run (len(y) == 1) the spread is the baseline runs' alone and the
// interval is the prediction interval of a new run against them:
// ȳ - x̄ ± t(K-1)·s·√(1 + 1/K).
func twoSample(x, y []float64, alpha float64) interval {
	k, m := len(x), len(y)
	d := meanOf(y) - meanOf(x)
	df := k + m - 2
	if df < 1 {
		return interval{est: d, lo: math.Inf(-1), hi: math.Inf(1), se: math.Inf(1), p: 1}
	}
	se := math.Sqrt((sumSq(x)+sumSq(y))/float64(df)) * math.Sqrt(1/float64(k)+1/float64(m))
	return withT(d, se, df, alpha)
}

// pairedT is the interval for the mean of y[i] - x[i] over the pairs.
func pairedT(x, y []float64, alpha float64) interval {
	ds := make([]float64, len(x))
	for i := range x {
		ds[i] = y[i] - x[i]
	}
	d := meanOf(ds)
	n := len(ds)
	if n < 2 {
		return interval{est: d, lo: math.Inf(-1), hi: math.Inf(1), se: math.Inf(1), p: 1}
	}
	return withT(d, math.Sqrt(sumSq(ds)/float64(n-1)/float64(n)), n-1, alpha)
}

func withT(d, se float64, df int, alpha float64) interval {
	iv := interval{est: d, se: se, df: df, bounded: true}
	if se == 0 {
		// Every run the same on both sides (a deterministic count): the
		// difference is exact.
		iv.lo, iv.hi, iv.p = d, d, 1
		if d != 0 {
			iv.p = 0
		}
		return iv
	}
	t := TQuantile(1-alpha/2, float64(df))
	iv.lo, iv.hi = d-t*se, d+t*se
	iv.p = 2 * (1 - moremath.TDist{V: float64(df)}.CDF(math.Abs(d)/se))
	return iv
}

// TQuantile returns the p-quantile of Student's t distribution with df
// degrees of freedom, for p in (0.5, 1): bisection on go-moremath's CDF,
// which has no inverse. 200 halvings reach adjacent floats.
func TQuantile(p, df float64) float64 {
	type key struct{ p, df float64 }
	if v, ok := tCache.Load(key{p, df}); ok {
		return v.(float64)
	}
	q := tQuantile(p, df)
	tCache.Store(key{p, df}, q)
	return q
}

// tCache holds the quantiles asked for: a comparison asks for a handful,
// the same ones again and again.
var tCache sync.Map

func tQuantile(p, df float64) float64 {
	dist := moremath.TDist{V: df}
	lo, hi := 0.0, 1.0
	for dist.CDF(hi) < p && hi < 1e12 {
		lo, hi = hi, 2*hi
	}
	for range 200 {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if dist.CDF(mid) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// decide is the gate rule on the worse-is-positive scale: w is the
// estimate, [lo, hi] its interval, limit the allowance (docs/verdicts.md).
func decide(w, lo, hi, limit float64, bounded bool) Verdict {
	switch {
	case bounded && lo > 0 && w > limit:
		return Regression
	case bounded && hi < 0 && -w > limit:
		return Improvement
	case bounded && hi <= limit && math.Abs(w) <= limit:
		return Pass
	}
	return Inconclusive
}

// judge maps an interval on the comparison's scale to the result's
// fields and the verdict.
type judge struct {
	auto    bool // repeat: auto
	autoA   float64
	autoMax int
	spec    Spec
	log     bool
	ref     float64 // the baseline: geometric mean (log) or mean (absolute) of its run means
	sign    float64
	paired  bool
	k, m    int // baseline and candidate runs (pairs: m == k)
	sd      float64
	alpha   float64
	bounded bool
}

// worse converts an interval to the worse-is-positive scale with its
// limit: fractions of the baseline on the log scale, the metric's unit
// otherwise.
func (j judge) worse(est, lo, hi float64) (w, a, b, limit float64) {
	if j.log {
		w, a, b = j.sign*math.Expm1(est), j.sign*math.Expm1(lo), j.sign*math.Expm1(hi)
		limit = math.Max(j.spec.Allowance, j.spec.MinAbs/math.Abs(j.ref))
	} else {
		w, a, b = j.sign*est, j.sign*lo, j.sign*hi
		limit = math.Max(j.spec.Allowance*math.Abs(j.ref), j.spec.MinAbs)
	}
	if a > b {
		a, b = b, a
	}
	return w, a, b, limit
}

// Compare judges one metric (docs/verdicts.md). base and cand hold
// per-step values, one slice per run, ranks already combined; each run
// contributes its mean per step. The interval is a t interval on the log
// of the run means (on the means themselves when one is 0):
//
//   - unpaired (stored baseline): the pooled two-sample interval, which
//     for one candidate run is the prediction interval of a new run
//     against the baseline's K runs;
//   - paired (th.Paired, gpugate ab): the interval of the mean per-pair
//     log-ratio head/base.
//
// Then regression: the interval lies on the worse side of 0 and the
// estimate is worse than the allowance; improvement: the same on the
// better side; pass: the interval bounds the worse change within the
// allowance and the estimate is within it; inconclusive otherwise, with
// the reason and what would settle it, in runs. A change estimated beyond
// the allowance is never a pass.
func Compare(spec Spec, base, cand [][]float64, th Thresholds) Result {
	if th.Alpha == 0 {
		th.Alpha = DefaultThresholds.Alpha
	}
	r := Result{Name: spec.Name, Unit: spec.Unit, Gate: spec.Gate, Direction: "lower", P: 1, Notes: []string{}, Warnings: []string{},
		Confidence: 1 - th.Alpha, MinAbs: spec.MinAbs, AllowancePct: 100 * spec.Allowance, SampleUnit: UnitRun, Scale: ScaleLog}
	if spec.Better > 0 {
		r.Direction = "higher"
	}
	var bm, cm []float64
	var bd, cd int
	r.Baseline, bm, bd = summarize(base)
	r.Candidate, cm, cd = summarize(cand)
	if bd+cd > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d+%d non-finite values left out", bd, cd))
	}
	paired := th.Paired && len(bm) == len(cm)
	var x, y []float64
	if paired {
		r.SampleUnit = UnitPair
		for i := range bm {
			if !math.IsNaN(bm[i]) && !math.IsNaN(cm[i]) {
				x, y = append(x, bm[i]), append(y, cm[i])
			}
		}
	} else {
		x, y = finite(bm), finite(cm)
	}
	r.Baseline.N, r.Candidate.N = len(x), len(y)
	if len(x) == 0 || len(y) == 0 {
		r.Verdict = Inconclusive
		r.DeltaLo, r.DeltaHi, r.CILoPct, r.CIHiPct = math.Inf(-1), math.Inf(1), math.Inf(-1), math.Inf(1)
		r.Reason = "no runs with values on one side"
		return r
	}
	j := judge{spec: spec, log: true, sign: 1, paired: paired, auto: th.AutoAlpha > 0, autoA: th.AutoAlpha, autoMax: th.AutoMaxRuns, k: len(x), m: len(y), alpha: th.Alpha}
	if spec.Better > 0 {
		j.sign = -1
	}
	for _, v := range append(slices.Clone(x), y...) {
		if v <= 0 {
			j.log = false
		}
	}
	tx, ty := x, y
	if j.log {
		tx, ty = logs(x), logs(y)
		j.ref = math.Exp(meanOf(tx))
		r.Baseline.Value, r.Candidate.Value = j.ref, math.Exp(meanOf(ty))
	} else {
		r.Scale = ScaleAbsolute
		j.ref = meanOf(x)
		r.Baseline.Value, r.Candidate.Value = j.ref, meanOf(y)
	}
	var iv interval
	if paired {
		iv = pairedT(tx, ty, th.Alpha)
	} else {
		iv = twoSample(tx, ty, th.Alpha)
	}
	j.bounded = iv.bounded
	if iv.df > 0 {
		j.sd = iv.se / j.seFactor(j.m)
	}
	r.P = iv.p
	if j.log {
		r.Delta, r.DeltaPct = j.ref*math.Expm1(iv.est), 100*math.Expm1(iv.est)
		if iv.bounded {
			r.DeltaLo, r.DeltaHi = j.ref*math.Expm1(iv.lo), j.ref*math.Expm1(iv.hi)
			r.CILoPct, r.CIHiPct = 100*math.Expm1(iv.lo), 100*math.Expm1(iv.hi)
		}
	} else {
		r.Delta, r.DeltaLo, r.DeltaHi = iv.est, iv.lo, iv.hi
		r.DeltaPct, r.CILoPct, r.CIHiPct = relative(iv.est, j.ref), relative(iv.lo, j.ref), relative(iv.hi, j.ref)
	}
	if !iv.bounded {
		r.DeltaLo, r.DeltaHi, r.CILoPct, r.CIHiPct = math.Inf(-1), math.Inf(1), math.Inf(-1), math.Inf(1)
	}
	w, lo, hi, limit := j.worse(iv.est, iv.lo, iv.hi)
	r.Significant = iv.bounded && (lo > 0 || hi < 0)
	r.Verdict = decide(w, lo, hi, limit, iv.bounded)
	if r.Verdict == Inconclusive {
		r.Reason, r.NeedRuns, r.NeedBaseRuns = j.settle(r, iv)
		r.CannotSettle = j.auto && r.NeedBaseRuns > 0 && j.cannotSettle(iv)
	}
	return r
}

func logs(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Log(x)
	}
	return out
}

// seFactor is se/sd for m candidate runs (pairs).
func (j judge) seFactor(m int) float64 {
	if j.paired {
		return 1 / math.Sqrt(float64(m))
	}
	return math.Sqrt(1/float64(j.k) + 1/float64(m))
}

// df is the degrees of freedom with m candidate runs (pairs).
func (j judge) df(m int) int {
	if j.paired {
		return m - 1
	}
	return j.k + m - 2
}

// maxMore bounds the runs NeedRuns suggests.
const maxMore = 30

// settle says why a comparison is inconclusive and what would settle it,
// in runs: the smallest number of more candidate runs (pairs) whose
// interval, as wide as this spread makes it, would decide, if the
// estimate stayed where it is; and how many more baseline runs it needs
// besides.
func (j judge) settle(r Result, iv interval) (string, int, int) {
	what := fmt.Sprintf("%d baseline run(s) and %d candidate run(s)", j.k, j.m)
	if j.paired {
		what = fmt.Sprintf("%d pair(s)", j.m)
	}
	d := FormatDelta(r)
	if !iv.bounded {
		if j.paired {
			return fmt.Sprintf("Δ %s but %s show no pair-to-pair spread: run ≥ 3 pairs", d, what), 3 - j.m, 0
		}
		return fmt.Sprintf("Δ %s but %s show no run-to-run spread, without which no change can be judged: record ≥ 3 baseline runs (repeat: 3 on the base branch, or gpugate baseline record) and compare again", d, what), 0, max(1, 3-j.k)
	}
	w, _, _, limit := j.worse(iv.est, iv.lo, iv.hi)
	need := 0
	for n := j.m + 1; n <= j.m+maxMore; n++ {
		if j.auto && n > maxAutoRuns {
			break
		}
		hw := TQuantile(1-j.alphaAt(n)/2, float64(j.df(n))) * j.sd * j.seFactor(n)
		if v := decideAt(j, iv.est, hw); v != Inconclusive {
			need = n - j.m
			break
		}
	}
	lead := fmt.Sprintf("Δ %s, but with %s the interval does not rule out a change beyond the ±%s allowance", d, what, allowanceString(r))
	if w > limit || w < -limit {
		lead = fmt.Sprintf("Δ %s is beyond the ±%s allowance but %s cannot tell it from noise", d, allowanceString(r), what)
	}
	if need > 0 {
		how := fmt.Sprintf("candidate run(s) (perf.yaml repeat: %d)", j.m+need)
		if j.auto {
			how = fmt.Sprintf("candidate run(s) (perf.yaml max_runs: %d, or a larger budget)", j.m+need)
		}
		if j.paired {
			how = fmt.Sprintf("pair(s) (ab -max-pairs %d, or a larger budget)", j.m+need)
		}
		return fmt.Sprintf("%s: about %d more %s would settle it if the change stays where it is", lead, need, how), need, 0
	}
	if !j.paired {
		// More candidate runs cannot narrow the interval below what the
		// baseline's K runs allow: more runs on both sides.
		for n := 1; n <= maxMore; n++ {
			k, m := j.k+n, j.m+n
			if j.auto && m > maxAutoRuns {
				break
			}
			hw := TQuantile(1-j.alphaAt(m)/2, float64(k+m-2)) * j.sd * math.Sqrt(1/float64(k)+1/float64(m))
			if decideAt(j, iv.est, hw) != Inconclusive {
				return fmt.Sprintf("%s, and more candidate runs alone would not narrow it enough: about %d more run(s) on each side (gpugate baseline refresh -runs %d; perf.yaml %s: %d) would settle it if the change stays where it is", lead, n, n, map[bool]string{false: "repeat", true: "max_runs"}[j.auto], max(m, 2)), n, n
			}
		}
	}
	// Nothing within reach settles it: say by how much the estimate
	// misses the allowance and how wide the interval would still be, so
	// that the reader can tell a change at the allowance (which no number
	// of runs settles) from one that noise hides (issue 28: "sits at the
	// allowance" was printed for +11.9% against ±25%).
	k, m := j.k+maxMore, j.m+maxMore
	if j.paired {
		k, m = j.k, j.m+maxMore
	}
	se := j.sd * math.Sqrt(1/float64(k)+1/float64(m))
	if j.paired {
		se = j.sd / math.Sqrt(float64(m))
	}
	hw := TQuantile(1-j.alphaAt(m)/2, float64(max(j.df(m), 1))) * se
	more := fmt.Sprintf("%d more run(s) on each side", maxMore)
	if j.paired {
		more = fmt.Sprintf("%d more pair(s)", maxMore)
	}
	_, wlo, whi, _ := j.worse(iv.est, iv.est-hw, iv.est+hw)
	width, gap := (whi-wlo)/2, math.Abs(math.Abs(w)-limit)
	if j.log {
		return fmt.Sprintf("%s, and %s would not settle it either: the change is %.1f points from the allowance and the interval would still be about ±%.1f points wide at this spread; reduce the run-to-run noise (a quieter machine, more measure_steps) or reconsider the allowance", lead, more, 100*gap, 100*width), 0, 0
	}
	return fmt.Sprintf("%s, and %s would not settle it either: the change is %.3g %s from the allowance and the interval would still be about ±%.3g %s wide at this spread; reduce the run-to-run noise (a quieter machine, more measure_steps) or reconsider the allowance", lead, more, gap, r.Unit, width, r.Unit), 0, 0
}

// cannotSettle is whether candidate runs up to max_runs (autoMax) could
// not decide, whatever the true change within iv: the interval at max_runs
// runs, at the look's level there and at the 97.5% lower bound of the
// spread, leaves every estimate in iv inconclusive. A projection from the
// estimate alone (settle's NeedBaseRuns) stopped repeat: auto too soon:
// an early, noisy estimate near the allowance looks unsettleable, and at
// CV 2%, a 1% allowance, 66 baseline runs and max_runs 66 a 2% slowdown
// was caught in 56% of trials instead of 97% (issue 37;
// pipeline.TestAutoPowerManyRuns).
func (j judge) cannotSettle(iv interval) bool {
	if !iv.bounded {
		return true
	}
	n := min(j.autoMax, maxAutoRuns)
	if j.m >= n {
		return true
	}
	df := j.df(j.m)
	sdLo := j.sd * math.Sqrt(float64(df)/chi2Quantile(0.975, float64(df)))
	hw := TQuantile(1-j.alphaAt(n)/2, float64(j.df(n))) * sdLo * j.seFactor(n)
	const steps = 400
	for i := 0; i <= steps; i++ {
		if decideAt(j, iv.lo+(iv.hi-iv.lo)*float64(i)/steps, hw) != Inconclusive {
			return false
		}
	}
	return true
}

// chi2Quantile is the p-quantile of the chi-squared distribution with df
// degrees of freedom, by the Wilson–Hilferty approximation (within 1% of
// the exact value from df = 3 on; go-moremath has no chi-squared
// quantile). The normal quantile is Student's t at df 1e9.
func chi2Quantile(p, df float64) float64 {
	z := TQuantile(p, 1e9)
	c := 2 / (9 * df)
	return df * math.Pow(1-c+z*math.Sqrt(c), 3)
}

// maxAutoRuns is the most max_runs perf.yaml takes (config.MaxRepeat).
const maxAutoRuns = 100

// alphaAt is the level of the look at n candidate runs: for repeat: auto
// with max_runs raised to at least n, AutoAlpha/max(n, max_runs); else
// this comparison's.
func (j judge) alphaAt(n int) float64 {
	if !j.auto {
		return j.alpha
	}
	return j.autoA / float64(max(n, j.autoMax))
}

func decideAt(j judge, est, hw float64) Verdict {
	w, lo, hi, limit := j.worse(est, est-hw, est+hw)
	return decide(w, lo, hi, limit, true)
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

// sortedFinite returns the finite values of xs, sorted, and how many were
// left out.
func sortedFinite(xs []float64) (out []float64, dropped int) {
	out = make([]float64, 0, len(xs))
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			dropped++
			continue
		}
		out = append(out, x)
	}
	slices.Sort(out)
	return out, dropped
}
