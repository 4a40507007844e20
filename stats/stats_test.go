package stats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// Mutation testing (scripts/mutants.sh, a few minutes, not in
// scripts/test.sh) applies, one at a time: `lo > 0` -> `lo >= 0` in
// decide; ratio metrics combined across ranks by sum (package gate); the
// higher-is-better sign removed; the paired unit chosen with || instead of
// &&; the t quantile at 1-α/4 (the old normal approximation at z(α/4)); the
// degrees of freedom off by one (the old order-statistic bisection went
// with the Hodges–Lehmann interval); the t quantile's bisection keeping the
// wrong half. Each must fail a test. Issue 27 added eight of the stopping
// rules (pipeline/auto.go and ab.go; see the script). Last result
// (2026-12-03): 15 of 15 killed, by TestDecide, TestCombineRanks (gate),
// TestCompare, TestInterval (three), TestTQuantile, and in package
// pipeline TestSequentialRuns (three), TestAutoStops, TestAutoAdvice and
// TestSequentialAB (three). Issue 27's timing-run mutants and issue 37's
// twelve survivors of an independent review, plus its early stop on the
// estimate alone, were added: last result (2026-12-06, on the loaded 2-core
// VM): 33 of 33 killed (the clock mutant moved to gate/timing.go's
// clocksDiffer and was rerun alone).

func steps(rng *rand.Rand, n int, level, cv float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = level * (1 + cv*rng.NormFloat64())
	}
	return out
}

var (
	timeSpec       = Spec{Name: "step_time", Unit: "ms", Better: -1, Allowance: 0.15, MinAbs: 0.05, Gate: true}
	countSpec      = Spec{Name: "sync_calls", Unit: "count", Better: -1, MinAbs: 0.5, Gate: true}
	throughputSpec = Spec{Name: "throughput", Unit: "samples/s", Better: 1, Allowance: 0.15, Gate: true}
)

// TestTQuantile checks the bisection against published t tables
// (NIST/SEMATECH e-Handbook, table 1.3.6.7.2).
func TestTQuantile(t *testing.T) {
	for _, c := range []struct{ p, df, want float64 }{
		{0.975, 1, 12.706}, {0.975, 2, 4.303}, {0.975, 4, 2.776}, {0.975, 10, 2.228},
		{0.995, 5, 4.032}, {0.95, 30, 1.697}, {0.975, 100, 1.984},
	} {
		if got := TQuantile(c.p, c.df); math.Abs(got-c.want) > 0.0015 {
			t.Errorf("TQuantile(%v, %v) = %.4f, want %.3f", c.p, c.df, got, c.want)
		}
	}
}

// TestInterval checks the prediction interval of one run against 5 and
// the paired interval, worked out by hand with the t table's 2.776 (df 4)
// and 4.303 (df 2).
func TestInterval(t *testing.T) {
	// Baseline run means e^{0, 0.1, -0.1, 0.2, -0.2}: mean log 0, sum of
	// squares 0.1, s = √(0.1/4) = 0.158114; one candidate run e^{0.5}:
	// se = s·√(1 + 1/5) = 0.173205; half-width 2.776·se = 0.480860.
	base := [][]float64{{1}, {math.Exp(0.1)}, {math.Exp(-0.1)}, {math.Exp(0.2)}, {math.Exp(-0.2)}}
	r := Compare(timeSpec, base, [][]float64{{math.Exp(0.5)}}, DefaultThresholds)
	wantLo, wantHi := 100*math.Expm1(0.5-0.480860), 100*math.Expm1(0.5+0.480860)
	if math.Abs(r.CILoPct-wantLo) > 0.05 || math.Abs(r.CIHiPct-wantHi) > 0.05 || math.Abs(r.DeltaPct-100*math.Expm1(0.5)) > 1e-9 {
		t.Errorf("1 vs 5: %s, want %+.1f%% [%+.1f, %+.1f]", FormatDelta(r), 100*math.Expm1(0.5), wantLo, wantHi)
	}
	if r.SampleUnit != UnitRun || r.Scale != ScaleLog || r.Verdict != Regression {
		t.Errorf("1 vs 5: unit %s, scale %s, verdict %s", r.SampleUnit, r.Scale, r.Verdict)
	}
	// Pairs with log-ratios 0.1, 0.2, 0.3: mean 0.2, s = 0.1, se =
	// 0.057735, half-width 4.303·se = 0.248434. Unpaired the same runs
	// would pool their spread.
	b := [][]float64{{1}, {2}, {4}}
	c := [][]float64{{math.Exp(0.1)}, {2 * math.Exp(0.2)}, {4 * math.Exp(0.3)}}
	r = Compare(timeSpec, b, c, Thresholds{Alpha: 0.05, Paired: true})
	if r.SampleUnit != UnitPair || math.Abs(r.CILoPct-100*math.Expm1(0.2-0.248434)) > 0.05 || math.Abs(r.CIHiPct-100*math.Expm1(0.2+0.248434)) > 0.05 {
		t.Errorf("paired: unit %s, %s, want [%+.1f, %+.1f]", r.SampleUnit, FormatDelta(r), 100*math.Expm1(0.2-0.248434), 100*math.Expm1(0.2+0.248434))
	}
	r = Compare(timeSpec, b, c, DefaultThresholds)
	if r.SampleUnit != UnitRun || r.Verdict != Inconclusive {
		t.Errorf("unpaired: unit %s, verdict %s, want run, inconclusive (the runs' spread is 4×)", r.SampleUnit, r.Verdict)
	}
	// Paired with different run counts cannot pair: two samples.
	r = Compare(timeSpec, b, c[:2], Thresholds{Alpha: 0.05, Paired: true})
	if r.SampleUnit != UnitRun {
		t.Errorf("3 base runs, 2 head runs, paired asked: unit %s, want run", r.SampleUnit)
	}
}

