//go:build linux

package main

// Issue 34: every file gpugate reads back after the job is the job's to
// replace. A FIFO in a trace's or step samples file's place must not hold
// gpugate past its timeout, and a link must not be followed, nor its
// target quoted. Run as an unprivileged user (contain_test.go's newUnpriv).

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// plantPy trains a tiny model for 12 optimizer steps (the profiler
// writes its trace after 1 + warmup 1 + measure 3 of them), then replaces
// its trace (argv[1] "trace") or its step samples ("steps") with a FIFO
// (argv[2] "fifo") or a link to argv[3] ("link").
const plantPy = `import glob, os, sys, torch
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i in range(12):
    loss = model(torch.randn(16, 8)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("step", i, flush=True)
what, kind = sys.argv[1], sys.argv[2]
var = "GPUGATE_TRACE_OUT" if what == "trace" else "GPUGATE_STEP_SAMPLES"
if var not in os.environ:  # a timing run: nothing of the kind to replace
    sys.exit(0)
pattern = os.environ[var].replace("{rank}", "*")
files = glob.glob(pattern)
print("planting over", len(files), "file(s)", flush=True)
for f in files:
    os.remove(f)
    if kind == "fifo":
        os.mkfifo(f)
    else:
        os.symlink(sys.argv[3], f)
`

// runFor runs gpugate as u, like u.run, but kills it after limit: a
// gpugate that waits on a FIFO fails the test instead of hanging it.
func (u *unpriv) runFor(t *testing.T, limit time.Duration, dir string, env []string, args ...string) (int, string, string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, u.bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + filepath.Join(u.dir, "bin") + ":/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred, Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if ctx.Err() != nil {
		t.Fatalf("gpugate %v still ran after %s (waiting on a planted file?)\nstdout:\n%s\nstderr:\n%s", args, limit, tailOf(stdout.String(), 3000), tailOf(stderr.String(), 3000))
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("gpugate %v: %v", args, err)
	}
	return code, stdout.String(), stderr.String(), took
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// TestPlantedJobFiles: a torch job that replaces its trace, or its step
// samples, with a FIFO or with a link to a file of the user's that it is
// not meant to reach. gpugate exits 2 within the job's timeout, names the
// file and why, and quotes neither the link's target nor what it holds.
// Before issue 34 the FIFOs held gpugate forever (os.Open of a FIFO waits
// for a writer), the linked trace was read and its first byte quoted
// ("not a JSON trace (starts with 'p')"), and the linked step samples were
// read and the run passed (exit 0).
func TestPlantedJobFiles(t *testing.T) {
	needTorch(t)
	u := newUnpriv(t)
	canary := "canary" + token(8)
	secret := filepath.Join(u.dir, "secret-"+canary)
	write(t, secret, "p"+canary+"-secret\n")
	work := filepath.Join(u.dir, "w")
	write(t, filepath.Join(work, "plant.py"), plantPy)
	for _, what := range []string{"trace", "steps"} {
		for _, kind := range []string{"fifo", "link"} {
			name := what + "-" + kind
			write(t, filepath.Join(work, name+".yaml"), fmt.Sprintf("version: 1\nworkloads:\n  - name: plant\n    command: [\"/usr/bin/python3\", \"plant.py\", %q, %q, %q]\n    timeout: 2m\n    profiler: torch\n    warmup_steps: 1\n    measure_steps: 3\n", what, kind, secret))
		}
	}
	u.own(t)
	for _, what := range []string{"trace", "steps"} {
		for _, kind := range []string{"fifo", "link"} {
			name := what + "-" + kind
			t.Run(name, func(t *testing.T) {
				code, stdout, stderr, took := u.runFor(t, 4*time.Minute, work, []string{"HOME=" + u.dir},
					"run", "-config", name+".yaml", "-db", filepath.Join(u.dir, name+".db"), "-out", filepath.Join(u.dir, "out-"+name))
				all := stdout + stderr
				if !strings.Contains(all, "planting over 1 file(s)") {
					t.Fatalf("the job did not plant its file (exit %d):\n%s", code, tailOf(all, 4000))
				}
				if code != 2 {
					t.Errorf("exit %d after %s, want 2 (a planted file)\n%s", code, took.Round(time.Second), tailOf(all, 4000))
				}
				file := map[string]string{"trace": "trace-0.json", "steps": "steps-0.jsonl"}[what]
				why := map[string]string{"fifo": "not a regular file (a named pipe)", "link": "a symbolic link"}[kind]
				if !strings.Contains(stderr, file) || !strings.Contains(stderr, why) {
					t.Errorf("the error does not name %s and %q:\n%s", file, why, tailOf(stderr, 3000))
				}
				if strings.Contains(all, canary) {
					t.Errorf("the output quotes the link's target or its content (%s):\n%s", canary, tailOf(all, 4000))
				}
				for _, q := range []string{`'p'`, `"p"`, `starts with`} {
					if strings.Contains(all, q) {
						t.Errorf("the output quotes the file's first byte (%s):\n%s", q, tailOf(all, 4000))
					}
				}
			})
		}
	}
}

// TestEchoCapped: a job that prints 1 GiB (a million lines of 1 KiB, then
// its step times). gpugate's own output, which in Actions is the job's
// log, stays under 2 MiB of the job's lines (EchoHead + EchoTail) plus
// gpugate's own lines, says how much it left out, and the run still
// reports the job's steps. Before issue 34 every line was echoed (clipped
// to 2,000 characters): about 1 GiB.
func TestEchoCapped(t *testing.T) {
	u := newUnpriv(t)
	work := filepath.Join(u.dir, "w")
	write(t, filepath.Join(work, "loud.sh"), "line=$(head -c 1023 /dev/zero | tr '\\0' a)\nyes \"$line\" | head -c 1073741824\ni=0\nwhile [ $i -lt 20 ]; do echo \"time_ms=10.$i\"; i=$((i+1)); done\n")
	write(t, filepath.Join(work, "perf.yaml"), "version: 1\nworkloads:\n  - name: loud\n    command: [\"/bin/sh\", \"loud.sh\"]\n    timeout: 5m\n    profiler: none\n    step_log: 'time_ms=([0-9.]+)'\n")
	u.own(t)
	code, stdout, stderr, took := u.runFor(t, 8*time.Minute, work, []string{"HOME=" + u.dir}, "run", "-config", "perf.yaml", "-db", filepath.Join(u.dir, "b.db"), "-out", filepath.Join(u.dir, "out"))
	t.Logf("1 GiB of output: gpugate took %s, wrote %d bytes to stdout and %d to stderr", took.Round(time.Second), len(stdout), len(stderr))
	if code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, tailOf(stdout, 3000), tailOf(stderr, 3000))
	}
	const limit = 2<<20 + 64<<10 // the echo's head and tail, and gpugate's own lines
	if n := len(stdout) + len(stderr); n > limit {
		t.Errorf("gpugate wrote %d bytes for 1 GiB of job output, want at most %d", n, limit)
	}
	all := stdout + stderr
	if !strings.Contains(all, "of the job's output left out of this echo here: it shows the first 1 MiB and the last 1 MiB") {
		t.Errorf("no line says what was left out:\n%s", tailOf(all, 3000))
	}
	// The tail holds the job's last lines: its step times.
	if !strings.Contains(all, "time_ms=10.19") {
		t.Errorf("the echo's tail lost the job's last line:\n%s", tailOf(all, 3000))
	}
	// The run reports: 20 steps read from the step log.
	if !strings.Contains(all, "20 steps") {
		t.Errorf("the run does not report its 20 steps:\n%s", tailOf(all, 3000))
	}
}
