// Package gate compares a candidate run with a baseline: every metric with
// its allowance and significance (package stats), the change in step time
// taken apart into its causes, the kernels that appeared, vanished or
// changed, and the findings that are new or worse in the candidate.
package gate

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/stats"
	"github.com/gpugate/gpugate/trace/ncu"
)

// Run is one execution of the workload: the analyses of its ranks.
type Run []*analysis.Result

// Options configure a comparison.
type Options struct {
	// Allowances override the default allowance of metrics by name
	// (fractions: 0.15 is 15%).
	Allowances map[string]float64
	Thresholds stats.Thresholds
	// TopKernels bounds each kernel list; 10 by default.
	TopKernels int
	// Gate names the metrics whose regression fails the gate (perf.yaml
	// gate:); nil means DefaultGate.
	Gate []string
	// MinAbs overrides the smallest absolute change that counts, by metric
	// name, in the metric's unit (perf.yaml memory_min_change sets the
	// memory metrics', in MiB).
	MinAbs map[string]float64
	// Disturbed are the runs whose host was busy (HostBusy): they are
	// left out of the time metrics.
	Disturbed Disturbed
	// Timing are both sides' timing runs: step time (TimedMetrics) is
	// judged on them when both sides have some. Nil: on the profiled runs.
	Timing *TimingRuns
	// IDs are the runs' store ids (Report.RunIDs), where they are stored:
	// the report's warnings and reasons name each run by its id. Nil:
	// by position.
	IDs *RunIDs
}

// DefaultGate is what gates when perf.yaml says nothing: the step's health
// as users read it — step time, kernels per step and CPU-side wait — plus
// sync calls, the usual cause of a new host stall — and peak memory, whose
// rise turns next week's bigger batch into an out-of-memory error. CPU wait
// is a GPU metric: on profiles without GPU activity it is absent and gates
// nothing; peak memory is absent without allocator events or step samples.
var DefaultGate = []string{"step_time", "kernels", "cpu_wait", "sync_calls", "peak_memory"}

// DefaultMemoryMinChange is the smallest change of a memory metric that
// counts, in MiB.
const DefaultMemoryMinChange = 64

// DefaultAllowance returns a metric's default allowance and minimum
// absolute change. Times get 15% for profiling overhead and noise; counts
// that are nearly deterministic get tight allowances.
func DefaultAllowance(m analysis.Metric) (allowance, minAbs float64) {
	switch m.Name {
	case "kernels":
		return 0.05, 1
	case "sync_calls":
		return 0, 0.5
	case "memcpy_h2d_count", "memcpy_d2h_count", "memcpy_d2d_count", "memcpy_pageable":
		return 0.05, 0.5
	case "gpu_util":
		return 0.10, 0.02
	case "cpu_wait":
		// Host wait of well-fed steps is a fraction of a millisecond and
		// jumps by half of that from run to run: 0.2 -> 0.3 ms is +50% and
		// no stall. It gates from 1 ms more per step.
		return 0.15, 1
	case "short_kernels":
		return 0.10, 0.05
	case "peak_memory", "peak_reserved", "rss", "alloc_growth":
		// Allocator peaks repeat to the byte from step to step; 5% and
		// at least 64 MiB (perf.yaml memory_min_change) is a change that
		// costs a batch size, not allocator or page-cache noise.
		return 0.05, DefaultMemoryMinChange
	}
	// Times: also ignore changes under 50 µs (sub-resolution for Kineto).
	switch m.Unit {
	case "ms":
		return 0.15, 0.05
	case "us":
		return 0.15, 0.5
	}
	return 0.15, 0
}

// Gates reports which metrics gate under opt: the others are reported to
// explain the verdict. Every extra gate metric adds about α false alarms.
func Gates(opt Options) map[string]bool {
	names := opt.Gate
	if names == nil {
		names = DefaultGate
	}
	g := map[string]bool{}
	for _, n := range names {
		if m, ok := analysis.MetricByName(n); ok {
			g[m.Name] = true
		}
	}
	return g
}

// AbsentGateWarnings are the warnings for the memory metrics
// (analysis.Metric.Optional) that gate but that rep does not compare and
// whose absence no warning of rep states yet: measured on neither side. A
// gate metric is never left out silently, so that a result whose memory
// regression was deleted (the fork flow's artifact) at least says so.
func AbsentGateWarnings(rep *Report, gates map[string]bool) []string {
	var ws []string
	for _, m := range analysis.Metrics {
		if !m.Optional() || !gates[m.Name] || slices.ContainsFunc(rep.Metrics, func(r stats.Result) bool { return r.Name == m.Name }) ||
			slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.HasPrefix(w, m.Name+": ") }) {
			continue
		}
		ws = append(ws, fmt.Sprintf("%s: gates but was measured on neither side (no allocator events or memory samples): not compared", m.Name))
	}
	return ws
}

