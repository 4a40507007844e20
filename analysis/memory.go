package analysis

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/gpugate/gpugate/trace"
)

// Memory per step.
//
// From the trace (Kineto [memory] events, nsys CUDA memory usage): the
// allocator's events are stamped on the host when the allocator runs, so a
// step's events are those in its host window [h0, h1) (host windows tile
// the host's timeline as the step windows tile the device's). Per device:
//
//   - peak_alloc_bytes: the largest "Total Allocated" among the events in
//     the window, and the level the step starts at (the total of the last
//     event before h0): between events the level does not change, so this
//     is the allocator's exact peak in the window. peak_reserved_bytes the
//     same for "Total Reserved" (CUDA's caching allocator).
//   - alloc_growth_bytes (the 2021 Kineto form and nsys, whose events carry
//     only their own size): the peak of the running sum of Bytes from h0,
//     relative to the step's start (0 when nothing rises above it); flagged
//     relative, never shown as an absolute level.
//
// From gpugate run's step hook (runner.StepSample, joined by the pipeline
// with SetHookMemory): on CUDA the caching allocator's own peaks of the
// step (torch.cuda.max_memory_allocated / max_memory_reserved, reset every
// step); on any device the process's resident memory at the step's end, or
// its peak RSS when that rose during the step (then it is the step's exact
// peak).
//
// Precedence for peak_memory, the gated number: the trace's allocator
// totals (modern Kineto) first, because analyze and compare see them in
// the trace itself; then the hook's CUDA allocator peaks; then the hook's
// resident memory. Within a source, the accelerator (the CUDA device with
// the largest peak) when there is one, else the host. Relative growth
// (alloc_growth) is never gated as a peak.
//
// Absent, not zero: without memory events or samples the metrics are
// absent from the result (Samples returns nil), and summaries, comparisons,
// the store and reports leave them out.

// Sources of a step's memory numbers.
const (
	MemFromTrace    = "trace"          // allocator totals in the trace
	MemFromRelative = "trace-relative" // allocator deltas only: alloc_growth
	MemFromHookCUDA = "hook-cuda"      // step hook, torch.cuda allocator peaks
	MemFromHookRSS  = "hook-rss"       // step hook, process resident memory
	// MemFromTraceHost: a trace with GPU activity whose allocator events
	// are all on the host (device -1): the host allocator's peak is kept
	// as host memory (StepMemory.HostPeak), and the step has no
	// peak_memory: a host peak is no GPU figure.
	MemFromTraceHost = "trace-host"
)

// DeviceMemory is one device's memory in one step, from the trace.
type DeviceMemory struct {
	// Device is the CUDA device ordinal, or -1 for the host allocator.
	Device int  `json:"device"`
	CUDA   bool `json:"cuda"`
	// PeakAlloc and PeakReserved are absolute (bytes); nil for relative
	// traces (and PeakReserved for the host allocator, which reserves
	// nothing).
	PeakAlloc    *int64 `json:"peak_alloc_bytes,omitempty"`
	PeakReserved *int64 `json:"peak_reserved_bytes,omitempty"`
	// AllocGrowth is the relative form: the running sum's peak above the
	// step's start.
	AllocGrowth *int64 `json:"alloc_growth_bytes,omitempty"`
	Relative    bool   `json:"relative"`
	Events      int    `json:"events"` // allocator events in the window
}

// StepMemory is a step's memory. Source "" means absent.
type StepMemory struct {
	Source string // MemFrom*
	// Device is the gated device: a CUDA ordinal, or -1 for the host.
	Device int
	// Peak is peak_memory in bytes (absolute sources); Reserved the
	// reserved peak on the same device (with HasReserved); Growth
	// alloc_growth (relative trace, with HasGrowth).
	Peak, Reserved, Growth int64
	// RSS is the process's resident memory at the step's end from the
	// hook (with HasRSS).
	RSS                            int64
	HasReserved, HasGrowth, HasRSS bool
	// HostPeak is the host allocator's peak in the step (with
	// HasHostPeak) when the source is MemFromTraceHost.
	HostPeak    int64
	HasHostPeak bool
}

func (m *StepMemory) hasPeak() bool {
	return m.Source != "" && m.Source != MemFromRelative && m.Source != MemFromTraceHost
}

