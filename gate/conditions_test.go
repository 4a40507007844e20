package gate

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/stats"
)

func fp(v float64) *float64 { return &v }

func gpu(index int, uuid string, sm float64, shares map[string]float64) runcond.GPUConditions {
	return runcond.GPUConditions{Index: index, UUID: uuid, Name: "NVIDIA H200", Samples: 30, Busy: 30,
		SMClockMedianMHz: fp(sm), ReasonShare: shares, JobSeen: true}
}

func TestVoidReasons(t *testing.T) {
	calm := map[string]float64{"hw_slowdown": 0, "hw_thermal_slowdown": 0, "hw_power_brake_slowdown": 0, "sw_thermal_slowdown": 0, "sw_power_cap": 0}
	with := func(k string, v float64) map[string]float64 {
		m := map[string]float64{}
		for a, b := range calm {
			m[a] = b
		}
		m[k] = v
		return m
	}
	run := func(gs ...runcond.GPUConditions) *runcond.Conditions {
		return &runcond.Conditions{Sampled: true, JobGPUsKnown: true, GPUs: gs}
	}
	base := run(gpu(0, "GPU-a", 1410, calm))
	for _, tc := range []struct {
		name       string
		cand, base *runcond.Conditions
		want       []string
	}{
		{"no candidate conditions", nil, base, nil},
		{"candidate not sampled", &runcond.Conditions{NotSampled: "nvidia-smi not found"}, base, nil},
		{"same conditions", run(gpu(0, "GPU-a", 1410, calm)), base, nil},
		{"issue example", run(gpu(0, "GPU-a", 1095, with("hw_slowdown", 0.38))), base,
			[]string{"GPU 0: SM clock 1410 → 1095 MHz, HW slowdown 38% of samples: rerun"}},
		{"clock 5% lower is within the margin", run(gpu(0, "GPU-a", 1339.5, calm)), base, nil},
		{"clock 5.1% lower is not", run(gpu(0, "GPU-a", 1338, calm)), base,
			[]string{"GPU 0: SM clock 1410 → 1338 MHz: rerun"}},
		{"clock higher counts too", run(gpu(0, "GPU-a", 1500, calm)), base,
			[]string{"GPU 0: SM clock 1410 → 1500 MHz: rerun"}},
		{"throttle just under 10%", run(gpu(0, "GPU-a", 1410, with("sw_thermal_slowdown", 0.099))), base, nil},
		{"throttle at 10%", run(gpu(0, "GPU-a", 1410, with("hw_power_brake_slowdown", 0.10))), base,
			[]string{"GPU 0: HW power brake slowdown 10% of samples: rerun"}},
		{"throttling voids without a baseline", run(gpu(0, "GPU-a", 1095, with("hw_thermal_slowdown", 0.5))), nil,
			[]string{"GPU 0: HW thermal slowdown 50% of samples: rerun"}},
		{"power cap as often as the baseline", run(gpu(0, "GPU-a", 1410, with("sw_power_cap", 0.9))),
			run(gpu(0, "GPU-a", 1410, with("sw_power_cap", 0.85))), nil},
		{"power cap far more often", run(gpu(0, "GPU-a", 1410, with("sw_power_cap", 0.6))), base,
			[]string{"GPU 0: SW power cap 60% of samples (baseline 0%): rerun"}},
		{"power cap without a baseline", run(gpu(0, "GPU-a", 1410, with("sw_power_cap", 0.6))), nil, nil},
		{"baseline not sampled: only what the candidate shows", run(gpu(0, "GPU-a", 900, with("sw_power_cap", 0.6))),
			&runcond.Conditions{NotSampled: "nvidia-smi not found"}, nil},
		{"other machine, same index and model", run(gpu(0, "GPU-b", 1095, calm)), base,
			[]string{"GPU 0: SM clock 1410 → 1095 MHz: rerun"}},
		{"no matching baseline GPU", run(gpu(3, "GPU-z", 1095, calm)), base, nil},
	} {
		got := VoidReasons(tc.cand, tc.base, DefaultConditionMargins)
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s: VoidReasons (-want +got):\n%s", tc.name, d)
		}
	}
}

