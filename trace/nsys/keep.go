package nsys

import (
	"bytes"
	"cmp"
	"container/heap"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gpugate/gpugate/trace"
)

// Which NVTX ranges a filtered read keeps (Options.RangeNames). An export
// of a long run holds millions of ranges (emit_nvtx makes one per aten op),
// while analysis reads only a few of them: the step and data-loader ranges
// (by name), the ranges that enclose a blocking CUDA call (the host-sync
// finding names them), the ranges around the longest GPU idle gaps (the
// low-utilization finding names them), and the earliest-starting and the
// latest-ending range of each process (they bound the whole-profile window,
// which runs from the earliest start to the latest end).

// gapsKept is how many of a process's longest GPU idle gaps keep the ranges
// that overlap them. The low-utilization finding names what the host did
// during the three longest gaps inside the step windows; those lie in the
// longest gaps of the whole profile unless more than gapsKept-3 longer
// gaps fall outside the windows (warm-up), and only then does it lose the
// name.
const gapsKept = 512

// keeper decides, for a filtered read, whether a range is kept. It is
// read-only once built, so the NVTX scanners share it.
type keeper struct {
	names []nameMatcher
	syncs map[int64][]int64 // thread key (pid<<24 | tid) -> start times of blocking calls, sorted
	gaps  map[int32][]span  // pid -> the longest idle gaps, sorted by start
}

type span struct{ lo, hi int64 }

func threadKey(pid int32, tid int64) int64 { return int64(pid)<<24 | tid }

// byTime reports whether [start, end) encloses a blocking call's start
// (ts: the thread's, k.syncs) or overlaps one of the longest GPU idle gaps
// (gs: the process's, k.gaps).
func byTime(ts []int64, gs []span, start, end int64) bool {
	if len(ts) > 0 {
		i, _ := slices.BinarySearch(ts, start)
		if i < len(ts) && ts[i] < end {
			return true
		}
	}
	if len(gs) > 0 {
		// The first gap that ends after start; it overlaps if it begins before end.
		i, _ := slices.BinarySearchFunc(gs, start, func(g span, t int64) int {
			if g.hi <= t {
				return -1
			}
			return 1
		})
		if i < len(gs) && gs[i].lo < end {
			return true
		}
	}
	return false
}

// byName reports whether a name matches one of the patterns.
func (k *keeper) byName(name []byte) bool {
	for i := range k.names {
		if k.names[i].match(name) {
			return true
		}
	}
	return false
}

// newKeeper builds the filter from the profile data: blocking calls from
// api (in any order), idle gaps from gpu (sorted by process, then start).
func newKeeper(res []*regexp.Regexp, gpu []trace.GPUOp, api []trace.APICall, names *trace.Strings) *keeper {
	k := &keeper{syncs: map[int64][]int64{}, gaps: map[int32][]span{}}
	for _, re := range res {
		if re != nil {
			k.names = append(k.names, newNameMatcher(re))
		}
	}
	isSync := make([]int8, names.Len()) // 0 unknown, 1 sync, 2 not
	for i := range api {
		a := &api[i]
		if isSync[a.Name] == 0 {
			isSync[a.Name] = 2
			if trace.SyncAPI(names.String(a.Name)) {
				isSync[a.Name] = 1
			}
		}
		if isSync[a.Name] == 1 {
			key := threadKey(a.Process, a.Thread)
			k.syncs[key] = append(k.syncs[key], a.Start)
		}
	}
	for _, ts := range k.syncs { // api need not be sorted yet
		slices.Sort(ts)
	}
	for i := 0; i < len(gpu); {
		j := i
		for j < len(gpu) && gpu[j].Process == gpu[i].Process {
			j++
		}
		k.gaps[gpu[i].Process] = longestGaps(gpu[i:j], gapsKept)
		i = j
	}
	return k
}

