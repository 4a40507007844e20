package analysis

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"gpugate/internal/testdb"
	"gpugate/trace/nsys"
)

// The hand-made 2022.4-schema export trace/nsys/testdata/two-process-2022.4.sql;
// every number below was worked out on paper from its rows.
func TestHandMadeNsys(t *testing.T) {
	db := testdb.FromSQL(t, filepath.Join("..", "trace", "nsys", "testdata", "two-process-2022.4.sql"))
	ps, err := nsys.ReadFile(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Process != 100 || ps[1].Process != 200 {
		t.Fatalf("got %d profiles, want pids 100 and 200", len(ps))
	}
	if ps[0].Variant != "nsys 2022.4.2.1 (schema 3.0.0)" {
		t.Errorf("variant = %q", ps[0].Variant)
	}
	if d := ps[0].Devices; len(d) != 1 || d[0].Name != "NVIDIA A100-SXM4-80GB" || d[0].SMs != 108 {
		t.Errorf("devices = %+v", d)
	}
	r := Analyze(ps[0], Options{})
	if r.WholeProfile || len(r.Steps) != 2 {
		t.Fatalf("steps = %d (whole profile %v), want 2", len(r.Steps), r.WholeProfile)
	}
	want := []Step{{
		Name: "train_step", HostStart: 1000, HostEnd: 5000, Start: 1000, End: 5500,
		Kernels: 3, GPUBusy: 2800, CPUWait: 1700, DataWait: 0,
		SyncCalls: 1, SyncTime: 240,
		D2H:     Copies{Count: 1, Bytes: 4096, Time: 100, Pageable: 1},
		Compute: 1900, CommTime: 1000, ExposedComm: 800, ExposedCopy: 100,
		LaunchOverhead: 40, ShortKernels: 0, Launches: 3,
	}, {
		Name: "train_step", HostStart: 6000, HostEnd: 9000, Start: 6000, End: 9000,
		Kernels: 2, GPUBusy: 1100, CPUWait: 1900, DataWait: 800,
		SyncCalls: 1, SyncTime: 200,
		H2D:     Copies{Count: 1, Bytes: 1048576, Time: 100},
		Compute: 1000, ExposedCopy: 100,
		LaunchOverhead: 45, ShortKernels: 0.5, Launches: 2,
	}}
	if diff := cmp.Diff(want, r.Steps); diff != "" {
		t.Errorf("process 100 steps (-want +got):\n%s", diff)
	}

	// Process 200 reuses correlation ids 1 and 5; a join on correlationId
	// alone would give process 100's kernels these launches.
	r2 := Analyze(ps[1], Options{})
	want2 := []Step{{
		Name: "train_step", HostStart: 1000, HostEnd: 4000, Start: 1000, End: 4000,
		Kernels: 1, GPUBusy: 1000, CPUWait: 2000, Compute: 1000,
		LaunchOverhead: 100, Launches: 1,
	}}
	if diff := cmp.Diff(want2, r2.Steps); diff != "" {
		t.Errorf("process 200 steps (-want +got):\n%s", diff)
	}
}
