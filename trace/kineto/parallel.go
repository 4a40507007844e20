package kineto

import (
	"bytes"
	"io"
	"runtime"
	"sync"

	"github.com/gpugate/gpugate/trace"
)

// Parallel parsing of large, uncompressed traces.
//
// The traceEvents array is cut at guessed event boundaries and every piece
// is parsed by its own goroutine, with its own scanner reading the file at
// that offset. A guess is a '{' that starts a line after a ',' line end: a
// JSON string cannot hold a raw newline, so the guess is outside strings,
// but it may still be an object nested inside an event. Guesses are
// therefore verified: the piece before a guess must end exactly at it,
// between two events, as the full parser sees it. If it does not, that
// parser simply goes on past the guess and the speculative piece is thrown
// away, so the result never depends on a guess being right.
//
// Rejected: a single-threaded structural pre-pass to find boundaries; it
// costs about half of a full parse by itself (measured 1.07 s of the 2.1 s
// for the 513 MB benchmark trace).
//
// Rejected: mapping the file (mmap, the pages behind the scanners released
// with MADV_DONTNEED so that resident memory stays low) instead of reading
// it into each scanner's buffer. On this project's 2-core VM it cost more
// CPU than the copies it saved: 1.75-2.1 s against 1.3-1.6 s per read of
// the 513 MB trace on one core, interleaved, and still 1.8-2.2 s without
// releasing pages or with the next pages populated ahead (MADV_POPULATE_READ):
// parsing straight from page-cache pages loses to parsing a 256 kB buffer
// that the copy has just brought into the cache.

const (
	parallelMinBytes = 32 << 20 // smaller files are parsed sequentially
	minPieceBytes    = 16 << 20
)

type piece struct {
	p       *parser
	reached bool // stopped exactly at the next piece's start
	err     error
}

// parallelEvents parses the traceEvents array starting at the scanner.
func (p *parser) parallelEvents() error {
	s := p.s
	more, err := s.openArray()
	if err != nil || !more {
		return err
	}
	if _, err := s.peek(); err != nil {
		return err
	}
	first := s.offset()
	starts := p.guessStarts(first)
	if len(starts) == 0 {
		p.file = nil
		_, err := p.run(-1)
		return err
	}
	bounds := append([]int64{first}, starts...)
	pieces := make([]piece, len(bounds))
	var wg sync.WaitGroup
	for i := range bounds {
		stop := int64(-1)
		if i+1 < len(bounds) {
			stop = bounds[i+1]
		}
		pp := p
		if i > 0 {
			sc := newScanner(io.NewSectionReader(p.file, bounds[i], p.size-bounds[i]))
			sc.off = bounds[i]
			pp = newParser(sc, p.p.Path, p.lim)
		}
		pieces[i].p = pp
		run := func(i int) {
			pieces[i].reached, pieces[i].err = pieces[i].p.run(stop)
			if pieces[i].err != nil {
				pieces[i].err = pieces[i].p.wrap(pieces[i].err, false)
			}
		}
		if i == 0 {
			continue
		}
		wg.Add(1)
		go func(i int) { defer wg.Done(); run(i) }(i)
	}
	pieces[0].reached, pieces[0].err = p.run(bounds[1])
	wg.Wait()
	last := 0
	for {
		pc := &pieces[last]
		if pc.err != nil {
			return pc.err
		}
		if !pc.reached {
			break
		}
		last++
		if err := p.merge(pieces[last].p); err != nil {
			return err
		}
	}
	// Go on with the top-level object after the array.
	p.s = pieces[last].p.s
	return nil
}

// run parses events from the scanner position, which must be the start of an
// event, until the array ends (false) or, when stop >= 0, until the next
// event would start exactly at stop (true). Passing stop between two events
// without meeting it means stop was not an event start: parsing goes on.
func (p *parser) run(stop int64) (bool, error) {
	s := p.s
	for {
		c, err := s.peek()
		if err != nil {
			return false, err
		}
		if c != '{' {
			return false, s.unexpected(c, "a trace event object")
		}
		if err := p.count(); err != nil {
			return false, err
		}
		if err := p.event(); err != nil {
			return false, err
		}
		p.add()
		more, err := s.comma(']')
		if err != nil || !more {
			return false, err
		}
		if stop >= 0 {
			if _, err := s.peek(); err != nil {
				return false, err
			}
			switch off := s.offset(); {
			case off == stop:
				return true, nil
			case off > stop:
				stop = -1
			}
		}
	}
}