// TestDecide checks the rule at its edges: an interval that touches 0 is
// not significant; one that touches the allowance still passes.
func TestDecide(t *testing.T) {
	for _, c := range []struct {
		w, lo, hi, limit float64
		bounded          bool
		want             Verdict
	}{
		{0.3, 0, 0.6, 0.15, true, Inconclusive},
		{0.3, 1e-9, 0.6, 0.15, true, Regression},
		{0.3, 0.1, 0.6, 0.15, false, Inconclusive},
		{0.1, 0.05, 0.2, 0.15, true, Inconclusive},
		{0.1, 0.05, 0.15, 0.15, true, Pass},
		{-0.3, -0.6, 0, 0.15, true, Inconclusive}, // estimate beyond the allowance, interval touches 0
		{-0.3, -0.6, -1e-9, 0.15, true, Improvement},
		{0.2, -0.1, 0.15, 0.15, true, Inconclusive}, // estimate beyond: never a pass
		{-0.05, -0.08, -0.02, 0.15, true, Pass},     // better, surely, but within the allowance: no improvement
	} {
		if got := decide(c.w, c.lo, c.hi, c.limit, c.bounded); got != c.want {
			t.Errorf("decide(%v, [%v, %v], limit %v, bounded %v) = %s, want %s", c.w, c.lo, c.hi, c.limit, c.bounded, got, c.want)
		}
	}
}

