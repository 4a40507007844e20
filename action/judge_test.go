package action

import (
	"strings"
	"testing"

	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/pipeline"
	"github.com/gpugate/gpugate/stats"
)

// judge takes the level, max_runs, gate list and allowances from the
// trusted perf.yaml, never from the artifact, and refuses a result whose
// metric list is not one a comparison yields.
func TestJudgeTakesSettingsFromConfig(t *testing.T) {
	load := func(extra string) (*config.Config, *config.Workload) {
		t.Helper()
		c, err := config.Parse([]byte("version: 1\nworkloads:\n  - name: train\n    command: x\n"+extra), "perf.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return c, &c.Workloads[0]
	}
	// Runs that drift from one another (the intervals have width), 121 →
	// 151 ms: a regression of +25% at any level used here.
	base := [][]float64{{118, 119}, {121, 122}, {124, 123}, {120, 121}, {122, 123}}
	slow := [][]float64{{150, 151}, {155, 154}, {152, 151}}
	flat := [][]float64{{1, 1}, {1, 1}, {1, 1}}
	host := []string{"step_time", "data_wait", "sync_calls", "sync_time"}
	result := func(forge func(r *Result)) *Result {
		r := &Result{Report: &gate.Report{Verdict: stats.Pass, Alpha: 1e-300, Sampling: &gate.Sampling{Unit: stats.UnitRun, Runs: 3, MaxRuns: 100}},
			Samples: map[string]MetricSamples{}}
		for _, n := range host {
			r.Report.Metrics = append(r.Report.Metrics, stats.Result{Name: n, Verdict: stats.Pass, AllowancePct: 5000})
			s := MetricSamples{Baseline: flat, Candidate: flat}
			if n == "step_time" {
				s = MetricSamples{Baseline: base, Candidate: slow}
			}
			r.Samples[n] = s
		}
		if forge != nil {
			forge(r)
		}
		return r
	}
	stepTime := func(r *Result) stats.Result {
		for _, m := range r.Report.Metrics {
			if m.Name == "step_time" {
				return m
			}
		}
		return stats.Result{}
	}
	// The artifact's α (1e-300), max_runs (100) and allowance (5000%) are
	// ignored: the config's level judges.
	for _, c := range []struct {
		yaml  string
		alpha float64
	}{{"", stats.DefaultThresholds.Alpha}, {"    repeat: auto\n    max_runs: 5\n", pipeline.AutoAlpha / 5}} {
		cfg, w := load(c.yaml)
		r := result(nil)
		if err := judge(r, cfg, w); err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		st := stepTime(r)
		want := stats.Compare(stats.Spec{Name: "step_time", Unit: "ms", Better: -1, Allowance: 0.15, MinAbs: 0.05, Gate: true}, base, slow, stats.Thresholds{Alpha: c.alpha})
		if r.Report.Verdict != stats.Regression || st.Verdict != stats.Regression || st.AllowancePct != 15 || !st.Gate || st.CILoPct != want.CILoPct || r.Report.Alpha != c.alpha {
			t.Errorf("%q: verdict %s, step_time %s at %v%% gate=%v CI lo %v (want %v), α=%v (want %v)", c.yaml, r.Report.Verdict, st.Verdict, st.AllowancePct, st.Gate, st.CILoPct, want.CILoPct, r.Report.Alpha, c.alpha)
		}
		if c.alpha != stats.DefaultThresholds.Alpha && r.Report.Sampling.MaxRuns != 5 {
			t.Errorf("sampling says max_runs %d, want perf.yaml's 5", r.Report.Sampling.MaxRuns)
		}
	}
	// perf.yaml's own gate list and allowances count.
	cfg, w := load("gate: [kernels]\n")
	r := result(nil)
	if err := judge(r, cfg, w); err != nil || r.Report.Verdict == stats.Regression || stepTime(r).Gate {
		t.Errorf("gate: [kernels]: %s, step_time gates %v (%v)", r.Report.Verdict, stepTime(r).Gate, err)
	}
	cfg, w = load("allowances: {step_time: 60%}\n")
	r = result(nil)
	if err := judge(r, cfg, w); err != nil || r.Report.Verdict == stats.Regression || stepTime(r).AllowancePct != 60 {
		t.Errorf("allowance 60%%: %s at %v%% (%v)", r.Report.Verdict, stepTime(r).AllowancePct, err)
	}

	for _, c := range []struct {
		name, yaml, want string
		forge            func(r *Result)
	}{
		{"more runs than max_runs", "    repeat: auto\n    max_runs: 2\n", "more than max_runs 2", nil},
		{"step_time deleted from the report", "", "differs", func(r *Result) { r.Report.Metrics = r.Report.Metrics[1:] }},
		{"step_time deleted everywhere", "", "lacks metric(s) step_time", func(r *Result) {
			r.Report.Metrics = r.Report.Metrics[1:]
			delete(r.Samples, "step_time")
		}},
		{"every metric deleted from the report", "", "carries baseline samples", func(r *Result) { r.Report.Metrics = nil }},
		{"every metric deleted", "", "no samples", func(r *Result) {
			r.Report.Metrics, r.Samples = nil, nil
			r.Report.Verdict = stats.NoBaseline
		}},
		{"no baseline where on_missing is fail", "baseline: {on_missing: fail}\n", "on_missing: fail", func(r *Result) {
			r.Report.Metrics = nil
			for n, s := range r.Samples {
				r.Samples[n] = MetricSamples{Baseline: [][]float64{}, Candidate: s.Candidate}
			}
		}},
	} {
		cfg, w := load(c.yaml)
		r := result(c.forge)
		if err := judge(r, cfg, w); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (verdict %s), want a refusal naming %q", c.name, err, r.Report.Verdict, c.want)
		}
	}
	// A genuine run without a baseline: its candidate samples, nothing
	// compared; no-baseline, whatever verdict the artifact claims.
	cfg, w = load("")
	r = result(func(r *Result) {
		r.Report.Metrics = nil
		for n, s := range r.Samples {
			r.Samples[n] = MetricSamples{Baseline: [][]float64{}, Candidate: s.Candidate}
		}
	})
	if err := judge(r, cfg, w); err != nil || r.Report.Verdict != stats.NoBaseline {
		t.Errorf("no baseline: %s, %v", r.Report.Verdict, err)
	}
}

