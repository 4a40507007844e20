package gate

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"sort"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/stats"
	"github.com/gpugate/gpugate/trace"
)

// Nodes is a Slurm job's ranks by node (docs/slurm.md): each node's step
// time, and which node and rank hold the others up.
type Nodes struct {
	PerNode []NodeStat `json:"per_node"`
	// SlowestNode and SlowestRank are the candidate's rank that does the
	// most work of its own per step (its step time less its time in
	// collectives), and its node: in a job whose ranks step in lockstep
	// every rank's step time is the slowest rank's, the others spend the
	// difference waiting in their collectives.
	SlowestNode string `json:"slowest_node"`
	SlowestRank *int   `json:"slowest_rank"`
	// How says how the slowest rank was told from the others.
	How string `json:"how"`
	// Straggler is the node whose own work per step regressed against
	// its baseline the most (VsBaseline's verdict regression), and
	// StragglerText says so with the delta and its interval; both
	// omitted when no node is slower than its baseline. A node that is
	// merely the slowest is not a straggler: the same code can leave one
	// node slower than the other run after run.
	Straggler     string `json:"straggler,omitempty"`
	StragglerText string `json:"straggler_text,omitempty"`
}

// NodeStat is one node's numbers: medians over the steps of each side's
// runs, each step its slowest rank's on the node.
type NodeStat struct {
	Node  string `json:"node"`
	Ranks []int  `json:"ranks"`
	// BaselineStepMs is null when the baseline ran without this node.
	BaselineStepMs *float64 `json:"baseline_step_time_ms"`
	StepMs         float64  `json:"step_time_ms"`
	// OwnMs is the step time less the time in collectives (the rank's
	// own work), the node's largest rank's; null when the trace has no
	// collectives to tell (a stored run keeps no ranges).
	OwnMs *float64 `json:"own_time_ms"`
	// VsBaseline is the node's own work per step (its slowest rank's,
	// each run's mean a sample) judged against the same node's in the
	// baseline, as a metric is (stragglers.go): its delta in ms with
	// its interval and verdict. Omitted when a side cannot tell its own
	// work (no collectives in its traces, runs stored before gpugate kept
	// it) or the baseline ran without the node.
	VsBaseline *stats.Result `json:"vs_baseline,omitempty"`
}

// collectiveRE names the host ranges of collective communication on CPU
// profiles: c10d's ops (c10d::allreduce_), gloo's and NCCL's work
// (gloo:all_reduce, nccl:all_reduce), and the collectives' own names.
var collectiveRE = regexp.MustCompile(`(?i)^(c10d::|gloo:|nccl:|mpi:|ucc:)|all_?reduce|all_?gather|reduce_?scatter|^barrier`)

