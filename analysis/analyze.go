// Package analysis turns a trace.Profile into per-step metrics, exactly as
// DESIGN.md's "Metric definitions" states them, and summarizes them over the
// steps.
//
// Steps. The host window [h0, h1) of a step is its iteration range on the
// CPU (ProfilerStep#N, or an NVTX range matching the step pattern). A GPU op
// belongs to the step whose host window holds the start of its launching API
// call. The step's window is [s0, s1) with s0 = max(h0, previous s1) and
// s1 = max(h1, end of the step's last GPU op), so consecutive steps tile the
// timeline and a step's time is what the GPU experienced.
//
// Ops launched before the capture (a correlation id below the process's
// first API call in the trace: the counter only grows, so their launch
// happened before the profiler started) belong to no step, and a warning
// says how many there were (docs/metrics.md, "Work launched before the
// capture"). Other GPU ops without a launching call in any host window (a
// launch call between steps, or an API kind the profiler did not record)
// are given to the step whose window holds their start, except that
// kernel-period steps are cut at launches: an op launched outside them is
// a partial iteration. What is left is outside the steps (OutsideSteps),
// with a warning: every GPU op is in exactly one step, left-out step,
// PreCapture or OutsideSteps.
//
// Every time part of a step is measured inside its window and from its own
// ops (docs/metrics.md, "The parts of a step lie within it"): busy,
// compute, communication and copy time are unions of the step's ops
// clipped to [s0, s1); sync time the union of its sync calls clipped to
// it; CPU and data wait the device's idle gaps in it.
package analysis

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"

	"github.com/gpugate/gpugate/trace"
)

// Default patterns.
var (
	DefaultStepPattern = regexp.MustCompile(`^(ProfilerStep#\d+|train_step|training_step|step)\b`)
	DefaultDataPattern = regexp.MustCompile(`DataLoader.*__next__|train_dataloader_next`)
	// DefaultCommPattern names communication kernels: the union of the
	// CommKernels table (comm.go, docs/metrics.md).
	DefaultCommPattern = commPattern()
	// Host operations that force a device-to-host sync in PyTorch. They stand
	// in for CUDA sync calls in profiles without GPU activity: .item() runs
	// aten::_local_scalar_dense, .tolist() aten::tolist; the NVTX injection
	// names its ranges sync:Tensor.item[...] and so on.
	DefaultSyncProxyPattern = regexp.MustCompile(`^(aten::_local_scalar_dense|aten::tolist)$|^sync:`)
)

// Options select the patterns that define steps, data-loader ranges and
// communication kernels. Nil fields take the defaults.
type Options struct {
	StepPattern      *regexp.Regexp
	DataPattern      *regexp.Regexp
	CommPattern      *regexp.Regexp
	SyncProxyPattern *regexp.Regexp
	// FirstStep and MaxSteps select the measured steps: the first
	// FirstStep steps are warm-up, and at most MaxSteps follow (0: all).
	// torch.profiler's schedule does this itself; NVTX-marked runs need it.
	FirstStep, MaxSteps int
	// KeepEdges keeps the first and last steps that Analyze otherwise
	// leaves out (see Trim).
	KeepEdges bool
	// Work turns step times into throughput and counts FLOPs (flops.go).
	Work Work
}

func (o Options) withDefaults() Options {
	if o.StepPattern == nil {
		o.StepPattern = DefaultStepPattern
	}
	if o.DataPattern == nil {
		o.DataPattern = DefaultDataPattern
	}
	if o.CommPattern == nil {
		o.CommPattern = DefaultCommPattern
	}
	if o.SyncProxyPattern == nil {
		o.SyncProxyPattern = DefaultSyncProxyPattern
	}
	return o
}

// Copies holds the memcpys of one direction in a step.
type Copies struct {
	Count    int   `json:"count"`
	Bytes    int64 `json:"bytes"`
	Time     int64 `json:"time_ns"`
	Pageable int   `json:"pageable"` // copies from or to pageable host memory
}

// Step holds the metrics of one step. Times are ns.
type Step struct {
	Name               string
	HostStart, HostEnd int64 // [h0, h1)
	Start, End         int64 // [s0, s1)

	Kernels  int
	Memcpys  int   // memcpys attributed to the step, every direction
	Memsets  int   // memsets attributed to the step
	GPUBusy  int64 // union of the step's own GPU ops, clipped to its window
	CPUWait  int64 // idle time during which the next GPU op was not launched yet
	DataWait int64 // the part of CPUWait under data-loader ranges (host time in them without GPU)

	SyncCalls int
	SyncTime  int64 // union of the sync calls' host time, clipped to [s0, s1)

	H2D, D2H, D2D Copies

	Compute     int64 // union of non-communication kernels and memsets
	CommTime    int64 // union of communication kernels
	ExposedComm int64 // communication not overlapped by compute
	ExposedCopy int64 // memcpy not overlapped by compute or communication

	LaunchOverhead int64   // median host duration of kernel launch calls
	ShortKernels   float64 // share of launched kernels shorter than their launch call
	Launches       int     // kernel launch calls in the host window

	Memory StepMemory // peak memory and its source (memory.go); Source "" when absent

	// Collective is the host time in collectives of a CPU profile's step
	// as a stored document keeps it (gate.CollectiveWait computes it from
	// the ranges, which a stored document does not keep); 0 otherwise.
	Collective int64
}

