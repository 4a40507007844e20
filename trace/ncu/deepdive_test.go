package ncu

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestCompareTwoLaunches explains the change between two launches of the
// same kernel within one real report: IndexSpaces.jl's julia__5_11155 ran
// as launch 3 (grid 5418) and launch 0 (grid 39312) on one A40. Taking 3 as
// the baseline and 0 as the candidate, the raw page says: duration 9408 →
// 70464 ns (+649%), achieved occupancy 38.36 → 66.78%, SM throughput 24.09
// → 17.89%, memory throughput 43.17 → 90.63%; registers 16 and theoretical
// occupancy 100% in both; SOLBottleneck says launch 3 is latency-bound and
// launch 0 over 80% of peak, memory ahead.
func TestCompareTwoLaunches(t *testing.T) {
	rep, err := ReadCSVFile(fixture(t, "indexspaces-a40", ".details.base-units.csv"))
	if err != nil {
		t.Fatal(err)
	}
	base, head := rep.Launches[3], rep.Launches[0]
	if FunctionName(base.Name) != "julia__5_11155" || base.Name != head.Name {
		t.Fatalf("launches 3 and 0 are %q and %q", base.Name, head.Name)
	}
	d := Compare(base, head, nil)
	want := "julia__5_11155 +649%: grid 5418 → 39312 blocks, achieved occupancy 38% → 67%, SM throughput 24% → 18%, memory throughput 43% → 91%, SM clock 1.00 → 1.27 GHz, latency-bound → memory-bound: memory-bound"
	if got := d.String(); got != want {
		t.Errorf("Compare(3, 0) =\n%s\nwant\n%s", got, want)
	}
	// gpugate's own measure of the change wins over ncu's duration.
	c := 0.18
	if got := Compare(base, head, &c).Summary(); !strings.HasPrefix(got, "+18%: grid 5418 → 39312 blocks") {
		t.Errorf("Summary with change 0.18 = %q", got)
	}
	// Launches 1 and 2 of julia__5_11236: duration 9696 → 11680 ns
	// (+20%), grid 5397 → 6308, memory throughput 42.36 → 49.38% (7
	// points), SM clock 0.970 → 0.908 GHz (-6%); SM throughput (23.98 →
	// 24.76) and achieved occupancy (38.56 → 38.03) within 5 points.
	d = Compare(rep.Launches[1], rep.Launches[2], nil)
	want = "julia__5_11236 +20%: grid 5397 → 6308 blocks, memory throughput 42% → 49%, SM clock 0.97 → 0.91 GHz: latency-bound"
	if got := d.String(); got != want {
		t.Errorf("Compare(1, 2) =\n%s\nwant\n%s", got, want)
	}
	// A launch against itself: nothing to say beyond the limiter.
	if got := Compare(head, head, nil).Summary(); got != "+0%: no change in launch configuration, occupancy or throughput beyond ncu's noise: memory-bound" {
		t.Errorf("self comparison = %q", got)
	}
}

