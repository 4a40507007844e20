package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/escape"
)

// nodesLine names the straggler of a Slurm job, the node slower than its
// own baseline, when there is one, and the slowest node and rank; "".
// for neither. Unescaped: node names come from the job's environment.
func nodesLine(n *gate.Nodes) string {
	if n == nil || n.SlowestRank == nil {
		return ""
	}
	s := fmt.Sprintf("slowest node %s (rank %d): %s", n.SlowestNode, *n.SlowestRank, n.How)
	if n.StragglerText != "" {
		return "straggler: " + n.StragglerText + "; " + s
	}
	if judged(n) {
		s += "; no node's own work regressed against its baseline"
	}
	return s
}

// judged reports whether any node's own work was judged against its
// baseline.
func judged(n *gate.Nodes) bool {
	for _, s := range n.PerNode {
		if s.VsBaseline != nil {
			return true
		}
	}
	return false
}

// vsBaseline is a node's own work against its baseline: "+50.12 ms
// (95% interval +45.00 to +55.30 ms), regression"; "—" when not judged.
func vsBaseline(s gate.NodeStat) string {
	r := s.VsBaseline
	if r == nil {
		return "—"
	}
	lo, hi := fmt.Sprintf("%+.2f", r.DeltaLo), fmt.Sprintf("%+.2f", r.DeltaHi)
	if math.IsInf(r.DeltaLo, 0) || math.IsInf(r.DeltaHi, 0) {
		lo, hi = "−∞", "+∞"
	}
	return fmt.Sprintf("%+.2f ms (interval %s to %s ms), %s", r.Delta, lo, hi, r.Verdict)
}

func msOrDash(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.2f ms", *v)
}

// writeNodesText writes a Slurm job's per-node step times.
func writeNodesText(w io.Writer, n *gate.Nodes) {
	if n == nil {
		return
	}
	fmt.Fprintf(w, "\nnodes (median step time, each step the node's slowest rank; own work against the node's baseline, each run's mean a sample):\n")
	for _, s := range n.PerNode {
		fmt.Fprintf(w, "  %-16s ranks %-10s baseline %10s  candidate %10s  own work %10s  vs baseline %s\n", escape.Terminal(s.Node), fmt.Sprint(s.Ranks),
			msOrDash(s.BaselineStepMs), fmt.Sprintf("%.2f ms", s.StepMs), msOrDash(s.OwnMs), vsBaseline(s))
	}
	fmt.Fprintf(w, "%s\n", escape.Terminal(nodesLine(n)))
}

// writeNodesMarkdown writes a Slurm job's per-node step times as a table.
func writeNodesMarkdown(w io.Writer, n *gate.Nodes) {
	if n == nil {
		return
	}
	fmt.Fprintf(w, "\n**Nodes** — %s\n\n", text(nodesLine(n)))
	fmt.Fprintf(w, "| node | ranks | baseline step | candidate step | own work | own work vs the node's baseline |\n|---|---|---:|---:|---:|---|\n")
	for _, s := range n.PerNode {
		fmt.Fprintf(w, "| %s | %s | %s | %.2f ms | %s | %s |\n", cell(s.Node), cell(fmt.Sprint(s.Ranks)), msOrDash(s.BaselineStepMs), s.StepMs, msOrDash(s.OwnMs), cell(vsBaseline(s)))
	}
}

// writeRankNodes writes each Slurm node's median step time (its slowest
// rank's) and ranks, for an analysis whose ranks know their nodes.
func writeRankNodes(w io.Writer, rk *Ranks) {
	type node struct {
		ranks []string
		ms    float64
	}
	by := map[string]*node{}
	var order []string
	for _, s := range rk.PerRank {
		if s.Node == "" {
			continue
		}
		n := by[s.Node]
		if n == nil {
			n = &node{}
			by[s.Node] = n
			order = append(order, s.Node)
		}
		n.ranks = append(n.ranks, strings.TrimPrefix(rankLabel(RankStat{Index: s.Index, Rank: s.Rank, Path: s.Path}), "rank "))
		n.ms = max(n.ms, s.StepTimeMs)
	}
	if len(order) == 0 {
		return
	}
	sort.Strings(order)
	var parts []string
	for _, o := range order {
		parts = append(parts, fmt.Sprintf("%s %.2f ms (rank %s)", escape.Terminal(o), by[o].ms, strings.Join(by[o].ranks, ", ")))
	}
	fmt.Fprintf(w, "nodes (median step time, the node's slowest rank): %s\n", strings.Join(parts, "; "))
}
