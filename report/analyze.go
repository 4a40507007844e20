// Package report renders analysis results and comparisons for people (text,
// Markdown) and programs (JSON). It knows nothing of SQLite or GitHub.
package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/trace"
)

// Analysis is the JSON document of `gpugate analyze --format json`. Its
// shape is a stable contract, documented in docs/json.md.
type Analysis struct {
	Profiles []Profile `json:"profiles"`
	Ranks    *Ranks    `json:"ranks"`
	// RunConditions are what nvidia-smi saw while the traced run ran, when
	// analyze finds them (gpugate run's conditions.json beside the
	// traces); absent from documents that gpugate run stores, which keep
	// them in their own column.
	RunConditions *runcond.Conditions `json:"run_conditions,omitempty"`
	// Job is what gpugate run measured of the job itself; absent from
	// gpugate analyze's output.
	Job *Job `json:"job,omitempty"`
	// MedianStep is the first profile's median step as StepSVG lays it
	// out; gpugate run stores it with the run (the dashboard's run page
	// and a later comparison's step.svg draw it); absent from gpugate
	// analyze's output.
	MedianStep *StepTimeline `json:"median_step,omitempty"`
	// TimingRuns are the timing runs stored with this profiled run
	// (gate.TimingRun: the same job without a profiler, its steps timed
	// at the optimizer step): a baseline's step time is judged on them.
	// Absent from gpugate analyze's output and from runs stored before
	// gpugate made timing runs.
	TimingRuns []gate.TimingRun `json:"timing_runs,omitempty"`
}

// Job is what the runner measured of the job's processes.
type Job struct {
	// MaxRSSBytes is the job's peak resident memory: the largest of any
	// one of its processes (the kernel's rusage), not a sum.
	MaxRSSBytes int64 `json:"max_rss_bytes"`
	// WallSeconds is the job's wall time (s), and GPUs the GPUs of the
	// machine it held: the run's cost, which the dashboard shows; 0 in
	// documents stored before gpugate recorded it.
	WallSeconds float64 `json:"wall_s,omitempty"`
	GPUs        int     `json:"gpus,omitempty"`
	// TimingRuns counts the timing runs stored with the run (Analysis.
	// TimingRuns), and TimingWallSeconds their wall time (s): with the
	// profiled run, what the check spent on this run; 0 for a run stored
	// without timing runs or before gpugate recorded their cost.
	TimingRuns        int     `json:"timing_runs,omitempty"`
	TimingWallSeconds float64 `json:"timing_wall_s,omitempty"`
	// Slurm is the Slurm job the run was (docs/slurm.md); omitted for a
	// job that did not run under Slurm.
	Slurm *SlurmJob `json:"slurm,omitempty"`
}

// SlurmJob is a run's Slurm job: its id, nodes, and the time it waited
// in the queue, apart from the run's own time.
type SlurmJob struct {
	JobID       string   `json:"job_id"`
	Nodes       []string `json:"nodes"`
	QueueWaitMs float64  `json:"queue_wait_ms"`
	RunMs       float64  `json:"run_ms"`
}

// Profile is one rank's analysis.
type Profile struct {
	Path      string   `json:"path"`
	Format    string   `json:"format"`
	Variant   string   `json:"variant"`
	Rank      *int     `json:"rank"`       // null when the trace does not say
	WorldSize *int     `json:"world_size"` // null when the trace does not say
	Process   int      `json:"process,omitempty"`
	Node      string   `json:"node,omitempty"` // the Slurm node it ran on; omitted outside Slurm
	Devices   []Device `json:"devices"`
	HasGPU    bool     `json:"has_gpu"`
	Whole     bool     `json:"whole_profile"` // no step markers: one window
	// StepMethod and StepConfidence say how the steps were found
	// (analysis.Result.StepMethod, docs/steps.md).
	StepMethod     string  `json:"step_method"`
	StepConfidence float64 `json:"step_confidence"`
	// PreCapture counts the GPU ops launched before the capture, which
	// belong to no step (docs/metrics.md); omitted when there are none.
	PreCapture *analysis.PreCaptureOps `json:"pre_capture,omitempty"`
	// OutsideSteps counts the GPU ops in no step, kept or left out, and
	// not launched before the capture (docs/metrics.md); omitted when
	// there are none, and a warning says where they lie.
	OutsideSteps *analysis.OpCounts `json:"outside_steps,omitempty"`
	Window       Window             `json:"window"`
	Steps        []Step             `json:"steps"`
	// LeftOut are the steps at the edges that every summary, finding and
	// comparison leaves out (analysis.Trim).
	LeftOut []analysis.LeftOut          `json:"left_out"`
	Summary map[string]analysis.Summary `json:"summary"`
	// KernelStats are the kernels attributed to steps, by name, largest
	// total time first.
	KernelStats []analysis.KernelStat `json:"kernel_stats"`
	Findings    []analysis.Finding    `json:"findings"`
	Warnings    []string              `json:"warnings"`
	// Work is the steps' throughput and FLOPs, aligned with Steps; null
	// when neither is known (analysis.WorkResult).
	Work *analysis.WorkResult `json:"work"`
}

