package report

import (
	"fmt"
	"io"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/escape"
)

// nodesLine names the slowest node and rank of a Slurm job, or "".
func nodesLine(n *gate.Nodes) string {
	if n == nil || n.SlowestRank == nil {
		return ""
	}
	return fmt.Sprintf("slowest node %s (rank %d): %s", n.SlowestNode, *n.SlowestRank, n.How)
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
	fmt.Fprintf(w, "\nnodes (median step time, each step the node's slowest rank):\n")
	for _, s := range n.PerNode {
		fmt.Fprintf(w, "  %-16s ranks %-10s baseline %10s  candidate %10s  own work %10s\n", escape.Terminal(s.Node), fmt.Sprint(s.Ranks),
			msOrDash(s.BaselineStepMs), fmt.Sprintf("%.2f ms", s.StepMs), msOrDash(s.OwnMs))
	}
	fmt.Fprintf(w, "%s\n", escape.Terminal(nodesLine(n)))
}

// writeNodesMarkdown writes a Slurm job's per-node step times as a table.
func writeNodesMarkdown(w io.Writer, n *gate.Nodes) {
	if n == nil {
		return
	}
	fmt.Fprintf(w, "\n**Nodes** — %s\n\n", text(nodesLine(n)))
	fmt.Fprintf(w, "| node | ranks | baseline step | candidate step | own work |\n|---|---|---:|---:|---:|\n")
	for _, s := range n.PerNode {
		fmt.Fprintf(w, "| %s | %s | %s | %.2f ms | %s |\n", cell(s.Node), cell(fmt.Sprint(s.Ranks)), msOrDash(s.BaselineStepMs), s.StepMs, msOrDash(s.OwnMs))
	}
}