// Report is the comparison. Its JSON form is documented in docs/json.md.
type Report struct {
	Verdict   stats.Verdict `json:"verdict"`
	Baseline  Side          `json:"baseline"`
	Candidate Side          `json:"candidate"`
	// Alpha is the significance level used: intervals are 1-Alpha.
	Alpha float64 `json:"alpha"`
	// Mismatch lists how the two sides' hardware or profiler differ, when
	// the comparison was made all the same (compare -allow-mismatch).
	Mismatch []string `json:"mismatch"`
	// SampleUnit is what the tests were over: "run" (each run's mean
	// step) or "pair" (each A/B pair's log-ratio).
	SampleUnit string `json:"sample_unit"`
	// Paired: the runs were made in pairs (ab), and a pair is kept or
	// left out whole (select.go), whatever unit a metric's test could
	// use (a side with an incomplete pair is judged by runs).
	Paired        bool           `json:"paired,omitempty"`
	Noise         string         `json:"noise"`
	Metrics       []stats.Result `json:"metrics"`
	Decomposition Decomposition  `json:"decomposition"`
	Kernels       KernelDiff     `json:"kernels"`
	Findings      []Finding      `json:"findings"`
	// Cause is the id of the finding that explains the headline regression
	// (the gated metric the comment leads with); empty when no finding
	// does (the metric's Why then says where the step moved).
	Cause    string   `json:"cause,omitempty"`
	Warnings []string `json:"warnings"`
	// Isolation says how the job was kept from gpugate's secrets and
	// from other processes (runner.Result.Isolation): namespaces, or none
	// and why (then also a warning); empty when no job ran.
	Isolation string `json:"isolation,omitempty"`
	// Overhead is the profiler's cost measured by an unprofiled timing
	// pass (gpugate run with step_log set); null otherwise.
	Overhead *Overhead `json:"profiling_overhead"`
	// Accepted is set when a pull request label declared the regression
	// intended: Verdict is then "accepted" and the metric results still
	// say "regression".
	Accepted *Acceptance `json:"accepted,omitempty"`
	// DeepDive is the Nsight Compute deep-dive of the kernels that
	// regressed (perf.yaml deep_dive, after a regression); omitted when
	// none was asked for.
	DeepDive *ncu.DeepDiveReport `json:"deep_dive,omitempty"`
	// Conditions are the runs' run conditions (nvidia-smi's clocks,
	// throttling, other processes) and what they void; null when the
	// comparison was made without them.
	Conditions *RunConditions `json:"run_conditions"`
	// Work is throughput and FLOPs side by side (work.go); null when
	// neither side has them.
	Work *WorkComparison `json:"work"`
	// Ranks are each rank's own step, FLOPs and sync calls on both sides
	// (ranks.go); omitted for single-rank runs.
	Ranks []RankChange `json:"ranks,omitempty"`
	// HostBusy are the runs whose host was busy (Options.Disturbed), per
	// side, "" for a run that was not; omitted when none was.
	HostBusy *Disturbed `json:"host_busy,omitempty"`
	// Sampling says how an A/B comparison sampled: how many pairs, in
	// what order, and why it stopped; omitted elsewhere.
	Sampling *Sampling `json:"sampling,omitempty"`
	// Nodes is a Slurm job's ranks by node (nodes.go); omitted for a job
	// that did not run under Slurm.
	Nodes *Nodes `json:"nodes,omitempty"`
	// Cost is what the check spent: runs made and their wall time and
	// GPU-seconds (cost.go); omitted where no job ran (compare).
	Cost *Cost `json:"cost,omitempty"`
	// Timing says which metrics were judged on timing runs (no
	// profiler) and which on profiled runs, and how many of each;
	// omitted when step time was judged on profiled runs by choice
	// (perf.yaml profiler_timing: true).
	Timing *Timing `json:"timing,omitempty"`
	// Recorded is the branch whose baseline the candidate runs were
	// recorded as (baseline refresh, run -record-baseline): the verdict is
	// no-baseline, as nothing was compared, and the recording is a
	// success, not a warning. Omitted otherwise.
	Recorded string `json:"recorded,omitempty"`
	// RunIDs are the store ids of each side's runs, in the order of the
	// report's runs (views.go): a run's one name in every view; omitted
	// for runs that are not stored (compare of trace files, a read-only
	// store's candidate).
	RunIDs *RunIDs `json:"run_ids,omitempty"`
	// RunsLeftOut are the runs the comparison left out of some metrics,
	// each with why (select.go): disturbed runs (and paired runs' other
	// halves) where each side kept a quiet run, timing runs whose clocks
	// differ. Omitted when none was.
	RunsLeftOut []LeftOutRun `json:"runs_left_out,omitempty"`
}

// Sampling is how gpugate ab sampled pairs, or gpugate run with repeat:
// auto candidate runs (Unit "run").
type Sampling struct {
	// Unit is what was sampled: "pair" (ab; empty in older files) or
	// "run" (repeat: auto, against a stored baseline).
	Unit     string `json:"unit,omitempty"`
	Pairs    int    `json:"pairs"`     // pairs measured (the warm-up pair not counted)
	MinPairs int    `json:"min_pairs"` // the first look
	MaxPairs int    `json:"max_pairs"`
	// Runs, MinRuns and MaxRuns are Pairs, MinPairs and MaxPairs of
	// repeat: auto: candidate runs made, the first look, the most.
	Runs    int  `json:"runs,omitempty"`
	MinRuns int  `json:"min_runs,omitempty"`
	MaxRuns int  `json:"max_runs,omitempty"`
	Fixed   bool `json:"fixed"` // a fixed number of pairs, one look
	// Profiled is how many of the runs (pairs) were also profiled, when
	// step time came from timing runs and the profiled runs were fewer
	// (timing.go); 0 otherwise.
	Profiled int `json:"profiled,omitempty"`
	// LookAlpha is the level of each look's interval (α over the looks).
	LookAlpha float64  `json:"look_alpha"`
	BudgetSec float64  `json:"budget_sec"` // 0: none
	WallSec   float64  `json:"wall_sec"`
	PairSec   float64  `json:"pair_sec"`          // mean wall time of a pair
	RunSec    float64  `json:"run_sec,omitempty"` // repeat: auto: mean wall time of a run
	Order     []string `json:"order"`             // B1 H1 H2 B2 … (R1 R2 … for runs), as run
	Stopped   string   `json:"stopped"`           // why sampling stopped
	// Advice says, for an inconclusive verdict, how many more pairs and
	// minutes would settle it; omitted otherwise.
	Advice string `json:"advice,omitempty"`
}

