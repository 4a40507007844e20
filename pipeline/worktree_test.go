package pipeline

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpugate/gpugate/config"
)

// abRepo makes a git repository with one commit holding perf.yaml, whose
// ab.setup.base is setup, and returns its loaded config.
func abRepo(t *testing.T, setup, timeout string) *config.Config {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	dir := t.TempDir()
	yaml := `version: 1
workloads:
  - name: w
    command: ["/bin/true"]
    profiler: torch
    timeout: ` + timeout + `
ab:
  setup:
    base: ` + setup + `
`
	if err := os.WriteFile(filepath.Join(dir, "perf.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "perf.yaml"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "x"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	c, err := config.Load(filepath.Join(dir, "perf.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// worktrees lists the repository's worktrees other than its own.
func worktrees(t *testing.T, c *config.Config) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", filepath.Dir(c.File), "worktree", "list", "--porcelain").Output()
	if err != nil {
		t.Fatal(err)
	}
	var wts []string
	for _, l := range strings.Split(string(out), "\n") {
		if wt, ok := strings.CutPrefix(l, "worktree "); ok && !strings.HasSuffix(filepath.Clean(filepath.Dir(c.File)), filepath.Clean(wt)) {
			wts = append(wts, wt)
		}
	}
	return wts
}

// TestABSetupDenied: ab's setup command got gpugate's whole environment:
// tokens, the store's password, GITHUB_OUTPUT. The setup prints its
// environment into ab's log (a file under the machine's /tmp would be out
// of its reach: it gets a private /tmp, issue 34).
func TestABSetupDenied(t *testing.T) {
	secrets := map[string]string{"GITHUB_TOKEN": "canary-gh", "GPUGATE_GITHUB_TOKEN": "canary-gg",
		"GPUGATE_DB": "postgres://w:canary-pw@h/db", "PGPASSWORD": "canary-pg", "GITHUB_OUTPUT": "/canary-output"}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	c := abRepo(t, `'env; echo dumped; exit 1'`, "1m")
	var log strings.Builder
	_, err := AB(context.Background(), ABOptions{Config: c, Workload: &c.Workloads[0], Base: "HEAD", Out: t.TempDir(), Log: &log})
	if err == nil || !strings.Contains(err.Error(), "ab base setup") {
		t.Fatalf("AB: %v, want the setup's failure", err)
	}
	env := log.String()
	if !strings.Contains(env, "[base setup] PATH=") {
		t.Fatalf("the setup's environment is not in the log:\n%s", env)
	}
	for k, v := range secrets {
		if strings.Contains(string(env), v) {
			t.Errorf("the setup command saw %s", k)
		}
	}
	if !strings.Contains(log.String(), "[base setup] dumped") {
		t.Errorf("the setup's output is not in the log:\n%s", log.String())
	}
	if wts := worktrees(t, c); len(wts) > 0 {
		t.Errorf("worktrees left: %q", wts)
	}
}

// TestABSetupTimeout: a setup command that timed out after 5 s returned
// after 98 s, because a child it left held the output pipe; the child
// outlived gpugate.
func TestABSetupTimeout(t *testing.T) {
	marker := "3017.2" + strings.TrimPrefix(filepath.Base(t.TempDir()), "00")
	c := abRepo(t, `'sleep `+marker+` & echo started; sleep `+marker+`'`, "2s")
	start := time.Now()
	var log strings.Builder
	_, err := AB(context.Background(), ABOptions{Config: c, Workload: &c.Workloads[0], Base: "HEAD", Out: t.TempDir(), Log: &log})
	if err == nil || !strings.Contains(err.Error(), "timed out after 2s") {
		t.Fatalf("AB: %v, want a timeout", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("AB returned %s after a 2 s setup timeout", d.Round(time.Second))
	}
	if left := processesWith(marker); len(left) > 0 {
		t.Errorf("the setup's processes outlived it: %q", left)
	}
	if wts := worktrees(t, c); len(wts) > 0 {
		t.Errorf("worktrees left: %q", wts)
	}
}

// TestABStaleWorktree: an ab killed with SIGKILL cannot clean up; the
// next ab in the repository removes the worktree it left.
func TestABStaleWorktree(t *testing.T) {
	c := abRepo(t, `'exit 1'`, "1m")
	root := filepath.Dir(c.File)
	dead := exec.Command("/bin/true")
	dead.Run()
	tmp, err := os.MkdirTemp("", abTempPrefix)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	os.WriteFile(filepath.Join(tmp, ownerFile), []byte(strconv.Itoa(dead.Process.Pid)+" 1"), 0o644)
	if out, err := exec.Command("git", "-C", root, "worktree", "add", "--detach", "--quiet", filepath.Join(tmp, "base"), "HEAD").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	var log strings.Builder
	AB(context.Background(), ABOptions{Config: c, Workload: &c.Workloads[0], Base: "HEAD", Out: t.TempDir(), Log: &log})
	if wts := worktrees(t, c); len(wts) > 0 {
		t.Errorf("worktrees left: %q\n%s", wts, log.String())
	}
	if _, err := os.Stat(tmp); err == nil {
		t.Errorf("%s is still there", tmp)
	}
}

// processesWith lists the live processes whose command line holds s.
func processesWith(s string) []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []string
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err == nil && strings.Contains(string(b), s) {
			if st, _ := os.ReadFile(filepath.Join(filepath.Dir(d), "stat")); strings.Contains(string(st), ") Z ") {
				continue
			}
			out = append(out, filepath.Base(filepath.Dir(d))+" "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}
