package nsys

import (
	"cmp"
	"math"
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

// A correlation-id set holds exactly its ids, in each of its forms: dense,
// in clusters (pages), and scattered (hash).
func TestCorrSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	cases := map[string][]int64{
		"dense":     {},
		"clusters":  {},
		"scattered": {},
		"extremes":  {math.MinInt64, -1, 0, 1, math.MaxInt64},
	}
	for i := range 5000 {
		cases["dense"] = append(cases["dense"], int64(100+2*i))
		cases["clusters"] = append(cases["clusters"], int64(i/200)*1_000_000+int64(i%200)*3)
		cases["scattered"] = append(cases["scattered"], rng.Int64())
	}
	for name, ids := range cases {
		c := corrSet(ids)
		in := map[int64]bool{}
		for _, id := range ids {
			in[id] = true
			if !c.has(id) {
				t.Errorf("%s: %d missing", name, id)
			}
		}
		for _, id := range []int64{math.MinInt64, -2, 99, 101, 1_000_001, 49_999_999_999, math.MaxInt64 - 1, rng.Int64()} {
			if c.has(id) != in[id] {
				t.Errorf("%s: has(%d) = %v", name, id, !in[id])
			}
		}
		for _, id := range ids {
			if !in[id+1] && c.has(id+1) {
				t.Errorf("%s: has(%d) for an id not in the set", name, id+1)
			}
		}
	}
	if c := corrSet(cases["clusters"]); c.pages == nil {
		t.Error("clustered ids: no pages")
	}
	if c := corrSet(cases["scattered"]); c.hash == nil {
		t.Error("scattered ids: no hash")
	}
}