// guessStarts returns likely event starts after first that cut the rest
// into up to 4 pieces per core (at most 16, of at least minPieceBytes). More
// pieces than cores balance the load when a busy machine stalls one core's
// thread: the others go on with the remaining pieces. On the 513 MB
// benchmark trace with 2 cores on a loaded machine, `gpugate analyze` took
// 2.7-3.4 s with 8 pieces against 2.9-3.9 s with 2, interleaved.
func (p *parser) guessStarts(first int64) []int64 {
	procs := runtime.GOMAXPROCS(0)
	if procs == 1 {
		// One core: pieces would only take turns on it, each with its
		// own buffer and chunks in the cache (measured 5-25% more CPU).
		return nil
	}
	n := min(4*procs, 16, int((p.size-first)/minPieceBytes))
	var out []int64
	buf := make([]byte, 1<<20)
	for k := 1; k < n; k++ {
		off := first + (p.size-first)*int64(k)/int64(n)
		m, _ := p.file.ReadAt(buf, off)
		if g := guessStart(buf[:m]); g >= 0 && (len(out) == 0 || off+int64(g) > out[len(out)-1]) {
			out = append(out, off+int64(g))
		}
	}
	return out
}

// guessStart finds a '{' that is the first non-space byte of a line whose
// previous line ends in ','.
func guessStart(b []byte) int {
	for i := 0; ; {
		nl := bytes.IndexByte(b[i:], '\n')
		if nl < 0 {
			return -1
		}
		nl += i
		j := nl + 1
		for j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\r') {
			j++
		}
		k := nl - 1
		for k >= 0 && (b[k] == ' ' || b[k] == '\t' || b[k] == '\r') {
			k--
		}
		if j < len(b) && b[j] == '{' && k >= 0 && b[k] == ',' {
			return j
		}
		i = nl + 1
	}
}

// merge appends the events another parser read to p's profile.
func (p *parser) merge(o *parser) error {
	pr, op := p.p, o.p
	remap := make([]trace.Name, op.Names.Len())
	for i := range remap {
		remap[i] = pr.Names.InternString(op.Names.String(trace.Name(i)))
	}
	thread := func(t int64) int64 {
		if t >= namedThread && t-namedThread < int64(len(remap)) {
			return namedThread + int64(remap[t-namedThread])
		}
		return t
	}
	// The records stay where the other parser put them: only their names
	// and thread keys change.
	o.gpu.each(func(g *trace.GPUOp) { g.Name = remap[g.Name] })
	o.api.each(func(a *trace.APICall) { a.Name, a.Thread = remap[a.Name], thread(a.Thread) })
	o.rng.each(func(r *trace.Range) { r.Name, r.Thread = remap[r.Name], thread(r.Thread) })
	o.stk.each(func(r *trace.Range) { r.Name, r.Thread = remap[r.Name], thread(r.Thread) })
	p.gpu.appendChunks(&o.gpu)
	p.api.appendChunks(&o.api)
	p.rng.appendChunks(&o.rng)
	p.stk.appendChunks(&o.stk)
	p.mergeFLOPOps(o, thread)
	p.mergeMemory(o)
	p.legacy += o.legacy
	p.noCat += o.noCat
	p.cpuFunctions += o.cpuFunctions
	p.badTs += o.badTs
	p.badEnd += o.badEnd
	p.badDur += o.badDur
	p.nEvents += o.nEvents
	if p.nEvents > p.lim.MaxEvents {
		return &errLimit{name: limitEvents, what: "number of trace events", limit: int64(p.lim.MaxEvents)}
	}
	return nil
}
