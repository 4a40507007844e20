package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
    # The job replays a capture: there is no training loop to time, so
    # step time comes from the trace (docs/verdicts.md §5d).
    profiler_timing: true
# A replayed capture against itself has 4+4 steps: the interval of its
# cpu_wait (17 ms, ±27%) is bounded within 40%, not within the default 15%
# (an honest inconclusive). Regressions of the fixtures stay far beyond it.
allowances:
  cpu_wait: 40%
# The job replays a capture: its step times do not move with the host's
# load, so no run of it is disturbed (docs/verdicts.md §5c).
host:
  other_cpu: 100%
  cpu_pressure: 100%
  steal: 100%
  cpu_throttled: 100%
`), 0o644)
	return cfg
}

type actionEnv map[string]string

func (e actionEnv) get(k string) string { return e[k] }

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if err != nil {
		return 2
	}
	return 0
}

// actionFixture is a baseline recorded from the num_workers=4 capture, and
// configs whose job replays the num_workers=0 capture (a data-loader
// regression) or the num_workers=4 one again (a pass).
type actionFixture struct {
	db, regressCfg, passCfg string
	gh                      *ghfake.Server
}

func newActionFixture(t *testing.T) *actionFixture {
	nw4 := fixtures.Path(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	nw0 := fixtures.Path(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_0/worker0.1623143089861.pt.trace.json.gz")
	dir := t.TempDir()
	f := &actionFixture{db: filepath.Join(dir, "b.db")}
	t.Setenv("GPUGATE_BRANCH", "main")
	// Three baseline runs: one run a side has no run-to-run spread and
	// judges nothing. The replayed capture repeats exactly: spread 0.
	cfg := fakeJobConfig(t, dir, nw4)
	for i := range 3 {
		var o, e bytes.Buffer
		if code := gpugate(context.Background(), []string{"run", "-config", cfg, "-db", f.db, "-out", filepath.Join(dir, fmt.Sprintf("rec%d", i)), "-record-baseline"}, &o, &e); code != 0 {
			t.Fatalf("record: exit %d %s", code, e.String())
		}
	}
	for _, c := range []struct {
		dst   *string
		trace string
	}{{&f.regressCfg, nw0}, {&f.passCfg, nw4}} {
		d := t.TempDir()
		*c.dst = fakeJobConfig(t, d, c.trace)
	}

	f.gh = ghfake.New()
	t.Cleanup(f.gh.Close)
	f.gh.Repo = "acme/train"
	return f
}

// env is a workflow's environment for a pull_request event on pr with labels.
func (f *actionFixture) env(t *testing.T, pr int, cfg string, labels []string, extra ...string) (actionEnv, string, string) {
	t.Helper()
	dir := t.TempDir()
	out, sum, event := filepath.Join(dir, "out"), filepath.Join(dir, "summary"), filepath.Join(dir, "event.json")
	os.WriteFile(out, nil, 0o644)
	os.WriteFile(sum, nil, 0o644)
	var ls []map[string]string
	for _, l := range labels {
		ls = append(ls, map[string]string{"name": l})
	}
	ev, _ := json.Marshal(map[string]any{"number": pr, "pull_request": map[string]any{"number": pr, "labels": ls,
		"head": map[string]any{"sha": strings.Repeat("a", 40), "repo": map[string]any{"fork": false}}}})
	os.WriteFile(event, ev, 0o644)
	m := actionEnv{"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": out, "GITHUB_STEP_SUMMARY": sum, "RUNNER_TEMP": filepath.Join(dir, "tmp"),
		"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": event, "GITHUB_API_URL": f.gh.URL, "GITHUB_REPOSITORY": "acme/train",
		"GITHUB_SERVER_URL": "https://github.example", "GITHUB_RUN_ID": "77",
		"GPUGATE_CONFIG": cfg, "GPUGATE_BASELINE_DB": f.db, "GPUGATE_GITHUB_TOKEN": "token-abcdefghijkl", "GPUGATE_CHECK_RUN": "true"}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m, out, sum
}

func runEnv(m actionEnv) (err error, stdout, stderr string) {
	var o, e bytes.Buffer
	err = runAction(context.Background(), m.get, &o, &e)
	return err, o.String(), e.String()
}

func TestActionCommand(t *testing.T) {
	f := newActionFixture(t)
	f.gh.Login = "perf-bot-user" // a PAT: comments are a user's, GET /user works

	m, outFile, sumFile := f.env(t, 5, f.regressCfg, nil)
	err, stdout, _ := runEnv(m)
	if code := exitCode(err); code != 1 {
		t.Fatalf("regression run: exit %d (%v), want 1", code, err)
	}
	outs, _ := os.ReadFile(outFile)
	for _, want := range []string{"verdict<<", "regression", "step-time-delta<<", "regressions<<", "step_time", "report-path<<", "result-path<<",
		"artifacts-path<<", "comment-url<<", "result-json<<", `"verdict":"regression"`} {
		if !strings.Contains(string(outs), want) {
			t.Errorf("outputs lack %q:\n%s", want, outs)
		}
	}
	if !strings.Contains(stdout, "::error title=gpugate%3A step_time regressed::") {
		t.Errorf("no regression annotation:\n%s", stdout)
	}
	if sum, _ := os.ReadFile(sumFile); !strings.Contains(string(sum), "data-loader-bound") {
		t.Errorf("job summary lacks the finding:\n%s", sum)
	}
	// The evidence: traces compressed, the report as Markdown and JSON, the
	// job's log, the result as data, and the picture of the median step.
	_, art := action.Folders(m.get, "resnet")
	for _, p := range []string{"traces/trace-0.json.gz", "report.md", "report.json", "gpugate-result.json", "logs/job.log", "step.svg"} {
		if _, err := os.Stat(filepath.Join(art, p)); err != nil {
			t.Errorf("artifact folder lacks %s: %v", p, err)
		}
	}
	// The picture draws the stored baseline run's median step (stored
	// with the run: no trace of it is at hand) above this run's.
	if svg, _ := os.ReadFile(filepath.Join(art, "step.svg")); !bytes.Contains(svg, []byte(">baseline (stored run ")) || !bytes.Contains(svg, []byte(">candidate: ")) ||
		bytes.Count(svg, []byte(`<g class="lane" data-lane="host thread">`)) != 2 {
		t.Errorf("step.svg does not draw both sides:\n%.2000s", svg)
	}
	res, _ := os.ReadFile(filepath.Join(art, "gpugate-result.json"))
	if bytes.Contains(res, []byte("<!--")) || bytes.Contains(res, []byte("### gpugate")) || !bytes.Contains(res, []byte(`"metrics"`)) {
		t.Errorf("gpugate-result.json is not plain data:\n%.300s", res)
	}
	comments, _ := f.gh.Snapshot(5)
	if len(comments) != 1 || !strings.HasPrefix(comments[0].Body, action.Marker("resnet")) || !strings.Contains(comments[0].Body, "xychart-beta") ||
		comments[0].User.Login != "perf-bot-user" || !strings.Contains(comments[0].Body, "ui.perfetto.dev") {
		t.Fatalf("comments after the first run: %+v", comments)
	}
	// The comment is rendered by the post step from gpugate-result.json,
	// report.md by the run step from the result in memory: the same text,
	// with the report's numbers (it said +0.0% [+0.0, +0.0] when JSON lost
	// stats.Result's change).
	if md, _ := os.ReadFile(filepath.Join(art, "report.md")); comments[0].Body != string(md) {
		t.Errorf("the posted comment differs from report.md:\n%s\n---\n%s", comments[0].Body, md)
	}
	if d := stepTimeDelta(t, comments[0].Body); d == "+0.0% [+0.0, +0.0]" || !strings.HasPrefix(d, "+") {
		t.Errorf("step_time Δ in the comment %q, want the data-loader regression", d)
	}
	if len(f.gh.Checks) != 1 || f.gh.Checks[0]["conclusion"] != "failure" {
		t.Errorf("check runs %v", f.gh.Checks)
	}
	// Second run with the PAT: the same comment is edited.
	m, _, _ = f.env(t, 5, f.regressCfg, nil)
	runEnv(m)
	if c2, _ := f.gh.Snapshot(5); len(c2) != 1 || c2[0].ID != comments[0].ID {
		t.Errorf("second run with a PAT: %d comments, want comment %d edited", len(c2), comments[0].ID)
	}

	// The accept label: exit 0, and the comment says what was accepted.
	m, outFile, _ = f.env(t, 5, f.regressCfg, []string{"gpugate/accept-regression"})
	if err, _, _ := runEnv(m); err != nil {
		t.Errorf("accepted regression: %v, want exit 0", err)
	}
	if outs, _ := os.ReadFile(outFile); !strings.Contains(string(outs), "accepted") {
		t.Errorf("accepted: outputs %s", outs)
	}
	if c, _ := f.gh.Snapshot(5); !strings.Contains(c[0].Body, "Regression accepted** by the label `gpugate/accept-regression`: `step_time`") {
		t.Errorf("accepted comment:\n%s", c[0].Body)
	}
	// A label of another name accepts nothing.
	m, _, _ = f.env(t, 5, f.regressCfg, []string{"accept"})
	if err, _, _ := runEnv(m); exitCode(err) != 1 {
		t.Errorf("other label: %v, want exit 1", err)
	}

	// on-regression: a pass makes no comment; a regression does; a later
	// pass edits the ❌ into a pass.
	onReg := []string{"GPUGATE_COMMENT", "on-regression"}
	m, _, _ = f.env(t, 6, f.passCfg, nil, onReg...)
	if err, _, _ := runEnv(m); err != nil {
		t.Fatalf("pass: %v", err)
	}
	if c, _ := f.gh.Snapshot(6); len(c) != 0 {
		t.Fatalf("on-regression pass made a comment")
	}
	m, _, _ = f.env(t, 6, f.regressCfg, nil, onReg...)
	runEnv(m)
	c6, _ := f.gh.Snapshot(6)
	if len(c6) != 1 || !strings.Contains(c6[0].Body, "❌ **regression**") {
		t.Fatalf("on-regression regression: %+v", c6)
	}
	m, _, _ = f.env(t, 6, f.passCfg, nil, onReg...)
	runEnv(m)
	if c, _ := f.gh.Snapshot(6); len(c) != 1 || c[0].ID != c6[0].ID || strings.Contains(c[0].Body, "❌ **regression**") || !strings.Contains(c[0].Body, "✅ **pass**") {
		t.Errorf("on-regression: the pass did not edit the ❌ comment: %+v", c)
	}

	// A read-only token (a fork PR): no failure for not commenting; the
	// exit status follows the verdict and the summary says what to do.
	f.gh.ReadOnly = true
	m, _, sumFile = f.env(t, 5, f.regressCfg, nil, "GPUGATE_FAIL_ON_REGRESSION", "false")
	if err, _, _ := runEnv(m); err != nil {
		t.Errorf("read-only token, fail-on-regression false: %v", err)
	}
	if sum, _ := os.ReadFile(sumFile); !strings.Contains(string(sum), "No PR comment") || !strings.Contains(string(sum), "workflow_run") {
		t.Errorf("summary does not explain the missing comment:\n%s", sum)
	}
	m, _, _ = f.env(t, 5, f.regressCfg, nil)
	if err, _, _ := runEnv(m); exitCode(err) != 1 {
		t.Errorf("read-only token, regression: exit %d, want 1", exitCode(err))
	}
	f.gh.ReadOnly = false

	// A repository the token cannot see: a clear failure, not "read-only".
	m, _, _ = f.env(t, 5, f.passCfg, nil, "GITHUB_REPOSITORY", "acme/typo")
	err, stdout, _ = runEnv(m)
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "GITHUB_REPOSITORY") || !strings.Contains(stdout, "::error title=gpugate%3A no PR comment::") {
		t.Errorf("wrong repository: exit %d, %v", exitCode(err), err)
	}

	for _, bad := range []actionEnv{{"GPUGATE_COMMENT": "sometimes"}, {"GPUGATE_MODE": "deploy"}, {"GPUGATE_FAIL_ON_REGRESSION": "maybe"},
		{"GPUGATE_TRACE_SIZE_CAP": "lots"}, {"GPUGATE_PHASE": "later"}} {
		m, _, _ := f.env(t, 5, f.passCfg, nil)
		for k, v := range bad {
			m[k] = v
		}
		if err, _, _ := runEnv(m); err == nil {
			t.Errorf("bad input %v accepted", bad)
		}
	}
}

// The trace size cap leaves traces out and says so.
func TestActionTraceCap(t *testing.T) {
	f := newActionFixture(t)
	m, _, _ := f.env(t, 5, f.passCfg, nil, "GPUGATE_TRACE_SIZE_CAP", "0.5", "GPUGATE_COMMENT", "never")
	if err, _, _ := runEnv(m); err != nil {
		t.Fatal(err)
	}
	_, art := action.Folders(m.get, "resnet")
	r, err := action.ReadResult(filepath.Join(art, "gpugate-result.json"))
	if err != nil || r.Omitted != 1 || len(r.Traces) != 0 {
		t.Errorf("cap 0.5 MB: traces %v omitted %d (%v); want the 2.6 MB trace left out", r.Traces, r.Omitted, err)
	}
	if md, _ := os.ReadFile(filepath.Join(art, "report.md")); !strings.Contains(string(md), "left out") {
		t.Errorf("report does not say a trace was left out")
	}
}

// Config errors are annotated at their line and column.
func TestActionConfigAnnotations(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "perf.yaml")
	os.WriteFile(cfg, []byte("version: 1\nworkloads:\n  - name: train\n    command: python3 train.py\n    measure_step: 10\ngate: [step_tme]\n"), 0o644)
	m := actionEnv{"GITHUB_WORKSPACE": dir, "GPUGATE_CONFIG": cfg, "RUNNER_TEMP": t.TempDir()}
	err, stdout, _ := runEnv(m)
	if err == nil || !strings.Contains(stdout, "::error col=5,file=perf.yaml,line=5,title=gpugate%3A perf.yaml::field measure_step not found") {
		t.Errorf("config error annotation: %v\n%s", err, stdout)
	}
	os.WriteFile(cfg, []byte("version: 1\nworkloads:\n  - name: train\n    command: python3 train.py\ngate: [step_tme]\n"), 0o644)
	if _, stdout, _ := runEnv(m); !strings.Contains(stdout, "::error col=8,file=perf.yaml,line=5,title=gpugate%3A perf.yaml::gate: unknown metric \"step_tme\"") {
		t.Errorf("gate annotation:\n%s", stdout)
	}
}

// A failed job is annotated with the last lines of its log; a run with no
// baseline warns; prepare puts the store outside the workspace and names
// its cache keys.
func TestActionTroubleAnnotations(t *testing.T) {
	nw4 := fixtures.Path(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	dir := t.TempDir()
	fail := filepath.Join(dir, "fail.yaml")
	os.WriteFile(fail, []byte("version: 1\nworkloads:\n  - name: train\n    command: 'echo loading; echo CUDA out of memory at step 3; exit 3'\n    profiler: torch\n"), 0o644)
	out := filepath.Join(dir, "out")
	os.WriteFile(out, nil, 0o644)
	home := t.TempDir()
	m := actionEnv{"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": out, "RUNNER_TEMP": t.TempDir(), "HOME": home, "GPUGATE_CONFIG": fail, "GPUGATE_PHASE": "run"}
	err, stdout, _ := runEnv(m)
	if err == nil || !strings.Contains(stdout, "::error title=gpugate%3A the training job failed::") || !strings.Contains(stdout, "CUDA out of memory at step 3") {
		t.Errorf("failed job: %v\n%s", err, stdout)
	}
	// No baseline in the (new) store: a warning, exit 0.
	m["GPUGATE_CONFIG"] = fakeJobConfig(t, dir, nw4)
	err, stdout, _ = runEnv(m)
	if err != nil || !strings.Contains(stdout, "::warning title=gpugate%3A no baseline::") {
		t.Errorf("no baseline: %v\n%s", err, stdout)
	}
	m["GPUGATE_PHASE"] = "prepare"
	os.WriteFile(out, nil, 0o644)
	if err, _, _ := runEnv(m); err != nil {
		t.Fatal(err)
	}
	outs, _ := os.ReadFile(out)
	for _, want := range []string{"db<<", filepath.Join(home, ".cache", "gpugate", "resnet", "baseline.db"), "cache<<", "true",
		"cache-key<<", "gpugate-baseline-v1-resnet-", "cache-restore-key<<", "artifact-name<<", "gpugate-resnet", "store-dir<<"} {
		if !strings.Contains(string(outs), want) {
			t.Errorf("prepare outputs lack %q:\n%s", want, outs)
		}
	}
	// A postgres:// store is not cached.
	os.WriteFile(out, nil, 0o644)
	m["GPUGATE_BASELINE_DB"] = "postgres://db.example/gpugate"
	runEnv(m)
	if outs, _ := os.ReadFile(out); !strings.Contains(string(outs), "cache<<") || strings.Contains(string(outs), "cache-key") {
		t.Errorf("postgres store: %s", outs)
	}
}

// stepTimeDelta is the Δ cell of step_time in a rendered comparison table
// (the comment or report.md).
func stepTimeDelta(t *testing.T, md string) string {
	t.Helper()
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| step_time |") { // the gated table's row
			if cells := strings.Split(l, "|"); len(cells) > 4 {
				return strings.TrimSpace(cells[4])
			}
		}
	}
	t.Fatalf("no step_time row in:\n%s", md)
	return ""
}

// The prepare step writes the store (here a URL with a password) to a
// file only this user can read, in a folder of its own, and its outputs
// hold the path and the masked URL, never the password; the run step
// reads the store from that file (gpugate action -db-file FILE).
func TestActionStoreFile(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "perf.yaml")
	os.WriteFile(cfg, []byte("version: 1\nworkloads:\n  - name: train\n    command: 'true'\n    profiler: torch\n"), 0o644)
	out := filepath.Join(dir, "out")
	os.WriteFile(out, nil, 0o644)
	tmp := filepath.Join(dir, "tmp")
	const url = "postgres://gpugate_reader:s3cr3t-pw-XYZ@db.example:5432/perf"
	var stdout, stderr bytes.Buffer
	t.Setenv("GITHUB_ACTIONS", "true")
	t.Setenv("GITHUB_OUTPUT", out)
	t.Setenv("RUNNER_TEMP", tmp)
	t.Setenv("GPUGATE_CONFIG", cfg)
	t.Setenv("GPUGATE_PHASE", "prepare")
	t.Setenv("GPUGATE_BASELINE_DB", url)
	if code := gpugate(context.Background(), []string{"action"}, &stdout, &stderr); code != 0 {
		t.Fatalf("prepare: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	outs, _ := os.ReadFile(out)
	if strings.Contains(string(outs), "s3cr3t") || strings.Contains(stdout.String(), "s3cr3t") && !strings.Contains(stdout.String(), "::add-mask::") {
		t.Errorf("the password is in an output or the log:\n%s\n%s", outs, stdout.String())
	}
	file := ""
	lines := strings.Split(string(outs), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "db-file<<") && i+1 < len(lines) {
			file = lines[i+1]
		}
	}
	if file == "" || !strings.HasPrefix(file, tmp) {
		t.Fatalf("no db-file output under RUNNER_TEMP:\n%s", outs)
	}
	if !strings.Contains(string(outs), "postgres://gpugate_reader:***@db.example:5432/perf") {
		t.Errorf("output db is not the masked URL:\n%s", outs)
	}
	fi, err := os.Lstat(file)
	if err != nil || fi.Mode() != 0o600 {
		t.Fatalf("store file %s: %v %v, want a regular file of mode 0600", file, fi.Mode(), err)
	}
	if di, err := os.Lstat(filepath.Dir(file)); err != nil || di.Mode() != os.ModeDir|0o700 {
		t.Errorf("its folder: %v %v, want mode 0700", di.Mode(), err)
	}
	if b, _ := os.ReadFile(file); strings.TrimSpace(string(b)) != url {
		t.Errorf("store file holds %q, want the URL", b)
	}
	// A later step: the store comes from -db-file, not from the
	// environment (prepare again, which names the store it resolved).
	db := filepath.Join(dir, "store.db")
	os.WriteFile(file, []byte(db+"\n"), 0o600)
	os.WriteFile(out, nil, 0o644)
	t.Setenv("GPUGATE_BASELINE_DB", "")
	stdout.Reset()
	stderr.Reset()
	if code := gpugate(context.Background(), []string{"action", "-db-file", file}, &stdout, &stderr); code != 0 {
		t.Fatalf("prepare with -db-file: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if outs, _ := os.ReadFile(out); !strings.Contains(string(outs), "\n"+db+"\n") {
		t.Errorf("with -db-file naming %s the store is not that one:\n%s", db, outs)
	}
	// A URL with a password on the command line is refused.
	if code := gpugate(context.Background(), []string{"action", "-db", url}, &stdout, &stderr); code != 2 {
		t.Errorf("-db with a password: exit %d, want 2", code)
	}
}
