package gate

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/stats"
)

// The selection is one step that every reader reads (issue 36): with
// stored runs (ids 7, 8, 9 | 12, 13, 14), the second baseline run and the
// third candidate run disturbed, and the first candidate timing run
// disturbed, the report names each run left out by its store id, with
// why, in runs_left_out, the warnings and nowhere by position; the
// samples the Action stores (JudgedSamples) are those the verdict
// judged, to the run mean; the comment's bars (JudgedNames) carry the ids
// of exactly those runs; and a verdict judged again from those samples
// (Rejudge, ReapplyHost) is the verdict.
func TestSelectionOneStep(t *testing.T) {
	busy := "the host was busy: other processes used 1.8 of 2 CPUs during the run"
	base := syntheticRuns(t, 3, 20, 100, 0, 5)
	cand := []Run{synthetic(t, 20, 100, 0, 5), synthetic(t, 20, 101, 0, 5), synthetic(t, 20, 300, 0, 5)}
	bt := timed([]float64{80, 81, 79}, []float64{82, 80, 81}, []float64{79, 80, 80})
	ct := timed([]float64{300, 310, 305}, []float64{120, 121, 119}, []float64{121, 120, 122})
	ct[0].Conditions = hostCond(1.8, 0.9)
	ids := &RunIDs{Baseline: []int64{9, 8, 7}, Candidate: []int64{12, 13, 14}, BaselineTiming: []int64{9, 8, 7}, CandidateTiming: []int64{12, 13, 14}}
	rep := Compare(base, cand, Options{IDs: ids, Disturbed: Disturbed{Base: []string{"", busy, ""}, Cand: []string{"", "", busy}},
		Timing: &TimingRuns{Base: bt, Cand: ct, Margins: DefaultHostMargins}})

	// Every run left out, by id, with why.
	want := []LeftOutRun{
		{Side: "baseline", Run: "run 8", Metrics: "the time metrics", Why: busy},
		{Side: "candidate", Run: "run 14", Metrics: "the time metrics", Why: busy},
		{Side: "candidate", Run: "run 12's timing run", Timing: true, Metrics: "step_time", Why: HostBusy(hostCond(1.8, 0.9), DefaultHostMargins)},
	}
	if !slices.Equal(rep.RunsLeftOut, want) {
		t.Errorf("runs left out:\n%+v\nwant\n%+v", rep.RunsLeftOut, want)
	}
	for _, w := range []string{"baseline run 8: " + busy, "candidate run 14: " + busy, "candidate run 12's timing run: the host was busy"} {
		if !slices.ContainsFunc(rep.Warnings, func(s string) bool { return strings.HasPrefix(s, w) }) {
			t.Errorf("no warning starts %q: %q", w, rep.Warnings)
		}
	}
	for _, w := range rep.Warnings {
		if strings.Contains(w, "run 2:") || strings.Contains(w, "run 3:") || strings.Contains(w, "timing run 1") {
			t.Errorf("a warning names a run by position: %q", w)
		}
	}

	// Step time: judged on the quiet timing runs 13 and 14 (120 ms)
	// against 9, 8, 7 (80 ms): a regression. gpu-less counts keep every run.
	st := rep.metric("step_time")
	if st.Verdict != stats.Regression || len(st.Candidate.RunMeans) != 2 || len(st.Baseline.RunMeans) != 3 {
		t.Fatalf("step_time %s, run means %v → %v; want a regression on 3 → 2 timing runs", st.Verdict, st.Baseline.RunMeans, st.Candidate.RunMeans)
	}
	if wantC := geoMeanOfMeans(ct[1].StepMs, ct[2].StepMs); math.Abs(st.Candidate.Value-wantC) > 1e-9 {
		t.Errorf("step_time candidate %v, want the quiet timing runs' %v", st.Candidate.Value, wantC)
	}
	m, _ := analysis.MetricByName("step_time")
	bn, cn := rep.JudgedNames(m, len(st.Baseline.RunMeans), len(st.Candidate.RunMeans))
	if !slices.Equal(bn, []string{"run 9", "run 8", "run 7"}) || !slices.Equal(cn, []string{"run 13", "run 14"}) {
		t.Errorf("step_time's run means named %q → %q; want run 9, 8, 7 → run 13, 14", bn, cn)
	}
	// repeat: auto's candidate: timing run 3 was made after the last
	// profiled run and stored with none (0): named by position, the
	// others by their run.
	auto := *rep
	auto.RunIDs = &RunIDs{Baseline: ids.Baseline, Candidate: ids.Candidate, BaselineTiming: ids.BaselineTiming, CandidateTiming: []int64{12, 13, 0}}
	if _, cn = auto.JudgedNames(m, len(st.Baseline.RunMeans), len(st.Candidate.RunMeans)); !slices.Equal(cn, []string{"run 13", "timing run 3"}) {
		t.Errorf("step_time's candidate run means named %q; want run 13, timing run 3", cn)
	}
	// data_wait (a time from the traces): runs 9, 7 against 12, 13.
	dw := rep.metric("data_wait")
	dm, _ := analysis.MetricByName("data_wait")
	bn, cn = rep.JudgedNames(dm, len(dw.Baseline.RunMeans), len(dw.Candidate.RunMeans))
	if !slices.Equal(bn, []string{"run 9", "run 7"}) || !slices.Equal(cn, []string{"run 12", "run 13"}) {
		t.Errorf("data_wait's run means named %q → %q; want run 9, 7 → run 12, 13", bn, cn)
	}
	// sync_calls (a count): every run.
	sc := rep.metric("sync_calls")
	sm, _ := analysis.MetricByName("sync_calls")
	if bn, cn = rep.JudgedNames(sm, len(sc.Baseline.RunMeans), len(sc.Candidate.RunMeans)); len(bn) != 3 || len(cn) != 3 {
		t.Errorf("sync_calls's run means named %q → %q; want every run", bn, cn)
	}

	// The Action's path: the samples stored, judged again, the host's
	// notes applied again: the same verdicts and values.
	again := *rep
	again.Metrics = slices.Clone(rep.Metrics)
	for i, r := range again.Metrics {
		am, _ := analysis.MetricByName(r.Name)
		b, c := rep.JudgedSamples(am, base, cand, bt, ct)
		if len(b) != len(r.Baseline.RunMeans) || len(c) != len(r.Candidate.RunMeans) {
			t.Errorf("%s: %d → %d samples stored, the verdict judged %d → %d runs", r.Name, len(b), len(c), len(r.Baseline.RunMeans), len(r.Candidate.RunMeans))
		}
		nr, err := Rejudge(r, b, c, Options{})
		if err != nil {
			t.Fatal(err)
		}
		again.Metrics[i] = nr
	}
	again.ReapplyHost()
	for i, r := range again.Metrics {
		o := rep.Metrics[i]
		if r.Verdict != o.Verdict || r.Candidate.Value != o.Candidate.Value || r.Baseline.Value != o.Baseline.Value {
			t.Errorf("%s judged again: %s %v → %v; the verdict: %s %v → %v", r.Name, r.Verdict, r.Baseline.Value, r.Candidate.Value, o.Verdict, o.Baseline.Value, o.Candidate.Value)
		}
	}
}

