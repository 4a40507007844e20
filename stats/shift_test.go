package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestHodgesLehmann checks the selection against the full sorted list of
// pairwise differences, ties included.
func TestHodgesLehmann(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 500 {
		n1, n2 := 1+rng.IntN(30), 1+rng.IntN(30)
		x, y := make([]float64, n1), make([]float64, n2)
		for i := range x {
			x[i] = math.Round(rng.NormFloat64()*10) / 4 // ties
		}
		for i := range y {
			y[i] = math.Round(rng.NormFloat64()*10+float64(trial%5))/4 + 0.1
		}
		slices.Sort(x)
		slices.Sort(y)
		var d []float64
		for _, a := range x {
			for _, b := range y {
				d = append(d, b-a)
			}
		}
		slices.Sort(d)
		n := len(d)
		want := d[n/2]
		if n%2 == 0 {
			want = (d[n/2-1] + d[n/2]) / 2
		}
		s := HodgesLehmann(x, y, 0.05)
		if s.Estimate != want {
			t.Fatalf("n=%d+%d: estimate %v, want %v", n1, n2, s.Estimate, want)
		}
		c := uCritical(n1, n2, 0.05)
		if c >= 1 && (!s.Bounded || s.Lo != d[c-1] || s.Hi != d[n-int(c)]) {
			t.Fatalf("n=%d+%d: interval [%v, %v], want [%v, %v] (c=%d)", n1, n2, s.Lo, s.Hi, d[c-1], d[n-int(c)], c)
		}
		if c < 1 && s.Bounded {
			t.Fatalf("n=%d+%d: bounded interval where none is attainable", n1, n2)
		}
	}
}

// Critical values from the published tables of the Mann–Whitney U test
// (two-sided α = 0.05: reject when U <= Ucrit, so c = Ucrit + 1).
func TestUCritical(t *testing.T) {
	for _, c := range []struct {
		n1, n2 int
		ucrit  int64 // -1: none
	}{{3, 3, -1}, {4, 4, 0}, {5, 5, 2}, {6, 6, 5}, {8, 8, 13}, {10, 10, 23}, {5, 10, 8}, {20, 20, 127}, {3, 5, 0}, {2, 8, 0}, {2, 7, -1}} {
		if got := uCritical(c.n1, c.n2, 0.05); got != c.ucrit+1 {
			t.Errorf("uCritical(%d, %d) = %d, want %d", c.n1, c.n2, got, c.ucrit+1)
		}
	}
	// The normal approximation takes over above 50 and must agree with the
	// exact distribution around the switch.
	exact := uCritical(50, 50, 0.05)
	n := 2500.0
	approx := int64(math.Floor(n/2-0.5-1.959963984540054*math.Sqrt(n*101/12))) + 1
	if d := exact - approx; d < -1 || d > 1 {
		t.Errorf("n=50+50: exact c=%d, normal approximation %d", exact, approx)
	}
}