// presence says, for metrics that a profile may lack, whether one step has
// the metric. A metric listed here is present in a result only when every
// step has it (Samples): a number for some steps only would compare steps
// of different kinds.
var presence = map[string]func(*Step) bool{
	"peak_memory":   func(s *Step) bool { return s.Memory.hasPeak() },
	"peak_reserved": func(s *Step) bool { return s.Memory.hasPeak() && s.Memory.HasReserved },
	"alloc_growth":  func(s *Step) bool { return s.Memory.HasGrowth },
	// rss beside a peak of another source (the hook's RSS is peak_memory
	// itself when nothing better measured it: not shown twice).
	"rss": func(s *Step) bool { return s.Memory.HasRSS && s.Memory.Source != MemFromHookRSS },
}

// Optional reports whether a profile may lack m for reasons that say
// nothing about the code under test (no allocator events, no step
// samples): comparisons leave such a metric out when one side lacks it.
func (m Metric) Optional() bool { return presence[m.Name] != nil }

const mib = 1 << 20

// memoryMetrics are appended to Metrics (init): peaks in MiB, lower is
// better. Between ranks they combine as the maximum (gate.Combine): each
// device runs out of memory on its own.
var memoryMetrics = []Metric{
	{Name: "peak_memory", Unit: "MiB", Better: Lower, Value: func(s *Step) float64 { return float64(s.Memory.Peak) / mib }},
	{Name: "peak_reserved", Unit: "MiB", Better: Lower, Value: func(s *Step) float64 { return float64(s.Memory.Reserved) / mib }},
	{Name: "alloc_growth", Unit: "MiB", Better: Lower, Value: func(s *Step) float64 { return float64(s.Memory.Growth) / mib }},
	{Name: "rss", Unit: "MiB", Better: Lower, Value: func(s *Step) float64 { return float64(s.Memory.RSS) / mib }},
}

func init() { Metrics = append(Metrics, memoryMetrics...) }

// present reports whether m has a value in every step of r.
func (r *Result) present(m Metric) bool {
	has := presence[m.Name]
	if has == nil {
		return true
	}
	if len(r.Steps) == 0 {
		return false
	}
	for i := range r.Steps {
		if !has(&r.Steps[i]) {
			return false
		}
	}
	return true
}

// memory fills each step's memory from the profile's allocator events.
func (r *Result) memory() {
	ev := r.Profile.Memory
	if len(ev) == 0 || len(r.Steps) == 0 {
		return
	}
	r.MemDevices = make([][]DeviceMemory, len(r.Steps))
	// Split the events by device, keeping time order.
	type devKey struct {
		dev  int32
		cuda bool
	}
	byDev := map[devKey][]trace.MemEvent{}
	var keys []devKey
	for _, e := range ev {
		k := devKey{e.Device, e.Flags&trace.MemCUDA != 0}
		if _, ok := byDev[k]; !ok {
			keys = append(keys, k)
		}
		byDev[k] = append(byDev[k], e)
	}
	slices.SortFunc(keys, func(a, b devKey) int {
		if a.cuda != b.cuda {
			if a.cuda {
				return -1
			}
			return 1
		}
		return int(a.dev) - int(b.dev)
	})
	for _, k := range keys {
		evs := byDev[k]
		// A device's events are relative unless every one carries totals.
		absolute := true
		for i := range evs {
			if evs[i].Flags&trace.MemTotals == 0 {
				absolute = false
				break
			}
		}
		for si := range r.Steps {
			s := &r.Steps[si]
			h0, h1 := s.HostStart, s.HostEnd
			j := sort.Search(len(evs), func(i int) bool { return evs[i].Time >= h0 })
			k0 := sort.Search(len(evs), func(i int) bool { return evs[i].Time >= h1 })
			k0 = max(k0, j)
			in := evs[j:k0]
			dm := DeviceMemory{Device: int(k.dev), CUDA: k.cuda, Events: len(in), Relative: !absolute}
			if absolute {
				var carry *trace.MemEvent
				if j > 0 {
					carry = &evs[j-1]
				}
				if carry == nil && len(in) == 0 {
					continue // before the device's first event: nothing known
				}
				pa, pr := int64(math.MinInt64), int64(math.MinInt64)
				hasRes := false
				take := func(e *trace.MemEvent) {
					pa = max(pa, e.Allocated)
					if e.Flags&trace.MemReserved != 0 && k.cuda {
						pr = max(pr, e.Reserved)
						hasRes = true
					}
				}
				if carry != nil {
					take(carry)
				}
				for i := range in {
					take(&in[i])
				}
				dm.PeakAlloc = &pa
				if hasRes {
					dm.PeakReserved = &pr
				}
			} else {
				var run, peak int64
				for i := range in {
					run += in[i].Bytes
					peak = max(peak, run)
				}
				dm.AllocGrowth = &peak
			}
			r.MemDevices[si] = append(r.MemDevices[si], dm)
		}
	}
	// The gated device of each step: the CUDA device with the largest peak
	// (keys put CUDA first), else, on a trace without GPU activity, the
	// host. A GPU trace whose events are all the host's has no GPU figure.
	hostOnly := false
	for i := range r.Steps {
		m, devs := &r.Steps[i].Memory, r.MemDevices[i]
		best := -1
		for d := range devs {
			dm := &devs[d]
			if best >= 0 && devs[best].CUDA && !dm.CUDA {
				break
			}
			if best < 0 || devPeak(dm) > devPeak(&devs[best]) {
				best = d
			}
		}
		if best < 0 {
			continue
		}
		dm := &devs[best]
		m.Device = dm.Device
		if r.HasGPU && !dm.CUDA {
			// Only host events on a GPU trace: no GPU memory figure.
			m.Source, hostOnly = MemFromTraceHost, true
			if dm.PeakAlloc != nil {
				m.HostPeak, m.HasHostPeak = *dm.PeakAlloc, true
			}
			continue
		}
		if dm.Relative {
			m.Source, m.Growth, m.HasGrowth = MemFromRelative, *dm.AllocGrowth, true
			continue
		}
		m.Source, m.Peak = MemFromTrace, *dm.PeakAlloc
		if dm.PeakReserved != nil {
			m.Reserved, m.HasReserved = *dm.PeakReserved, true
		}
	}
	if hostOnly {
		r.warnf("the trace has GPU activity but its allocator events are all on the host (device -1): there is no GPU memory figure (peak_memory is absent); the host allocator's peak is reported as host memory (memory.host_peak_bytes)")
	}
	// Memory events only in some steps (a capture whose allocator tracing
	// began late): the metrics are then absent (presence), said here.
	n := 0
	for i := range r.Steps {
		if r.Steps[i].Memory.Source != "" {
			n++
		}
	}
	if n > 0 && n < len(r.Steps) {
		r.warnf("allocator events cover %d of %d steps: memory metrics left out", n, len(r.Steps))
	}
}

