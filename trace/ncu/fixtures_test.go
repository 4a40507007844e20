package ncu

import (
	"bufio"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/trace"
)

// ncuCLI returns the ncu binary for tests that read .ncu-rep reports. CI
// installs it (scripts/setup-ncu.sh) and sets GPUGATE_NCU, which makes it
// required; without GPUGATE_NCU the test is skipped, saying so.
func ncuCLI(t *testing.T) string {
	t.Helper()
	p := os.Getenv("GPUGATE_NCU")
	if p == "" {
		t.Skip("GPUGATE_NCU not set: skipping the test that needs the ncu CLI (scripts/setup-ncu.sh installs it; scripts/test.sh sets it)")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("GPUGATE_NCU=%s: %v", p, err)
	}
	return p
}

var (
	reportsMu sync.Mutex
	reports   = map[string]*Report{}
)

// readReport reads a fixture report with ncu once per test binary: each
// import starts ncu twice, which takes seconds on a loaded machine.
func readReport(t *testing.T, cli, path string) *Report {
	t.Helper()
	reportsMu.Lock()
	defer reportsMu.Unlock()
	if r, ok := reports[path]; ok {
		return r
	}
	r, err := ReadReport(context.Background(), cli, path)
	if err != nil {
		t.Fatal(err)
	}
	reports[path] = r
	return r
}

// want is one value from PROVENANCE.md's table, with the tolerance its
// printed precision allows.
type want struct {
	v, tol float64
}

// provenance holds PROVENANCE.md's "Key details-page values" for launch
// ID 0 of each usable report, typed in from that file (units as printed
// there, converted by hand: 1.17 second = 1.17e9 ns ± 0.005e9), and the
// base-unit durations of its cross-check paragraph.
type provenance struct {
	name                           string
	writer                         string
	duration, durationBase         want // ns
	smFreq, dramFreq               want // Hz
	elapsed                        want
	memPct, dramPct, smPct         want
	block, grid, regs              int64
	waves, theo, achieved          want
	staticSmem                     int64
	hasMemoryWorkload, hasSOLLabel bool
}

func w(v, tol float64) want { return want{v, tol} }

var provenanceTable = map[string]provenance{
	"cudacode-rtx2080ti": {
		name: "kernel_A(double *, int, int)", writer: "2022.3.0.0",
		duration: w(1.17e9, 0.005e9), durationBase: w(1168077824, 0),
		smFreq: w(1.36e9, 0.005e9), dramFreq: w(6.79e9, 0.005e9), elapsed: w(1594443566, 0),
		memPct: w(9.45, 0), dramPct: w(0.03, 0), smPct: w(80.30, 0),
		block: 64, grid: 256000, regs: 16, waves: w(235.29, 0), theo: w(100, 0), achieved: w(99.89, 0),
	},
	"mojo-divergence-gtx1660ti": {
		name: "warmingUp(float *)", writer: "2022.4.0.0",
		duration: w(1600, 5), durationBase: w(1600, 0),
		smFreq: w(1.36e9, 0.005e9), dramFreq: w(5.12e9, 0.005e9), elapsed: w(2186, 0),
		memPct: w(1.27, 0), dramPct: w(0.04, 0), smPct: w(0.03, 0),
		block: 64, grid: 1, regs: 16, waves: w(0, 0.005), theo: w(100, 0), achieved: w(6.23, 0),
	},
	"speedyscan-rtx3070": {
		name: "kernel(int const*, int*, unsigned long*, unsigned int*, unsigned int)", writer: "2020.3.1.0",
		duration: w(336700, 5), durationBase: w(336704, 0),
		smFreq: w(1.50e9, 0.005e9), dramFreq: w(6.81e9, 0.005e9), elapsed: w(505649, 0),
		// Old labels: "SOL DRAM" 53.42 and "SM [%]" 49.01.
		memPct: w(53.42, 0), dramPct: w(53.42, 0), smPct: w(49.01, 0),
		block: 512, grid: 19532, regs: 18, waves: w(141.54, 0), theo: w(100, 0), achieved: w(94.03, 0),
		staticSmem: 144,
	},
	"indexspaces-a40": {
		name: "julia__5_11155(CuKernelContext, CuDeviceArray<Float16x2, (int)1, (int)1>, Float16x2)", writer: "2022.4.0.0",
		duration: w(70460, 5), durationBase: w(70464, 0),
		smFreq: w(1.27e9, 0.005e9), dramFreq: w(7.07e9, 0.005e9), elapsed: w(89435, 0),
		memPct: w(90.63, 0), dramPct: w(90.63, 0), smPct: w(17.89, 0),
		block: 256, grid: 39312, regs: 16, waves: w(78, 0), theo: w(100, 0), achieved: w(66.78, 0),
	},
}