// Device is a GPU the profile ran on.
type Device struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

// Window is the extent of the whole profile and its totals.
type Window struct {
	Start       int64  `json:"start_ns"`
	End         int64  `json:"end_ns"`
	Kernels     *int   `json:"kernels"`
	MemcpyCount *int   `json:"memcpy_count"`
	MemsetCount *int   `json:"memset_count"`
	GPUBusy     *int64 `json:"gpu_busy_ns"`
}

// Step is one step's metrics. GPU metrics are null for a profile without
// GPU activity.
type Step struct {
	Name           string                     `json:"name"`
	Start          int64                      `json:"start_ns"`
	End            int64                      `json:"end_ns"`
	HostStart      int64                      `json:"host_start_ns"`
	HostEnd        int64                      `json:"host_end_ns"`
	StepTime       int64                      `json:"step_time_ns"`
	Kernels        *int                       `json:"kernels"`
	MemcpyCount    *int                       `json:"memcpy_count"` // every direction
	MemsetCount    *int                       `json:"memset_count"`
	GPUBusy        *int64                     `json:"gpu_busy_ns"`
	GPUUtil        *float64                   `json:"gpu_util"`
	GPUIdle        *int64                     `json:"gpu_idle_ns"`
	CPUWait        *int64                     `json:"cpu_wait_ns"`
	DataWait       int64                      `json:"data_wait_ns"`
	SyncCalls      int                        `json:"sync_calls"`
	SyncTime       int64                      `json:"sync_time_ns"`
	Memcpy         map[string]analysis.Copies `json:"memcpy"`
	CommTime       *int64                     `json:"comm_time_ns"`
	ExposedComm    *int64                     `json:"exposed_comm_ns"`
	ExposedCopy    *int64                     `json:"exposed_copy_ns"`
	LaunchOverhead *int64                     `json:"launch_overhead_ns"`
	ShortKernels   *float64                   `json:"short_kernels"`
	// CollectiveWait is a CPU profile's host time in collectives in the
	// step (gate.CollectiveWait): with step_time_ns, the rank's own work,
	// which a later comparison judges each Slurm node's against; omitted
	// for GPU profiles (exposed_comm_ns says it) and when the trace shows
	// no collectives.
	CollectiveWait *int64 `json:"collective_wait_ns,omitempty"`
	// Memory is null when neither the trace's allocator events nor the
	// step hook's samples give the step's memory.
	Memory *StepMemory `json:"memory"`
}

// StepMemory is a step's memory in the analyze JSON (docs/json.md): the
// gated peak, where it comes from, and the trace's numbers per device.
type StepMemory struct {
	// Source is "trace" (allocator totals in the trace), "trace-relative"
	// (only allocation deltas: alloc_growth_bytes), "hook-cuda" (the step
	// hook's torch.cuda allocator peaks), "hook-rss" (the step hook's
	// resident memory) or "trace-host" (a GPU trace's host allocator
	// only: host_peak_bytes).
	Source string `json:"source"`
	// Device is the device the gated numbers are of: a CUDA ordinal, or
	// -1 for the host.
	Device            int    `json:"device"`
	PeakMemoryBytes   *int64 `json:"peak_memory_bytes"`
	PeakReservedBytes *int64 `json:"peak_reserved_bytes"`
	// AllocGrowthBytes is relative to the step's start: the peak of the
	// running sum of allocations and frees in the step.
	AllocGrowthBytes *int64 `json:"alloc_growth_bytes"`
	Relative         bool   `json:"relative"`
	RSSBytes         *int64 `json:"rss_bytes"`
	// HostPeakBytes is the host allocator's peak when a GPU trace's
	// allocator events are all on the host (source "trace-host", whose
	// peak_memory_bytes is null: a host peak is no GPU figure).
	HostPeakBytes *int64 `json:"host_peak_bytes,omitempty"`
	// Devices are the trace's numbers per device (peak_alloc_bytes,
	// peak_reserved_bytes or alloc_growth_bytes); empty for hook samples.
	Devices []analysis.DeviceMemory `json:"devices"`
}