// String says it in a sentence.
func (s *Sampling) String() string {
	out := fmt.Sprintf("sampling: %d pair(s) of about %.0fs each, order %s; stopped: %s", s.Pairs, s.PairSec, strings.Join(s.Order, " "), s.Stopped)
	if s.Unit == stats.UnitRun {
		out = fmt.Sprintf("sampling (repeat: auto): %d candidate run(s) of about %.0fs each, a look after each at α=%.3g; stopped: %s", s.Runs, s.RunSec, s.LookAlpha, s.Stopped)
	}
	if s.Profiled > 0 {
		unit := "pair(s)"
		if s.Unit == stats.UnitRun {
			unit = "run(s)"
		}
		out += fmt.Sprintf("; %d of the %s also profiled (the others timed only)", s.Profiled, unit)
	}
	if s.Advice != "" {
		out += "; " + s.Advice
	}
	return out
}

// Acceptance records who accepted a regression, and which metrics.
type Acceptance struct {
	Label   string   `json:"label"`   // the pull request label
	Metrics []string `json:"metrics"` // the gate metrics that regressed
}

// Accept turns a regression into an accepted one, because the pull request
// carries label: the verdict becomes stats.Accepted and the report names
// the label and the metrics it accepted. Other verdicts are left alone (an
// inconclusive run is not made to pass by a label); it reports whether it
// changed anything.
func Accept(r *Report, label string) bool {
	if r.Verdict != stats.Regression {
		return false
	}
	a := &Acceptance{Label: label, Metrics: []string{}}
	for _, m := range r.Metrics {
		if m.Gate && m.Verdict == stats.Regression {
			a.Metrics = append(a.Metrics, m.Name)
		}
	}
	r.Verdict, r.Accepted = stats.Accepted, a
	return true
}

// Side describes what one side of the comparison is made of.
type Side struct {
	// Newest is when the newest run of the side was recorded (RFC 3339),
	// for stored baselines.
	Newest string `json:"newest,omitempty"`
	Runs   int    `json:"runs"`
	Ranks  int    `json:"ranks"`
	// Steps counts the steps of the job, summed over the runs: the ranks of
	// a run step in lockstep, so their steps are combined, not added.
	Steps int      `json:"steps"`
	Paths []string `json:"paths"`
	// What the traces say about where they ran; empty or 0 when they do
	// not say. Devices are the distinct GPU names, in order of appearance;
	// DeviceCount the GPUs a run's ranks used, together.
	Devices     []string `json:"devices"`
	DeviceCount int      `json:"device_count"`
	WorldSize   int      `json:"world_size"`
	Profiler    string   `json:"profiler"`
}

// Part is one component of the mean step time.
type Part struct {
	Name      string  `json:"name"`
	Baseline  float64 `json:"baseline_ms"`
	Candidate float64 `json:"candidate_ms"`
	Delta     float64 `json:"delta_ms"`
}

// Decomposition takes the change in mean step time apart. The parts add up
// to the step time exactly: compute busy + exposed communication + exposed
// copies + host-wait idle + other idle (GPU profiles), or data-loader wait +
// other host time (profiles without GPU activity).
type Decomposition struct {
	// Baseline and Candidate are the side's mean step time: the
	// arithmetic mean of its runs' mean steps (RunValue of step_time).
	// The Δ of step_time compares geometric means of the same run means
	// (stats.Summary.Value), which weigh a slow run less.
	Baseline  float64 `json:"baseline_ms"`
	Candidate float64 `json:"candidate_ms"`
	Delta     float64 `json:"delta_ms"`
	Parts     []Part  `json:"parts"`
}

// KernelChange is one kernel name's count and time per step on both sides.
type KernelChange struct {
	Name           string  `json:"name"`
	BaselineCount  float64 `json:"baseline_per_step"`
	CandidateCount float64 `json:"candidate_per_step"`
	BaselineMs     float64 `json:"baseline_ms_per_step"`
	CandidateMs    float64 `json:"candidate_ms_per_step"`
	DeltaMs        float64 `json:"delta_ms_per_step"`
}

// KernelDiff lists kernels by their impact on time per step.
type KernelDiff struct {
	Added   []KernelChange `json:"added"`
	Removed []KernelChange `json:"removed"`
	Changed []KernelChange `json:"changed"`
}

// Finding is a candidate finding, marked when it is new or worse than in
// the baseline.
type Finding struct {
	analysis.Finding
	New   bool `json:"new"`
	Worse bool `json:"worse"`
	// BaselineShare is the share the same finding had in the baseline.
	BaselineShare float64 `json:"baseline_share"`
	// AccountsMs is how much of the change in mean step time (ms) the
	// finding's cause accounts for: its share of the candidate's mean step
	// minus its share of the baseline's. Findings are ranked by it, so
	// that the headline names the cause of the change, not the first new
	// finding (a slow loader's +500 ms headlined as the profiler's own
	// resident-memory growth, issue 19).
	AccountsMs float64 `json:"accounts_ms"`
}

