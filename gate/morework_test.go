package gate

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/stats"
	"github.com/gpugate/gpugate/trace"
)

// ddpRank is one rank of a CPU data-parallel run: n steps of stepMs
// (jittered by jitter, deterministic), each doing linear FLOPs in
// linearCalls calls of aten::linear and making syncs host syncs.
func ddpRank(rank, n int, stepMs, jitter, flops, linearCalls float64, syncs int) *analysis.Result {
	p := trace.New(fmt.Sprintf("trace-%d.json", rank), trace.FormatKineto)
	p.Rank, p.WorldSize = rank, 2
	steps := make([]analysis.Step, n)
	w := &analysis.WorkResult{FLOPsSource: "shapes", Steps: make([]analysis.StepWork, n),
		Ops: []analysis.OpWork{{Name: "aten::linear", Calls: linearCalls, FLOPs: flops}}}
	t := int64(0)
	for i := range steps {
		d := int64((stepMs + jitter*float64(i%3-1)) * 1e6)
		steps[i] = analysis.Step{Name: fmt.Sprintf("ProfilerStep#%d", i), HostStart: t, HostEnd: t + d, Start: t, End: t + d, SyncCalls: syncs, SyncTime: int64(syncs) * 20_000}
		f := flops
		w.Steps[i] = analysis.StepWork{FLOPs: &f}
		t += d
	}
	r := analysis.FromSteps(p, false, steps, nil)
	r.Work = w
	return r
}

// TestMoreWorkIsTheCause: rank 0 of two runs three extra forward passes,
// each ending in .item(): its FLOPs per step double, the job's step
// doubles (rank 1 waits for it at the all-reduce), and sync calls rise
// from 0 to 3. Step time's cause is the extra work on rank 0, not
// host-sync (issue 28); host-sync still explains sync_calls; the ranks say
// which one changed.
func TestMoreWorkIsTheCause(t *testing.T) {
	var base []Run
	for i := range 5 {
		j := 0.5 + 0.2*float64(i)
		base = append(base, Run{ddpRank(0, 8, 20, j, 1e9, 4, 0), ddpRank(1, 8, 20, j, 1e9, 4, 0)})
	}
	cand := []Run{{ddpRank(0, 8, 40, 0.5, 2e9, 10, 3), ddpRank(1, 8, 40, 0.5, 1e9, 4, 0)}}
	rep := Compare(base, cand, Options{})
	if st := rep.metric("step_time"); st == nil || st.Verdict != stats.Regression {
		t.Fatalf("step_time %+v, want a regression", st)
	}
	if rep.Cause != "more-work" {
		t.Errorf("cause %q, want more-work; findings %+v", rep.Cause, rep.Findings)
	}
	f := rep.Findings[0]
	// By hand: a baseline run's mean step is 20 − jitter/8 (the jitters
	// −1, 0, 1, −1, 0, 1, −1, 0 sum to −1), 19.8875 ms over the five runs;
	// the candidate's 39.9375 ms, a change of 20.05 ms. Rank 0's FLOPs
	// +100% at 19.8875 ms of busy time per step: 19.8875 ms of it.
	if f.ID != "more-work" || !strings.Contains(f.Summary, "on rank 0") || math.Abs(f.AccountsMs-19.8875) > 1e-9 ||
		!strings.Contains(f.Evidence, "`aten::linear` 4 → 10 calls per step (+1 GFLOP)") {
		t.Errorf("leading finding %+v: want more-work on rank 0, about 20 ms, naming aten::linear 4 → 10", f)
	}
	if sc := rep.metric("sync_calls"); sc.Verdict != stats.Regression || !strings.HasPrefix(sc.Why, "`host-sync`") {
		t.Errorf("sync_calls %s, why %q: want a regression explained by host-sync", sc.Verdict, sc.Why)
	}
	if len(rep.Ranks) != 2 || rep.Ranks[0].Rank != 0 || rep.Ranks[0].FLOPsDeltaPct == nil || math.Abs(*rep.Ranks[0].FLOPsDeltaPct-100) > 1e-9 ||
		math.Abs(rep.Ranks[1].DeltaMs-20.05) > 1e-9 || *rep.Ranks[1].FLOPsDeltaPct != 0 {
		t.Errorf("ranks %+v", rep.Ranks)
	}
	if line := RanksLine(rep.Ranks); !strings.HasPrefix(line, "rank 0 slowed by 20.1 ms (FLOPs per step +100%, sync calls per step 0 → 3), rank 1 by 20.1 ms (FLOPs per step +0%)") {
		t.Errorf("ranks line %q", line)
	}
	// Where the job says which machine a rank ran on (Slurm), the line
	// and the finding name it.
	cand[0][0].Profile.Node, cand[0][1].Profile.Node = "gpu-a", "gpu-b"
	rep = Compare(base, cand, Options{})
	if line := RanksLine(rep.Ranks); !strings.HasPrefix(line, "rank 0 on gpu-a slowed by") || !strings.Contains(line, "rank 1 on gpu-b by") || rep.Ranks[0].Node != "gpu-a" {
		t.Errorf("ranks line %q, ranks %+v: want the nodes", line, rep.Ranks)
	}
	if !strings.Contains(rep.Findings[0].Summary, "on rank 0 (node `gpu-a`)") {
		t.Errorf("more-work summary %q: want the node", rep.Findings[0].Summary)
	}

	// The same work on both sides: no more-work finding, whatever the
	// step time did.
	same := []Run{{ddpRank(0, 8, 40, 0.5, 1e9, 4, 0), ddpRank(1, 8, 40, 0.5, 1e9, 4, 0)}}
	for _, f := range Compare(base, same, Options{}).Findings {
		if f.ID == "more-work" {
			t.Errorf("more-work without more FLOPs: %+v", f)
		}
	}
}

