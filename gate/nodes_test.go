package gate

import (
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/trace"
)

const ms = int64(1e6)

// rankRun is one rank's result: steps of the given lengths (ms) back to
// back from 0, and host ranges {name, start ms, end ms}.
func rankRun(node string, rank int, steps []int64, ranges ...struct {
	name       string
	start, end int64
}) *analysis.Result {
	p := trace.New("trace.json", trace.FormatKineto)
	p.Node, p.Rank = node, rank
	for i, r := range ranges {
		p.Ranges = append(p.Ranges, trace.Range{Start: r.start * ms, End: r.end * ms, Thread: int64(i % 2), Name: p.Names.InternString(r.name)})
	}
	res := &analysis.Result{Profile: p}
	t := int64(0)
	for _, s := range steps {
		res.Steps = append(res.Steps, analysis.Step{Start: t * ms, End: (t + s) * ms})
		t += s
	}
	return res
}

type rg = struct {
	name       string
	start, end int64
}

// TestNodeView checks the per-node view against numbers worked out by
// hand: rank 0 (n1) spends 7, 2 and 2 ms of its three 10 ms steps in
// collectives (overlapping ranges on two threads count once; a range
// past the step is clipped), so its own work is 3, 8, 8 ms, median 8;
// rank 1 (n2) spends 1, 0 and 1 ms (aten::mm is no collective), own
// work 9, 10, 9, median 9: rank 1 on n2 holds rank 0 up.
func TestNodeView(t *testing.T) {
	r0 := rankRun("n1", 0, []int64{10, 10, 10},
		rg{"c10d::allreduce_", 2, 8}, rg{"gloo:all_reduce", 5, 9}, rg{"aten::mm", 0, 2},
		rg{"gloo:all_reduce", 12, 14}, rg{"gloo:all_reduce", 28, 35})
	r1 := rankRun("n2", 1, []int64{10, 10, 10},
		rg{"aten::mm", 0, 9}, rg{"gloo:all_reduce", 9, 10}, rg{"nccl:all_reduce", 21, 22})
	// Each step's wait, exactly: the union across threads, clipped.
	for _, c := range []struct {
		r    *analysis.Result
		want []int64
	}{{r0, []int64{7, 2, 2}}, {r1, []int64{1, 0, 1}}} {
		w, ok := collectiveWait(c.r)
		if !ok || len(w) != 3 || w[0] != c.want[0]*ms || w[1] != c.want[1]*ms || w[2] != c.want[2]*ms {
			t.Errorf("rank %d: collective waits %v ns (ok %v), want %v ms", c.r.Profile.Rank, w, ok, c.want)
		}
	}
	base := rankRun("n1", 0, []int64{5, 5, 6})
	base.Profile.Ranges = nil
	v := nodeView([]Run{{base}}, []Run{{r0, r1}})
	if v == nil || len(v.PerNode) != 2 {
		t.Fatalf("nodeView = %+v", v)
	}
	n1, n2 := v.PerNode[0], v.PerNode[1]
	if n1.Node != "n1" || n1.StepMs != 10 || n1.OwnMs == nil || *n1.OwnMs != 8 || n1.BaselineStepMs == nil || *n1.BaselineStepMs != 5 {
		t.Errorf("n1 = %+v (own %v, baseline %v), want step 10, own 8, baseline 5", n1, deref(n1.OwnMs), deref(n1.BaselineStepMs))
	}
	if n2.Node != "n2" || n2.StepMs != 10 || n2.OwnMs == nil || *n2.OwnMs != 9 || n2.BaselineStepMs != nil {
		t.Errorf("n2 = %+v (own %v), want step 10, own 9, no baseline", n2, deref(n2.OwnMs))
	}
	if v.SlowestNode != "n2" || v.SlowestRank == nil || *v.SlowestRank != 1 {
		t.Errorf("slowest %s rank %v, want n2 rank 1", v.SlowestNode, v.SlowestRank)
	}
	if nodeView(nil, []Run{{rankRun("", 0, []int64{1, 1})}}) != nil {
		t.Error("a job outside Slurm has a node view")
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
