package analysis

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/trace"
)

// Finding is one diagnosis of why steps are slow: what the trace shows, in
// numbers, and the fix an expert would try first.
type Finding struct {
	ID         string   `json:"id"`       // e.g. "data-loader-bound"
	Severity   string   `json:"severity"` // "high" or "medium"
	Summary    string   `json:"summary"`
	Evidence   string   `json:"evidence"`
	Suggestion string   `json:"suggestion"`
	Culprits   []string `json:"culprits,omitempty"` // what the trace names as the cause
	// Share is the part of the median step time the cause accounts for,
	// used to rank findings.
	Share float64 `json:"share"`
}

// Thresholds of the finding rules, in one table. Shares are fractions of
// the median step time. DESIGN.md gave the starting points; the notes say
// what each is checked against on the real fixtures.
var Thresholds = struct {
	DataWaitShare    float64 // data-loader-bound: data_wait ≥ this share of the step
	CPUWaitShare     float64 // data-loader-bound, second form: cpu_wait ≥ this share of the step ...
	DataOfWait       float64 // ... and data-loader ranges active during at least this share of it
	SyncPerStep      float64 // host-sync: at least this many blocking calls per step (median) ...
	SyncTimeShare    float64 // ... blocking the host at least this share of the step (GPU profiles)
	ShortKernels     float64 // launch-bound: share of kernels shorter than their launch call
	LaunchMaxUtil    float64 // launch-bound: only below this GPU utilization
	LaunchMinKernels float64 // launch-bound: only with at least this many kernels per step, and host wait outside the data loader ≥ CPUWaitShare
	ExposedCopyShare float64 // memcpy-bound: exposed copy time ≥ this share
	ExposedCommShare float64 // comm-bound: exposed communication ≥ this share
	LowUtil          float64 // low-utilization: gpu_util below this, no more specific cause
	HighFactor       float64 // severity "high" when the share is this many times the threshold
}{
	DataWaitShare:    0.05,
	CPUWaitShare:     0.10,
	DataOfWait:       0.25,
	SyncPerStep:      1,
	SyncTimeShare:    0.02,
	ShortKernels:     0.5,
	LaunchMaxUtil:    0.7,
	LaunchMinKernels: 50,
	ExposedCopyShare: 0.10,
	ExposedCommShare: 0.10,
	LowUtil:          0.5,
	HighFactor:       2,
}

func (r *Result) median(name string) float64 {
	m, _ := MetricByName(name)
	return Summarize(r.Samples(m)).Median
}

func severity(share, threshold float64) string {
	if share >= Thresholds.HighFactor*threshold {
		return "high"
	}
	return "medium"
}

func pct(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }

