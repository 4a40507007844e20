package analysis

import (
	"math/rand/v2"
	"testing"

	"github.com/gpugate/gpugate/trace"
)

// TestLinkIndexes checks link's three correlation indexes (dense slice,
// paged table, map) against a direct search, on ids that are dense, in
// blocks far apart, scattered, and shared by two processes.
func TestLinkIndexes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := map[string]func(i int) int64{
		"dense":     func(i int) int64 { return int64(i + 1) },
		"offset":    func(i int) int64 { return 5_000_000 + int64(i) },
		"blocks":    func(i int) int64 { return int64(i/1000)*1_000_000 + int64(i%1000) + 1 },
		"scattered": func(i int) int64 { return rng.Int64N(1<<50) + 1 },
	}
	for name, corr := range cases {
		for _, procs := range []int32{1, 2} {
			p := trace.New("x", trace.FormatNsys)
			for i := range 20_000 {
				c := corr(i)
				if i%97 == 0 {
					c = 0 // no id
				}
				proc := int32(i) % procs
				if i%50 == 1 && i > 1 {
					c = p.API[i-1].Corr // a repeated id, in the same or another process
				}
				p.API = append(p.API, trace.APICall{Start: int64(i), End: int64(i) + 1, Corr: c, Process: proc})
			}
			for i := 0; i < len(p.API); i += 3 {
				a := p.API[rng.IntN(len(p.API))]
				c := a.Corr
				if i%11 == 0 {
					c += 1 << 45 // an id no call has
				}
				p.GPU = append(p.GPU, trace.GPUOp{Start: int64(i), End: int64(i) + 1, Corr: c, Process: a.Process})
			}
			lo, hi := int64(1<<62), int64(0)
			for _, a := range p.API {
				if a.Corr > 0 {
					lo, hi = min(lo, a.Corr), max(hi, a.Corr)
				}
			}
			wantPaged := (name == "offset" || name == "blocks") && procs == 1
			if got := newPagedIndex(p.API, lo, hi) != nil; got != wantPaged && name != "dense" {
				t.Errorf("%s, %d processes: paged index %v, want %v", name, procs, got, wantPaged)
			}
			r := &Result{Profile: p}
			r.link()
			for i, op := range p.GPU {
				want := int32(-1)
				if op.Corr > 0 {
					for j := len(p.API) - 1; j >= 0; j-- {
						if p.API[j].Corr == op.Corr && p.API[j].Process == op.Process {
							want = int32(j)
							break
						}
					}
				}
				if procs == 2 && name == "dense" {
					// The dense slice keeps only the last call per id, as
					// it always has: ids shared by processes lose links.
					continue
				}
				if got := r.Launch[i]; got != want {
					t.Fatalf("%s, %d processes: GPU op %d (corr %d) linked to %d, want %d", name, procs, i, op.Corr, got, want)
				}
			}
		}
	}
}
