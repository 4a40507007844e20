package gate

// Findings of an adversarial review of the selection step (select.go),
// each a test that failed before its fix.

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/stats"
)

// Q2: a forged report (the Action's trusted phase reads it: judge →
// ReapplyHost) that lists a count metric among timing.metrics and marks
// every candidate timing run disturbed turns a sync_calls regression
// (judged again from the samples) into "no time verdict". docs/security.md
// promises "non-time metrics keep their verdict". The old ReapplyHost
// (789f96d) did the same: pre-existing, but it lives in selectIn now.
func TestSelectionReviewForgedTimedCountMetric(t *testing.T) {
	forge := `{"timing": {"metrics": ["step_time", "sync_calls"], "baseline_runs": 1, "candidate_runs": 1,
		"disturbed": {"baseline": [""], "candidate": ["forged"]}},
		"baseline": {"runs": 3}, "candidate": {"runs": 1}}`
	var rep Report
	if err := json.Unmarshal([]byte(forge), &rep); err != nil {
		t.Fatal(err)
	}
	// What judge() leaves before ReapplyHost: sync_calls judged again
	// from its samples, a regression.
	rep.Metrics = []stats.Result{{Name: "sync_calls", Unit: "count", Verdict: stats.Regression, Gate: true}}
	rep.ReapplyHost()
	if v := rep.Metrics[0].Verdict; v != stats.Regression {
		t.Errorf("forged timing.metrics: sync_calls regression became %s (%s); overall %s", v, rep.Metrics[0].Reason, stats.Overall(rep.Metrics))
	}
}

// Q1 (latent, pre-existing): a report recomputes its pairing from
// SampleUnit, which is "pair" only when step_time's two sides had as many
// run means. Paired runs with unequal counts (a side with an incomplete
// pair) whose every pair had a disturbed run: Compare gives the time
// metrics no verdict (judged on all 3 → 2 runs, so step_time's unit is
// "run"); the report's selection then reads them unpaired, finds quiet
// runs on both sides, and JudgedSamples stores quiet samples of both —
// judged again (Rejudge, ReapplyHost) they give a verdict Compare withheld.
func TestSelectionReviewPairedSelectionFromReport(t *testing.T) {
	busy := "the host was busy"
	base := syntheticRuns(t, 3, 20, 100, 0, 5)
	cand := []Run{synthetic(t, 20, 140, 0, 5), syntheticSeed(t, 7, 20, 141, 0, 5)}
	rep := Compare(base, cand, Options{Thresholds: stats.Thresholds{Paired: true}, Disturbed: Disturbed{Base: []string{busy, ""}, Cand: []string{"", busy}}})
	st := rep.metric("step_time")
	t.Logf("Compare: step_time %s (%s), unit %s; report sample_unit %q", st.Verdict, st.Reason, st.SampleUnit, rep.SampleUnit)
	m, _ := analysis.MetricByName("step_time")
	bs, cs := rep.JudgedSamples(m, base, cand, nil, nil)
	t.Logf("JudgedSamples: %d baseline, %d candidate runs (empty = no quiet run)", len(bs), len(cs))
	again := *rep
	again.Metrics = slices.Clone(rep.Metrics)
	for i, r := range again.Metrics {
		am, _ := analysis.MetricByName(r.Name)
		b, c := rep.JudgedSamples(am, base, cand, nil, nil)
		if IsTime(am) && (len(b) == 0 || len(c) == 0) {
			continue // judge's noQuietSide: no time verdict
		}
		again.Metrics[i], _ = Rejudge(r, b, c, Options{})
	}
	again.ReapplyHost()
	if v := again.metric("step_time").Verdict; v != st.Verdict {
		t.Errorf("step_time: Compare %s (no time verdict), judged again from the stored samples %s", st.Verdict, v)
	}
}

// Q1/Q3: paired timing runs with unequal counts and no disturbance:
// Compare judges step_time on the complete pairs only (2 → 2 of 3 → 2), but
// runs_left_out, "a reason for every run left out", is empty.
func TestSelectionReviewLeftOutIncompletePair(t *testing.T) {
	base := syntheticRuns(t, 3, 20, 100, 0, 5)
	bt := timed([]float64{80, 81}, []float64{82, 80}, []float64{200, 201})
	ct := timed([]float64{80, 81}, []float64{81, 80})
	rep := Compare(base, base[:2], Options{Thresholds: stats.Thresholds{Paired: true}, Timing: &TimingRuns{Base: bt, Cand: ct, Margins: DefaultHostMargins}})
	st := rep.metric("step_time")
	t.Logf("step_time judged on %d → %d timing runs; runs_left_out %+v", len(st.Baseline.RunMeans), len(st.Candidate.RunMeans), rep.RunsLeftOut)
	if len(st.Baseline.RunMeans) == 2 && len(rep.RunsLeftOut) == 0 {
		t.Errorf("baseline timing run 3 left out of step_time (its pair is incomplete) but not in runs_left_out")
	}
	// With a disturbance elsewhere, the same run is listed as "its pair is incomplete".
	ct[0].Conditions = hostCond(1.8, 0.95)
	rep = Compare(base, base[:2], Options{Thresholds: stats.Thresholds{Paired: true}, Timing: &TimingRuns{Base: bt, Cand: ct, Margins: DefaultHostMargins}})
	t.Logf("with candidate timing run 1 disturbed: runs_left_out %+v", rep.RunsLeftOut)
}