// The trusted phase judges a result whose every candidate run ran on a busy
// host as the run did: step time has no verdict (gate.Report.ReapplyHost),
// however slow the samples; counts keep every run. Without ReapplyHost
// the rejudged samples would make the busy host's slowdown a regression
// (issue 37's mutant "the trusted phase's ReapplyHost removed").
func TestJudgeDisturbedRuns(t *testing.T) {
	c, err := config.Parse([]byte("version: 1\nworkloads:\n  - name: train\n    command: x\n"), "perf.yaml")
	if err != nil {
		t.Fatal(err)
	}
	busy := "the host was busy: other processes used 1.8 of 2 CPUs during the run"
	base := [][]float64{{118, 119}, {121, 122}, {124, 123}, {120, 121}, {122, 123}}
	slow := [][]float64{{150, 151}, {155, 154}, {152, 151}}
	flat := [][]float64{{1, 1}, {1, 1}, {1, 1}}
	r := &Result{Report: &gate.Report{Verdict: stats.Inconclusive, Baseline: gate.Side{Runs: 5}, Candidate: gate.Side{Runs: 3},
		HostBusy: &gate.Disturbed{Base: make([]string, 5), Cand: []string{busy, busy, busy}}}, Samples: map[string]MetricSamples{}}
	for _, n := range []string{"step_time", "data_wait", "sync_calls", "sync_time"} {
		r.Report.Metrics = append(r.Report.Metrics, stats.Result{Name: n, Verdict: stats.Inconclusive})
		r.Samples[n] = MetricSamples{Baseline: flat, Candidate: flat}
	}
	r.Samples["step_time"] = MetricSamples{Baseline: base, Candidate: slow}
	if err := judge(r, c, &c.Workloads[0]); err != nil {
		t.Fatal(err)
	}
	for _, m := range r.Report.Metrics {
		if m.Name == "step_time" && (m.Verdict != stats.Inconclusive || !strings.Contains(m.Reason, "no time verdict: every candidate run was disturbed (run 1: "+busy)) {
			t.Errorf("step_time %s %q; want no time verdict, naming the busy host", m.Verdict, m.Reason)
		}
	}
	if r.Report.Verdict == stats.Regression {
		t.Errorf("verdict %s: a busy host's slowdown judged a regression", r.Report.Verdict)
	}
}