// longestGaps returns the n longest idle intervals between the busy
// islands of ops (sorted by start), sorted by start. Ops of zero length
// are skipped, as analysis does. It keeps a min-heap of n gaps rather than
// every gap: a saturated GPU has one between almost every two kernels.
func longestGaps(ops []trace.GPUOp, n int) []span {
	var h gapHeap
	started := false
	var end int64
	for i := range ops {
		op := &ops[i]
		if op.End <= op.Start {
			continue
		}
		if started && op.Start > end {
			g := span{end, op.Start}
			switch {
			case len(h) < n:
				heap.Push(&h, g)
			case g.hi-g.lo > h[0].hi-h[0].lo:
				h[0] = g
				heap.Fix(&h, 0)
			}
		}
		if !started || op.End > end {
			end = op.End
		}
		started = true
	}
	gaps := []span(h)
	slices.SortFunc(gaps, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	return gaps
}

// gapHeap is a min-heap of gaps by length.
type gapHeap []span

func (h gapHeap) Len() int           { return len(h) }
func (h gapHeap) Less(i, j int) bool { return h[i].hi-h[i].lo < h[j].hi-h[j].lo }
func (h gapHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *gapHeap) Push(x any)        { *h = append(*h, x.(span)) }
func (h *gapHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// nameMatcher is a regexp with a literal prefilter: most names in an
// export (emit_nvtx's "aten::mm, op_id = 314359") cannot match a step or
// data-loader pattern, and finding that out with bytes.Contains is many
// times cheaper than running the regexp.
type nameMatcher struct {
	re  *regexp.Regexp
	pre *prefilter // nil: no literal is required, run the regexp
}

func newNameMatcher(re *regexp.Regexp) nameMatcher {
	m := nameMatcher{re: re}
	if parsed, err := syntax.Parse(re.String(), syntax.Perl); err == nil {
		m.pre = required(parsed.Simplify(), -1)
	}
	return m
}

func (m *nameMatcher) match(name []byte) bool {
	if m.pre != nil && !m.pre.eval(name) {
		return false
	}
	return m.re.Match(name)
}

// rareBytes orders bytes from the most to the least common in names
// (letters by their frequency in English, upper case rarer than lower):
// a literal that is not anchored is first looked for by its rarest byte,
// one bytes.IndexByte, which rules out most names at a fraction of the
// cost of a substring search.
const rareBytes = " _:,.0123456789etaoinsrhldcumfpgwybvkxjqzETAOINSRHLDCUMFPGWYBVKXJQZ"

// rarest returns the byte of lit least common in names (for a folded
// literal, lit is lower case and eval looks for a letter's upper case too).
func rarest(lit []byte) byte {
	best, rank := lit[0], -1
	for _, c := range lit {
		r := strings.IndexByte(rareBytes, c)
		if r < 0 {
			r = len(rareBytes) // not in the table: rarer than all
		}
		if r > rank {
			best, rank = c, r
		}
	}
	return best
}

// prefilter is a condition on literals that every string matching a
// regexp meets: all of and (a concatenation needs each part), one of or
// (an alternation needs one branch), or a literal substring, at a known
// offset when the regexp is anchored at the start and what precedes the
// literal has a fixed width.
type prefilter struct {
	lit     []byte
	at      int  // offset of lit in the string, -1 for anywhere
	fold    bool // lit is lower-case ASCII, matched ignoring ASCII case
	rare    byte // lit's rarest byte (rarest), when at is -1
	and, or []*prefilter
}

// eval reports whether s meets the condition.
func (p *prefilter) eval(s []byte) bool {
	switch {
	case p.lit != nil && p.at < 0 && bytes.IndexByte(s, p.rare) < 0 &&
		(!p.fold || !('a' <= p.rare && p.rare <= 'z') || bytes.IndexByte(s, p.rare-'a'+'A') < 0):
		return false
	case p.fold && p.at >= 0:
		return len(s) >= p.at+len(p.lit) && equalFoldASCII(s[p.at:p.at+len(p.lit)], p.lit)
	case p.fold:
		return indexFoldASCII(s, p.lit)
	case p.lit != nil && p.at >= 0:
		return len(s) >= p.at+len(p.lit) && bytes.Equal(s[p.at:p.at+len(p.lit)], p.lit)
	case p.lit != nil:
		return bytes.Contains(s, p.lit)
	case p.and != nil:
		for _, q := range p.and {
			if !q.eval(s) {
				return false
			}
		}
		return true
	default:
		for _, q := range p.or {
			if q.eval(s) {
				return true
			}
		}
		return false
	}
}

// required returns the literal condition every match of re meets, or nil
// when there is none that can be checked byte for byte (empty matches,
// character classes, case folding). at is where re's match must begin in
// the string (it follows ^ or \A and text of a fixed width), -1 when that
// is not known.
func required(re *syntax.Regexp, at int) *prefilter {
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return nil
		}
		if re.Flags&syntax.FoldCase != 0 {
			return foldLiteral(re.Rune, at)
		}
		lit := []byte(string(re.Rune))
		return &prefilter{lit: lit, at: at, rare: rarest(lit)}
	case syntax.OpCapture:
		return required(re.Sub[0], at)
	case syntax.OpPlus:
		return required(re.Sub[0], at) // the first repetition starts at at
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0], at)
		}
		return nil
	case syntax.OpConcat:
		var and []*prefilter
		pos := at
		for i, sub := range re.Sub {
			if sub.Op == syntax.OpBeginText {
				if i == 0 || pos == 0 {
					pos = 0
				}
				continue
			}
			if p := required(sub, pos); p != nil {
				and = append(and, p)
			}
			if w := width(sub); pos >= 0 && w >= 0 {
				pos += w
			} else {
				pos = -1
			}
		}
		switch len(and) {
		case 0:
			return nil
		case 1:
			return and[0]
		}
		return &prefilter{and: and}
	case syntax.OpAlternate:
		var or []*prefilter
		for _, sub := range re.Sub {
			p := required(sub, at)
			if p == nil {
				return nil // this branch needs no literal
			}
			or = append(or, p)
		}
		return &prefilter{or: or}
	}
	return nil
}

