package stats

import (
	"math"
	"slices"
	"sync"
)

// Shift, with HodgesLehmann, serves the change points of the history
// (changepoint.go); the gate itself judges run means (stats.go).
//
// Shift is the Hodges–Lehmann estimate of the shift between two samples —
// the median of all pairwise differences y[j] - x[i] — and its
// distribution-free confidence interval: the c-th smallest and c-th largest
// pairwise difference, with c from the null distribution of the Mann–Whitney
// U statistic (Hollander & Wolfe, Nonparametric Statistical Methods, §4.3).
// It is the interval that goes with the U test: it excludes 0 exactly when
// the test rejects at the same level.
type Shift struct {
	Estimate float64
	// Lo and Hi bound the interval; ±Inf when the samples are too small for
	// any interval at the requested level (Bounded is false then).
	Lo, Hi  float64
	Bounded bool
}

// HodgesLehmann returns the shift from x to y with a 1-alpha confidence
// interval. x and y must be sorted, non-empty and finite.
//
// There are len(x)·len(y) pairwise differences; the order statistics are
// selected without listing them all: a bisection on the value with a
// two-pointer count of the differences at or below it (O(n1+n2) a count)
// narrows the bracket to a few thousand differences, which are listed and
// sorted (kthDiff). About 0.2 s of CPU for 100 k steps a side. Rejected
// designs: listing and sorting the differences (n1·n2 log) takes minutes for
// 40 k steps a side; subsampling them (the previous code) gives an estimate
// that depends on the stride and no interval; Monahan's randomized
// selection is as fast but longer to get right.
func HodgesLehmann(x, y []float64, alpha float64) Shift {
	n := int64(len(x)) * int64(len(y))
	var s Shift
	if n%2 == 1 {
		s.Estimate = kthDiff(x, y, (n+1)/2)
	} else {
		s.Estimate = (kthDiff(x, y, n/2) + kthDiff(x, y, n/2+1)) / 2
	}
	c := uCritical(len(x), len(y), alpha)
	if c < 1 {
		s.Lo, s.Hi = math.Inf(-1), math.Inf(1)
		return s
	}
	s.Lo, s.Hi, s.Bounded = kthDiff(x, y, c), kthDiff(x, y, n-c+1), true
	return s
}

// countLE counts the pairs with y[j] - x[i] <= t. For a fixed i the
// differences grow with j, and the number of j that qualify grows with
// x[i], so one pointer sweeps y once. Rounding is monotone, so the counts
// are exact for the differences as float64 computes them.
func countLE(x, y []float64, t float64) int64 {
	var c int64
	j := 0
	for _, xi := range x {
		for j < len(y) && y[j]-xi <= t {
			j++
		}
		c += int64(j)
	}
	return c
}

// kthDiff returns the k-th smallest (1-based) of the differences y[j]-x[i].
// It bisects on the value, keeping cnt(<= a) < k <= cnt(<= b), until at
// most a few thousand differences lie in (a, b] (about 20 halvings for 10^10
// differences), then lists those and picks the one. Ties can keep more in
// the bracket until a and b are adjacent floats, when b is the answer.
func kthDiff(x, y []float64, k int64) float64 {
	b := y[len(y)-1] - x[0]
	a := math.Nextafter(y[0]-x[len(x)-1], math.Inf(-1))
	ca, cb := int64(0), int64(len(x))*int64(len(y))
	limit := int64(max(len(x)+len(y), 4096))
	for cb-ca > limit {
		mid := a + (b-a)/2
		if mid <= a || mid >= b {
			return b // adjacent floats: every difference in (a, b] is b
		}
		if c := countLE(x, y, mid); c >= k {
			b, cb = mid, c
		} else {
			a, ca = mid, c
		}
	}
	// List the differences in (a, b]: for each x[i] they are y[lo:hi],
	// and both bounds only move forward as x[i] grows.
	in := make([]float64, 0, cb-ca)
	lo, hi := 0, 0
	for _, xi := range x {
		for lo < len(y) && y[lo]-xi <= a {
			lo++
		}
		for hi < len(y) && y[hi]-xi <= b {
			hi++
		}
		for j := lo; j < hi; j++ {
			in = append(in, y[j]-xi)
		}
	}
	slices.Sort(in)
	return in[k-ca-1]
}

// exactLimit is the largest sample size for which the exact null
// distribution of U is computed; above it the normal approximation is
// accurate to far better than the α it is used with.
const exactLimit = 50

// uCritical returns c, the rank of the pairwise difference that bounds a
// two-sided 1-alpha interval: the largest c with P(U <= c-1) <= alpha/2
// under the null hypothesis. 0 means that no interval is attainable: even
// complete separation is not significant at alpha.
func uCritical(n1, n2 int, alpha float64) int64 {
	if n1 == 0 || n2 == 0 {
		return 0
	}
	if n1 <= exactLimit && n2 <= exactLimit {
		cdf := uCDF(n1, n2)
		c := int64(0)
		for u, p := range cdf {
			if p > alpha/2*(1+1e-12) {
				break
			}
			c = int64(u) + 1
		}
		return c
	}
	n := float64(n1) * float64(n2)
	sd := math.Sqrt(n * float64(n1+n2+1) / 12)
	z := math.Sqrt2 * math.Erfinv(1-alpha)
	u := math.Floor(n/2 - 0.5 - z*sd) // continuity-corrected
	return max(0, int64(u)+1)
}

var uCDFCache sync.Map

// uCDF returns P(U <= u) for u = 0..n1·n2 under the null hypothesis (no
// ties), from the recurrence f(i, j, u) = f(i-1, j, u-j) + f(i, j-1, u)
// on the counts of orderings.
func uCDF(n1, n2 int) []float64 {
	type key struct{ a, b int }
	if v, ok := uCDFCache.Load(key{n1, n2}); ok {
		return v.([]float64)
	}
	// prev[j] is the distribution for sizes (i-1, j), cur[j] for (i, j).
	prev := make([][]float64, n2+1)
	for j := range prev {
		prev[j] = []float64{1}
	}
	for i := 1; i <= n1; i++ {
		cur := make([][]float64, n2+1)
		cur[0] = []float64{1}
		for j := 1; j <= n2; j++ {
			f := make([]float64, i*j+1)
			for u, v := range prev[j] { // i-1, j: shifted by j
				f[u+j] += v
			}
			for u, v := range cur[j-1] {
				f[u] += v
			}
			cur[j] = f
		}
		prev = cur
	}
	f := prev[n2]
	var total float64
	for _, v := range f {
		total += v
	}
	cdf := make([]float64, len(f))
	var acc float64
	for u, v := range f {
		acc += v
		cdf[u] = acc / total
	}
	uCDFCache.Store(key{n1, n2}, cdf)
	return cdf
}

// minSamples returns the smallest m such that samples of max(n1, m) and
// max(n2, m) give a bounded interval at alpha.
func minSamples(n1, n2 int, alpha float64) int {
	for m := 1; m <= 1000; m++ {
		if uCritical(max(n1, m), max(n2, m), alpha) >= 1 {
			return m
		}
	}
	return 1000
}