// Compare compares candidate runs with baseline runs.
func Compare(base, cand []Run, opt Options) *Report {
	if opt.TopKernels == 0 {
		opt.TopKernels = 10
	}
	if opt.Thresholds.Alpha == 0 {
		opt.Thresholds.Alpha = stats.DefaultThresholds.Alpha
	}
	rep := &Report{Baseline: describe(base), Candidate: describe(cand), Alpha: opt.Thresholds.Alpha,
		Mismatch: []string{}, Warnings: []string{}, Findings: []Finding{}}
	rep.Paired = opt.Thresholds.Paired
	if opt.IDs != nil {
		ids := *opt.IDs
		rep.RunIDs = &ids
	}
	gates := Gates(opt)
	// The selection (select.go): which runs, and which of their values,
	// each metric is judged on.
	in, tim, clocksWhy := rep.selectFrom(base, cand, opt)
	for _, m := range analysis.Metrics {
		s := in.metric(m)
		if s.Timing {
			rep.Metrics = append(rep.Metrics, rep.compareTimed(spec(m, opt, gates, nil), tim, s, opt.Thresholds))
			continue
		}
		bs, cs := s.profiledSamples(m, base, cand, &rep.Warnings)
		if bs == nil && cs == nil {
			continue // absent on both sides (GPU metrics without a GPU)
		}
		if (bs == nil || cs == nil) && m.Optional() {
			// Memory measured on one side only: a baseline recorded by a
			// gpugate before memory metrics, or without profile_memory and
			// step samples. Not a change of the code: left out, said.
			side := "baseline"
			if cs == nil {
				side = "candidate"
			}
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: not measured in the %s runs (recorded before gpugate measured memory, or without allocator events or step samples): not compared", m.Name, side))
			continue
		}
		if (m.Name == "peak_memory" || m.Name == "peak_reserved") && memMeasure(base) != memMeasure(cand) {
			// One side's peak is the process's resident memory, the
			// other's an allocator's level: different quantities (a CPU
			// job's RSS is many times its allocator's), not a change of
			// the code.
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: the baseline's is %s, the candidate's %s, different quantities: not compared (torch.profiler profile_memory on both sides, or on neither)", m.Name, memMeasure(base), memMeasure(cand)))
			continue
		}
		res := stats.Compare(spec(m, opt, gates, bs), bs, cs, opt.Thresholds)
		if s.busy.any() {
			hostBusyResult(&res, s.busy, s.quietBase, s.quietCand, rep.RunName)
		}
		rep.Metrics = append(rep.Metrics, res)
	}
	in.contended = rep.Timing != nil && rep.Timing.Contended
	rep.RunsLeftOut = rep.leftOut(in, clocksWhy)
	rep.Warnings = append(rep.Warnings, AbsentGateWarnings(rep, gates)...)
	rep.Verdict = stats.Overall(rep.Metrics)
	rep.SampleUnit, rep.Noise = noise(rep, opt.Thresholds)
	// What is read as time — where the step time went, the findings'
	// shares, the ranks line and the headline, throughput — comes from the
	// quiet runs, as the time metrics do; from every run, said, when a
	// side has none (issue 37: "rank 1 slowed by 337.3 ms" and the
	// decomposition were the busy host's). Counts and kernels keep every
	// run.
	bi, ci, fromBusy := in.timeRuns()
	tb, tc := pick(base, bi), pick(cand, ci)
	if fromBusy != "" {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("where the step time went, the ranks line, the headline and throughput come from disturbed runs (%s): they show the busy host as much as the code", fromBusy))
	}
	rep.Decomposition = decompose(tb, tc)
	rep.Kernels = kernelDiff(base, cand, opt.TopKernels)
	rep.Findings = findings(tb, tc, rep.Decomposition)
	rep.syncFinding(cand)
	br, cr := perRank(tb), perRank(tc)
	rep.compareRanks(br, cr)
	rep.moreWork(br, cr)
	rep.explain()
	rep.compareWork(tb, tc)
	for _, rs := range [][]Run{base, cand} {
		for _, run := range rs {
			for _, r := range run {
				if r.WholeProfile {
					rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: no step markers; the whole profile is one step, so no statistics can be significant", r.Profile.Path))
				}
			}
		}
	}
	if rep.Baseline.Steps > 0 && rep.Candidate.Steps > 0 && hasGPU(base) != hasGPU(cand) {
		rep.Warnings = append(rep.Warnings, "one side has GPU activity and the other has none: the runs were not made under the same conditions")
	}
	if b, c := memSource(base), memSource(cand); b != "" && c != "" && b != c && memMeasure(base) == memMeasure(cand) {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("peak memory is measured differently on the two sides (baseline: %s, candidate: %s): compare like with like (torch.profiler profile_memory on both, or neither)", b, c))
	}
	rep.Nodes = rep.judgedNodes(base, cand, tb, tc, opt, gates) // stragglers.go
	rep.Warnings = dedup(rep.Warnings)
	return rep
}

// spec is how metric m is judged under opt (gates is Gates(opt)): its
// allowance and smallest absolute change, perf.yaml's where it sets them,
// else DefaultAllowance's, and whether it gates. bs are the baseline's
// samples of m.
func spec(m analysis.Metric, opt Options, gates map[string]bool, bs [][]float64) stats.Spec {
	allow, minAbs := DefaultAllowance(m)
	if a, ok := opt.Allowances[m.Name]; ok {
		allow = a
	}
	if a, ok := opt.MinAbs[m.Name]; ok {
		minAbs = a
	} else if m.Name == "sync_calls" && allZero(bs) {
		// New sync points: the baseline has none in any step, so a
		// sync in every 3rd step (0.33 a step) is as new as one in
		// every step. The 0.5 minimum is for counts that exist,
		// whose per-step mean moves by fractions when a sync lands
		// in one step or the next.
		minAbs = 0
	}
	return stats.Spec{Name: m.Name, Unit: m.Unit, Better: int(m.Better), Allowance: allow, MinAbs: minAbs, Gate: gates[m.Name]}
}

// allZero reports whether every step of every run is 0 (and there is one).
func allZero(runs [][]float64) bool {
	n := 0
	for _, r := range runs {
		for _, v := range r {
			if v != 0 {
				return false
			}
			n++
		}
	}
	return n > 0
}

// memMeasure is what a side's peak_memory measures: "resident memory"
// (the step hook's RSS) or "an allocator's level" (the trace's totals,
// torch.cuda's peaks); "" when it has none.
func memMeasure(runs []Run) string {
	switch memSource(runs) {
	case analysis.MemFromHookRSS:
		return "resident memory"
	case analysis.MemFromTrace, analysis.MemFromHookCUDA:
		return "an allocator's level"
	}
	return ""
}