func TestCompare(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	rs := func(k int, level, runCV float64) [][]float64 { return runs(rng, k, 40, level, runCV, 0.03) }
	for _, c := range []struct {
		name       string
		spec       Spec
		base, cand [][]float64
		want       Verdict
	}{
		{"equal, 1 vs 5", timeSpec, rs(5, 100, 0.02), rs(1, 100, 0.02), Pass},
		{"+25%, 1 vs 5", timeSpec, rs(5, 100, 0.02), rs(1, 125, 0.02), Regression},
		{"-25%, 3 vs 5", timeSpec, rs(5, 100, 0.02), rs(3, 75, 0.02), Improvement},
		{"-5%, 5 vs 5, surely better but within the allowance", timeSpec, rs(5, 100, 0.005), rs(5, 95, 0.005), Pass},
		{"one run each", timeSpec, rs(1, 100, 0.02), rs(1, 200, 0.02), Inconclusive},
		{"no candidate runs", timeSpec, rs(3, 100, 0.02), nil, Inconclusive},
		{"identical counts", countSpec, [][]float64{{2, 2, 2}, {2, 2, 2}, {2, 2, 2}}, [][]float64{{2, 2, 2}}, Pass},
		// A sync in 60% of steps is 0.6 per step: no tie, a regression.
		{"new sync in 60% of steps", countSpec, [][]float64{{0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}}, [][]float64{{1, 1, 0, 1, 0}, {0, 1, 1, 1, 0}, {1, 0, 1, 0, 1}}, Regression},
		{"one sync in 20 steps", countSpec, [][]float64{make([]float64, 20), make([]float64, 20), make([]float64, 20)}, [][]float64{append(make([]float64, 19), 1)}, Pass},
		// Higher is better: throughput halved is a regression, doubled an improvement.
		{"throughput halved", throughputSpec, rs(5, 1000, 0.02), rs(1, 500, 0.02), Regression},
		{"throughput doubled", throughputSpec, rs(5, 1000, 0.02), rs(1, 2000, 0.02), Improvement},
		{"large but noisy", timeSpec, rs(5, 100, 0.3), rs(1, 125, 0.3), Inconclusive},
	} {
		r := Compare(c.spec, c.base, c.cand, DefaultThresholds)
		if r.Verdict != c.want {
			t.Errorf("%s: verdict %s (Δ %s, p=%.3g, allowance %.0f%%, %q), want %s", c.name, r.Verdict, FormatDelta(r), r.P, r.AllowancePct, r.Reason, c.want)
		}
		if r.Verdict == Inconclusive && r.Reason == "" {
			t.Errorf("%s: inconclusive without a reason", c.name)
		}
		if strings.Contains(r.Reason, "steps") {
			t.Errorf("%s: advice in steps: %q", c.name, r.Reason)
		}
	}
	r := Compare(countSpec, [][]float64{{0, 0}, {0, 0}}, [][]float64{{1, 0}, {1, 1}}, DefaultThresholds)
	if !math.IsInf(r.DeltaPct, 1) || r.Delta != 0.75 || r.Scale != ScaleAbsolute || FormatDelta(r) != "new" {
		t.Errorf("0 -> 0.75: delta %v (%v%%, %s), scale %s", r.Delta, r.DeltaPct, FormatDelta(r), r.Scale)
	}
	r = Compare(timeSpec, runs(rng, 1, 20, 100, 0, 0.02), runs(rng, 1, 20, 200, 0, 0.02), DefaultThresholds)
	if !strings.Contains(r.Reason, "record ≥ 3 baseline runs") || r.NeedBaseRuns < 1 || r.NeedRuns != 0 {
		t.Errorf("1 vs 1: reason %q, need %d candidate and %d baseline runs, want 0 and ≥ 1", r.Reason, r.NeedRuns, r.NeedBaseRuns)
	}
	// Inconclusive cases say what would settle them in runs (or that
	// no number of runs would, at the allowance), never in steps.
	for _, level := range []float64{105, 108, 113, 125} {
		r = Compare(timeSpec, runs(rng, 3, 20, 100, 0.08, 0.02), runs(rng, 1, 20, level, 0, 0.02), DefaultThresholds)
		if r.Verdict == Inconclusive && (!strings.Contains(r.Reason, "run(s)") || strings.Contains(r.Reason, "step")) {
			t.Errorf("Δ %s: reason %q says nothing in runs", FormatDelta(r), r.Reason)
		}
		if r.Verdict == Inconclusive && strings.Contains(r.Reason, "would settle it") && r.NeedRuns < 1 {
			t.Errorf("Δ %s: reason %q but need_runs %d", FormatDelta(r), r.Reason, r.NeedRuns)
		}
	}
}

// TestNeverSilentPass: over random samples of every shape, no comparison
// whose estimate lies beyond the allowance passes.
func TestNeverSilentPass(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var passes, beyond int
	for range 5000 {
		spec := timeSpec
		spec.Allowance = []float64{0, 0.05, 0.15, 0.3}[rng.IntN(4)]
		spec.Better = []int{-1, 1}[rng.IntN(2)]
		side := func(shift float64) [][]float64 {
			rs := make([][]float64, 1+rng.IntN(5))
			for i := range rs {
				rs[i] = steps(rng, 1+rng.IntN(12), 100*(1+shift)*(1+0.1*rng.NormFloat64()), rng.Float64()*0.5)
			}
			return rs
		}
		r := Compare(spec, side(0), side(rng.NormFloat64()*0.3), Thresholds{Alpha: 0.05, Paired: rng.IntN(2) == 0})
		limit := math.Max(r.AllowancePct, 0)
		if math.Abs(r.DeltaPct) > limit*(1+1e-12) && r.Verdict == Pass {
			t.Fatalf("pass with Δ %s beyond ±%.0f%%", FormatDelta(r), r.AllowancePct)
		}
		if r.Verdict == Pass {
			passes++
		}
		if math.Abs(r.DeltaPct) > limit {
			beyond++
		}
	}
	t.Logf("5000 random comparisons: %d passes, %d with the estimate beyond the allowance (none passed)", passes, beyond)
}

