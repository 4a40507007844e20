//go:build linux

package main

// Issue 34: nothing the job can write runs or decides with gpugate's
// trust. Every test here runs gpugate as an unprivileged user (newUnpriv)
// in a layout like the GitHub Actions runner's: gpugate installed in
// RUNNER_TEMP/gpugate-bin (the user's, as scripts/install-action.sh leaves
// it), the step's file-command files in RUNNER_TEMP/_runner_file_commands
// named by GITHUB_ENV and the others, a step script in RUNNER_TEMP, and
// tokens in the environment.

import (
	"bytes"
	"debug/elf"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runnerLayout is an Actions runner's RUNNER_TEMP for one step.
type runnerLayout struct {
	temp  string            // RUNNER_TEMP
	bin   string            // RUNNER_TEMP/gpugate-bin/gpugate
	files map[string]string // the runner's files (file commands, step script) and their content
	env   []string          // the step's environment: RUNNER_TEMP, GITHUB_ENV..., tokens
}

// newRunnerLayout makes it under u.dir (call u.own after).
func newRunnerLayout(t *testing.T, u *unpriv) *runnerLayout {
	t.Helper()
	// Outside /tmp, where the runner keeps it (/home/runner/work/_temp):
	// the job's private /tmp would hide it whole, and prove nothing.
	base := os.Getenv("HOME")
	if u.cred != nil || base == "" {
		base = "/var/lib"
	}
	top, err := os.MkdirTemp(base, "gpugate-runner-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	os.Chmod(top, 0o755)
	l := &runnerLayout{temp: filepath.Join(top, "_temp"), files: map[string]string{}}
	l.bin = filepath.Join(l.temp, "gpugate-bin", "gpugate")
	os.MkdirAll(filepath.Dir(l.bin), 0o755)
	data, err := os.ReadFile(u.bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	guid := "0f3c2a9e-" + token(4)
	cmds := filepath.Join(l.temp, "_runner_file_commands")
	l.env = []string{"RUNNER_TEMP=" + l.temp, "HOME=" + filepath.Join(u.dir, "home"),
		"GITHUB_TOKEN=canary-github-token-" + token(4), "ACTIONS_RUNTIME_TOKEN=canary-runtime-" + token(4)}
	for v, name := range map[string]string{"GITHUB_ENV": "set_env_", "GITHUB_PATH": "add_path_", "GITHUB_OUTPUT": "set_output_",
		"GITHUB_STATE": "save_state_", "GITHUB_STEP_SUMMARY": "step_summary_"} {
		p := filepath.Join(cmds, name+guid)
		l.files[p] = "FROM_AN_EARLIER_STEP=" + name + "\n"
		l.env = append(l.env, v+"="+p)
	}
	l.files[filepath.Join(l.temp, guid+".sh")] = "gpugate run -config perf.yaml # secrets: canary-step-script\n"
	for p, c := range l.files {
		write(t, p, c)
	}
	os.MkdirAll(filepath.Join(u.dir, "home"), 0o755)
	if u.cred != nil { // the runner user's, as on a runner
		filepath.Walk(top, func(p string, fi os.FileInfo, err error) error {
			if err == nil {
				os.Lchown(p, u.uid, u.gid)
			}
			return nil
		})
	}
	return l
}

// run runs the installed gpugate as the user (as u.run does).
func (l *runnerLayout) run(t *testing.T, u *unpriv, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	bin := u.bin
	u.bin = l.bin
	defer func() { u.bin = bin }()
	return u.run(t, dir, append(append([]string(nil), l.env...), env...), args...)
}

// changed lists the runner's files whose content is not what the layout
// wrote.
func (l *runnerLayout) changed() []string {
	var out []string
	for p, c := range l.files {
		b, err := os.ReadFile(p)
		if err != nil || string(b) != c {
			out = append(out, fmt.Sprintf("%s: %q", p, b))
		}
	}
	return out
}

const stepsSh = `for i in 1 2 3; do echo "step time_ms=1.0"; done`

// perfYAML is a workload of profiler none timed by its step_log.
func perfYAML(name, command, extra string) string {
	return fmt.Sprintf("version: 1\nworkloads:\n  - name: %s\n    command: %s\n    timeout: 2m\n    profiler: none\n    step_log: 'time_ms=([0-9.]+)'\n%s", name, command, extra)
}

// TestJobCannotReplaceGpugate: the job unlinks gpugate's binary, which its
// user owns, and writes its own program at that path, which would leave a
// marker and report success on fd 3. Before issue 34 the second run
// (repeat: 2) started that program as its spawner or init (os.Executable
// trims " (deleted)" and returns the path), and a failed second run was
// reported as a success. Now the program never runs, and the failed run
// makes gpugate exit 2. In a namespace the install folder is read-only
// too, so the job cannot even replace it.
func TestJobCannotReplaceGpugate(t *testing.T) {
	u := newUnpriv(t)
	l := newRunnerLayout(t, u)
	work := filepath.Join(u.dir, "w")
	marker := filepath.Join(u.dir, "pwned")
	// The first run replaces gpugate and succeeds; the second fails.
	job := `set -u
if [ -e second ]; then echo "second run"; ` + stepsSh + `; exit 1; fi
touch second
if rm -f "$1" && printf '#!/bin/sh\necho ran "$0" >> %s\necho "{\\"exit\\":0}" >&3\nexit 0\n' "$2" > "$1" && chmod 755 "$1"; then echo "replaced gpugate"; else echo "could not replace gpugate"; fi
` + stepsSh
	write(t, filepath.Join(work, "replace.sh"), job)
	write(t, filepath.Join(work, "perf.yaml"), perfYAML("replace", fmt.Sprintf("[\"/bin/sh\", \"replace.sh\", %q, %q]", l.bin, marker), "    repeat: 2\n"))
	u.own(t)
	data, _ := os.ReadFile(l.bin)
	for _, iso := range []string{"none", ""} {
		t.Run("isolation="+iso, func(t *testing.T) {
			os.Remove(filepath.Join(work, "second"))
			os.Remove(marker)
			if err := os.WriteFile(l.bin+".new", data, 0o755); err != nil {
				t.Fatal(err)
			}
			os.Chown(l.bin+".new", u.uid, u.gid)
			os.Rename(l.bin+".new", l.bin) // a fresh install for each case
			code, stdout, stderr := l.run(t, u, work, []string{"GPUGATE_ISOLATION=" + iso}, "run", "-config", "perf.yaml", "-db", filepath.Join(u.dir, "b"+iso+".db"), "-out", filepath.Join(u.dir, "out"+iso))
			t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			if b, err := os.ReadFile(marker); err == nil {
				t.Fatalf("the job's program ran in gpugate's place (exit %d): %s", code, b)
			}
			if !strings.Contains(stderr, "second run") {
				t.Fatalf("the second run did not run: the test proves nothing")
			}
			if iso == "none" && !strings.Contains(stderr, "replaced gpugate") {
				t.Fatalf("without a namespace the job could not replace gpugate's binary: the test proves nothing")
			}
			if iso == "" && !strings.Contains(stderr, "could not replace gpugate") {
				t.Errorf("in a namespace the job replaced gpugate's binary: its install folder is not read-only")
			}
			if code != 2 || !strings.Contains(stderr, "failed: exit status 1") {
				t.Errorf("exit %d, want 2: the second run failed (exit status 1)", code)
			}
		})
	}
}

// preloadC is a library whose constructor appends "pid exe argv0" to LOG
// in every process that loads it.
const preloadC = `#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
__attribute__((constructor)) static void mark(void) {
	char exe[1024] = {0}, argv0[1024] = {0}, line[2200];
	if (readlink("/proc/self/exe", exe, sizeof exe - 1) < 0) strcpy(exe, "?");
	int c = open("/proc/self/cmdline", O_RDONLY);
	if (c >= 0) { if (read(c, argv0, sizeof argv0 - 1) < 0) argv0[0] = 0; close(c); }
	int f = open(LOG, O_WRONLY | O_APPEND | O_CREAT, 0666);
	if (f < 0) return;
	int n = snprintf(line, sizeof line, "%d %s %s\n", (int)getpid(), exe, argv0);
	if (write(f, line, n) < 0) {}
	close(f);
}
`

// TestPreloadOnlyInJob: perf.yaml's env sets LD_PRELOAD (and
// LD_LIBRARY_PATH, BASH_ENV, PYTHONPATH). Before issue 34 it was the
// environment of gpugate's spawner and init, which (a dynamically linked
// gpugate: the README's go install, wherever cgo is) loaded the library
// while the init held CAP_SYS_ADMIN, before the covers were mounted. Now
// the job's processes load it, and no process of gpugate's does.
func TestPreloadOnlyInJob(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("needs gcc to build the preloaded library")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if f, err := elf.Open(self); err != nil || !hasInterp(f) {
		// cgo (os/user, net) makes the test binary dynamically linked
		// wherever a C compiler is.
		t.Skipf("the test binary is statically linked (CGO_ENABLED=0?): LD_PRELOAD cannot reach it (%v)", err)
	}
	u := newUnpriv(t)
	l := newRunnerLayout(t, u)
	work := filepath.Join(u.dir, "w")
	os.MkdirAll(work, 0o755)
	log := filepath.Join(work, "preload.log")
	src := filepath.Join(u.dir, "mark.c")
	lib := filepath.Join(work, "libmark.so") // in the job's folder, which its private /tmp keeps
	write(t, src, preloadC)
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", lib, "-DLOG="+strconv.Quote(log), src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v: %s", err, out)
	}
	write(t, filepath.Join(work, "steps.sh"), "echo job $$\n"+stepsSh+"\n")
	write(t, filepath.Join(work, "perf.yaml"), perfYAML("preload", `["/bin/sh", "steps.sh"]`,
		fmt.Sprintf("    env:\n      LD_PRELOAD: %q\n      LD_LIBRARY_PATH: %q\n      BASH_ENV: %q\n      PYTHONPATH: %q\n", lib, u.dir, filepath.Join(u.dir, "bashenv"), u.dir)))
	u.own(t)
	for _, iso := range []string{"none", ""} {
		t.Run("isolation="+iso, func(t *testing.T) {
			os.Remove(log)
			code, stdout, stderr := l.run(t, u, work, []string{"GPUGATE_ISOLATION=" + iso}, "run", "-config", "perf.yaml", "-db", filepath.Join(u.dir, "b"+iso+".db"), "-out", filepath.Join(u.dir, "out"+iso))
			b, _ := os.ReadFile(log)
			t.Logf("exit %d; loaded by:\n%s", code, b)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			job := false
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				f := strings.Fields(line)
				if len(f) < 3 {
					continue
				}
				if strings.Contains(f[1], "gpugate") || strings.HasPrefix(f[2], "gpugate") {
					t.Errorf("a process of gpugate's loaded the library: %s", line)
				}
				if f[1] == "/usr/bin/dash" || f[1] == "/bin/dash" || f[1] == "/usr/bin/bash" || f[1] == "/bin/sh" || f[1] == "/usr/bin/sh" {
					job = true
				}
			}
			if !job {
				t.Errorf("the job's shell did not load the library: the test proves nothing")
			}
		})
	}
}

