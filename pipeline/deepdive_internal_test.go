package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/runner"
	"github.com/gpugate/gpugate/stats"
	"github.com/gpugate/gpugate/trace"
	"github.com/gpugate/gpugate/trace/ncu"
)

// The deep-dive is driven here without a GPU. The real ncu cannot profile
// on a machine without one, so profiling is done by a stand-in: a shell
// script named ncu, written by each test into a folder put first on PATH,
// that answers --query-metrics as a GPU machine's ncu would, records each
// profiling command line (and the folder it ran in), runs the application
// as ncu does, and then, by the test's choice, copies a REAL report from
// the fixtures to the --export path, crashes, hangs or writes nothing.
// Reading the reports (ncu --import) is forwarded to the real ncu, so what
// the pipeline reads is what ncu says of real reports.

const julia = "julia__5_11155(CuKernelContext, CuDeviceArray<Float16x2, (int)1, (int)1>, Float16x2)"

// evilKernel is a kernel name a trace could hold; its function name (what
// ncu matches) keeps the backtick.
const evilKernel = "void evil`k\n</details>@all(int)"

func realNCU(t *testing.T) string {
	t.Helper()
	p := os.Getenv("GPUGATE_NCU")
	if p == "" {
		t.Skip("GPUGATE_NCU not set: skipping the test that reads reports with the ncu CLI (scripts/setup-ncu.sh installs it; scripts/test.sh sets it)")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("GPUGATE_NCU=%s: %v", p, err)
	}
	return p
}

// standIn writes the stand-in ncu; mode is "copy FILE", "crash", "hang" or
// "none" (exit 0, no report). Its calls are recorded under calls/, one file
// per profiling run: the arguments NUL-separated, then the folder it ran in.
func standIn(t *testing.T, mode string) (calls string) {
	t.Helper()
	real := realNCU(t)
	dir := t.TempDir()
	calls = filepath.Join(dir, "calls")
	os.Mkdir(calls, 0o755)
	script := `#!/bin/sh
# stand-in ncu (pipeline/deepdive_internal_test.go)
case "$1" in
--query-metrics) echo "Device NVIDIA stand-in (GA102)"; exit 0 ;;
--import) if [ -n "$GPUGATE_TEST_IMPORT_HANG" ]; then sleep 300 & sleep 300; fi; exec ` + shq(real) + ` "$@" ;;
--version) exec ` + shq(real) + ` "$@" ;;
esac
n=$(ls ` + shq(calls) + ` | grep -c 'args$')
rec=` + shq(calls) + `/call-$n
printf '%s\0' "$@" > "$rec.args"
pwd > "$rec.dir"
out=""
while [ $# -gt 0 ]; do
	case "$1" in
	--export) out="$2"; shift 2 ;;
	--target-processes|--kernel-name-base|--kernel-name|--launch-skip|--launch-count|--section|--clock-control) shift 2 ;;
	--force-overwrite) shift ;;
	-*) echo "==ERROR== stand-in: unknown option $1"; exit 9 ;;
	*) break ;;
	esac
done
echo "==PROF== Connected to process $$ (stand-in)"
"$@" || exit $?
`
	switch {
	case strings.HasPrefix(mode, "copy "):
		script += "cp " + shq(strings.TrimPrefix(mode, "copy ")) + ` "$out.ncu-rep" && echo "==PROF== Report: $out.ncu-rep"` + "\n"
	case mode == "crash":
		script += "echo '==ERROR== stand-in: the profiler crashed'; exit 3\n"
	case mode == "hang":
		script += "echo 'stand-in: hanging'; sleep 600\n"
	case mode == "none":
		script += "echo '==WARNING== No kernels were profiled.'\n"
	}
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	if err := os.WriteFile(filepath.Join(bin, "ncu"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("GPUGATE_NCU", "")
	return calls
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// call is one recorded profiling run of the stand-in.
type call struct {
	args []string
	dir  string
}

func calls(t *testing.T, dir string) []call {
	t.Helper()
	var out []call
	for i := 0; ; i++ {
		a, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("call-%d.args", i)))
		if err != nil {
			return out
		}
		d, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("call-%d.dir", i)))
		out = append(out, call{args: strings.Split(strings.TrimSuffix(string(a), "\x00"), "\x00"), dir: strings.TrimSpace(string(d))})
	}
}