// runs draws k runs of n steps: each run's level drifts by runCV around
// level (run-to-run drift), its steps by stepCV around the run's level.
func runs(rng *rand.Rand, k, n int, level, runCV, stepCV float64) [][]float64 {
	out := make([][]float64, k)
	for i := range out {
		out[i] = steps(rng, n, level*math.Exp(runCV*rng.NormFloat64()), stepCV)
	}
	return out
}

// periodic makes every third step of each run take factor times as long.
func periodic(rs [][]float64, factor float64) [][]float64 {
	for _, r := range rs {
		for i := range r {
			if i%3 == 2 {
				r[i] *= factor
			}
		}
	}
	return rs
}

// syncs draws k runs of n steps with a sync call in each step with
// probability p (counts: ties everywhere).
func syncs(rng *rand.Rand, k, n int, p float64) [][]float64 {
	out := make([][]float64, k)
	for i := range out {
		out[i] = make([]float64, n)
		for j := range out[i] {
			if rng.Float64() < p {
				out[i][j] = 1
			}
		}
	}
	return out
}

// TestRates is the property test of the noise model: run-to-run drift
// (lognormal run levels), step noise, periodic slow steps, ties (counts)
// and a higher-is-better metric, 2,000 trials a cell. The same cells
// through the real `gpugate compare -runs` are in cmd/gpugate
// (TestSimulatedVerdicts).
func TestRates(t *testing.T) {
	trials := 2000
	if testing.Short() {
		trials = 300
	}
	rng := rand.New(rand.NewPCG(21, 22))
	rate := func(f func() bool) float64 {
		n := 0
		for range trials {
			if f() {
				n++
			}
		}
		return float64(n) / float64(trials)
	}
	is := func(v Verdict) func(spec Spec, b, c [][]float64) bool {
		return func(spec Spec, b, c [][]float64) bool { return Compare(spec, b, c, DefaultThresholds).Verdict == v }
	}
	reg := is(Regression)
	for _, c := range []struct {
		name    string
		f       func() bool
		min, mx float64
	}{
		{"A/A 1 vs 5, run CV 8%: false regression", func() bool {
			return reg(timeSpec, runs(rng, 5, 50, 100, 0.08, 0.03), runs(rng, 1, 50, 100, 0.08, 0.03))
		}, 0, 0.02},
		{"A/A 1 vs 5, run CV 12%: false regression", func() bool {
			return reg(timeSpec, runs(rng, 5, 50, 100, 0.12, 0.03), runs(rng, 1, 50, 100, 0.12, 0.03))
		}, 0, 0.03},
		{"A/A 1 vs 5, run CV 2%: pass", func() bool {
			return is(Pass)(timeSpec, runs(rng, 5, 50, 100, 0.02, 0.03), runs(rng, 1, 50, 100, 0.02, 0.03))
		}, 0.9, 1},
		{"every 3rd step ×2, 1 vs 5, CV 2%", func() bool {
			return reg(timeSpec, runs(rng, 5, 50, 100, 0.02, 0.03), periodic(runs(rng, 1, 50, 100, 0.02, 0.03), 2))
		}, 0.95, 1},
		{"step time ×2, 3 vs 3, CV 8%", func() bool {
			return reg(timeSpec, runs(rng, 3, 50, 100, 0.08, 0.03), runs(rng, 3, 50, 200, 0.08, 0.03))
		}, 0.95, 1},
		{"new sync in 60% of steps, 3 vs 5", func() bool { return reg(countSpec, syncs(rng, 5, 50, 0), syncs(rng, 3, 50, 0.6)) }, 0.95, 1},
		{"+30% (2× allowance), 1 vs 5, CV 5%", func() bool {
			return reg(timeSpec, runs(rng, 5, 50, 100, 0.05, 0.03), runs(rng, 1, 50, 130, 0.05, 0.03))
		}, 0.85, 1},
		{"throughput −30%, 1 vs 5, CV 5%", func() bool {
			return reg(throughputSpec, runs(rng, 5, 50, 1000, 0.05, 0.03), runs(rng, 1, 50, 1000/1.3, 0.05, 0.03))
		}, 0.85, 1},
		{"throughput A/A 1 vs 5, CV 8%: false regression", func() bool {
			return reg(throughputSpec, runs(rng, 5, 50, 1000, 0.08, 0.03), runs(rng, 1, 50, 1000, 0.08, 0.03))
		}, 0, 0.02},
	} {
		got := rate(c.f)
		t.Logf("%-50s %6.2f%% (%d trials)", c.name, 100*got, trials)
		if got < c.min || got > c.mx {
			t.Errorf("%s: %.2f%%, want within [%.0f%%, %.0f%%]", c.name, 100*got, 100*c.min, 100*c.mx)
		}
	}
}