func newStepMemory(m analysis.StepMemory, devs []analysis.DeviceMemory) *StepMemory {
	if m.Source == "" {
		return nil
	}
	out := &StepMemory{Source: m.Source, Device: m.Device, Relative: m.Source == analysis.MemFromRelative, Devices: devs}
	if out.Devices == nil {
		out.Devices = []analysis.DeviceMemory{}
	}
	if !out.Relative && m.Source != analysis.MemFromTraceHost {
		out.PeakMemoryBytes = ptr(m.Peak)
	}
	if m.HasHostPeak {
		out.HostPeakBytes = ptr(m.HostPeak)
	}
	if m.HasReserved {
		out.PeakReservedBytes = ptr(m.Reserved)
	}
	if m.HasGrowth {
		out.AllocGrowthBytes = ptr(m.Growth)
	}
	if m.HasRSS {
		out.RSSBytes = ptr(m.RSS)
	}
	return out
}

func (m *StepMemory) step() analysis.StepMemory {
	if m == nil {
		return analysis.StepMemory{}
	}
	out := analysis.StepMemory{Source: m.Source, Device: m.Device}
	if m.PeakMemoryBytes != nil {
		out.Peak = *m.PeakMemoryBytes
	}
	if m.PeakReservedBytes != nil {
		out.Reserved, out.HasReserved = *m.PeakReservedBytes, true
	}
	if m.AllocGrowthBytes != nil {
		out.Growth, out.HasGrowth = *m.AllocGrowthBytes, true
	}
	if m.RSSBytes != nil {
		out.RSS, out.HasRSS = *m.RSSBytes, true
	}
	if m.HostPeakBytes != nil {
		out.HostPeak, out.HasHostPeak = *m.HostPeakBytes, true
	}
	return out
}

// Ranks is the cross-rank view of a multi-file (multi-rank) analysis.
type Ranks struct {
	Count int `json:"count"`
	// Slowest and Fastest name the ranks with the largest and smallest
	// median step time.
	Slowest RankStat `json:"slowest"`
	Fastest RankStat `json:"fastest"`
	// SpreadPct is (slowest - fastest) / fastest median step time, in percent.
	SpreadPct float64    `json:"spread_pct"`
	PerRank   []RankStat `json:"per_rank"`
}

// RankStat is one rank's headline numbers.
type RankStat struct {
	Index      int      `json:"index"` // position in "profiles"
	Rank       *int     `json:"rank"`
	Node       string   `json:"node,omitempty"` // its Slurm node
	Path       string   `json:"path"`
	Steps      int      `json:"steps"`
	StepTimeMs float64  `json:"step_time_ms"` // median
	GPUUtil    *float64 `json:"gpu_util"`     // median
}

func ptr[T any](v T) *T { return &v }

// NewAnalysis builds the document from per-profile results.
func NewAnalysis(results []*analysis.Result) *Analysis {
	doc := &Analysis{Profiles: make([]Profile, 0, len(results))}
	for _, r := range results {
		doc.Profiles = append(doc.Profiles, newProfile(r))
	}
	if len(results) > 1 {
		doc.Ranks = newRanks(doc.Profiles)
	}
	return doc
}

// NewStoredAnalysis is the document gpugate stores for a run (gpugate
// run, baseline record): NewAnalysis with the first profile's median step
// laid out (MedianStep), which the dashboard and step.svg draw.
func NewStoredAnalysis(results []*analysis.Result) *Analysis {
	doc := NewAnalysis(results)
	if len(results) > 0 {
		doc.MedianStep = StepLayout("this run", results[0])
	}
	return doc
}

