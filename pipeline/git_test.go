package pipeline

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGitRunsNothingTheJobPlanted: the job can write its repository's
// .git, and gpugate asks git about commits after the job (merge-base,
// --is-ancestor). A promisor remote with core.sshCommand made git's lazy
// fetch of a commit it lacked run the job's program outside every
// namespace (issue 34's review); and an fsmonitor or a hook would run
// the same way. None of them runs now.
func TestGitRunsNothingTheJobPlanted(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	payload := filepath.Join(t.TempDir(), "payload")
	os.WriteFile(payload, []byte("#!/bin/sh\necho ran >> "+marker+"\nexit 1\n"), 0o755)
	for _, args := range [][]string{
		{"init", "-q"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "one"},
		{"config", "core.repositoryformatversion", "1"},
		{"config", "extensions.partialClone", "origin"},
		{"config", "remote.origin.url", "ssh://example.invalid/repo"},
		{"config", "remote.origin.promisor", "true"},
		{"config", "protocol.ssh.allow", "always"},
		{"config", "core.sshCommand", payload},
		{"config", "core.fsmonitor", payload},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	missing := "0123456789abcdef0123456789abcdef01234567"
	// The premise: plain git runs the payload.
	plain := exec.Command("git", "merge-base", "--is-ancestor", missing, "HEAD")
	plain.Dir = repo
	plain.Run()
	if _, err := os.Stat(marker); err != nil {
		t.Skipf("this git does not lazy-fetch through core.sshCommand here (the test's premise): %v", err)
	}
	os.Remove(marker)
	if a := isAncestor(context.Background(), repo, missing, "HEAD"); a != -1 {
		t.Errorf("isAncestor of a commit git lacks = %d, want -1 (unknown)", a)
	}
	MergeBase(context.Background(), repo, "HEAD", "main")
	gitOut(context.Background(), repo, "status", "--porcelain")
	if b, err := os.ReadFile(marker); err == nil {
		t.Errorf("git ran the repository's planted program %d time(s)", len(b)/4)
	}
}
