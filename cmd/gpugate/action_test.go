package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/action"
	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/internal/ghfake"
)

// fakeJobConfig writes a perf.yaml whose job "trains" by copying a real
// Kineto trace where the torch backend expects its trace.
func fakeJobConfig(t *testing.T, dir, trace string) string {
	t.Helper()
	cfg := filepath.Join(dir, "perf.yaml")
	os.WriteFile(cfg, []byte(`version: 1
workloads:
  - name: resnet
    command: 'echo training; cp `+trace+` "$(echo "$GPUGATE_TRACE_OUT" | sed "s/{rank}/0/")"'
    profiler: torch
`), 0o644)
	return cfg
}

type actionEnv map[string]string

func (e actionEnv) get(k string) string { return e[k] }

func TestActionCommand(t *testing.T) {
	nw4 := fixtures.Path(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	nw0 := fixtures.Path(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_0/worker0.1623143089861.pt.trace.json.gz")
	dir := t.TempDir()
	db := filepath.Join(dir, "b.db")
	t.Setenv("GPUGATE_BRANCH", "main")
	var o, e bytes.Buffer
	if code := gpugate(context.Background(), []string{"run", "-config", fakeJobConfig(t, filepath.Join(dir), nw4), "-db", db, "-out", filepath.Join(dir, "rec"), "-record-baseline"}, &o, &e); code != 0 {
		t.Fatalf("record: exit %d %s", code, e.String())
	}
	headDir := filepath.Join(dir, "head")
	os.MkdirAll(headDir, 0o755)
	headCfg := fakeJobConfig(t, headDir, nw0)
	event := filepath.Join(dir, "event.json")
	os.WriteFile(event, []byte(`{"number":5,"pull_request":{"number":5,"head":{"sha":"abc","repo":{"fork":true}}}}`), 0o644)

	gh := ghfake.New()
	defer gh.Close()
	env := func(extra ...string) (actionEnv, string, string) {
		out, sum := filepath.Join(t.TempDir(), "out"), filepath.Join(t.TempDir(), "summary")
		os.WriteFile(out, nil, 0o644)
		os.WriteFile(sum, nil, 0o644)
		m := actionEnv{"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": out, "GITHUB_STEP_SUMMARY": sum, "RUNNER_TEMP": t.TempDir(),
			"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": event, "GITHUB_API_URL": gh.URL, "GITHUB_REPOSITORY": "acme/train",
			"GPUGATE_CONFIG": headCfg, "GPUGATE_BASELINE_DB": db, "GPUGATE_GITHUB_TOKEN": "token-abcdefghijkl", "GPUGATE_CHECK_RUN": "true"}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m, out, sum
	}
	run := func(m actionEnv) error {
		var stdout, stderr bytes.Buffer
		return runAction(context.Background(), m.get, &stdout, &stderr)
	}
	exitCode := func(err error) int {
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		if err != nil {
			return 2
		}
		return 0
	}

	m, outFile, sumFile := env()
	if code := exitCode(run(m)); code != 1 {
		t.Fatalf("regression run: exit %d, want 1", code)
	}
	outs, _ := os.ReadFile(outFile)
	for _, want := range []string{"verdict<<", "regression", "step-time-delta<<", "regressions<<", "step_time", "report-path<<", "result-path<<"} {
		if !strings.Contains(string(outs), want) {
			t.Errorf("outputs lack %q:\n%s", want, outs)
		}
	}
	if sum, _ := os.ReadFile(sumFile); !strings.Contains(string(sum), "data-loader-bound") {
		t.Errorf("job summary lacks the finding:\n%s", sum)
	}
	comments, _ := gh.Snapshot(5)
	if len(comments) != 1 || !strings.HasPrefix(comments[0].Body, action.Marker("resnet")) || !strings.Contains(comments[0].Body, "xychart-beta") {
		t.Fatalf("comments after the first run: %+v", comments)
	}
	if len(gh.Checks) != 1 || gh.Checks[0]["conclusion"] != "failure" {
		t.Errorf("check runs %v", gh.Checks)
	}
	// Second run: the same comment is edited.
	m, _, _ = env()
	run(m)
	if c2, _ := gh.Snapshot(5); len(c2) != 1 || c2[0].ID != comments[0].ID {
		t.Errorf("second run: %d comments", len(c2))
	}

	// A read-only token (a fork PR): no failure for not commenting; the
	// exit status follows the verdict and the summary says what to do.
	gh.ReadOnly = true
	m, _, sumFile = env("GPUGATE_FAIL_ON_REGRESSION", "false")
	if err := run(m); err != nil {
		t.Errorf("read-only token, fail-on-regression false: %v", err)
	}
	if sum, _ := os.ReadFile(sumFile); !strings.Contains(string(sum), "No PR comment") || !strings.Contains(string(sum), "workflow_run") {
		t.Errorf("summary does not explain the missing comment:\n%s", sum)
	}
	m, _, _ = env()
	if code := exitCode(run(m)); code != 1 {
		t.Errorf("read-only token, regression: exit %d, want 1", code)
	}
	// Comment mode posts a result file (the second, fork-safe workflow).
	gh.ReadOnly = false
	res := filepath.Join(m["RUNNER_TEMP"], "gpugate-result.json")
	m2, _, _ := env("GPUGATE_MODE", "comment", "GPUGATE_RESULT", res)
	if err := run(m2); err != nil {
		t.Errorf("comment mode: %v", err)
	}
	for _, bad := range []actionEnv{{"GPUGATE_COMMENT": "sometimes"}, {"GPUGATE_MODE": "deploy"}, {"GPUGATE_FAIL_ON_REGRESSION": "maybe"}} {
		m, _, _ := env()
		for k, v := range bad {
			m[k] = v
		}
		if err := run(m); err == nil {
			t.Errorf("bad input %v accepted", bad)
		}
	}
}

// A baseline recorded on other hardware is never compared silently: the
// run fails with exit 2 and lists the fields that differ; a stale baseline
// is flagged.
func TestFingerprintMismatchAndStale(t *testing.T) {
	nw0 := fixtures.Path(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_0/worker0.1623143089861.pt.trace.json.gz")
	dir := t.TempDir()
	db := filepath.Join(dir, "b.db")
	var o, e bytes.Buffer
	// Recorded from a trace made elsewhere: its fingerprint is the V100's.
	if code := gpugate(context.Background(), []string{"baseline", "record", "-workload", "resnet", "-db", db, nw0}, &o, &e); code != 0 {
		t.Fatalf("baseline record: exit %d %s", code, e.String())
	}
	cfg := fakeJobConfig(t, dir, nw0)
	o.Reset()
	e.Reset()
	code := gpugate(context.Background(), []string{"run", "-config", cfg, "-db", db, "-out", filepath.Join(dir, "run")}, &o, &e)
	if code != 2 || !strings.Contains(e.String(), "matches this machine's fingerprint") || !strings.Contains(e.String(), `gpu: "Tesla V100-DGXS-32GB" != "none"`) {
		t.Errorf("mismatch: exit %d, stderr %q", code, e.String())
	}
	// Recorded here, then read with max_age 1ns: flagged as stale.
	t.Setenv("GPUGATE_BRANCH", "main")
	gpugate(context.Background(), []string{"run", "-config", cfg, "-db", db, "-out", filepath.Join(dir, "rec"), "-record-baseline"}, &o, &e)
	os.WriteFile(cfg, append(must(os.ReadFile(cfg)), []byte("baseline:\n  max_age: 1ns\n")...), 0o644)
	o.Reset()
	code = gpugate(context.Background(), []string{"run", "-config", cfg, "-db", db, "-out", filepath.Join(dir, "again")}, &o, &e)
	if code != 0 || !strings.Contains(o.String(), "stale baseline") {
		t.Errorf("stale: exit %d\n%s", code, o.String())
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