func devPeak(d *DeviceMemory) int64 {
	if d.PeakAlloc != nil {
		return *d.PeakAlloc
	}
	if d.AllocGrowth != nil {
		return *d.AllocGrowth
	}
	return 0
}

// HookSample is one step's memory as gpugate run's step hook recorded it
// (runner.StepSample). Nil pointers are absent values.
type HookSample struct {
	RSS    int64  // resident memory at the step's end
	MaxRSS *int64 // the process's peak RSS so far
	// PrevMaxRSS is the previous sample's MaxRSS: when MaxRSS rose
	// during this step, MaxRSS is the step's exact peak.
	PrevMaxRSS                        *int64
	CUDADevice                        *int
	CUDAMaxAllocated, CUDAMaxReserved *int64
}

// SetHookMemory gives the result's steps the hook's samples, one per step
// in order (nil where a step has none). Steps whose trace carries
// allocator totals keep them as peak_memory (see the precedence above);
// the hook's RSS is kept beside them. It reports how many steps got a
// sample.
func (r *Result) SetHookMemory(samples []*HookSample) int {
	n := 0
	for i := range r.Steps {
		if i >= len(samples) || samples[i] == nil {
			continue
		}
		h, m := samples[i], &r.Steps[i].Memory
		n++
		m.RSS, m.HasRSS = h.RSS, true
		if m.Source == MemFromTrace {
			continue
		}
		// No totals in the trace (or only relative ones, kept as
		// alloc_growth): the hook's numbers are the step's peak.
		m.Reserved, m.HasReserved = 0, false
		if m.Source == "" {
			m.Growth, m.HasGrowth = 0, false
		}
		if h.CUDADevice != nil && h.CUDAMaxAllocated != nil {
			m.Source, m.Device, m.Peak = MemFromHookCUDA, *h.CUDADevice, *h.CUDAMaxAllocated
			if h.CUDAMaxReserved != nil {
				m.Reserved, m.HasReserved = *h.CUDAMaxReserved, true
			}
			continue
		}
		peak := h.RSS
		if h.MaxRSS != nil && h.PrevMaxRSS != nil && *h.MaxRSS > *h.PrevMaxRSS {
			peak = max(peak, *h.MaxRSS)
		}
		m.Source, m.Device, m.Peak = MemFromHookRSS, -1, peak
	}
	return n
}