func newProfile(r *analysis.Result) Profile {
	p := r.Profile
	out := Profile{
		Path: p.Path, Format: p.Format, Variant: p.Variant, Process: p.Process, Node: p.Node,
		HasGPU: r.HasGPU, Whole: r.WholeProfile,
		StepMethod: r.StepMethod, StepConfidence: r.StepConfidence,
		Window:      Window{Start: r.Start, End: r.End},
		Summary:     r.Summaries(),
		KernelStats: r.KernelStats,
		Findings:    r.Findings(),
		Warnings:    r.Warnings,
		Work:        r.Work,
		Devices:     []Device{},
		Steps:       make([]Step, 0, len(r.Steps)),
		LeftOut:     r.LeftOut,
	}
	if r.PreCapture.Total() > 0 {
		pc := r.PreCapture
		out.PreCapture = &pc
	}
	if r.OutsideSteps.Total() > 0 {
		os := r.OutsideSteps
		out.OutsideSteps = &os
	}
	if out.LeftOut == nil {
		out.LeftOut = []analysis.LeftOut{}
	}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	if out.KernelStats == nil {
		out.KernelStats = []analysis.KernelStat{}
	}
	if out.Findings == nil {
		out.Findings = []analysis.Finding{}
	}
	if p.Rank >= 0 {
		out.Rank = ptr(p.Rank)
	}
	if p.WorldSize > 0 {
		out.WorldSize = ptr(p.WorldSize)
	}
	for _, d := range p.Devices {
		out.Devices = append(out.Devices, Device{ID: d.ID, Name: d.Name})
	}
	if r.HasGPU {
		out.Window.Kernels, out.Window.MemcpyCount, out.Window.MemsetCount, out.Window.GPUBusy = ptr(r.Kernels), ptr(r.MemcpyCount), ptr(r.MemsetCount), ptr(r.GPUBusy)
	}
	var waits []int64
	if !r.HasGPU {
		if w, ok := gate.CollectiveWait(r); ok && len(w) == len(r.Steps) && slices.ContainsFunc(w, func(x int64) bool { return x > 0 }) {
			waits = w
		}
	}
	for i := range r.Steps {
		s := &r.Steps[i]
		st := Step{
			Name: s.Name, Start: s.Start, End: s.End, HostStart: s.HostStart, HostEnd: s.HostEnd,
			StepTime: s.StepTime(), DataWait: s.DataWait, SyncCalls: s.SyncCalls, SyncTime: s.SyncTime,
		}
		var devs []analysis.DeviceMemory
		if i < len(r.MemDevices) {
			devs = r.MemDevices[i]
		}
		st.Memory = newStepMemory(s.Memory, devs)
		if waits != nil {
			st.CollectiveWait = ptr(waits[i])
		}
		if r.HasGPU {
			st.Kernels, st.GPUBusy, st.GPUUtil, st.GPUIdle = ptr(s.Kernels), ptr(s.GPUBusy), ptr(s.GPUUtil()), ptr(s.GPUIdle())
			st.MemcpyCount, st.MemsetCount = ptr(s.Memcpys), ptr(s.Memsets)
			st.CPUWait = ptr(s.CPUWait)
			st.Memcpy = map[string]analysis.Copies{"h2d": s.H2D, "d2h": s.D2H, "d2d": s.D2D}
			st.CommTime, st.ExposedComm, st.ExposedCopy = ptr(s.CommTime), ptr(s.ExposedComm), ptr(s.ExposedCopy)
			st.LaunchOverhead, st.ShortKernels = ptr(s.LaunchOverhead), ptr(s.ShortKernels)
		}
		out.Steps = append(out.Steps, st)
	}
	return out
}

func newRanks(ps []Profile) *Ranks {
	rk := &Ranks{Count: len(ps)}
	for i, p := range ps {
		st := RankStat{Index: i, Rank: p.Rank, Node: p.Node, Path: p.Path, Steps: len(p.Steps), StepTimeMs: p.Summary["step_time_ms"].Median}
		if s, ok := p.Summary["gpu_util"]; ok {
			st.GPUUtil = ptr(s.Median)
		}
		rk.PerRank = append(rk.PerRank, st)
	}
	rk.Slowest = slices.MaxFunc(rk.PerRank, func(a, b RankStat) int { return cmp.Compare(a.StepTimeMs, b.StepTimeMs) })
	rk.Fastest = slices.MinFunc(rk.PerRank, func(a, b RankStat) int { return cmp.Compare(a.StepTimeMs, b.StepTimeMs) })
	if rk.Fastest.StepTimeMs > 0 {
		rk.SpreadPct = 100 * (rk.Slowest.StepTimeMs - rk.Fastest.StepTimeMs) / rk.Fastest.StepTimeMs
	}
	return rk
}