// TestMoreWorkHeadsSyncRegression: on a noisy machine step time stays
// inconclusive while sync_calls (0 → 3, exact) regresses; the headline
// still names the extra work, which accounts for the slower step, and
// sync_calls keeps host-sync as its why.
func TestMoreWorkHeadsSyncRegression(t *testing.T) {
	var base []Run
	for i, ms := range []float64{20, 45, 28, 60, 35} {
		base = append(base, Run{ddpRank(0, 8, ms, 0.1*float64(i), 1e9, 4, 0), ddpRank(1, 8, ms, 0.1*float64(i), 1e9, 4, 0)})
	}
	cand := []Run{{ddpRank(0, 8, 80, 0.5, 2e9, 10, 3), ddpRank(1, 8, 80, 0.5, 1e9, 4, 0)}}
	rep := Compare(base, cand, Options{})
	if st := rep.metric("step_time"); st.Verdict != stats.Inconclusive {
		t.Fatalf("step_time %s, want inconclusive (the baseline's spread)", st.Verdict)
	}
	if sc := rep.metric("sync_calls"); sc.Verdict != stats.Regression || !strings.HasPrefix(sc.Why, "`host-sync`") {
		t.Errorf("sync_calls %s, why %q", sc.Verdict, sc.Why)
	}
	if rep.Cause != "more-work" {
		t.Errorf("cause %q, want more-work: findings %+v", rep.Cause, rep.Findings)
	}
	// Without more work, the sync is the cause.
	cand = []Run{{ddpRank(0, 8, 80, 0.5, 1e9, 4, 3), ddpRank(1, 8, 80, 0.5, 1e9, 4, 0)}}
	if rep = Compare(base, cand, Options{}); rep.Cause != "host-sync" {
		t.Errorf("same work, new syncs: cause %q, want host-sync", rep.Cause)
	}
}

// noFLOPs strips a rank's FLOP counts, as torch 1.13 writes them: its
// operators and their calls per step are there, their FLOPs are not.
func noFLOPs(r *analysis.Result) *analysis.Result {
	w := r.Work
	w.FLOPsSource, w.FLOPOps, w.Uncounted = "", int(w.Ops[0].Calls)*len(w.Steps), int(w.Ops[0].Calls)*len(w.Steps)
	for i := range w.Steps {
		w.Steps[i].FLOPs = nil
	}
	for i := range w.Ops {
		w.Ops[i].FLOPs = 0
	}
	return r
}