// writers are the "written by ncu" column of PROVENANCE.md.
var writers = map[string]string{
	"cudacode-rtx2080ti":            "2022.3.0.0 (build 31729285) (public-release)",
	"mojo-divergence-gtx1660ti":     "2022.4.0.0 (build 32048681) (public-release)",
	"speedyscan-rtx3070":            "2020.3.1.0 (build 29567428) (public-release)",
	"mistic-a100-partial-sections":  "2021.2.2.0 (build 30282580) (public-release)",
	"indexspaces-a40":               "2022.4.0.0 (build 32048681) (public-release)",
	"too-new/sglang-flashattn-h800": "2023.3.0.0 (build 33266684) (public-release)",
	"too-new/cutlass-b2bgemm-a100":  "2024.1.1.0 (build 33998838) (public-release)",
}

func fixture(t *testing.T, dir, suffix string) string {
	t.Helper()
	return fixtures.Path(t, filepath.Join("ncu", dir, filepath.Base(dir)+suffix))
}

func checkF(t *testing.T, what string, got *float64, w want) {
	t.Helper()
	if got == nil {
		t.Errorf("%s = absent, want %v", what, w.v)
		return
	}
	if math.Abs(*got-w.v) > w.tol {
		t.Errorf("%s = %v, want %v ± %v", what, *got, w.v, w.tol)
	}
}

func checkI(t *testing.T, what string, got *int64, w int64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s = absent, want %d", what, w)
	} else if *got != w {
		t.Errorf("%s = %d, want %d", what, *got, w)
	}
}

// checkProvenance compares launch 0 with PROVENANCE.md; base says whether
// the values come in base units (exact) or as ncu scaled them.
func checkProvenance(t *testing.T, rep *Report, p provenance, base bool) {
	t.Helper()
	if len(rep.Launches) == 0 || rep.Launches[0].ID != 0 {
		t.Fatalf("no launch 0 in %s", rep.Path)
	}
	l := rep.Launches[0]
	if l.Name != p.name {
		t.Errorf("name = %q, want %q", l.Name, p.name)
	}
	if base {
		checkF(t, "duration", l.Duration, p.durationBase)
	} else {
		checkF(t, "duration", l.Duration, p.duration)
	}
	checkF(t, "SM frequency", l.SMFrequency, p.smFreq)
	checkF(t, "DRAM frequency", l.DRAMFrequency, p.dramFreq)
	checkF(t, "elapsed cycles", l.ElapsedCycles, p.elapsed)
	checkF(t, "memory throughput", l.MemoryThroughput, p.memPct)
	checkF(t, "DRAM throughput", l.DRAMThroughput, p.dramPct)
	checkF(t, "SM throughput", l.SMThroughput, p.smPct)
	checkI(t, "block size", l.BlockSize, p.block)
	checkI(t, "grid size", l.GridSize, p.grid)
	checkI(t, "registers/thread", l.RegistersPerThread, p.regs)
	checkF(t, "waves per SM", l.WavesPerSM, p.waves)
	checkF(t, "theoretical occupancy", l.TheoreticalOccupancy, p.theo)
	checkF(t, "achieved occupancy", l.AchievedOccupancy, p.achieved)
	// Static shared memory is 144 B in speedyscan and dynamic 0 everywhere.
	checkI(t, "shared memory/block", l.SharedMemPerBlock, p.staticSmem)
}

