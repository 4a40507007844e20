package kineto

import (
	"compress/gzip"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/trace"
)

// gzipStream returns a reader of the gzip compression of what write
// produces, made on the fly so that no big input is ever held or stored.
func gzipStream(write func(w io.Writer) error) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		zw, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
		err := write(zw)
		if err == nil {
			err = zw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr
}

func wantLimit(t *testing.T, err error, flag string) {
	t.Helper()
	var le *trace.LimitError
	if !errors.As(err, &le) || le.Flag != flag {
		t.Fatalf("error %v, want a limit error for -%s", err, flag)
	}
	if msg := err.Error(); !strings.Contains(msg, "-"+flag) || !strings.Contains(msg, "load.Options.") {
		t.Errorf("error %q does not name the flag -%s and its load.Options field", msg, flag)
	}
}

// TestHugeName is the gzip bomb of issue 10: a kernel name of 2 GB (a few
// MB compressed). It must stop at the string limit, holding about that much.
func TestHugeName(t *testing.T) {
	r := gzipStream(func(w io.Writer) error {
		io.WriteString(w, `{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "`)
		chunk := []byte(strings.Repeat("a", 1<<20))
		for range 2048 {
			if _, err := w.Write(chunk); err != nil {
				return err // the reader gave up, as it should
			}
		}
		_, err := io.WriteString(w, `", "ts": 1, "dur": 1}]}`)
		return err
	})
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Parse(r, "bomb.json.gz")
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	wantLimit(t, err, "max-string")
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("reading up to the 1 MiB string limit allocated %d MB", grew>>20)
	}
}

func TestMaxBytes(t *testing.T) {
	r := gzipStream(func(w io.Writer) error {
		io.WriteString(w, `{"traceEvents": [`)
		pad := []byte(strings.Repeat(" ", 1<<16))
		for range 64 { // 4 MiB of white space
			if _, err := w.Write(pad); err != nil {
				return err
			}
		}
		_, err := io.WriteString(w, `]}`)
		return err
	})
	_, err := Limits{MaxBytes: 1 << 20}.Parse(r, "big.json.gz")
	wantLimit(t, err, "max-trace-bytes")
	// Exactly at the limit is allowed.
	doc := `{"traceEvents": []}`
	if _, err := (Limits{MaxBytes: int64(len(doc))}).Parse(strings.NewReader(doc), "x.json"); err != nil {
		t.Errorf("a trace of exactly MaxBytes: %v", err)
	}
}

func identical(n int) func(w io.Writer) error {
	return func(w io.Writer) error {
		io.WriteString(w, `{"traceEvents": [`)
		// Bytes, not strings: io.WriteString to a gzip.Writer would
		// allocate a copy per call and blur the reader's own figure.
		ev := []byte(`{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"correlation": 1, "device": 0, "stream": 7}}`)
		comma := []byte(",")
		for i := range n {
			if i > 0 {
				w.Write(comma)
			}
			if _, err := w.Write(ev); err != nil {
				return err
			}
		}
		_, err := io.WriteString(w, `]}`)
		return err
	}
}

// TestIdenticalEvents checks that memory grows with the events kept, by a
// small constant per event: the record itself, once in its chunk and once
// in the final slice.
func TestIdenticalEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("parses 1 M events")
	}
	const n = 1 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p, err := Parse(gzipStream(identical(n)), "same.json.gz")
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.GPU) != n {
		t.Fatalf("%d kernels, want %d", len(p.GPU), n)
	}
	perEvent := float64(after.TotalAlloc-before.TotalAlloc) / n
	size := float64(56) // trace.GPUOp
	t.Logf("%.1f bytes allocated per event", perEvent)
	if perEvent > 2*size+16 {
		t.Errorf("%.1f bytes allocated per kept event, want <= %.0f", perEvent, 2*size+16)
	}
	_, err = Limits{MaxEvents: 1000}.Parse(gzipStream(identical(1001)), "same.json.gz")
	wantLimit(t, err, "max-events")
	if _, err = (Limits{MaxEvents: 1000}).Parse(gzipStream(identical(1000)), "same.json.gz"); err != nil {
		t.Errorf("exactly MaxEvents events: %v", err)
	}
}

// TestBadTimes checks that events with times the profile cannot hold are
// dropped or clamped, and counted in the warnings.
func TestBadTimes(t *testing.T) {
	ev := func(ts, dur string) string {
		s := `{"ph": "X", "cat": "kernel", "name": "k", "ts": ` + ts
		if dur != "" {
			s += `, "dur": ` + dur
		}
		return s + `}`
	}
	doc := `{"traceEvents": [` + strings.Join([]string{
		ev("10", "5"),                    // kept
		ev("1e300", "1"),                 // ts out of range: dropped
		ev(`"12"`, "1"),                  // ts not a number: dropped
		ev("4611686018427386", "1"),      // ts 2^62 ns minus a bit: kept...
		ev("4611686018427387", "900000"), // ...but its end overflows: dropped
		ev("20", "-3"),                   // negative dur: 0
		ev("30", ""),                     // no dur: 0
		`{"ph": "X", "cat": "fwdbwd", "name": "f", "ts": 1e300}`, // not kept: not counted (python_function frames are kept since with_stack source lines)
	}, ",") + `]}`
	p, err := Parse(strings.NewReader(doc), "times.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.GPU) != 4 {
		t.Errorf("%d kernels kept, want 4", len(p.GPU))
	}
	for _, op := range p.GPU {
		if op.End < op.Start {
			t.Errorf("kernel [%d, %d) ends before it starts", op.Start, op.End)
		}
	}
	got := strings.Join(p.Warnings, "\n")
	for _, want := range []string{
		"2 complete events dropped: ts missing, not a number or beyond",
		"1 complete events dropped: ts+dur beyond",
		"2 complete events given dur 0",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings %q lack %q", p.Warnings, want)
		}
	}
}
