package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpugate/gpugate/internal/fixtures"
)

const nw4Trace = "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_4/worker0.1623213129365.pt.trace.json.gz"

// A local gpugate run leaves its report in its artifacts folder, as the
// Action does: report.md (what the PR comment would say, with the cost
// in its footer) and report.json (compare's document, with the cost: the
// one run made and its wall time).
func TestRunWritesReports(t *testing.T) {
	trace := fixtures.Path(t, nw4Trace)
	dir := t.TempDir()
	t.Setenv("GPUGATE_BRANCH", "main")
	cfg := fakeJobConfig(t, dir, trace)
	db, out := filepath.Join(dir, "b.db"), filepath.Join(dir, "art")
	// A file planted where report.md goes is replaced, not written
	// through (a symlink to a victim).
	os.MkdirAll(out, 0o755)
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep"), 0o644)
	os.Symlink(victim, filepath.Join(out, "report.md"))
	start := time.Now()
	var o, e bytes.Buffer
	if code := gpugate(context.Background(), []string{"run", "-config", cfg, "-db", db, "-out", out}, &o, &e); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, e.String())
	}
	took := time.Since(start).Seconds()
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("report.md was written through the planted symlink into %s", victim)
	}
	if !strings.Contains(string(md), "### gpugate:") || !strings.Contains(string(md), "Cost of this check: 1 run of the job, ") {
		t.Errorf("report.md:\n%s", md)
	}
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Verdict string `json:"verdict"`
		Cost    *struct {
			Runs        int     `json:"runs"`
			WallSeconds float64 `json:"wall_s"`
			GPUs        int     `json:"gpus"`
			GPUSeconds  float64 `json:"gpu_s"`
		} `json:"cost"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	if c := rep.Cost; c == nil || c.Runs != 1 || c.WallSeconds <= 0 || c.WallSeconds > took || c.GPUSeconds != c.WallSeconds*float64(c.GPUs) {
		t.Errorf("report.json cost %+v, want 1 run within the %.1f s the command took", c, took)
	}
	if !strings.Contains(o.String(), "cost: 1 run of the job, ") {
		t.Errorf("the text report lacks the cost:\n%s", o.String())
	}
}

// baseline refresh records each run with the time it was made: runs a
// second apart do not share one created time.
func TestRefreshCreatedTimes(t *testing.T) {
	trace := fixtures.Path(t, nw4Trace)
	dir := t.TempDir()
	t.Setenv("GPUGATE_BRANCH", "main")
	cfg := filepath.Join(dir, "perf.yaml")
	os.WriteFile(cfg, []byte(`version: 1
workloads:
  - name: resnet
    command: 'echo training; sleep 1.1; cp `+trace+` "$(echo "$GPUGATE_TRACE_OUT" | sed "s/{rank}/0/")"'
    profiler: torch
    # The job replays a capture: there is no training loop to time, so
    # step time comes from the trace (docs/verdicts.md §5d).
    profiler_timing: true
# The job replays a capture: its step times do not move with the host's
# load, so no run of it is disturbed (docs/verdicts.md §5c).
host:
  other_cpu: 100%
  cpu_pressure: 100%
  steal: 100%
  cpu_throttled: 100%
`), 0o644)
	db := filepath.Join(dir, "b.db")
	var o, e bytes.Buffer
	if code := gpugate(context.Background(), []string{"baseline", "refresh", "-config", cfg, "-db", db, "-runs", "3", "-out", filepath.Join(dir, "runs")}, &o, &e); code != 0 {
		t.Fatalf("refresh: exit %d\n%s", code, e.String())
	}
	o.Reset()
	if code := gpugate(context.Background(), []string{"baseline", "list", "-db", db, "-format", "json"}, &o, &e); code != 0 {
		t.Fatalf("list: exit %d\n%s", code, e.String())
	}
	var runs []struct {
		Created string `json:"created_at"`
	}
	if err := json.Unmarshal(o.Bytes(), &runs); err != nil {
		t.Fatalf("list: %v\n%s", err, o.String())
	}
	created := map[time.Time]bool{}
	for _, r := range runs {
		c, err := time.Parse(time.RFC3339, r.Created)
		if err != nil {
			t.Errorf("created_at %q: %v", r.Created, err)
		}
		created[c] = true
	}
	if len(runs) != 3 || len(created) != 3 {
		t.Errorf("%d runs with %d distinct created times, want 3 and 3:\n%s", len(runs), len(created), o.String())
	}
}

// The nightly (mode refresh) records the baseline: that is a success,
// said by a notice, not a ::warning "recorded as baseline of main", and
// its step summary says the baseline was recorded, not "no baseline".
func TestNightlyRecordIsSuccess(t *testing.T) {
	trace := fixtures.Path(t, nw4Trace)
	dir := t.TempDir()
	t.Setenv("GPUGATE_BRANCH", "main")
	cfg := fakeJobConfig(t, dir, trace)
	out, sum := filepath.Join(dir, "out"), filepath.Join(dir, "summary")
	os.WriteFile(out, nil, 0o644)
	os.WriteFile(sum, nil, 0o644)
	m := actionEnv{"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": out, "GITHUB_STEP_SUMMARY": sum, "RUNNER_TEMP": filepath.Join(dir, "tmp"),
		"HOME": t.TempDir(), "GITHUB_EVENT_NAME": "schedule", "GITHUB_REPOSITORY": "acme/train",
		"GPUGATE_CONFIG": cfg, "GPUGATE_BASELINE_DB": filepath.Join(dir, "b.db"), "GPUGATE_MODE": "refresh", "GPUGATE_PHASE": "run"}
	err, stdout, stderr := runEnv(m)
	if err != nil {
		t.Fatalf("nightly: %v\n%s\n%s", err, stdout, stderr)
	}
	if strings.Contains(stdout, "::warning") {
		t.Errorf("the nightly's recording raised a warning:\n%s", stdout)
	}
	if !strings.Contains(stdout, "::notice title=gpugate%3A baseline recorded::5 run(s) of resnet recorded as the baseline of main") {
		t.Errorf("no notice of the recording:\n%s", stdout)
	}
	s, _ := os.ReadFile(sum)
	if strings.Contains(string(s), "⚠️") || strings.Contains(strings.ToLower(string(s)), "no baseline") || !strings.Contains(string(s), "✅ **baseline recorded**") ||
		!strings.Contains(string(s), "5 runs recorded as the baseline of `main`") || !strings.Contains(string(s), "Cost of this check: 5 runs of the job, ") {
		t.Errorf("step summary:\n%s", s)
	}
	if o, _ := os.ReadFile(out); !strings.Contains(string(o), "recorded<<") {
		t.Errorf("outputs lack recorded:\n%s", o)
	}
}