// MemoryThresholds configure the memory-growth finding.
var MemoryThresholds = struct {
	// MinSteps: fewer measured steps say nothing about a trend.
	MinSteps int
	// Confidence of the Theil–Sen slope's interval whose lower bound must
	// be above 0.
	Confidence float64
	// MinSlope is the smallest growth per step (bytes) of an allocator's
	// peaks that fires, MinSlopeRSS the same for resident memory, which
	// creeps in healthy jobs too: measured on the demo under torch 1.13
	// (hook samples, 18 measured steps, four healthy runs), Theil–Sen
	// slopes of 0.002–0.47 MiB/step, three of them with a lower bound
	// above 0; the leak variant 8.7 MiB/step.
	MinSlope, MinSlopeRSS float64
	// ProfilerEventBytes is what the profiler itself keeps in the
	// process's memory per event it records, until it writes the trace:
	// resident memory grows with it in every profiled job, leak or not.
	// Measured on this project's CPU machine, torch.profiler recording
	// 60,000 aten ops over 10 steps, resident growth per op: torch 1.13
	// 539 B (937 B with record_shapes), torch 2.6 2,408 B with
	// record_shapes; rounded up to 2.5 KiB. The demo's slow loader
	// (num_workers=0: 31,443 events per step, against 212 in the healthy
	// run) grew 4.1 MiB a step under torch 1.13, within it; the leak
	// variant keeps 7.75 MiB a step beyond it.
	ProfilerEventBytes float64
}{MinSteps: 6, Confidence: 0.95, MinSlope: 1 << 20, MinSlopeRSS: 2 << 20, ProfilerEventBytes: 2560}

// memoryFinding is memory-growth: memory that rises steadily across the
// measured steps. The test is Sen's: the Theil–Sen slope (the median of
// the slopes between every pair of steps) with its distribution-free
// confidence interval from Kendall's S (Sen 1968; Gilbert 1987, §16.5);
// it fires when the interval's lower bound is above 0 and the slope is at
// least MinSlope per step. A single spike moves neither the median slope
// nor S much, so only a steady rise fires.
func (r *Result) memoryFinding() *Finding {
	type series struct {
		metric, what string
		xs           []float64 // bytes
	}
	var cands []series
	for _, name := range []string{"peak_memory", "rss", "alloc_growth"} {
		m, _ := MetricByName(name)
		xs := r.Samples(m)
		if xs == nil {
			continue
		}
		bs := make([]float64, len(xs))
		for i, x := range xs {
			bs[i] = x * mib
		}
		what := map[string]string{"peak_memory": "peak memory", "rss": "resident memory", "alloc_growth": "allocation growth"}[name]
		cands = append(cands, series{name, what, bs})
	}
	for _, c := range cands {
		n := len(c.xs)
		if n < MemoryThresholds.MinSteps {
			continue
		}
		slope, lo, hi := TheilSen(c.xs, MemoryThresholds.Confidence)
		s0 := &r.Steps[0].Memory
		minSlope, own := MemoryThresholds.MinSlope, 0.0
		if c.metric == "rss" || s0.Source == MemFromHookRSS {
			// Resident memory holds the profiler's own event buffer: only
			// growth beyond it is the job's (issue 19: a slow loader's
			// 31,443 recorded events a step headlined as a leak).
			minSlope = MemoryThresholds.MinSlopeRSS
			own = r.eventsPerStep() * MemoryThresholds.ProfilerEventBytes
		}
		if !(lo > own) || slope-own < minSlope {
			continue
		}
		where := "the host"
		if s0.Device >= 0 && c.metric != "rss" {
			where = fmt.Sprintf("CUDA device %d", s0.Device)
		}
		src := map[string]string{
			MemFromTrace: "the trace's allocator events", MemFromRelative: "the trace's allocator events (relative)",
			MemFromHookCUDA: "torch.cuda's allocator peaks per step", MemFromHookRSS: "the process's resident memory per step",
		}[s0.Source]
		if c.metric == "rss" {
			src = "the process's resident memory per step"
		}
		last := c.xs[n-1]
		f := &Finding{
			ID: "memory-growth", Severity: "high",
			Summary: fmt.Sprintf("%s grows %.1f MiB per step on %s: %.0f → %.0f MiB over %d steps",
				c.what, slope/mib, where, c.xs[0]/mib, last/mib, n),
			Evidence: fmt.Sprintf("Theil–Sen slope %.2f MiB/step, %.0f%% interval [%.2f, %.2f] MiB/step (Sen's test on %d steps of %s)",
				slope/mib, 100*MemoryThresholds.Confidence, lo/mib, hi/mib, n, src),
			Suggestion: "something keeps a reference every step: tensors appended to a list or cache, a loss summed without .item() or .detach(), hooks that store activations; torch.cuda.memory._record_memory_history() and memory snapshots show which allocation stays",
		}
		if capb := r.capacity(s0.Device); capb > 0 && c.metric != "rss" && last < float64(capb) {
			steps := (float64(capb) - last) / slope
			f.Summary += fmt.Sprintf("; the device's %.0f GiB are full in about %.0f more steps", float64(capb)/(1<<30), math.Ceil(steps))
		}
		if own > 0 {
			f.Evidence += fmt.Sprintf("; beyond the profiler's own buffer of up to %.2f MiB/step (%.0f recorded events a step × %.1f KiB)",
				own/mib, own/MemoryThresholds.ProfilerEventBytes, MemoryThresholds.ProfilerEventBytes/1024)
		}
		return f
	}
	return nil
}