// flag returns the value after name in args.
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// synthetic is one analyzed run, as its stored analysis document says it:
// n steps of stepMs, and the kernels given as name → [launches, ms] per
// step.
func synthetic(t *testing.T, n int, stepMs float64, kernels map[string][2]float64) (gate.Run, []byte) {
	t.Helper()
	steps := make([]analysis.Step, n)
	var at int64
	for i := range steps {
		d := int64((stepMs + float64(i%3)*0.3) * 1e6)
		steps[i] = analysis.Step{Name: fmt.Sprintf("ProfilerStep#%d", i), HostStart: at, HostEnd: at + d, Start: at, End: at + d, Kernels: 100, GPUBusy: d, Compute: d}
		at += d
	}
	var ks []analysis.KernelStat
	for name, v := range kernels {
		ks = append(ks, analysis.KernelStat{Name: name, Count: int(v[0]) * n, Time: int64(v[1] * 1e6 * float64(n))})
	}
	r := analysis.FromSteps(trace.New("synthetic.json", trace.FormatKineto), true, steps, ks)
	var buf bytes.Buffer
	if err := report.NewAnalysis([]*analysis.Result{r}).WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var a report.Analysis
	if err := json.Unmarshal(buf.Bytes(), &a); err != nil {
		t.Fatal(err)
	}
	return a.Results(), buf.Bytes()
}

var torchFP = runner.Fingerprint{GPU: "NVIDIA A40", GPUCount: 1, Driver: "535", CUDA: "12.2", Torch: "2.4.0", Profiler: "torch"}

