package baseline_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/baseline"
)

// A run's deep-dive kernels are stored with it (migration 4), read back by
// run, newest run first, and go when their run is pruned; a hostile kernel
// name is data.
func TestNCUKernels(t *testing.T) {
	each(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		target := be.new(t)
		s, err := baseline.Open(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		d := doc(t)
		id1, err := s.Record(ctx, run(d, "c1"))
		if err != nil {
			t.Fatal(err)
		}
		id2, err := s.Record(ctx, run(d, "c2"))
		if err != nil {
			t.Fatal(err)
		}
		evil := "evil`k'); DROP TABLE runs;--\n</details>"
		if err := s.RecordNCU(ctx, id1, []baseline.NCUKernel{
			{Rank: 1, Kernel: "void flash_fwd_kernel<Traits>(Params)", Function: "flash_fwd_kernel", Writer: "2022.3.0.0", Launch: []byte(`{"id": 0, "registers_per_thread": 128}`)},
			{Rank: 2, Kernel: evil, Function: evil, Launch: []byte(`{"id":1}`)},
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordNCU(ctx, id2, []baseline.NCUKernel{{Rank: 1, Kernel: "k", Function: "k", Launch: []byte(`{"id":2}`)}}); err != nil {
			t.Fatal(err)
		}
		got, err := s.NCUKernels(ctx, []int64{id1, id2})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0].RunID != id2 || got[1].RunID != id1 || got[1].Rank != 1 || got[2].Kernel != evil ||
			string(got[1].Launch) != `{"id":0,"registers_per_thread":128}` || got[1].Writer != "2022.3.0.0" || got[1].Function != "flash_fwd_kernel" {
			t.Errorf("NCUKernels = %+v", got)
		}
		// The same rank twice for one run is refused, and nothing of that
		// call is kept.
		if err := s.RecordNCU(ctx, id2, []baseline.NCUKernel{{Rank: 2, Kernel: "x", Launch: []byte(`{}`)}, {Rank: 1, Kernel: "y", Launch: []byte(`{}`)}}); err == nil {
			t.Error("duplicate rank: no error")
		}
		if err := s.RecordNCU(ctx, id2, []baseline.NCUKernel{{Rank: 3, Kernel: "x", Launch: []byte(`{not json`)}}); err == nil || !strings.Contains(err.Error(), "not JSON") {
			t.Errorf("bad launch: %v", err)
		}
		if n := countIn(t, be, target, "ncu_kernels"); n != 3 {
			t.Errorf("%d rows after refused calls, want 3", n)
		}
		if got, err := s.NCUKernels(ctx, nil); err != nil || len(got) != 0 {
			t.Errorf("no runs: %v, %v", got, err)
		}
		// Pruning the older run takes its kernels with it.
		if n, err := s.Prune(ctx, 1); err != nil || n != 1 {
			t.Fatalf("prune: %d, %v", n, err)
		}
		if n := countIn(t, be, target, "ncu_kernels"); n != 1 {
			t.Errorf("%d rows after pruning run %d, want 1", n, id1)
		}
	})
}

// A read-only store records no deep-dive.
func TestNCUKernelsReadOnly(t *testing.T) {
	ctx := context.Background()
	target := backends[0].new(t)
	s, err := baseline.Open(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := s.Record(ctx, run(doc(t), "c1"))
	s.Close()
	ro, err := baseline.OpenReadOnly(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.RecordNCU(ctx, id, []baseline.NCUKernel{{Rank: 1, Kernel: "k", Launch: []byte(`{}`)}}); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("read-only RecordNCU: %v", err)
	}
}

// An export carries each run's deep-dive kernels and an import restores
// them with the run, under the id the run gets in the new store; an
// export whose kernels are bad imports nothing.
func TestNCUKernelsExportImport(t *testing.T) {
	each(t, func(t *testing.T, be backend) {
		ctx := context.Background()
		src, err := baseline.Open(ctx, be.new(t))
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		d := doc(t)
		id1, _ := src.Record(ctx, run(d, "c1"))
		id2, _ := src.Record(ctx, run(d, "c2"))
		evil := "evil`k'); DROP TABLE runs;--\n</details>"
		if err := src.RecordNCU(ctx, id2, []baseline.NCUKernel{
			{Rank: 1, Kernel: "void flash_fwd_kernel<Traits>(Params)", Function: "flash_fwd_kernel", Writer: "2022.3.0.0", Launch: []byte(`{"id":0,"registers_per_thread":128}`)},
			{Rank: 2, Kernel: evil, Function: evil, Launch: []byte(`{"id":1}`)},
		}); err != nil {
			t.Fatal(err)
		}
		x, err := src.Export(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := src.NCUKernels(ctx, []int64{id2})

		dstTarget := be.new(t)
		dst, err := baseline.Open(ctx, dstTarget)
		if err != nil {
			t.Fatal(err)
		}
		defer dst.Close()
		// Ids taken in the new store, so the imported runs get others.
		for i := 0; i < 3; i++ {
			if _, err := dst.Record(ctx, run(d, "other")); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := dst.Import(ctx, x); err != nil || n != 2 {
			t.Fatalf("import: %d, %v", n, err)
		}
		runs, err := dst.Runs(ctx, baseline.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		var newID, newID1 int64
		for _, r := range runs {
			switch r.Commit {
			case "c2":
				newID = r.ID
			case "c1":
				newID1 = r.ID
			}
		}
		if newID == 0 || newID == id2 && newID1 == id1 {
			t.Fatalf("imported runs kept ids %d, %d: the test needs them moved", newID1, newID)
		}
		got, err := dst.NCUKernels(ctx, []int64{newID, newID1})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("imported kernels %+v, want %+v", got, want)
		}
		for i := range got {
			w := want[i]
			w.RunID = newID
			if got[i].RunID != w.RunID || got[i].Rank != w.Rank || got[i].Kernel != w.Kernel || got[i].Function != w.Function ||
				got[i].Writer != w.Writer || string(got[i].Launch) != string(w.Launch) {
				t.Errorf("kernel %d: %+v, want %+v", i, got[i], w)
			}
		}
		// Importing the same export again adds nothing, kernels included.
		if n, err := dst.Import(ctx, x); err != nil || n != 0 {
			t.Errorf("second import: %d, %v", n, err)
		}
		if n := countIn(t, be, dstTarget, "ncu_kernels"); n != 2 {
			t.Errorf("%d kernel rows after a second import, want 2", n)
		}
		// Bad kernels refuse the whole import.
		for name, k := range map[string]baseline.ExportedNCUKernel{
			"launch not an object": {Rank: 1, Kernel: "k", Launch: []byte(`[1]`)},
			"rank 0":               {Rank: 0, Kernel: "k", Launch: []byte(`{}`)},
			"name not UTF-8":       {Rank: 1, Kernel: "k\xff", Launch: []byte(`{}`)},
		} {
			bad := *x
			bad.Runs = append([]baseline.ExportedRun(nil), x.Runs...)
			r := bad.Runs[0]
			r.Commit = "fresh-" + strings.ReplaceAll(name, " ", "-")
			r.NCU = []baseline.ExportedNCUKernel{k}
			bad.Runs = []baseline.ExportedRun{r}
			if n, err := dst.Import(ctx, &bad); err == nil || n != 0 || !strings.Contains(err.Error(), "nothing imported") {
				t.Errorf("%s: import %d, %v; want an error and nothing imported", name, n, err)
			}
		}
		if n := countIn(t, be, dstTarget, "ncu_kernels"); n != 2 {
			t.Errorf("%d kernel rows after refused imports, want 2", n)
		}
	})
}