// WriteJSON writes the document as indented JSON.
func (a *Analysis) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(a)
}

// textMetrics are the rows of the terminal summary, in order.
var textMetrics = []string{
	"step_time_ms", "kernels", "gpu_util", "gpu_idle_ms", "cpu_wait_ms", "data_wait_ms",
	"sync_calls", "sync_time_ms", "memcpy_h2d_count", "memcpy_d2h_count", "memcpy_pageable",
	"comm_time_ms", "exposed_comm_ms", "launch_overhead_us", "short_kernels",
	"peak_memory_MiB", "peak_reserved_MiB", "alloc_growth_MiB", "rss_MiB",
}

// WriteText writes a compact, human-readable summary of every profile.
func (a *Analysis) WriteText(w io.Writer) error {
	for i, p := range a.Profiles {
		if i > 0 {
			fmt.Fprintln(w)
		}
		writeProfileText(w, &p)
	}
	if a.Job != nil && a.Job.MaxRSSBytes > 0 {
		fmt.Fprintf(w, "\njob: peak resident memory %.0f MiB (its largest process)\n", float64(a.Job.MaxRSSBytes)/(1<<20))
	}
	if a.Ranks != nil {
		fmt.Fprintf(w, "\nranks: %d, median step time %.2f ms (fastest, %s) to %.2f ms (slowest, %s): spread %.1f%%\n",
			a.Ranks.Count, a.Ranks.Fastest.StepTimeMs, rankLabel(a.Ranks.Fastest), a.Ranks.Slowest.StepTimeMs, rankLabel(a.Ranks.Slowest), a.Ranks.SpreadPct)
		writeRankNodes(w, a.Ranks)
	}
	if a.RunConditions != nil {
		fmt.Fprintln(w, "\nrun conditions (nvidia-smi while the job ran):")
		for _, l := range ConditionsText([]*runcond.Conditions{a.RunConditions}) {
			fmt.Fprintf(w, "  %s\n", l)
		}
		if h := HostText(a.RunConditions.Host); h != "" {
			fmt.Fprintf(w, "  %s\n", escape.Terminal(h))
		}
	}
	return nil
}

func rankLabel(s RankStat) string {
	if s.Rank != nil && s.Node != "" {
		return fmt.Sprintf("rank %d on node %s", *s.Rank, escape.Terminal(s.Node))
	}
	if s.Rank != nil {
		return fmt.Sprintf("rank %d", *s.Rank)
	}
	return fmt.Sprintf("#%d %s", s.Index, escape.Terminal(filepath.Base(s.Path)))
}