// Findings runs the rules on the profile's median step.
func (r *Result) Findings() []Finding {
	if len(r.Steps) == 0 {
		return nil
	}
	step := r.median("step_time")
	if step <= 0 {
		return nil
	}
	var out []Finding
	dataShare := r.median("data_wait") / step
	if r.HasGPU {
		idle := r.median("gpu_idle")
		wait := r.median("cpu_wait")
		if dataShare >= Thresholds.DataWaitShare || (wait/step >= Thresholds.CPUWaitShare && safeDiv(r.median("data_wait"), wait) >= Thresholds.DataOfWait) {
			f := Finding{
				ID: "data-loader-bound", Severity: severity(dataShare, Thresholds.DataWaitShare), Share: dataShare,
				Summary: fmt.Sprintf("the GPU waits for the data loader: %.1f ms of the median %.1f ms step", r.median("data_wait"), step),
				Evidence: fmt.Sprintf("GPU idle %s of each step (%.1f ms), %.1f ms of it waiting for the host; the host is inside the data loader (%s) during %s of that idle time",
					pct(idle/step), idle, wait, r.dataRangeName(), pct(safeDiv(r.median("data_wait"), idle))),
				Suggestion: "raise DataLoader num_workers, set pin_memory=True and persistent_workers=True, tune prefetch_factor; move augmentation to the GPU (e.g. DALI)",
			}
			out = append(out, f)
		}
	} else if dataShare >= Thresholds.DataWaitShare {
		out = append(out, Finding{
			ID: "data-loader-bound", Severity: severity(dataShare, Thresholds.DataWaitShare), Share: dataShare,
			Summary:    fmt.Sprintf("the training loop waits for the data loader: %.1f ms of the median %.1f ms step", r.median("data_wait"), step),
			Evidence:   fmt.Sprintf("the main thread is inside the data loader (%s) for %s of each step; with a GPU this time would leave it idle", r.dataRangeName(), pct(dataShare)),
			Suggestion: "raise DataLoader num_workers, set pin_memory=True and persistent_workers=True, tune prefetch_factor; make __getitem__ cheaper or move augmentation to the GPU",
		})
	}

	// On a GPU a sync that costs no time is harmless; without one, the time
	// means nothing and the sync points themselves are the finding. When
	// comparing, package gate raises it whenever syncs are new or more
	// frequent, whatever their cost (SyncFinding).
	if syncs, st := r.median("sync_calls"), r.median("sync_time"); syncs >= Thresholds.SyncPerStep && (!r.HasGPU || st/step >= Thresholds.SyncTimeShare) {
		if f := r.SyncFinding(); f != nil {
			out = append(out, *f)
		}
	}
	if f := r.memoryFinding(); f != nil {
		out = append(out, *f)
	}
	if !r.HasGPU {
		return rank(out)
	}

	util := r.median("gpu_util")
	kernels := r.median("kernels")
	// Host wait that the data loader does not explain is what launching
	// costs when kernels are shorter than their launches.
	launchWait := math.Max(0, r.median("cpu_wait")-r.median("data_wait")) / step
	if short := r.median("short_kernels"); short >= Thresholds.ShortKernels && util < Thresholds.LaunchMaxUtil &&
		kernels >= Thresholds.LaunchMinKernels && launchWait >= Thresholds.CPUWaitShare {
		share := launchWait
		out = append(out, Finding{
			ID: "launch-bound", Severity: severity(short, Thresholds.ShortKernels), Share: share,
			Summary: fmt.Sprintf("%.0f kernels per step, %s of them shorter than their launch", kernels, pct(short)),
			Evidence: fmt.Sprintf("median launch call %.1f µs; GPU utilization %s; the host launches kernels no faster than the GPU runs them",
				r.median("launch_overhead"), pct(util)),
			Suggestion: "fuse small ops: torch.compile, CUDA graphs (torch.cuda.graphs / mode=\"reduce-overhead\"), fused optimizers (foreach=True, fused=True), larger batches",
		})
	}
	if ec := r.median("exposed_copy"); ec/step >= Thresholds.ExposedCopyShare || (r.median("memcpy_pageable") > 0 && r.median("memcpy_h2d_count") > 0 && ec/step >= Thresholds.ExposedCopyShare/2) {
		share := ec / step
		out = append(out, Finding{
			ID: "memcpy-bound", Severity: severity(share, Thresholds.ExposedCopyShare), Share: share,
			Summary:    fmt.Sprintf("copies the GPU does not overlap take %.1f ms of each step", ec),
			Evidence:   fmt.Sprintf("exposed memcpy %s of the step; %.0f H2D (%.1f MB) and %.0f D2H copies per step, %.0f of them from or to pageable memory", pct(share), r.median("memcpy_h2d_count"), r.median("memcpy_h2d_bytes"), r.median("memcpy_d2h_count"), r.median("memcpy_pageable")),
			Suggestion: "pin host memory (pin_memory=True) and copy with non_blocking=True; batch small copies; keep tensors on the GPU between steps",
		})
	}
	if ec := r.median("exposed_comm"); ec/step >= Thresholds.ExposedCommShare {
		share := ec / step
		out = append(out, Finding{
			ID: "comm-bound", Severity: severity(share, Thresholds.ExposedCommShare), Share: share,
			Summary:    fmt.Sprintf("communication not hidden behind compute takes %.1f ms of each step", ec),
			Evidence:   fmt.Sprintf("communication kernels run %.1f ms per step, %.1f ms (%s of the step) with no compute beside them", r.median("comm_time"), ec, pct(share)),
			Suggestion: "overlap communication with backward: DDP bucket_cap_mb, static_graph=True, gradient accumulation (no_sync), FSDP prefetching; check for a straggler rank",
		})
	}
	if len(out) == 0 && util < Thresholds.LowUtil {
		share := 1 - util
		f := Finding{
			ID: "low-utilization", Severity: severity(1-util, 1-Thresholds.LowUtil), Share: share,
			Summary:    fmt.Sprintf("the GPU is busy only %s of each step", pct(util)),
			Suggestion: "look at the timeline around the idle gaps listed here",
			Culprits:   r.topGaps(3),
		}
		f.Evidence = fmt.Sprintf("GPU idle %.1f ms per step, %.1f ms of it waiting for the host to launch work", r.median("gpu_idle"), r.median("cpu_wait"))
		if len(f.Culprits) > 0 {
			f.Evidence += "; largest gaps: " + strings.Join(f.Culprits, "; ")
		}
		out = append(out, f)
	}
	return rank(out)
}