func ddConfig(t *testing.T, extra string) (*config.Config, *config.Workload) {
	t.Helper()
	dir := t.TempDir()
	c, err := config.Parse([]byte(`version: 1
workloads:
  - name: w
    command: [sh, -c, "echo job ran in $(pwd)"]
    profiler: torch
    warmup_steps: 3
`+extra), filepath.Join(dir, "perf.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	w, _ := c.Workload("")
	return c, w
}

// regression stores a baseline run of w in a new store and returns the
// store and a candidate execution that regressed: step time 100 → 140 ms,
// julia__5_11155 from 10 to 20 ms per step (2 launches per step), and a new
// kernel with a hostile name at 5 ms per step.
func regression(t *testing.T) (db string, baseID int64, ex *Execution) {
	t.Helper()
	ctx := context.Background()
	db = filepath.Join(t.TempDir(), "b.db")
	s, err := baseline.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Three baseline runs, 98, 100 and 102 ms a step: one run shows no
	// run-to-run spread and judges nothing (issue 19). The newest is the
	// one whose deep-dive tests store.
	fp, _ := json.Marshal(torchFP)
	for i, ms := range []float64{98, 102, 100} {
		_, bdoc := synthetic(t, 20, ms, map[string][2]float64{julia: {2, 10}, "other": {1, 30}})
		baseID, err = s.Record(ctx, baseline.Run{Workload: "w", Branch: "main", Commit: "b0", Created: time.Now().Add(time.Duration(i-3) * time.Hour), Kind: "baseline",
			Profiler: "torch", FingerprintHash: torchFP.Hash(), Fingerprint: fp, Version: "t", Analysis: bdoc})
		if err != nil {
			t.Fatal(err)
		}
	}
	crun, cdoc := synthetic(t, 20, 140, map[string][2]float64{julia: {2, 20}, "other": {1, 30}, evilKernel: {1, 5}})
	return db, baseID, &Execution{Workload: "w", Profiler: "torch", Fingerprint: torchFP, Runs: []gate.Run{crun}, Docs: [][]byte{cdoc}, Out: t.TempDir()}
}

// A regression of gpugate run with deep_dive: the two kernels whose time
// per step grew most are profiled, one ncu run each, with the right
// command line; the baseline's side comes from the deep-dive stored with
// the baseline run (launch 3 of the real IndexSpaces.jl report, read with
// the real ncu); the candidate's from the stand-in's copy of the same real
// report, whose first launch of julia__5_11155 is launch 0. The hostile
// kernel is not in that report: its line says so. The verdict is the
// gate's, and the candidate's kernels are stored with its run.
func TestDeepDiveRun(t *testing.T) {
	ctx := context.Background()
	rep := fixtures.Path(t, filepath.Join("ncu", "indexspaces-a40", "indexspaces-a40.ncu-rep"))
	real := realNCU(t)
	stored, err := ncu.ReadReport(ctx, real, rep)
	if err != nil {
		t.Fatal(err)
	}
	log := standIn(t, "copy "+rep)
	db, baseID, ex := regression(t)
	s, _ := baseline.Open(ctx, db)
	l3, _ := json.Marshal(stored.Launches[3])
	if err := s.RecordNCU(ctx, baseID, []baseline.NCUKernel{{Rank: 1, Kernel: julia, Function: "julia__5_11155", Writer: stored.Writer, Launch: l3}}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	c, w := ddConfig(t, "    deep_dive: {kernels: 2, sections: [SpeedOfLight, Occupancy], clock_control: none}\n")
	var logw bytes.Buffer
	oc, err := Judge(ctx, Options{Config: c, Workload: w, DB: db, Branch: "main", Log: &logw}, ex)
	if err != nil {
		t.Fatal(err)
	}
	r := oc.Report
	if r.Verdict != stats.Regression || r.DeepDive == nil {
		t.Fatalf("verdict %s, deep-dive %+v; log:\n%s", r.Verdict, r.DeepDive, logw.String())
	}
	cs := calls(t, log)
	if len(cs) != 2 {
		t.Fatalf("%d ncu runs, want 2 (one per kernel); log:\n%s", len(cs), logw.String())
	}
	for i, want := range []struct{ regex, skip string }{
		{"regex:^julia__5_11155$", "6"}, // 3 warm-up steps × 2 launches per step
		{"regex:^" + regexp.QuoteMeta(ncu.FunctionName(evilKernel)) + "$", "3"},
	} {
		a := cs[i].args
		if got := flagValue(a, "--kernel-name"); got != want.regex {
			t.Errorf("run %d: --kernel-name %q, want %q", i+1, got, want.regex)
		}
		if got := flagValue(a, "--launch-skip"); got != want.skip {
			t.Errorf("run %d: --launch-skip %q, want %s", i+1, got, want.skip)
		}
		if flagValue(a, "--launch-count") != "1" || flagValue(a, "--kernel-name-base") != "function" || flagValue(a, "--clock-control") != "none" {
			t.Errorf("run %d: args %q", i+1, a)
		}
		if got, want := flagValue(a, "--export"), filepath.Join(ex.Out, "deepdive", "head", fmt.Sprintf("k%d", i+1), "ncu-1"); got != want {
			t.Errorf("run %d: --export %q, want %q", i+1, got, want)
		}
		if got := strings.Join(a[len(a)-3:], " "); got != "sh -c echo job ran in $(pwd)" {
			t.Errorf("run %d: application %q", i+1, got)
		}
		if want, _ := filepath.EvalSymlinks(filepath.Dir(c.File)); cs[i].dir != want {
			t.Errorf("run %d ran in %s, want the workload's folder %s", i+1, cs[i].dir, want)
		}
	}
	ks := r.DeepDive.Kernels
	if len(ks) != 2 {
		t.Fatalf("%d kernel results: %+v", len(ks), ks)
	}
	k := ks[0]
	if k.Kernel != julia || k.BaseFrom != "store" || k.Base == nil || k.Base.ID != 3 || k.Head == nil || k.Head.ID != 0 || k.ChangePct == nil || *k.ChangePct != 100 {
		t.Errorf("julia: %+v", k)
	}
	if !strings.Contains(k.Note, "holds 2 launches of julia__5_11155; the first (ID 0) is shown") {
		t.Errorf("julia note %q", k.Note)
	}
	const line = "+100%: grid 5418 → 39312 blocks, achieved occupancy 38% → 67%, SM throughput 24% → 18%, memory throughput 43% → 91%, SM clock 1.00 → 1.27 GHz, latency-bound → memory-bound: memory-bound"
	if got := k.Summary(); got != line {
		t.Errorf("julia's line\n%s\nwant\n%s", got, line)
	}
	e := ks[1]
	if e.Kernel != evilKernel || e.Head != nil || e.Base != nil || e.ChangePct != nil ||
		!strings.Contains(e.Note, "candidate: ncu's report holds no launch of evil`k\n</details>@all, only of julia__5_11155, julia__5_11236, julia_frb_5885") ||
		!strings.Contains(e.Note, "base: the baseline does not run this kernel") {
		t.Errorf("hostile kernel: %+v", e)
	}
	// The comment has the line, the hostile name in its code span.
	var md bytes.Buffer
	report.WriteComment(&md, r, report.CommentInfo{Marker: "<!-- m -->"})
	for _, want := range []string{"- `julia__5_11155` " + line + " <sub>", "- ``evil`k\\n</details>@all`` not profiled <sub>(candidate: ncu's report holds no launch of evil\\`k\\\\n\\</details\\>@\u2060all, only of"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("comment lacks %q:\n%s", want, md.String())
		}
	}
	// The candidate's kernels are stored with its run.
	s, _ = baseline.Open(ctx, db)
	defer s.Close()
	rows, err := s.NCUKernels(ctx, ex.RunIDs)
	if err != nil || len(rows) != 1 || rows[0].Kernel != julia || rows[0].Rank != 1 || len(ex.RunIDs) != 1 || rows[0].Writer != stored.Writer {
		t.Errorf("stored: %+v, %v (runs %v)", rows, err, ex.RunIDs)
	}
}

// The base side without ncu data: the candidate's values alone, said so,
// nothing made up for the baseline.
func TestDeepDiveRunNoBaseData(t *testing.T) {
	ctx := context.Background()
	rep := fixtures.Path(t, filepath.Join("ncu", "indexspaces-a40", "indexspaces-a40.ncu-rep"))
	log := standIn(t, "copy "+rep)
	db, _, ex := regression(t)
	c, w := ddConfig(t, "    deep_dive: {kernels: 1}\n")
	// A relative artifacts folder (the default .gpugate/runs/…): ncu runs
	// in the job's folder, so the report path it gets must be absolute.
	cwd := t.TempDir()
	t.Chdir(cwd)
	ex.Out = filepath.Join("rel", "out")
	oc, err := Judge(ctx, Options{Config: c, Workload: w, DB: db, Branch: "main"}, ex)
	if err != nil {
		t.Fatal(err)
	}
	if cs := calls(t, log); len(cs) != 1 || flagValue(cs[0].args, "--export") != filepath.Join(cwd, "rel", "out", "deepdive", "head", "k1", "ncu-1") {
		t.Errorf("ncu runs %+v", cs)
	}
	d := oc.Report.DeepDive
	if oc.Report.Verdict != stats.Regression || d == nil || len(d.Kernels) != 1 {
		t.Fatalf("verdict %s, deep-dive %+v", oc.Report.Verdict, d)
	}
	k := d.Kernels[0]
	if k.Base != nil || k.BaseFrom != "" || k.Head == nil || !strings.Contains(k.Note, "base: no ncu data for the baseline") {
		t.Errorf("kernel %+v", k)
	}
	if got := k.Summary(); !strings.HasPrefix(got, "+100%: candidate only: grid 39312 blocks, block 256 threads, registers/thread 16, achieved occupancy 67% of 100% theoretical") {
		t.Errorf("line %q", got)
	}
	if !strings.Contains(d.Note, "the baseline runs have no ncu data") {
		t.Errorf("note %q", d.Note)
	}
}

// ncu crashes, hangs past its timeout (killed with its process group), or
// profiles nothing: each is the kernel's note, and the verdict stands.
func TestDeepDiveFailures(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ mode, want string }{
		{"crash", "ncu run failed: job w ncu head 1 failed: exit status 3"},
		{"hang", "ncu run failed: job w ncu head 1 timed out after 2s; its process group was killed"},
		{"none", "ncu wrote no report: it profiled no launch of julia__5_11155 after skipping 6"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			standIn(t, c.mode)
			db, _, ex := regression(t)
			cfg, w := ddConfig(t, "    timeout: 1s\n    deep_dive: {kernels: 1}\n")
			start := time.Now()
			oc, err := Judge(ctx, Options{Config: cfg, Workload: w, DB: db, Branch: "main"}, ex)
			if err != nil {
				t.Fatal(err)
			}
			d := oc.Report.DeepDive
			if oc.Report.Verdict != stats.Regression || d == nil || len(d.Kernels) != 1 {
				t.Fatalf("verdict %s, deep-dive %+v", oc.Report.Verdict, d)
			}
			if k := d.Kernels[0]; k.Head != nil || !strings.Contains(k.Note, c.want) {
				t.Errorf("note %q, want %q", k.Note, c.want)
			}
			if c.mode == "hang" && time.Since(start) > time.Minute {
				t.Errorf("the hung ncu took %s to be killed", time.Since(start))
			}
		})
	}
}