// TestMoreWorkWithoutFLOPs is issue 36's case: under torch 1.13, which
// records no FLOPs, rank 0 runs extra forward passes each ending in
// .item(). The cause is still more-work on rank 0, named by the operator
// whose calls per step rose (aten::linear 4 → 8), against the baseline and
// against rank 1 (4); not host-sync. Before, with no FLOPs and no kernels,
// nothing found the extra work.
func TestMoreWorkWithoutFLOPs(t *testing.T) {
	var base []Run
	for i := range 5 {
		j := 0.5 + 0.2*float64(i)
		base = append(base, Run{noFLOPs(ddpRank(0, 8, 20, j, 1e9, 4, 0)), noFLOPs(ddpRank(1, 8, 20, j, 1e9, 4, 0))})
	}
	cand := []Run{{noFLOPs(ddpRank(0, 8, 40, 0.5, 2e9, 8, 8)), noFLOPs(ddpRank(1, 8, 40, 0.5, 1e9, 4, 0))}}
	rep := Compare(base, cand, Options{})
	if st := rep.metric("step_time"); st == nil || st.Verdict != stats.Regression {
		t.Fatalf("step_time %+v, want a regression", st)
	}
	if rep.Cause != "more-work" || len(rep.Findings) == 0 {
		t.Fatalf("cause %q, want more-work; findings %+v", rep.Cause, rep.Findings)
	}
	f := rep.Findings[0]
	// By hand (TestMoreWorkIsTheCause): rank 0's baseline busy time is
	// 19.8875 ms per step (no GPU: the host step, no data wait), its calls
	// +100% (4 → 8): 19.8875 ms of the 20.05 ms change.
	if f.ID != "more-work" || !strings.Contains(f.Summary, "on rank 0") || !strings.Contains(f.Summary, "+100% (4 → 8; the trace records no FLOPs)") ||
		math.Abs(f.AccountsMs-19.8875) > 1e-9 || len(f.Culprits) != 1 || f.Culprits[0] != "`aten::linear` 4 → 8 calls per step" ||
		!strings.Contains(f.Evidence, "rank 1 runs `aten::linear` 4 calls per step (baseline 4)") {
		t.Errorf("leading finding %+v: want more-work on rank 0, 19.8875 ms, naming aten::linear 4 → 8 and rank 1's 4", f)
	}
	if sc := rep.metric("sync_calls"); sc.Verdict != stats.Regression || !strings.HasPrefix(sc.Why, "`host-sync`") {
		t.Errorf("sync_calls %s, why %q: want a regression explained by host-sync", sc.Verdict, sc.Why)
	}
	// The same calls: the syncs are the cause.
	cand = []Run{{noFLOPs(ddpRank(0, 8, 40, 0.5, 1e9, 4, 8)), noFLOPs(ddpRank(1, 8, 40, 0.5, 1e9, 4, 0))}}
	if rep = Compare(base, cand, Options{}); rep.Cause == "more-work" {
		t.Errorf("same calls: cause more-work, findings %+v", rep.Findings)
	}
	// A baseline without operators (stored before gpugate kept them): no
	// claim either way.
	var bare []Run
	for _, run := range base {
		var r2 Run
		for _, r := range run {
			c := *r
			c.Work = nil
			r2 = append(r2, &c)
		}
		bare = append(bare, r2)
	}
	cand = []Run{{noFLOPs(ddpRank(0, 8, 40, 0.5, 2e9, 8, 8)), noFLOPs(ddpRank(1, 8, 40, 0.5, 1e9, 4, 0))}}
	if rep = Compare(bare, cand, Options{}); rep.Cause == "more-work" {
		t.Errorf("baseline without operators: cause more-work, findings %+v", rep.Findings)
	}
}