// eventsPerStep is the median number of events the profiler recorded per
// measured step: host ranges and API calls that start in the step's host
// window, and the step's GPU ops.
func (r *Result) eventsPerStep() float64 {
	p := r.Profile
	if p == nil || len(r.Steps) == 0 {
		return 0
	}
	in := func(n int, start func(int) int64, h0, h1 int64) int {
		lo := sort.Search(n, func(i int) bool { return start(i) >= h0 })
		hi := sort.Search(n, func(i int) bool { return start(i) >= h1 })
		return hi - lo
	}
	counts := make([]float64, len(r.Steps))
	for i, s := range r.Steps {
		c := in(len(p.Ranges), func(j int) int64 { return p.Ranges[j].Start }, s.HostStart, s.HostEnd) +
			in(len(p.API), func(j int) int64 { return p.API[j].Start }, s.HostStart, s.HostEnd) +
			in(len(p.GPU), func(j int) int64 { return p.GPU[j].Start }, s.Start, s.End)
		counts[i] = float64(c)
	}
	return Summarize(counts).Median
}

// capacity is the memory of CUDA device dev as the trace records it, 0
// when unknown (or for the host, -1).
func (r *Result) capacity(dev int) int64 {
	if dev < 0 || r.Profile == nil {
		return 0
	}
	for _, d := range r.Profile.Devices {
		if d.ID == dev {
			return d.Memory
		}
	}
	return 0
}

// TheilSen returns the Theil–Sen slope of ys against 0, 1, 2, … and the
// bounds of its two-sided confidence interval at level conf, by Sen's
// method: with N the number of pair slopes and var(S) Kendall's variance
// n(n−1)(2n+5)/18 (ties in ys corrected), C = z·√var(S), the bounds are
// the ordered slopes of ranks (N−C)/2 and (N+C)/2+1, rounded. Bounds are ±Inf when
// the series is too short for the interval.
func TheilSen(ys []float64, conf float64) (slope, lo, hi float64) {
	n := len(ys)
	if n < 2 {
		return 0, math.Inf(-1), math.Inf(1)
	}
	slopes := make([]float64, 0, n*(n-1)/2)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			slopes = append(slopes, (ys[j]-ys[i])/float64(j-i))
		}
	}
	slices.Sort(slopes)
	N := len(slopes)
	slope = quantileSorted(slopes, 0.5)
	// Kendall's variance with the tie correction for equal ys.
	counts := map[float64]int{}
	for _, y := range ys {
		counts[y]++
	}
	v := float64(n*(n-1)*(2*n+5)) / 18
	for _, t := range counts {
		if t > 1 {
			v -= float64(t*(t-1)*(2*t+5)) / 18
		}
	}
	z := normalQuantile(1 - (1-conf)/2)
	c := z * math.Sqrt(math.Max(v, 0))
	m1 := (float64(N) - c) / 2
	m2 := (float64(N)+c)/2 + 1
	// 1-based ranks, rounded to the nearest as Gilbert (and scipy's
	// theilslopes) do; outside 1..N the interval is unbounded.
	at := func(rank float64) float64 {
		k := int(math.Round(rank))
		switch {
		case k < 1:
			return math.Inf(-1)
		case k > N:
			return math.Inf(1)
		}
		return slopes[k-1]
	}
	return slope, at(m1), at(m2)
}

func quantileSorted(s []float64, q float64) float64 { return Quantile(s, q) }

// normalQuantile is the standard normal's quantile function.
func normalQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }
