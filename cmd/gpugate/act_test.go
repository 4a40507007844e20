package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/action"
	"github.com/gpugate/gpugate/internal/ghfake"
)

// TestActionUnderAct runs the real action.yml with nektos/act in host mode
// (no Docker) on the demo workload, against a local stand-in of GitHub's
// API, twice: the first run creates the PR comment, the second edits it.
func TestActionUnderAct(t *testing.T) {
	act, err := exec.LookPath("act")
	if err != nil {
		t.Skip("needs act: go install github.com/nektos/act@v0.2.89 (.ci/run installs it)")
	}
	if exec.Command("/usr/bin/python3", "-c", "import torch").Run() != nil {
		t.Skip("needs python3-torch: scripts/setup-profilers.sh")
	}
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	repo := filepath.Join(t.TempDir(), "repo")
	// A checkout of this working tree: act uses it as the workspace and as
	// the action (uses: ./).
	files, err := exec.Command("git", "-C", root, "ls-files", "-co", "--exclude-standard").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(files)) {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the working tree
		}
		dst := filepath.Join(repo, f)
		os.MkdirAll(filepath.Dir(dst), 0o755)
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(repo, ".github", "workflows"), 0o755)
	os.WriteFile(filepath.Join(repo, ".github", "workflows", "perf.yml"), []byte(`name: perf
on: pull_request
jobs:
  gate:
    runs-on: [self-hosted, gpu]
    steps:
      - uses: actions/checkout@v4
      - id: gpugate
        uses: ./
        with:
          config: examples/demo/perf.yaml
          baseline-db: ${{ env.GPUGATE_TEST_DB }}
          fail-on-regression: "false"
      - run: echo "outputs verdict=${{ steps.gpugate.outputs.verdict }} regressions=[${{ steps.gpugate.outputs.regressions }}] report=${{ steps.gpugate.outputs.report-path }}"
`), 0o644)
	event := filepath.Join(repo, "event.json")
	os.WriteFile(event, []byte(`{"action":"opened","number":7,"pull_request":{"number":7,"head":{"sha":"1111111111111111111111111111111111111111","ref":"faster-attn","repo":{"fork":false}},"base":{"ref":"main"}},"repository":{"full_name":"acme/train","name":"train","owner":{"login":"acme"}}}`), 0o644)
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.email=t@example.com", "-c", "user.name=t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "faster-attn")
	git("add", "-A")
	git("commit", "-q", "-m", "test")

	// The baseline, recorded on main beforehand as the nightly job does:
	// several runs, whose spread the comparison allows for.
	db := filepath.Join(t.TempDir(), "baseline.db")
	t.Setenv("GPUGATE_BRANCH", "main")
	var out, errOut bytes.Buffer
	if code := gpugate(context.Background(), []string{"baseline", "refresh", "-config", filepath.Join(repo, "examples/demo/perf.yaml"), "-db", db,
		"-runs", "3", "-out", filepath.Join(t.TempDir(), "rec")}, &out, &errOut); code != 0 {
		t.Fatalf("recording the baseline: exit %d\n%s", code, errOut.String())
	}
	os.Unsetenv("GPUGATE_BRANCH")

	gh := ghfake.New()
	defer gh.Close()
	actDir := t.TempDir()
	runAct := func() string {
		cmd := exec.Command(act, "pull_request", "-e", event,
			"-P", "self-hosted=-self-hosted", "-P", "gpu=-self-hosted",
			"-s", "GITHUB_TOKEN=fake-token-for-gpugate-act-test",
			"--env", "GITHUB_API_URL="+gh.URL, "--env", "GITHUB_REPOSITORY=acme/train",
			"--env", "GPUGATE_TEST_DB="+db, "--env", "GPUGATE_BRANCH=faster-attn",
			"--no-cache-server", "--action-cache-path", actDir)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "PATH="+os.Getenv("PATH")+":/usr/local/go/bin")
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("act: %v\n%s", err, b)
		}
		return string(b)
	}
	log1 := runAct()
	if !strings.Contains(log1, "outputs verdict=pass") {
		t.Errorf("first run: no pass verdict in the outputs:\n%s", tail(log1))
	}
	comments, _ := gh.Snapshot(7)
	if len(comments) != 1 || !strings.HasPrefix(comments[0].Body, action.Marker("demo")) || !strings.Contains(comments[0].Body, "gpugate") {
		t.Fatalf("after the first run: %d comments %+v", len(comments), comments)
	}
	first := comments[0].ID
	runAct()
	comments, reqs := gh.Snapshot(7)
	if len(comments) != 1 || comments[0].ID != first {
		t.Fatalf("after the second run: %d comments (ids %v), want comment %d edited; requests %q", len(comments), comments, first, reqs)
	}
	patched := false
	for _, r := range reqs {
		patched = patched || strings.HasPrefix(r, "PATCH /repos/acme/train/issues/comments/")
	}
	if !patched {
		t.Errorf("no PATCH of the comment: %q", reqs)
	}
}

func tail(s string) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}
