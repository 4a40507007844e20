package pipeline

import (
	"context"
	"os/exec"
	"testing"
)

func TestGitInfo(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ctx := context.Background()
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "feat"}, {"-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	sha, _ := gitOut(ctx, repo, "rev-parse", "HEAD")
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	check := func(name string, getenv func(string) string, wantBranch, wantCommit string) {
		t.Helper()
		b, c := GitInfo(ctx, repo, getenv)
		if b != wantBranch || c != wantCommit {
			t.Errorf("%s: branch %q commit %q, want %q %q", name, b, c, wantBranch, wantCommit)
		}
	}
	other := "0123456789abcdef0123456789abcdef01234567"
	check("git branch", env(), "feat", sha)
	check("GPUGATE_BRANCH first", env("GPUGATE_BRANCH", "x", "GITHUB_HEAD_REF", "y", "BUILDKITE_BRANCH", "z"), "x", sha)
	check("GitHub PR", env("GITHUB_HEAD_REF", "pr-branch", "GITHUB_REF_NAME", "12/merge", "GITHUB_SHA", other), "pr-branch", other)
	check("GitLab MR", env("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "mr", "CI_COMMIT_REF_NAME", "main", "CI_COMMIT_SHA", other), "mr", other)
	check("GitLab push", env("CI_COMMIT_REF_NAME", "main"), "main", sha)
	check("Buildkite", env("BUILDKITE_BRANCH", "bk", "BUILDKITE_COMMIT", "HEAD"), "bk", sha)

	// CI checks out a detached HEAD: never the branch "HEAD".
	if out, err := exec.Command("git", "-C", repo, "checkout", "-q", "--detach").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	check("detached", env(), Detached, sha)
	check("detached, BUILDKITE_BRANCH=HEAD", env("BUILDKITE_BRANCH", "HEAD"), Detached, sha)
	check("detached, GitLab", env("CI_COMMIT_REF_NAME", "main"), "main", sha)
	if b, c := GitInfo(ctx, t.TempDir(), env()); b != "" || c != "" {
		t.Errorf("not a repository: %q %q", b, c)
	}
}
