package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// TestActionUnderAct runs the real action.yml with nektos/act in host mode
// (no Docker) on the demo workload, with no Go on the job's PATH: the
// action installs gpugate from a release built by scripts/release.sh and
// served on 127.0.0.1 as GITHUB_SERVER_URL, checked against the sha256
// pinned in action/checksums.txt. Two workflow runs on fresh runners (a
// new HOME each): the nightly refresh records the baseline into the store
// outside the workspace and saves it to the cache; the pull request run
// restores it, finds the baseline, uploads the evidence and posts the
// comment to a stand-in of GitHub's API. A third run edits the comment.
func TestActionUnderAct(t *testing.T) {
	act, err := exec.LookPath("act")
	if err != nil {
		t.Skip("needs act: go install github.com/nektos/act@v0.2.89 (.ci/run installs it)")
	}
	if exec.Command("/usr/bin/python3", "-c", "import torch").Run() != nil {
		t.Skip("needs python3-torch: scripts/setup-profilers.sh")
	}
	root := repoRoot(t)
	const tag = "v0.0.0-act.1"
	dist := buildRelease(t, tag, "linux/amd64")
	pins, _ := os.ReadFile(filepath.Join(dist, "checksums.txt"))

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
	// The release, pinned as scripts/release.sh PIN=1 would.
	var pinned strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(string(pins)), "\n") {
		f := strings.Fields(l)
		pinned.WriteString(f[0] + "  " + tag + "  " + f[1] + "\n")
	}
	write("action/checksums.txt", pinned.String())
	// Two baseline runs are enough here and keep the test short.
	demo, _ := os.ReadFile(filepath.Join(root, "examples/demo/perf.yaml"))
	write("examples/demo/perf-act.yaml", strings.Replace(string(demo), "runs: 5", "runs: 2", 1))
	steps := `      - uses: actions/checkout@v4
      - id: gpugate
        uses: ./
        with:
          version: ` + tag + `
          config: examples/demo/perf-act.yaml
          MODE
          fail-on-regression: "false"
          retention-days: "3"
      - run: echo "outputs verdict=${{ steps.gpugate.outputs.verdict }} comment=${{ steps.gpugate.outputs.comment-url }} artifact=${{ steps.gpugate.outputs.artifact-url }}"
      - run: if command -v go; then echo "go is on the job's PATH"; exit 1; fi; gpugate version
`
	write(".github/workflows/refresh.yml", "name: refresh\non: workflow_dispatch\njobs:\n  refresh:\n    runs-on: [self-hosted, gpu]\n    steps:\n"+strings.Replace(steps, "MODE", "mode: refresh", 1))
	write(".github/workflows/perf.yml", "name: perf\non: pull_request\njobs:\n  gate:\n    runs-on: [self-hosted, gpu]\n    steps:\n"+strings.Replace(steps, "MODE", "mode: pr", 1))
	write("event.json", `{"action":"opened","number":7,"pull_request":{"number":7,"labels":[],"head":{"sha":"1111111111111111111111111111111111111111","ref":"faster-attn","repo":{"fork":false}},"base":{"ref":"main"}},"repository":{"full_name":"acme/train","name":"train","owner":{"login":"acme"}}}`)
	write("dispatch.json", `{}`)
	stubs := t.TempDir()
	for rel, data := range map[string]string{"cache/restore/action.yml": cacheRestoreStub, "cache/save/action.yml": cacheSaveStub, "upload/action.yml": uploadStub} {
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

	// The release server: GITHUB_SERVER_URL for the install step.
	var mu sync.Mutex
	var downloads []string
	rel := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		downloads = append(downloads, r.URL.Path)
		mu.Unlock()
		prefix := "/gpugate/gpugate/releases/download/" + tag + "/"
		if !strings.HasPrefix(r.URL.Path, prefix) || strings.Contains(r.URL.Path, "..") {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, filepath.Join(dist, strings.TrimPrefix(r.URL.Path, prefix)))
	}))
	defer rel.Close()
	gh := ghfake.New()
	defer gh.Close()
	gh.Repo = "acme/train"
	cache, artifacts, actDir := t.TempDir(), t.TempDir(), t.TempDir()
	// No Go on the job's PATH: act hands its own environment to host jobs.
	var path []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(d, "go")); err != nil {
			path = append(path, d)
		}
	}
	runAct := func(event, workflow, eventFile string, extra ...string) string {
		t.Helper()
		args := []string{event, "-W", workflow, "-e", eventFile,
			"-P", "self-hosted=-self-hosted", "-P", "gpu=-self-hosted",
			"-s", "GITHUB_TOKEN=fake-token-for-gpugate-act-test",
			"--env", "GITHUB_API_URL=" + gh.URL, "--env", "GITHUB_SERVER_URL=" + rel.URL, "--env", "GITHUB_REPOSITORY=acme/train",
			"--env", "HOME=" + t.TempDir(), // a fresh runner: nothing survives but the cache
			"--env", "GPUGATE_TEST_CACHE=" + cache, "--env", "GPUGATE_TEST_ARTIFACTS=" + artifacts,
			"--local-repository", "actions/cache@v4=" + filepath.Join(stubs, "cache"),
			"--local-repository", "actions/upload-artifact@v4=" + filepath.Join(stubs, "upload"),
			"--no-cache-server", "--action-cache-path", actDir}
		cmd := exec.Command(act, append(args, extra...)...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "PATH="+strings.Join(path, string(filepath.ListSeparator)))
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("act %s: %v\n%s", event, err, tail(string(b)))
		}
		return string(b)
	}

	log0 := runAct("workflow_dispatch", ".github/workflows/refresh.yml", "dispatch.json", "--env", "GPUGATE_BRANCH=main")
	for _, want := range []string{"installed " + tag, "stand-in cache: saved gpugate-baseline-v1-demo-", "gpugate " + tag} {
		if !strings.Contains(log0, want) {
			t.Errorf("refresh run: log lacks %q\n%s", want, tail(log0))
		}
	}
	// (A Go on the job's PATH fails the last step, and act with it.)

	log1 := runAct("pull_request", ".github/workflows/perf.yml", "event.json", "--env", "GPUGATE_BRANCH=faster-attn")
	if !strings.Contains(log1, "stand-in cache: restored gpugate-baseline-v1-demo-") {
		t.Errorf("pull request run did not restore the store:\n%s", tail(log1))
	}
	if strings.Contains(log1, "verdict=no-baseline") || !strings.Contains(log1, "outputs verdict=") || !strings.Contains(log1, "artifact=https://github.example/") ||
		!strings.Contains(log1, "comment=https://github.example/") {
		t.Errorf("pull request run outputs:\n%s", tail(log1))
	}
	comments, _ := gh.Snapshot(7)
	if len(comments) != 1 || !strings.HasPrefix(comments[0].Body, action.Marker("demo")) || strings.Contains(comments[0].Body, "No baseline") ||
		!strings.Contains(comments[0].Body, "https://github.example/acme/train/actions/runs/1/artifacts/gpugate-demo") {
		t.Fatalf("after the pull request run: %d comments %+v", len(comments), comments)
	}
	// The evidence was uploaded with its retention.
	for _, p := range []string{"gpugate-demo/gpugate-result.json", "gpugate-demo/report.md", "gpugate-demo/report.json", "gpugate-demo/logs/job.log"} {
		if _, err := os.Stat(filepath.Join(artifacts, p)); err != nil {
			t.Errorf("uploaded artifact lacks %s", p)
		}
	}
	if traces, _ := filepath.Glob(filepath.Join(artifacts, "gpugate-demo", "traces", "trace-*.json.gz")); len(traces) == 0 {
		t.Errorf("no compressed trace in the artifact")
	}
	if rd, _ := os.ReadFile(filepath.Join(artifacts, "gpugate-demo.retention-days")); strings.TrimSpace(string(rd)) != "3" {
		t.Errorf("retention-days %q, want 3", rd)
	}

	first := comments[0].ID
	runAct("pull_request", ".github/workflows/perf.yml", "event.json", "--env", "GPUGATE_BRANCH=faster-attn")
	comments, reqs := gh.Snapshot(7)
	if len(comments) != 1 || comments[0].ID != first {
		t.Fatalf("after the second run: %d comments, want comment %d edited; requests %q", len(comments), first, reqs)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(downloads) != 3 || !strings.HasSuffix(downloads[0], "/gpugate_linux_amd64.tar.gz") {
		t.Errorf("release downloads %q, want one per run", downloads)
	}
}

func tail(s string) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-60):], "\n")
}
