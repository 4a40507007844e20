package runner

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func python(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("needs /usr/bin/python3")
	}
	return "/usr/bin/python3"
}

// runJob runs a job without a profiler and returns its result, its echoed
// output and job.log.
func runJob(t *testing.T, job Job) (*Result, string, []byte, error) {
	t.Helper()
	var out bytes.Buffer
	job.Output = &syncBuffer{b: &out}
	if job.Name == "" {
		job.Name = "t"
	}
	if job.Profiler == "" {
		job.Profiler = None
	}
	if job.Out == "" {
		job.Out = t.TempDir()
	}
	if job.Timeout == 0 {
		job.Timeout = time.Minute
	}
	res, err := Run(context.Background(), job)
	var log []byte
	if res != nil {
		log, _ = os.ReadFile(res.Log)
	}
	return res, out.String(), log, err
}

type syncBuffer struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// TestLongLine: one line of 2 MB used to stop the line scanner (1 MiB
// limit); the job then blocked on its pipe until the timeout and job.log
// stayed empty.
func TestLongLine(t *testing.T) {
	py := python(t)
	start := time.Now()
	res, out, log, err := runJob(t, Job{Args: []string{py, "-c", "import sys; sys.stdout.write('x' * 2_000_000 + '\\n'); print('step 12.5 ms'); print('done')"},
		Timeout: 30 * time.Second, StepLog: regexp.MustCompile(`step ([\d.]+) ms`)})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %s", d)
	}
	if want := 2_000_000 + 1 + len("step 12.5 ms\ndone\n"); len(log) != want {
		t.Errorf("job.log has %d bytes, want %d", len(log), want)
	}
	if len(res.StepTimes) != 1 || res.StepTimes[0] != 12.5 {
		t.Errorf("step times after the long line: %v", res.StepTimes)
	}
	if !strings.Contains(out, "more bytes)") || !strings.Contains(out, "[t] done") || len(out) > 10_000 {
		t.Errorf("echo of a 2 MB line: %d bytes: %.300q", len(out), out)
	}
}