// Ops counts the step's GPU ops by kind.
func (s *Step) Ops() OpCounts {
	return OpCounts{Kernels: s.Kernels, Memcpy: s.Memcpys, Memset: s.Memsets}
}

// StepTime is s1 - s0.
func (s *Step) StepTime() int64 { return s.End - s.Start }

// GPUIdle is StepTime - GPUBusy.
func (s *Step) GPUIdle() int64 { return s.StepTime() - s.GPUBusy }

// GPUUtil is GPUBusy / StepTime, 0 for an empty step.
func (s *Step) GPUUtil() float64 {
	if s.StepTime() <= 0 {
		return 0
	}
	return float64(s.GPUBusy) / float64(s.StepTime())
}

// Gap is an interval during which no GPU activity ran.
type Gap struct {
	Start, End int64
	// HostWait is true when the op that ends the gap was launched at or
	// after the gap began (or nothing was queued at all): the GPU waited
	// for the CPU.
	HostWait bool
	// Next is the op that ends the gap, -1 for a trailing gap.
	Next int
}

// KernelStat is one kernel name's total over the steps.
type KernelStat struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
	Time  int64  `json:"time_ns"`
}

// Result is the analysis of one profile.
type Result struct {
	Profile *trace.Profile
	// Work is the steps' throughput and FLOPs (flops.go), aligned with
	// Steps; nil when neither is known.
	Work *WorkResult
	// HasGPU is false for profiles without any GPU activity or CUDA API
	// call; GPU metrics are then absent, never zero.
	HasGPU bool
	// WholeProfile is true when no step markers were found and the whole
	// profile is reported as one window.
	WholeProfile bool
	Steps        []Step
	// StepMethod says how the steps were found: StepsMarked (ranges
	// matching the step pattern), StepsOptimizer, StepsFSDP,
	// StepsAnnotation or StepsKernelPeriod (inferred, see infer.go), or
	// StepsWhole.
	StepMethod string
	// StepConfidence is 1 for marked steps; for inferred ones it is the
	// method's trust times the regularity of the steps (see infer.go); 0
	// for the whole profile.
	StepConfidence float64

	// Span of every event in the profile, and its totals.
	Start, End  int64
	Kernels     int
	MemcpyCount int
	MemsetCount int
	GPUBusy     int64

	// Gaps are the GPU idle intervals inside the steps' windows.
	Gaps []Gap
	// KernelStats sums, per kernel name, the kernels attributed to steps.
	KernelStats []KernelStat
	// Launch maps each GPU op (index in Profile.GPU) to its launching API
	// call (index in Profile.API), or -1.
	Launch []int32
	// PreCapture counts the GPU ops launched before the capture began
	// (correlation id below the process's first API call in the trace):
	// they belong to no step (see the package comment).
	PreCapture PreCaptureOps
	// OutsideSteps counts the GPU ops that belong to no step, kept or left
	// out, and were not launched before the capture: launched outside every
	// host window and starting outside every step window, or, for
	// kernel-period steps, launched outside them (a partial iteration
	// before the first inferred step or after the last, work after the
	// last optimizer step). With the steps, the left-out steps and
	// PreCapture they account for every GPU op of the profile exactly once
	// (docs/metrics.md, "Every GPU op is counted once").
	OutsideSteps OpCounts
	// OutsideWhere splits OutsideSteps' total by where the ops lie: before
	// the first step, between steps, after the last (by their launch call
	// against the host windows; without one, by their start against the
	// step windows).
	OutsideWhere [3]int

	// LeftOut are the steps left out at the edges of the profile (Trim):
	// every consumer of the result — summaries, findings, comparisons,
	// kernel lists, the stored analysis — sees only Steps.
	LeftOut []LeftOut

	// MemDevices holds, per step (same index as Steps), every device's
	// memory numbers from the trace's allocator events; nil without them.
	MemDevices [][]DeviceMemory

	Warnings []string

	stepRE     *regexp.Regexp
	preCapture []bool // per GPU op: launched before the capture; nil for none
	keep       [2]int // [lo, hi) of the steps Analyze keeps
	measured   [2]int // [lo, hi) of the steps Options.FirstStep and MaxSteps select
	stepThread int64
	dataName   string
	// loader: each host thread's data-loader ranges (sorted, disjoint),
	// where the work of a single-process DataLoader (its transforms'
	// operators) runs: not the model's work (work, more-work).
	loader     map[int64][]span
	syncRanges []struct{ thread, t int64 }
	stacks     map[int64][]stackFrame // Profile.Stack by thread, built on first use (sourceAt)
}

func (r *Result) isStep(name string) bool { return r.stepRE.MatchString(name) }

func (r *Result) warnf(format string, args ...any) {
	r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...))
}

