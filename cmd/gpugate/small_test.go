package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
)

// Issue 23 item 7: a revision that names no single commit ('^HEAD'
// resolved to '^SHA' and then failed in git worktree add; a range
// resolved to two lines) is refused before anything is set up, with exit
// 2, and no worktree is left registered.
func TestABRefusesRevisionsThatAreNotCommits(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(dir, "perf.yaml"), []byte("version: 1\nworkloads:\n  - name: w\n    command: [\"true\"]\n    profiler: torch\n"), 0o644)
	git("add", "perf.yaml")
	git("commit", "-q", "-m", "one")
	git("commit", "-q", "--allow-empty", "-m", "two")
	for _, rev := range []string{"^HEAD", "HEAD~1..HEAD", "^HEAD~1", "HEAD^@"} {
		var out, errb bytes.Buffer
		code := gpugate(context.Background(), []string{"ab", "-config", filepath.Join(dir, "perf.yaml"), "-base", rev, "-out", filepath.Join(dir, "out")}, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), "ab -base") || strings.Contains(errb.String(), "worktree") {
			t.Errorf("ab -base %q: exit %d, want 2 and the revision refused before git worktree add\n%s", rev, code, errb.String())
		}
		if strings.Count(git("worktree", "list"), "\n") != 1 {
			t.Errorf("ab -base %q left a worktree:\n%s", rev, git("worktree", "list"))
		}
	}
}

// Issue 23 item 7: names from flags, stores and config reach the terminal
// escaped: an ESC in a workload, branch or commit never reaches stdout or
// stderr raw.
func TestMessagesAreTerminalSafe(t *testing.T) {
	trace := fixtures.Path(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	dir := t.TempDir()
	t.Chdir(dir) // no perf.yaml here: record warns about the workload
	db := filepath.Join(dir, "b\x1b[2J.db")
	run := func(args ...string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := gpugate(context.Background(), args, &out, &errb)
		if s := out.String() + errb.String(); strings.ContainsAny(s, "\x1b\x07\x9b") {
			t.Errorf("gpugate %s (exit %d) printed a raw control character:\n%q", strings.Join(args, " "), code, s)
		}
	}
	run("baseline", "record", "-workload", "a\x1b[31m", "-branch", "b\x1b]0;x\x07", "-commit", "c\x1b[1m", "-db", db, trace)
	run("baseline", "record", "-workload", "a\x1b[31m", "-db", db, trace)
	run("baseline", "list", "-db", db)
	run("baseline", "show", "-workload", "a\x1b[31m", "-branch", "b\x1b]0;x\x07", "-db", db)
	run("baseline", "show", "-workload", "a\x1b[31m", "-db", db)
	run("baseline", "prune", "-keep", "5", "-db", db)
	run("baseline", "list", "-runs", "x\x1b[31m", "-db", db)
	os.WriteFile(filepath.Join(dir, "perf.yaml"), []byte("version: 1\nworkloads:\n  - name: w\n    command: [\"echo\", \"\\e[31m\"]\nbaseline:\n  branch: \"m\\e[31m\"\n  db: \"x\\e[1m.db\"\n"), 0o644)
	run("config", "check", "perf.yaml")
}
