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
	"github.com/gpugate/gpugate/stats"
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
}

// DefaultGate is what gates when perf.yaml says nothing: the step's health
// as users read it — step time, kernels per step and CPU-side wait — plus
// sync calls, the usual cause of a new host stall. CPU wait is a GPU
// metric: on profiles without GPU activity it is absent and gates nothing.
var DefaultGate = []string{"step_time", "kernels", "cpu_wait", "sync_calls"}

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

// Report is the comparison. Its JSON form is documented in docs/json.md.
type Report struct {
	Verdict       stats.Verdict  `json:"verdict"`
	Baseline      Side           `json:"baseline"`
	Candidate     Side           `json:"candidate"`
	Noise         string         `json:"noise"`
	Metrics       []stats.Result `json:"metrics"`
	Decomposition Decomposition  `json:"decomposition"`
	Kernels       KernelDiff     `json:"kernels"`
	Findings      []Finding      `json:"findings"`
	Warnings      []string       `json:"warnings"`
	// Overhead is the profiler's cost measured by an unprofiled timing
	// pass (gpugate run with step_log set); null otherwise.
	Overhead *Overhead `json:"profiling_overhead"`
	// Accepted is set when a pull request label declared the regression
	// intended: Verdict is then "accepted" and the metric results still
	// say "regression".
	Accepted *Acceptance `json:"accepted,omitempty"`
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

// Overhead compares the job's own step times with and without the profiler.
type Overhead struct {
	ProfiledMs   float64 `json:"profiled_ms"`   // median step time the job logged under the profiler
	UnprofiledMs float64 `json:"unprofiled_ms"` // the same without it
	Ratio        float64 `json:"ratio"`         // profiled / unprofiled
}

// Side describes what one side of the comparison is made of.
type Side struct {
	// Newest is when the newest run of the side was recorded (RFC 3339),
	// for stored baselines.
	Newest string   `json:"newest,omitempty"`
	Runs   int      `json:"runs"`
	Ranks  int      `json:"ranks"`
	Steps  int      `json:"steps"`
	Paths  []string `json:"paths"`
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
	Baseline  float64 `json:"baseline_ms"` // mean step time
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
}

// Compare compares candidate runs with baseline runs.
func Compare(base, cand []Run, opt Options) *Report {
	if opt.TopKernels == 0 {
		opt.TopKernels = 10
	}
	rep := &Report{Baseline: describe(base), Candidate: describe(cand), Warnings: []string{}, Findings: []Finding{}}
	gates := Gates(opt)
	for _, m := range analysis.Metrics {
		bs, cs := samples(base, m), samples(cand, m)
		if bs == nil && cs == nil {
			continue // absent on both sides (GPU metrics without a GPU)
		}
		allow, minAbs := DefaultAllowance(m)
		if a, ok := opt.Allowances[m.Name]; ok {
			allow = a
		}
		rep.Metrics = append(rep.Metrics, stats.Compare(stats.Spec{
			Name: m.Name, Unit: m.Unit, Better: int(m.Better), Allowance: allow, MinAbs: minAbs, Gate: gates[m.Name],
		}, bs, cs, opt.Thresholds))
	}
	rep.Verdict = stats.Overall(rep.Metrics)
	rep.Noise = noise(rep)
	rep.Decomposition = decompose(base, cand)
	rep.Kernels = kernelDiff(base, cand, opt.TopKernels)
	rep.Findings = findings(base, cand)
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
	return rep
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
	s := Side{Runs: len(runs), Paths: []string{}}
	for _, run := range runs {
		s.Ranks = max(s.Ranks, len(run))
		for _, r := range run {
			s.Steps += len(r.Steps)
			s.Paths = append(s.Paths, r.Profile.Path)
		}
	}
	return s
}

// Trim leaves the edges of a profile's steps out of the statistics. The
// last step closes torch.profiler's active window and carries the trace
// stop, or is truncated (HTA drops it by default); the first measured step
// often still does one-time work. On the real fixtures: the V100 ResNet-50
// num_workers=4 capture's first and last steps take 170 and 203 ms against
// a median of 123 ms; the A100 rank-0 trace's first step runs 1780 kernels
// in 372 ms, the others 1075 in 216 ms. From 4 steps the last is left out,
// from 5 the first too.
func Trim(steps []analysis.Step) []analysis.Step {
	lo, hi := trimBounds(len(steps))
	return steps[lo:hi]
}

// trimBounds is the range [lo, hi) of n steps that Trim keeps.
func trimBounds(n int) (lo, hi int) {
	switch {
	case n >= 5:
		return 1, n - 1
	case n == 4:
		return 0, 3
	}
	return 0, n
}

// samples returns per-run samples of m, the steps of all ranks pooled; nil
// when m is absent from every run.
func samples(runs []Run, m analysis.Metric) [][]float64 {
	var out [][]float64
	found := false
	for _, run := range runs {
		var xs []float64
		for _, r := range run {
			if s := r.Samples(m); s != nil {
				found = true
				lo, hi := trimBounds(len(s))
				xs = append(xs, s[lo:hi]...)
			}
		}
		out = append(out, xs)
	}
	if !found {
		return nil
	}
	return out
}

// noise says how the verdict accounted for run-to-run variation.
func noise(rep *Report) string {
	var st *stats.Result
	for i := range rep.Metrics {
		if rep.Metrics[i].Name == "step_time" {
			st = &rep.Metrics[i]
		}
	}
	if st == nil {
		return ""
	}
	switch {
	case st.Baseline.Runs > 1:
		return fmt.Sprintf("%d baseline runs, whose median step times spread by %.1f%%: time allowances widened by that spread", st.Baseline.Runs, 100*st.Baseline.Spread)
	case st.Candidate.Runs > 1:
		return fmt.Sprintf("%d candidate runs, whose median step times spread by %.1f%%: time allowances widened by that spread", st.Candidate.Runs, 100*st.Candidate.Spread)
	}
	return "one run on each side: per-step samples cannot show run-to-run drift (captures of one configuration minutes apart differ by up to 17%); use repeat >= 3 or a baseline of several runs"
}

// mean of f over every step of every rank of every run.
func mean(runs []Run, f func(*analysis.Step) float64) float64 {
	var sum float64
	n := 0
	for _, run := range runs {
		for _, r := range run {
			steps := Trim(r.Steps)
			for i := range steps {
				sum += f(&steps[i])
				n++
			}
		}
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

// perStep sums kernel stats over a side and divides by its step count.
func perStep(runs []Run) map[string][2]float64 {
	out := map[string][2]float64{}
	steps := 0
	for _, run := range runs {
		for _, r := range run {
			steps += len(r.Steps)
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

// findings lists the candidate's findings: new ones, then worsened ones,
// then the rest, each group ordered by how much more of the step they
// account for.
func findings(base, cand []Run) []Finding {
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
		out = append(out, g)
	}
	// New causes first: a cause the baseline did not have is more likely the
	// change's doing than one that grew, which run-to-run noise also does.
	class := func(f Finding) int {
		switch {
		case f.New:
			return 0
		case f.Worse:
			return 1
		}
		return 2
	}
	slices.SortFunc(out, func(x, y Finding) int {
		return cmp.Or(cmp.Compare(class(x), class(y)), cmp.Compare(y.Share-y.BaselineShare, x.Share-x.BaselineShare), strings.Compare(x.ID, y.ID))
	})
	if out == nil {
		out = []Finding{}
	}
	return out
}

// NoBaseline is the report of a run that has nothing to be compared with
// yet: it passes, says so, and lists the candidate's own findings.
func NoBaseline(cand []Run, why string) *Report {
	rep := &Report{Verdict: stats.Pass, Candidate: describe(cand), Baseline: describe(nil), Metrics: []stats.Result{},
		Decomposition: Decomposition{Parts: []Part{}}, Kernels: KernelDiff{Added: []KernelChange{}, Removed: []KernelChange{}, Changed: []KernelChange{}},
		Warnings: []string{why}, Findings: []Finding{}}
	for _, f := range strongest(cand) {
		rep.Findings = append(rep.Findings, Finding{Finding: f})
	}
	slices.SortFunc(rep.Findings, func(a, b Finding) int { return cmp.Compare(b.Share, a.Share) })
	return rep
}
