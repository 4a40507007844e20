package analysis

import (
	"slices"

	"github.com/gpugate/gpugate/stats"
	"github.com/gpugate/gpugate/trace"
)

// Better says which direction of change is an improvement.
type Better int

const (
	Lower  Better = -1
	Higher Better = 1
)

// Metric describes one per-step metric: its name, unit and direction, and
// how to read it from a Step. Summaries, comparisons and reports all walk
// this one table.
type Metric struct {
	Name   string // snake_case id, e.g. "step_time"
	Unit   string // "ms", "us", "count", "ratio", "MB"
	Better Better
	// GPU metrics are absent for profiles without GPU activity.
	GPU   bool
	Value func(*Step) float64
}

// Key is the metric's name with its unit, as summaries are keyed:
// "step_time_ms", "kernels", "gpu_util".
func (m Metric) Key() string {
	switch m.Unit {
	case "count", "ratio":
		return m.Name
	}
	return m.Name + "_" + m.Unit
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// Metrics lists every per-step metric.
var Metrics = []Metric{
	{"step_time", "ms", Lower, false, func(s *Step) float64 { return ms(s.StepTime()) }},
	{"kernels", "count", Lower, true, func(s *Step) float64 { return float64(s.Kernels) }},
	{"gpu_busy", "ms", Lower, true, func(s *Step) float64 { return ms(s.GPUBusy) }},
	{"gpu_util", "ratio", Higher, true, func(s *Step) float64 { return s.GPUUtil() }},
	{"gpu_idle", "ms", Lower, true, func(s *Step) float64 { return ms(s.GPUIdle()) }},
	{"cpu_wait", "ms", Lower, true, func(s *Step) float64 { return ms(s.CPUWait) }},
	{"data_wait", "ms", Lower, false, func(s *Step) float64 { return ms(s.DataWait) }},
	{"sync_calls", "count", Lower, false, func(s *Step) float64 { return float64(s.SyncCalls) }},
	{"sync_time", "ms", Lower, false, func(s *Step) float64 { return ms(s.SyncTime) }},
	{"memcpy_h2d_count", "count", Lower, true, func(s *Step) float64 { return float64(s.H2D.Count) }},
	{"memcpy_h2d_bytes", "MB", Lower, true, func(s *Step) float64 { return float64(s.H2D.Bytes) / 1e6 }},
	{"memcpy_h2d_time", "ms", Lower, true, func(s *Step) float64 { return ms(s.H2D.Time) }},
	{"memcpy_d2h_count", "count", Lower, true, func(s *Step) float64 { return float64(s.D2H.Count) }},
	{"memcpy_d2h_bytes", "MB", Lower, true, func(s *Step) float64 { return float64(s.D2H.Bytes) / 1e6 }},
	{"memcpy_d2h_time", "ms", Lower, true, func(s *Step) float64 { return ms(s.D2H.Time) }},
	{"memcpy_d2d_count", "count", Lower, true, func(s *Step) float64 { return float64(s.D2D.Count) }},
	{"memcpy_d2d_bytes", "MB", Lower, true, func(s *Step) float64 { return float64(s.D2D.Bytes) / 1e6 }},
	{"memcpy_d2d_time", "ms", Lower, true, func(s *Step) float64 { return ms(s.D2D.Time) }},
	{"memcpy_pageable", "count", Lower, true, func(s *Step) float64 { return float64(s.H2D.Pageable + s.D2H.Pageable + s.D2D.Pageable) }},
	{"comm_time", "ms", Lower, true, func(s *Step) float64 { return ms(s.CommTime) }},
	{"exposed_comm", "ms", Lower, true, func(s *Step) float64 { return ms(s.ExposedComm) }},
	{"exposed_copy", "ms", Lower, true, func(s *Step) float64 { return ms(s.ExposedCopy) }},
	{"launch_overhead", "us", Lower, true, func(s *Step) float64 { return float64(s.LaunchOverhead) / 1e3 }},
	{"short_kernels", "ratio", Lower, true, func(s *Step) float64 { return s.ShortKernels }},
}

// MetricByName finds a metric by name or key.
func MetricByName(name string) (Metric, bool) {
	for _, m := range Metrics {
		if m.Name == name || m.Key() == name {
			return m, true
		}
	}
	return Metric{}, false
}

// Summary describes a metric's per-step samples.
type Summary struct {
	Median float64 `json:"median"`
	Mean   float64 `json:"mean"`
	P90    float64 `json:"p90"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// Summarize computes the summary of xs. Quantiles interpolate linearly
// between order statistics (numpy's default, type 7).
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	return Summary{
		Median: Quantile(s, 0.5),
		Mean:   sum / float64(len(s)),
		P90:    Quantile(s, 0.9),
		Min:    s[0],
		Max:    s[len(s)-1],
		N:      len(s),
	}
}

// Quantile returns the q-quantile of sorted xs (stats.Quantile).
func Quantile(sorted []float64, q float64) float64 { return stats.Quantile(sorted, q) }

// Samples returns the per-step values of m, or nil when m is absent from
// this profile (a GPU metric without GPU activity).
func (r *Result) Samples(m Metric) []float64 {
	if (m.GPU && !r.HasGPU) || !r.present(m) {
		return nil // absent: a GPU metric without GPU activity, memory without its events
	}
	xs := make([]float64, len(r.Steps))
	for i := range r.Steps {
		xs[i] = m.Value(&r.Steps[i])
	}
	return xs
}

// Summaries returns the summary of every metric present in the profile,
// keyed by Metric.Key.
func (r *Result) Summaries() map[string]Summary {
	out := map[string]Summary{}
	for _, m := range Metrics {
		if xs := r.Samples(m); xs != nil {
			out[m.Key()] = Summarize(xs)
		}
	}
	return out
}

// FromSteps rebuilds a Result from steps computed earlier (an analyze JSON
// document), for comparisons; it has no events, so findings name no
// culprits.
func FromSteps(p *trace.Profile, hasGPU bool, steps []Step, kernels []KernelStat) *Result {
	return &Result{Profile: p, HasGPU: hasGPU, Steps: steps, KernelStats: kernels, stepRE: DefaultStepPattern}
}