func writeProfileText(w io.Writer, p *Profile) {
	var head []string
	head = append(head, escape.Terminal(p.Path), escape.Terminal(p.Variant))
	if p.Rank != nil {
		r := fmt.Sprintf("rank %d", *p.Rank)
		if p.WorldSize != nil {
			r += fmt.Sprintf("/%d", *p.WorldSize)
		}
		head = append(head, r)
	}
	if p.Process != 0 {
		head = append(head, fmt.Sprintf("pid %d", p.Process))
	}
	if p.Node != "" {
		head = append(head, "node "+escape.Terminal(p.Node))
	}
	if len(p.Devices) > 0 {
		names := map[string]int{}
		var order []string
		for _, d := range p.Devices {
			if names[d.Name] == 0 {
				order = append(order, d.Name)
			}
			names[d.Name]++
		}
		for _, n := range order {
			head = append(head, fmt.Sprintf("%d× %s", names[n], escape.Terminal(n)))
		}
	}
	if !p.HasGPU {
		head = append(head, "no GPU activity") // an nsys export names its GPUs without it
	}
	steps := fmt.Sprintf("%d steps", len(p.Steps))
	if p.Whole {
		steps = "no step markers: whole profile"
	}
	head = append(head, steps)
	fmt.Fprintln(w, strings.Join(head, " · "))
	if len(p.LeftOut) > 0 {
		// Consecutive steps left out for one reason (an nsys run's warm-up
		// and the steps after measure_steps) make one entry.
		var lo []string
		for i := 0; i < len(p.LeftOut); {
			j := i + 1
			for j < len(p.LeftOut) && p.LeftOut[j].Reason == p.LeftOut[i].Reason {
				j++
			}
			a, b := p.LeftOut[i], p.LeftOut[j-1]
			if j-i == 1 {
				lo = append(lo, fmt.Sprintf("%s (%s, %s ms)", escape.Terminal(a.Name), escape.Terminal(a.Reason), num(float64(a.StepTime)/1e6)))
			} else {
				tmin, tmax := a.StepTime, a.StepTime
				for _, s := range p.LeftOut[i:j] {
					tmin, tmax = min(tmin, s.StepTime), max(tmax, s.StepTime)
				}
				lo = append(lo, fmt.Sprintf("%d steps %s … %s (%s, %s–%s ms)", j-i, escape.Terminal(a.Name), escape.Terminal(b.Name), escape.Terminal(a.Reason), num(float64(tmin)/1e6), num(float64(tmax)/1e6)))
			}
			i = j
		}
		fmt.Fprintf(w, "left out: %s\n", strings.Join(lo, "; "))
	}
	if p.StepMethod != "" {
		fmt.Fprintf(w, "steps found by: %s (confidence %.2f)\n", escape.Terminal(p.StepMethod), p.StepConfidence)
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "metric\tmedian\tmean\tp90\tmin\tmax\t")
	for _, k := range textMetrics {
		s, ok := p.Summary[k]
		if !ok {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", k, num(s.Median), num(s.Mean), num(s.P90), num(s.Min), num(s.Max))
		if k == "step_time_ms" {
			writeWorkSummaryRows(tw, p.Work) // beside step time: derived from it
		}
	}
	tw.Flush()
	if note := workNote(p.Work); note != "" {
		fmt.Fprintf(w, "%s\n", escape.Terminal(note))
	}
	if line := memoryLine(p); line != "" {
		fmt.Fprintln(w, line)
	}
	if len(p.Steps) > 1 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "step\ttime ms\tkernels\tgpu util\tcpu wait ms\tdata wait ms\tsyncs\t")
		const maxRows = 40
		for i, s := range p.Steps {
			if i == maxRows {
				fmt.Fprintf(tw, "… %d more\t\t\t\t\t\t\t\n", len(p.Steps)-maxRows)
				break
			}
			kern, util, wait := "-", "-", "-"
			if s.Kernels != nil {
				kern = fmt.Sprint(*s.Kernels)
				util = fmt.Sprintf("%.0f%%", 100**s.GPUUtil)
				wait = num(float64(*s.CPUWait) / 1e6)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", escape.Terminal(cut(s.Name, maxCell)), num(float64(s.StepTime)/1e6), kern, util, wait, num(float64(s.DataWait)/1e6), s.SyncCalls)
		}
		tw.Flush()
	}
	for _, f := range p.Findings {
		fmt.Fprintf(w, "\n%s (%s): %s\n  evidence: %s\n  try: %s\n", escape.Terminal(f.ID), escape.Terminal(f.Severity),
			escape.Terminal(f.Summary), escape.Terminal(f.Evidence), escape.Terminal(f.Suggestion))
	}
	for _, w2 := range p.Warnings {
		fmt.Fprintf(w, "warning: %s\n", escape.Terminal(w2))
	}
}

