package kineto

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpugate/gpugate/trace"
)

// TestSortedLikeProfileSort checks that the radix sort of the chunks gives
// exactly trace.Profile.Sort's order: records in interleaved, nearly sorted
// runs with many equal starts, across chunk boundaries, and starts ±2^62
// apart, which take the comparison-sort fallback.
func TestSortedLikeProfileSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, spread := range []int64{0, 10, 1 << 40, maxTime} {
		for _, n := range []int{0, 1, 300, 70_000, 200_000} {
			var g chunks[trace.GPUOp]
			var a chunks[trace.APICall]
			var r chunks[trace.Range]
			var want trace.Profile
			for i := range n {
				start := int64(i/7)*3 - rng.Int64N(5) // runs with ties and small inversions
				if spread > 10 {
					start = rng.Int64N(spread) - spread/2
				} else if spread == 0 {
					start = 42
				}
				end := start + rng.Int64N(4)
				name := trace.Name(rng.IntN(3))
				op := trace.GPUOp{Start: start, End: end, Corr: rng.Int64N(3), Device: int32(rng.IntN(2)), Stream: int32(rng.IntN(2)), Name: name}
				call := trace.APICall{Start: start, End: end, Corr: rng.Int64N(3), Thread: rng.Int64N(3), Name: name}
				rg := trace.Range{Start: start, End: end, Thread: rng.Int64N(3), Name: name}
				g.add(op)
				a.add(call)
				r.add(rg)
				want.GPU, want.API, want.Ranges = append(want.GPU, op), append(want.API, call), append(want.Ranges, rg)
			}
			want.Sort()
			gotG := sorted(&g, func(x *trace.GPUOp) int64 { return x.Start }, cmpGPU)
			gotA := sorted(&a, func(x *trace.APICall) int64 { return x.Start }, cmpAPI)
			gotR := sorted(&r, func(x *trace.Range) int64 { return x.Start }, cmpRange)
			// Records that compare equal on every compared field may
			// come in either order; those generated here differ in no
			// other field, so the lists must be equal.
			if !slices.Equal(gotG, want.GPU) && !(len(gotG) == 0 && len(want.GPU) == 0) {
				t.Errorf("spread %d, %d records: GPU order differs", spread, n)
			}
			if !slices.Equal(gotA, want.API) && !(len(gotA) == 0 && len(want.API) == 0) {
				t.Errorf("spread %d, %d records: API order differs", spread, n)
			}
			if !slices.Equal(gotR, want.Ranges) && !(len(gotR) == 0 && len(want.Ranges) == 0) {
				t.Errorf("spread %d, %d records: range order differs", spread, n)
			}
		}
	}
}
