package nsys

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// sortRuns orders rows exactly as a comparison sort does, whatever their
// order: sorted, a few runs per process with processes interleaved (as nsys
// writes tables), reversed, random, and with equal rows.
func TestSortRuns(t *testing.T) {
	type row struct {
		pid        int32
		start, seq int64
	}
	byKey := func(a, b *row) int {
		return cmp.Or(cmp.Compare(a.pid, b.pid), cmp.Compare(a.start, b.start), cmp.Compare(a.seq, b.seq))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	shapes := map[string]func(n int) []row{
		"sorted": func(n int) []row {
			out := make([]row, n)
			for i := range out {
				out[i] = row{int32(i * 3 / n), int64(i), 0}
			}
			return out
		},
		"interleaved runs": func(n int) []row {
			out := make([]row, n)
			for i := range out {
				// 3 processes row by row; each has runs of 50 rows that
				// restart 20 earlier (buffers flushed out of order).
				out[i] = row{int32(i % 3), int64(i/3) - int64(i/150)*20, int64(rng.IntN(2))}
			}
			return out
		},
		"reversed": func(n int) []row {
			out := make([]row, n)
			for i := range out {
				out[i] = row{int32(i % 2), int64(n - i), 0}
			}
			return out
		},
		"random": func(n int) []row {
			out := make([]row, n)
			for i := range out {
				out[i] = row{int32(rng.IntN(4)), rng.Int64N(100), rng.Int64N(3)}
			}
			return out
		},
		"equal": func(n int) []row {
			out := make([]row, n)
			for i := range out {
				out[i] = row{1, 5, 0}
			}
			return out
		},
	}
	for name, shape := range shapes {
		for _, n := range []int{0, 1, 2, 3, 17, 1000, 20000} {
			got := shape(n)
			want := slices.Clone(got)
			slices.SortFunc(want, func(a, b row) int { return byKey(&a, &b) })
			sortRuns(got, func(r *row) int32 { return r.pid }, byKey)
			if !slices.Equal(got, want) {
				t.Errorf("%s, %d rows: order differs from slices.SortFunc", name, n)
			}
		}
	}
}
