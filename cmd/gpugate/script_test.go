package main

import (
	"context"
	"errors"
	"flag"
	"github.com/gpugate/gpugate/internal/pgtest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/gpugate/gpugate/internal/fakesmi"
	"github.com/gpugate/gpugate/trace/nsys"
)

// timing serializes the scripts that measure real runs.
var timing sync.Mutex

var update = flag.Bool("update", false, "rewrite golden sections of testdata/script/*.txtar")

func TestMain(m *testing.M) {
	// Run as "nvidia-smi" (a link a script makes on its PATH), the test
	// binary replays a real nvidia-smi recording (internal/fakesmi).
	if filepath.Base(os.Args[0]) == "nvidia-smi" {
		os.Exit(fakesmi.Main(os.Args[1:]))
	}
	// The throwaway PostgreSQL cluster is stopped once, after every test:
	// pgtest.Stop is final for the process, and three tests use it.
	testscript.Main(stopAfter{m}, map[string]func(){
		"gpugate": func() { os.Exit(gpugate(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// stopAfter runs the tests, then stops the PostgreSQL cluster that any of
// them started (internal/pgtest).
type stopAfter struct{ m *testing.M }

func (s stopAfter) Run() int {
	code := s.m.Run()
	pgtest.Stop()
	return code
}

// TestScript runs the end-to-end scripts in testdata/script: real gpugate
// runs of the real demo training job under torch.profiler and nsys.
func TestScript(t *testing.T) {
	demo, _ := filepath.Abs(filepath.Join("..", "..", "examples", "demo"))
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			// Scripts that time real training runs must not share the CPU
			// with each other: testscript runs scripts in parallel.
			if name := filepath.Base(e.WorkDir); strings.Contains(name, "run_demo") || strings.Contains(name, "baseline_refresh") || strings.Contains(name, "ab_demo") {
				timing.Lock()
				e.Defer(timing.Unlock)
			}
			e.Setenv("DEMO", demo)
			// For scripts that put the stand-in nvidia-smi on their PATH.
			if exe, err := os.Executable(); err == nil {
				e.Setenv("GPUGATE_TEST_BIN", exe)
			}
			smi, _ := filepath.Abs(filepath.Join("..", "..", "runner", "testdata", "smi"))
			e.Setenv("SMI_RECORDINGS", smi)
			e.Setenv("GPUGATE_BRANCH", "main")
			if p, err := nsys.FindCLI(os.Getenv("GPUGATE_NSYS")); err == nil {
				e.Setenv("GPUGATE_NSYS", p)
			}
			return nil
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "torch":
				return exec.Command("/usr/bin/python3", "-c", "import torch").Run() == nil, nil
			case "nsys":
				_, err := nsys.FindCLI(os.Getenv("GPUGATE_NSYS"))
				return err == nil, nil
			}
			return false, nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// honest same FILE | honest slower METRIC FILE: the honest
			// outcomes of a timing test, with their numbers (honest_test.go).
			"honest": honest,
			// record PROG ARGS... runs a recording (baseline refresh,
			// run -record-baseline) as exec does, and accepts exit 0, or
			// exit 3 with "no quiet baseline run" on stderr: on a busy
			// host every run may be disturbed, and the recording is then
			// inconclusive though stored (issue 37). Any other exit fails.
			"record": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) == 0 {
					ts.Fatalf("usage: record PROG ARGS...")
				}
				err := ts.Exec(args[0], args[1:]...)
				if err == nil {
					return
				}
				var ee *exec.ExitError
				if errors.As(err, &ee) && ee.ExitCode() == 3 && strings.Contains(ts.ReadFile("stderr"), "no quiet baseline run") {
					ts.Logf("the recording exited 3: no quiet baseline run (a busy host)")
					return
				}
				ts.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, ts.ReadFile("stderr"))
			},
			// noproc MARKER fails if a process whose command line contains
			// MARKER is alive: what a killed job must not leave behind.
			"noproc": func(ts *testscript.TestScript, neg bool, args []string) {
				dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
				for _, d := range dirs {
					b, err := os.ReadFile(d)
					if err != nil {
						continue
					}
					if strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), args[0]) {
						ts.Fatalf("process %s still running: %q", filepath.Dir(d), strings.ReplaceAll(string(b), "\x00", " "))
					}
				}
			},
		},
	})
}
