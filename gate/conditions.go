package gate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/stats"
)

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

// VoidReasons returns why the candidate's run conditions void a would-be
// regression, one sentence per GPU, empty when nothing does. base may be
// nil or unsampled (a baseline recorded on a CPU machine or before
// conditions were sampled): then only what the candidate shows by itself
// (hardware or thermal throttling, other processes) can void it. An
// unsampled candidate voids nothing: nothing is known, and the report says
// so. A difference in SM clock counts either way (a faster clock than the
// baseline's is no fair comparison either).
func VoidReasons(cand, base *runcond.Conditions, m ConditionMargins) []string {
	return handicaps(cand, base, m, false)
}

// handicaps returns why run ran under worse conditions than other, one
// sentence per GPU of run; with lowerClockOnly, only an SM clock lower
// than other's counts (VoidReasons counts any difference).
func handicaps(run, other *runcond.Conditions, m ConditionMargins, lowerClockOnly bool) []string {
	if run == nil || !run.Sampled {
		return nil
	}
	var out []string
	for _, g := range jobGPUs(run) {
		var why []string
		var b *runcond.GPUConditions
		if other != nil && other.Sampled {
			b = matchGPU(other, g)
		}
		if b != nil && g.SMClockMedianMHz != nil && b.SMClockMedianMHz != nil && *b.SMClockMedianMHz > 0 {
			c, p := *g.SMClockMedianMHz, *b.SMClockMedianMHz
			// |c-p| against margin·p, not |c/p-1| against margin: the
			// ratio rounds 1339.5/1410 to 5.000000000000004%.
			if math.Abs(c-p) > m.SMClock*p && (!lowerClockOnly || c < p) {
				if lowerClockOnly {
					why = append(why, fmt.Sprintf("SM clock %s MHz (candidate %s MHz)", mhz(c), mhz(p)))
				} else {
					why = append(why, fmt.Sprintf("SM clock %s → %s MHz", mhz(p), mhz(c)))
				}
			}
		}
		for _, r := range runcond.Reasons {
			share, ok := g.ReasonShare[r.Key]
			if !ok {
				continue
			}
			if r.Key == "sw_power_cap" {
				if b == nil {
					continue
				}
				bs, ok := b.ReasonShare[r.Key]
				if !ok || share-bs < m.PowerCap || share < m.PowerCap {
					continue
				}
				other := "baseline"
				if lowerClockOnly {
					other = "candidate"
				}
				why = append(why, fmt.Sprintf("%s %s of samples (%s %s)", r.Label, pct(share), other, pct(bs)))
				continue
			}
			if share < m.Throttle {
				continue
			}
			if lowerClockOnly && b != nil {
				// The baseline's throttling voids a pass only where it
				// exceeds the candidate's by the margin: a machine that
				// throttles alike on every run compares like with like.
				bs := b.ReasonShare[r.Key]
				if share-bs < m.Throttle {
					continue
				}
				why = append(why, fmt.Sprintf("%s %s of samples (candidate %s)", r.Label, pct(share), pct(bs)))
				continue
			}
			why = append(why, fmt.Sprintf("%s %s of samples", r.Label, pct(share)))
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
func jobGPUs(c *runcond.Conditions) []runcond.GPUConditions {
	if !c.JobGPUsKnown {
		return c.GPUs
	}
	var gs []runcond.GPUConditions
	for _, g := range c.GPUs {
		if g.JobSeen {
			gs = append(gs, g)
		}
	}
	return gs
}

// matchGPU finds the baseline's GPU for a candidate GPU: the same device
// (UUID) on the same machine, else the same index of the same model.
func matchGPU(base *runcond.Conditions, g runcond.GPUConditions) *runcond.GPUConditions {
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

// RunConditions is the run-conditions section of a Report: what nvidia-smi
// saw while each run of both sides ran, and whether that voids the
// verdict.
type RunConditions struct {
	// Baseline and Candidate hold one entry per run, in the order of the
	// report's runs. A run stored before gpugate sampled conditions, or
	// compared from trace files that hold none, has Sampled false and
	// NotSampled saying so.
	Baseline  []*runcond.Conditions `json:"baseline"`
	Candidate []*runcond.Conditions `json:"candidate"`
	// Void are the reasons the candidate's conditions void a would-be
	// regression (VoidReasons, per candidate run), empty when none do.
	// They are listed whatever the verdict; only a regression is changed.
	Void []string `json:"void"`
	// BaselineWorse are the reasons the baseline ran under worse
	// conditions than the candidate (its pooled runs throttled, shared, or
	// at a lower SM clock than the candidate's pooled runs): they void a
	// would-be pass or improvement, which the candidate's better
	// conditions may have bought.
	BaselineWorse []string `json:"baseline_worse"`
	// Voided says the verdict was a regression, pass or improvement and is
	// inconclusive because of Void or BaselineWorse.
	Voided  bool             `json:"voided"`
	Margins ConditionMargins `json:"margins"`
}

// MarshalJSON names the margins' fields in snake_case.
func (m ConditionMargins) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, `{"throttle_share":%g,"power_cap_share":%g,"sm_clock":%g}`, m.Throttle, m.PowerCap, m.SMClock), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (m *ConditionMargins) UnmarshalJSON(b []byte) error {
	var x struct {
		Throttle float64 `json:"throttle_share"`
		PowerCap float64 `json:"power_cap_share"`
		SMClock  float64 `json:"sm_clock"`
	}
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	*m = ConditionMargins{Throttle: x.Throttle, PowerCap: x.PowerCap, SMClock: x.SMClock}
	return nil
}

// PoolConditions makes one baseline of the conditions of several baseline
// runs, for VoidReasons: per GPU (matched by UUID, else index and model)
// the median of the runs' median SM clocks and the mean of their reason
// shares, and every other compute process any run saw. Runs that were not
// sampled take no part; nil when none was.
func PoolConditions(cs []*runcond.Conditions) *runcond.Conditions {
	var out *runcond.Conditions
	type acc struct {
		sm     []float64
		shares map[string][]float64
	}
	var accs []*acc
	for _, c := range cs {
		if c == nil || !c.Sampled {
			continue
		}
		if out == nil {
			out = &runcond.Conditions{Sampled: true, JobGPUsKnown: true}
		}
		for _, g := range jobGPUs(c) {
			i := -1
			if m := matchGPU(out, g); m != nil {
				for k := range out.GPUs {
					if &out.GPUs[k] == m {
						i = k
					}
				}
			}
			if i < 0 {
				out.GPUs = append(out.GPUs, runcond.GPUConditions{Index: g.Index, UUID: g.UUID, Name: g.Name, JobSeen: true})
				accs = append(accs, &acc{shares: map[string][]float64{}})
				i = len(out.GPUs) - 1
			}
			out.GPUs[i].Samples += g.Samples
			out.GPUs[i].Busy += g.Busy
			for _, p := range g.Others {
				if !slices.ContainsFunc(out.GPUs[i].Others, func(q runcond.ComputeProcess) bool { return q.PID == p.PID }) {
					out.GPUs[i].Others = append(out.GPUs[i].Others, p)
				}
			}
			if g.SMClockMedianMHz != nil {
				accs[i].sm = append(accs[i].sm, *g.SMClockMedianMHz)
			}
			for k, v := range g.ReasonShare {
				accs[i].shares[k] = append(accs[i].shares[k], v)
			}
		}
	}
	for i, a := range accs {
		if len(a.sm) > 0 {
			slices.Sort(a.sm)
			n := len(a.sm)
			m := a.sm[n/2]
			if n%2 == 0 {
				m = a.sm[n/2-1]/2 + a.sm[n/2]/2 // (a+b)/2 overflows for huge a, b
			}
			out.GPUs[i].SMClockMedianMHz = &m
		}
		for k, vs := range a.shares {
			if out.GPUs[i].ReasonShare == nil {
				out.GPUs[i].ReasonShare = map[string]float64{}
			}
			var s float64
			for _, v := range vs {
				s += v
			}
			out.GPUs[i].ReasonShare[k] = s / float64(len(vs))
		}
	}
	return out
}

// notRecorded stands for the conditions of a run that has none.
func notRecorded(why string) *runcond.Conditions { return &runcond.Conditions{NotSampled: why} }

// ApplyConditions adds the run-conditions section to r and voids what the
// conditions leave unproven, in both directions and only there:
//
//   - a regression becomes inconclusive when any candidate run's
//     conditions give a reason (VoidReasons against the pooled baseline:
//     throttling, other processes, an SM clock off the baseline's);
//   - a pass or an improvement becomes inconclusive when the pooled
//     baseline ran under worse conditions than the pooled candidate
//     (throttled, shared, or at a lower SM clock): the candidate's better
//     conditions may hide a regression.
//
// A candidate that passes although it ran throttled stays a pass: it was
// held back and still kept within the allowance, and a healthy GPU only
// makes it faster. A regression on a candidate that had the better
// conditions stays a regression. Per-metric results keep their verdicts;
// the reasons lead the report's warnings. Accept runs later and leaves an
// inconclusive verdict alone. nil entries are runs without conditions
// (stored before they were sampled; trace files); missing says why, for
// the report.
// ApplyTimingConditions adds to r's run conditions (ApplyConditions, which
// ran first on the profiled runs) what the timing runs' own conditions
// void, when r judged a metric on them (Report.Timing): a throttled GPU
// in a candidate timing run voids a step-time regression, a baseline
// timing run under worse conditions a pass, as for profiled runs.
func ApplyTimingConditions(r *Report, base, cand []TimingRun, m ConditionMargins, missing string) {
	if r.Conditions == nil || r.Timing == nil || len(r.Timing.Metrics) == 0 {
		return
	}
	conds := func(runs []TimingRun) []*runcond.Conditions {
		out := make([]*runcond.Conditions, len(runs))
		for i, t := range runs {
			out[i] = cmp.Or(t.Conditions, notRecorded(missing))
		}
		return out
	}
	rc := r.Conditions
	bc, cc := conds(base), conds(cand)
	pooled := PoolConditions(bc)
	for i, c := range cc {
		for _, why := range VoidReasons(c, pooled, m) {
			why = fmt.Sprintf("%s: %s", r.TimingRunName("candidate", i), why)
			if !slices.Contains(rc.Void, why) {
				rc.Void = append(rc.Void, why)
			}
		}
	}
	if pooled != nil {
		for _, h := range handicaps(pooled, PoolConditions(cc), m, true) {
			if h = "timing runs: " + h; !slices.Contains(rc.BaselineWorse, h) {
				rc.BaselineWorse = append(rc.BaselineWorse, h)
			}
		}
	}
	if rc.Voided {
		return
	}
	voidVerdict(r, rc)
}

// voidVerdict makes r's verdict inconclusive where rc's conditions leave
// it unproven: a regression beside bad candidate conditions, a pass or
// improvement beside a baseline that ran under worse ones.
func voidVerdict(r *Report, rc *RunConditions) {
	switch {
	case len(rc.Void) > 0 && r.Verdict == stats.Regression:
		r.Verdict = stats.Inconclusive
		rc.Voided = true
		r.Warnings = append([]string{"run conditions void the regression: " + strings.Join(rc.Void, "; ")}, r.Warnings...)
	case len(rc.BaselineWorse) > 0 && (r.Verdict == stats.Pass || r.Verdict == stats.Improvement):
		was := r.Verdict
		r.Verdict = stats.Inconclusive
		rc.Voided = true
		r.Warnings = append([]string{fmt.Sprintf("run conditions void the %s: the baseline ran under worse conditions than the candidate: %s (record a new baseline)", was, strings.Join(rc.BaselineWorse, "; "))}, r.Warnings...)
	}
}

func ApplyConditions(r *Report, base, cand []*runcond.Conditions, m ConditionMargins, missing string) {
	rc := &RunConditions{Baseline: []*runcond.Conditions{}, Candidate: []*runcond.Conditions{}, Void: []string{}, BaselineWorse: []string{}, Margins: m}
	for _, c := range base {
		if c == nil {
			c = notRecorded(missing)
		}
		rc.Baseline = append(rc.Baseline, c)
	}
	for _, c := range cand {
		if c == nil {
			c = notRecorded(missing)
		}
		rc.Candidate = append(rc.Candidate, c)
	}
	pooled := PoolConditions(rc.Baseline)
	seen := map[string]bool{}
	for i, c := range rc.Candidate {
		for _, why := range VoidReasons(c, pooled, m) {
			if len(rc.Candidate) > 1 {
				why = fmt.Sprintf("%s: %s", r.RunName("candidate", i), why)
			}
			if !seen[why] {
				seen[why] = true
				rc.Void = append(rc.Void, why)
			}
		}
	}
	if pooled != nil {
		rc.BaselineWorse = append(rc.BaselineWorse, handicaps(pooled, PoolConditions(rc.Candidate), m, true)...)
	}
	r.Conditions = rc
	voidVerdict(r, rc)
}
