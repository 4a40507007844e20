package analysis

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

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
//     launched them repeat with one iteration's period P. Ops without a
//     launching call (unified-memory migrations) are left out of the
//     sequence; they join the steps by their start. Candidate periods
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
	StepsAnnotation   = "annotation"
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
	// note says how the steps were found, for the warning; it is given
	// the steps as analysed, so that the numbers it quotes are theirs.
	note   func(steps []Step) string
	phases bool // the steps are named as two phases
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
			return inferred{hosts: hosts, thread: thread, method: StepsOptimizer, trust: t.trust, note: fixedNote(fmt.Sprintf("%s (%q)", t.what, name))}
		}
	}
	if hosts, thread, name := rangeSteps(p, p.Names.Match(fsdpForwardRE), false, r.Start); len(hosts) > 0 {
		return inferred{hosts: hosts, thread: thread, method: StepsFSDP, trust: 0.9, note: fixedNote(fmt.Sprintf("starts of FSDP forward ranges (%q)", name))}
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

// launched is a GPU op in launch order, for the kernel period.
type launched struct {
	t, end int64 // launch call start and end (the op's start for both without one)
	thread int64
	name   trace.Name
	// key is the op's name on its device: one process driving two GPUs
	// launches the same kernels on each, and an iteration is both halves.
	key int32
}

// periodSteps finds steps from the repeating sequence of GPU op names.
func (r *Result) periodSteps() inferred {
	p := r.Profile
	none := inferred{method: StepsWhole}
	// GPU ops in the order their API calls launched them. Ops launched
	// before the capture are no iteration's, and ops without a launching
	// call (unified-memory page migrations, which the driver starts on a
	// page fault) are no evidence of the loop: a one-shot program that
	// faults in 2,370 pages is not 2,371 steps of one copy. Analyze puts
	// them in the steps the launched ops define, by their start (windows).
	// Only a trace in which no op has a launching call (no API calls
	// recorded) orders its ops by their own start.
	anyLaunched := false
	for i := range p.GPU {
		if r.Launch[i] >= 0 {
			anyLaunched = true
			break
		}
	}
	ops := make([]launched, 0, len(p.GPU))
	keys := map[[2]int32]int32{}
	for i := range p.GPU {
		if r.isPreCapture(i) || anyLaunched && r.Launch[i] < 0 {
			continue
		}
		op := &p.GPU[i]
		k := [2]int32{int32(op.Name), op.Device}
		id, ok := keys[k]
		if !ok {
			id = int32(len(keys))
			keys[k] = id
		}
		l := launched{t: op.Start, end: op.Start, thread: -1, name: op.Name, key: id}
		if a := r.Launch[i]; a >= 0 {
			l.t, l.end, l.thread = p.API[a].Start, p.API[a].End, p.API[a].Thread
		}
		ops = append(ops, l)
	}
	slices.SortStableFunc(ops, func(a, b launched) int { return cmp.Compare(a.t, b.t) })
	if len(ops) < 4 {
		return none
	}
	if inf := r.phaseSteps(ops); inf.method != StepsWhole {
		return inf
	}
	if P, score := bestPeriod(ops); P > 0 {
		out, thread := r.periodHosts(ops, P, r.Start, "")
		if len(out) < 2 {
			return none
		}
		note := func(steps []Step) string {
			return fmt.Sprintf("a sequence of GPU ops that repeats every %d ops (%.0f%% of ops repeat at that period; the steps hold %s GPU ops each); a capture shorter than two iterations repeats its layers instead, so check that the period is an iteration", P, 100*score, opsPerStep(steps, ""))
		}
		inf := inferred{hosts: out, thread: thread, method: StepsKernelPeriod, trust: 0.9 * score, note: note}
		return r.preferAnnotation(inf, P)
	}
	return none
}

// phaseSteps looks for two loops one after the other in a sequence that
// has no single period: the op index c where the fewest kernel names occur
// on both sides splits it, and each side must repeat on its own. The steps
// of the two sides are named as phases, and the confidence is halved: the
// evidence is mixed (two iterations, or a warm-up loop and the real one).
func (r *Result) phaseSteps(ops []launched) inferred {
	none := inferred{method: StepsWhole}
	m := len(ops)
	first, last := map[int32]int{}, map[int32]int{}
	for i, o := range ops {
		if _, ok := first[o.key]; !ok {
			first[o.key] = i
		}
		last[o.key] = i
	}
	// shared[c]: names with first < c <= last, i.e. on both sides of a
	// split before op c.
	diff := make([]int, m+1)
	for k, f := range first {
		if l := last[k]; l > f {
			diff[f+1]++
			diff[l+1]--
		}
	}
	// left[c], right[c]: names that occur before op c, and at or after it.
	left, right := make([]int, m+1), make([]int, m+1)
	for k, f := range first {
		left[f+1]++
		right[last[k]+1]--
	}
	nl, nr := 0, len(first)
	bestC, bestShared, run := -1, 0, 0
	for c := 1; c < m; c++ {
		run += diff[c]
		nl += left[c]
		nr += right[c]
		// The names must separate: at most a tenth of either side's
		// names on both sides (one loop shares all its names with any
		// split of itself).
		if c >= 4 && m-c >= 4 && 10*run <= min(nl, nr) && (bestC < 0 || run < bestShared) {
			bestC, bestShared = c, run
		}
	}
	if bestC < 0 {
		return none // the names do not separate: no two loops
	}
	a, b := ops[:bestC], ops[bestC:]
	Pa, sa := bestPeriod(a)
	Pb, sb := bestPeriod(b)
	// Weaker evidence than one period: each phase must be iterations of
	// at least 4 ops, repeated at least 3 times (the A100 AlexNet
	// benchmark's 7 pairs of copies and 2 forwards are not two loops).
	if Pa < 4 || Pb < 4 {
		return none
	}
	ha, thread := r.periodHosts(a, Pa, r.Start, "phase 1 ")
	hb, _ := r.periodHosts(b, Pb, a[len(a)-1].end, "phase 2 ")
	if len(ha) < 3 || len(hb) < 3 {
		return none
	}
	// The phases tile the host timeline as steps do.
	ha[len(ha)-1].hi = min(ha[len(ha)-1].hi, hb[0].lo)
	shared, names := bestShared, len(first)
	note := func(steps []Step) string {
		return fmt.Sprintf("two phases with different repeating sequences (phase 1: %d steps of %s GPU ops, period %d; phase 2: %d steps of %s, period %d; %d of %d kernel names occur in both): the capture holds two loops, and summaries mix their steps; confidence halved",
			countPrefix(steps, "phase 1 "), opsPerStep(steps, "phase 1 "), Pa, countPrefix(steps, "phase 2 "), opsPerStep(steps, "phase 2 "), Pb, shared, names)
	}
	return inferred{hosts: append(ha, hb...), thread: thread, method: StepsKernelPeriod, trust: 0.5 * 0.9 * min(sa, sb), note: note, phases: true}
}

// bestPeriod returns the period of ops' keys that scores best, and its
// score, or 0 when nothing repeats (a score under 0.9, or fewer than two
// repetitions).
func bestPeriod(ops []launched) (int, float64) {
	m := len(ops)
	if m < 4 {
		return 0, 0
	}
	// Candidate periods: distances between consecutive ops of one name,
	// the most common first, among all names (layers repeat many times per
	// iteration) and among names rare enough to occur once per iteration
	// of a capture of up to 64 iterations; and m/n for n iterations, when
	// the capture holds whole iterations.
	count := make(map[int32]int, 64)
	for _, o := range ops {
		count[o.key]++
	}
	last := make(map[int32]int, len(count))
	all, rare := map[int]int{}, map[int]int{}
	for i, o := range ops {
		if j, ok := last[o.key]; ok && i-j >= 2 && 2*(i-j) <= m {
			all[i-j]++
			if count[o.key] <= 64 {
				rare[i-j]++
			}
		}
		last[o.key] = i
	}
	// Period 1 (one op, launched over and over) is a candidate too: the
	// distances above start at 2, and a loop of one kernel repeats at
	// every multiple of 1 as exactly as at 1.
	seen := map[int]bool{1: true}
	cands := []int{1}
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
	bestP, bestScore, bestExact := 0, 0.0, 0.0
	for _, P := range cands {
		same, exact, tried, w := 0, 0, 0, periodWindow(P)
		stride := max(1, (m-P)/20000)
		for i := 0; i+P < m; i += stride {
			tried++
			if periodMatch(ops, i, P, w) {
				same++
			}
			if ops[i+P].key == ops[i].key {
				exact++
			}
		}
		score, ex := float64(same)/float64(tried), float64(exact)/float64(tried)
		// Equal scores (within 1%) favour the period whose ops recur at
		// exactly i+P (the tolerance of w positions lets P-1 … P-w score
		// as well as P on short periods), then the shorter period: twice
		// an iteration repeats as well as one.
		switch {
		case score > bestScore+0.01,
			score > bestScore-0.01 && ex > bestExact+0.01,
			score > bestScore-0.01 && ex > bestExact-0.01 && P < bestP:
			bestP, bestScore, bestExact = P, max(score, bestScore), ex
		}
	}
	const minScore = 0.9
	if bestP == 0 || bestScore < minScore || m < 2*bestP {
		return 0, bestScore
	}
	return bestP, bestScore
}

// periodWindow is the tolerance in positions of a period P: max(3, P/100),
// but at most a quarter of the period, and none below 8 ops, so that a
// short period must repeat exactly. A tolerance near the period lets any
// sequence whose names recur within the window "repeat": one GEMM launched
// five times scored 100% at period 2, and relu, relu, relu, H2D, gemm,
// relu 100% at period 3 (each relu finds a relu one position off).
func periodWindow(P int) int {
	if P < 8 {
		return 0
	}
	return min(max(3, P/100), P/4)
}

// periodMatch reports whether the op at i recurs at i+P, give or take w.
func periodMatch(ops []launched, i, P, w int) bool {
	m := len(ops)
	if ops[i+P].key == ops[i].key {
		return true
	}
	for k := max(i+P-w, i+1); k <= i+P+w && k < m; k++ {
		if ops[k].key == ops[i].key {
			return true
		}
	}
	return false
}

// periodHosts cuts ops into steps of period P. before is where the host
// window of a step that starts at ops[0] begins (the profile's start, or
// the end of the launch before ops); prefix goes before each step's name.
func (r *Result) periodHosts(ops []launched, P int, before int64, prefix string) ([]hostStep, int64) {
	m := len(ops)
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
	w := periodWindow(P)
	for b := bestJ; ; {
		next, best := -1, int64(-1<<63)
		for k := b + P - w; k <= b+P+w && k < m; k++ {
			if k > b && ops[k].key == ops[bestJ].key && gap(k) > best {
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
	name := func() string { return fmt.Sprintf("%sstep %d (inferred)", prefix, len(out)+1) }
	for n := 0; n+1 < len(starts); n++ {
		i, e := starts[n], starts[n+1] // ops [i, e)
		lo := before                   // nothing before the first op: the profile starts the step
		if i > 0 {
			lo = ops[i-1].end
		}
		if k := len(out); k > 0 {
			out[k-1].hi = lo // steps tile the host timeline
		}
		out = append(out, hostStep{name: name(), lo: lo, hi: max(lo, ops[e-1].end)})
		thread = ops[i].thread
	}
	// The ops after the last start form a step if they are a whole period.
	if i := starts[len(starts)-1]; m-i >= P-w {
		lo := before
		if i > 0 {
			lo = ops[i-1].end
		}
		if k := len(out); k > 0 {
			out[k-1].hi = lo
		}
		out = append(out, hostStep{name: name(), lo: lo, hi: max(lo, ops[m-1].end)})
	}
	return out, thread
}

// preferAnnotation replaces kernel-period steps by the outermost host
// ranges of the launching thread when those hold several of the steps
// each: the period then found layers inside an iteration (a transformer's
// blocks), and a range around all of them (a user annotation such as the
// B200 capture's execute_context_1(…)) is the real unit. The ranges
// must hold 90% of the thread's launched ops; ranges of one name (digits
// ignored) that repeat are the steps; a single one is one step.
func (r *Result) preferAnnotation(inf inferred, P int) inferred {
	p := r.Profile
	// Outermost ranges on the thread.
	var top []trace.Range
	var coverEnd int64 = -1 << 63
	for i := range p.Ranges {
		rg := p.Ranges[i]
		if rg.Thread != inf.thread || rg.End <= coverEnd {
			continue
		}
		coverEnd = rg.End
		top = append(top, rg)
	}
	if len(top) == 0 {
		return inf
	}
	// Group them by name with digits left out, and take the group that
	// holds most step starts.
	group := map[string][]trace.Range{}
	for _, rg := range top {
		k := digitsRE.ReplaceAllString(p.Names.String(rg.Name), "#")
		group[k] = append(group[k], rg)
	}
	holds := func(rgs []trace.Range, t int64) bool {
		for _, rg := range rgs {
			if t >= rg.Start && t < rg.End {
				return true
			}
		}
		return false
	}
	bestK, bestN := "", 0
	for k, rgs := range group {
		n := 0
		for _, h := range inf.hosts {
			if holds(rgs, h.hi-1) {
				n++
			}
		}
		if n > bestN || n == bestN && k < bestK {
			bestK, bestN = k, n
		}
	}
	rgs := group[bestK]
	// Every range must hold at least two steps, and the ranges most of
	// the thread's launches.
	if bestN < 2*len(rgs) {
		return inf
	}
	var launches, inside int
	isLaunch := make([]int8, p.Names.Len()) // 0 unknown, 1 launch, 2 other
	for i := range p.API {
		a := &p.API[i]
		if a.Thread != inf.thread {
			continue
		}
		if isLaunch[a.Name] == 0 {
			isLaunch[a.Name] = 2
			if launchAPI(p.Names.String(a.Name)) {
				isLaunch[a.Name] = 1
			}
		}
		if isLaunch[a.Name] != 1 {
			continue
		}
		launches++
		if holds(rgs, a.Start) {
			inside++
		}
	}
	if launches == 0 || 10*inside < 9*launches {
		return inf
	}
	var hosts []hostStep
	for _, rg := range rgs {
		hosts = append(hosts, hostStep{name: p.Names.String(rg.Name), lo: rg.Start, hi: rg.End})
	}
	note := fixedNote(fmt.Sprintf("the top-level range %q (%d×), which holds %d of the %d steps of the kernel period (every %d GPU ops: layers inside an iteration) and %d of the thread's %d kernel launches", p.Names.String(rgs[0].Name), len(rgs), bestN, len(inf.hosts), P, inside, launches))
	return inferred{hosts: hosts, thread: inf.thread, method: StepsAnnotation, trust: 0.9, note: note}
}

var digitsRE = regexp.MustCompile(`[0-9]+`)

func fixedNote(s string) func([]Step) string { return func([]Step) string { return s } }

// opsPerStep says how many GPU ops the steps whose name starts with prefix
// hold: "N", or "A–B" when they differ.
func opsPerStep(steps []Step, prefix string) string {
	lo, hi := -1, -1
	for i := range steps {
		if !strings.HasPrefix(steps[i].Name, prefix) {
			continue
		}
		n := steps[i].Ops().Total()
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}

func countPrefix(steps []Step, prefix string) int {
	n := 0
	for i := range steps {
		if strings.HasPrefix(steps[i].Name, prefix) {
			n++
		}
	}
	return n
}

// timePhases looks at the steps' times for two regimes one after the other
// (two loops with the same kernels but different sizes): a split with at
// least three kept steps on each side whose median times differ by 1.5× or
// more, every step within 25% of its side's median but the one at the
// split. It names the steps
// as phases and says so; it reports whether it found them.
func (r *Result) timePhases() bool {
	lo, hi := r.keep[0], r.keep[1]
	n := hi - lo
	if n < 6 {
		return false
	}
	t := make([]int64, n)
	for i := range t {
		t[i] = r.Steps[lo+i].StepTime()
	}
	// tight returns the median of v and whether every step but the one
	// at the split (skip: which end of v; the step that spans the change
	// holds some of each loop) is within 25% of it.
	tight := func(v []int64, skip int) (int64, bool) {
		s := slices.Clone(v)
		slices.Sort(s)
		med := s[len(s)/2]
		for i, x := range v {
			if i == skip {
				continue
			}
			if 4*x > 5*med || 5*x < 4*med {
				return med, false
			}
		}
		return med, med > 0
	}
	bestC, bestRatio := -1, 1.5
	for c := 3; c <= n-3; c++ { // at least two steps besides the split's on each side
		ma, oka := tight(t[:c], c-1)
		mb, okb := tight(t[c:], 0)
		if !oka || !okb {
			continue
		}
		ratio := float64(max(ma, mb)) / float64(min(ma, mb))
		if ratio >= bestRatio {
			bestC, bestRatio = c, ratio
		}
	}
	if bestC < 0 {
		return false
	}
	split := lo + bestC
	for i := range r.Steps {
		ph, k := 1, i+1
		if i >= split {
			ph, k = 2, i-split+1
		}
		r.Steps[i].Name = fmt.Sprintf("phase %d step %d (inferred)", ph, k)
	}
	ma, _ := tight(t[:bestC], bestC-1)
	mb, _ := tight(t[bestC:], 0)
	r.warnf("the inferred steps fall in two phases: %d steps of a median %.3f ms, then %d of %.3f ms (the capture holds two loops, or the work changed size): summaries mix them and the step confidence is halved; name the iteration ranges with --step-pattern",
		split, float64(ma)/1e6, len(r.Steps)-split, float64(mb)/1e6)
	return true
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
