package gate

import (
	"fmt"
	"math"
	"strings"
)

// Conditions are the run conditions of one job as nvidia-smi saw them while
// it ran (runner.SampleSMI measures them): clocks, temperature, power,
// throttle reasons and the other compute processes on the job's GPUs. They
// are the preconditions of a verdict: a run on a throttled or shared GPU
// says nothing about the code. Stored with the run as JSON.
type Conditions struct {
	// Sampled is false when nothing was measured; NotSampled then says
	// why ("nvidia-smi not found"). Nothing is ever filled in for a run
	// that was not sampled.
	Sampled    bool   `json:"sampled"`
	NotSampled string `json:"not_sampled,omitempty"`
	// ReasonFields is the name family of the throttle reasons the
	// installed nvidia-smi knows: "clocks_event_reasons" (drivers from
	// 535 on) or "clocks_throttle_reasons" (older); empty when it knows
	// neither and no reason was sampled.
	ReasonFields string `json:"reason_fields,omitempty"`
	// IntervalMS is the sampling period.
	IntervalMS int64 `json:"interval_ms,omitempty"`
	// JobGPUsKnown says whether the job's processes were seen on a GPU
	// (nvidia-smi --query-compute-apps). When not, every GPU counts as the
	// job's.
	JobGPUsKnown bool            `json:"job_gpus_known"`
	GPUs         []GPUConditions `json:"gpus,omitempty"`
	// Warnings: fields this nvidia-smi does not know, lines it printed that
	// could not be read, samples dropped at the limit.
	Warnings []string `json:"warnings,omitempty"`
}

// GPUConditions summarizes one GPU's samples. Values nvidia-smi reported as
// unavailable ([N/A], [Not Supported]) are absent (nil), never zero.
type GPUConditions struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid,omitempty"`
	Name  string `json:"name,omitempty"`
	// Samples is the number of samples of this GPU; Busy those taken while
	// it ran work (utilization.gpu > 0, or, without utilization, the
	// gpu_idle reason not active). Clocks and reason shares are over the
	// busy samples when there are any, so that the job's start-up (imports,
	// data loading) does not pass for low clocks.
	Samples int `json:"samples"`
	Busy    int `json:"busy_samples"`
	// SM clock over the busy samples, MHz; SMClockMaxMHz is the GPU's
	// maximum (clocks.max.sm), not the largest sample.
	SMClockMedianMHz  *float64 `json:"sm_clock_median_mhz,omitempty"`
	SMClockMinMHz     *float64 `json:"sm_clock_min_mhz,omitempty"`
	SMClockMaxMHz     *float64 `json:"sm_clock_max_mhz,omitempty"`
	MemClockMedianMHz *float64 `json:"mem_clock_median_mhz,omitempty"`
	TempMaxC          *float64 `json:"temp_max_c,omitempty"`
	PowerMedianW      *float64 `json:"power_median_w,omitempty"`
	UtilMedianPct     *float64 `json:"util_median_pct,omitempty"`
	// ReasonShare is, per throttle reason (hw_slowdown,
	// hw_thermal_slowdown, hw_power_brake_slowdown, sw_thermal_slowdown,
	// sw_power_cap), the share of samples (0..1) in which it was active;
	// a reason nvidia-smi never reported is absent.
	ReasonShare map[string]float64 `json:"reason_share,omitempty"`
	// JobSeen: one of the job's processes had a compute context on it.
	JobSeen bool `json:"job_seen"`
	// Others are compute processes on this GPU outside the job's process
	// tree; Unattributed are processes whose pid is not visible here (a
	// container with its own PID namespace): they cannot be told apart
	// from the job's and void nothing.
	Others       []ComputeProcess `json:"other_processes,omitempty"`
	Unattributed []ComputeProcess `json:"unattributed_processes,omitempty"`
}

// ComputeProcess is a process with a compute context on a GPU.
type ComputeProcess struct {
	PID  int    `json:"pid"`
	Name string `json:"name"`
	// UsedMiB is the largest GPU memory nvidia-smi reported for it; nil
	// when not available (Windows WDDM).
	UsedMiB *float64 `json:"used_mib,omitempty"`
	// Samples is how many samples saw it.
	Samples int `json:"samples"`
}

// ConditionMargins are the limits beyond which a run's conditions void a
// would-be regression.
type ConditionMargins struct {
	// Throttle is the share of busy samples with a hardware slowdown (HW
	// slowdown, HW thermal, HW power brake) or SW thermal slowdown active
	// that voids a run: those mean heat or a power supply problem, never
	// the code.
	Throttle float64
	// PowerCap is how much the share of samples with SW power cap active
	// may exceed the baseline's. Running at the power cap is the normal
	// state of many datacenter GPUs under full load, so only a change
	// against the baseline voids, and only with a baseline that was sampled.
	PowerCap float64
	// SMClock is the largest relative difference between the candidate's
	// and the baseline's median SM clock on the job's GPUs.
	SMClock float64
}