func TestDetailsCSVProvenance(t *testing.T) {
	for dir, p := range provenanceTable {
		for _, c := range []struct {
			suffix string
			base   bool
		}{{".details.csv", false}, {".details.base-units.csv", true}} {
			t.Run(dir+c.suffix, func(t *testing.T) {
				rep, err := ReadCSVFile(fixture(t, dir, c.suffix))
				if err != nil {
					t.Fatal(err)
				}
				if rep.Source != "details-csv" {
					t.Errorf("source = %q", rep.Source)
				}
				checkProvenance(t, rep, p, c.base)
			})
		}
	}
}

func TestRawCSVProvenance(t *testing.T) {
	for dir, p := range provenanceTable {
		t.Run(dir, func(t *testing.T) {
			rep, err := ReadCSVFile(fixture(t, dir, ".raw.base-units.csv"))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Source != "raw-csv" {
				t.Errorf("source = %q", rep.Source)
			}
			checkProvenance(t, rep, p, true)
			if len(rep.Launches[0].Rules) != 0 {
				t.Errorf("raw page has no rules, got %d", len(rep.Launches[0].Rules))
			}
		})
	}
}

// TestLaunchCounts checks the kernel counts of PROVENANCE.md's table.
func TestLaunchCounts(t *testing.T) {
	counts := map[string][]string{
		"cudacode-rtx2080ti":           {"kernel_A", "kernel_C"},
		"mojo-divergence-gtx1660ti":    {"warmingUp", "mathKernel1", "mathKernel2", "mathKernel3"},
		"speedyscan-rtx3070":           {"kernel"},
		"mistic-a100-partial-sections": {"distanceCalculationsKernel", "distanceCalculationsKernel", "distanceCalculationsKernel", "distanceCalculationsKernel"},
		"indexspaces-a40":              {"julia__5_11155", "julia__5_11236", "julia__5_11236", "julia__5_11155", "julia_frb_5885"},
	}
	for dir, names := range counts {
		for _, suffix := range []string{".details.csv", ".raw.csv"} {
			rep, err := ReadCSVFile(fixture(t, dir, suffix))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i, l := range rep.Launches {
				if l.ID != i {
					t.Errorf("%s%s: launch %d has ID %d", dir, suffix, i, l.ID)
				}
				got = append(got, FunctionName(l.Name))
			}
			if !reflect.DeepEqual(got, names) {
				t.Errorf("%s%s: kernels %q, want %q", dir, suffix, got, names)
			}
		}
	}
}

