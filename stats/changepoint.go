package stats

import (
	"math"
	"math/rand/v2"
)

// ChangePointResult is the outcome of ChangePoint.
type ChangePointResult struct {
	Found bool    `json:"found"`
	Index int     `json:"index"` // first point after the change
	P     float64 `json:"p_value"`
	// Before and After are the means on either side.
	Before float64 `json:"before"`
	After  float64 `json:"after"`
}

func splitStat(xs []float64) (int, float64) {
	n := len(xs)
	total := 0.0
	for _, x := range xs {
		total += x
	}
	best, bestK := -1.0, 0
	left := 0.0
	for k := 1; k < n; k++ {
		left += xs[k-1]
		if k < 2 || n-k < 2 {
			continue
		}
		ml, mr := left/float64(k), (total-left)/float64(n-k)
		t := math.Abs(ml-mr) * math.Sqrt(float64(k*(n-k))/float64(n))
		if t > best {
			best, bestK = t, k
		}
	}
	return bestK, best
}

// ChangePoint looks for one sustained shift in a series (per-run medians of
// a metric over the nightly history). The statistic is the largest weighted
// difference of means between the two sides of a split,
// |mean(left) - mean(right)| * sqrt(k(n-k)/n), as in binary segmentation;
// its significance is a permutation test (perms shuffles of the series with
// a fixed seed, so that a report is reproducible). Found is p < alpha.
//
// Series shorter than 6 points never show one. On pure noise the false-alarm rate is alpha by construction of the
// permutation test (TestChangePointNoise measures it); a slow drift is found
// as a shift near its middle.
func ChangePoint(xs []float64, alpha float64, perms int) ChangePointResult {
	r := ChangePointResult{P: 1}
	if len(xs) < 6 {
		return r
	}
	k, t := splitStat(xs)
	rng := rand.New(rand.NewPCG(1, uint64(len(xs))))
	ys := append([]float64(nil), xs...)
	count := 0
	for range perms {
		rng.Shuffle(len(ys), func(i, j int) { ys[i], ys[j] = ys[j], ys[i] })
		if _, tp := splitStat(ys); tp >= t {
			count++
		}
	}
	r.P = float64(count+1) / float64(perms+1)
	r.Index = k
	var b, a float64
	for i, x := range xs {
		if i < k {
			b += x
		} else {
			a += x
		}
	}
	r.Before, r.After = b/float64(k), a/float64(len(xs)-k)
	r.Found = r.P < alpha
	return r
}