// Analyze computes the per-step metrics of p. The profile's event lists must
// be sorted (trace.Profile.Sort); the readers do that.
func Analyze(p *trace.Profile, opt Options) *Result {
	opt = opt.withDefaults()
	// GPU metrics need GPU activity. CUDA API calls without any (CUPTI
	// buffers lost or not flushed, or activity tracing off) leave nothing
	// to measure busy time with: the metrics are absent, not zero.
	r := &Result{Profile: p, HasGPU: len(p.GPU) > 0}
	r.Warnings = append(r.Warnings, p.Warnings...)
	r.span()

	r.stepRE = opt.StepPattern
	hosts, thread := findSteps(p, opt.StepPattern)
	r.StepMethod, r.StepConfidence = StepsMarked, 1
	linked := false
	var inf inferred
	if len(hosts) == 0 {
		r.link()
		linked = true
		inf = r.inferSteps()
		hosts, thread, r.StepMethod = inf.hosts, inf.thread, inf.method
	}
	r.stepThread = thread
	// The measured steps are hosts[first : first+n]. The warm-up steps
	// before them and the steps after them stay steps, left out (trim):
	// their GPU ops are theirs, not outside every step, and the first
	// measured step's window starts where the warm-up's GPU work ends.
	first, n := 0, len(hosts)
	if opt.FirstStep > 0 && len(hosts) > 0 {
		first = min(opt.FirstStep, len(hosts)-1)
		n -= first
	}
	if opt.MaxSteps > 0 && n > opt.MaxSteps {
		n = opt.MaxSteps
	}
	if len(hosts) == 0 {
		r.WholeProfile = true
		r.StepMethod, r.StepConfidence = StepsWhole, 0
		r.warnf("no step markers matching %q: the whole profile is reported as one window; pass --step-pattern to name the iteration ranges", opt.StepPattern.String())
		hosts = []hostStep{{name: "(whole profile)", lo: r.Start, hi: r.End}}
	}
	switch launches := countLaunches(p); {
	case !r.HasGPU && launches > 0:
		r.warnf("%d CUDA kernel launches but no GPU activity in the trace (CUPTI activity buffers lost, or activity tracing off): GPU metrics are absent; data_wait is host time in data-loader ranges", launches)
	case !r.HasGPU:
		r.warnf("no GPU activity in the trace: GPU metrics are absent; data_wait is host time in data-loader ranges and sync_calls counts host sync operations")
	}
	r.Steps = make([]Step, len(hosts))
	for i, h := range hosts {
		r.Steps[i] = Step{Name: h.name, HostStart: h.lo, HostEnd: h.hi}
	}
	r.keep = [2]int{0, len(r.Steps)}
	if !r.WholeProfile {
		r.measured = [2]int{first, first + n}
		r.keep = r.measured
		if !opt.KeepEdges {
			lo, hi := trimBounds(n)
			r.keep = [2]int{first + lo, first + hi}
		}
	}

	if !linked {
		r.link()
	}
	opStep := r.windows()
	windows := make([]span, len(r.Steps))
	for i := range r.Steps {
		windows[i] = span{r.Steps[i].Start, r.Steps[i].End}
	}
	r.countOps(opStep)
	if !r.WholeProfile && inf.note != nil {
		r.warnf("no step markers matching %q: %d steps inferred from %s; pass --step-pattern to name the iteration ranges", opt.StepPattern.String(), len(r.Steps), inf.note(r.Steps))
	}
	r.warnOutside()

	data, dataName := dataRanges(p, opt.DataPattern)
	r.dataName = dataName
	r.loader = loaderByThread(p, opt.DataPattern)
	r.hostCalls(opt, data, windows)
	if r.HasGPU {
		r.gpuMetrics(opt, opStep, windows, data)
	} else {
		for i, d := range perWindow(data, windows) {
			r.Steps[i].DataWait = d
		}
	}
	if !r.WholeProfile && r.StepMethod != StepsMarked {
		r.StepConfidence = r.stepConfidence(inf.trust)
		// Two loops with the same kernels but different step times: mixed
		// evidence (phaseSteps names phases of different kernels itself).
		if r.StepMethod == StepsKernelPeriod && !inf.phases && r.timePhases() {
			r.StepConfidence *= 0.5
		}
	}
	r.trim()
	r.Work = r.work(opt.Work)
	r.memory()
	return r
}

// LeftOut is a step left out of the analysis, and why, with its GPU ops.
type LeftOut struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
	// The step's window [s0, s1) and host window [h0, h1), as a kept
	// step's: the first kept step starts where the warm-up's window ends.
	Start     int64 `json:"start_ns"`
	End       int64 `json:"end_ns"`
	HostStart int64 `json:"host_start_ns"`
	HostEnd   int64 `json:"host_end_ns"`
	StepTime  int64 `json:"step_time_ns"`
	OpCounts        // the step's GPU ops: kernels, memcpy, memset
}

// leftOut describes step s, left out for why.
func leftOut(s *Step, why string) LeftOut {
	return LeftOut{Name: s.Name, Reason: why, Start: s.Start, End: s.End, HostStart: s.HostStart, HostEnd: s.HostEnd, StepTime: s.StepTime(), OpCounts: s.Ops()}
}

// Trim returns the steps that Analyze keeps out of n: the edges of a
// profile's steps are left out. The last step closes torch.profiler's
// active window and carries the trace stop, or is truncated (HTA drops it
// by default); the first measured step often still does one-time work. On
// the real fixtures: the V100 ResNet-50 num_workers=4 capture's first and
// last steps take 170 and 203 ms against a median of 123 ms. (The A100
// rank-0 trace's first step looked like one-time work, 1,780 kernels in
// 372 ms against 1,075 in 216 ms, but 705 of those kernels were launched
// before the capture began and now belong to no step: the step launches
// the same 1,075 kernels as the others, and its window still runs while the
// earlier work drains.) From 4 steps the last is left out, from 5 the first
// too.
func Trim(n int) (lo, hi int) { return trimBounds(n) }

