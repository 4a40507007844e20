package analysis

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"

	"github.com/gpugate/gpugate/trace"
)

// Steps without markers.
//
// When no host range matches the step pattern, Analyze infers the steps
// from the profile itself, trying these sources in order of trust and
// taking the first that yields a step:
//
//  1. Optimizer steps ("optimizer"). torch.optim wraps every
//     optimizer.step() in a range named Optimizer.step#<Class>.step, which
//     Kineto records as a user annotation and emit_nvtx as an NVTX range.
//     Failing those, any range whose name contains "optimizer" (not
//     zero_grad), then the op ranges of fused optimizers (aten::_fused_adam_
//     and the like). The end of each optimizer step ends an iteration: step
//     i is [end of optimizer step i-1, end of optimizer step i), and the
//     first step starts at the first host range of that thread. Work that
//     runs after the optimizer in the same iteration (metrics, logging)
//     falls into the next step.
//  2. FSDP forwards ("fsdp-forward"): FSDP names the root module's
//     pre-forward hook FSDP::root_pre_forward; each one starts an iteration.
//     The last step ends at the end of the last host range of that thread.
//  3. The period of the GPU op sequence ("kernel-period"): the names of the
//     GPU ops (kernels, copies, memsets) in the order their API calls
//     launched them repeat with one iteration's period P. Candidate periods
//     are the distances between consecutive ops of the same name; each is
//     scored by the share of positions i with name(i) = name(i+P) (give or
//     take max(3, P/100) positions), and the best score wins (the shortest
//     period among scores within 1%); under 0.9, nothing repeats. A step
//     begins at the op, within the period, that follows the longest median
//     host gap between launches; its host window starts at the end of the
//     previous op's launch call. Ops before the first such op and a last
//     repetition shorter than P are partial steps and are left out. A
//     capture shorter than two iterations repeats only its layers, so the
//     steps found are then layers: the warning says so.
//
// Range-based steps whose first or last piece is much shorter than the
// others are kept whole: a Kineto trace starts and ends on step boundaries.
// If nothing yields a step, the whole profile is one window, with a warning.
//
// Confidence (Result.StepConfidence, 0 to 1) is the source's trust (1 for
// optimizer steps, 0.9 for the wider optimizer patterns and FSDP forwards,
// 0.9 x the period's score for the kernel period) times the share of steps
// whose kernel count is within 1% of the median (0.5 when there is only
// one step, which shows no regularity).

// Step methods, as Result.StepMethod reports them.
const (
	StepsMarked       = "markers"
	StepsOptimizer    = "optimizer"
	StepsFSDP         = "fsdp-forward"
	StepsKernelPeriod = "kernel-period"
	StepsWhole        = "whole-profile"
)

var (
	optimizerStepRE  = regexp.MustCompile(`^Optimizer\.step#`)
	optimizerRE      = regexp.MustCompile(`(?i)optimizer`)
	zeroGradRE       = regexp.MustCompile(`(?i)zero_grad`)
	fusedOptimizerRE = regexp.MustCompile(`^aten::_fused_(adamw?|sgd|adagrad)_?\b`)
	fsdpForwardRE    = regexp.MustCompile(`root_pre_forward`)
)

// inferred is the outcome of step inference.
type inferred struct {
	hosts  []hostStep
	thread int64
	method string
	trust  float64
	note   string // how the steps were found, for the warning
}

// inferSteps finds steps in a profile without step markers. r.Launch must
// be set (link).
func (r *Result) inferSteps() inferred {
	p := r.Profile
	optOnly := func(re *regexp.Regexp) []bool {
		m := p.Names.Match(re)
		z := p.Names.Match(zeroGradRE)
		for i := range m {
			m[i] = m[i] && !z[i]
		}
		return m
	}
	for _, t := range []struct {
		match []bool
		trust float64
		what  string
	}{
		{p.Names.Match(optimizerStepRE), 1, "ends of Optimizer.step ranges"},
		{optOnly(optimizerRE), 0.9, "ends of ranges named like an optimizer"},
		{p.Names.Match(fusedOptimizerRE), 0.9, "ends of fused optimizer op ranges"},
	} {
		if hosts, thread, name := rangeSteps(p, t.match, true, r.Start); len(hosts) > 0 {
			return inferred{hosts, thread, StepsOptimizer, t.trust, fmt.Sprintf("%s (%q)", t.what, name)}
		}
	}
	if hosts, thread, name := rangeSteps(p, p.Names.Match(fsdpForwardRE), false, r.Start); len(hosts) > 0 {
		return inferred{hosts, thread, StepsFSDP, 0.9, fmt.Sprintf("starts of FSDP forward ranges (%q)", name)}
	}
	return r.periodSteps()
}

