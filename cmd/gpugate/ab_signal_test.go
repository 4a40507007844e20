package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpugate/gpugate/internal/escape"
)

// TestABSignalCleanup: SIGTERM during ab's setup left a registered
// worktree and the setup's children running; `gpugate ab … | head -2`
// (SIGPIPE, which Go's runtime turned into an exit at the write) left a
// worktree. Each of SIGTERM, SIGINT, SIGHUP and a reader that goes away
// now stops ab with exit 2, the setup's processes killed and no worktree
// left.
func TestABSignalCleanup(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs gpugate")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	bin := filepath.Join(t.TempDir(), "gpugate")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGPIPE} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			mark := "GPUGATE_AB_SIGNAL=" + escape.Token(8)
			k, v, _ := strings.Cut(mark, "=")
			os.WriteFile(filepath.Join(dir, "perf.yaml"), []byte(`version: 1
workloads:
  - name: w
    command: ["/bin/true"]
    profiler: torch
    timeout: 5m
    env: {`+k+`: "`+v+`"}
ab:
  setup:
    base: 'setsid sleep 300 & sleep 300 & while :; do echo setting up; sleep 0.1; done'
`), 0o644)
			for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "perf.yaml"},
				{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "x"}} {
				cmd := exec.Command("git", args...)
				cmd.Dir = dir
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v %s", args, err, out)
				}
			}
			cmd := exec.Command(bin, "ab", "-config", "perf.yaml", "-base", "HEAD", "-out", filepath.Join(dir, "out"))
			cmd.Dir = dir
			// As `gpugate ab … 2>&1 | head -2`: the test reads the
			// lines, then (for SIGPIPE) closes its end.
			pr, pw, _ := os.Pipe()
			cmd.Stdout, cmd.Stderr = pw, pw
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pw.Close()
			defer cmd.Process.Kill()
			sc := bufio.NewScanner(pr)
			var seen []string
			for sc.Scan() {
				seen = append(seen, sc.Text())
				if strings.Contains(sc.Text(), "setting up") {
					break
				}
			}
			deadline := time.Now().Add(10 * time.Second)
			// One count, read once: the loop's "sleep 0.1" comes and
			// goes, and a second reading after the loop saw 3 (busy.sh
			// run 3).
			n := len(markedProcesses(mark))
			for n < 4 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
				n = len(markedProcesses(mark))
			}
			if n < 4 {
				t.Fatalf("%d processes of the setup before the signal, want 4 or more (%q)", n, seen)
			}
			if sig == syscall.SIGPIPE {
				pr.Close()
			} else {
				cmd.Process.Signal(sig)
				go func() {
					for sc.Scan() {
					}
				}()
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("gpugate ab still runs 30 s after %s: %q", sig, seen)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Errorf("after %s: %v, want exit status 2 (%q)", sig, err, seen)
			}
			if left := markedProcesses(mark); len(left) > 0 {
				t.Errorf("after %s, the setup's processes still run:\n%s", sig, strings.Join(left, "\n"))
				for _, l := range left {
					if pid, err := strconv.Atoi(strings.Fields(l)[0]); err == nil {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
			out, _ := exec.Command("git", "-C", dir, "worktree", "list").Output()
			if n := strings.Count(strings.TrimSpace(string(out)), "\n"); n != 0 {
				t.Errorf("after %s, worktrees left:\n%s", sig, out)
			}
		})
	}
}
