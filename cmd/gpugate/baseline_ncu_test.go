package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/internal/fixtures"
)

// baseline show lists the Nsight Compute deep-dive stored with the newest
// run that has one, a kernel per line, names escaped; without one it says
// how one is recorded.
func TestBaselineShowNCU(t *testing.T) {
	trace := fixtures.Path(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	db := filepath.Join(t.TempDir(), "b.db")
	for range 2 {
		if code, _, e := run(t, "baseline", "record", trace, "-workload", "w", "-db", db); code != 0 {
			t.Fatalf("baseline record: exit %d %s", code, e)
		}
	}
	code, out, e := run(t, "baseline", "show", "-db", db, "-workload", "w")
	if code != 0 || !strings.Contains(out, "no Nsight Compute deep-dive stored with these runs") {
		t.Fatalf("show without ncu data: exit %d\n%s%s", code, out, e)
	}
	ctx := context.Background()
	s, err := baseline.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	runs, _ := s.Runs(ctx, baseline.Filter{})
	if err := s.RecordNCU(ctx, runs[0].ID, []baseline.NCUKernel{
		{Rank: 1, Kernel: "void sgemm(float*)", Function: "sgemm", Writer: "2022.3.0.0", Launch: []byte(`{"grid_size": 84, "registers_per_thread": 80, "achieved_occupancy_pct": 50.06, "theoretical_occupancy_pct": 50, "occupancy_limiters": ["registers"]}`)},
		{Rank: 2, Kernel: "evil\x1b[31m\n::error::x", Function: "evil\x1b[31m\n::error::x", Launch: []byte(`{"bound": "memory"}`)},
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	code, out, e = run(t, "baseline", "show", "-db", db, "-workload", "w")
	for _, want := range []string{
		"Nsight Compute deep-dive stored with run 1 (",
		"1 of the 2 runs have one):\n",
		"  1 sgemm: grid 84 blocks, registers/thread 80, achieved occupancy 50% of 50% theoretical: register-limited (ncu 2022.3.0.0)\n",
		"  2 evil\\x1b[31m\\n::error::x: no launch configuration, occupancy or throughput in the report: memory-bound\n",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("show lacks %q: exit %d\n%s%s", want, code, out, e)
		}
	}
}
