package nsys

import (
	"cmp"
	"math"
	"slices"
)

// sortRuns sorts xs by cmp, which orders by process first (pid), for the
// way nsys writes its tables: rows in buffer order, so each process's rows
// are a few long runs already in time order, while processes interleave
// row by row (two ranks' kernels). A comparison sort of 1.9 M API calls
// cost 0.5 s of CPU on the benchmark export; this costs a pass to group
// the rows by process (stably, as indexes), a pass to find each process's
// runs, merges of runs of indexes, and one move of each row to its place.
// Rows that compare equal keep their table order. Where the rows are far
// from sorted (more runs than one per 16 rows), or too many for 32-bit
// indexes, it leaves them to slices.SortFunc.
func sortRuns[T any](xs []T, pid func(*T) int32, order func(a, b *T) int) {
	n := len(xs)
	sorted := true
	for i := 1; i < n; i++ {
		if order(&xs[i-1], &xs[i]) > 0 {
			sorted = false
			break
		}
	}
	if sorted {
		return
	}
	if n >= math.MaxUint32 {
		slices.SortFunc(xs, func(a, b T) int { return order(&a, &b) })
		return
	}
	// Group the row indexes by process, in table order within each.
	type group struct {
		pid    int32
		n, off int
	}
	var groups []group
	at := map[int32]int{}
	last := -1
	for i := range xs {
		p := pid(&xs[i])
		if last < 0 || groups[last].pid != p {
			k, ok := at[p]
			if !ok {
				k = len(groups)
				at[p] = k
				groups = append(groups, group{pid: p})
			}
			last = k
		}
		groups[last].n++
	}
	slices.SortFunc(groups, func(a, b group) int { return cmp.Compare(a.pid, b.pid) })
	off := 0
	for k := range groups {
		groups[k].off = off
		at[groups[k].pid] = k
		off += groups[k].n
	}
	perm := make([]uint32, n)
	fill := make([]int, len(groups))
	for k := range groups {
		fill[k] = groups[k].off
	}
	last = -1
	var lastPid int32
	for i := range xs {
		p := pid(&xs[i])
		if last < 0 || p != lastPid {
			last, lastPid = at[p], p
		}
		perm[fill[last]] = uint32(i)
		fill[last]++
	}
	// Sort each process's indexes: find its runs, then merge them pairwise.
	after := func(a, b uint32) bool { return order(&xs[a], &xs[b]) > 0 }
	var scratch []uint32
	var bounds []int
	runs := 0
	for _, g := range groups {
		idx := perm[g.off : g.off+g.n]
		bounds = append(bounds[:0], 0)
		for i := 1; i < len(idx); i++ {
			if after(idx[i-1], idx[i]) {
				bounds = append(bounds, i)
			}
		}
		bounds = append(bounds, len(idx))
		if runs += len(bounds) - 1; runs > n/16+64 {
			slices.SortFunc(xs, func(a, b T) int { return order(&a, &b) })
			return
		}
		if len(bounds) == 2 {
			continue
		}
		if scratch == nil {
			scratch = make([]uint32, n)
		}
		src, dst := idx, scratch[:len(idx)]
		for len(bounds) > 2 {
			nb := bounds[:1]
			k := 0
			for ; k+2 < len(bounds); k += 2 {
				lo, mid, hi := bounds[k], bounds[k+1], bounds[k+2]
				i, j, w := lo, mid, lo
				for i < mid && j < hi {
					if after(src[i], src[j]) {
						dst[w] = src[j]
						j++
					} else {
						dst[w] = src[i]
						i++
					}
					w++
				}
				w += copy(dst[w:], src[i:mid])
				copy(dst[w:], src[j:hi])
				nb = append(nb, hi)
			}
			if k+1 < len(bounds) { // an odd run left over
				copy(dst[bounds[k]:bounds[k+1]], src[bounds[k]:bounds[k+1]])
				nb = append(nb, bounds[k+1])
			}
			bounds = nb
			src, dst = dst, src
		}
		if &src[0] != &idx[0] {
			copy(idx, src)
		}
	}
	// Move each row to its place, one permutation cycle at a time.
	const done = math.MaxUint32
	for i := range perm {
		if perm[i] == done || perm[i] == uint32(i) {
			continue
		}
		tmp := xs[i]
		j := uint32(i)
		for {
			k := perm[j]
			perm[j] = done
			if k == uint32(i) {
				xs[j] = tmp
				break
			}
			xs[j] = xs[k]
			j = k
		}
	}
}
