package nsys

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/internal/benchgen"
	"github.com/gpugate/gpugate/internal/fixtures"
)

// BenchmarkNsysLargeLean is what `gpugate analyze` does with the 1 M-kernel
// export (the H100 "before" export replicated 250 times, the file
// analysis.BenchmarkNsysLarge makes and keeps in $TMPDIR/gpugate-bench):
// a lean read (only the ranges analysis uses), then every metric and the
// findings of each rank. Compare with `nsys stats --report
// gpukernsum,cudaapisum,gpumemtimesum` on the same file, in the same run.
func BenchmarkNsysLargeLean(b *testing.B) {
	src := fixtures.Path(b, "nsys-sqlite/nsysai-mfu-2gpu-h100/mfu_2gpu_before.sqlite")
	n := 250
	if v, err := strconv.Atoi(os.Getenv("GPUGATE_BENCH_COPIES")); err == nil && v > 0 {
		n = v
	}
	dir := filepath.Join(os.TempDir(), "gpugate-bench")
	os.MkdirAll(dir, 0o755)
	path := filepath.Join(dir, "nsys-h100-x"+strconv.Itoa(n)+".sqlite")
	if _, err := os.Stat(path); err != nil {
		if err := benchgen.Nsys(path+".tmp", src, n); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			b.Fatal(err)
		}
	}
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	// The patterns pipeline.AnalyzeFiles passes: step inference's too.
	opt := Options{RangeNames: append([]*regexp.Regexp{analysis.DefaultStepPattern, analysis.DefaultDataPattern, analysis.DefaultSyncProxyPattern}, analysis.InferencePatterns()...)}
	var kernels, ranges int
	for b.Loop() {
		ps, err := ReadFileOptions(context.Background(), path, opt)
		if err != nil {
			b.Fatal(err)
		}
		kernels, ranges = 0, 0
		for _, p := range ps {
			r := analysis.Analyze(p, analysis.Options{})
			r.Findings()
			kernels += r.Kernels
			ranges += len(p.Ranges)
		}
	}
	b.ReportMetric(float64(kernels), "kernels")
	b.ReportMetric(float64(ranges), "kept-ranges")
}