// TestProgressBar: a tqdm-style bar redrawn with \r for 2 MB, no newline
// until the end.
func TestProgressBar(t *testing.T) {
	py := python(t)
	res, out, log, err := runJob(t, Job{Args: []string{py, "-c", `
import sys
for i in range(22000):
    sys.stdout.write('\r%5d/22000 |' % i + '#' * 80)
sys.stdout.write('\n')
print('finished')
`}, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(log) < 2_000_000 || !bytes.HasSuffix(log, []byte("finished\n")) {
		t.Errorf("job.log: %d bytes, ends %q", len(log), log[max(0, len(log)-40):])
	}
	if n := strings.Count(out, "\n"); n > 10 || !strings.Contains(out, "21999/22000") {
		t.Errorf("echo of the bar: %d lines: %.500q", n, out)
	}
	_ = res
}

// TestLogCap: job.log keeps the first LogHead and the last LogTail bytes
// and says what it left out.
func TestLogCap(t *testing.T) {
	py := python(t)
	_, _, log, err := runJob(t, Job{Args: []string{py, "-c", `
import sys
for i in range(8 * 1024):
    sys.stdout.write('%07d ' % i + 'y' * 1015 + '\n')
`}, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	total := 8 * 1024 * 1024
	note := regexp.MustCompile(`\n\[gpugate: (\d+) bytes of output left out here; job.log keeps the first 1 MiB and the last 4 MiB of (\d+) bytes\]\n`)
	m := note.FindSubmatchIndex(log)
	if m == nil {
		t.Fatalf("job.log (%d bytes) has no note of what was left out", len(log))
	}
	left, _ := strconv.Atoi(string(log[m[2]:m[3]]))
	all, _ := strconv.Atoi(string(log[m[4]:m[5]]))
	if all != total || left != total-LogHead-LogTail || m[0] != LogHead || len(log)-m[1] != LogTail {
		t.Errorf("note %q at %d, tail %d bytes", log[m[0]:m[1]], m[0], len(log)-m[1])
	}
	if !bytes.HasPrefix(log, []byte("0000000 ")) || !bytes.HasSuffix(log, []byte("y\n")) || !bytes.Contains(log[m[1]:], []byte("0008191 ")) {
		t.Errorf("head or tail wrong")
	}
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && len(b) > i+2 && b[i+2] != 'Z'
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	for range 100 {
		b, err := os.ReadFile(path)
		if err == nil && len(bytes.TrimSpace(b)) > 0 {
			pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
			if err == nil {
				return pid
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

// TestDaemonsKilled: a setsid daemon (even one with a cleared environment)
// and a background child started by the job survived both a normal exit and
// the timeout, and kept writing files.
func TestDaemonsKilled(t *testing.T) {
	for _, c := range []struct {
		name    string
		tail    string // what the job does after starting the daemons
		timeout time.Duration
	}{
		{"exit", "echo started", time.Minute},
		{"timeout", "echo started; sleep 300", 2 * time.Second},
	} {
		for _, iso := range []string{"none", "namespace"} {
			t.Run(c.name+"/"+iso, func(t *testing.T) {
				isolate(t, iso)
				dir := t.TempDir()
				script := `setsid sh -c 'echo $$ > d1.pid; while :; do date > d1.out; sleep 0.2; done' &
setsid env -i /bin/sh -c 'echo $$ > d2.pid; exec sleep 300' &
sh -c 'echo $$ > bg.pid; exec sleep 300' &
while [ ! -s d1.pid ] || [ ! -s d2.pid ] || [ ! -s bg.pid ]; do sleep 0.05; done
` + c.tail
				res, out, _, err := runJob(t, Job{Args: []string{"/bin/sh", "-c", script}, Dir: dir, Timeout: c.timeout, KillGrace: time.Second})
				if c.name == "exit" && err != nil {
					t.Fatalf("Run: %v", err)
				}
				if c.name == "timeout" && (err == nil || !strings.Contains(err.Error(), "timed out")) {
					t.Fatalf("Run: %v, want a timeout", err)
				}
				for _, f := range []string{"d1.pid", "d2.pid", "bg.pid"} {
					// In a namespace the pids are the namespace's: its end
					// killed them all, and d1.out below shows it.
					if pid := readPid(t, filepath.Join(dir, f)); iso == "none" && alive(pid) {
						t.Errorf("%s: process %d still runs after the job", f, pid)
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
				if len(res.Killed) < 2 || !strings.Contains(out, "gpugate: killed") {
					t.Errorf("killed %q; output %q", res.Killed, out)
				}
				st, _ := os.Stat(filepath.Join(dir, "d1.out"))
				time.Sleep(600 * time.Millisecond)
				if st2, _ := os.Stat(filepath.Join(dir, "d1.out")); st != nil && st2 != nil && !st2.ModTime().Equal(st.ModTime()) {
					t.Errorf("the daemon still writes after the job")
				}
			})
		}
	}
}

// isolate runs the rest of the test with the job in a namespace, or
// without (GPUGATE_ISOLATION=none); the namespace case is skipped where
// the kernel allows none.
func isolate(t *testing.T, iso string) {
	t.Helper()
	if iso == "none" {
		t.Setenv(isolationEnv, "none")
		return
	}
	t.Setenv(isolationEnv, "")
	if i := chooseIsolation(); !i.ns {
		if os.Getenv("CI") == "true" && os.Getuid() == 0 {
			t.Fatalf("root and no namespace: %s", i.what)
		}
		t.Skipf("no namespace here: %s", i.what)
	}
}

// TestOthersSpared: what the program running gpugate started before the
// job (here a setsid daemon of the test, as the store tests' PostgreSQL
// server is) is not the job's, and survives it. The daemon-killing rule
// ("a descendant in a session of its own") once killed the test's
// PostgreSQL cluster.
func TestOthersSpared(t *testing.T) {
	other := exec.Command("setsid", "sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	time.Sleep(100 * time.Millisecond) // setsid has exec'd sleep
	script := `setsid sh -c 'echo $$ > d.pid; exec sleep 300' &
while [ ! -s d.pid ]; do sleep 0.05; done; echo started`
	res, _, _, err := runJob(t, Job{Args: []string{"/bin/sh", "-c", script}, Dir: t.TempDir(), KillGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !alive(other.Process.Pid) {
		t.Errorf("the test's own daemon %d was killed with the job's: %q", other.Process.Pid, res.Killed)
	}
	if len(res.Killed) != 1 {
		t.Errorf("killed %q, want the job's one daemon", res.Killed)
	}
}

// TestEnvDenied: the job inherited GPUGATE_GITHUB_TOKEN (the token that
// writes comments) and every other secret of gpugate's environment.
func TestEnvDenied(t *testing.T) {
	secrets := map[string]string{
		"GPUGATE_GITHUB_TOKEN":           "canary-gpugate-token",
		"GITHUB_TOKEN":                   "canary-github-token",
		"GH_TOKEN":                       "canary-gh-token",
		"INPUT_GITHUB-TOKEN":             "canary-input-token",
		"ACTIONS_RUNTIME_TOKEN":          "canary-runtime-token",
		"ACTIONS_ID_TOKEN_REQUEST_TOKEN": "canary-oidc-token",
		"ACTIONS_ID_TOKEN_REQUEST_URL":   "canary-oidc-url",
		"GITHUB_OUTPUT":                  "canary-output-file",
		"GITHUB_ENV":                     "canary-env-file",
		"MY_OWN_SECRET":                  "canary-denied-by-list",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("GPUGATE_ENV_DENY", "MY_OWN_*")
	t.Setenv("GPUGATE_DEMO", "kept")
	_, _, log, err := runJob(t, Job{Args: []string{"/usr/bin/env"}, Env: map[string]string{"PASSED_BY_CONFIG": "yes", "GH_TOKEN": "explicit"}})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range secrets {
		if bytes.Contains(log, []byte(v)) {
			t.Errorf("the job's environment has %s", k)
		}
	}
	for _, want := range []string{"GPUGATE_DEMO=kept", "PASSED_BY_CONFIG=yes", "GH_TOKEN=explicit", "PATH=.*"} {
		if !regexp.MustCompile(`(?m)^` + want + `$`).Match(log) {
			t.Errorf("the job's environment lacks %s", want)
		}
	}
}

// TestEchoEscaped: control characters in job output are shown, not sent
// to the terminal; in Actions the echo sits between ::stop-commands:: and
// the resume token.
func TestEchoEscaped(t *testing.T) {
	_, out, log, err := runJob(t, Job{Args: []string{"/usr/bin/printf", `\033[2J\033]0;title\007::add-mask::x\n::error::boom\n`}, StopCommands: true})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(log, []byte("\x1b[2J")) {
		t.Errorf("job.log should keep the raw output")
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("raw control characters echoed: %q", out)
	}
	m := regexp.MustCompile(`(?s)^::stop-commands::(gpugate-[0-9a-f]{32})\n(.*)::(gpugate-[0-9a-f]{32})::\n$`).FindStringSubmatch(out)
	if m == nil || m[1] != m[3] {
		t.Fatalf("echo not wrapped in stop-commands: %q", out)
	}
	for _, line := range strings.Split(strings.TrimSpace(m[2]), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "::") {
			t.Errorf("echoed line starts a workflow command: %q", line)
		}
	}
	if !strings.Contains(m[2], `[t] \x1b[2J\x1b]0;title\x07::add-mask::x`) {
		t.Errorf("echo: %q", m[2])
	}
}

// TestNewRunDir: two runs of a workload started in the same second shared
// one artifacts folder, and one recorded the other's trace.
func TestNewRunDir(t *testing.T) {
	root := t.TempDir()
	now := time.Date(2026, 12, 2, 15, 4, 5, 0, time.UTC)
	dirs := make([]string, 8)
	var wg sync.WaitGroup
	for i := range dirs {
		wg.Go(func() {
			d, err := NewRunDir(root, "demo", now)
			if err != nil {
				t.Error(err)
			}
			dirs[i] = d
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, d := range dirs {
		if seen[d] || !strings.HasPrefix(d, filepath.Join(root, "demo", "20261202T150405Z-")) {
			t.Errorf("folder %q (seen before: %v)", d, seen[d])
		}
		seen[d] = true
	}
	for _, bad := range []string{"../x", "..", "a/b", "", "."} {
		if d, err := NewRunDir(root, bad, now); err == nil {
			t.Errorf("NewRunDir(%q) = %q, want an error", bad, d)
		}
	}
}

// TestCRLF: lines ended by \r\n are parsed once and all echoed.
func TestCRLF(t *testing.T) {
	res, out, _, err := runJob(t, Job{Args: []string{"/usr/bin/printf", `step 1.5 ms\r\nstep 2.5 ms\r\nstep 3.5 ms\r\n`}, StepLog: regexp.MustCompile(`step ([\d.]+) ms`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.StepTimes) != 3 || res.StepTimes[2] != 3.5 {
		t.Errorf("step times %v, want [1.5 2.5 3.5]", res.StepTimes)
	}
	if strings.Count(out, "[t] step ") != 3 {
		t.Errorf("echo %q, want three lines", out)
	}
}
