package gate

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/stats"
)

// judgedNodes is the job's ranks by node (nodeView) with each node's own
// work per step judged against the same node's in the baseline, as a
// metric is judged: the unit of noise is the run (each run's mean own
// work per step, the node's slowest rank's each step), the interval and
// verdict are stats.Compare's under step time's allowance. A node whose
// own work regressed is a straggler, named in step time's why when step
// time regressed. Being the slowest node is not enough: with the same
// code on every node one node can be the slowest run after run.
//
// qb and qc are the runs the time metrics use (selectIn.timeRuns): the
// quiet ones when some were disturbed (Report.HostBusy). The nodes are listed in the order of the
// ranks line (rankOrder), so that both name the nodes in one order.
func (rep *Report) judgedNodes(base, cand, qb, qc []Run, opt Options, gates map[string]bool) *Nodes {
	v := nodeView(base, cand)
	if v == nil {
		return nil
	}
	bo, co := nodeOwn(qb), nodeOwn(qc)
	st, _ := analysis.MetricByName("step_time")
	sp := spec(st, opt, gates, nil)
	sp.Name, sp.Gate = "own_time", false
	th := opt.Thresholds
	th.Paired = false // a node's runs of each side are not pairs of one another
	var worst *NodeStat
	for i := range v.PerNode {
		n := &v.PerNode[i]
		b, c := bo[n.Node], co[n.Node]
		if len(b) == 0 || len(c) == 0 {
			continue
		}
		res := stats.Compare(sp, b, c, th)
		n.VsBaseline = &res
		if res.Verdict == stats.Regression && (worst == nil || res.Delta > worst.VsBaseline.Delta) {
			worst = n
		}
	}
	// worst points into PerNode, which is sorted next: keep what it says.
	var node string
	var r *stats.Result
	if worst != nil {
		node, r = worst.Node, worst.VsBaseline
		for i := range rep.Ranks {
			rep.Ranks[i].Straggler = rep.Ranks[i].Node == node
		}
	}
	order := map[string]int{}
	for i, r := range rankOrder(rep.Ranks) {
		if _, ok := order[r.Node]; !ok && r.Node != "" {
			order[r.Node] = i
		}
	}
	slices.SortStableFunc(v.PerNode, func(a, b NodeStat) int {
		ia, oka := order[a.Node]
		ib, okb := order[b.Node]
		switch {
		case oka && okb:
			return cmp.Compare(ia, ib)
		case oka != okb:
			if oka {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Node, b.Node)
	})
	if worst == nil {
		return v
	}
	v.Straggler = node
	v.StragglerText = fmt.Sprintf("node %s is slower than its baseline by %.2f ms of its own work per step (%s interval %s to %s ms; %.2f → %.2f ms, each run's mean a sample)",
		node, r.Delta, confidenceWord(r.Confidence), msBound(r.DeltaLo), msBound(r.DeltaHi), r.Baseline.Value, r.Candidate.Value)
	for i := range rep.Metrics {
		if m := &rep.Metrics[i]; m.Name == "step_time" && m.Verdict == stats.Regression {
			if m.Why == "" {
				m.Why = v.StragglerText
			} else {
				m.Why += "; " + v.StragglerText
			}
		}
	}
	return v
}

// nodeOwn is each node's own work per step (ms), one slice per run: per
// step the largest own work of the node's ranks (step time less time in
// collectives, at least 0). A run whose ranks on a node cannot tell
// their own work is left out of that node.
func nodeOwn(runs []Run) map[string][][]float64 {
	out := map[string][][]float64{}
	for _, run := range runs {
		per := map[string][]float64{}
		bad := map[string]bool{}
		for _, r := range run {
			if r.Profile == nil || r.Profile.Node == "" {
				continue
			}
			node := r.Profile.Node
			waits, ok := CollectiveWait(r)
			if !ok || len(waits) != len(r.Steps) {
				bad[node] = true
				continue
			}
			xs := per[node]
			for j := range r.Steps {
				own := math.Max(0, float64(r.Steps[j].StepTime()-waits[j])/1e6)
				if j < len(xs) {
					xs[j] = math.Max(xs[j], own)
				} else {
					xs = append(xs, own)
				}
			}
			per[node] = xs
		}
		for node, xs := range per {
			if !bad[node] && len(xs) > 0 {
				out[node] = append(out[node], xs)
			}
		}
	}
	return out
}

// confidenceWord is "95%" for a confidence of 0.95.
func confidenceWord(c float64) string {
	if !(c > 0 && c < 1) {
		return "the"
	}
	return fmt.Sprintf("%.0f%%", 100*c)
}

// msBound prints an interval's bound in ms, "∞" where it is unbounded.
func msBound(x float64) string {
	switch {
	case math.IsInf(x, 1):
		return "+∞"
	case math.IsInf(x, -1):
		return "−∞"
	}
	return fmt.Sprintf("%+.2f", x)
}
