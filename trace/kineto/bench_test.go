package kineto

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
)

// BenchmarkDecoders compares decoding candidates on one real trace held in
// memory (uncompressed): this package's scanner against encoding/json's
// streaming Decoder (Token to enter the array, Decode per event into a
// struct), the best the standard library offers without holding the whole
// document.
func BenchmarkDecoders(b *testing.B) {
	f, err := os.Open(fixtures.Path(b, "kineto/hta-ns-resolution-v100-resnet/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"))
	if err != nil {
		b.Fatal(err)
	}
	zr, _ := gzip.NewReader(f)
	data, _ := io.ReadAll(zr)
	f.Close()
	b.Run("scanner", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Parse(bytes.NewReader(data), "x"); err != nil {
				b.Fatal(err)
			}
		}
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
