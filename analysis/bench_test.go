package analysis

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gpugate/gpugate/internal/benchgen"
	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/trace/kineto"
	"github.com/gpugate/gpugate/trace/nsys"
)

// benchFile returns a generated input, made once and kept in
// $TMPDIR/gpugate-bench so that repeated benchmark runs reuse it.
func benchFile(b *testing.B, name string, make func(path string) error) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "gpugate-bench")
	os.MkdirAll(dir, 0o755)
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err == nil {
		return path
	}
	tmp := path + ".tmp"
	if err := make(tmp); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	return path
}

func copies(def int) int {
	if n, err := strconv.Atoi(os.Getenv("GPUGATE_BENCH_COPIES")); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkKinetoLarge reads and analyzes the A100 rank-0 trace (5 steps,
// 109k events) replicated 20 times: 100 steps, 2.2 M events, ~500 MB of JSON.
func BenchmarkKinetoLarge(b *testing.B) {
	src := fixtures.Path(b, "kineto/hta-negative-queue-length-a100-16rank/rank0.json.gz")
	n := copies(20)
	path := benchFile(b, "kineto-a100-x"+strconv.Itoa(n)+".json", func(p string) error {
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = benchgen.Kineto(f, src, n)
		return err
	})
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	b.ResetTimer()
	var steps, events int
	for b.Loop() {
		p, err := kineto.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		r := Analyze(p, Options{})
		steps, events = len(r.Steps), len(p.GPU)+len(p.API)+len(p.Ranges)
	}
	b.ReportMetric(float64(steps), "steps")
	b.ReportMetric(float64(events), "kept-events")
}

// BenchmarkNsysLarge reads and analyzes the H100 "before" export replicated
// 250 times: 1 M kernels, 1.9 M runtime calls, 4.8 M NVTX ranges.
func BenchmarkNsysLarge(b *testing.B) {
	src := fixtures.Path(b, "nsys-sqlite/nsysai-mfu-2gpu-h100/mfu_2gpu_before.sqlite")
	n := copies(250)
	path := benchFile(b, "nsys-h100-x"+strconv.Itoa(n)+".sqlite", func(p string) error {
		return benchgen.Nsys(p, src, n)
	})
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	b.ResetTimer()
	var kernels int
	for b.Loop() {
		ps, err := nsys.ReadFile(context.Background(), path)
		if err != nil {
			b.Fatal(err)
		}
		kernels = 0
		for _, p := range ps {
			r := Analyze(p, Options{})
			kernels += r.Kernels
		}
	}
	b.ReportMetric(float64(kernels), "kernels")
}