// LeftOutStep describes step s, left out of the analysis for why.
func LeftOutStep(s *Step, why string) LeftOut { return leftOut(s, why) }

func trimBounds(n int) (lo, hi int) {
	switch {
	case n >= 5:
		return 1, n - 1
	case n == 4:
		return 0, 3
	}
	return 0, n
}

// trim leaves out the steps outside r.keep, and the gaps and sync ranges
// that lie in them. Kernel statistics were gathered over the kept steps
// only.
func (r *Result) trim() {
	lo, hi := r.keep[0], r.keep[1]
	if lo == 0 && hi == len(r.Steps) {
		return
	}
	for i := range r.Steps {
		var why string
		switch {
		case i < r.measured[0]:
			why = "warm-up step (warmup_steps)"
		case i >= r.measured[1]:
			why = "after the measured steps (measure_steps)"
		case i < lo:
			why = "first step: one-time work (warm-up)"
		case i >= hi:
			why = "last step: closes the capture"
		default:
			continue
		}
		r.LeftOut = append(r.LeftOut, leftOut(&r.Steps[i], why))
	}
	start, end := r.Steps[lo].Start, r.Steps[hi-1].End
	gaps := r.Gaps[:0]
	for _, g := range r.Gaps {
		if g.End <= start || g.Start >= end {
			continue
		}
		g.Start, g.End = max(g.Start, start), min(g.End, end)
		gaps = append(gaps, g)
	}
	r.Gaps = gaps
	hs, he := r.Steps[lo].HostStart, r.Steps[hi-1].HostEnd
	syncs := r.syncRanges[:0]
	for _, s := range r.syncRanges {
		if s.t >= hs && s.t < he {
			syncs = append(syncs, s)
		}
	}
	r.syncRanges = syncs
	r.Steps = r.Steps[lo:hi:hi]
}

// countLaunches counts the kernel launch calls in the profile.
func countLaunches(p *trace.Profile) int {
	isLaunch := make([]int8, p.Names.Len()) // 0 unknown, 1 launch, 2 other
	n := 0
	for i := range p.API {
		k := isLaunch[p.API[i].Name]
		if k == 0 {
			k = 2
			if launchAPI(p.Names.String(p.API[i].Name)) {
				k = 1
			}
			isLaunch[p.API[i].Name] = k
		}
		if k == 1 {
			n++
		}
	}
	return n
}

type hostStep struct {
	name   string
	lo, hi int64
}

// findSteps returns the outermost ranges matching re on the thread that has
// most of them, in time order, made disjoint.
func findSteps(p *trace.Profile, re *regexp.Regexp) ([]hostStep, int64) {
	match := p.Names.Match(re)
	perThread := map[int64]int{}
	for i := range p.Ranges {
		if match[p.Ranges[i].Name] {
			perThread[p.Ranges[i].Thread]++
		}
	}
	best, bestN := int64(0), 0
	for t, n := range perThread {
		if n > bestN || n == bestN && t < best {
			best, bestN = t, n
		}
	}
	var out []hostStep
	for i := range p.Ranges {
		rg := &p.Ranges[i]
		if !match[rg.Name] || rg.Thread != best {
			continue
		}
		lo := rg.Start
		if n := len(out); n > 0 {
			if rg.End <= out[n-1].hi {
				continue // nested inside the previous step
			}
			lo = max(lo, out[n-1].hi)
		}
		out = append(out, hostStep{name: p.Names.String(rg.Name), lo: lo, hi: rg.End})
	}
	return out, best
}

// span sets the profile-wide extent and totals.
func (r *Result) span() {
	p := r.Profile
	first := true
	add := func(lo, hi int64) {
		if first {
			r.Start, r.End, first = lo, hi, false
			return
		}
		r.Start, r.End = min(r.Start, lo), max(r.End, hi)
	}
	for i := range p.GPU {
		add(p.GPU[i].Start, p.GPU[i].End)
		switch p.GPU[i].Kind {
		case trace.Kernel:
			r.Kernels++
		case trace.Memcpy:
			r.MemcpyCount++
		case trace.Memset:
			r.MemsetCount++
		}
	}
	for i := range p.API {
		add(p.API[i].Start, p.API[i].End)
	}
	for i := range p.Ranges {
		add(p.Ranges[i].Start, p.Ranges[i].End)
	}
}