// nodeView is the job's ranks by node; nil when no profile of the
// candidate knows its node (a job that did not run under Slurm).
func nodeView(base, cand []Run) *Nodes {
	type rankStat struct {
		node      string
		rank      int
		step, own []float64 // ms per step over runs
		hasOwn    bool
	}
	collect := func(runs []Run) map[string][]*rankStat {
		by := map[string][]*rankStat{}
		for _, run := range runs {
			for i, r := range run {
				if r.Profile == nil || r.Profile.Node == "" {
					continue
				}
				rank := r.Profile.Rank
				if rank < 0 {
					rank = i
				}
				var st *rankStat
				for _, x := range by[r.Profile.Node] {
					if x.rank == rank {
						st = x
					}
				}
				if st == nil {
					st = &rankStat{node: r.Profile.Node, rank: rank}
					by[st.node] = append(by[st.node], st)
				}
				waits, ok := collectiveWait(r)
				st.hasOwn = st.hasOwn || ok
				for j := range r.Steps {
					t := float64(r.Steps[j].StepTime()) / 1e6
					st.step = append(st.step, t)
					if ok {
						st.own = append(st.own, t-float64(waits[j])/1e6)
					}
				}
			}
		}
		return by
	}
	cb := collect(cand)
	if len(cb) == 0 {
		return nil
	}
	bb := collect(base)
	v := &Nodes{PerNode: []NodeStat{}}
	var slowest *rankStat
	var slowestOwn float64
	own := true
	for _, rs := range cb {
		for _, r := range rs {
			own = own && r.hasOwn
		}
	}
	for node, rs := range cb {
		ns := NodeStat{Node: node}
		var steps, owns []float64
		for _, r := range rs {
			ns.Ranks = append(ns.Ranks, r.rank)
			m := analysis.Summarize(r.step).Median
			steps = append(steps, m)
			key := m
			if own {
				key = analysis.Summarize(r.own).Median
				owns = append(owns, key)
			}
			if slowest == nil || key > slowestOwn || key == slowestOwn && r.rank < slowest.rank {
				slowest, slowestOwn = r, key
			}
		}
		sort.Ints(ns.Ranks)
		ns.StepMs = slices.Max(steps)
		if own {
			o := slices.Max(owns)
			ns.OwnMs = &o
		}
		if brs := bb[node]; len(brs) > 0 {
			var bs []float64
			for _, r := range brs {
				bs = append(bs, analysis.Summarize(r.step).Median)
			}
			b := slices.Max(bs)
			ns.BaselineStepMs = &b
		}
		v.PerNode = append(v.PerNode, ns)
	}
	slices.SortFunc(v.PerNode, func(a, b NodeStat) int { return cmp.Compare(a.Node, b.Node) })
	v.SlowestNode, v.SlowestRank = slowest.node, &slowest.rank
	if own {
		v.How = fmt.Sprintf("rank %d does the most work of its own per step, %.2f ms median (step time less its time in collectives, which the others spend waiting for it)", slowest.rank, slowestOwn)
	} else {
		v.How = fmt.Sprintf("rank %d has the largest median step time, %.2f ms (the traces show no collectives that would tell the rank others wait for)", slowest.rank, slowestOwn)
	}
	return v
}

// collectiveWait is, per step, the time the rank spent in collectives: on
// a GPU its exposed communication, on a CPU the union of its collective
// host ranges (collectiveRE) inside the step's window. ok is false when
// the profile cannot tell: no ranges (a stored run) and no GPU.
func collectiveWait(r *analysis.Result) (waits []int64, ok bool) {
	return CollectiveWait(r)
}

// CollectiveWait is, per step, the time rank r spent in collectives:
// its exposed communication on a GPU, the union of its collective host
// ranges on a CPU, or the stored documents' (analysis.Step.Collective);
// ok is false when the profile cannot tell. The stored analysis keeps it
// per step (report.Step), so that a baseline's nodes have their own work.
func CollectiveWait(r *analysis.Result) (waits []int64, ok bool) {
	if r.HasGPU {
		for _, s := range r.Steps {
			waits = append(waits, s.ExposedComm)
		}
		return waits, true
	}
	p := r.Profile
	if p == nil || p.Names == nil || len(p.Ranges) == 0 {
		// A stored run keeps no ranges, but its document keeps each
		// step's time in collectives (report.Step.CollectiveWait).
		stored := false
		for _, s := range r.Steps {
			waits = append(waits, s.Collective)
			stored = stored || s.Collective > 0
		}
		if stored {
			return waits, true
		}
		return nil, false
	}
	match := p.Names.Match(collectiveRE)
	var coll []trace.Range
	for _, rg := range p.Ranges {
		if int(rg.Name) < len(match) && match[rg.Name] {
			coll = append(coll, rg)
		}
	}
	slices.SortFunc(coll, func(a, b trace.Range) int { return cmp.Compare(a.Start, b.Start) })
	for _, s := range r.Steps {
		var sum, end int64 = 0, s.Start
		for _, c := range coll {
			lo, hi := max(c.Start, end), min(c.End, s.End)
			if c.Start >= s.End {
				break
			}
			if hi > lo {
				sum += hi - lo
				end = hi
			}
		}
		waits = append(waits, sum)
	}
	return waits, true
}
