package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/action"
	"github.com/gpugate/gpugate/internal/ghfake"
)

// Local stand-ins for actions/cache and actions/upload-artifact, which act
// would fetch from github.com (this test runs offline). They keep the
// semantics the action relies on: a cache entry is immutable, and restoring
// takes the exact key, else the newest entry whose key starts with the
// restore key; an upload keeps the folder under the artifact's name with
// its retention and answers an artifact-url.
const cacheRestoreStub = `name: cache restore stand-in
inputs:
  path: {required: true}
  key: {required: true}
  restore-keys: {default: ""}
outputs:
  cache-hit: {value: "${{ steps.r.outputs.hit }}"}
runs:
  using: composite
  steps:
    - id: r
      shell: bash
      env: {P: "${{ inputs.path }}", K: "${{ inputs.key }}", R: "${{ inputs.restore-keys }}"}
      run: |
        hit=""
        if [ -d "$GPUGATE_TEST_CACHE/$K" ]; then hit=$K; else
          for d in $(ls -t "$GPUGATE_TEST_CACHE" 2>/dev/null); do case "$d" in "$R"*) hit=$d; break ;; esac; done
        fi
        if [ -n "$hit" ]; then mkdir -p "$P" && cp -a "$GPUGATE_TEST_CACHE/$hit/." "$P/"; echo "stand-in cache: restored $hit"; else echo "stand-in cache: miss for $R"; fi
        echo "hit=$hit" >> "$GITHUB_OUTPUT"
`

const cacheSaveStub = `name: cache save stand-in
inputs:
  path: {required: true}
  key: {required: true}
runs:
  using: composite
  steps:
    - shell: bash
      env: {P: "${{ inputs.path }}", K: "${{ inputs.key }}"}
      run: |
        if [ -e "$GPUGATE_TEST_CACHE/$K" ]; then echo "stand-in cache: $K exists, not saved"; exit 0; fi
        mkdir -p "$GPUGATE_TEST_CACHE/$K" && cp -a "$P/." "$GPUGATE_TEST_CACHE/$K/" && echo "stand-in cache: saved $K"
`

const uploadStub = `name: upload-artifact stand-in
inputs:
  name: {required: true}
  path: {required: true}
  retention-days: {default: ""}
  if-no-files-found: {default: warn}
outputs:
  artifact-url: {value: "${{ steps.u.outputs.url }}"}
runs:
  using: composite
  steps:
    - id: u
      shell: bash
      env: {N: "${{ inputs.name }}", P: "${{ inputs.path }}", RD: "${{ inputs.retention-days }}"}
      run: |
        mkdir -p "$GPUGATE_TEST_ARTIFACTS/$N" && cp -a "$P/." "$GPUGATE_TEST_ARTIFACTS/$N/"
        echo "$RD" > "$GPUGATE_TEST_ARTIFACTS/$N.retention-days"
        echo "url=https://github.example/acme/train/actions/runs/1/artifacts/$N" >> "$GITHUB_OUTPUT"
`

// setupGoStub stands in for actions/setup-go (act would fetch it from
// github.com): the job's go is new enough, so the action must not run it.
const setupGoStub = `name: setup-go stand-in
inputs:
  go-version: {default: ""}
  cache: {default: ""}
runs:
  using: composite
  steps:
    - shell: bash
      run: echo "setup-go stand-in ran, but the go on PATH is new enough" && exit 1
`