// link finds each GPU op's launching API call by correlation id and process.
func (r *Result) link() {
	p := r.Profile
	r.Launch = make([]int32, len(p.GPU))
	var maxCorr int64
	minCorr := int64(math.MaxInt64)
	for i := range p.API {
		if c := p.API[i].Corr; c > 0 {
			maxCorr, minCorr = max(maxCorr, c), min(minCorr, c)
		}
	}
	// Correlation ids are small, dense counters in practice: index a slice
	// by them. Ids in a few dense blocks far apart (a long trace, merged
	// or generated traces) go through a paged table; scattered ids fall
	// back to a map.
	var dense []int32
	var paged *pagedIndex
	var byCorr map[uint64]int32
	if maxCorr < int64(4*len(p.API)+1<<20) {
		dense = make([]int32, maxCorr+1)
		for i := range p.API {
			if c := p.API[i].Corr; c > 0 {
				dense[c] = int32(i) + 1 // 0 means none
			}
		}
	} else if paged = newPagedIndex(p.API, minCorr, maxCorr); paged == nil {
		byCorr = make(map[uint64]int32, len(p.API))
		for i := range p.API {
			if c := p.API[i].Corr; c > 0 {
				byCorr[corrKey(p.API[i].Process, c)] = int32(i)
			}
		}
	}
	// The first correlation id each process's API calls show: an op with
	// a smaller one was launched before the capture.
	firstCorr := map[int32]int64{}
	for i := range p.API {
		if c := p.API[i].Corr; c > 0 {
			if f, ok := firstCorr[p.API[i].Process]; !ok || c < f {
				firstCorr[p.API[i].Process] = c
			}
		}
	}
	unlinked := 0
	for i := range p.GPU {
		r.Launch[i] = -1
		op := &p.GPU[i]
		a := int32(-1)
		switch c := op.Corr; {
		case c <= 0:
		case dense != nil:
			if c < int64(len(dense)) {
				a = dense[c] - 1
			}
		case paged != nil:
			a = paged.get(c)
		default:
			if j, ok := byCorr[corrKey(op.Process, c)]; ok {
				a = j
			}
		}
		// correlationId is unique only within a process.
		if a >= 0 && p.API[a].Process == op.Process {
			r.Launch[i] = a
			continue
		}
		if f, ok := firstCorr[op.Process]; ok && op.Corr > 0 && op.Corr < f {
			if r.preCapture == nil {
				r.preCapture = make([]bool, len(p.GPU))
			}
			r.preCapture[i] = true
			r.PreCapture.add(op.Kind)
			continue
		}
		unlinked++
	}
	if n := r.PreCapture.Total(); n > 0 {
		r.warnf("%d GPU ops (%d kernels, %d copies, %d memsets) were launched before the capture began (correlation id below the first API call in the trace): they belong to no step and count in no step's metrics (pre_capture)",
			n, r.PreCapture.Kernels, r.PreCapture.Memcpy, r.PreCapture.Memset)
	}
	if unlinked > 0 && len(p.API) > 0 {
		r.warnf("%d of %d GPU ops have no launching API call in the trace; they are attributed to steps by their start time", unlinked, len(p.GPU))
	}
}

// OpCounts counts GPU ops by kind.
type OpCounts struct {
	Kernels int `json:"kernels"`
	Memcpy  int `json:"memcpy"`
	Memset  int `json:"memset"`
}

// PreCaptureOps counts GPU ops launched before the capture, by kind.
type PreCaptureOps = OpCounts

// Total is the number of ops of every kind.
func (c OpCounts) Total() int { return c.Kernels + c.Memcpy + c.Memset }

// add counts one op of kind k.
func (c *OpCounts) add(k trace.Kind) {
	switch k {
	case trace.Kernel:
		c.Kernels++
	case trace.Memcpy:
		c.Memcpy++
	case trace.Memset:
		c.Memset++
	}
}

// Plus is the sum of c and d.
func (c OpCounts) Plus(d OpCounts) OpCounts {
	return OpCounts{c.Kernels + d.Kernels, c.Memcpy + d.Memcpy, c.Memset + d.Memset}
}

// countOps counts each step's GPU ops by kind, and the ops outside every
// step (neither a step's nor launched before the capture), with where
// they start.
func (r *Result) countOps(opStep []int32) {
	p := r.Profile
	for i := range p.GPU {
		op := &p.GPU[i]
		if st := opStep[i]; st >= 0 {
			s := &r.Steps[st]
			switch op.Kind {
			case trace.Kernel:
				s.Kernels++
			case trace.Memcpy:
				s.Memcpys++
			case trace.Memset:
				s.Memsets++
			}
			continue
		}
		if r.isPreCapture(i) {
			continue
		}
		r.OutsideSteps.add(op.Kind)
		// Where: by its launch against the host windows, which is what
		// left it out; without a launch call, by its start against the
		// step windows.
		t, first, last := op.Start, int64(0), int64(0)
		if n := len(r.Steps); n > 0 {
			first, last = r.Steps[0].Start, r.Steps[n-1].End
		}
		if a := r.Launch[i]; a >= 0 && len(r.Steps) > 0 {
			t, first, last = p.API[a].Start, r.Steps[0].HostStart, r.Steps[len(r.Steps)-1].HostEnd
		}
		switch {
		case len(r.Steps) == 0 || t < first:
			r.OutsideWhere[0]++
		case t >= last:
			r.OutsideWhere[2]++
		default:
			r.OutsideWhere[1]++
		}
	}
}

// warnOutside says how many GPU ops are in no step, and where.
func (r *Result) warnOutside() {
	o := r.OutsideSteps
	if o.Total() == 0 {
		return
	}
	r.warnf("%d GPU ops (%d kernels, %d copies, %d memsets) are in no step: %d before the first step, %d between steps, %d after the last (e.g. a partial iteration before the first inferred step or after the last); they count in no step's metrics (outside_steps)",
		o.Total(), o.Kernels, o.Memcpy, o.Memset, r.OutsideWhere[0], r.OutsideWhere[1], r.OutsideWhere[2])
}

// isPreCapture reports whether GPU op i was launched before the capture.
func (r *Result) isPreCapture(i int) bool { return r.preCapture != nil && r.preCapture[i] }

