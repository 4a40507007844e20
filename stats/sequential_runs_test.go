package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSequentialRuns is repeat: auto (gpugate run against a stored
// baseline): K = 5 baseline runs, then candidate runs one at a time, a look
// after each (1 to 5 runs), each look at α/5 with α = 2% (Bonferroni over
// the planned looks, as ab does), stopping at the first settled verdict.
// Every run, baseline or candidate, drifts by a lognormal run-to-run
// factor (sd = drift) on top of its steps' noise (CV 5%), so the unit of
// noise is the run. It must hold the A/A false-regression rate at ≤ 1%
// however often it looks, and catch real slowdowns.
func TestSequentialRuns(t *testing.T) {
	trials := 2000
	if testing.Short() {
		trials = 300
	}
	rng := rand.New(rand.NewPCG(41, 42))
	const k, maxRuns = 5, 5
	lookAlpha := 0.02 / maxRuns
	run := func(level, drift float64) []float64 {
		return steps(rng, 30, level*math.Exp(drift*rng.NormFloat64()), 0.05)
	}
	seq := func(factor, drift float64) (Verdict, int) {
		var b, c [][]float64
		for range k {
			b = append(b, run(100, drift))
		}
		for i := 1; i <= maxRuns; i++ {
			c = append(c, run(100*factor, drift))
			if v := Compare(timeSpec, b, c, Thresholds{Alpha: lookAlpha}).Verdict; v != Inconclusive || i == maxRuns {
				return v, i
			}
		}
		panic("unreachable")
	}
	for _, c := range []struct {
		name     string
		drift    float64
		factor   float64
		want     Verdict
		min, max float64
	}{
		{"A/A, run CV 8%: false regression", 0.08, 1, Regression, 0, 0.01},
		{"A/A, run CV 12%: false regression", 0.12, 1, Regression, 0, 0.01},
		{"A/A, run CV 2%: pass", 0.02, 1, Pass, 0.9, 1},
		{"×2, run CV 8%: regression", 0.08, 2, Regression, 0.95, 1},
		{"×1.5, run CV 5%: regression", 0.05, 1.5, Regression, 0.95, 1},
		{"×1.3, run CV 5%: regression", 0.05, 1.3, Regression, 0.95, 1},
	} {
		checkRate(t, c.name, "candidate runs", trials, c.want, c.min, c.max, func() (Verdict, int) { return seq(c.factor, c.drift) })
	}
}
