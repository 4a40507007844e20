package stats

import (
	"math/rand/v2"
	"testing"
)

func series(rng *rand.Rand, n int, level func(i int) float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = level(i) * (1 + 0.03*rng.NormFloat64())
	}
	return out
}

func TestChangePointStep(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	found := 0
	for trial := range 100 {
		xs := series(rng, 30, func(i int) float64 {
			if i < 18 {
				return 100
			}
			return 110
		})
		r := ChangePoint(xs, 0.01, 999)
		if r.Found {
			found++
			if r.Index < 16 || r.Index > 20 {
				t.Errorf("trial %d: change found at %d, want about 18", trial, r.Index)
			}
		}
	}
	t.Logf("step of +10%% after 18 of 30 runs (3%% noise): found in %d of 100 series", found)
	if found < 95 {
		t.Errorf("step change found in %d of 100 series, want >= 95", found)
	}
}

func TestChangePointDrift(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	found := 0
	for range 100 {
		// +0.5% per night over 30 nights: no single night crosses a 15% gate.
		xs := series(rng, 30, func(i int) float64 { return 100 * (1 + 0.005*float64(i)) })
		if ChangePoint(xs, 0.01, 999).Found {
			found++
		}
	}
	t.Logf("slow drift of +0.5%% per run over 30 runs (3%% noise): found in %d of 100 series", found)
	if found < 90 {
		t.Errorf("slow drift found in %d of 100 series, want >= 90", found)
	}
}

func TestChangePointNoise(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const trials = 400
	alarms := 0
	for range trials {
		if ChangePoint(series(rng, 30, func(int) float64 { return 100 }), 0.01, 199).Found {
			alarms++
		}
	}
	rate := float64(alarms) / trials
	t.Logf("pure noise, 30 runs, alpha 0.01: false alarms in %d of %d series (%.1f%%)", alarms, trials, 100*rate)
	if rate > 0.03 {
		t.Errorf("false-alarm rate %.1f%% on noise, want about 1%%", 100*rate)
	}
	if r := ChangePoint([]float64{1, 2, 3}, 0.01, 99); r.Found {
		t.Error("change found in a 3-point series")
	}
}
