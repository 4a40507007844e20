package gate

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpugate/gpugate/internal/escape"
)

// MoreWorkFLOPs is the rise of FLOPs per step (a fraction) from which the
// candidate is taken to do more work: FLOP counts of a model and batch are
// deterministic, so 5% is far above noise.
const MoreWorkFLOPs = 0.05

// moreWork adds the "more-work" finding when the candidate does more work
// per step than the baseline: more FLOPs per step on some rank, or (without
// FLOPs) more calls of the counted operators per step on some rank
// (moreCalls), or more kernels per step. A step that does more takes longer for
// that reason, whatever else the trace shows (issue 28: three extra
// forward passes on rank 0, FLOPs +52%, were headlined as host-sync from
// the .item() calls they made). Its AccountsMs estimates the time the
// extra work costs: on the rank whose estimate is largest (the job's step
// is its slowest rank's), the baseline's busy time per step times the
// rise of its FLOPs, bounded by the change itself; from kernels, the time
// per step of the kernels whose count rose.
func (rep *Report) moreWork(b, c rankSide) {
	d := rep.Decomposition
	var f *Finding
	if ff := rep.moreFLOPs(b, c); ff != nil {
		f = ff
	} else if fc := rep.moreCalls(b, c); fc != nil {
		f = fc
	} else if fk := rep.moreKernels(); fk != nil {
		f = fk
	}
	if f == nil {
		return
	}
	if est := f.AccountsMs; est > max(d.Delta, 0) {
		// Time does not scale with FLOPs where overhead, waits or
		// profiling dominate the step: never more than the change.
		f.AccountsMs = max(d.Delta, 0)
		f.Evidence += fmt.Sprintf(", more than the change itself: counted as all of it (%.1f ms)", f.AccountsMs)
	}
	f.AccountsMs = max(f.AccountsMs, 0)
	if d.Candidate > 0 {
		f.Share = f.AccountsMs / d.Candidate
	}
	f.Severity = "medium"
	if d.Delta > 0 && f.AccountsMs >= 0.5*d.Delta {
		f.Severity = "high"
	}
	if d.Delta > 0 {
		f.Summary += fmt.Sprintf(": about %.1f ms of the %+.1f ms change in mean step", f.AccountsMs, d.Delta)
	}
	f.Suggestion = "check that the extra work is intended: an evaluation or logging forward pass inside the training step, a larger batch or model, a loop that runs more often; evaluate every N steps or outside the step (under torch.no_grad()), or accept the regression if the work is wanted"
	rep.Findings = append(rep.Findings, *f)
	rep.sortFindings()
}

