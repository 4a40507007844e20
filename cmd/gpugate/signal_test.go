package main

import (
	"bytes"
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

// markedProcesses lists the live processes whose environment holds mark:
// the job and everything it started, wherever they were re-parented.
func markedProcesses(mark string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, []byte(mark)) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue
		}
		out = append(out, e.Name()+" "+string(stat))
	}
	return out
}

// TestSignalKillsJob: SIGTERM and SIGHUP (what a CI runner sends on
// cancel) made gpugate exit at once and leave the whole job running; only
// SIGINT was handled. Each now kills the job's process group and the
// daemons it started with setsid, and gpugate exits 2.
func TestSignalKillsJob(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs gpugate")
	}
	bin := filepath.Join(t.TempDir(), "gpugate")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			mark := "GPUGATE_SIGNAL_TEST=" + escape.Token(8)
			k, v, _ := strings.Cut(mark, "=")
			os.WriteFile(filepath.Join(dir, "perf.yaml"), []byte(`version: 1
workloads:
  - name: signal
    profiler: none
    step_log: 'step ([0-9.]+) ms'
    timeout: 5m
    env: {`+k+`: "`+v+`"}
    command:
      - /bin/sh
      - -c
      - |
        setsid sh -c 'echo $$ > daemon.pid; while :; do date > daemon.out; sleep 0.2; done' &
        sh -c 'echo $$ > child.pid; exec sleep 300' &
        echo $$ > job.pid
        echo 'step 1.0 ms'
        exec sleep 300
`), 0o644)
			cmd := exec.Command(bin, "run", "-config", filepath.Join(dir, "perf.yaml"), "-db", filepath.Join(dir, "b.db"), "-out", filepath.Join(dir, "out"))
			var stderr bytes.Buffer
			cmd.Stderr, cmd.Stdout = &stderr, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			var pids []int
			for _, f := range []string{"job.pid", "child.pid", "daemon.pid"} {
				deadline := time.Now().Add(20 * time.Second)
				for {
					b, _ := os.ReadFile(filepath.Join(dir, f))
					if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
						pids = append(pids, pid)
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("no %s; gpugate said:\n%s", f, stderr.String())
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			if n := len(markedProcesses(mark)); n < 3 {
				t.Fatalf("%d processes of the job before the signal, want 3 or more", n)
			}
			cmd.Process.Signal(sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("gpugate still runs 30 s after %s:\n%s", sig, stderr.String())
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Errorf("after %s: %v, want exit status 2\n%s", sig, err, stderr.String())
			}
			if left := markedProcesses(mark); len(left) > 0 {
				t.Errorf("after %s, processes of the job still run:\n%s", sig, strings.Join(left, "\n"))
				for _, l := range left {
					pid, _ := strconv.Atoi(strings.Fields(l)[0])
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			out := stderr.String()
			if !strings.Contains(out, "interrupted") || !strings.Contains(out, "gpugate: killed") || !strings.Contains(out, strconv.Itoa(pids[2])) {
				t.Errorf("gpugate's output does not say what it killed:\n%s", out)
			}
		})
	}
}

// TestSameSecondRuns: two runs of a workload started in the same second
// shared one artifacts folder (.gpugate/runs/WORKLOAD/TIME), and one
// recorded the other's trace.
func TestSameSecondRuns(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "perf.yaml"), []byte(`version: 1
workloads:
  - name: twice
    profiler: none
    step_log: 'step ([0-9.]+) ms'
    command: ["/bin/sh", "-c", "echo step 1.0 ms; echo $$ > pid"]
`), 0o644)
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	os.Chdir(dir)
	codes := make(chan int, 2)
	var outs [2]bytes.Buffer
	for i := range 2 {
		go func() {
			codes <- gpugate(t.Context(), []string{"run", "-config", "perf.yaml", "-db", "b.db"}, &outs[i], &outs[i])
		}()
	}
	for range 2 {
		if c := <-codes; c != 0 {
			t.Fatalf("exit %d:\n%s\n%s", c, outs[0].String(), outs[1].String())
		}
	}
	runs, _ := filepath.Glob(filepath.Join(".gpugate", "runs", "twice", "*", "job.log"))
	if len(runs) != 2 {
		t.Errorf("artifacts folders: %q, want two", runs)
	}
}
