package report

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/stats"
	"github.com/gpugate/gpugate/trace/ncu"
)

// TestDeepDiveLineRealLaunches renders the deep-dive line from two launches
// of one kernel within one real report, read with the installed ncu:
// IndexSpaces.jl's julia__5_11155 ran as launch 3 (taken as the baseline)
// and launch 0 (the candidate) on one A40. The expected line was written by
// hand from the report's raw and details pages (the fixture's CSV exports,
// read with Python's csv module): grid 5418 → 39312, achieved occupancy
// 38.36 → 66.78%, SM throughput 24.09 → 17.89%, memory throughput 43.17 →
// 90.63%, SM clock 0.999 → 1.268 GHz, registers 16 and theoretical
// occupancy 100% on both; SOLBottleneck says launch 3 has low compute and
// memory throughput (latency) and launch 0 is over 80% of peak with memory
// ahead; the Occupancy rule names no limiter. +18% is the per-step change
// the traces would give. The line survives the JSON round trip of the fork
// flow.
func TestDeepDiveLineRealLaunches(t *testing.T) {
	cli := os.Getenv("GPUGATE_NCU")
	if cli == "" {
		t.Skip("GPUGATE_NCU not set: skipping the test that needs the ncu CLI (scripts/setup-ncu.sh installs it; scripts/test.sh sets it)")
	}
	path := fixtures.Path(t, filepath.Join("ncu", "indexspaces-a40", "indexspaces-a40.ncu-rep"))
	rep, err := ncu.ReadReport(context.Background(), cli, path)
	if err != nil {
		t.Fatal(err)
	}
	base, head := rep.Launches[3], rep.Launches[0]
	if base.ID != 3 || head.ID != 0 || base.Name != head.Name {
		t.Fatalf("launches: %d %q, %d %q", base.ID, base.Name, head.ID, head.Name)
	}
	change := 18.0
	r := &gate.Report{Verdict: stats.Regression, DeepDive: &ncu.DeepDiveReport{Note: "Nsight Compute profiled one launch", Kernels: []ncu.KernelResult{
		{Kernel: head.Name, Function: "julia__5_11155", DeltaMs: 0.5, ChangePct: &change, Base: base, Head: head, BaseFrom: "store", Note: "candidate: two launches"},
	}}}
	const want = "- `julia__5_11155` +18%: grid 5418 → 39312 blocks, achieved occupancy 38% → 67%, SM throughput 24% → 18%, memory throughput 43% → 91%, SM clock 1.00 → 1.27 GHz, latency-bound → memory-bound: memory-bound <sub>(candidate: two launches)</sub>\n"
	var md bytes.Buffer
	WriteCompareMarkdown(&md, r)
	if !strings.Contains(md.String(), "#### Nsight Compute deep-dive\n\n"+want) {
		t.Errorf("markdown lacks\n%s\n%s", want, md.String())
	}
	var js bytes.Buffer
	if err := WriteCompareJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var back gate.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	// Every key of the deep-dive is in the JSON contract.
	var doc struct {
		DeepDive map[string]json.RawMessage `json:"deep_dive"`
	}
	json.Unmarshal(js.Bytes(), &doc)
	var ks []map[string]json.RawMessage
	json.Unmarshal(doc.DeepDive["kernels"], &ks)
	md0, _ := os.ReadFile(filepath.Join("..", "docs", "json.md"))
	var names []string
	for k := range doc.DeepDive {
		names = append(names, k)
	}
	for k := range ks[0] {
		names = append(names, k)
	}
	if len(names) != 2+8 {
		t.Errorf("deep_dive keys %q", names)
	}
	for _, k := range names {
		if !strings.Contains(string(md0), `"`+k+`"`) {
			t.Errorf("deep_dive key %q is not documented in docs/json.md", k)
		}
	}
	var md2 bytes.Buffer
	WriteComment(&md2, &back, CommentInfo{Marker: "<!-- m -->"})
	if !strings.Contains(md2.String(), want) {
		t.Errorf("comment from JSON lacks\n%s\n%s", want, md2.String())
	}
	var txt bytes.Buffer
	WriteCompareText(&txt, r)
	if !strings.Contains(txt.String(), "\nNsight Compute deep-dive:\n  julia__5_11155 +18%: grid 5418 → 39312 blocks,") {
		t.Errorf("text:\n%s", txt.String())
	}
}