// SyncFinding is the host-sync finding for the profile's median step,
// whatever the syncs cost, or, when the median step has none, for the mean
// of the steps; nil when no step has a sync call.
func (r *Result) SyncFinding() *Finding {
	if len(r.Steps) == 0 {
		return nil
	}
	step := r.median("step_time")
	syncs, st := r.median("sync_calls"), r.median("sync_time")
	summary := fmt.Sprintf("%.0f blocking host sync(s) per step", syncs)
	if syncs <= 0 {
		// Syncs in fewer than half of the steps (every 3rd: logging,
		// a periodic .item()) leave the median step without any; they
		// are syncs all the same, and on a GPU each one stalls.
		m, _ := MetricByName("sync_calls")
		xs := r.Samples(m)
		with := 0
		for _, x := range xs {
			if x > 0 {
				with++
			}
		}
		if with == 0 {
			return nil
		}
		syncs = Summarize(xs).Mean
		mt, _ := MetricByName("sync_time")
		st = Summarize(r.Samples(mt)).Mean
		summary = fmt.Sprintf("blocking host syncs in %d of %d steps (%.2f per step)", with, len(xs), syncs)
	}
	n := fmt.Sprintf("%.0f", syncs)
	if syncs < 1 {
		n = fmt.Sprintf("%.2f", syncs)
	}
	share := safeDiv(st, step)
	f := Finding{
		ID: "host-sync", Severity: "medium", Share: share,
		Summary:    summary,
		Suggestion: "drop per-step .item()/.cpu()/.tolist() and printing of tensor values; accumulate on the GPU and sync every N steps; use non_blocking copies into pinned memory",
		Culprits:   r.syncCulprits(3),
	}
	if share >= 0.1 {
		f.Severity = "high"
	}
	if r.HasGPU {
		f.Evidence = fmt.Sprintf("%s synchronizing CUDA calls per step keep the host blocked %.2f ms (%s of the step); %.0f device-to-host copies per step, %.0f from or to pageable memory",
			n, st, pct(share), r.median("memcpy_d2h_count"), r.median("memcpy_pageable"))
	} else {
		f.Evidence = fmt.Sprintf("%s host-sync operations per step (.item(), .tolist(), ...): on a GPU each stalls the host until the device catches up", n)
	}
	if len(f.Culprits) > 0 {
		f.Evidence += "; issued from " + strings.Join(f.Culprits, ", ")
	}
	return &f
}

func rank(fs []Finding) []Finding {
	slices.SortStableFunc(fs, func(a, b Finding) int { return cmp.Compare(b.Share, a.Share) })
	return fs
}

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// dataRangeName is the most common data-loader range name, for evidence,
// as a code span: names such as __next__ must not read as Markdown.
func (r *Result) dataRangeName() string {
	if r.dataName != "" {
		return Quote(r.dataName)
	}
	return "`DataLoader.__next__`"
}

// maxName bounds a name quoted in a finding; longer ones are cut.
const maxName = 200

// Quote quotes a trace name for text that is also Markdown (the PR comment)
// and terminal text: a code span that the name cannot end, with control
// characters shown as escapes, cut to maxName characters before quoting
// so that no later cut can split the span.
func Quote(s string) string {
	if r := []rune(s); len(r) > maxName {
		s = string(r[:maxName-1]) + "…"
	}
	return escape.CodeSpan(s)
}

// enclosing returns the innermost host ranges on thread that contain t,
// innermost first, at most n of them, skipping step ranges.
func (r *Result) enclosing(thread, t int64, n int) []string {
	p := r.Profile
	i, _ := slices.BinarySearchFunc(p.Ranges, t, func(rg trace.Range, t int64) int { return cmp.Compare(rg.Start, t) })
	// i is the first range starting at or after t; look back for containers.
	var out []string
	for j := min(i, len(p.Ranges)-1); j >= 0 && i-j < 4096 && len(out) < n; j-- {
		rg := &p.Ranges[j]
		if rg.Thread != thread || rg.Start > t || rg.End <= t {
			continue
		}
		name := p.Names.String(rg.Name)
		if r.isStep(name) {
			break
		}
		out = append(out, name)
	}
	return out
}

// frameRE reads a Kineto python_function name: "path/file.py(LINE): function".
var frameRE = regexp.MustCompile(`^(.+\.py)\((\d+)\): (.+)$`)

// libraryFrame reports whether a frame's file is library code (torch,
// installed packages, the standard library), not the user's.
func libraryFrame(file string) bool {
	f := strings.ReplaceAll(file, "\\", "/")
	for _, s := range []string{"/site-packages/", "/dist-packages/", "/torch/", "/lib/python3", "/lib64/python3", "<frozen "} {
		if strings.Contains(f, s) {
			return true
		}
	}
	return strings.HasPrefix(f, "torch/") || strings.HasPrefix(f, "<")
}

// stackFrame is a Python frame with the index of its caller among its
// thread's frames (-1 for none).
type stackFrame struct {
	trace.Range
	parent int
}