// pagedIndex maps correlation ids in [lo, hi] to API call indexes through
// pages of 4096 slots allocated where ids occur. On the 2.2 M-event
// benchmark trace (20 blocks of 112 k ids spread over 18 M) it replaced a
// map that cost a third of the analysis.
type pagedIndex struct {
	lo    int64
	pages [][]int32 // slot value: API index + 1, 0 for none
}

const corrPageBits = 12

// newPagedIndex indexes the API calls' correlation ids, or returns nil when
// the ids are too scattered for pages to pay (more page slots than 8 per
// call, or more pages in the directory than calls), or when one id is used by calls of two processes: only the map, keyed by
// process too, keeps both.
func newPagedIndex(api []trace.APICall, lo, hi int64) *pagedIndex {
	npages := (hi-lo)>>corrPageBits + 1
	if npages > int64(len(api))+1<<12 {
		return nil
	}
	x := &pagedIndex{lo: lo, pages: make([][]int32, npages)}
	used, budget := 0, 8*len(api)+1<<16
	for i := range api {
		c := api[i].Corr
		if c <= 0 {
			continue
		}
		k := c - lo
		pg := x.pages[k>>corrPageBits]
		if pg == nil {
			if used += 1 << corrPageBits; used > budget {
				return nil
			}
			pg = make([]int32, 1<<corrPageBits)
			x.pages[k>>corrPageBits] = pg
		}
		slot := &pg[k&(1<<corrPageBits-1)]
		if *slot != 0 && api[*slot-1].Process != api[i].Process {
			return nil
		}
		*slot = int32(i) + 1
	}
	return x
}

// get returns the index of the last API call with correlation id c, or -1.
func (x *pagedIndex) get(c int64) int32 {
	k := c - x.lo
	if k < 0 || k>>corrPageBits >= int64(len(x.pages)) {
		return -1
	}
	pg := x.pages[k>>corrPageBits]
	if pg == nil {
		return -1
	}
	return pg[k&(1<<corrPageBits-1)] - 1
}

// stepAt returns the index of the step whose host window holds t, or -1.
func (r *Result) stepAt(t int64) int {
	i, _ := slices.BinarySearchFunc(r.Steps, t, func(s Step, t int64) int {
		return cmp.Compare(s.HostStart, t)
	})
	// i is the first step with HostStart >= t.
	if i < len(r.Steps) && r.Steps[i].HostStart == t {
		return i
	}
	if i > 0 && t < r.Steps[i-1].HostEnd {
		return i - 1
	}
	return -1
}

// windowAt returns the index of the step whose window [s0, s1) holds t, or -1.
func (r *Result) windowAt(t int64) int {
	i, _ := slices.BinarySearchFunc(r.Steps, t, func(s Step, t int64) int {
		return cmp.Compare(s.Start, t)
	})
	if i < len(r.Steps) && r.Steps[i].Start == t && r.Steps[i].End > t {
		return i
	}
	if i > 0 && t < r.Steps[i-1].End {
		return i - 1
	}
	return -1
}

// windows assigns GPU ops to steps and sets every step's [s0, s1).
// It returns the step of each GPU op, -1 for none.
func (r *Result) windows() []int32 {
	p := r.Profile
	opStep := make([]int32, len(p.GPU))
	lastEnd := make([]int64, len(r.Steps))
	for i := range r.Steps {
		lastEnd[i] = r.Steps[i].HostEnd
	}
	for i := range p.GPU {
		opStep[i] = -1
		if a := r.Launch[i]; a >= 0 {
			if s := r.stepAt(p.API[a].Start); s >= 0 {
				opStep[i] = int32(s)
				lastEnd[s] = max(lastEnd[s], p.GPU[i].End)
			}
		}
	}
	var prev int64
	for i := range r.Steps {
		s := &r.Steps[i]
		s.Start, s.End = s.HostStart, lastEnd[i]
		if i > 0 {
			s.Start = max(s.Start, prev)
		}
		s.End = max(s.End, s.Start)
		prev = s.End
	}
	// Kernel-period steps are cut at launches: an op launched outside them
	// is a partial iteration, which is no step's (infer.go). Otherwise an
	// op launched between host windows, or without a launch call, goes to
	// the window it starts in.
	byStart := r.StepMethod != StepsKernelPeriod
	for i := range p.GPU {
		if opStep[i] < 0 && !r.isPreCapture(i) && (byStart || r.Launch[i] < 0) {
			opStep[i] = int32(r.windowAt(p.GPU[i].Start))
		}
	}
	return opStep
}

// syncAPI reports whether a CUDA/HIP API call blocks the host until the
// device catches up (trace.SyncAPI: version and per-thread-stream suffixes
// such as _v3020, _ptsz and _ptds are ignored).
func syncAPI(name string) bool { return trace.SyncAPI(name) }

// launchAPI reports whether an API call launches a kernel or a graph
// (trace.LaunchAPI).
func launchAPI(name string) bool { return trace.LaunchAPI(name) }