// TestPartialSections: the MiSTIC report was collected with the Scheduler
// Statistics, Warp State Statistics and Source Counters sections only. Its
// details page has no Speed Of Light, Launch Statistics or Occupancy rows:
// those values are absent, not zero. Its raw page still holds the launch
// configuration and duration, which PROVENANCE.md cross-checks.
func TestPartialSections(t *testing.T) {
	rep, err := ReadCSVFile(fixture(t, "mistic-a100-partial-sections", ".details.base-units.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Launches) != 4 {
		t.Fatalf("%d launches, want 4", len(rep.Launches))
	}
	for _, l := range rep.Launches {
		for what, v := range map[string]*float64{"duration": l.Duration, "SM frequency": l.SMFrequency, "SM throughput": l.SMThroughput,
			"memory throughput": l.MemoryThroughput, "achieved occupancy": l.AchievedOccupancy, "theoretical occupancy": l.TheoreticalOccupancy} {
			if v != nil {
				t.Errorf("launch %d: %s = %v, want absent", l.ID, what, *v)
			}
		}
		if l.GridSize != nil || l.BlockSize != nil || l.RegistersPerThread != nil {
			t.Errorf("launch %d: launch statistics present in a report without that section", l.ID)
		}
		if l.Bound != "" || len(l.OccupancyLimiters) != 0 || l.Limiter() != "" {
			t.Errorf("launch %d: limiter %q from rules that are not there", l.ID, l.Limiter())
		}
		if len(l.Rules) == 0 {
			t.Errorf("launch %d: no rule results, want the WarpStateStats/SourceCounters ones", l.ID)
		}
	}
	// What it has: PROVENANCE.md's one rule check, and rule rows per launch.
	if r := rep.Launches[0].Rules[0]; r.Section != "SchedulerStats" || r.Name != "IssueSlotUtilization" || r.Type != "WRN" {
		t.Errorf("first rule = %+v", r)
	}

	raw, err := ReadCSVFile(fixture(t, "mistic-a100-partial-sections", ".raw.base-units.csv"))
	if err != nil {
		t.Fatal(err)
	}
	l := raw.Launches[0]
	checkF(t, "raw duration", l.Duration, w(1129093408, 0))
	checkI(t, "raw block size", l.BlockSize, 512)
	checkI(t, "raw grid size", l.GridSize, 2048)
	checkI(t, "raw registers/thread", l.RegistersPerThread, 38)
	if l.SMThroughput != nil || l.AchievedOccupancy != nil || l.SMFrequency != nil {
		t.Errorf("raw page: SOL/achieved values present in a report without those sections")
	}
	if l.Device != "NVIDIA A100-PCIE-40GB" {
		t.Errorf("device = %q", l.Device)
	}
}

// TestDetailsAndRawAgree: every value that both pages hold is the same
// number, launch by launch, in every report: the display labels map to the
// metric names they are defined on (a second method for the label table).
func TestDetailsAndRawAgree(t *testing.T) {
	dirs := []string{"cudacode-rtx2080ti", "mojo-divergence-gtx1660ti", "speedyscan-rtx3070", "mistic-a100-partial-sections", "indexspaces-a40"}
	compared := 0
	for _, dir := range dirs {
		d, err := ReadCSVFile(fixture(t, dir, ".details.base-units.csv"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := ReadCSVFile(fixture(t, dir, ".raw.base-units.csv"))
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Launches) != len(r.Launches) {
			t.Fatalf("%s: %d launches in details, %d in raw", dir, len(d.Launches), len(r.Launches))
		}
		for i := range d.Launches {
			dv, rv := reflect.ValueOf(*d.Launches[i]), reflect.ValueOf(*r.Launches[i])
			for f := 0; f < dv.NumField(); f++ {
				name := dv.Type().Field(f).Name
				a, b := dv.Field(f), rv.Field(f)
				if a.Kind() != reflect.Pointer || a.IsNil() || b.IsNil() {
					continue
				}
				compared++
				if !reflect.DeepEqual(a.Interface(), b.Interface()) {
					t.Errorf("%s launch %d %s: details %v, raw %v", dir, i, name, a.Elem(), b.Elem())
				}
			}
		}
	}
	if compared < 100 {
		t.Errorf("only %d values compared", compared)
	}
}

// TestLimiters: the limiters read from ncu's Occupancy rule messages are
// the ones its algorithm gives from the block limits (the smallest), in
// every launch that has both.
func TestLimiters(t *testing.T) {
	dirs := []string{"cudacode-rtx2080ti", "mojo-divergence-gtx1660ti", "speedyscan-rtx3070", "indexspaces-a40"}
	for _, dir := range dirs {
		rep, err := ReadCSVFile(fixture(t, dir, ".details.base-units.csv"))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range rep.Launches {
			if got, want := l.OccupancyLimiters, l.LimitersFromBlockLimits(); !slices.Equal(got, want) {
				t.Errorf("%s launch %d: rule limiters %q, block limits say %q", dir, l.ID, got, want)
			}
		}
	}
	rep, err := ReadCSVFile(fixture(t, "indexspaces-a40", ".details.csv"))
	if err != nil {
		t.Fatal(err)
	}
	frb := rep.Launches[4]
	// "This kernel's theoretical occupancy (50.0%) is limited by the number
	// of required registers This kernel's theoretical occupancy (50.0%) is
	// limited by the required amount of shared memory"; SOLBottleneck:
	// "Memory is more heavily utilized than Compute".
	if got := frb.Limiter(); got != "register-limited and shared-memory-limited, memory-bound" {
		t.Errorf("julia_frb limiter = %q", got)
	}
	checkF(t, "julia_frb theoretical occupancy", frb.TheoreticalOccupancy, w(50, 0))
	for id, want := range map[int]string{
		0: "memory-bound",  // "utilizing greater than 80.0%": Memory 90.63 > SM 17.89
		1: "latency-bound", // "low compute throughput and memory bandwidth"
	} {
		if got := rep.Launches[id].Limiter(); got != want {
			t.Errorf("indexspaces launch %d limiter = %q, want %q", id, got, want)
		}
	}
	for dir, want := range map[string]string{
		"cudacode-rtx2080ti":        "compute-bound", // > 80%: SM 80.30 > Memory 9.45
		"mojo-divergence-gtx1660ti": "grid too small to fill the GPU",
		"speedyscan-rtx3070":        "latency-bound",
	} {
		rep, err := ReadCSVFile(fixture(t, dir, ".details.csv"))
		if err != nil {
			t.Fatal(err)
		}
		if got := rep.Launches[0].Limiter(); got != want {
			t.Errorf("%s launch 0 limiter = %q, want %q", dir, got, want)
		}
	}
}

// TestWriterVersion reads the writer's version from each report's own
// bytes (no ncu) and compares it with PROVENANCE.md.
func TestWriterVersion(t *testing.T) {
	for dir, want := range writers {
		got, err := WriterVersion(fixture(t, dir, ".ncu-rep"))
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		if got != want {
			t.Errorf("%s: writer %q, want %q", dir, got, want)
		}
	}
	// A file that is not a report, and a truncated report.
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.ncu-rep")
	os.WriteFile(junk, []byte("not a report at all"), 0o644)
	if _, err := WriterVersion(junk); !errors.Is(err, ErrNotReport) {
		t.Errorf("junk: err = %v, want ErrNotReport", err)
	}
	b, err := os.ReadFile(fixture(t, "cudacode-rtx2080ti", ".ncu-rep"))
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.ncu-rep")
	os.WriteFile(cut, b[:200], 0o644)
	if v, err := WriterVersion(cut); err == nil && v != "" {
		t.Errorf("truncated report: version %q without error", v)
	}
}

// TestFunctionName: the function name the deep-dive matches is what ncu
// stores as KernelFunctionName beside the demangled name (the fixtures'
// container-kernels.tsv, decoded from the reports).
func TestFunctionName(t *testing.T) {
	n := 0
	for dir := range writers {
		f, err := os.Open(fixture(t, dir, ".container-kernels.tsv"))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			cols := strings.Split(sc.Text(), "\t")
			if len(cols) != 3 || strings.HasPrefix(cols[0], "#") || cols[1] == "" {
				continue
			}
			n++
			if got := FunctionName(cols[2]); got != cols[1] {
				t.Errorf("%s: FunctionName(%.80q…) = %q, want %q", dir, cols[2], got, cols[1])
			}
		}
		f.Close()
	}
	if n < 10 {
		t.Errorf("only %d names checked", n)
	}
	for in, want := range map[string]string{
		// Kineto's spelling of PyTorch kernels.
		"void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, 4, void at::native::templates::cuda::normal_and_transform<float, float, 4ul>(at::TensorIteratorBase&)::{lambda(float)#1}>(int, at::PhiloxCudaState, float)": "distribution_elementwise_grid_stride_kernel",
		"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)":                                                                     "vectorized_elementwise_kernel",
		"ampere_sgemm_128x64_nn":       "ampere_sgemm_128x64_nn",
		"flash_fwd_kernel":             "flash_fwd_kernel",
		"kernel_A(double *, int, int)": "kernel_A",
		"  ":                           "",
	} {
		if got := FunctionName(in); got != want {
			t.Errorf("FunctionName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestReadReport reads every usable .ncu-rep with the installed ncu and
// checks PROVENANCE.md's values, the partial report's absences, and the
// version error of both too-new reports.
func TestReadReport(t *testing.T) {
	cli := ncuCLI(t)
	ctx := context.Background()
	for dir, p := range provenanceTable {
		t.Run(dir, func(t *testing.T) {
			rep := readReport(t, cli, fixture(t, dir, ".ncu-rep"))
			if rep.Source != "ncu-rep" || rep.Writer != writers[dir] {
				t.Errorf("source %q writer %q", rep.Source, rep.Writer)
			}
			checkProvenance(t, rep, p, true)
			l := rep.Launches[0]
			if l.Device == "" || l.Grid == nil || l.Block == nil || l.Grid.X != p.grid || l.Block.X != p.block {
				t.Errorf("device %q grid %v block %v", l.Device, l.Grid, l.Block)
			}
			if len(l.Rules) == 0 {
				t.Errorf("no rule results")
			}
		})
	}
	t.Run("partial", func(t *testing.T) {
		rep := readReport(t, cli, fixture(t, "mistic-a100-partial-sections", ".ncu-rep"))
		l := rep.Launches[0]
		checkF(t, "duration", l.Duration, w(1129093408, 0))
		if l.SMThroughput != nil || l.MemoryThroughput != nil || l.AchievedOccupancy != nil || l.SMFrequency != nil {
			t.Errorf("values of sections that were not collected are present: %+v", l)
		}
		if len(rep.Launches) != 4 || len(l.Rules) == 0 {
			t.Errorf("%d launches, %d rules", len(rep.Launches), len(l.Rules))
		}
	})
	for _, c := range []struct{ dir, writer string }{
		{"too-new/sglang-flashattn-h800", "2023.3.0.0"},
		{"too-new/cutlass-b2bgemm-a100", "2024.1.1.0"},
	} {
		t.Run(c.dir, func(t *testing.T) {
			_, err := ReadReport(ctx, cli, fixture(t, c.dir, ".ncu-rep"))
			var se *trace.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a SyntaxError", err)
			}
			want := "report written by Nsight Compute " + c.writer + ", newer than the installed 2022.3.0.0"
			if !strings.Contains(err.Error(), want) {
				t.Errorf("err = %v\nwant it to say %q", err, want)
			}
		})
	}
	t.Run("garbage", func(t *testing.T) {
		dir := t.TempDir()
		for name, data := range map[string][]byte{
			"junk.ncu-rep":  []byte("junk"),
			"empty.ncu-rep": nil,
		} {
			p := filepath.Join(dir, name)
			os.WriteFile(p, data, 0o644)
			if _, err := ReadReport(ctx, cli, p); err == nil || !strings.Contains(err.Error(), "not an Nsight Compute report") {
				t.Errorf("%s: err = %v", name, err)
			}
		}
		b, _ := os.ReadFile(fixture(t, "cudacode-rtx2080ti", ".ncu-rep"))
		p := filepath.Join(dir, "trunc.ncu-rep")
		os.WriteFile(p, b[:50000], 0o644)
		_, err := ReadReport(ctx, cli, p)
		if err == nil || !strings.Contains(err.Error(), "Failed to load report file") {
			t.Errorf("truncated: err = %v, want ncu's own message", err)
		}
	})
}

// TestReadReportMatchesExports: reading a report through the installed ncu
// gives, launch by launch and field by field, what the fixtures' own
// base-unit exports of its details and raw pages give (made with the same
// ncu 2022.3, see PROVENANCE.md).
func TestReadReportMatchesExports(t *testing.T) {
	cli := ncuCLI(t)
	for _, dir := range []string{"cudacode-rtx2080ti", "mojo-divergence-gtx1660ti", "speedyscan-rtx3070", "mistic-a100-partial-sections", "indexspaces-a40"} {
		t.Run(dir, func(t *testing.T) {
			got := readReport(t, cli, fixture(t, dir, ".ncu-rep"))
			want := &Report{}
			p := newParser(want)
			for _, suffix := range []string{".details.base-units.csv", ".raw.base-units.csv"} {
				f, err := os.Open(fixture(t, dir, suffix))
				if err != nil {
					t.Fatal(err)
				}
				err = p.parse(f, suffix)
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
			}
			p.finish()
			if len(got.Launches) != len(want.Launches) {
				t.Fatalf("%d launches, exports have %d", len(got.Launches), len(want.Launches))
			}
			for i := range got.Launches {
				if !reflect.DeepEqual(got.Launches[i], want.Launches[i]) {
					t.Errorf("launch %d:\n got %+v\nwant %+v", i, *got.Launches[i], *want.Launches[i])
				}
			}
		})
	}
}