func TestVoidReasonsProcesses(t *testing.T) {
	used := fp(2566)
	cand := &runcond.Conditions{Sampled: true, JobGPUsKnown: true, GPUs: []runcond.GPUConditions{
		{Index: 0, UUID: "GPU-a", JobSeen: true, Others: []runcond.ComputeProcess{
			{PID: 7, Name: "evil\n::error::`x`</details>", UsedMiB: used, Samples: 3},
			{PID: 8, Name: "b", Samples: 1}, {PID: 9, Name: "c", Samples: 1}, {PID: 10, Name: "d", Samples: 1},
		}},
		// Not the job's GPU: what runs there does not matter.
		{Index: 1, UUID: "GPU-b", Others: []runcond.ComputeProcess{{PID: 11, Name: "e"}}},
		// Processes that cannot be attributed void nothing.
		{Index: 2, UUID: "GPU-c", JobSeen: true, Unattributed: []runcond.ComputeProcess{{PID: 12, Name: "f"}}},
	}}
	want := []string{"GPU 0: other compute processes on it: pid 7 evil ::error::`x`</details> (2566 MiB), pid 8 b, pid 9 c, 1 more: rerun"}
	if d := cmp.Diff(want, VoidReasons(cand, nil, DefaultConditionMargins)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	// When the job was not seen on any GPU, every GPU counts as its.
	cand.JobGPUsKnown = false
	if got := VoidReasons(cand, nil, DefaultConditionMargins); len(got) != 2 {
		t.Errorf("job GPUs unknown: %q, want GPUs 0 and 1", got)
	}
}

func TestApplyConditions(t *testing.T) {
	calm := map[string]float64{"hw_slowdown": 0, "sw_power_cap": 0}
	hot := map[string]float64{"hw_slowdown": 0.38, "sw_power_cap": 0}
	run := func(sm float64, shares map[string]float64) *runcond.Conditions {
		return &runcond.Conditions{Sampled: true, JobGPUsKnown: true, GPUs: []runcond.GPUConditions{gpu(0, "GPU-a", sm, shares)}}
	}
	for _, tc := range []struct {
		name       string
		verdict    stats.Verdict
		base, cand []*runcond.Conditions
		want       stats.Verdict
		voided     bool
	}{
		{"throttled candidate, regression", stats.Regression, []*runcond.Conditions{run(1410, calm)}, []*runcond.Conditions{run(1095, hot)}, stats.Inconclusive, true},
		{"throttled candidate that passes", stats.Pass, []*runcond.Conditions{run(1410, calm)}, []*runcond.Conditions{run(1095, hot)}, stats.Pass, false},
		{"healthy runs, regression", stats.Regression, []*runcond.Conditions{run(1410, calm)}, []*runcond.Conditions{run(1410, calm)}, stats.Regression, false},
		{"unsampled candidate voids nothing", stats.Regression, []*runcond.Conditions{run(1410, calm)}, []*runcond.Conditions{nil}, stats.Regression, false},
		{"throttled baseline, pass", stats.Pass, []*runcond.Conditions{run(1095, hot)}, []*runcond.Conditions{run(1410, calm)}, stats.Inconclusive, true},
		{"throttled baseline, improvement", stats.Improvement, []*runcond.Conditions{run(1095, hot)}, []*runcond.Conditions{run(1410, calm)}, stats.Inconclusive, true},
		// A machine that throttles as much on every run compares like with
		// like: its passes stay passes (else it could never pass).
		{"baseline and candidate throttled alike, pass", stats.Pass, []*runcond.Conditions{run(1410, hot)}, []*runcond.Conditions{run(1410, hot)}, stats.Pass, false},
		{"baseline throttled within the margin of the candidate, pass", stats.Pass,
			[]*runcond.Conditions{run(1410, map[string]float64{"hw_slowdown": 0.45})}, []*runcond.Conditions{run(1410, map[string]float64{"hw_slowdown": 0.36})}, stats.Pass, false},
		{"baseline throttled far more than the candidate, pass", stats.Pass,
			[]*runcond.Conditions{run(1410, map[string]float64{"hw_slowdown": 0.5})}, []*runcond.Conditions{run(1410, map[string]float64{"hw_slowdown": 0.1})}, stats.Inconclusive, true},
		{"throttled baseline, regression stays", stats.Regression, []*runcond.Conditions{run(1410, hot)}, []*runcond.Conditions{run(1410, calm)}, stats.Regression, false},
		{"one of three baseline runs throttled is pooled away", stats.Pass,
			[]*runcond.Conditions{run(1410, calm), run(1410, calm), run(1410, map[string]float64{"hw_slowdown": 0.2})}, []*runcond.Conditions{run(1410, calm)}, stats.Pass, false},
		{"no baseline: nothing changes", stats.NoBaseline, nil, []*runcond.Conditions{run(1095, hot)}, stats.NoBaseline, false},
	} {
		r := &Report{Verdict: tc.verdict}
		ApplyConditions(r, tc.base, tc.cand, DefaultConditionMargins, "not recorded")
		if r.Verdict != tc.want || r.Conditions.Voided != tc.voided {
			t.Errorf("%s: verdict %s voided %v, want %s %v (void %q, baseline worse %q)", tc.name, r.Verdict, r.Conditions.Voided, tc.want, tc.voided, r.Conditions.Void, r.Conditions.BaselineWorse)
		}
		if tc.voided && (len(r.Warnings) == 0 || !strings.HasPrefix(r.Warnings[0], "run conditions void the ")) {
			t.Errorf("%s: warnings %q, want the reason first", tc.name, r.Warnings)
		}
		if len(r.Conditions.Candidate) != len(tc.cand) || (len(tc.cand) > 0 && tc.cand[0] == nil && r.Conditions.Candidate[0].NotSampled != "not recorded") {
			t.Errorf("%s: candidate conditions %+v", tc.name, r.Conditions.Candidate)
		}
	}
	r := &Report{Verdict: stats.Regression}
	ApplyConditions(r, []*runcond.Conditions{run(1410, calm)}, []*runcond.Conditions{run(1095, hot)}, DefaultConditionMargins, "")
	want := []string{"GPU 0: SM clock 1410 → 1095 MHz, HW slowdown 38% of samples: rerun"}
	if d := cmp.Diff(want, r.Conditions.Void); d != "" {
		t.Errorf("void (-want +got):\n%s", d)
	}
}