// Results rebuilds analysis results from a parsed analyze JSON document,
// so that compare can read what analyze wrote.
func (a *Analysis) Results() []*analysis.Result {
	var out []*analysis.Result
	for _, p := range a.Profiles {
		tp := trace.New(p.Path, p.Format)
		tp.Variant, tp.Node = p.Variant, p.Node
		if p.Rank != nil {
			tp.Rank = *p.Rank
		}
		if p.WorldSize != nil {
			tp.WorldSize = *p.WorldSize
		}
		for _, d := range p.Devices {
			tp.Devices = append(tp.Devices, trace.Device{ID: d.ID, Name: d.Name})
		}
		steps := make([]analysis.Step, len(p.Steps))
		for i, s := range p.Steps {
			st := analysis.Step{Name: s.Name, Start: s.Start, End: s.End, HostStart: s.HostStart, HostEnd: s.HostEnd,
				DataWait: s.DataWait, SyncCalls: s.SyncCalls, SyncTime: s.SyncTime, Memory: s.Memory.step(), Collective: deref(s.CollectiveWait)}
			if s.Kernels != nil {
				st.Kernels, st.GPUBusy, st.CPUWait = *s.Kernels, deref(s.GPUBusy), deref(s.CPUWait)
				st.Memcpys, st.Memsets = deref(s.MemcpyCount), deref(s.MemsetCount)
				st.H2D, st.D2H, st.D2D = s.Memcpy["h2d"], s.Memcpy["d2h"], s.Memcpy["d2d"]
				st.CommTime, st.ExposedComm, st.ExposedCopy = deref(s.CommTime), deref(s.ExposedComm), deref(s.ExposedCopy)
				st.LaunchOverhead = deref(s.LaunchOverhead)
				st.ShortKernels = deref(s.ShortKernels)
				st.Compute = st.GPUBusy - st.ExposedComm - st.ExposedCopy
			}
			steps[i] = st
		}
		leftOut := p.LeftOut
		if leftOut == nil && !p.Whole {
			// A document written before analyze trimmed the steps itself
			// (no "left_out" key): trim it the same way now, so that stored
			// baselines and new runs are judged on the same kind of steps.
			// Its kernel_stats still cover every step.
			lo, hi := analysis.Trim(len(steps))
			for i := range steps {
				if i < lo || i >= hi {
					leftOut = append(leftOut, analysis.LeftOutStep(&steps[i], "edge step of an older analysis"))
				}
			}
			steps = steps[lo:hi]
		}
		r := analysis.FromSteps(tp, p.HasGPU, steps, p.KernelStats)
		if p.Work != nil && len(p.Work.Steps) == len(steps) {
			r.Work = p.Work
		}
		r.LeftOut = leftOut
		r.WholeProfile = p.Whole
		r.StepMethod, r.StepConfidence = p.StepMethod, p.StepConfidence
		out = append(out, r)
	}
	return out
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// num formats a value with 3 significant digits or at least 2 decimals.
func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v == math.Trunc(v) && math.Abs(v) < 1e9:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.1f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// memoryLine says where the profile's memory numbers come from, or that
// there are none.
func memoryLine(p *Profile) string {
	if len(p.Steps) == 0 {
		return ""
	}
	m := p.Steps[0].Memory
	if m == nil {
		return "memory: not measured (no allocator events in the trace: torch.profiler profile_memory=True records them; gpugate run's step hook samples them)"
	}
	where := "the host"
	if m.Device >= 0 {
		where = fmt.Sprintf("CUDA device %d", m.Device)
	}
	switch m.Source {
	case analysis.MemFromTrace:
		return "memory: peaks of the allocator on " + where + ", from the trace's allocator events"
	case analysis.MemFromRelative:
		return "memory: the trace's allocator events carry no totals: alloc_growth is each step's rise above its start on " + where + ", not a level"
	case analysis.MemFromHookCUDA:
		return "memory: torch.cuda allocator peaks per step on " + where + ", from gpugate's step hook"
	case analysis.MemFromHookRSS:
		return "memory: the process's resident memory per step (its peak where it rose in the step), from gpugate's step hook"
	case analysis.MemFromTraceHost:
		line := "memory: no GPU figure: the trace's allocator events are all the host's"
		if m.HostPeakBytes != nil {
			line += fmt.Sprintf(" (host allocator peak %d bytes in the first step, reported as host memory, not gated)", *m.HostPeakBytes)
		}
		return line
	}
	return ""
}

// RunValue is the stored run's value of m, as the gate compares it and
// every view of a run shows it (gate.RunValue: ranks combined per step,
// then the mean over the measured steps); ok is false when the run has
// none.
func (a *Analysis) RunValue(m analysis.Metric) (float64, bool) {
	return gate.RunValue(gate.Run(a.Results()), m)
}

// TimedStep is the run's step time in its timing runs (TimingRuns): the
// mean over its timed steps, the mean of that over the timing runs when
// it has several; ok is false without timing runs.
func (a *Analysis) TimedStep() (float64, bool) {
	var sum float64
	n := 0
	for _, t := range a.TimingRuns {
		if len(t.StepMs) == 0 {
			continue
		}
		var s float64
		for _, x := range t.StepMs {
			s += x
		}
		sum += s / float64(len(t.StepMs))
		n++
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}