// Q3: under the contention rule, step_time's baseline run means are its
// quiet timing runs' (contendedSamples), but JudgedNames takes the
// selection's every run (noVerdict): the counts differ and the comment's
// bars for the baseline fall back to "b1", "b2" although ids are known.
func TestSelectionReviewContendedNames(t *testing.T) {
	base := syntheticRuns(t, 3, 20, 100, 0, 5)
	bt := timed([]float64{20, 21, 19}, []float64{20.5, 20, 21}, []float64{19, 20, 20})
	bt[1].Conditions = hostCond(1.8, 0.95)
	slow := busyTimed([]float64{120, 118, 122}, []float64{70, 69, 71}, 3)
	ids := &RunIDs{Baseline: []int64{9, 8, 7}, Candidate: []int64{12}, BaselineTiming: []int64{9, 8, 7}, CandidateTiming: []int64{12, 12, 12}}
	rep := Compare(base, base[:1], Options{IDs: ids, Timing: &TimingRuns{Base: bt, Cand: slow, Margins: DefaultHostMargins}})
	st := rep.metric("step_time")
	m, _ := analysis.MetricByName("step_time")
	bn, cn := rep.JudgedNames(m, len(st.Baseline.RunMeans), len(st.Candidate.RunMeans))
	t.Logf("contended %v, step_time %s, run means %v → %v, names %q → %q", rep.Timing.Contended, st.Verdict, st.Baseline.RunMeans, st.Candidate.RunMeans, bn, cn)
	if rep.Timing.Contended && bn == nil {
		t.Errorf("baseline bars named by position; want run 9, run 7")
	}
	// The contention rule left baseline timing run 8 out of step_time
	// (contendedSamples: the baseline's quiet runs), but runs_left_out
	// has nothing (leftOut skips a kind whose side had no quiet run).
	t.Logf("runs_left_out %+v", rep.RunsLeftOut)
	if rep.Timing.Contended && len(st.Baseline.RunMeans) == 2 && !slices.ContainsFunc(rep.RunsLeftOut, func(l LeftOutRun) bool { return l.Side == "baseline" && l.Timing }) {
		t.Errorf("runs_left_out does not list baseline run 8's timing run, which the contention rule left out")
	}
}

// Q2: random forged reports through what the trusted phase calls
// (ReapplyHost, JudgedNames, Selection) and what the run step calls
// (JudgedSamples, StepSeries): no panic.
func TestSelectionReviewForgedReportsNoPanic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	counts := []int{-5, -1, 0, 1, 2, 3, 7, MaxTimingRuns + 1, 1 << 40}
	list := func() []string {
		if rng.IntN(3) == 0 {
			return nil
		}
		out := make([]string, rng.IntN(6))
		for i := range out {
			if rng.IntN(2) == 0 {
				out[i] = "busy"
			}
		}
		return out
	}
	idl := func() []int64 {
		if rng.IntN(3) == 0 {
			return nil
		}
		out := make([]int64, rng.IntN(6))
		for i := range out {
			out[i] = int64(rng.IntN(3)) - 1
		}
		return out
	}
	base := syntheticRuns(t, 2, 5, 100, 0, 5)
	bt := timed([]float64{80, 81}, []float64{82, 80})
	var names []string
	for _, m := range analysis.Metrics {
		names = append(names, m.Name)
	}
	for i := range 600 {
		rep := &Report{Baseline: Side{Runs: counts[rng.IntN(len(counts))]}, Candidate: Side{Runs: counts[rng.IntN(len(counts))]}}
		if rng.IntN(2) == 0 {
			rep.SampleUnit = stats.UnitPair
		}
		if rng.IntN(2) == 0 {
			rep.HostBusy = &Disturbed{Base: list(), Cand: list()}
		}
		if rng.IntN(2) == 0 {
			tm := &Timing{BaseRuns: counts[rng.IntN(len(counts))], CandRuns: counts[rng.IntN(len(counts))], Contended: rng.IntN(2) == 0, ContentionMargin: rng.Float64()}
			for range rng.IntN(3) {
				tm.Metrics = append(tm.Metrics, names[rng.IntN(len(names))])
			}
			if rng.IntN(2) == 0 {
				tm.Disturbed = &Disturbed{Base: list(), Cand: list()}
			}
			rep.Timing = tm
		}
		if rng.IntN(2) == 0 {
			rep.RunIDs = &RunIDs{Baseline: idl(), Candidate: idl(), BaselineTiming: idl(), CandidateTiming: idl()}
		}
		for _, n := range names {
			rep.Metrics = append(rep.Metrics, stats.Result{Name: n, Verdict: stats.Regression})
		}
		func() {
			defer func() {
				if p := recover(); p != nil {
					b, _ := json.Marshal(rep)
					t.Fatalf("case %d: panic %v\n%s", i, p, b)
				}
			}()
			rep.ReapplyHost()
			for _, m := range analysis.Metrics {
				rep.JudgedNames(m, rng.IntN(4), rng.IntN(4))
				rep.JudgedSamples(m, base, base[:1], bt, bt[:1])
			}
			rep.StepSeries(base, base, bt, bt)
		}()
	}
}
