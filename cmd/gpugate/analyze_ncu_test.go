package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
)

func TestAnalyzeNCUCSV(t *testing.T) {
	details := fixtures.Path(t, "ncu/cudacode-rtx2080ti/cudacode-rtx2080ti.details.csv")
	code, out, errOut := run(t, "analyze", details)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// PROVENANCE.md: kernel_A 1.17 second, SM 80.30, Memory 9.45, achieved
	// 99.89; kernel_C from the same file: SOLBottleneck WRN (latency).
	for _, want := range []string{"ncu details CSV · 2 launches", "kernel_A", "256000", "1170000.00", "80.3", "9.4", "99.9", "compute-bound", "kernel_C", "latency-bound", "1 kernel_C: WRN SOLBottleneck:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	raw := fixtures.Path(t, "ncu/mistic-a100-partial-sections/mistic-a100-partial-sections.raw.base-units.csv")
	code, out, errOut = run(t, "analyze", "-format", "json", raw)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		NCU []struct {
			Source   string
			Launches []map[string]any
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.NCU) != 1 || doc.NCU[0].Source != "raw-csv" || len(doc.NCU[0].Launches) != 4 {
		t.Fatalf("doc = %+v", doc)
	}
	l := doc.NCU[0].Launches[0]
	// Present in the partial report's raw page, and absent (null, not 0).
	if l["duration_ns"] != 1129093408.0 || l["block_size"] != 512.0 {
		t.Errorf("duration %v block %v", l["duration_ns"], l["block_size"])
	}
	for _, k := range []string{"sm_throughput_pct", "memory_throughput_pct", "achieved_occupancy_pct", "sm_frequency_hz"} {
		if v, ok := l[k]; !ok || v != nil {
			t.Errorf("%s = %v (present %v), want null", k, v, ok)
		}
	}
}

func TestAnalyzeNCUHostile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "evil.csv")
	name := "k\x1b[2J\nfake row\tx"
	csv := `"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type","Rule Description"` + "\n" +
		`"0","1","p","h","` + name + `","t","1","7","Launch Statistics","Block Size","","64",` + "\n"
	os.WriteFile(p, []byte(csv), 0o644)
	code, out, errOut := run(t, "analyze", p)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "\x1b") || strings.Contains(out, "\nfake row") || !strings.Contains(out, `k\x1b[2J\x0afake row\x09x`) {
		t.Errorf("control characters reached the terminal:\n%q", out)
	}
	code, out, _ = run(t, "analyze", "-format", "json", p)
	var doc struct {
		NCU []struct{ Launches []struct{ Name string } }
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.NCU[0].Launches[0].Name != name {
		t.Errorf("JSON does not keep the name byte for byte: exit %d\n%s", code, out)
	}
}

func TestAnalyzeNCUErrors(t *testing.T) {
	details := fixtures.Path(t, "ncu/cudacode-rtx2080ti/cudacode-rtx2080ti.details.csv")
	kineto := fixtures.Glob(t, "kineto/*/*.json*")
	if len(kineto) == 0 {
		t.Fatal("no Kineto fixture")
	}
	code, _, errOut := run(t, "analyze", details, kineto[0])
	if code != 2 || !strings.Contains(errOut, "cannot be analyzed together") {
		t.Errorf("mixed inputs: exit %d, %s", code, errOut)
	}
	rep := fixtures.Path(t, "ncu/cudacode-rtx2080ti/cudacode-rtx2080ti.ncu-rep")
	code, _, errOut = run(t, "analyze", "-ncu", "/nonexistent/ncu", rep)
	if code != 2 || !strings.Contains(errOut, "read with the ncu CLI, but ncu /nonexistent/ncu") {
		t.Errorf("missing ncu: exit %d, %s", code, errOut)
	}
}

// TestAnalyzeNCUReport needs the ncu CLI (GPUGATE_NCU; CI sets it).
func TestAnalyzeNCUReport(t *testing.T) {
	cli := os.Getenv("GPUGATE_NCU")
	if cli == "" {
		t.Skip("GPUGATE_NCU not set: skipping the test that needs the ncu CLI (scripts/setup-ncu.sh installs it; scripts/test.sh sets it)")
	}
	rep := fixtures.Path(t, "ncu/speedyscan-rtx3070/speedyscan-rtx3070.ncu-rep")
	code, out, errOut := run(t, "analyze", "-ncu", cli, rep)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// PROVENANCE.md: the 2020.3 writer's old labels; 336.70 µs, SM [%]
	// 49.01, Memory [%] 53.42, achieved occupancy 94.03.
	for _, want := range []string{"written by Nsight Compute 2020.3.1.0", "1 launch", "19532", "512", "336.70", "49.0", "53.4", "94.0", "latency-bound"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, c := range []struct{ file, writer string }{
		{"ncu/too-new/sglang-flashattn-h800/sglang-flashattn-h800.ncu-rep", "2023.3.0.0"},
		{"ncu/too-new/cutlass-b2bgemm-a100/cutlass-b2bgemm-a100.ncu-rep", "2024.1.1.0"},
	} {
		code, out, errOut := run(t, "analyze", "-ncu", cli, fixtures.Path(t, c.file))
		want := "report written by Nsight Compute " + c.writer + ", newer than the installed 2022.3.0.0"
		if code != 2 || out != "" || !strings.Contains(errOut, want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 and one line saying %q", c.file, code, out, errOut, want)
		}
	}
}