func hasInterp(f *elf.File) bool {
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return true
		}
	}
	return false
}

// TestRunnerFilesOutOfReach: the job appends to the runner's file-command
// files (by the paths GITHUB_ENV and the others give, and by globbing
// RUNNER_TEMP/_runner_file_commands), to the step script, and writes into
// gpugate's install folder and /tmp; it reads a file the machine has in
// /tmp. Before issue 34 every one of those writes landed: a BASH_ENV line
// in set_env_* reaches every later step of the workflow, the post step
// that holds the token included. In a namespace none lands, the runner's
// files are unchanged, and the job's /tmp is its own; without one, the
// report says what stays within the job's reach.
func TestRunnerFilesOutOfReach(t *testing.T) {
	u := newUnpriv(t)
	l := newRunnerLayout(t, u)
	work := filepath.Join(u.dir, "w")
	outside := filepath.Join("/tmp", "gpugate-outside-"+token(6))
	if err := os.WriteFile(outside, []byte("canary-machine-tmp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(outside)
	mine := "/tmp/gpugate-job-wrote-" + token(6)
	defer os.Remove(mine)
	var targets []string
	for p := range l.files {
		targets = append(targets, p)
	}
	job := `for f in "$@" "$RT"/_runner_file_commands/*; do
  if echo 'BASH_ENV=/tmp/evil' >> "$f"; then echo "wrote $f"; else echo "refused $f"; fi
done
if echo x > "$RT/gpugate-bin/planted"; then echo "planted in gpugate-bin"; fi
cat ` + outside + ` 2>/dev/null || echo "no machine /tmp file"
echo mine > ` + mine + ` && echo "wrote my /tmp"
` + stepsSh
	write(t, filepath.Join(work, "touch.sh"), job)
	cmd := `["/bin/sh", "-c", "RT=` + l.temp + ` exec /bin/sh touch.sh ` + strings.Join(targets, " ") + `"]`
	write(t, filepath.Join(work, "perf.yaml"), perfYAML("touch", cmd, ""))
	u.own(t)
	for _, iso := range []string{"", "none"} {
		t.Run("isolation="+iso, func(t *testing.T) {
			for p, c := range l.files {
				os.WriteFile(p, []byte(c), 0o644)
			}
			os.Remove(filepath.Join(l.temp, "gpugate-bin", "planted"))
			os.Remove(mine)
			code, stdout, stderr := l.run(t, u, work, []string{"GPUGATE_ISOLATION=" + iso}, "run", "-config", "perf.yaml", "-db", filepath.Join(u.dir, "b"+iso+".db"), "-out", filepath.Join(u.dir, "out"+iso))
			t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			if code != 0 {
				t.Fatalf("exit %d", code)
			}
			ch := l.changed()
			_, planted := os.Stat(filepath.Join(l.temp, "gpugate-bin", "planted"))
			_, wrote := os.Stat(mine)
			if iso == "none" {
				// Without a namespace the writes land (the test can fail),
				// and the report says so.
				if len(ch) == 0 {
					t.Fatalf("without a namespace the job changed none of the runner's files: the test proves nothing")
				}
				for _, want := range []string{"within the job's reach are the runner's files", "_runner_file_commands", "gpugate-bin", "/tmp and /var/tmp", "network"} {
					if !strings.Contains(stdout, want) {
						t.Errorf("the report does not say that %q stays within the job's reach", want)
					}
				}
				return
			}
			if len(ch) > 0 {
				t.Errorf("the job changed the runner's files: %s", ch)
			}
			if planted == nil {
				t.Errorf("the job wrote into gpugate's install folder")
			}
			if strings.Contains(stderr, "canary-machine-tmp") || !strings.Contains(stderr, "no machine /tmp file") {
				t.Errorf("the job read a file of the machine's /tmp")
			}
			if !strings.Contains(stderr, "wrote my /tmp") || wrote == nil {
				t.Errorf("the job's own /tmp: written %v, seen outside %v, want written and unseen", strings.Contains(stderr, "wrote my /tmp"), wrote == nil)
			}
			for _, want := range []string{"a private /tmp and /var/tmp", "the runner's files covered: ", "read-only: " + filepath.Join(l.temp, "gpugate-bin")} {
				if !strings.Contains(stdout, want) {
					t.Errorf("the report does not say %q", want)
				}
			}
		})
	}
}

// TestNetworkNone: with network: none the job can connect neither to a
// TCP port on 127.0.0.1 nor to a Unix socket that the test listens on
// outside (in the job's own folder, which its private /tmp keeps); with
// network: host it can (the test can fail). The report says which
// network was in force.
func TestNetworkNone(t *testing.T) {
	u := newUnpriv(t)
	l := newRunnerLayout(t, u)
	work := filepath.Join(u.dir, "w")
	os.MkdirAll(work, 0o755)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	sock := filepath.Join(work, "db.sock")
	unixL, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer unixL.Close()
	os.Chmod(sock, 0o777)
	for _, ln := range []net.Listener{tcp, unixL} {
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Write([]byte("hello\n"))
				c.Close()
			}
		}()
	}
	port := tcp.Addr().(*net.TCPAddr).Port
	probe := `import socket, sys
for name, fam, addr in (("tcp", socket.AF_INET, ("127.0.0.1", ` + strconv.Itoa(port) + `)), ("unix", socket.AF_UNIX, ` + strconv.Quote(sock) + `)):
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(addr)
        print(name, "connected", s.recv(16))
    except Exception as e:
        print(name, "refused", type(e).__name__, e)
lo = socket.socket(); lo.bind(("127.0.0.1", 0)); lo.listen(1)
c = socket.create_connection(lo.getsockname(), timeout=5)
print("loopback", "works" if lo.accept()[0] else "fails")
for i in range(3):
    print("step time_ms=1.0", flush=True)
`
	write(t, filepath.Join(work, "probe.py"), probe)
	u.own(t)
	for _, network := range []string{"host", "none"} {
		t.Run("network="+network, func(t *testing.T) {
			write(t, filepath.Join(work, network+".yaml"), perfYAML("net", `["/usr/bin/python3", "probe.py"]`, "    network: "+network+"\n"))
			os.Chown(filepath.Join(work, network+".yaml"), u.uid, u.gid)
			code, stdout, stderr := l.run(t, u, work, nil, "run", "-config", network+".yaml", "-db", filepath.Join(u.dir, network+".db"), "-out", filepath.Join(u.dir, "out-"+network), "-format", "json")
			t.Logf("exit %d\nstderr:\n%s", code, stderr)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s", code, stdout)
			}
			if !strings.Contains(stderr, "loopback works") {
				t.Errorf("the job's loopback does not work")
			}
			for _, name := range []string{"tcp", "unix"} {
				connected := regexp.MustCompile(`(?m)^\[net\] ` + name + ` connected`).MatchString(stderr)
				if network == "host" && !connected {
					t.Errorf("network: host, and the job could not connect over %s: the test proves nothing", name)
				}
				if network == "none" && connected {
					t.Errorf("network: none, and the job connected to the test's %s listener", name)
				}
			}
			if want := `network: ` + network + ` (`; !strings.Contains(stdout, want) {
				t.Errorf("the JSON report does not say %q:\n%.3000s", want, stdout)
			}
		})
	}
	// Without a namespace, network: none is refused, not ignored.
	t.Run("network=none,isolation=none", func(t *testing.T) {
		code, stdout, stderr := l.run(t, u, work, []string{"GPUGATE_ISOLATION=none"}, "run", "-config", "none.yaml", "-db", filepath.Join(u.dir, "nons.db"), "-out", filepath.Join(u.dir, "out-nons"))
		if code != 2 || !strings.Contains(stderr, "asks for network: none, but no network namespace can be made here") || strings.Contains(stderr, "connected") {
			t.Errorf("exit %d, want 2 and the reason, and no job run\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
	})
}

// leaveC forks N children that wait forever, writes the time it ends (ns
// since the epoch) to END, prints three step times and exits 0.
const leaveC = `#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
	int n = atoi(argv[1]), made = 0;
	for (; made < n; made++) {
		pid_t p = fork();
		if (p == 0) { for (;;) pause(); }
		if (p < 0) { printf("fork %d failed: %s\n", made, strerror(errno)); break; }
	}
	printf("left %d\n", made);
	for (int i = 0; i < 3; i++) printf("step time_ms=1.0\n");
	fflush(stdout);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	FILE *f = fopen(argv[2], "w");
	fprintf(f, "%lld\n", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	fclose(f);
	return 0;
}
`

// TestTenThousandLeftovers: a job that leaves 10,000 processes and exits
// 0. Before issue 34 gpugate reported "timed out", exit 2, blaming the
// job: the init's sweep read /proc and killed one pid at a time, and did
// not finish. Now gpugate exits 0 within 30 s of the job's end and says
// how many processes it ended, naming a few. The number is 10,000 unless
// pid_max or the user's RLIMIT_NPROC leave fewer (the test says so).
func TestTenThousandLeftovers(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("needs gcc to build the job")
	}
	u := newUnpriv(t)
	work := filepath.Join(u.dir, "w")
	os.MkdirAll(work, 0o755)
	name := "ggleave" + token(3) // comm: at most 15 bytes
	bin := filepath.Join(work, name)
	write(t, filepath.Join(u.dir, "leave.c"), leaveC)
	if out, err := exec.Command("gcc", "-O2", "-o", bin, filepath.Join(u.dir, "leave.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v: %s", err, out)
	}
	// Nothing outlives the test, whatever happens to gpugate.
	t.Cleanup(func() {
		for range 3 {
			dirs, _ := filepath.Glob("/proc/[0-9]*/comm")
			for _, d := range dirs {
				if b, _ := os.ReadFile(d); strings.TrimSpace(string(b)) == name {
					pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	n := 10000
	pidMax, _ := os.ReadFile("/proc/sys/kernel/pid_max")
	procs, _ := filepath.Glob("/proc/[0-9]*")
	if m, _ := strconv.Atoi(strings.TrimSpace(string(pidMax))); m > 0 && m-len(procs)-2000 < n {
		n = m - len(procs) - 2000
		t.Logf("pid_max %d, %d processes: %d leftovers", m, len(procs), n)
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(6 /* RLIMIT_NPROC */, &rl) == nil && rl.Cur != ^uint64(0) && int(rl.Cur)-len(userProcs(u.uid))-200 < n {
		n = int(rl.Cur) - len(userProcs(u.uid)) - 200
		t.Logf("RLIMIT_NPROC %d: %d leftovers", rl.Cur, n)
	}
	if n < 1000 {
		t.Skipf("room for %d processes only", n)
	}
	end := filepath.Join(work, "end")
	write(t, filepath.Join(work, "perf.yaml"), perfYAML("leave", fmt.Sprintf("[%q, \"%d\", %q]", bin, n, end), ""))
	u.own(t)
	for _, iso := range []string{"", "none"} {
		t.Run("isolation="+iso, func(t *testing.T) {
			os.Remove(end)
			leftovers(t, u, work, iso, n, end, name)
		})
	}
}

// leftovers runs TestTenThousandLeftovers' job once, with GPUGATE_ISOLATION=iso.
func leftovers(t *testing.T, u *unpriv, work, iso string, n int, end, name string) {
	code, stdout, stderr := u.run(t, work, []string{"HOME=" + u.dir, "GPUGATE_ISOLATION=" + iso}, "run", "-config", "perf.yaml", "-db", filepath.Join(u.dir, "b"+iso+".db"), "-out", filepath.Join(u.dir, "out"+iso))
	exited := time.Now()
	if len(stderr) > 4000 {
		t.Logf("exit %d\nstderr (%d bytes, the last 4000):\n%s", code, len(stderr), stderr[len(stderr)-4000:])
	} else {
		t.Logf("exit %d\nstderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, fmt.Sprintf("left %d\n", n)) {
		t.Fatalf("the job did not leave %d processes: the test proves nothing", n)
	}
	b, err := os.ReadFile(end)
	ns, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || ns == 0 {
		t.Fatalf("the job wrote no end time: %v", err)
	}
	after := exited.Sub(time.Unix(0, ns))
	t.Logf("gpugate exited %.1fs after the job's end", after.Seconds())
	if code != 0 {
		t.Errorf("exit %d, want 0 as the job exited\nstdout:\n%s", code, stdout)
	}
	if after > 30*time.Second {
		t.Errorf("gpugate exited %s after the job's end, want within 30s", after.Round(time.Millisecond))
	}
	m := regexp.MustCompile(`killed (\d+) process\(es\) the job left running: (.*)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("gpugate does not say how many processes it ended")
	}
	if m[1] != strconv.Itoa(n) {
		t.Errorf("gpugate says it killed %s processes, want %d", m[1], n)
	}
	if len(m[2]) > 500 || !strings.Contains(m[2], "("+name+")") || !strings.Contains(m[2], "more") {
		t.Errorf("the line names %d bytes of processes, want a few names and a count: %.600s", len(m[2]), m[2])
	}
	if bytes.Count([]byte(stderr), []byte("("+name+")")) > 10 {
		t.Errorf("the log names the leftovers one by one")
	}
}
