package kineto

import (
	"fmt"
	"io"

	"github.com/gpugate/gpugate/trace"
)

// Limits bound what one trace may cost to read. A trace is written by the
// code under review, so it may be hostile: a gzip bomb, a 2 GB kernel name
// or millions of identical events. Exceeding a limit is an error that names
// the limit (a *trace.LimitError), never a crash or a silent cut. A zero
// field takes its default.
type Limits struct {
	// MaxBytes bounds the size of the JSON document after decompression.
	MaxBytes int64
	// MaxString bounds the length of any string or number the reader keeps
	// (event names, categories, thread names). Strings it skips, such as
	// the args of CPU ops, are not held in memory and are not limited.
	MaxString int
	// MaxEvents bounds the number of entries of traceEvents, of any kind.
	MaxEvents int
}

// Default limits. The largest single-rank traces reported by users are
// about 2.2 GB of JSON with about 9 M events; kernel names with deep
// templates reach tens of kB.
const (
	DefaultMaxBytes  = 16 << 30
	DefaultMaxString = 1 << 20
	DefaultMaxEvents = 20_000_000
)

// The limits' names, as the CLI flags and load.Options fields call them.
const (
	limitBytes  = "max-trace-bytes"
	limitString = "max-string"
	limitEvents = "max-events"
)

var limitFields = map[string]string{limitBytes: "MaxBytes", limitString: "MaxString", limitEvents: "MaxEvents"}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxString <= 0 {
		l.MaxString = DefaultMaxString
	}
	if l.MaxEvents <= 0 {
		l.MaxEvents = DefaultMaxEvents
	}
	return l
}

func limitError(file, pos, name, what string, limit int64) *trace.LimitError {
	return &trace.LimitError{File: file, Pos: pos, What: what, Limit: limit, Flag: name, Field: "load.Options." + limitFields[name]}
}

// errLimit is returned by the scanner's readers when the input passes a
// limit; the parser turns it into a *trace.LimitError with a position.
type errLimit struct {
	name, what string
	limit      int64
}

func (e *errLimit) Error() string { return fmt.Sprintf("%s exceeds the limit of %d", e.what, e.limit) }

// cappedReader fails once more than n bytes have been read.
type cappedReader struct {
	r   io.Reader
	n   int64 // bytes still allowed
	lim int64
}

func (c *cappedReader) Read(b []byte) (int, error) {
	if c.n <= 0 {
		// Allowed bytes are used up: the document is too large unless
		// the input ends exactly here.
		var one [1]byte
		if n, err := c.r.Read(one[:]); n == 0 && err != nil {
			return 0, err
		}
		return 0, &errLimit{name: limitBytes, what: "decompressed trace size", limit: c.lim}
	}
	if int64(len(b)) > c.n {
		b = b[:c.n]
	}
	n, err := c.r.Read(b)
	c.n -= int64(n)
	return n, err
}