// hostCalls counts sync calls and launch statistics per step. A step's
// sync calls are those that start in its host window [h0, h1); their time
// is the union of their host intervals clipped to the step's window
// [s0, s1), so that it never exceeds the step time: a call at h0 that waits
// for the previous step's GPU work (which ends at s0 > h0) spends part of
// its time before the window, and calls on two threads at once count once.
func (r *Result) hostCalls(opt Options, data []span, windows []span) {
	p := r.Profile
	syncs := make([][]span, len(r.Steps)) // per step, sorted by start
	defer func() {
		for i, in := range syncs {
			r.Steps[i].SyncTime = perWindow(unionSorted(in), windows[i:i+1])[0]
		}
	}()
	if len(p.API) == 0 {
		// Without a GPU the Dataset's own tensor code runs inside the
		// data-loader ranges when num_workers=0; its .item() calls are CPU
		// work, not device syncs, so only syncs outside them count.
		proxy := p.Names.Match(opt.SyncProxyPattern)
		for i := range p.Ranges {
			rg := &p.Ranges[i]
			if !proxy[rg.Name] || inSpans(data, rg.Start) {
				continue
			}
			if s := r.stepAt(rg.Start); s >= 0 {
				r.Steps[s].SyncCalls++
				syncs[s] = append(syncs[s], span{rg.Start, rg.End})
				r.syncRanges = append(r.syncRanges, struct{ thread, t int64 }{rg.Thread, rg.Start})
			}
		}
		return
	}
	isSync := make([]int8, p.Names.Len()) // 0 unknown, 1 sync, 2 launch, 3 other
	launchDur := make([][]int64, len(r.Steps))
	for i := range p.API {
		a := &p.API[i]
		k := isSync[a.Name]
		if k == 0 {
			name := p.Names.String(a.Name)
			switch {
			case syncAPI(name):
				k = 1
			case launchAPI(name):
				k = 2
			default:
				k = 3
			}
			isSync[a.Name] = k
		}
		if k == 3 {
			continue
		}
		s := r.stepAt(a.Start)
		if s < 0 {
			continue
		}
		if k == 1 {
			r.Steps[s].SyncCalls++
			syncs[s] = append(syncs[s], span{a.Start, a.End})
		} else {
			launchDur[s] = append(launchDur[s], a.End-a.Start)
		}
	}
	for i, d := range launchDur {
		r.Steps[i].Launches = len(d)
		if len(d) > 0 {
			slices.Sort(d)
			r.Steps[i].LaunchOverhead = medianSorted(d)
		}
	}
}

// inSpans reports whether t lies in one of the sorted, disjoint spans.
func inSpans(spans []span, t int64) bool {
	i, _ := slices.BinarySearchFunc(spans, t, func(s span, t int64) int { return cmp.Compare(s.lo, t) })
	if i < len(spans) && spans[i].lo == t {
		return true
	}
	return i > 0 && t < spans[i-1].hi
}

func medianSorted(d []int64) int64 {
	n := len(d)
	if n%2 == 1 {
		return d[n/2]
	}
	return (d[n/2-1] + d[n/2]) / 2
}

// dataRanges is the union of data-loader ranges on any host thread, and
// the most common of their names.
func dataRanges(p *trace.Profile, re *regexp.Regexp) ([]span, string) {
	match := p.Names.Match(re)
	var in []span
	count := map[trace.Name]int{}
	for i := range p.Ranges {
		if match[p.Ranges[i].Name] {
			in = append(in, span{p.Ranges[i].Start, p.Ranges[i].End})
			count[p.Ranges[i].Name]++
		}
	}
	var best trace.Name
	for n, c := range count {
		if c > count[best] || c == count[best] && n < best {
			best = n
		}
	}
	return unionSorted(in), p.Names.String(best) // Ranges are sorted by start
}

// loaderByThread are the data-loader ranges of each host thread.
func loaderByThread(p *trace.Profile, re *regexp.Regexp) map[int64][]span {
	match := p.Names.Match(re)
	by := map[int64][]span{}
	for i := range p.Ranges {
		if match[p.Ranges[i].Name] {
			by[p.Ranges[i].Thread] = append(by[p.Ranges[i].Thread], span{p.Ranges[i].Start, p.Ranges[i].End})
		}
	}
	for t, in := range by {
		by[t] = unionSorted(in) // Ranges are sorted by start
	}
	return by
}

// inLoader: t lies in one of thread's data-loader ranges.
func (r *Result) inLoader(thread, t int64) bool {
	in := r.loader[thread]
	i, _ := slices.BinarySearchFunc(in, t, func(s span, t int64) int { return cmp.Compare(s.lo, t) })
	// in[i-1] is the last range starting at or before t (or in[i] starts at t).
	if i < len(in) && in[i].lo == t {
		return true
	}
	return i > 0 && t < in[i-1].hi
}

