package analysis

import "math"

// span is a half-open time interval [lo, hi) in ns.
type span struct{ lo, hi int64 }

func (s span) len() int64 { return s.hi - s.lo }

// unionSorted merges intervals sorted by lo into sorted, disjoint spans.
// Touching intervals are merged.
func unionSorted(in []span) []span {
	// Count the islands first: the inputs run to millions of intervals, and
	// growing the output by doubling cost more than the merge itself.
	n, hi := 0, int64(math.MinInt64)
	for _, s := range in {
		if s.hi <= s.lo {
			continue
		}
		if n == 0 || s.lo > hi {
			n++
			hi = s.hi
		} else {
			hi = max(hi, s.hi)
		}
	}
	out := make([]span, 0, n)
	for _, s := range in {
		if s.hi <= s.lo {
			continue
		}
		if n := len(out); n > 0 && s.lo <= out[n-1].hi {
			if s.hi > out[n-1].hi {
				out[n-1].hi = s.hi
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// intersect returns the intersection of two sorted, disjoint span lists.
func intersect(a, b []span) []span {
	out := make([]span, 0, min(len(a), len(b)))
	for i, j := 0, 0; i < len(a) && j < len(b); {
		lo, hi := max(a[i].lo, b[j].lo), min(a[i].hi, b[j].hi)
		if lo < hi {
			out = append(out, span{lo, hi})
		}
		if a[i].hi < b[j].hi {
			i++
		} else {
			j++
		}
	}
	return out
}

// subtract returns a minus b for sorted, disjoint span lists.
func subtract(a, b []span) []span {
	out := make([]span, 0, len(a))
	j := 0
	for _, s := range a {
		lo := s.lo
		for j < len(b) && b[j].hi <= lo {
			j++
		}
		for k := j; k < len(b) && b[k].lo < s.hi; k++ {
			if b[k].lo > lo {
				out = append(out, span{lo, b[k].lo})
			}
			lo = max(lo, b[k].hi)
		}
		if lo < s.hi {
			out = append(out, span{lo, s.hi})
		}
	}
	return out
}

// perWindow returns, for each window, the total length of the spans inside
// it. Both lists are sorted and disjoint.
func perWindow(spans, windows []span) []int64 {
	out := make([]int64, len(windows))
	j := 0
	for i, w := range windows {
		for j < len(spans) && spans[j].hi <= w.lo {
			j++
		}
		for k := j; k < len(spans) && spans[k].lo < w.hi; k++ {
			lo, hi := max(spans[k].lo, w.lo), min(spans[k].hi, w.hi)
			if lo < hi {
				out[i] += hi - lo
			}
		}
	}
	return out
}

// total is the summed length of disjoint spans.
func total(spans []span) int64 {
	var t int64
	for _, s := range spans {
		t += s.len()
	}
	return t
}
