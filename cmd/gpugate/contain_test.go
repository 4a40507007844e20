//go:build linux

package main

// Issue 26: a job run by an ordinary user — as self-hosted runners run —
// reaches no secret and leaves nothing behind. Every test here runs the
// gpugate binary (this test binary, copied, run as "gpugate") as an
// unprivileged user: a throwaway user the test makes when it runs as root,
// else the test's own (already unprivileged) user.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpugate/gpugate/trace/nsys"
)

// unpriv is the unprivileged user the tests run gpugate as.
type unpriv struct {
	uid, gid int
	cred     *syscall.Credential // nil: the test's own user
	dir      string              // a folder of the user's, readable by it
	bin      string              // the gpugate binary in dir/bin, beside the stand-in nvidia-smi
}

// newUnpriv makes a throwaway user when the test runs as root, or takes the
// test's own user when it is not root; either way a folder of that user
// with this test binary copied in as gpugate and nvidia-smi.
func newUnpriv(t *testing.T) *unpriv {
	t.Helper()
	u := &unpriv{uid: os.Getuid(), gid: os.Getgid()}
	if u.uid == 0 {
		name := "gg" + token(6)
		if out, err := exec.Command("useradd", "-M", "-U", "-s", "/bin/sh", name).CombinedOutput(); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("root, and no throwaway user could be made: %v: %s", err, out)
			}
			t.Skipf("root, and no throwaway user could be made: %v: %s", err, out)
		}
		pw, err := user.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		u.uid, _ = strconv.Atoi(pw.Uid)
		u.gid, _ = strconv.Atoi(pw.Gid)
		u.cred = &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: []uint32{}}
		t.Cleanup(func() {
			for _, pid := range userProcs(u.uid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			time.Sleep(100 * time.Millisecond)
			if out, err := exec.Command("userdel", name).CombinedOutput(); err != nil {
				t.Logf("userdel %s: %v: %s", name, err, out)
			}
		})
	}
	dir, err := os.MkdirTemp("", "gpugate-contain-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "bin"), 0o755)
	for _, name := range []string{"gpugate", "nvidia-smi"} {
		if err := os.WriteFile(filepath.Join(dir, "bin", name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	u.dir, u.bin = dir, filepath.Join(dir, "bin", "gpugate")
	return u
}

// own gives the user the files under dir (made by the test, as root).
func (u *unpriv) own(t *testing.T) {
	t.Helper()
	if u.cred == nil {
		return
	}
	err := filepath.Walk(u.dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, u.uid, u.gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// run runs gpugate as the user with exactly env (and PATH with the
// stand-in nvidia-smi first), in dir; it returns the exit code and output.
func (u *unpriv) run(t *testing.T, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(u.bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + filepath.Join(u.dir, "bin") + ":/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("gpugate %v: %v", args, err)
	}
	return code, stdout.String(), stderr.String()
}

func token(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// userProcs are the live processes whose real uid is uid.
func userProcs(uid int) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*/status")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		dead := false
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) > 1 && f[0] == "State:" && (f[1] == "Z" || f[1] == "X") {
				dead = true // exited, not yet reaped by its parent: it runs nothing
			}
			if len(f) > 1 && f[0] == "Uid:" && f[1] == strconv.Itoa(uid) && !dead {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
				out = append(out, pid)
			}
		}
	}
	return out
}

func needTorch(t *testing.T) {
	t.Helper()
	if exec.Command("/usr/bin/python3", "-c", "import torch").Run() != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs python3-torch (scripts/setup-profilers.sh)")
		}
		t.Skip("needs python3-torch (scripts/setup-profilers.sh)")
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// attackPy is the job of TestContained: it writes to argv[1] everything it
// can read that could hold a secret — its environment, every
// /proc/*/environ and cmdline, what every /proc/*/fd names and, for files,
// holds, the credential files named in argv[2:] (also after trying to
// unmount what covers them, directly and as root of a user namespace of
// its own), and the stack (where a
// process's environment lives) of every process it can ptrace
// (PTRACE_SEIZE, else PTRACE_ATTACH) — and then "dumped".
const attackPy = `import ctypes, glob, os, sys
out = open(sys.argv[1], "w")
def w(*a):
    print(*a, file=out)
w("ENV", repr(dict(os.environ)))
for line in open("/proc/self/status"):
    if line.startswith(("CapEff:", "CapPrm:", "CapAmb:", "NoNewPrivs:")):
        w("STATUS", line.strip())
me = os.getpid()
pids = [int(p[6:]) for p in glob.glob("/proc/[0-9]*")]
w("VISIBLE", len(pids))
for pid in pids:
    for f in ("environ", "cmdline"):
        try:
            w(f, pid, open("/proc/%d/%s" % (pid, f), "rb").read())
        except Exception as e:
            w(f, pid, "unreadable", e)
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except Exception as e:
        w("fd", pid, "unreadable", e)
        fds = []
    for fd in fds:
        path = "/proc/%d/fd/%s" % (pid, fd)
        try:
            target = os.readlink(path)
        except Exception:
            continue
        w("fd", pid, fd, target)
        if target.startswith("/") and os.path.isfile(path):
            try:
                w("fdread", pid, fd, open(path, "rb").read(1 << 16))
            except Exception as e:
                w("fdread", pid, fd, "unreadable", e)
for f in sys.argv[2:]:
    try:
        w("file", f, open(os.path.expanduser(f), "rb").read())
    except Exception as e:
        w("file", f, "unreadable", e)
# Undo the covers: umount them, or in a user and mount namespace of the
# job's own (where it is root), umount them and read.
import subprocess
for f in sys.argv[2:]:
    f = os.path.expanduser(f)
    undo = "import ctypes, sys; c = ctypes.CDLL(None, use_errno=True); r = c.umount2(sys.argv[1].encode(), 2); print('umount2', r, ctypes.get_errno()); print(open(sys.argv[1]).read())"
    for cmd in ([sys.executable, "-c", undo, f], ["unshare", "-Urm", sys.executable, "-c", undo, f]):
        try:
            r = subprocess.run(cmd, capture_output=True, timeout=10)
            w("undo", cmd, r.returncode, r.stdout, r.stderr)
        except Exception as e:
            w("undo", cmd, "failed", e)
    try:
        w("file-after-undo", f, open(f, "rb").read())
    except Exception as e:
        w("file-after-undo", f, "unreadable", e)
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
PTRACE_ATTACH, PTRACE_DETACH, PTRACE_SEIZE = 16, 17, 0x4206
for pid in pids:
    if pid == me:
        continue
    how = None
    if libc.ptrace(PTRACE_SEIZE, pid, None, None) == 0:
        how = "seize"
    elif libc.ptrace(PTRACE_ATTACH, pid, None, None) == 0:
        how = "attach"
        try:
            os.waitpid(pid, 0x40000000)
        except Exception:
            pass
    if how is None:
        w("ptrace", pid, "refused", ctypes.get_errno())
        continue
    w("ptrace", pid, how)
    try:
        for line in open("/proc/%d/maps" % pid):
            if "[stack]" in line:
                a, b = [int(x, 16) for x in line.split()[0].split("-")]
                m = open("/proc/%d/mem" % pid, "rb")
                m.seek(a)
                w("mem", pid, m.read(b - a))
    except Exception as e:
        w("mem", pid, "unreadable", e)
    libc.ptrace(PTRACE_DETACH, pid, None, None)
w("dumped")
out.close()
`

// TestContained: gpugate holds tokens, a store password and a store URL
// in its environment, reads the store from a -db-file, and the user has a
// ~/.pgpass and an Actions runner's .credentials; a long-running
// nvidia-smi (the stand-in) samples beside the job. The job looks for them
// everywhere it can (attackPy) under each profiler and finds none of them;
// the log names a namespace as the isolation. Before issue 26 an ordinary
// user never got a namespace (gpugate was not dumpable when it cloned the
// init, so it could not write the init's uid_map), the stand-in
// nvidia-smi had gpugate's whole environment, and the credential files
// were the job's to read.
func TestContained(t *testing.T) {
	needTorch(t)
	u := newUnpriv(t)
	demo, _ := filepath.Abs(filepath.Join("..", "..", "examples", "demo", "train.py"))
	train, err := os.ReadFile(demo)
	if err != nil {
		t.Fatal(err)
	}
	smi, _ := filepath.Abs(filepath.Join("..", "..", "runner", "testdata", "smi"))
	canary := "canary" + token(8)
	secrets := map[string]string{
		"GITHUB_TOKEN":          canary + "-github-token",
		"GPUGATE_GITHUB_TOKEN":  canary + "-gpugate-token",
		"ACTIONS_RUNTIME_TOKEN": canary + "-runtime-token",
		"PGPASSWORD":            canary + "-pgpassword",
		"GPUGATE_DB":            "postgres://writer:" + canary + "-db-url@db.example/perf",
		"DATABASE_URL":          "postgres://writer:" + canary + "-database-url@db.example/perf",
	}
	home := filepath.Join(u.dir, "home")
	runnerDir := filepath.Join(u.dir, "actions-runner")
	workspace := filepath.Join(runnerDir, "_work", "repo")
	files := map[string]string{
		filepath.Join(home, ".pgpass"):                     "*:*:*:writer:" + canary + "-pgpass\n",
		filepath.Join(runnerDir, ".credentials"):           `{"scheme":"OAuth","data":{"clientId":"` + canary + `-runner-credentials"}}`,
		filepath.Join(runnerDir, ".credentials_rsaparams"): `{"d":"` + canary + `-runner-rsaparams"}`,
		filepath.Join(runnerDir, ".runner"):                `{"agentName":"` + canary + `-runner-dotrunner"}`,
	}
	// The -db-file holds the store's location: here a SQLite file whose
	// folder's name is the secret (a real one holds a URL with a password).
	storeDir := filepath.Join(u.dir, canary+"-dbfile")
	dbFile := filepath.Join(u.dir, "db-url")
	files[dbFile] = filepath.Join(storeDir, "b.db") + "\n"
	for p, c := range files {
		write(t, p, c)
		os.Chmod(p, 0o600)
	}
	os.MkdirAll(storeDir, 0o700)
	os.MkdirAll(workspace, 0o755)
	work := filepath.Join(u.dir, "w")
	write(t, filepath.Join(work, "train.py"), string(train))
	write(t, filepath.Join(work, "attack.py"), attackPy)
	write(t, filepath.Join(u.dir, "smi", "help.txt"), mustRead(t, filepath.Join(smi, "help-query-gpu-580.txt")))
	for _, f := range []string{"query-gpu.csv", "query-compute-apps.csv"} {
		write(t, filepath.Join(u.dir, "smi", "h200-load", f), mustRead(t, filepath.Join(smi, "h200-load", f)))
	}
	targets := []string{"~/.pgpass", dbFile, filepath.Join(runnerDir, ".credentials"), filepath.Join(runnerDir, ".credentials_rsaparams"), filepath.Join(runnerDir, ".runner")}
	profilers := []string{"torch", "none", "nsys"}
	nsysPath, nsysErr := nsys.FindCLI(os.Getenv("GPUGATE_NSYS"))
	for _, prof := range profilers {
		extra := "warmup_steps: 2\n    measure_steps: 5\n"
		if prof == "none" {
			extra = "step_log: 'time_ms=([0-9.]+)'\n"
		}
		cmd := fmt.Sprintf(`["/bin/sh", "-c", "/usr/bin/python3 attack.py dump-%s.txt %s && exec /usr/bin/python3 train.py --steps 12 --log-every 1"]`, prof, strings.Join(targets, " "))
		write(t, filepath.Join(work, prof+".yaml"), fmt.Sprintf("version: 1\nworkloads:\n  - name: %s\n    command: %s\n    timeout: 3m\n    profiler: %s\n    %s", prof, cmd, prof, extra))
	}
	u.own(t)
	env := []string{"HOME=" + home, "RUNNER_WORKSPACE=" + workspace, "GPUGATE_VISIBLE=" + canary + "-not-secret",
		"GPUGATE_FAKE_SMI=" + filepath.Join(u.dir, "smi", "h200-load"), "GPUGATE_FAKE_SMI_HELP=" + filepath.Join(u.dir, "smi", "help.txt"),
		"GPUGATE_FAKE_SMI_INTERVAL_MS=50", "GPUGATE_FAKE_SMI_PID_OFFSET=5000000", "GPUGATE_FAKE_SMI_DONE=" + filepath.Join(u.dir, "smi")}
	for k, v := range secrets {
		env = append(env, k+"="+v)
	}
	if nsysErr == nil {
		env = append(env, "GPUGATE_NSYS="+nsysPath)
	}
	for _, prof := range profilers {
		t.Run(prof, func(t *testing.T) {
			if prof == "nsys" && nsysErr != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("needs nsys: %v", nsysErr)
				}
				t.Skipf("needs nsys: %v", nsysErr)
			}
			code, stdout, stderr := u.run(t, work, env, "run", "-config", prof+".yaml", "-db-file", dbFile, "-out", filepath.Join(u.dir, "out-"+prof))
			if code != 0 {
				t.Fatalf("gpugate run (profiler %s) exit %d\nstdout:\n%s\nstderr:\n%s", prof, code, stdout, stderr)
			}
			dump, err := os.ReadFile(filepath.Join(work, "dump-"+prof+".txt"))
			if err != nil || !bytes.HasSuffix(dump, []byte("\ndumped\n")) || !bytes.Contains(dump, []byte(canary+"-not-secret")) {
				t.Fatalf("the job's dump did not finish, or does not show its own environment (it proves nothing): %v\n%.2000s", err, dump)
			}
			visible := regexp.MustCompile(`(?m)^VISIBLE (\d+)$`).FindSubmatch(dump)
			t.Logf("the job saw %s processes, read %d environ files, ptraced %d processes", visible[1], len(regexp.MustCompile(`(?m)^environ \d+ b`).FindAll(dump, -1)), len(regexp.MustCompile(`(?m)^ptrace \d+ (seize|attach)$`).FindAll(dump, -1)))
			for _, line := range regexp.MustCompile(`(?m)^undo .*$`).FindAll(dump, -1) {
				t.Logf("%.300s", line)
			}
			for name, v := range secrets {
				if bytes.Contains(dump, []byte(v)) {
					t.Errorf("the job found %s (%s)", name, v)
				}
			}
			for p, c := range files {
				if bytes.Contains(dump, []byte(strings.TrimSpace(c))) {
					t.Errorf("the job read %s", p)
				}
			}
			for _, word := range []string{"-pgpass", "-runner-credentials", "-runner-rsaparams", "-runner-dotrunner", "-dbfile"} {
				if bytes.Contains(dump, []byte(canary+word)) {
					t.Errorf("the job found %s", canary+word)
				}
			}
			// The job holds no capability (the init's CAP_SYS_ADMIN, for its
			// mounts, is gone) and can gain none (no_new_privs).
			for _, want := range []string{"STATUS CapEff:\t0000000000000000", "STATUS CapPrm:\t0000000000000000", "STATUS CapAmb:\t0000000000000000", "STATUS NoNewPrivs:\t1"} {
				if !bytes.Contains(dump, []byte(want+"\n")) {
					t.Errorf("the job's status lacks %q: %s", want, regexp.MustCompile(`(?m)^STATUS .*$`).FindAll(dump, -1))
				}
			}
			// (b) The log names the namespace.
			if !strings.Contains(stderr, "gpugate: isolation: user, PID and mount namespace") {
				t.Errorf("the log does not name a user, PID and mount namespace as the isolation:\n%s", stderr)
			}
			// And the report says it too.
			if !strings.Contains(stdout, "isolation: user, PID and mount namespace") {
				t.Errorf("the report does not say which isolation was in force:\n%s", stdout)
			}
		})
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// leavePy leaves two grandchildren with an empty environment (no
// GPUGATE_JOB_TOKEN): one in a session of its own (setsid), one in a
// process group of its own (setpgid), then kills its parent, the init,
// and prints three step times for profiler none.
const leavePy = `import os, signal, sys, time
def leave(how, marker):
    if os.fork() == 0:
        how()
        if os.fork() == 0:
            os.execve("/bin/sleep", ["sleep", marker], {})
        os._exit(0)
leave(os.setsid, sys.argv[1])
leave(lambda: os.setpgid(0, 0), sys.argv[2])
time.sleep(0.3)
for i in range(3):
    print("step time_ms=1.0", flush=True)
try:
    os.kill(os.getppid(), signal.SIGKILL)
except Exception as e:
    print("could not kill the init:", e, flush=True)
time.sleep(0.3)
`

// TestLeftoversGone: a job that leaves a setsid and a setpgid grandchild
// with an empty environment and kills its init leaves no process of the
// user alive once gpugate has exited. Before issue 26 (no namespace for an
// ordinary user) the setpgid grandchild, in gpugate's session and without
// the job's token, survived.
func TestLeftoversGone(t *testing.T) {
	u := newUnpriv(t)
	work := filepath.Join(u.dir, "w")
	m1, m2 := fmt.Sprint(3000+time.Now().UnixNano()%1000)+".5", fmt.Sprint(4000+time.Now().UnixNano()%1000)+".25"
	write(t, filepath.Join(work, "leave.py"), leavePy)
	write(t, filepath.Join(work, "perf.yaml"), fmt.Sprintf("version: 1\nworkloads:\n  - name: leave\n    command: [\"/usr/bin/python3\", \"leave.py\", %q, %q]\n    timeout: 1m\n    profiler: none\n    step_log: 'time_ms=([0-9.]+)'\n", m1, m2))
	u.own(t)
	for _, iso := range []string{"", "none"} {
		t.Run("isolation="+iso, func(t *testing.T) {
			code, stdout, stderr := u.run(t, work, []string{"HOME=" + u.dir, "GPUGATE_ISOLATION=" + iso}, "run", "-config", "perf.yaml", "-db", filepath.Join(u.dir, "b"+iso+".db"), "-out", filepath.Join(u.dir, "out"+iso))
			t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			var left []string
			// A busy machine takes its time to end what the kernel kills
			// with the namespace (and the leftovers of a test before, such
			// as 10,000 sleepers): up to 3 s.
			for range 30 {
				left = nil
				dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
				for _, d := range dirs {
					b, _ := os.ReadFile(d)
					if c := strings.ReplaceAll(string(b), "\x00", " "); strings.Contains(c, m1) || strings.Contains(c, m2) {
						left = append(left, filepath.Base(filepath.Dir(d))+" "+c)
					}
				}
				if u.cred != nil {
					for _, pid := range userProcs(u.uid) {
						b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
						left = append(left, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(b), "\x00", " ")))
					}
				}
				if len(left) == 0 {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			for _, l := range left { // what the test must not leave either
				pid, _ := strconv.Atoi(strings.Fields(l)[0])
				syscall.Kill(pid, syscall.SIGKILL)
			}
			if iso == "" {
				if len(left) > 0 {
					t.Errorf("after gpugate exited, the job's processes are alive: %q", left)
				}
				if !strings.Contains(stderr, "isolation: user, PID and mount namespace") {
					t.Errorf("the log does not name a namespace as the isolation")
				}
				return
			}
			// Without a namespace the job could kill its init: the run
			// fails (its end is unknown), and unless gpugate could make a
			// cgroup, the report warns that leftovers may outlive it.
			if code != 2 || !strings.Contains(stderr, "left no report") {
				t.Errorf("a job that killed its init: exit %d, want 2 and the init's missing report", code)
			}
			if len(left) > 0 && !strings.Contains(stderr, "may outlive it") {
				t.Errorf("leftovers %q, and no warning that they may outlive the job", left)
			}
		})
	}
}

// forgePy writes a report of its own into every pipe it can open for
// writing that another process holds, fd 3 (the init's report channel) of
// every process first, and then fails (exit 1).
const forgePy = `import glob, os
n = 0
for pid in sorted(glob.glob("/proc/[0-9]*")):
    try:
        fds = os.listdir(pid + "/fd")
    except Exception:
        continue
    for fd in sorted(fds, key=lambda f: f != "3"):
        path = pid + "/fd/" + fd
        try:
            if not os.readlink(path).startswith("pipe:"):
                continue
            f = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            os.write(f, b'{"exit":0}\n{"exit": garbage\n')
            os.close(f)
            n += 1
        except Exception:
            pass
print("wrote into", n, "pipes")
for i in range(3):
    print("step time_ms=1.0", flush=True)
raise SystemExit(1)
`

// TestForgedInitReport: a job that writes garbage into its init's report
// channel and exits 1 makes gpugate exit 2. Before issue 26 the init's
// fd 3 was the job's to open (/proc/PPID/fd/3, the init dumpable), and a
// report that did not parse was taken for none: the failed job passed.
func TestForgedInitReport(t *testing.T) {
	u := newUnpriv(t)
	work := filepath.Join(u.dir, "w")
	write(t, filepath.Join(work, "forge.py"), forgePy)
	write(t, filepath.Join(work, "perf.yaml"), "version: 1\nworkloads:\n  - name: forge\n    command: [\"/usr/bin/python3\", \"forge.py\"]\n    timeout: 1m\n    profiler: none\n    step_log: 'time_ms=([0-9.]+)'\n")
	u.own(t)
	for _, iso := range []string{"", "none"} {
		t.Run("isolation="+iso, func(t *testing.T) {
			code, stdout, stderr := u.run(t, work, []string{"HOME=" + u.dir, "GPUGATE_ISOLATION=" + iso}, "run", "-config", "perf.yaml", "-db", filepath.Join(u.dir, "b"+iso+".db"), "-out", filepath.Join(u.dir, "out"+iso))
			if code != 2 {
				t.Errorf("exit %d, want 2 (the job failed)\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stderr, "wrote into") {
				t.Errorf("the forger did not run:\n%s", stderr)
			}
		})
	}
}