// rangeSteps makes steps from the outermost ranges that match, on the
// thread with most of them. Of several matching names (two optimizers
// stepped in one iteration), the most frequent one is used, and of equally
// frequent ones the one that finishes last in the iteration. atEnd says
// whether a range ends its iteration (optimizer) or starts it (forward).
func rangeSteps(p *trace.Profile, match []bool, atEnd bool, start int64) ([]hostStep, int64, string) {
	perThread := map[int64]int{}
	for i := range p.Ranges {
		if match[p.Ranges[i].Name] {
			perThread[p.Ranges[i].Thread]++
		}
	}
	thread, best := int64(0), 0
	for t, n := range perThread {
		if n > best || n == best && t < thread {
			thread, best = t, n
		}
	}
	if best == 0 {
		return nil, 0, ""
	}
	// Outermost matching ranges on the thread, per name.
	type occ struct{ lo, hi int64 }
	byName := map[trace.Name][]occ{}
	var lo, hi int64 = 1<<63 - 1, -1 << 63 // extent of the thread's ranges
	var coverEnd int64 = -1 << 63
	for i := range p.Ranges {
		rg := &p.Ranges[i]
		if rg.Thread != thread {
			continue
		}
		lo, hi = min(lo, rg.Start), max(hi, rg.End)
		if !match[rg.Name] {
			continue
		}
		if rg.End <= coverEnd {
			continue // nested in a matching range
		}
		coverEnd = rg.End
		byName[rg.Name] = append(byName[rg.Name], occ{rg.Start, rg.End})
	}
	var name trace.Name
	var occs []occ
	for n, o := range byName {
		switch {
		case occs == nil, len(o) > len(occs),
			len(o) == len(occs) && (o[0].hi > occs[0].hi || o[0].hi == occs[0].hi && n < name):
			name, occs = n, o
		}
	}
	var cuts []int64
	for _, o := range occs {
		if atEnd {
			cuts = append(cuts, o.hi)
		} else {
			cuts = append(cuts, o.lo)
		}
	}
	// Steps tile [lo, hi]: before the first cut, between cuts, after the
	// last one. An optimizer's end closes a step, so nothing after the last
	// one is a step; a forward opens one, so nothing before the first is.
	var bounds []int64
	if atEnd {
		// A Kineto trace starts on a step boundary: the first step starts
		// with the profile, not with the thread's first range.
		bounds = append([]int64{min(lo, start)}, cuts...)
	} else {
		bounds = append(cuts, hi)
	}
	var out []hostStep
	for i := 0; i+1 < len(bounds); i++ {
		if bounds[i+1] <= bounds[i] {
			continue
		}
		out = append(out, hostStep{name: fmt.Sprintf("step %d (inferred)", len(out)+1), lo: bounds[i], hi: bounds[i+1]})
	}
	return out, thread, p.Names.String(name)
}