func (r *Result) gpuMetrics(opt Options, opStep []int32, windows []span, data []span) {
	p := r.Profile
	comm := p.Names.Match(opt.CommPattern)
	kern := map[trace.Name]*KernelStat{}
	nComm := 0
	for i := range p.GPU {
		if p.GPU[i].Kind == trace.Kernel && comm[p.GPU[i].Name] {
			nComm++
		}
	}
	if nComm == 0 && p.WorldSize > 1 {
		r.warnf("the trace says world size %d but no kernel matches the communication pattern, so comm_time and exposed_comm are 0; if the job communicates through kernels the pattern does not know, name them with comm_pattern in perf.yaml or -comm-pattern (docs/metrics.md lists the kernels recognized by default)", p.WorldSize)
	}
	// A step's busy, compute, communication and copy time are unions of
	// its own ops only (ops attributed to it), clipped to its window: an op
	// of another step, of no step or launched before the capture that runs
	// in the window is not the step's work. The gaps below are the
	// device's idle time, so they use every op.
	type own struct{ all, compute, comm, copies []span }
	per := make([]own, len(r.Steps))
	all := make([]span, 0, len(p.GPU))
	for i := range p.GPU {
		op := &p.GPU[i]
		sp := span{op.Start, op.End}
		all = append(all, sp)
		st := opStep[i]
		if st < 0 {
			continue
		}
		o := &per[st]
		o.all = append(o.all, sp)
		switch {
		case op.Kind == trace.Memcpy:
			o.copies = append(o.copies, sp)
		case op.Kind == trace.Kernel && comm[op.Name]:
			o.comm = append(o.comm, sp)
		default:
			o.compute = append(o.compute, sp)
		}
		step := &r.Steps[st]
		switch op.Kind {
		case trace.Kernel:
			if int(st) < r.keep[0] || int(st) >= r.keep[1] {
				break // a step left out: not in the kernel statistics
			}
			k := kern[op.Name]
			if k == nil {
				k = &KernelStat{Name: p.Names.String(op.Name)}
				kern[op.Name] = k
			}
			k.Count++
			k.Time += op.End - op.Start
		case trace.Memcpy:
			var c *Copies
			switch op.Copy {
			case trace.HtoD:
				c = &step.H2D
			case trace.DtoH:
				c = &step.D2H
			case trace.DtoD, trace.PtoP:
				c = &step.D2D
			default:
				continue
			}
			c.Count++
			c.Bytes += op.Bytes
			c.Time += op.End - op.Start
			if op.Src == trace.Pageable || op.Dst == trace.Pageable {
				c.Pageable++
			}
		}
	}
	for _, k := range kern {
		r.KernelStats = append(r.KernelStats, *k)
	}
	slices.SortFunc(r.KernelStats, func(a, b KernelStat) int { return cmp.Or(cmp.Compare(b.Time, a.Time), cmp.Compare(a.Name, b.Name)) })
	busy := unionSorted(all)
	r.GPUBusy = total(busy)
	for i := range r.Steps {
		s, o, w := &r.Steps[i], &per[i], windows[i:i+1]
		in := func(x []span) int64 { return perWindow(x, w)[0] }
		compute, commU, copies := unionSorted(o.compute), unionSorted(o.comm), unionSorted(o.copies)
		s.GPUBusy = in(unionSorted(o.all))
		s.Compute, s.CommTime = in(compute), in(commU)
		s.ExposedComm = in(subtract(commU, compute))
		s.ExposedCopy = in(subtract(subtract(copies, compute), commU))
	}

	r.Gaps = make([]Gap, 0, len(busy)+1) // at most one gap per island, and a last one
	r.gaps(windows)
	var wait []span
	for _, g := range r.Gaps {
		if g.HostWait {
			wait = append(wait, span{g.Start, g.End})
		}
	}
	for i, w := range perWindow(wait, windows) {
		r.Steps[i].CPUWait = w
	}
	for i, d := range perWindow(intersect(wait, data), windows) {
		r.Steps[i].DataWait = d
	}
	r.shortKernels(opStep)
}

// gaps finds the idle intervals between busy islands inside the steps'
// windows and classifies them (DESIGN.md, cpu_wait; HTA's "host wait").
func (r *Result) gaps(windows []span) {
	if len(windows) == 0 {
		return
	}
	p := r.Profile
	lo, hi := windows[0].lo, windows[len(windows)-1].hi
	// hostWait reports whether the ops starting at p.GPU[i].Start (the end
	// of a gap that began at g0) were all launched at or after g0.
	hostWait := func(g0 int64, i int) bool {
		t := p.GPU[i].Start
		linked := false
		for ; i < len(p.GPU) && p.GPU[i].Start == t; i++ {
			a := r.Launch[i]
			if a < 0 {
				continue
			}
			linked = true
			if p.API[a].Start < g0 {
				return false
			}
		}
		return linked
	}
	prevEnd := lo
	for i := range p.GPU {
		op := &p.GPU[i]
		if op.End <= op.Start || op.End <= lo {
			continue
		}
		if op.Start >= hi {
			break
		}
		if op.Start > prevEnd {
			r.Gaps = append(r.Gaps, Gap{Start: prevEnd, End: op.Start, HostWait: hostWait(prevEnd, i), Next: i})
		}
		prevEnd = max(prevEnd, op.End)
	}
	if prevEnd < hi {
		// Nothing runs until the end of the last window: nothing was queued,
		// so the GPU waited for the host.
		r.Gaps = append(r.Gaps, Gap{Start: prevEnd, End: hi, HostWait: true, Next: -1})
	}
}

func (r *Result) shortKernels(opStep []int32) {
	p := r.Profile
	short := make([]int, len(r.Steps))
	launched := make([]int, len(r.Steps))
	for i := range p.GPU {
		op := &p.GPU[i]
		a := r.Launch[i]
		if op.Kind != trace.Kernel || a < 0 || opStep[i] < 0 {
			continue
		}
		launched[opStep[i]]++
		if op.End-op.Start < p.API[a].End-p.API[a].Start {
			short[opStep[i]]++
		}
	}
	for i := range r.Steps {
		if launched[i] > 0 {
			r.Steps[i].ShortKernels = float64(short[i]) / float64(launched[i])
		}
	}
}

func corrKey(proc int32, corr int64) uint64 {
	return uint64(uint32(proc))<<40 ^ uint64(corr)
}
