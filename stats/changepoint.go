package stats

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
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

// Change is one change point that ChangePoints found.
type Change struct {
	// Index is the first point after the change.
	Index int `json:"index"`
	// P is the permutation p-value of the split within the segment it was
	// found in.
	P float64 `json:"p_value"`
	// Before and After are the means of the segments on either side (up
	// to the neighbouring change points).
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	// Shift is the Hodges–Lehmann shift from the segment before to the one
	// after, with its 1-alpha interval.
	Shift Shift `json:"-"`
}

// Relative is the change in the mean relative to the mean before it.
func (c Change) Relative() float64 { return (c.After - c.Before) / c.Before }

// ChangeOptions tune ChangePoints; the zero value gives the defaults.
type ChangeOptions struct {
	// Alpha is the significance level of each split (default 0.05). A
	// permutation test of n points cannot give a p-value below about
	// 2/C(n, k) for a split into k and n−k: 9 runs, 5 before a shift
	// and 4 after, give at best p=2/126=0.016, so that α=0.01 would never
	// see a shift in a short history. On stationary noise α=0.05 gives
	// about 0.05 false change points per series, far inside the bound of
	// 1 per 200 runs (TestChangePointsNoise).
	Alpha float64
	// Permutations per significance test (default 999: with 199 the
	// p-value is coarse, and a 5% shift at CV 2% with 5 runs after it was
	// found in 68 of 100 series at α=0.01 against 79 with 999).
	Permutations int
	// MinSize is the fewest points a segment may have (default 3), so that
	// one outlier is never a segment of its own.
	MinSize int
}

// ChangePoints finds the sustained shifts in a series (per-run medians of
// a metric, oldest first) with E-divisive (Matteson & James, "A
// Nonparametric Approach for Multiple Change Point Analysis of
// Multivariate Data", JASA 2014), the method Apache Otava (formerly
// Hunter, MongoDB's signal-processing-algorithms) runs over CI
// performance history:
//
//   - the candidate split of a segment maximizes the energy statistic
//     Q(τ) = nm/(n+m) · (2/(nm) Σ|x−y| − 1/C(n,2) Σ|x−x'| − 1/C(m,2) Σ|y−y'|)
//     between its n points before τ and m after (α=1 in the paper), which
//     is sensitive to any change of distribution, not only of the mean;
//   - the split is significant when a permutation test says so: the
//     series' points are shuffled within the segment (Permutations times,
//     with a seed fixed by the segment, so that a report is reproducible)
//     and p = (1 + #{max Q of a shuffle ≥ max Q}) / (1 + Permutations);
//     p < Alpha keeps the split (the paper's test; Otava's t-test on the
//     chosen split ignores that the split was chosen to be extreme, and
//     so needs a much smaller threshold);
//   - a kept split bisects its segment and each side is searched again
//     (hierarchical bisection), until no segment has a significant split.
//
// On stationary noise a series gets a false change point only when the
// first test rejects, with probability Alpha (TestChangePointsNoise
// measures it). The result is sorted by Index.
func ChangePoints(xs []float64, o ChangeOptions) []Change {
	if o.Alpha <= 0 {
		o.Alpha = 0.05
	}
	if o.Permutations <= 0 {
		o.Permutations = 999
	}
	if o.MinSize < 2 {
		o.MinSize = 3
	}
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
	}
	var cuts []int
	pvals := map[int]float64{}
	var search func(lo, hi int)
	search = func(lo, hi int) {
		seg := xs[lo:hi]
		if len(seg) < 2*o.MinSize {
			return
		}
		tau, q := energySplit(seg, o.MinSize)
		if q <= 0 {
			return
		}
		rng := rand.New(rand.NewPCG(uint64(lo)<<32|uint64(hi), uint64(len(xs))))
		ys := append([]float64(nil), seg...)
		// A test stops as soon as its p-value cannot fall below Alpha:
		// on noise that is after a few shuffles.
		count := 0
		p := func() float64 { return float64(count+1) / float64(o.Permutations+1) }
		for range o.Permutations {
			rng.Shuffle(len(ys), func(i, j int) { ys[i], ys[j] = ys[j], ys[i] })
			// A shuffle that lands on the same split has the same Q up to
			// rounding (the sums are taken in another order): it counts.
			if _, qp := energySplit(ys, o.MinSize); qp >= q-1e-9*math.Abs(q) {
				count++
				if p() >= o.Alpha {
					return
				}
			}
		}
		cuts = append(cuts, lo+tau)
		pvals[lo+tau] = p()
		search(lo, lo+tau)
		search(lo+tau, hi)
	}
	search(0, len(xs))
	slices.Sort(cuts)
	out := make([]Change, 0, len(cuts))
	for i, c := range cuts {
		lo, hi := 0, len(xs)
		if i > 0 {
			lo = cuts[i-1]
		}
		if i+1 < len(cuts) {
			hi = cuts[i+1]
		}
		before, after := xs[lo:c], xs[c:hi]
		b, _ := sortedFinite(before)
		a, _ := sortedFinite(after)
		out = append(out, Change{Index: c, P: pvals[c], Before: mean(before), After: mean(after), Shift: HodgesLehmann(b, a, o.Alpha)})
	}
	return out
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// energySplit returns the split τ (minSize ≤ τ ≤ n−minSize) of xs with the
// largest energy statistic Q(τ), and Q. It is O(n log n), so that a
// thousand permutations of a 200-run history take milliseconds: as τ
// grows, point τ−1 moves from the right side to the left, and the sums of
// distances change by its distances to the points already on the left
// (a Fenwick tree over the values' ranks holds their count and sum) and
// to the points still on the right (its distance to every point, from
// the sorted values, less those).
func energySplit(xs []float64, minSize int) (int, float64) {
	n := len(xs)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(xs[a], xs[b]) })
	rank := make([]int, n)
	all := make([]float64, n) // Σ_k |x_i − x_k|
	var total float64
	for _, i := range order {
		total += xs[i]
	}
	var below, within float64
	for p, i := range order {
		v := xs[i]
		rank[i] = p + 1
		all[i] = v*float64(p) - below + (total - below - v) - v*float64(n-1-p)
		within += v*float64(p) - below
		below += v
	}
	cnt := make([]float64, n+1)
	sum := make([]float64, n+1)
	var left, cross, right = 0.0, 0.0, within
	var leftN, leftSum float64
	best, bestTau := math.Inf(-1), 0
	for tau := 1; tau < n; tau++ {
		x, r := xs[tau-1], rank[tau-1]
		var cb, sb float64
		for k := r - 1; k > 0; k -= k & -k {
			cb += cnt[k]
			sb += sum[k]
		}
		toLeft := x*cb - sb + (leftSum - sb) - x*(leftN-cb)
		fromRight := all[tau-1] - toLeft
		for k := r; k <= n; k += k & -k {
			cnt[k]++
			sum[k] += x
		}
		leftN++
		leftSum += x
		left += toLeft
		cross += fromRight - toLeft
		right -= fromRight
		nl, nr := float64(tau), float64(n-tau)
		if tau < minSize || n-tau < minSize {
			continue
		}
		e := 2 * cross / (nl * nr)
		if nl > 1 {
			e -= left / (nl * (nl - 1) / 2)
		}
		if nr > 1 {
			e -= right / (nr * (nr - 1) / 2)
		}
		if q := nl * nr / (nl + nr) * e; q > best {
			best, bestTau = q, tau
		}
	}
	return bestTau, best
}