// Without an ncu that can profile, nothing runs and the report says why:
// the real ncu on this machine (no GPU, no driver) gives its own reason;
// a missing ncu says it is missing.
func TestDeepDiveSkipped(t *testing.T) {
	ctx := context.Background()
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("this machine has an NVIDIA driver: ncu may profile here")
	}
	real := realNCU(t)
	for _, c := range []struct{ ncu, want string }{
		{real, "deep-dive skipped: no NVIDIA GPU or driver here (ncu --query-metrics: "},
		{filepath.Join(t.TempDir(), "no-ncu"), "deep-dive skipped: ncu "},
	} {
		db, _, ex := regression(t)
		cfg, w := ddConfig(t, "    deep_dive: {kernels: 1}\n")
		oc, err := Judge(ctx, Options{Config: cfg, Workload: w, DB: db, Branch: "main", NCU: c.ncu}, ex)
		if err != nil {
			t.Fatal(err)
		}
		d := oc.Report.DeepDive
		if oc.Report.Verdict != stats.Regression || d == nil || len(d.Kernels) != 0 || !strings.HasPrefix(d.Note, c.want) {
			t.Errorf("ncu %s: verdict %s, deep-dive %+v", c.ncu, oc.Report.Verdict, d)
		}
		if _, err := os.Stat(filepath.Join(ex.Out, "deepdive")); err == nil {
			t.Errorf("ncu %s: a deep-dive folder was made", c.ncu)
		}
	}
	// A pass asks for no deep-dive at all.
	db, _, ex := regression(t)
	_, bdoc := synthetic(t, 20, 100, map[string][2]float64{julia: {2, 10}, "other": {1, 30}})
	var a report.Analysis
	json.Unmarshal(bdoc, &a)
	ex.Runs, ex.Docs = []gate.Run{a.Results()}, [][]byte{bdoc}
	cfg, w := ddConfig(t, "    deep_dive: {kernels: 1}\n")
	oc, err := Judge(ctx, Options{Config: cfg, Workload: w, DB: db, Branch: "main", NCU: real}, ex)
	if err != nil || oc.Report.Verdict == stats.Regression || oc.Report.DeepDive != nil {
		t.Errorf("no regression: verdict %s, deep-dive %+v, %v", oc.Report.Verdict, oc.Report.DeepDive, err)
	}
}