func (rep *Report) moreFLOPs(b, c rankSide) *Finding {
	var jobB, jobC float64
	for _, k := range c.order {
		fb, okb := b.flops[k]
		fc, okc := c.flops[k]
		if !okb || !okc {
			return nil // FLOPs of some ranks only: no job total to compare
		}
		jobB, jobC = jobB+fb, jobC+fc
	}
	if len(c.order) == 0 || jobB <= 0 || jobC < (1+MoreWorkFLOPs)*jobB || math.IsInf(jobB, 0) || math.IsInf(jobC, 0) || math.IsInf(jobC/jobB, 0) {
		return nil
	}
	// The rank whose extra work costs most.
	best, bestMs := -1, math.Inf(-1)
	for _, k := range c.order {
		fb, fc := b.flops[k], c.flops[k]
		if fb <= 0 {
			continue
		}
		if ms := (fc/fb - 1) * b.busy[k]; ms > bestMs && !math.IsInf(ms, 0) && !math.IsNaN(ms) {
			best, bestMs = k, ms
		}
	}
	if best < 0 {
		return nil
	}
	where := ""
	if len(c.order) > 1 {
		where = fmt.Sprintf(" on rank %d", best)
		if !c.known[best] {
			where = fmt.Sprintf(" on rank #%d", best)
		}
		if n := c.node[best]; n != "" {
			where += " (node " + escape.CodeSpan(n) + ")"
		}
	}
	f := &Finding{New: true, AccountsMs: bestMs}
	f.ID = "more-work"
	f.Summary = fmt.Sprintf("the candidate does more work per step%s: FLOPs per step %+.0f%% there (%s → %s)", where, 100*(c.flops[best]/b.flops[best]-1), gflop(b.flops[best]), gflop(c.flops[best]))
	var ev []string
	if len(c.order) > 1 {
		ev = append(ev, fmt.Sprintf("the job's FLOPs per step %s → %s (%+.0f%%), ranks summed", gflop(jobB), gflop(jobC), 100*(jobC/jobB-1)))
		for _, k := range c.order {
			if k != best && b.flops[k] > 0 {
				ev = append(ev, fmt.Sprintf("rank %d %+.0f%%", k, 100*(c.flops[k]/b.flops[k]-1)))
			}
		}
	}
	// The operators that added it, on that rank.
	type opd struct {
		name         string
		calls, flops float64
		bc, cc       float64
	}
	var ops []opd
	for name, co := range c.ops[best] {
		bo := b.ops[best][name]
		if dfl := co.FLOPs - bo.FLOPs; dfl > 0 || co.Calls > bo.Calls {
			ops = append(ops, opd{name, co.Calls - bo.Calls, dfl, bo.Calls, co.Calls})
		}
	}
	slices.SortFunc(ops, func(x, y opd) int { return cmp.Or(cmp.Compare(y.flops, x.flops), strings.Compare(x.name, y.name)) })
	for i, o := range ops {
		if i == 3 {
			break
		}
		c := fmt.Sprintf("%s %s → %s calls per step (%+.3g GFLOP)", escape.CodeSpan(o.name), num(o.bc), num(o.cc), o.flops/1e9)
		f.Culprits = append(f.Culprits, c)
	}
	if len(f.Culprits) > 0 {
		ev = append([]string{"added by " + strings.Join(f.Culprits, ", ")}, ev...)
	} else if len(c.ops[best]) == 0 {
		ev = append(ev, "the operators are not known (a baseline stored before gpugate kept them)")
	}
	ev = append(ev, fmt.Sprintf("the baseline's %.1f ms of busy time per step on that rank, scaled by its FLOPs, is %.1f ms more", b.busy[best], bestMs))
	f.Evidence = strings.Join(ev, "; ")
	return f
}