// TestCompareRegisterLimited is the example, on made-up numbers
// (no real pair of reports of one kernel with a register change exists in
// the fixtures): more registers per thread lower theoretical and achieved
// occupancy.
func TestCompareRegisterLimited(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	i := func(v int64) *int64 { return &v }
	base := &Launch{Name: "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4> >(Flash_fwd_params)",
		RegistersPerThread: i(128), TheoreticalOccupancy: f(75), AchievedOccupancy: f(62), SMThroughput: f(71), MemoryThroughput: f(40),
		GridSize: i(1024), BlockSize: i(128), Duration: f(100000)}
	head := &Launch{Name: base.Name,
		RegistersPerThread: i(168), TheoreticalOccupancy: f(37.5), AchievedOccupancy: f(31), SMThroughput: f(54), MemoryThroughput: f(38),
		GridSize: i(1024), BlockSize: i(128), Duration: f(118000),
		Rules: []Rule{{Section: "Occupancy", Name: "Occupancy", Type: "WRN", Message: "This kernel's theoretical occupancy (37.5%) is limited by the number of required registers See the CUDA Best Practices Guide"}}}
	head.applyRules()
	want := "flash_fwd_kernel +18%: achieved occupancy 62% → 31% (75% → 38% theoretical, registers/thread 128 → 168), SM throughput 71% → 54%: register-limited"
	if got := Compare(base, head, nil).String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestInvocations(t *testing.T) {
	d := &DeepDive{NCU: "/opt/ncu/ncu", OutDir: "/art", Command: []string{"python3", "train.py", "--steps", "30"}, ClockControl: "none"}
	// Hostile names: a regex metacharacter soup, and a path.
	targets := []Target{
		{Name: "void at::native::(anonymous namespace)::vectorized_elementwise_kernel<4, F>(int, F)", Skip: 30},
		{Name: "a.b*c|d$^(int)", Skip: 0},
		{Name: "../../etc/passwd", Skip: 3},
	}
	inv, err := d.Invocations(targets)
	if err != nil {
		t.Fatal(err)
	}
	want0 := []string{"/opt/ncu/ncu", "--target-processes", "all", "--kernel-name-base", "function",
		"--kernel-name", "regex:^vectorized_elementwise_kernel$", "--launch-skip", "30", "--launch-count", "1",
		"--section", "SpeedOfLight", "--section", "LaunchStats", "--section", "Occupancy",
		"--clock-control", "none", "--export", "/art/ncu-1", "--force-overwrite", "python3", "train.py", "--steps", "30"}
	if !reflect.DeepEqual(inv[0].Args, want0) {
		t.Errorf("args =\n%q\nwant\n%q", inv[0].Args, want0)
	}
	if inv[0].Report != "/art/ncu-1.ncu-rep" || inv[0].Function != "vectorized_elementwise_kernel" {
		t.Errorf("report %q function %q", inv[0].Report, inv[0].Function)
	}
	// "a.b*c|d$^(int)": parameters stripped, the rest quoted.
	if got := inv[1].Args[6]; got != `regex:^a\.b\*c\|d\$\^$` {
		t.Errorf("quoted regex = %q", got)
	}
	for i, v := range inv {
		if filepath.Dir(v.Report) != "/art" || !strings.HasPrefix(filepath.Base(v.Report), "ncu-") {
			t.Errorf("invocation %d writes %q: reports go into OutDir, named by position", i, v.Report)
		}
	}
	for _, bad := range []struct {
		d DeepDive
		t []Target
	}{
		{DeepDive{NCU: "ncu", OutDir: "/a", Command: []string{"-x"}}, targets},
		{DeepDive{NCU: "ncu", OutDir: "/a", Command: []string{"x"}, Sections: []string{"regex:.*"}}, targets},
		{DeepDive{NCU: "ncu", OutDir: "/a", Command: []string{"x"}, Sections: []string{"--set=full"}}, targets},
		{DeepDive{NCU: "ncu", OutDir: "/a", Command: []string{"x"}, ClockControl: "max"}, targets},
		{DeepDive{NCU: "ncu", OutDir: "/a", Command: []string{"x"}}, []Target{{Name: "k", Skip: -1}}},
		{DeepDive{NCU: "ncu", OutDir: "/a", Command: []string{"x"}}, []Target{{Name: " "}}},
		{DeepDive{NCU: "ncu", OutDir: "", Command: []string{"x"}}, targets},
		{DeepDive{NCU: "ncu", OutDir: "/a"}, targets},
	} {
		if _, err := bad.d.Invocations(bad.t); err == nil {
			t.Errorf("Invocations(%+v, %+v): no error", bad.d, bad.t)
		}
	}
}

// TestProbe runs the real check on this machine: with no NVIDIA GPU or
// driver here, ncu cannot profile and the deep-dive is skipped with a note.
// On a machine with a GPU it must say yes.
func TestProbe(t *testing.T) {
	if a := Probe(context.Background(), "/nonexistent/ncu"); a.OK || !strings.Contains(a.Note, "ncu /nonexistent/ncu") {
		t.Errorf("missing ncu: %+v", a)
	}
	cli := ncuCLI(t)
	a := Probe(context.Background(), cli)
	_, gpu := os.Stat("/dev/nvidiactl")
	if gpu == nil {
		if !a.OK {
			t.Errorf("GPU present (/dev/nvidiactl) but Probe says %q", a.Note)
		}
		return
	}
	if a.OK || a.NCU != cli {
		t.Fatalf("no GPU here, but Probe = %+v", a)
	}
	if !strings.Contains(a.Note, "deep-dive skipped: no NVIDIA GPU or driver here") || !strings.Contains(a.Note, "Driver could not be loaded") {
		t.Errorf("note = %q", a.Note)
	}
}