// gpugate ab: both sides are checked out, so both are profiled, each in
// its own checkout and with its own launches per step; a kernel new in the
// head is profiled on the head only. Both sides get the stand-in's copy
// of the same real report, so the line says nothing changed beyond ncu's
// noise.
func TestDeepDiveAB(t *testing.T) {
	ctx := context.Background()
	rep := fixtures.Path(t, filepath.Join("ncu", "indexspaces-a40", "indexspaces-a40.ncu-rep"))
	log := standIn(t, "copy "+rep)
	c, w := ddConfig(t, "    deep_dive: {kernels: 3}\n")
	// Three runs a side (one a side judges nothing: issue 19).
	var bruns, hruns []gate.Run
	for _, d := range []float64{-2, 0, 2} {
		brun, _ := synthetic(t, 20, 100+d, map[string][2]float64{julia: {1, 10}, "other": {1, 30}})
		hrun, _ := synthetic(t, 20, 140+d, map[string][2]float64{julia: {2, 20}, "other": {1, 30}, evilKernel: {1, 5}})
		bruns, hruns = append(bruns, brun), append(hruns, hrun)
	}
	r := gate.Compare(bruns, hruns, gate.Options{})
	if r.Verdict != stats.Regression {
		t.Fatalf("verdict %s", r.Verdict)
	}
	baseDir, headDir := t.TempDir(), t.TempDir()
	out := t.TempDir()
	d := abDeepDive(ctx, ABOptions{Config: c, Workload: w}, r, &Plan{workdir: baseDir}, &Plan{workdir: headDir}, out, nil)
	cs := calls(t, log)
	if len(cs) != 3 {
		t.Fatalf("%d ncu runs, want 3 (julia on base, julia and the new kernel on head)", len(cs))
	}
	for i, want := range []struct{ dir, skip, export string }{
		{baseDir, "3", filepath.Join(out, "deepdive", "base", "k1", "ncu-1")}, // 3 warm-up steps × 1 launch per step on base
		{headDir, "6", filepath.Join(out, "deepdive", "head", "k1", "ncu-1")},
		{headDir, "3", filepath.Join(out, "deepdive", "head", "k2", "ncu-1")},
	} {
		dir, _ := filepath.EvalSymlinks(want.dir)
		if cs[i].dir != dir || flagValue(cs[i].args, "--launch-skip") != want.skip || flagValue(cs[i].args, "--export") != want.export {
			t.Errorf("run %d: in %s, args %q; want in %s, skip %s, export %s", i+1, cs[i].dir, cs[i].args, dir, want.skip, want.export)
		}
	}
	if len(d.Kernels) != 2 {
		t.Fatalf("kernels %+v", d.Kernels)
	}
	k := d.Kernels[0]
	if k.BaseFrom != "ncu" || k.Base == nil || k.Head == nil || k.Base.ID != 0 || k.Head.ID != 0 {
		t.Errorf("julia %+v", k)
	}
	if got := k.Summary(); got != "+100%: no change in launch configuration, occupancy or throughput beyond ncu's noise: memory-bound" {
		t.Errorf("julia's line %q", got)
	}
	if e := d.Kernels[1]; e.Base != nil || e.BaseFrom != "" || !strings.Contains(e.Note, "base: the baseline does not run this kernel") {
		t.Errorf("new kernel %+v", e)
	}
	if !strings.Contains(d.Note, "on both sides") {
		t.Errorf("note %q", d.Note)
	}
}