// threadStacks indexes the profile's Python frames by thread, sorted by
// start, each with its caller: frames nest as calls do, so the frames
// that contain a time are the callers of the last frame that started
// before it.
func (r *Result) threadStacks() map[int64][]stackFrame {
	if r.stacks != nil {
		return r.stacks
	}
	r.stacks = map[int64][]stackFrame{}
	for _, f := range r.Profile.Stack {
		r.stacks[f.Thread] = append(r.stacks[f.Thread], stackFrame{Range: f, parent: -1})
	}
	for _, fs := range r.stacks {
		slices.SortStableFunc(fs, func(a, b stackFrame) int { return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(b.End, a.End)) })
		var open []int
		for i := range fs {
			for len(open) > 0 && fs[open[len(open)-1]].End <= fs[i].Start {
				open = open[:len(open)-1]
			}
			if len(open) > 0 {
				fs[i].parent = open[len(open)-1]
			}
			open = append(open, i)
		}
	}
	return r.stacks
}

// sourceAt is the user's source line that was running on thread at t, from
// the trace's Python frames (with_stack): the innermost frame of a file
// outside torch, installed packages and the standard library, as
// "file.py:LINE (function)" with the file's base name; "" when the trace
// has no frames there.
func (r *Result) sourceAt(thread, t int64) string {
	if len(r.Profile.Stack) == 0 {
		return ""
	}
	fs := r.threadStacks()[thread]
	i, _ := slices.BinarySearchFunc(fs, t+1, func(f stackFrame, t int64) int { return cmp.Compare(f.Start, t) })
	for j, steps := i-1, 0; j >= 0 && steps < 1024; j, steps = fs[j].parent, steps+1 {
		f := &fs[j]
		if f.End <= t {
			continue // ended before t: its callers may still run
		}
		m := frameRE.FindStringSubmatch(r.Profile.Names.String(f.Name))
		if m == nil || libraryFrame(m[1]) {
			continue
		}
		file := m[1]
		if k := strings.LastIndexAny(file, "/\\"); k >= 0 {
			file = file[k+1:]
		}
		return fmt.Sprintf("%s:%s (%s)", file, m[2], m[3])
	}
	return ""
}

// syncCulprits names the host ranges that issued the step's sync calls,
// most frequent first, as "outer > inner (×count)", with the user's
// source line where the trace has Python frames ("outer > inner at
// train.py:33 (train) (×count)").
func (r *Result) syncCulprits(n int) []string {
	p := r.Profile
	count := map[string]int{}
	add := func(thread, t int64) {
		chain := r.enclosing(thread, t, 2)
		if len(chain) == 0 {
			return
		}
		slices.Reverse(chain)
		c := Quote(strings.Join(chain, " > "))
		if src := r.sourceAt(thread, t); src != "" {
			c += " at " + Quote(src)
		}
		count[c]++
	}
	if r.HasGPU {
		for i := range p.API {
			a := &p.API[i]
			if syncAPI(p.Names.String(a.Name)) && r.stepAt(a.Start) >= 0 {
				add(a.Thread, a.Start)
			}
		}
	} else {
		for _, s := range r.syncRanges {
			add(s.thread, s.t+1) // just inside the sync op: its parent chain
		}
	}
	return topCounts(count, n)
}

func topCounts(count map[string]int, n int) []string {
	type kv struct {
		k string
		v int
	}
	var kvs []kv
	for k, v := range count {
		kvs = append(kvs, kv{k, v})
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].v > kvs[j].v || kvs[i].v == kvs[j].v && kvs[i].k < kvs[j].k })
	var out []string
	for i, e := range kvs {
		if i == n {
			break
		}
		out = append(out, fmt.Sprintf("%s (×%d)", e.k, e.v))
	}
	return out
}

// topGaps describes the longest host-wait gaps and what the step thread was
// inside during each.
func (r *Result) topGaps(n int) []string {
	gaps := slices.Clone(r.Gaps)
	slices.SortFunc(gaps, func(a, b Gap) int { return cmp.Compare(b.End-b.Start, a.End-a.Start) })
	var out []string
	for _, g := range gaps {
		if len(out) == n {
			break
		}
		what := "no host range recorded"
		mid := (g.Start + g.End) / 2
		if chain := r.enclosing(r.stepThread, mid, 3); len(chain) > 0 {
			slices.Reverse(chain)
			what = "host in " + Quote(strings.Join(chain, " > "))
		}
		if src := r.sourceAt(r.stepThread, mid); src != "" {
			what += " at " + Quote(src)
		}
		kind := "host wait"
		if !g.HostWait {
			kind = "GPU-side wait"
		}
		out = append(out, fmt.Sprintf("%.2f ms %s (%s)", float64(g.End-g.Start)/1e6, kind, what))
	}
	return out
}