// The other shapes of a kernel's line: the candidate alone (the baseline
// has no ncu data), a kernel new in the candidate, one that ncu did not
// profile, and a deep-dive that was skipped; every string from a report or
// a job is escaped, and words a report does not hold are never said.
func TestDeepDiveLines(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	f64 := func(v float64) *float64 { return &v }
	evil := "evil`k\n</details>@all|x"
	head := &ncu.Launch{Name: evil, GridSize: i64(84), BlockSize: i64(768), RegistersPerThread: i64(80), AchievedOccupancy: f64(50.06), TheoreticalOccupancy: f64(50),
		SMThroughput: f64(49.77), MemoryThroughput: f64(67.2), Bound: "**bold** <b>", OccupancyLimiters: []string{"registers", "<script>"}}
	r := &gate.Report{Verdict: stats.Regression, DeepDive: &ncu.DeepDiveReport{Note: "reports in /tmp/" + evil, Kernels: []ncu.KernelResult{
		{Kernel: "void julia_frb_5885(CuDeviceArray<Int4x8>)", ChangePct: f64(7.4), Head: head, Note: "base: no ncu data for the baseline"},
		{Kernel: evil, Head: head, Note: "base: the baseline does not run this kernel"},
		{Kernel: "k2", ChangePct: f64(3), Note: "candidate: ncu run failed: job k ncu head 1 timed out after 2s; its process group was killed"},
	}}}
	var md bytes.Buffer
	WriteCompareMarkdown(&md, r)
	s := md.String()
	for _, want := range []string{
		"- `julia_frb_5885` +7%: candidate only: grid 84 blocks, block 768 threads, registers/thread 80, achieved occupancy 50% of 50% theoretical, SM throughput 50%, memory throughput 67%: register-limited <sub>(base: no ncu data for the baseline)</sub>\n",
		"- ``evil`k\\n</details>@all|x`` new: candidate only: grid 84 blocks",
		"- `k2` +3%: not profiled <sub>(candidate: ncu run failed: job k ncu head 1 timed out after 2s; its process group was killed)</sub>\n",
		"<sub>reports in /tmp/evil\\`k\\\\n\\</details\\>@\u2060all\\|x</sub>\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("markdown lacks %q:\n%s", want, s)
		}
	}
	for _, bad := range []string{"**bold**", "<b>", "<script>", "\n</details>"} {
		if strings.Contains(s, bad) {
			t.Errorf("markdown holds %q:\n%s", bad, s)
		}
	}
	var txt bytes.Buffer
	WriteCompareText(&txt, r)
	if strings.Contains(txt.String(), "\n</details>") || strings.Contains(txt.String(), "<script>") {
		t.Errorf("text lets a name add a line or a word:\n%s", txt.String())
	}
	// Skipped: the note alone.
	md.Reset()
	WriteCompareMarkdown(&md, &gate.Report{Verdict: stats.Regression, DeepDive: &ncu.DeepDiveReport{Note: "deep-dive skipped: no NVIDIA GPU or driver here (ncu --query-metrics: ==ERROR== Driver could not be loaded)"}})
	if !strings.Contains(md.String(), "#### Nsight Compute deep-dive\n\n<sub>deep-dive skipped: no NVIDIA GPU or driver here (ncu --query-metrics: ==ERROR== Driver could not be loaded)</sub>\n") {
		t.Errorf("skipped:\n%s", md.String())
	}
}