// memSource is the source of the first step's memory numbers of the
// side, "" when it has none (analysis.MemFromTrace, ...).
func memSource(runs []Run) string {
	for _, run := range runs {
		for _, r := range run {
			if len(r.Steps) > 0 && r.Steps[0].Memory.Source != "" {
				return r.Steps[0].Memory.Source
			}
		}
	}
	return ""
}

func dedup(ws []string) []string {
	seen := map[string]bool{}
	out := ws[:0]
	for _, w := range ws {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

func hasGPU(runs []Run) bool {
	for _, run := range runs {
		for _, r := range run {
			if r.HasGPU {
				return true
			}
		}
	}
	return false
}

func describe(runs []Run) Side {
	s := Side{Runs: len(runs), Paths: []string{}, Devices: []string{}}
	profilers := map[string]bool{}
	for _, run := range runs {
		s.Ranks = max(s.Ranks, len(run))
		s.Steps += jobSteps(run)
		devices := 0
		for _, r := range run {
			p := r.Profile
			s.Paths = append(s.Paths, p.Path)
			devices += len(p.Devices)
			s.WorldSize = max(s.WorldSize, p.WorldSize)
			for _, d := range p.Devices {
				if d.Name != "" && !slices.Contains(s.Devices, d.Name) {
					s.Devices = append(s.Devices, d.Name)
				}
			}
			if p.Format != "" && !profilers[p.Format] {
				profilers[p.Format] = true
				s.Profiler = strings.Trim(s.Profiler+"+"+p.Format, "+")
			}
		}
		s.DeviceCount = max(s.DeviceCount, devices)
	}
	return s
}

// Mismatch lists how two sides' hardware and profiler differ, in a fixed
// order: devices, device count, world size, profiler. A field that one side
// does not record is not compared.
func Mismatch(base, cand Side) []string {
	var out []string
	dev := func(s Side) string { return strings.Join(s.Devices, ", ") }
	if len(base.Devices) > 0 && len(cand.Devices) > 0 && dev(base) != dev(cand) {
		out = append(out, fmt.Sprintf("devices: baseline %s, candidate %s", dev(base), dev(cand)))
	}
	if base.DeviceCount > 0 && cand.DeviceCount > 0 && base.DeviceCount != cand.DeviceCount {
		out = append(out, fmt.Sprintf("device count: baseline %d, candidate %d", base.DeviceCount, cand.DeviceCount))
	}
	if base.WorldSize > 0 && cand.WorldSize > 0 && base.WorldSize != cand.WorldSize {
		out = append(out, fmt.Sprintf("world size: baseline %d, candidate %d", base.WorldSize, cand.WorldSize))
	}
	if base.Profiler != "" && cand.Profiler != "" && base.Profiler != cand.Profiler {
		out = append(out, fmt.Sprintf("profiler: baseline %s, candidate %s", base.Profiler, cand.Profiler))
	}
	return out
}

// jobSteps is the number of steps of a run: its ranks step in lockstep.
func jobSteps(run Run) int {
	n := -1
	for _, r := range run {
		if n < 0 || len(r.Steps) < n {
			n = len(r.Steps)
		}
	}
	return max(n, 0)
}

// Combine is how the ranks of one run make one value per step, by the
// metric's unit: a job's step takes as long as its slowest rank's, so
// times take the maximum over ranks; counts and bytes are summed (the
// job's total per step, so a sync that only one rank does still counts
// one); ratios (utilization, short-kernel share) are averaged.
func Combine(m analysis.Metric, values []float64) float64 {
	switch m.Unit {
	case "ms", "us", "MiB": // memory: each rank's device runs out on its own
		return slices.Max(values)
	case "ratio":
		var s float64
		for _, v := range values {
			s += v
		}
		return s / float64(len(values))
	}
	var s float64
	for _, v := range values {
		s += v
	}
	return s
}

// samples returns per-run samples of m, one value per step with the ranks
// combined (Combine); nil when m is absent from every run. Ranks are
// matched by step index; when their step counts differ the extra steps
// are left out and a warning says so.
func samples(runs []Run, m analysis.Metric, warnings *[]string) [][]float64 {
	var out [][]float64
	found := false
	for _, run := range runs {
		xs := combined(run, m, warnings)
		found = found || xs != nil
		out = append(out, xs)
	}
	if !found {
		return nil
	}
	return out
}

// combined is one run's per-step values of m, the ranks combined
// (Combine); nil when the run has none.
func combined(run Run, m analysis.Metric, warnings *[]string) []float64 {
	var per [][]float64
	for _, r := range run {
		if s := r.Samples(m); s != nil {
			per = append(per, s)
		}
	}
	if len(per) == 0 {
		return nil
	}
	if len(per) < len(run) && m.Optional() {
		// Memory of some ranks only: the run's largest peak is not
		// known, and the maximum of the others would pass for it.
		*warnings = append(*warnings, fmt.Sprintf("%s: %d of the %d ranks of a run have no values (%s among them): the run leaves it out", m.Name, len(run)-len(per), len(run), firstWithout(run, m)))
		return nil
	}
	n := len(per[0])
	for _, s := range per {
		if len(s) != n {
			n = min(n, len(s))
			*warnings = append(*warnings, fmt.Sprintf("the ranks of a run have different numbers of steps (%s has %d); steps are matched by position, the extra ones left out", run[0].Profile.Path, len(run[0].Steps)))
		}
	}
	xs := make([]float64, n)
	vals := make([]float64, len(per))
	for i := range xs {
		for k, s := range per {
			vals[k] = s[i]
		}
		xs[i] = Combine(m, vals)
	}
	return xs
}

// RunValue is a run's value of m, the one number per run that the gate
// compares (stats.Summary.RunMeans) and that every place showing a run's
// number shows (the report, baseline list and show, the dashboard): per
// step the ranks combined as Combine does (a time the slowest rank's, a
// count the sum over ranks, a ratio their mean), then the mean over the
// run's measured steps, non-finite values left out. ok is false when the
// run has no finite value of m (a GPU metric of a CPU run).
func RunValue(run Run, m analysis.Metric) (v float64, ok bool) {
	var ws []string
	// Summed in ascending order, as stats sums a run's steps: the same
	// bits, not merely the same number to print (runMean).
	return runMean(combined(run, m, &ws))
}

// firstWithout is the path of the first rank of run without m.
func firstWithout(run Run, m analysis.Metric) string {
	for _, r := range run {
		if r.Samples(m) == nil {
			return r.Profile.Path
		}
	}
	return ""
}

// noise says which unit the tests used and the run-to-run spread seen.
func noise(rep *Report, th stats.Thresholds) (unit, text string) {
	var st *stats.Result
	for i := range rep.Metrics {
		if rep.Metrics[i].Name == "step_time" {
			st = &rep.Metrics[i]
		}
	}
	if st == nil {
		return "", ""
	}
	spread := func(s stats.Summary, side string) string {
		if s.Runs < 2 {
			return fmt.Sprintf("%d %s run", s.Runs, side)
		}
		return fmt.Sprintf("%d %s runs, whose mean step times spread by %.1f%% (CV %.1f%%)", s.Runs, side, 100*s.Spread, 100*s.RunCV)
	}
	seen := spread(st.Baseline, "baseline") + ", " + spread(st.Candidate, "candidate")
	if st.SampleUnit == stats.UnitPair {
		return stats.UnitPair, fmt.Sprintf("A/B pairs as samples (each pair's log-ratio of mean step times, head/base): %s", seen)
	}
	if st.Baseline.N+st.Candidate.N < 3 {
		return stats.UnitRun, fmt.Sprintf("runs as samples (each run's mean step): %s; no run-to-run spread is known, so nothing can be judged: record >= 3 baseline runs", seen)
	}
	return stats.UnitRun, fmt.Sprintf("runs as samples (each run's mean step): %s; the intervals include that drift", seen)
}

// slowest returns, per step index of a run, the step of its slowest rank.
func slowest(run Run) []*analysis.Step {
	n := jobSteps(run)
	out := make([]*analysis.Step, n)
	for i := range n {
		for _, r := range run {
			if s := &r.Steps[i]; out[i] == nil || s.StepTime() > out[i].StepTime() {
				out[i] = s
			}
		}
	}
	return out
}

// mean of f over the runs: per run the mean over its steps, each step the
// slowest rank's, then the mean of those run means (every run weighs the
// same, as in the gate's samples, whatever its step count). For step time
// a run's mean is its RunValue, and the parts of the decomposition add up
// to it.
func mean(runs []Run, f func(*analysis.Step) float64) float64 {
	var sum float64
	n := 0
	for _, run := range runs {
		steps := slowest(run)
		if len(steps) == 0 {
			continue
		}
		var rs float64
		for _, s := range steps {
			rs += f(s)
		}
		sum += rs / float64(len(steps))
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func decompose(base, cand []Run) Decomposition {
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	type part struct {
		name string
		f    func(*analysis.Step) float64
	}
	var parts []part
	if hasGPU(base) || hasGPU(cand) {
		parts = []part{
			{"compute busy", func(s *analysis.Step) float64 { return ms(s.Compute) }},
			{"exposed communication", func(s *analysis.Step) float64 { return ms(s.ExposedComm) }},
			{"exposed copies", func(s *analysis.Step) float64 { return ms(s.ExposedCopy) }},
			{"host-wait idle", func(s *analysis.Step) float64 { return ms(s.CPUWait) }},
			{"other idle", func(s *analysis.Step) float64 { return ms(s.GPUIdle() - s.CPUWait) }},
		}
	} else {
		parts = []part{
			{"data-loader wait", func(s *analysis.Step) float64 { return ms(s.DataWait) }},
			{"other host time", func(s *analysis.Step) float64 { return ms(s.StepTime() - s.DataWait) }},
		}
	}
	step := func(s *analysis.Step) float64 { return ms(s.StepTime()) }
	d := Decomposition{Baseline: mean(base, step), Candidate: mean(cand, step), Parts: []Part{}}
	d.Delta = d.Candidate - d.Baseline
	for _, p := range parts {
		b, c := mean(base, p.f), mean(cand, p.f)
		d.Parts = append(d.Parts, Part{Name: p.name, Baseline: b, Candidate: c, Delta: c - b})
	}
	slices.SortStableFunc(d.Parts, func(a, b Part) int { return cmp.Compare(math.Abs(b.Delta), math.Abs(a.Delta)) })
	return d
}

// perStep sums kernel stats over a side's ranks and divides by its job
// steps: the job's kernels per step, as the kernels metric counts them.
func perStep(runs []Run) map[string][2]float64 {
	out := map[string][2]float64{}
	steps := 0
	for _, run := range runs {
		steps += jobSteps(run)
		for _, r := range run {
			for _, k := range r.KernelStats {
				v := out[k.Name]
				v[0] += float64(k.Count)
				v[1] += float64(k.Time) / 1e6
				out[k.Name] = v
			}
		}
	}
	for k, v := range out {
		out[k] = [2]float64{v[0] / float64(max(steps, 1)), v[1] / float64(max(steps, 1))}
	}
	return out
}

func kernelDiff(base, cand []Run, top int) KernelDiff {
	b, c := perStep(base), perStep(cand)
	d := KernelDiff{Added: []KernelChange{}, Removed: []KernelChange{}, Changed: []KernelChange{}}
	for name, cv := range c {
		bv, ok := b[name]
		ch := KernelChange{Name: name, BaselineCount: bv[0], CandidateCount: cv[0], BaselineMs: bv[1], CandidateMs: cv[1], DeltaMs: cv[1] - bv[1]}
		switch {
		case !ok:
			d.Added = append(d.Added, ch)
		case math.Abs(cv[0]-bv[0]) >= 0.5 || math.Abs(ch.DeltaMs) > 0.1*bv[1] && math.Abs(ch.DeltaMs) >= 0.01:
			d.Changed = append(d.Changed, ch)
		}
	}
	for name, bv := range b {
		if _, ok := c[name]; !ok {
			d.Removed = append(d.Removed, KernelChange{Name: name, BaselineCount: bv[0], BaselineMs: bv[1], DeltaMs: -bv[1]})
		}
	}
	byImpact := func(l []KernelChange) []KernelChange {
		slices.SortFunc(l, func(a, b KernelChange) int {
			return cmp.Or(cmp.Compare(math.Abs(b.DeltaMs), math.Abs(a.DeltaMs)), strings.Compare(a.Name, b.Name))
		})
		return l[:min(len(l), top)]
	}
	d.Added, d.Removed, d.Changed = byImpact(d.Added), byImpact(d.Removed), byImpact(d.Changed)
	return d
}

// strongest returns, per finding id, the finding with the largest share over
// every rank of every run.
func strongest(runs []Run) map[string]analysis.Finding {
	out := map[string]analysis.Finding{}
	for _, run := range runs {
		for _, r := range run {
			for _, f := range r.Findings() {
				if old, ok := out[f.ID]; !ok || f.Share > old.Share {
					out[f.ID] = f
				}
			}
		}
	}
	return out
}

// findings lists the candidate's findings, new or worse ones first, each
// group ranked by how much of the change in mean step time they account
// for (sortFindings).
func findings(base, cand []Run, d Decomposition) []Finding {
	b, c := strongest(base), strongest(cand)
	var out []Finding
	for id, f := range c {
		g := Finding{Finding: f}
		if bf, ok := b[id]; ok {
			g.BaselineShare = bf.Share
			g.Worse = f.Share > bf.Share*1.25 && f.Share-bf.Share > 0.02
		} else {
			g.New = true
		}
		g.AccountsMs = g.Share*d.Candidate - g.BaselineShare*d.Baseline
		out = append(out, g)
	}
	rep := Report{Findings: out}
	rep.sortFindings()
	if rep.Findings == nil {
		rep.Findings = []Finding{}
	}
	return rep.Findings
}

// metric returns the result for the named metric, or nil.
func (rep *Report) metric(name string) *stats.Result {
	for i := range rep.Metrics {
		if rep.Metrics[i].Name == name {
			return &rep.Metrics[i]
		}
	}
	return nil
}

// syncFinding makes sure that sync calls that are new or more frequent in
// the candidate carry a host-sync finding, whatever they cost: on a GPU a
// new .item() per step is a stall waiting to grow, even where this trace
// shows it cheap.
func (rep *Report) syncFinding(cand []Run) {
	m := rep.metric("sync_calls")
	if m == nil || !m.Significant || m.Delta <= 0 {
		return
	}
	if m.Baseline.Mean > 0 && m.Delta < math.Max(m.MinAbs, 0.5) {
		// More of the syncs that exist: from half a sync a step.
		return
	}
	evidence := fmt.Sprintf("mean sync calls per step %s → %s", num(m.Baseline.Value), num(m.Candidate.Value))
	for i := range rep.Findings {
		f := &rep.Findings[i]
		if f.ID == "host-sync" {
			if !f.New {
				f.Worse = true
			}
			f.Evidence = evidence + "; " + f.Evidence
			rep.sortFindings()
			return
		}
	}
	// The rank with the most sync calls speaks for the run.
	var best *analysis.Finding
	var most float64 = -1
	for _, run := range cand {
		for _, r := range run {
			syncs, _ := analysis.MetricByName("sync_calls")
			med := analysis.Summarize(r.Samples(syncs)).Median
			if f := r.SyncFinding(); f != nil && med > most {
				best, most = f, med
			}
		}
	}
	if best == nil {
		return
	}
	best.Evidence = evidence + "; " + best.Evidence
	g := Finding{Finding: *best, New: m.Baseline.Mean == 0, Worse: m.Baseline.Mean > 0}
	g.AccountsMs = g.Share * rep.Decomposition.Candidate
	rep.Findings = append(rep.Findings, g)
	rep.sortFindings()
}

func num(v float64) string {
	// A geometric mean of equal counts is the count to within rounding.
	if r := math.Round(v); math.Abs(v-r) <= 1e-9*math.Abs(v) {
		v = r
	}
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// explain gives every regression its why: the new or worse finding that
// accounts for it, or else a plain account of the metric and where in the
// step it moved.
func (rep *Report) explain() {
	related := map[string][]string{
		"step_time":     {"more-work", "data-loader-bound", "host-sync", "launch-bound", "memcpy-bound", "comm-bound", "low-utilization"},
		"sync_calls":    {"host-sync"},
		"kernels":       {"more-work", "launch-bound"},
		"gpu_util":      {"data-loader-bound", "host-sync", "launch-bound", "memcpy-bound", "comm-bound", "low-utilization"},
		"cpu_wait":      {"data-loader-bound", "host-sync", "launch-bound"},
		"data_wait":     {"data-loader-bound"},
		"sync_time":     {"host-sync"},
		"peak_memory":   {"memory-growth"},
		"peak_reserved": {"memory-growth"},
		"rss":           {"memory-growth"},
		"alloc_growth":  {"memory-growth"},
	}
	// The report's Cause is the finding of the headline regression:
	// step_time's when a finding explains it (what a training job pays
	// for), else that of the first gated regression a finding explains.
	causes := map[string]string{}
	for i := range rep.Metrics {
		m := &rep.Metrics[i]
		if m.Verdict != stats.Regression {
			continue
		}
		// Findings are ranked by the step time they account for, so the
		// first related one is the one that explains most of the change.
		for _, f := range rep.Findings {
			if (f.New || f.Worse) && slices.Contains(related[m.Name], f.ID) {
				m.Why = fmt.Sprintf("`%s`: %s", f.ID, f.Summary)
				if m.Gate {
					causes[m.Name] = f.ID
					if rep.Cause == "" {
						rep.Cause = f.ID
					}
				}
				break
			}
		}
		if m.Why == "" {
			m.Why = rep.plainWhy(m)
		}
	}
	if c, ok := causes["step_time"]; ok {
		rep.Cause = c
		return
	}
	if len(causes) == 0 {
		return
	}
	// No cause of step time: the headline names, among the causes of the
	// gated regressions and the more-work finding when the step got
	// slower (more work per step also brings more kernels, syncs and
	// memory), the one that accounts for most of the change in step time
	// (findings are ranked by it). Three extra forward passes with a
	// .item() each regress sync_calls while step time stays inconclusive
	// on a noisy machine: the extra work is the cause, not the sync
	// (issue 28).
	named := map[string]bool{}
	for _, c := range causes {
		named[c] = true
	}
	for _, f := range rep.Findings {
		if (f.New || f.Worse) && (named[f.ID] || f.ID == "more-work" && rep.Decomposition.Delta > 0 && f.AccountsMs > 0) {
			rep.Cause = f.ID
			return
		}
	}
}

// plainWhy describes a regression no finding explains.
func (rep *Report) plainWhy(m *stats.Result) string {
	d := rep.Decomposition
	where := func() string {
		var parts []string
		for _, p := range d.Parts {
			if len(parts) == 2 || math.Abs(p.Delta) < 0.01 {
				break
			}
			parts = append(parts, fmt.Sprintf("%s %+.2f ms", p.Name, p.Delta))
		}
		if len(parts) == 0 {
			return "no part of the step stands out"
		}
		return "most in " + strings.Join(parts, ", ")
	}
	switch m.Name {
	case "step_time":
		return fmt.Sprintf("step_time is the time per step as the GPU sees it, the slowest rank's; the mean step went %.2f → %.2f ms (%+.2f), %s; no finding names a cause",
			d.Baseline, d.Candidate, d.Delta, where())
	case "kernels":
		var names []string
		for _, k := range rep.Kernels.Added {
			if len(names) == 3 {
				break
			}
			names = append(names, fmt.Sprintf("%s (+%s)", escape.CodeSpan(k.Name), num(k.CandidateCount)))
		}
		s := fmt.Sprintf("kernels counts the kernels the job runs per step: %s → %s (mean per run)", num(m.Baseline.Value), num(m.Candidate.Value))
		if len(names) > 0 {
			s += "; new kernels: " + strings.Join(names, ", ")
		}
		return s
	}
	desc := ""
	if mt, ok := analysis.MetricByName(m.Name); ok && (mt.Unit == "ms" || mt.Unit == "us") {
		desc = "; " + where()
	}
	return fmt.Sprintf("%s per step went %s → %s %s (mean per run)%s", m.Name, num(m.Baseline.Value), num(m.Candidate.Value), m.Unit, desc)
}

// sortFindings orders the findings: new or worse ones first, ranked by the
// step time they account for (AccountsMs), then by how much more of the
// step they take; the rest after them. Newness alone no longer ranks: a
// new finding that accounts for nothing of the change (the profiler's own
// memory growth) must not lead a slowdown that another cause explains.
func (rep *Report) sortFindings() {
	class := func(f Finding) int {
		if f.New || f.Worse {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(rep.Findings, func(x, y Finding) int {
		return cmp.Or(cmp.Compare(class(x), class(y)), cmp.Compare(y.AccountsMs, x.AccountsMs),
			cmp.Compare(y.Share-y.BaselineShare, x.Share-x.BaselineShare), strings.Compare(x.ID, y.ID))
	})
}

// ExitCode maps a verdict to gpugate's exit status, the one place that
// does (diff(1) style): 0 pass, improvement, accepted, and no-baseline
// unless noBaselineFails; 1 regression; 3 inconclusive (the data could not
// decide; a script can tell it from trouble); 2 anything else, and a
// missing baseline that is configured to fail.
func ExitCode(v stats.Verdict, noBaselineFails bool) int {
	switch v {
	case stats.Pass, stats.Improvement, stats.Accepted:
		return 0
	case stats.NoBaseline:
		if noBaselineFails {
			return 2
		}
		return 0
	case stats.Regression:
		return 1
	case stats.Inconclusive:
		return 3
	}
	return 2
}

// NoBaseline is the report of a run that has nothing to be compared with
// yet: verdict no-baseline, the reason among the warnings, and the
// candidate's own findings.
func NoBaseline(cand []Run, why string) *Report {
	rep := &Report{Verdict: stats.NoBaseline, Candidate: describe(cand), Baseline: describe(nil), Metrics: []stats.Result{}, Mismatch: []string{},
		Decomposition: Decomposition{Parts: []Part{}}, Kernels: KernelDiff{Added: []KernelChange{}, Removed: []KernelChange{}, Changed: []KernelChange{}},
		Warnings: []string{why}, Findings: []Finding{}}
	for _, f := range strongest(cand) {
		rep.Findings = append(rep.Findings, Finding{Finding: f})
	}
	slices.SortFunc(rep.Findings, func(a, b Finding) int { return cmp.Compare(b.Share, a.Share) })
	rep.Nodes = nodeView(nil, cand)
	return rep
}