// moreCalls is the finding from operator calls per step, for traces
// without FLOPs on both sides (torch 1.13's profiler records neither flops
// nor shapes, so moreFLOPs has nothing to compare): the matrix operators
// analysis counts (analysis.WorkResult.Ops: aten::linear, mm, addmm, conv,
// …) are still there, with their calls per step. A rank whose calls per
// step rose by MoreWorkFLOPs or more against the baseline does more work
// (calls of a model and batch are deterministic, like its FLOPs); of
// several, the one whose extra work costs most. The estimate is the
// baseline's busy time per step on that rank (host time less data wait
// without a GPU) times the rise of its calls, bounded by the change in
// moreWork. Issue 36: eight extra forward passes on rank 0 under torch
// 1.13, each ending in .item(), were headlined as a host sync that
// "accounts for 0.01 ms" of a +167 ms change.
func (rep *Report) moreCalls(b, c rankSide) *Finding {
	total := func(m map[string]float64) float64 {
		var t float64
		for _, v := range m {
			t += v
		}
		return t
	}
	best, bestMs := -1, math.Inf(-1)
	for _, k := range c.order {
		bc, cc := b.calls[k], c.calls[k]
		if bc == nil || cc == nil {
			continue
		}
		tb, tc := total(bc), total(cc)
		if tb <= 0 || tc < (1+MoreWorkFLOPs)*tb {
			continue
		}
		if ms := (tc/tb - 1) * b.busy[k]; ms > bestMs && !math.IsInf(ms, 0) && !math.IsNaN(ms) {
			best, bestMs = k, ms
		}
	}
	if best < 0 {
		return nil
	}
	rank := func(k int) string {
		if !c.known[k] {
			return fmt.Sprintf("rank #%d", k)
		}
		return fmt.Sprintf("rank %d", k)
	}
	where := ""
	if len(c.order) > 1 {
		where = " on " + rank(best)
		if n := c.node[best]; n != "" {
			where += " (node " + escape.CodeSpan(n) + ")"
		}
	}
	bc, cc := b.calls[best], c.calls[best]
	tb, tc := total(bc), total(cc)
	// The operators whose calls rose, most added calls first.
	type opd struct {
		name   string
		bc, cc float64
	}
	var ops []opd
	for name, v := range cc {
		if v > bc[name] {
			ops = append(ops, opd{name, bc[name], v})
		}
	}
	slices.SortFunc(ops, func(x, y opd) int { return cmp.Or(cmp.Compare(y.cc-y.bc, x.cc-x.bc), strings.Compare(x.name, y.name)) })
	f := &Finding{New: true, AccountsMs: bestMs}
	f.ID = "more-work"
	for i, o := range ops {
		if i == 3 {
			break
		}
		f.Culprits = append(f.Culprits, fmt.Sprintf("%s %s → %s calls per step", escape.CodeSpan(o.name), num(o.bc), num(o.cc)))
	}
	f.Summary = fmt.Sprintf("the candidate does more work per step%s: its matrix operators' calls per step %+.0f%% (%s → %s; the trace records no FLOPs)", where, 100*(tc/tb-1), num(tb), num(tc))
	var ev []string
	if len(f.Culprits) > 0 {
		ev = append(ev, "added by "+strings.Join(f.Culprits, ", "))
	}
	// Against the other ranks of the candidate, which run the same model.
	if len(ops) > 0 {
		top := ops[0].name
		for _, k := range c.order {
			if k == best || c.calls[k] == nil {
				continue
			}
			ev = append(ev, fmt.Sprintf("%s runs %s %s calls per step (baseline %s)", rank(k), escape.CodeSpan(top), num(c.calls[k][top]), num(b.calls[k][top])))
		}
	}
	if sb, okb := b.step[best]; okb {
		ev = append(ev, fmt.Sprintf("that rank's step %.1f → %.1f ms", sb, c.step[best]))
	}
	ev = append(ev, fmt.Sprintf("the baseline's %.1f ms of busy time per step on that rank, scaled by its operator calls, is %.1f ms more", b.busy[best], bestMs))
	f.Evidence = strings.Join(ev, "; ")
	return f
}

// moreKernels is the finding from kernels per step, for profiles without
// FLOPs: the kernels metric rose beyond its allowance.
func (rep *Report) moreKernels() *Finding {
	m := rep.metric("kernels")
	if m == nil || !m.Significant || m.Delta <= 0 || m.DeltaPct < 100*MoreWorkFLOPs {
		return nil
	}
	var ms float64
	var names []string
	for _, k := range append(slices.Clone(rep.Kernels.Added), rep.Kernels.Changed...) {
		if k.CandidateCount > k.BaselineCount && k.DeltaMs > 0 {
			ms += k.DeltaMs
			if len(names) < 3 {
				names = append(names, fmt.Sprintf("%s %s → %s per step (%+.3f ms)", escape.CodeSpan(k.Name), num(k.BaselineCount), num(k.CandidateCount), k.DeltaMs))
			}
		}
	}
	f := &Finding{New: true, AccountsMs: ms}
	f.ID = "more-work"
	f.Summary = fmt.Sprintf("the candidate runs more kernels per step: %s → %s (%+.0f%%)", num(m.Baseline.Value), num(m.Candidate.Value), m.DeltaPct)
	f.Culprits = names
	f.Evidence = fmt.Sprintf("the kernels whose count rose take %.2f ms more GPU time per step", ms)
	if len(names) > 0 {
		f.Evidence += ": " + strings.Join(names, ", ")
	}
	return f
}
