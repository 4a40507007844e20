package kineto

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/gpugate/gpugate/internal/benchgen"
	"github.com/gpugate/gpugate/internal/fixtures"
)

// BenchmarkDecoders compares decoding candidates on one real trace held in
// memory (uncompressed): this package's scanner against encoding/json's
// streaming Decoder (Token to enter the array, Decode per event into a
// struct), the best the standard library offers without holding the whole
// document.
func BenchmarkDecoders(b *testing.B) {
	f, err := os.Open(fixtures.Path(b, "kineto/hta-negative-queue-length-a100-16rank/rank0.json.gz"))
	if err != nil {
		b.Fatal(err)
	}
	zr, _ := gzip.NewReader(f)
	data, _ := io.ReadAll(zr)
	f.Close()
	b.Run("scanner", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		cpu0 := cpuTime()
		for b.Loop() {
			if _, err := Parse(bytes.NewReader(data), "x"); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
	})
	b.Run("encoding-json-stream", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		type ev struct {
			Ph, Cat, Name string
			Ts, Dur       float64
			Pid, Tid      any
			Args          struct {
				Correlation int64 `json:"correlation"`
				Device      int64 `json:"device"`
				Stream      int64 `json:"stream"`
				Bytes       int64 `json:"bytes"`
			} `json:"args"`
		}
		for b.Loop() {
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.Token() // {
			n := 0
			for dec.More() {
				k, _ := dec.Token()
				if k != "traceEvents" {
					var skip json.RawMessage
					dec.Decode(&skip)
					continue
				}
				dec.Token() // [
				for dec.More() {
					var e ev
					if err := dec.Decode(&e); err != nil {
						b.Fatal(err)
					}
					n++
				}
				dec.Token() // ]
			}
			if n == 0 {
				b.Fatal("no events")
			}
		}
	})
}

// BenchmarkReadFileLarge reads the A100 rank-0 trace replicated 20 times
// (100 steps, 2.18 M events, 513 MB), the input of analysis's
// BenchmarkKinetoLarge, without analyzing it. Besides wall time it reports
// the process's CPU time per read (cpu-ms/op), which a busy machine
// disturbs less than wall time.
func BenchmarkReadFileLarge(b *testing.B) {
	src := fixtures.Path(b, "kineto/hta-negative-queue-length-a100-16rank/rank0.json.gz")
	path := largeTrace(b, src, 20)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := ReadFile(path); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
}

// largeTrace returns a trace of copies of src, made once and kept in
// $TMPDIR/gpugate-bench (the same file analysis's benchmarks use).
func largeTrace(b *testing.B, src string, copies int) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "gpugate-bench")
	os.MkdirAll(dir, 0o755)
	path := filepath.Join(dir, "kineto-a100-x"+strconv.Itoa(copies)+".json")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	f, err := os.Create(path + ".tmp")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := benchgen.Kineto(f, src, copies); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		b.Fatal(err)
	}
	return path
}

// cpuTime returns the user and system CPU time this process has used, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