// periodSteps finds steps from the repeating sequence of GPU op names.
func (r *Result) periodSteps() inferred {
	p := r.Profile
	none := inferred{method: StepsWhole}
	// GPU ops in launch order: by their API call's start, else their own.
	type launched struct {
		t, end int64 // launch call start and end (the op's start for both without one)
		thread int64
		name   trace.Name
	}
	// Ops launched before the capture are no iteration's.
	ops := make([]launched, 0, len(p.GPU))
	for i := range p.GPU {
		if r.isPreCapture(i) {
			continue
		}
		op := &p.GPU[i]
		l := launched{t: op.Start, end: op.Start, thread: -1, name: op.Name}
		if a := r.Launch[i]; a >= 0 {
			l.t, l.end, l.thread = p.API[a].Start, p.API[a].End, p.API[a].Thread
		}
		ops = append(ops, l)
	}
	slices.SortStableFunc(ops, func(a, b launched) int { return cmp.Compare(a.t, b.t) })
	m := len(ops)
	if m < 4 {
		return none
	}
	// Candidate periods: distances between consecutive ops of one name,
	// the most common first, among all names (layers repeat many times per
	// iteration) and among names rare enough to occur once per iteration
	// of a capture of up to 64 iterations; and m/n for n iterations, when
	// the capture holds whole iterations.
	count := make(map[trace.Name]int, 64)
	for _, o := range ops {
		count[o.name]++
	}
	last := make(map[trace.Name]int, len(count))
	all, rare := map[int]int{}, map[int]int{}
	for i, o := range ops {
		if j, ok := last[o.name]; ok && i-j >= 2 && 2*(i-j) <= m {
			all[i-j]++
			if count[o.name] <= 64 {
				rare[i-j]++
			}
		}
		last[o.name] = i
	}
	seen := map[int]bool{}
	var cands []int
	for _, top := range []struct {
		dist map[int]int
		n    int
	}{{all, 16}, {rare, 32}} {
		type dn struct{ d, n int }
		var l []dn
		for d, n := range top.dist {
			l = append(l, dn{d, n})
		}
		slices.SortFunc(l, func(a, b dn) int { return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.d, b.d)) })
		for _, x := range l[:min(len(l), top.n)] {
			if !seen[x.d] {
				seen[x.d] = true
				cands = append(cands, x.d)
			}
		}
	}
	for n := 2; n <= 64 && m/n >= 2; n++ {
		if d := m / n; !seen[d] {
			seen[d] = true
			cands = append(cands, d)
		}
	}
	// An iteration may launch an op more or fewer than the previous one (a
	// copy, a collective launched from another thread): an op matches if
	// the same name lies within w positions of i+P. Scores are taken on at
	// most 20,000 positions spread evenly.
	window := func(P int) int { return max(3, P/100) }
	matches := func(i, P, w int) bool {
		if ops[i+P].name == ops[i].name {
			return true
		}
		for k := max(i+P-w, i+1); k <= i+P+w && k < m; k++ {
			if ops[k].name == ops[i].name {
				return true
			}
		}
		return false
	}
	bestP, bestScore := 0, 0.0
	for _, P := range cands {
		same, tried, w := 0, 0, window(P)
		stride := max(1, (m-P)/20000)
		for i := 0; i+P < m; i += stride {
			tried++
			if matches(i, P, w) {
				same++
			}
		}
		score := float64(same) / float64(tried)
		// Equal scores (within 1%) favour the shorter period: twice an
		// iteration repeats as well as one.
		if score > bestScore+0.01 || score > bestScore-0.01 && P < bestP {
			bestP, bestScore = P, max(score, bestScore)
		}
	}
	const minScore = 0.9
	if bestP == 0 || bestScore < minScore || m < 2*bestP {
		return none
	}
	P := bestP
	gap := func(i int) int64 {
		if i == 0 {
			return -1 << 62
		}
		return ops[i].t - ops[i-1].end
	}
	// Phase: the op after the longest median host gap between launches.
	gaps := make([]int64, 0, m/P+1)
	bestJ, bestGap := 0, int64(-1<<63)
	for j := range P {
		gaps = gaps[:0]
		for i := j; i < m; i += P {
			if i > 0 {
				gaps = append(gaps, gap(i))
			}
		}
		if len(gaps) == 0 {
			continue
		}
		slices.Sort(gaps)
		if g := gaps[len(gaps)/2]; g > bestGap {
			bestJ, bestGap = j, g
		}
	}
	// Step starts: from the phase, one period on each time, re-anchored
	// within the window to the op of the same name after the longest gap,
	// so that an extra op in one iteration does not shift all later ones.
	starts := []int{bestJ}
	w := window(P)
	for b := bestJ; ; {
		next, best := -1, int64(-1<<63)
		for k := b + P - w; k <= b+P+w && k < m; k++ {
			if k > b && ops[k].name == ops[bestJ].name && gap(k) > best {
				next, best = k, gap(k)
			}
		}
		if next < 0 {
			if b+P >= m {
				break
			}
			next = b + P
		}
		starts = append(starts, next)
		b = next
	}
	var out []hostStep
	var thread int64
	for n := 0; n+1 < len(starts); n++ {
		i, e := starts[n], starts[n+1] // ops [i, e)
		lo := r.Start                  // nothing before the first op: the profile starts the step
		if i > 0 {
			lo = ops[i-1].end
		}
		if k := len(out); k > 0 {
			out[k-1].hi = lo // steps tile the host timeline
		}
		out = append(out, hostStep{name: fmt.Sprintf("step %d (inferred)", len(out)+1), lo: lo, hi: max(lo, ops[e-1].end)})
		thread = ops[i].thread
	}
	// The ops after the last start form a step if they are a whole period.
	if i := starts[len(starts)-1]; m-i >= P-w {
		lo := ops[i-1].end
		if k := len(out); k > 0 {
			out[k-1].hi = lo
		}
		out = append(out, hostStep{name: fmt.Sprintf("step %d (inferred)", len(out)+1), lo: lo, hi: max(lo, ops[m-1].end)})
	}
	if len(out) < 2 {
		return none
	}
	note := fmt.Sprintf("a repeating sequence of %d GPU ops (%.0f%% of ops repeat at that period); a capture shorter than two iterations repeats its layers instead, so check that the period is an iteration", P, 100*bestScore)
	return inferred{hosts: out, thread: thread, method: StepsKernelPeriod, trust: 0.9 * bestScore, note: note}
}

// stepConfidence is the trust of the method times the regularity of the
// steps' kernel counts.
func (r *Result) stepConfidence(trust float64) float64 {
	n := len(r.Steps)
	if n == 0 {
		return 0
	}
	if n == 1 {
		return trust * 0.5
	}
	if !r.HasGPU {
		// Without kernels, regularity is that of the step times.
		d := make([]int64, n)
		for i := range r.Steps {
			d[i] = r.Steps[i].StepTime()
		}
		return trust * share(d, 0.1)
	}
	k := make([]int64, n)
	for i := range r.Steps {
		k[i] = int64(r.Steps[i].Kernels)
	}
	return trust * share(k, 0.01)
}

// share returns the fraction of values within rel of their median.
func share(v []int64, rel float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	med := float64(s[len(s)/2])
	in := 0
	for _, x := range v {
		if d := float64(x) - med; d <= rel*med && -d <= rel*med {
			in++
		}
	}
	return float64(in) / float64(len(v))
}

// InferencePatterns are the range names step inference looks for. A reader
// that keeps only some ranges (the lean nsys read) must keep these too.
func InferencePatterns() []*regexp.Regexp {
	return []*regexp.Regexp{optimizerRE, zeroGradRE, fusedOptimizerRE, fsdpForwardRE}
}
