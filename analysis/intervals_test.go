package analysis

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The interval algebra against a brute-force bitmap on random inputs.
func TestIntervalsBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 200
	random := func(k int) []span {
		var in []span
		for range k {
			lo := rng.Int64N(n)
			in = append(in, span{lo, lo + rng.Int64N(30)})
		}
		slices.SortFunc(in, func(a, b span) int { return int(a.lo - b.lo) })
		return in
	}
	bits := func(ss []span) []bool {
		b := make([]bool, n+40)
		for _, s := range ss {
			for u := s.lo; u < s.hi; u++ {
				b[u] = true
			}
		}
		return b
	}
	for iter := range 500 {
		a, b := unionSorted(random(8)), unionSorted(random(8))
		ba, bb := bits(a), bits(b)
		for i := 1; i < len(a); i++ {
			if a[i].lo <= a[i-1].hi {
				t.Fatalf("union not disjoint: %v", a)
			}
		}
		inter, diff := bits(intersect(a, b)), bits(subtract(a, b))
		for u := range ba {
			if inter[u] != (ba[u] && bb[u]) || diff[u] != (ba[u] && !bb[u]) {
				t.Fatalf("iter %d at %d: a=%v b=%v intersect=%v subtract=%v", iter, u, a, b, intersect(a, b), subtract(a, b))
			}
		}
		windows := []span{{0, 50}, {50, 120}, {150, 240}}
		got := perWindow(a, windows)
		for i, w := range windows {
			var want int64
			for u := w.lo; u < w.hi; u++ {
				if ba[u] {
					want++
				}
			}
			if got[i] != want {
				t.Fatalf("perWindow(%v)[%d] = %d, want %d", a, i, got[i], want)
			}
		}
	}
}