// TestActionUnderAct runs the real action.yml with nektos/act in host mode
// (no Docker) on the demo workload, as a new user's workflow does: uses: ./
// with the default install inputs (no version, no build-from-source), so
// the action builds gpugate from its own source with the go on PATH and
// says why. Two workflow runs on fresh runners (a new HOME each): the
// nightly refresh records the baseline into the store outside the
// workspace and saves it to the cache; the pull request run, with the
// demo's slow-loader regression, restores it, fails the job on the
// regression, uploads the evidence and posts the comment to a stand-in of
// GitHub's API, whose step_time Δ must be report.md's and report.json's. A
// third run, with the loader fixed, edits the comment.
func TestActionUnderAct(t *testing.T) {
	act, err := exec.LookPath("act")
	if err != nil {
		t.Skip("needs act: go install github.com/nektos/act@v0.2.89 (.ci/run installs it)")
	}
	if exec.Command("/usr/bin/python3", "-c", "import torch").Run() != nil {
		t.Skip("needs python3-torch: scripts/setup-profilers.sh")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs go on PATH: the action builds gpugate from source")
	}
	goEnv := func(k string) string {
		out, _ := exec.Command(goBin, "env", k).Output()
		return strings.TrimSpace(string(out))
	}
	root := repoRoot(t)

	repo := filepath.Join(t.TempDir(), "repo")
	// A checkout of this working tree: act uses it as the workspace and as
	// the action (uses: ./).
	files, err := exec.Command("git", "-C", root, "ls-files", "-co", "--exclude-standard").Output()
	if err != nil {
		t.Fatal(err)
	}
	write := func(rel, data string) {
		p := filepath.Join(repo, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range strings.Fields(string(files)) {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the working tree
		}
		write(f, string(data))
	}
	// Three baseline runs: the fewest whose spread lets one PR run be
	// judged (a prediction interval on 2 degrees of freedom; with 2 runs, 1
	// degree of freedom left even +440% inconclusive, issue 19), and
	// fewer than the demo's 5 to keep the test short.
	demo, _ := os.ReadFile(filepath.Join(root, "examples/demo/perf.yaml"))
	// The refresh records repeat runs: 3, so that the store holds them.
	actCfg := strings.Replace(strings.Replace(string(demo), "runs: 5", "runs: 3", 1), "repeat: 1", "repeat: 3", 1)
	// The Action's path is this test's subject, not the host's load
	// (run_demo_host tests that): every run counts for the time metrics,
	// disturbed or not (docs/verdicts.md §5c).
	actCfg += "host:\n  other_cpu: 100%\n  cpu_pressure: 100%\n  steal: 100%\n  cpu_throttled: 100%\n"
	write("examples/demo/perf-act.yaml", actCfg)
	steps := `      - uses: actions/checkout@v4
      - id: gpugate
        uses: ./
        with:
          config: examples/demo/perf-act.yaml
          MODE
          retention-days: "3"
      - if: always()
        run: echo "outputs verdict=${{ steps.gpugate.outputs.verdict }} comment=${{ steps.gpugate.outputs.comment-url }} artifact=${{ steps.gpugate.outputs.artifact-url }}"
      - run: gpugate version
`
	write(".github/workflows/refresh.yml", "name: refresh\non: workflow_dispatch\njobs:\n  refresh:\n    runs-on: [self-hosted, gpu]\n    steps:\n"+strings.Replace(steps, "MODE", "mode: refresh", 1))
	write(".github/workflows/perf.yml", "name: perf\non: pull_request\njobs:\n  gate:\n    runs-on: [self-hosted, gpu]\n    steps:\n"+strings.Replace(steps, "MODE", "mode: pr", 1))
	write("event.json", `{"action":"opened","number":7,"pull_request":{"number":7,"labels":[],"head":{"sha":"1111111111111111111111111111111111111111","ref":"faster-attn","repo":{"fork":false}},"base":{"ref":"main"}},"repository":{"full_name":"acme/train","name":"train","owner":{"login":"acme"}}}`)
	write("dispatch.json", `{}`)
	stubs := t.TempDir()
	for rel, data := range map[string]string{"cache/restore/action.yml": cacheRestoreStub, "cache/save/action.yml": cacheSaveStub, "upload/action.yml": uploadStub,
		"setup-go/action.yml": setupGoStub} {
		os.MkdirAll(filepath.Dir(filepath.Join(stubs, rel)), 0o755)
		os.WriteFile(filepath.Join(stubs, rel), []byte(data), 0o644)
	}
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.email=t@example.com", "-c", "user.name=t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "test")

	gh := ghfake.New()
	defer gh.Close()
	gh.Repo = "acme/train"
	cache, artifacts, actDir := t.TempDir(), t.TempDir(), t.TempDir()
	// The source build uses this machine's module and build caches (a
	// fresh HOME has none, and the test runs offline).
	setupGo := "actions/setup-go@" + setupGoSHA(t, root)
	// runAct runs a workflow; want is "ok", "fail" or "any" for act's exit.
	runAct := func(want, event, workflow, eventFile string, extra ...string) string {
		t.Helper()
		args := []string{event, "-W", workflow, "-e", eventFile,
			"-P", "self-hosted=-self-hosted", "-P", "gpu=-self-hosted",
			"-s", "GITHUB_TOKEN=fake-token-for-gpugate-act-test",
			"--env", "GITHUB_API_URL=" + gh.URL, "--env", "GITHUB_SERVER_URL=https://github.example", "--env", "GITHUB_REPOSITORY=acme/train",
			"--env", "HOME=" + t.TempDir(), // a fresh runner: nothing survives but the cache
			"--env", "GOMODCACHE=" + goEnv("GOMODCACHE"), "--env", "GOCACHE=" + goEnv("GOCACHE"), "--env", "GOPROXY=off",
			"--env", "GPUGATE_TEST_CACHE=" + cache, "--env", "GPUGATE_TEST_ARTIFACTS=" + artifacts,
			"--local-repository", "actions/cache@v4=" + filepath.Join(stubs, "cache"),
			"--local-repository", "actions/upload-artifact@v4=" + filepath.Join(stubs, "upload"),
			"--local-repository", setupGo + "=" + filepath.Join(stubs, "setup-go"),
			"--no-cache-server", "--action-cache-path", actDir}
		cmd := exec.Command(act, append(args, extra...)...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(goBin)+string(filepath.ListSeparator)+os.Getenv("PATH"))
		b, err := cmd.CombinedOutput()
		if want == "ok" && err != nil || want == "fail" && err == nil {
			t.Fatalf("act %s: %v, want %s\n%s", event, err, want, tail(string(b)))
		}
		return string(b)
	}

	log0 := runAct("ok", "workflow_dispatch", ".github/workflows/refresh.yml", "dispatch.json", "--env", "GPUGATE_BRANCH=main")
	for _, want := range []string{"gpugate: install: build from the action's source: the action is used from a path",
		"gpugate: built from the action's source with go version go", "because the action is used from a path",
		"stand-in cache: saved gpugate-baseline-v1-demo-"} {
		if !strings.Contains(log0, want) {
			t.Errorf("refresh run: log lacks %q\n%s", want, tail(log0))
		}
	}
	if strings.Contains(log0, "setup-go stand-in ran") {
		t.Errorf("refresh run: setup-go ran although the go on PATH is new enough")
	}

	// The pull request brings the demo's slow data loader: a regression,
	// and with the default fail-on-regression the job fails.
	log1 := runAct("fail", "pull_request", ".github/workflows/perf.yml", "event.json", "--env", "GPUGATE_BRANCH=faster-attn", "--env", "GPUGATE_DEMO=slow-loader")
	if !strings.Contains(log1, "stand-in cache: restored gpugate-baseline-v1-demo-") || !strings.Contains(log1, "built from the action's source") {
		t.Errorf("pull request run did not build or restore the store:\n%s", tail(log1))
	}
	if !strings.Contains(log1, "outputs verdict=regression") || !strings.Contains(log1, "artifact=https://github.example/") ||
		!strings.Contains(log1, "comment=https://github.example/") {
		t.Errorf("pull request run outputs:\n%s", tail(log1))
	}
	comments, _ := gh.Snapshot(7)
	if len(comments) != 1 || !strings.HasPrefix(comments[0].Body, action.Marker("demo")) || !strings.Contains(comments[0].Body, "❌ **regression**") ||
		!strings.Contains(comments[0].Body, "https://github.example/acme/train/actions/runs/1/artifacts/gpugate-demo") {
		t.Fatalf("after the pull request run: %d comments %+v", len(comments), comments)
	}
	// The evidence was uploaded with its retention.
	for _, p := range []string{"gpugate-demo/gpugate-result.json", "gpugate-demo/report.md", "gpugate-demo/report.json"} {
		if _, err := os.Stat(filepath.Join(artifacts, p)); err != nil {
			t.Errorf("uploaded artifact lacks %s", p)
		}
	}
	// repeat: 3, so one folder per run: logs/runN/job.log, traces/runN/.
	if logs, _ := filepath.Glob(filepath.Join(artifacts, "gpugate-demo", "logs", "run*", "job.log")); len(logs) != 3 {
		t.Errorf("uploaded artifact holds %d job logs, want 3 (logs/runN/job.log)", len(logs))
	}
	if traces, _ := filepath.Glob(filepath.Join(artifacts, "gpugate-demo", "traces", "run*", "trace-*.json.gz")); len(traces) == 0 {
		t.Errorf("no compressed trace in the artifact")
	}
	if rd, _ := os.ReadFile(filepath.Join(artifacts, "gpugate-demo.retention-days")); strings.TrimSpace(string(rd)) != "3" {
		t.Errorf("retention-days %q, want 3", rd)
	}
	// The comment (rendered by the post step from gpugate-result.json) says
	// the step_time change that report.md (rendered by the run step) and
	// report.json say.
	md, _ := os.ReadFile(filepath.Join(artifacts, "gpugate-demo", "report.md"))
	inComment, inReport := stepTimeDelta(t, comments[0].Body), stepTimeDelta(t, string(md))
	var rep struct {
		Metrics []struct {
			Name     string   `json:"name"`
			DeltaPct *float64 `json:"delta_pct"`
			Verdict  string   `json:"verdict"`
			Baseline struct {
				RunMeans []float64 `json:"run_means"`
			} `json:"baseline"`
			Candidate struct {
				RunMeans []float64 `json:"run_means"`
			} `json:"candidate"`
		} `json:"metrics"`
	}
	js, _ := os.ReadFile(filepath.Join(artifacts, "gpugate-demo", "report.json"))
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	fromJSON := ""
	for _, m := range rep.Metrics {
		if m.Name == "step_time" && m.DeltaPct != nil && m.Verdict == "regression" {
			fromJSON = fmt.Sprintf("%+.1f%%", *m.DeltaPct)
		}
	}
	if inComment != inReport || fromJSON == "" || !strings.HasPrefix(inComment, fromJSON+" [") || strings.HasPrefix(inComment, "+0.0%") {
		t.Errorf("step_time Δ: comment %q, report.md %q, report.json %q (a step_time regression)", inComment, inReport, fromJSON)
	}
	t.Logf("step_time Δ in the comment and report.md: %s", inComment)
	// The comment's per-run chart draws report.json's run means: the
	// baseline's 3 recorded runs, then this PR's 3 (repeat: 3).
	for _, m := range rep.Metrics {
		if m.Name != "step_time" {
			continue
		}
		var bars []string
		for _, v := range append(m.Baseline.RunMeans, m.Candidate.RunMeans...) {
			bars = append(bars, fmt.Sprintf("%.3f", v))
		}
		if want := "bar [" + strings.Join(bars, ", ") + "]"; len(m.Baseline.RunMeans) != 3 || len(m.Candidate.RunMeans) != 3 || !strings.Contains(comments[0].Body, want) {
			t.Errorf("the comment's per-run chart: want %q (3 baseline runs, 3 PR runs) in\n%s", want, comments[0].Body)
		}
	}

	// A push that fixes the loader: the same comment is edited to the new
	// run's numbers (a pass, or on a loaded machine possibly another
	// verdict: act's exit is not asserted).
	first, before := comments[0].ID, comments[0].Body
	runAct("any", "pull_request", ".github/workflows/perf.yml", "event.json", "--env", "GPUGATE_BRANCH=faster-attn")
	comments, reqs := gh.Snapshot(7)
	if len(comments) != 1 || comments[0].ID != first || comments[0].Body == before {
		t.Fatalf("after the fixed run: %d comments, want comment %d edited; requests %q", len(comments), first, reqs)
	}
	t.Logf("step_time Δ after the fix: %s", stepTimeDelta(t, comments[0].Body))
}

// setupGoSHA is the commit action.yml pins actions/setup-go at.
func setupGoSHA(t *testing.T, root string) string {
	t.Helper()
	y, _ := os.ReadFile(filepath.Join(root, "action.yml"))
	m := regexp.MustCompile(`uses: actions/setup-go@([0-9a-f]{40})`).FindSubmatch(y)
	if m == nil {
		t.Fatal("action.yml does not pin actions/setup-go by commit")
	}
	return string(m[1])
}

func tail(s string) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-60):], "\n")
}
