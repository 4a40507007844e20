package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/pgtest"
	"github.com/gpugate/gpugate/internal/testdb"
	"github.com/gpugate/gpugate/pipeline"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/runner"
	"github.com/gpugate/gpugate/stats"
	"github.com/gpugate/gpugate/trace/nsys"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

// doc is a real analysis document: the hand-made two-process export.
func doc(t *testing.T) []byte {
	t.Helper()
	db := testdb.FromSQL(t, filepath.Join("..", "trace", "nsys", "testdata", "two-process-2022.4.sql"))
	ps, err := nsys.ReadFile(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	var rs []*analysis.Result
	for _, p := range ps {
		rs = append(rs, analysis.Analyze(p, analysis.Options{}))
	}
	var buf bytes.Buffer
	report.NewAnalysis(rs).WriteJSON(&buf)
	return buf.Bytes()
}

var (
	here  = runner.Fingerprint{GPU: "NVIDIA A100-SXM4-80GB", GPUCount: 8, Driver: "550", CUDA: "12.4", Torch: "2.4.0", Profiler: "nsys"}
	there = runner.Fingerprint{GPU: "Tesla V100-SXM2-16GB", GPUCount: 8, Driver: "550", CUDA: "12.4", Torch: "2.4.0", Profiler: "nsys"}
)

func record(t *testing.T, s *baseline.Store, d []byte, fp runner.Fingerprint, commit string, created time.Time) {
	t.Helper()
	b, _ := json.Marshal(fp)
	if _, err := s.Record(context.Background(), baseline.Run{Workload: "w", Branch: "main", Commit: commit, Created: created, Kind: "baseline",
		Profiler: fp.Profiler, FingerprintHash: fp.Hash(), Fingerprint: b, Version: "t", Analysis: d}); err != nil {
		t.Fatal(err)
	}
}

// One run of this machine and five newer runs of another: the one that
// matches is the baseline, on both backends.
func TestSelectBaselineByFingerprint(t *testing.T) {
	for _, target := range []func() string{func() string { return filepath.Join(t.TempDir(), "b.db") }, func() string { return pgtest.DB(t) }} {
		ctx := context.Background()
		s, err := baseline.Open(ctx, target())
		if err != nil {
			t.Fatal(err)
		}
		d := doc(t)
		now := time.Now()
		record(t, s, d, here, "match", now.Add(-time.Hour))
		for i := range 5 {
			record(t, s, d, there, fmt.Sprint("other", i), now.Add(time.Duration(i)*time.Minute))
		}
		sel, err := pipeline.SelectBaseline(ctx, s, pipeline.Query{Workload: "w", Branch: "main", Fingerprint: here, K: 5})
		if err != nil || len(sel.Runs) != 1 || sel.Commits[0] != "match" {
			t.Errorf("%s: selection %+v, %v; want the one matching run", s.Name(), sel, err)
		}
		// A machine with no baseline of its own: the difference is named.
		third := here
		third.GPU = "NVIDIA H100"
		sel, err = pipeline.SelectBaseline(ctx, s, pipeline.Query{Workload: "w", Branch: "main", Fingerprint: third, K: 5})
		if err != nil || len(sel.Runs) != 0 || !strings.Contains(strings.Join(sel.Mismatch, ";"), "H100") {
			t.Errorf("%s: no match: %+v, %v", s.Name(), sel, err)
		}
		s.Close()
	}
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// A branch forked from main at m2; main went on to m3 and m4. The
// branch's baseline is the runs of m1 and m2, not the newer ones.
func TestSelectBaselineAtMergeBase(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	commit := func(msg string) string {
		os.WriteFile(filepath.Join(repo, "f"), []byte(msg), 0o644)
		git(t, repo, "add", "f")
		git(t, repo, "commit", "-q", "-m", msg)
		return git(t, repo, "rev-parse", "HEAD")
	}
	m1, m2 := commit("m1"), commit("m2")
	git(t, repo, "checkout", "-q", "-b", "feature")
	commit("f1")
	git(t, repo, "checkout", "-q", "main")
	m3, m4 := commit("m3"), commit("m4")
	git(t, repo, "checkout", "-q", "feature")

	s, _ := baseline.Open(ctx, filepath.Join(t.TempDir(), "b.db"))
	defer s.Close()
	d := doc(t)
	now := time.Now().Add(-time.Hour)
	for i, c := range []string{m1, m2, m3, m4} {
		record(t, s, d, here, c, now.Add(time.Duration(i)*time.Minute))
	}
	mb, err := pipeline.MergeBase(ctx, repo, "HEAD", "main")
	if err != nil || mb != m2 {
		t.Fatalf("MergeBase = %s, %v; want m2 %s", mb, err, m2)
	}
	sel, err := pipeline.SelectBaseline(ctx, s, pipeline.Query{Workload: "w", Branch: "main", Fingerprint: here, K: 5, MergeBase: mb, Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{pipeline.Short(m2), pipeline.Short(m1)}
	if strings.Join(sel.Commits, ",") != strings.Join(want, ",") || sel.Note != "" {
		t.Errorf("commits %v (note %q), want m2, m1 %v", sel.Commits, sel.Note, want)
	}
	// K=1: the newest at or before the merge-base.
	sel, _ = pipeline.SelectBaseline(ctx, s, pipeline.Query{Workload: "w", Branch: "main", Fingerprint: here, K: 1, MergeBase: mb, Repo: repo})
	if len(sel.Commits) != 1 || sel.Commits[0] != pipeline.Short(m2) {
		t.Errorf("K=1: %v, want m2", sel.Commits)
	}
	// Commits git does not know (a shallow clone): the newest, with a note.
	s2, _ := baseline.Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	defer s2.Close()
	record(t, s2, d, here, "0123456789abcdef0123456789abcdef01234567", now)
	sel, _ = pipeline.SelectBaseline(ctx, s2, pipeline.Query{Workload: "w", Branch: "main", Fingerprint: here, K: 5, MergeBase: mb, Repo: repo})
	if len(sel.Runs) != 1 || !strings.Contains(sel.Note, "shallow") {
		t.Errorf("unknown commits: %d runs, note %q", len(sel.Runs), sel.Note)
	}
}

func execution(t *testing.T, fp runner.Fingerprint) *pipeline.Execution {
	t.Helper()
	d := doc(t)
	var a report.Analysis
	if err := json.Unmarshal(d, &a); err != nil {
		t.Fatal(err)
	}
	return &pipeline.Execution{Workload: "w", Profiler: fp.Profiler, Fingerprint: fp, Runs: []gate.Run{a.Results()}, Docs: [][]byte{d}}
}

func cfg(t *testing.T, extra string) (*config.Config, *config.Workload) {
	t.Helper()
	c, err := config.Parse([]byte("version: 1\nworkloads:\n  - name: w\n    command: [\"true\"]\n    profiler: nsys\n"+extra), filepath.Join(t.TempDir(), "perf.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	w, _ := c.Workload("")
	return c, w
}

// No baseline is a stated outcome: verdict no-baseline, a warning with the
// command that records one, exit 0 by default and an error with
// baseline.on_missing: fail.
func TestNoBaseline(t *testing.T) {
	ctx := context.Background()
	for _, onMissing := range []string{"", "fail"} {
		extra := ""
		if onMissing != "" {
			extra = "baseline:\n  on_missing: " + onMissing + "\n"
		}
		c, w := cfg(t, extra)
		db := filepath.Join(t.TempDir(), "b.db")
		oc, err := pipeline.Judge(ctx, pipeline.Options{Config: c, Workload: w, DB: db, Branch: "main"}, execution(t, here))
		if err != nil {
			t.Fatal(err)
		}
		if oc.Report.Verdict != stats.NoBaseline || !strings.Contains(strings.Join(oc.Report.Warnings, " "), "gpugate baseline refresh -config") {
			t.Errorf("on_missing %q: verdict %s, warnings %q", onMissing, oc.Report.Verdict, oc.Report.Warnings)
		}
		if (oc.Err != nil) != (onMissing == "fail") {
			t.Errorf("on_missing %q: Err = %v", onMissing, oc.Err)
		}
	}
}

// A read-only store gates without recording the candidate.
func TestJudgeReadOnlyStore(t *testing.T) {
	ctx := context.Background()
	c, w := cfg(t, "")
	db := filepath.Join(t.TempDir(), "b.db")
	s, _ := baseline.Open(ctx, db)
	record(t, s, doc(t), here, "m1", time.Now().Add(-time.Minute))
	s.Close()
	os.Chmod(db, 0o444)
	var log bytes.Buffer
	oc, err := pipeline.Judge(ctx, pipeline.Options{Config: c, Workload: w, DB: db, Branch: "main", Log: &log}, execution(t, here))
	if err != nil {
		t.Fatal(err)
	}
	if len(oc.Base) != 1 || oc.Report.Verdict == stats.NoBaseline {
		t.Errorf("read-only store: %d baseline runs, verdict %s", len(oc.Base), oc.Report.Verdict)
	}
	if !strings.Contains(log.String(), "read-only") {
		t.Errorf("log %q does not say the run was not recorded", log.String())
	}
}

// Options.ReadOnly (runs of untrusted code): the store is compared with and
// never written, not even created when it is missing.
func TestJudgeReadOnlyOption(t *testing.T) {
	ctx := context.Background()
	c, w := cfg(t, "")
	db := filepath.Join(t.TempDir(), "b.db")
	s, _ := baseline.Open(ctx, db)
	record(t, s, doc(t), here, "m1", time.Now().Add(-time.Minute))
	s.Close()
	snapshot := func() map[string]string {
		m := map[string]string{}
		files, _ := filepath.Glob(db + "*")
		for _, f := range files {
			b, _ := os.ReadFile(f)
			m[f] = string(b)
		}
		return m
	}
	before := snapshot()
	oc, err := pipeline.Judge(ctx, pipeline.Options{Config: c, Workload: w, DB: db, Branch: "pr-1", ReadOnly: true, MergeBase: "m1"}, execution(t, here))
	if err != nil {
		t.Fatal(err)
	}
	if len(oc.Base) != 1 {
		t.Errorf("read-only option: %d baseline runs, verdict %s", len(oc.Base), oc.Report.Verdict)
	}
	if after := snapshot(); !maps.Equal(before, after) {
		t.Errorf("the store or the files beside it changed under ReadOnly: %d files before, %d after", len(before), len(after))
	}
	missing := filepath.Join(t.TempDir(), "none.db")
	oc, err = pipeline.Judge(ctx, pipeline.Options{Config: c, Workload: w, DB: missing, Branch: "pr-1", ReadOnly: true}, execution(t, here))
	if err != nil || oc.Report.Verdict != stats.NoBaseline {
		t.Errorf("read-only, no store: %v, %v", oc, err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("read-only run created %s", missing)
	}
}

// A detached HEAD that no variable names is never recorded as a baseline
// (it used to count as the base branch); as a candidate it is stored under
// pipeline.Detached, which no real branch can be called.
func TestJudgeDetached(t *testing.T) {
	ctx := context.Background()
	c, w := cfg(t, "")
	db := filepath.Join(t.TempDir(), "b.db")
	for _, branch := range []string{pipeline.Detached, "HEAD"} {
		_, err := pipeline.Judge(ctx, pipeline.Options{Config: c, Workload: w, DB: db, Branch: branch, Record: true}, execution(t, here))
		if err == nil || !strings.Contains(err.Error(), "detached HEAD") || !strings.Contains(err.Error(), "GPUGATE_BRANCH") {
			t.Errorf("recording on %q: %v", branch, err)
		}
	}
	if _, err := pipeline.Judge(ctx, pipeline.Options{Config: c, Workload: w, DB: db, Branch: "HEAD", MergeBase: "m1"}, execution(t, here)); err != nil {
		t.Fatal(err)
	}
	s, _ := baseline.Open(ctx, db)
	defer s.Close()
	runs, _ := s.Runs(ctx, baseline.Filter{Workload: w.Name})
	if len(runs) != 1 || runs[0].Branch != pipeline.Detached || runs[0].Kind != "candidate" {
		t.Errorf("stored %+v, want one candidate on %q", runs, pipeline.Detached)
	}
}

// Each run of a refresh is stored with the time it was made, not the
// time they were all recorded: five runs a minute and a half apart get
// five created times, those of the runs.
func TestRecordCreatedTimes(t *testing.T) {
	ctx := context.Background()
	s, err := baseline.Open(ctx, filepath.Join(t.TempDir(), "b.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ex := execution(t, here)
	ex.Runs, ex.Docs = nil, nil
	one := execution(t, here)
	first := time.Now().Add(-time.Hour).Truncate(time.Second)
	var want []time.Time
	for i := range 5 {
		ex.Runs = append(ex.Runs, one.Runs[0])
		ex.Docs = append(ex.Docs, one.Docs[0])
		want = append(want, first.Add(time.Duration(i)*90*time.Second))
	}
	ex.Made = want
	if err := pipeline.Record(ctx, s, ex, pipeline.Meta{Branch: "main", Commit: "c1", Kind: "baseline", Version: "t"}); err != nil {
		t.Fatal(err)
	}
	runs, err := s.Runs(ctx, baseline.Filter{Workload: "w"})
	if err != nil {
		t.Fatal(err)
	}
	var got []time.Time
	for _, r := range runs {
		got = append(got, r.Created)
	}
	slices.SortFunc(got, func(a, b time.Time) int { return a.Compare(b) })
	if len(got) != 5 {
		t.Fatalf("%d runs stored, want 5", len(got))
	}
	for i := range got {
		if !got[i].Equal(want[i]) {
			t.Errorf("run %d: created %s, want %s (when it was made)", i+1, got[i].UTC().Format(time.RFC3339), want[i].UTC().Format(time.RFC3339))
		}
	}
}

// The tally of a check's runs is its cost: runs, wall time, GPU-seconds
// (wall time × the machine's GPUs); none when nothing ran.
func TestTallyCost(t *testing.T) {
	var tl pipeline.Tally
	if tl.Cost(8) != nil {
		t.Error("a tally of no run has a cost")
	}
	tl.Add(90 * time.Second)
	tl.Add(30 * time.Second)
	c := tl.Cost(8)
	if c == nil || c.Runs != 2 || c.WallSeconds != 120 || c.GPUs != 8 || c.GPUSeconds != 960 {
		t.Errorf("cost %+v, want 2 runs, 120 s, 8 GPUs, 960 GPU-s", c)
	}
	var none *pipeline.Tally
	none.Add(time.Second) // a nil tally counts nothing, and does not panic
}

// A baseline refresh in which no run was quiet is inconclusive (exit 3)
// with a warning naming the busy host, never "baseline recorded"; its
// runs are stored, marked by their run conditions. One quiet run is enough
// for a recorded baseline (the disturbed ones are still marked).
func TestRecordBusyBaseline(t *testing.T) {
	ctx := context.Background()
	c, w := cfg(t, "")
	host, _ := os.Hostname()
	busy := func(other float64) *runcond.Conditions {
		p := 0.9
		return &runcond.Conditions{NotSampled: "no nvidia-smi", Host: &runcond.Host{WallSec: 10, CPUs: 2, OtherCPU: &other, CPUPressure: &p, Steal: new(float64)}}
	}
	for _, tc := range []struct {
		name  string
		conds []*runcond.Conditions
		quiet bool
	}{
		{"every run disturbed", []*runcond.Conditions{busy(1.8), busy(1.9)}, false},
		{"one run quiet", []*runcond.Conditions{busy(1.8), busy(0.01)}, true},
	} {
		db := filepath.Join(t.TempDir(), "b.db")
		ex := execution(t, here)
		ex.Runs, ex.Docs = append(ex.Runs, ex.Runs[0]), append(ex.Docs, ex.Docs[0])
		ex.Conditions = tc.conds
		var log strings.Builder
		oc, err := pipeline.Judge(ctx, pipeline.Options{Config: c, Workload: w, DB: db, Branch: "main", Record: true, Log: &log}, ex)
		if err != nil {
			t.Fatal(err)
		}
		var md, txt bytes.Buffer
		report.WriteCompareMarkdown(&md, oc.Report)
		report.WriteCompareText(&txt, oc.Report)
		s, _ := baseline.Open(ctx, db)
		runs, _ := s.Runs(ctx, baseline.Filter{Workload: w.Name, Kind: "baseline"})
		s.Close()
		if len(runs) != 2 {
			t.Errorf("%s: %d baseline runs stored, want both (marked by their conditions)", tc.name, len(runs))
		}
		if tc.quiet {
			if oc.Report.Verdict != stats.NoBaseline || oc.Report.Recorded != "main" || !strings.Contains(md.String(), "✅ **baseline recorded**") {
				t.Errorf("%s: %s, recorded %q:\n%s", tc.name, oc.Report.Verdict, oc.Report.Recorded, md.String())
			}
			continue
		}
		want := "no quiet baseline run: every run was disturbed (run 1: the host was busy: other processes used 1.8 of 2 CPUs, CPU pressure 90% during the run; run 2: the host was busy: other processes used 1.9 of 2 CPUs, CPU pressure 90% during the run) on host " + host + "; the runs are stored as baselines of main, marked disturbed"
		if oc.Report.Verdict != stats.Inconclusive || oc.Report.Recorded != "main" || len(oc.Report.Warnings) == 0 || !strings.HasPrefix(oc.Report.Warnings[0], want) {
			t.Errorf("%s: %s, recorded %q, warnings %q; want inconclusive, stored as main's, a warning starting %q", tc.name, oc.Report.Verdict, oc.Report.Recorded, oc.Report.Warnings, want)
		}
		if !strings.HasPrefix(md.String(), "### gpugate: ⚠️ **inconclusive: no quiet baseline run**\n\n2 runs stored as the baseline of `main`, every one disturbed.\n\n> [!WARNING]\n> no quiet baseline run: every run was disturbed") {
			t.Errorf("%s: the comment:\n%s", tc.name, md.String())
		}
		for what, out := range map[string]string{"markdown": md.String(), "text": txt.String(), "log": log.String()} {
			if strings.Contains(out, "✅") || !strings.Contains(out, "no quiet baseline run: every run was disturbed") || !strings.Contains(out, "on host "+host) ||
				!strings.Contains(out, "rerun gpugate baseline refresh when the machine is quiet") {
				t.Errorf("%s: the %s does not say it plainly:\n%s", tc.name, what, out)
			}
		}
	}
}
