package gate

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpugate/gpugate/analysis"
)

// RankChange is one rank's own numbers on both sides: its mean step (the
// mean over runs of its run mean, before ranks are combined), its FLOPs
// and its sync calls per step. Ranks of a data-parallel job wait for each
// other, so a straggler slows every rank's step: the work per rank tells
// which one changed.
type RankChange struct {
	// Rank is the rank the traces record (its position in the run when
	// they record none, and then Known is false).
	Rank  int  `json:"rank"`
	Known bool `json:"rank_known"`
	// Path is the rank's trace in the first candidate run: where it ran
	// (traces record no host name; a multi-host job's trace names often
	// carry it).
	Path string `json:"path"`
	// Node is the machine the rank ran on in the first candidate run,
	// where the job says (Slurm); omitted otherwise.
	Node string `json:"node,omitempty"`
	// Straggler says the rank's node is the straggler, slower than its
	// own baseline (Nodes.Straggler): the ranks line leads with it.
	Straggler   bool    `json:"straggler,omitempty"`
	BaselineMs  float64 `json:"baseline_step_ms"`
	CandidateMs float64 `json:"candidate_step_ms"`
	DeltaMs     float64 `json:"delta_ms"`
	// FLOPs per step of the rank's counted operators; null when a side
	// has none.
	BaselineFLOPs  *float64 `json:"baseline_flops_per_step"`
	CandidateFLOPs *float64 `json:"candidate_flops_per_step"`
	// FLOPsDeltaPct is the change of FLOPs per step in %; null unless both
	// sides have them and the baseline's are not 0.
	FLOPsDeltaPct  *float64 `json:"flops_delta_pct"`
	BaselineSyncs  float64  `json:"baseline_sync_calls"`
	CandidateSyncs float64  `json:"candidate_sync_calls"`
}

// rankSide is one side's per-rank means, by rank key.
type rankSide struct {
	step, syncs, busy map[int]float64
	flops             map[int]float64 // ranks with FLOPs on every run
	ops               map[int]map[string]analysis.OpWork
	// calls are the counted operators' calls per step (analysis.OpWork),
	// by rank and operator, for ranks whose every run has them, FLOPs or
	// not: torch 1.13 records no FLOPs, but its operators are there.
	calls      map[int]map[string]float64
	path, node map[int]string
	known      map[int]bool
	order      []int
}

// rankKey is a rank's identity across runs: its rank when the trace says,
// else its position in the run.
func rankKey(r *analysis.Result, pos int) (int, bool) {
	if r.Profile.Rank >= 0 {
		return r.Profile.Rank, true
	}
	return pos, false
}

// perRank averages each rank's run means over a side's runs.
func perRank(runs []Run) rankSide {
	st, _ := analysis.MetricByName("step_time")
	sc, _ := analysis.MetricByName("sync_calls")
	s := rankSide{step: map[int]float64{}, syncs: map[int]float64{}, busy: map[int]float64{}, flops: map[int]float64{},
		ops: map[int]map[string]analysis.OpWork{}, calls: map[int]map[string]float64{}, path: map[int]string{}, node: map[int]string{}, known: map[int]bool{}}
	n := map[int]int{}
	nf := map[int]int{}
	nc := map[int]int{}
	for _, run := range runs {
		for pos, r := range run {
			k, known := rankKey(r, pos)
			if _, seen := n[k]; !seen {
				s.order = append(s.order, k)
				s.path[k], s.node[k], s.known[k] = r.Profile.Path, r.Profile.Node, known
			}
			n[k]++
			v, _ := RunValue(Run{r}, st)
			s.step[k] += v
			y, _ := RunValue(Run{r}, sc)
			s.syncs[k] += y
			s.busy[k] += busy(r)
			if r.Work != nil && len(r.Work.Ops) > 0 {
				if s.calls[k] == nil {
					s.calls[k] = map[string]float64{}
				}
				for _, o := range r.Work.Ops {
					s.calls[k][o.Name] += o.Calls
				}
				nc[k]++
			}
			if f, ok := flopsPerStep(r); ok {
				s.flops[k] += f
				nf[k]++
				if s.ops[k] == nil {
					s.ops[k] = map[string]analysis.OpWork{}
				}
				for _, o := range r.Work.Ops {
					w := s.ops[k][o.Name]
					w.Name, w.Calls, w.FLOPs = o.Name, w.Calls+o.Calls, w.FLOPs+o.FLOPs
					s.ops[k][o.Name] = w
				}
			}
		}
	}
	for k, c := range n {
		s.step[k] /= float64(c)
		s.syncs[k] /= float64(c)
		s.busy[k] /= float64(c)
		if nc[k] != c {
			delete(s.calls, k) // operators in some runs only
		} else {
			for name, v := range s.calls[k] {
				if v /= float64(c); math.IsInf(v, 0) || math.IsNaN(v) {
					delete(s.calls, k)
					break
				}
				s.calls[k][name] = v
			}
		}
		if nf[k] != c {
			// FLOPs in some runs only: no mean to compare.
			delete(s.flops, k)
			delete(s.ops, k)
			continue
		}
		s.flops[k] /= float64(c)
		if math.IsInf(s.flops[k], 0) || math.IsNaN(s.flops[k]) {
			// Beyond float64 (a hostile trace): unknown, never +Inf.
			delete(s.flops, k)
			delete(s.ops, k)
			continue
		}
		for name, w := range s.ops[k] {
			w.Calls /= float64(c)
			w.FLOPs /= float64(c)
			s.ops[k][name] = w
		}
	}
	slices.Sort(s.order)
	return s
}