// Without store ids (compare of trace files), runs are named by
// position; a paired comparison leaves a pair out whole and says why of
// its quiet half; a run with several timing runs names each.
func TestSelectionNames(t *testing.T) {
	busy := "the host was busy"
	base := syntheticRuns(t, 3, 20, 100, 0, 5)
	cand := syntheticRuns(t, 3, 20, 100, 0, 5)
	rep := Compare(base, cand, Options{Thresholds: stats.Thresholds{Paired: true}, Disturbed: Disturbed{Base: []string{"", busy, ""}}})
	want := []LeftOutRun{
		{Side: "baseline", Run: "run 2", Metrics: "the time metrics", Why: busy},
		{Side: "candidate", Run: "run 2", Metrics: "the time metrics", Why: "its pair's baseline run was disturbed (" + busy + ")"},
	}
	if !slices.Equal(rep.RunsLeftOut, want) {
		t.Errorf("paired runs left out:\n%+v\nwant\n%+v", rep.RunsLeftOut, want)
	}
	// 0: a timing run stored with no run (repeat: auto's after the last
	// profiled run), named by position and said so; never "run 0", and not
	// counted among run 6's.
	r := &Report{RunIDs: &RunIDs{CandidateTiming: []int64{5, 5, 6, 0, 0}}}
	for i, w := range []string{"run 5's timing run 1", "run 5's timing run 2", "run 6's timing run", "timing run 4 (not stored)", "timing run 5 (not stored)", "timing run 6"} {
		if got := r.TimingRunName("candidate", i); got != w {
			t.Errorf("timing run %d named %q, want %q", i, got, w)
		}
	}
}

// A report read from an artifact may say any number of runs: judging it
// again neither panics on a negative count nor loops over a forged
// trillion.
func TestSelectionForgedCounts(t *testing.T) {
	for _, n := range []int{-1, 1 << 40} {
		rep := &Report{Baseline: Side{Runs: n}, Candidate: Side{Runs: n}, HostBusy: &Disturbed{Cand: []string{"busy"}},
			Timing:  &Timing{Metrics: []string{"step_time"}, BaseRuns: n, CandRuns: n, Disturbed: &Disturbed{Base: []string{"busy"}}},
			Metrics: []stats.Result{{Name: "step_time", Verdict: stats.Regression}, {Name: "data_wait", Verdict: stats.Pass}}}
		rep.ReapplyHost()
		m, _ := analysis.MetricByName("step_time")
		rep.JudgedNames(m, 1, 1)
		rep.JudgedSamples(m, nil, nil, nil, nil)
	}
}