// DefaultConditionMargins: throttling in 10% of the samples, power capping
// 10 points more often than in the baseline, median SM clocks 5% apart.
// A 5% clock difference moves compute-bound step times by about as much,
// a third of the default 15% allowance for times.
var DefaultConditionMargins = ConditionMargins{Throttle: 0.10, PowerCap: 0.10, SMClock: 0.05}

// reasonNames are the throttle reasons gpugate samples, in report order,
// with the words a reason is reported in.
var reasonNames = []struct{ key, label string }{
	{"hw_slowdown", "HW slowdown"},
	{"hw_thermal_slowdown", "HW thermal slowdown"},
	{"hw_power_brake_slowdown", "HW power brake slowdown"},
	{"sw_thermal_slowdown", "SW thermal slowdown"},
	{"sw_power_cap", "SW power cap"},
}

// ThrottleReasons are the keys of GPUConditions.ReasonShare.
func ThrottleReasons() []string {
	keys := make([]string, len(reasonNames))
	for i, r := range reasonNames {
		keys[i] = r.key
	}
	return keys
}

// VoidReasons returns why the candidate's run conditions void a would-be
// regression, one sentence per GPU, empty when nothing does. base may be
// nil or unsampled (a baseline recorded on a CPU machine or before
// conditions were sampled): then only what the candidate shows by itself
// (hardware or thermal throttling, other processes) can void it. An
// unsampled candidate voids nothing: nothing is known, and the report says
// so.
func VoidReasons(cand, base *Conditions, m ConditionMargins) []string {
	if cand == nil || !cand.Sampled {
		return nil
	}
	var out []string
	for _, g := range jobGPUs(cand) {
		var why []string
		var b *GPUConditions
		if base != nil && base.Sampled {
			b = matchGPU(base, g)
		}
		if b != nil && g.SMClockMedianMHz != nil && b.SMClockMedianMHz != nil && *b.SMClockMedianMHz > 0 {
			c, p := *g.SMClockMedianMHz, *b.SMClockMedianMHz
			// |c-p| against margin·p, not |c/p-1| against margin: the
			// ratio rounds 1339.5/1410 to 5.000000000000004%.
			if math.Abs(c-p) > m.SMClock*p {
				why = append(why, fmt.Sprintf("SM clock %s → %s MHz", mhz(p), mhz(c)))
			}
		}
		for _, r := range reasonNames {
			share, ok := g.ReasonShare[r.key]
			if !ok {
				continue
			}
			if r.key == "sw_power_cap" {
				if b == nil {
					continue
				}
				bs, ok := b.ReasonShare[r.key]
				if !ok || share-bs < m.PowerCap || share < m.PowerCap {
					continue
				}
				why = append(why, fmt.Sprintf("%s %s of samples (baseline %s)", r.label, pct(share), pct(bs)))
				continue
			}
			if share >= m.Throttle {
				why = append(why, fmt.Sprintf("%s %s of samples", r.label, pct(share)))
			}
		}
		if len(g.Others) > 0 {
			procs := make([]string, 0, len(g.Others))
			for i, p := range g.Others {
				if i == 3 {
					procs = append(procs, fmt.Sprintf("%d more", len(g.Others)-3))
					break
				}
				s := fmt.Sprintf("pid %d %s", p.PID, quoteName(p.Name))
				if p.UsedMiB != nil {
					s += fmt.Sprintf(" (%s MiB)", mhz(*p.UsedMiB))
				}
				procs = append(procs, s)
			}
			why = append(why, "other compute processes on it: "+strings.Join(procs, ", "))
		}
		if len(why) > 0 {
			out = append(out, fmt.Sprintf("GPU %d: %s: rerun", g.Index, strings.Join(why, ", ")))
		}
	}
	return out
}

// jobGPUs returns the GPUs the job ran on, or all of them when that is not
// known.
func jobGPUs(c *Conditions) []GPUConditions {
	if !c.JobGPUsKnown {
		return c.GPUs
	}
	var gs []GPUConditions
	for _, g := range c.GPUs {
		if g.JobSeen {
			gs = append(gs, g)
		}
	}
	return gs
}

// matchGPU finds the baseline's GPU for a candidate GPU: the same device
// (UUID) on the same machine, else the same index of the same model.
func matchGPU(base *Conditions, g GPUConditions) *GPUConditions {
	for i := range base.GPUs {
		if g.UUID != "" && base.GPUs[i].UUID == g.UUID {
			return &base.GPUs[i]
		}
	}
	for i := range base.GPUs {
		if base.GPUs[i].Index == g.Index && base.GPUs[i].Name == g.Name {
			return &base.GPUs[i]
		}
	}
	return nil
}

func mhz(v float64) string { return fmt.Sprintf("%.0f", v) }

func pct(share float64) string { return fmt.Sprintf("%.0f%%", share*100) }

// quoteName keeps a process name (chosen by whoever started the process)
// to one line of printable text; the report escapes it for its format.
func quoteName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 80 {
		s = string(r[:77]) + "..."
	}
	return s
}