// busy is a rank's mean time per step doing its own work: the GPU's
// compute on a GPU, the host step less its data-loader wait without one.
func busy(r *analysis.Result) float64 {
	if len(r.Steps) == 0 {
		return 0
	}
	var sum float64
	for i := range r.Steps {
		s := &r.Steps[i]
		if r.HasGPU {
			sum += float64(s.Compute) / 1e6
		} else {
			sum += float64(s.StepTime()-s.DataWait) / 1e6
		}
	}
	return sum / float64(len(r.Steps))
}

// flopsPerStep is a rank's mean FLOPs per step over the steps that have
// a count; ok is false when none has.
func flopsPerStep(r *analysis.Result) (float64, bool) {
	if r.Work == nil {
		return 0, false
	}
	var sum float64
	n := 0
	for _, s := range r.Work.Steps {
		if s.FLOPs != nil && !math.IsNaN(*s.FLOPs) && !math.IsInf(*s.FLOPs, 0) {
			sum += *s.FLOPs
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// compareRanks sets Ranks when either side has more than one rank.
func (rep *Report) compareRanks(b, c rankSide) {
	if len(b.order) < 2 && len(c.order) < 2 {
		return
	}
	for _, k := range c.order {
		if _, ok := b.step[k]; !ok {
			continue
		}
		rc := RankChange{Rank: k, Known: c.known[k], Path: c.path[k], Node: c.node[k], BaselineMs: b.step[k], CandidateMs: c.step[k], DeltaMs: c.step[k] - b.step[k],
			BaselineSyncs: b.syncs[k], CandidateSyncs: c.syncs[k]}
		if v, ok := b.flops[k]; ok {
			rc.BaselineFLOPs = &v
		}
		if v, ok := c.flops[k]; ok {
			rc.CandidateFLOPs = &v
		}
		if rc.BaselineFLOPs != nil && rc.CandidateFLOPs != nil && *rc.BaselineFLOPs > 0 {
			if d := 100 * (*rc.CandidateFLOPs / *rc.BaselineFLOPs - 1); !math.IsInf(d, 0) && !math.IsNaN(d) {
				rc.FLOPsDeltaPct = &d
			}
		}
		rep.Ranks = append(rep.Ranks, rc)
	}
}

// boolCmp orders false before true.
func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// rankOrder is the order RanksLine lists ranks in: the straggler's ranks
// first, then the rank whose work grew most, else the one that slowed
// most. The nodes table
// (Nodes.PerNode) follows it.
func rankOrder(rcs []RankChange) []RankChange {
	rs := slices.Clone(rcs)
	work := func(r RankChange) float64 {
		if r.FLOPsDeltaPct != nil {
			return *r.FLOPsDeltaPct
		}
		return 0
	}
	slices.SortStableFunc(rs, func(a, b RankChange) int {
		return cmp.Or(boolCmp(b.Straggler, a.Straggler), cmp.Compare(work(b), work(a)), cmp.Compare(b.DeltaMs, a.DeltaMs), cmp.Compare(a.Rank, b.Rank))
	})
	return rs
}

// RanksLine says how each rank's step and work changed, the rank whose
// work grew most first (else the one that slowed most): "rank 0 slowed by
// 41.0 ms (FLOPs per step +100%), rank 1 by 3.0 ms (FLOPs +0%)". "" with
// fewer than two ranks.
func RanksLine(rcs []RankChange) string {
	if len(rcs) < 2 {
		return ""
	}
	rs := rankOrder(rcs)
	var parts []string
	for i, r := range rs {
		name := fmt.Sprintf("rank %d", r.Rank)
		if !r.Known {
			name = fmt.Sprintf("rank #%d (the trace does not say)", r.Rank)
		}
		if r.Node != "" {
			name += " on " + r.Node
			if r.Straggler {
				name += " (the straggler, slower than its baseline)"
			}
		}
		verb := "slowed by"
		if r.DeltaMs < 0 {
			verb = "sped up by"
		}
		if i > 0 && (r.DeltaMs < 0) == (rs[0].DeltaMs < 0) {
			verb = "by"
		}
		p := fmt.Sprintf("%s %s %.1f ms", name, verb, math.Abs(r.DeltaMs))
		var extra []string
		if r.FLOPsDeltaPct != nil {
			extra = append(extra, fmt.Sprintf("FLOPs per step %+.0f%%", *r.FLOPsDeltaPct))
		}
		if r.CandidateSyncs != r.BaselineSyncs {
			extra = append(extra, fmt.Sprintf("sync calls per step %s → %s", num(r.BaselineSyncs), num(r.CandidateSyncs)))
		}
		if len(extra) > 0 {
			p += " (" + strings.Join(extra, ", ") + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}