func TestOverall(t *testing.T) {
	rs := []Result{{Gate: true, Verdict: Pass}, {Gate: false, Verdict: Regression}}
	if v := Overall(rs); v != Pass {
		t.Errorf("non-gate regression: %s, want pass", v)
	}
	rs = append(rs, Result{Gate: true, Verdict: Inconclusive})
	if v := Overall(rs); v != Inconclusive {
		t.Errorf("%s, want inconclusive", v)
	}
	rs = append(rs, Result{Gate: true, Verdict: Regression})
	if v := Overall(rs); v != Regression {
		t.Errorf("%s, want regression", v)
	}
}

func TestJSON(t *testing.T) {
	r := Compare(timeSpec, [][]float64{{100}}, [][]float64{{120}}, DefaultThresholds)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	ci, _ := m["ci_pct"].([]any)
	bm, _ := m["baseline"].(map[string]any)
	if len(ci) != 2 || ci[0] != nil || ci[1] != nil || math.Abs(m["delta_pct"].(float64)-20) > 1e-9 || m["sample_unit"] != "run" || m["scale"] != "log" ||
		bm["run_means"] == nil || m["need_runs"] == nil {
		t.Errorf("JSON %s", b)
	}
}

// BenchmarkCompare is the whole comparison of one metric, 5 runs of
// 20 k steps against 1.
func BenchmarkCompare(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	base, cand := runs(rng, 5, 20000, 100, 0.05, 0.05), runs(rng, 1, 20000, 103, 0.05, 0.05)
	for b.Loop() {
		Compare(timeSpec, base, cand, DefaultThresholds)
	}
}

// The advice of repeat: auto below max_runs: runs are counted at the level
// each look has, AutoAlpha/max(n, max_runs), which is AutoAlpha/max_runs
// while n ≤ max_runs (the looks were planned for max_runs), not
// AutoAlpha/n (issue 37's mutant of alphaAt's divisor). Checked against a
// pooled t interval computed here.
func TestAutoAdviceBelowMaxRuns(t *testing.T) {
	const autoA, most = 0.02, 10
	base := [][]float64{{100}, {108}, {94}, {104}, {96}, {102}}
	cand := [][]float64{{120}, {114}}
	r := Compare(timeSpec, base, cand, Thresholds{Alpha: autoA / most, AutoAlpha: autoA, AutoMaxRuns: most})
	if r.Verdict != Inconclusive {
		t.Fatalf("%s, want inconclusive (the test's premise)", r.Verdict)
	}
	lx, ly := make([]float64, len(base)), make([]float64, len(cand))
	for i, b := range base {
		lx[i] = math.Log(b[0])
	}
	for i, c := range cand {
		ly[i] = math.Log(c[0])
	}
	mx, my := meanOf(lx), meanOf(ly)
	k := float64(len(lx))
	est := my - mx
	sd := math.Sqrt((sumSq(lx) + sumSq(ly)) / (k + float64(len(ly)) - 2))
	need := func(alpha func(m int) float64) int {
		for m := len(cand) + 1; m <= len(cand)+30; m++ {
			hw := TQuantile(1-alpha(m)/2, k+float64(m)-2) * sd * math.Sqrt(1/k+1/float64(m))
			lo, hi, w := math.Expm1(est-hw), math.Expm1(est+hw), math.Expm1(est)
			if lo > 0 && w > 0.15 || hi <= 0.15 && math.Abs(w) <= 0.15 {
				return m - len(cand)
			}
		}
		return 0
	}
	want := need(func(m int) float64 { return autoA / float64(max(m, most)) })
	loose := need(func(m int) float64 { return autoA / float64(m) })
	if want == 0 || len(cand)+want >= most || want == loose {
		t.Fatalf("the case does not tell the levels apart: %d more runs at 2%%/max(n, %d), %d at 2%%/n", want, most, loose)
	}
	t.Logf("need_runs %d: %d more at 2%%/max(n, %d), %d at 2%%/n", r.NeedRuns, want, most, loose)
	if r.NeedRuns != want {
		t.Errorf("need_runs %d (%s), want %d (at 2%%/%d; 2%%/n would say %d)", r.NeedRuns, r.Reason, want, most, loose)
	}
}