// foldLiteral is the prefilter of a case-folded literal ((?i)optimizer,
// which analysis's step inference uses): a byte-wise ASCII case-insensitive
// search, exact only when every rune the literal's runes fold to is ASCII.
// A literal with k or s (the Kelvin sign and the long s fold to them) or
// any non-ASCII letter gets none, and the regexp decides alone.
func foldLiteral(runes []rune, at int) *prefilter {
	lit := make([]byte, 0, len(runes))
	for _, r := range runes {
		for f := unicode.SimpleFold(r); ; f = unicode.SimpleFold(f) {
			if f >= utf8.RuneSelf {
				return nil
			}
			if f == r {
				break
			}
		}
		if r >= utf8.RuneSelf {
			return nil
		}
		lit = append(lit, lowerASCII(byte(r)))
	}
	return &prefilter{lit: lit, at: at, fold: true, rare: rarest(lit)}
}

func lowerASCII(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// equalFoldASCII reports whether s equals lit (lower-case) ignoring ASCII
// case; a byte of a multi-byte UTF-8 sequence never equals an ASCII one.
func equalFoldASCII(s, lit []byte) bool {
	for i, c := range lit {
		if lowerASCII(s[i]) != c {
			return false
		}
	}
	return true
}

// indexFoldASCII reports whether s contains lit (lower-case) ignoring
// ASCII case.
func indexFoldASCII(s, lit []byte) bool {
	c0 := lit[0]
	for i := 0; i+len(lit) <= len(s); i++ {
		if lowerASCII(s[i]) == c0 && equalFoldASCII(s[i+1:i+len(lit)], lit[1:]) {
			return true
		}
	}
	return false
}

// width returns the number of bytes every match of re spans, -1 when it
// varies or is not known.
func width(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return -1 // folded runes can differ in UTF-8 length (K, the Kelvin sign)
		}
		return len(string(re.Rune))
	case syntax.OpCapture:
		return width(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, sub := range re.Sub {
			w := width(sub)
			if w < 0 {
				return -1
			}
			n += w
		}
		return n
	}
	return -1
}