// The nightly refresh with deep_dive records the busiest kernels' ncu
// data with the baseline runs; the next regression takes the baseline's
// side from there.
func TestDeepDiveRecordThenRun(t *testing.T) {
	ctx := context.Background()
	rep := fixtures.Path(t, filepath.Join("ncu", "indexspaces-a40", "indexspaces-a40.ncu-rep"))
	log := standIn(t, "copy "+rep)
	c, w := ddConfig(t, "    deep_dive: {kernels: 2}\n")
	db := filepath.Join(t.TempDir(), "b.db")
	brun, bdoc := synthetic(t, 20, 100, map[string][2]float64{julia: {2, 10}, "other": {1, 30}, "tiny": {1, 0.1}})
	var logw bytes.Buffer
	bex := &Execution{Workload: "w", Profiler: "torch", Fingerprint: torchFP, Runs: []gate.Run{brun, brun}, Docs: [][]byte{bdoc, bdoc}, Out: t.TempDir()}
	if _, err := Judge(ctx, Options{Config: c, Workload: w, DB: db, Branch: "main", Record: true, Log: &logw}, bex); err != nil {
		t.Fatal(err)
	}
	cs := calls(t, log)
	// The two busiest: other (30 ms per step), then julia (10 ms).
	if len(cs) != 2 || flagValue(cs[0].args, "--kernel-name") != "regex:^other$" || flagValue(cs[1].args, "--kernel-name") != "regex:^julia__5_11155$" {
		t.Fatalf("recording's ncu runs: %+v", cs)
	}
	s, _ := baseline.Open(ctx, db)
	rows, err := s.NCUKernels(ctx, bex.RunIDs)
	s.Close()
	// "other" is not in the report: only julia is stored, with both runs.
	if err != nil || len(rows) != 2 || rows[0].Kernel != julia || rows[1].Kernel != julia || rows[0].Rank != 2 {
		t.Fatalf("stored %+v, %v; log:\n%s", rows, err, logw.String())
	}
	if !strings.Contains(logw.String(), "gpugate: deep-dive julia__5_11155(CuKernelContext, CuDeviceArray<Float16x2, (int)1, (int)1>, Float16x2): grid 39312 blocks") {
		t.Errorf("log:\n%s", logw.String())
	}
	crun, cdoc := synthetic(t, 20, 140, map[string][2]float64{julia: {2, 20}, "other": {1, 30}, "tiny": {1, 0.1}})
	oc, err := Judge(ctx, Options{Config: c, Workload: w, DB: db, Branch: "main"}, &Execution{Workload: "w", Profiler: "torch", Fingerprint: torchFP, Runs: []gate.Run{crun}, Docs: [][]byte{cdoc}, Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	d := oc.Report.DeepDive
	if d == nil || len(d.Kernels) != 1 || d.Kernels[0].BaseFrom != "store" || d.Kernels[0].Base == nil || !strings.Contains(d.Note, "come from the deep-dive stored with its runs") {
		t.Errorf("deep-dive %+v", d)
	}
}

// TestDeepDiveImportBounded: ncu --import was bounded only by 5 min a page
// (301 s seen for one kernel); now all the deep-dive's imports together
// get the workload's timeout, and an import that hangs (a child of it
// holding the pipe) is the kernel's note.
func TestDeepDiveImportBounded(t *testing.T) {
	ctx := context.Background()
	rep := fixtures.Path(t, filepath.Join("ncu", "indexspaces-a40", "indexspaces-a40.ncu-rep"))
	standIn(t, "copy "+rep)
	t.Setenv("GPUGATE_TEST_IMPORT_HANG", "1")
	db, _, ex := regression(t)
	cfg, w := ddConfig(t, "    timeout: 2s\n    deep_dive: {kernels: 1}\n")
	start := time.Now()
	oc, err := Judge(ctx, Options{Config: cfg, Workload: w, DB: db, Branch: "main"}, ex)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %s", d.Round(time.Second))
	}
	d := oc.Report.DeepDive
	if d == nil || len(d.Kernels) != 1 || !strings.Contains(d.Kernels[0].Note, "ran past its time limit") {
		t.Fatalf("deep-dive %+v", d)
	}
}
