//go:build linux

package runner

import (
	"bytes"
	"context"
	"fmt"
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

// secretEnv is what gpugate holds in the tests below: a store URL with a
// password, and tokens.
var secretEnv = map[string]string{
	"GPUGATE_DB":           "postgres://writer:canary-db-secret@db.example:5432/perf",
	"GPUGATE_BASELINE_DB":  "postgres://writer:canary-db-secret2@db.example/perf",
	"PGPASSWORD":           "canary-pgpassword",
	"DATABASE_URL":         "postgres://writer:canary-database-url@db.example/perf",
	"GITHUB_TOKEN":         "canary-github-token",
	"GPUGATE_GITHUB_TOKEN": "canary-gpugate-token",
}

// dumpScript prints the job's environment, then the environ and cmdline of
// every ancestor (walking PPid to the top) and of every process it can see.
const dumpScript = `env
pid=$$
while [ -n "$pid" ] && [ "$pid" -gt 0 ]; do
  echo "ancestor $pid"
  tr '\0' ' ' < /proc/$pid/environ 2>/dev/null; echo
  tr '\0' ' ' < /proc/$pid/cmdline 2>/dev/null; echo
  pid=$(sed -n 's/^PPid:[[:space:]]*//p' /proc/$pid/status)
done
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\0' ' ' < $f 2>/dev/null; echo; done
echo "visible $(ls -d /proc/[0-9]* | wc -l)"
echo dumped`

// leaks runs dumpScript as a job and returns the canaries it found, the
// ancestors it walked, and how many processes it saw.
func leaks(t *testing.T) (found, ancestors []string, visible int) {
	t.Helper()
	_, _, log, err := runJob(t, Job{Args: []string{"/bin/sh", "-c", dumpScript}, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !bytes.Contains(log, []byte("\ndumped\n")) {
		t.Fatalf("the dump did not finish: %s", log)
	}
	for k, v := range secretEnv {
		if bytes.Contains(log, []byte(v[strings.LastIndex(v, "canary"):][:12])) && bytes.Contains(log, []byte(v)) {
			found = append(found, k)
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^ancestor (\d+)$`).FindAllSubmatch(log, -1) {
		ancestors = append(ancestors, string(m[1]))
	}
	if m := regexp.MustCompile(`(?m)^visible (\d+)$`).FindSubmatch(log); m != nil {
		visible, _ = strconv.Atoi(string(m[1]))
	}
	return found, ancestors, visible
}

// TestSecretsOutOfReach: with a store password and tokens in gpugate's
// environment, a job read them from its own environment (GPUGATE_DB and
// PGPASSWORD were not denied) and from gpugate's /proc/PID/environ. In a
// PID namespace the job sees only itself and the init; its ancestors'
// /proc entries are not there at all.
func TestSecretsOutOfReach(t *testing.T) {
	for k, v := range secretEnv {
		t.Setenv(k, v)
	}
	isolate(t, "namespace")
	found, ancestors, visible := leaks(t)
	if len(found) > 0 {
		t.Errorf("the job found %v", found)
	}
	// The walk ends at the init, PID 1 of the namespace, whose parent is
	// outside: 0. The job's shell and the init are all there is (the
	// processes of the dump itself come and go).
	if len(ancestors) != 2 || ancestors[len(ancestors)-1] != "1" || visible > 6 {
		t.Errorf("ancestors %v, %d processes visible: not a namespace of its own", ancestors, visible)
	}
}

// TestSecretsNoNamespace: without a namespace, what keeps gpugate's
// environment from the job is PR_SET_DUMPABLE 0, which binds a process of
// the same user, not root: the test runs gpugate (this test binary, again)
// as nobody. The job's ancestors above gpugate are out of gpugate's hands
// (here root's, so unreadable to nobody; on a runner the step's shell, which
// holds the job-level env: of the workflow — docs/security.md).
func TestSecretsNoNamespace(t *testing.T) {
	if os.Getenv("GPUGATE_TEST_AS_NOBODY") == "1" {
		for _, iso := range []string{"none", "namespace"} {
			t.Run(iso, func(t *testing.T) {
				isolate(t, iso)
				found, ancestors, _ := leaks(t)
				if len(found) > 0 {
					t.Errorf("the job found %v", found)
				}
				if iso == "none" && !contains(ancestors, strconv.Itoa(os.Getpid())) {
					t.Errorf("the walk %v missed gpugate (%d): the test proves nothing", ancestors, os.Getpid())
				}
			})
		}
		return
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to run gpugate as nobody")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "gpugate-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "runner.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", "^TestSecretsNoNamespace$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = []string{"GPUGATE_TEST_AS_NOBODY=1", "PATH=/usr/bin:/bin", "HOME=" + dir, "TMPDIR=/tmp", "CI=" + os.Getenv("CI")}
	for k, v := range secretEnv {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	t.Logf("as nobody:\n%s", out)
	if err != nil {
		t.Fatalf("as nobody: %v", err)
	}
	if !bytes.Contains(out, []byte("--- PASS: TestSecretsNoNamespace/none")) {
		t.Errorf("the no-namespace case did not run")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestPeakExcludesGpugate: the job's first process inherited gpugate's
// high-water RSS at execve (Go starts children with CLONE_VM), so a
// 400 MB gpugate reported a 400 MB peak for `echo`.
func TestPeakExcludesGpugate(t *testing.T) {
	ballast := make([]byte, 400<<20)
	for i := range ballast {
		if i%4096 == 0 {
			ballast[i] = 1
		}
	}
	for _, iso := range []string{"none", "namespace"} {
		t.Run(iso, func(t *testing.T) {
			isolate(t, iso)
			res, _, _, err := runJob(t, Job{Args: []string{"/bin/echo", "hi"}})
			if err != nil {
				t.Fatal(err)
			}
			if res.MaxRSSBytes <= 0 || res.MaxRSSBytes > 100<<20 {
				t.Errorf("peak %d MB for echo, want a few MB (gpugate holds 400 MB)", res.MaxRSSBytes>>20)
			}
		})
	}
	ballast[len(ballast)-1] = 2
}

// TestInitExitStatus: the init reports the job's end as the job's own
// (exit status, signal), and a start failure as one.
func TestInitExitStatus(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"/bin/sh", "-c", "echo x; exit 3"}, "failed: exit status 3"},
		{[]string{"/bin/sh", "-c", "echo x; kill -9 $$"}, "failed: signal: killed"},
		{[]string{"/nonexistent/job"}, `could not start "/nonexistent/job"`},
		{[]string{"no-such-command-gpugate"}, `could not start "no-such-command-gpugate"`},
	} {
		for _, iso := range []string{"none", "namespace"} {
			t.Run(iso, func(t *testing.T) {
				isolate(t, iso)
				_, out, _, err := runJob(t, Job{Args: c.args})
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%q: %v, want %q", c.args, err, c.want)
				}
				if !strings.Contains(out, "gpugate: isolation: ") && !strings.Contains(c.want, "could not start") {
					t.Errorf("the log does not say which isolation: %q", out)
				}
			})
		}
	}
}

// TestFingerprintProbeDenied: the fingerprint runs the job's Python, which
// imports what the pull request put beside it (here a torch.py), with
// gpugate's whole environment.
func TestFingerprintProbeDenied(t *testing.T) {
	py := python(t)
	for k, v := range secretEnv {
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	dump := filepath.Join(t.TempDir(), "env")
	os.WriteFile(filepath.Join(dir, "torch.py"), []byte("import os\nopen("+strconv.Quote(dump)+", 'w').write(repr(dict(os.environ)))\n__version__ = 'planted'\nclass version:\n    cuda = None\n"), 0o644)
	t.Chdir(dir)
	f := TakeFingerprint(context.Background(), py, "", None)
	env, err := os.ReadFile(dump)
	if err != nil {
		t.Fatalf("the planted torch.py did not run (fingerprint %+v): %v", f, err)
	}
	for k, v := range secretEnv {
		if bytes.Contains(env, []byte(v)) {
			t.Errorf("the job's Python, probed for the fingerprint, saw %s", k)
		}
	}
}

// TestCgroupKillsLeftovers: without a namespace, as root (who can make a
// cgroup v2 folder), a grandchild in a process group of its own, with an
// empty environment (no GPUGATE_JOB_TOKEN), outlives a job that killed its
// init — the leftover sweep recognises neither — unless the job's cgroup
// is killed.
func TestCgroupKillsLeftovers(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to make a cgroup (or a delegated cgroup); the unprivileged case is TestLeftoversGone in cmd/gpugate")
	}
	if _, err := cgroup2Mount(); err != nil {
		t.Skipf("no cgroup v2 here: %v", err)
	}
	isolate(t, "none")
	marker := strconv.Itoa(5000+os.Getpid()%1000) + ".75"
	script := `
import os, signal, time
if os.fork() == 0:
    os.setpgid(0, 0)
    if os.fork() == 0:
        os.execve("/bin/sleep", ["sleep", "` + marker + `"], {})
    os._exit(0)
time.sleep(0.3)
print("left one", flush=True)
os.kill(os.getppid(), signal.SIGKILL)
`
	res, _, _, err := runJob(t, Job{Args: []string{python(t), "-c", script}, Timeout: 30 * time.Second})
	if res == nil {
		t.Fatalf("Run: %v", err)
	}
	if !strings.Contains(res.Isolation, "a cgroup of its own") {
		t.Fatalf("isolation %q: no cgroup made as root", res.Isolation)
	}
	if err == nil || !strings.Contains(err.Error(), "left no report") {
		t.Errorf("a job that killed its init: %v, want the init's missing report", err)
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		b, _ := os.ReadFile(d)
		if strings.Contains(string(b), marker) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("the grandchild (%s) outlived the job: %q", filepath.Dir(d), b)
		}
	}
}

// TestFingerprintProbeIsolated: the fingerprint's probe of the job's
// Python imports what the pull request put beside it (a torch.py); it runs
// in namespaces like the job's: it sees no process but its own, and a
// credential file (SetHidden) is empty to it. Its output still reaches
// the fingerprint.
func TestFingerprintProbeIsolated(t *testing.T) {
	py := python(t)
	isolate(t, "namespace")
	secret := filepath.Join(t.TempDir(), "pgpass")
	os.WriteFile(secret, []byte("canary-probe-pgpass"), 0o600)
	SetHidden([]string{secret})
	defer SetHidden(nil)
	dir := t.TempDir()
	dump := filepath.Join(t.TempDir(), "seen")
	planted := "import os\nseen = [p for p in os.listdir('/proc') if p.isdigit()]\n" +
		"open(" + strconv.Quote(dump) + ", 'w').write('%d %r' % (len(seen), open(" + strconv.Quote(secret) + ").read()))\n" +
		"__version__ = 'planted'\nclass version:\n    cuda = None\n"
	os.WriteFile(filepath.Join(dir, "torch.py"), []byte(planted), 0o644)
	t.Chdir(dir)
	f := TakeFingerprint(context.Background(), py, "", None)
	seen, err := os.ReadFile(dump)
	if err != nil {
		t.Fatalf("the planted torch.py did not run (fingerprint %+v): %v", f, err)
	}
	if bytes.Contains(seen, []byte("canary")) {
		t.Errorf("the probe read the covered file: %s", seen)
	}
	if n, _ := strconv.Atoi(strings.Fields(string(seen))[0]); n > 3 {
		t.Errorf("the probe saw %d processes: not a namespace of its own (%s)", n, seen)
	}
	if !strings.HasPrefix(f.Python, "3.") {
		t.Errorf("fingerprint python %q, want the probe's answer through the namespace", f.Python)
	}
}

// TestNoInheritedDescriptors: a descriptor gpugate inherited open (not
// close-on-exec; whoever started gpugate may leak one) does not reach
// the job, in any isolation: it passed through the spawner and the init
// into the job, where a folder or file of the host's would reach past
// the covers, the private /tmp and the uid mode's uid (issue 34's
// review: the job read a root 0600 file through fd 9).
func TestNoInheritedDescriptors(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "inherited-secret")
	if err := os.WriteFile(secret, []byte("canary-inherited\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(secret, syscall.O_RDONLY, 0) // no O_CLOEXEC: inherited by what this process starts
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	for _, iso := range []string{"none", "namespace"} {
		t.Run(iso, func(t *testing.T) {
			isolate(t, iso)
			var log bytes.Buffer
			_, err := Run(context.Background(), Job{Name: "fds", Args: []string{"sh", "-c", fmt.Sprintf("ls -l /proc/self/fd/; cat /proc/self/fd/%d 2>&1; echo done", fd)},
				Dir: t.TempDir(), Out: t.TempDir(), Profiler: None, Timeout: time.Minute, Output: &log, Plain: true})
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, log.String())
			}
			if strings.Contains(log.String(), "canary-inherited") || strings.Contains(log.String(), "inherited-secret") {
				t.Errorf("the job reached gpugate's inherited descriptor %d:\n%s", fd, log.String())
			}
		})
	}
}

// TestNetworkNoneOtherNamespaceSocket: with network: none a Unix socket
// under /run that was bound in another network namespace (a container's
// mounted /var/run/docker.sock: in no /proc/net/unix gpugate can read)
// is out of the job's reach, and so is the user's runtime folder in any
// namespaced run (issue 34's review: the job got the server's greeting).
func TestNetworkNoneOtherNamespaceSocket(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("binds a socket under /run in a network namespace of its own: needs root")
	}
	isolate(t, "namespace")
	sock := fmt.Sprintf("/run/gpugate-test-%d.sock", os.Getpid())
	defer os.Remove(sock)
	srv := exec.Command("unshare", "-n", "python3", "-c", `import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(4)
print("listening", flush=True)
while True:
    c, _ = s.accept(); c.sendall(b"greeting-from-outside\n"); c.close()`, sock)
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Skipf("unshare -n: %v", err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	if _, err := out.Read(make([]byte, 16)); err != nil {
		t.Fatalf("the server did not start: %v", err)
	}
	probe := `import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1]); print("reached:", s.recv(64))
except OSError as e:
    print("refused:", e)`
	for _, network := range []string{NetHost, NetNone} {
		var log bytes.Buffer
		_, err := Run(context.Background(), Job{Name: "sock", Args: []string{"python3", "-c", probe, sock}, Network: network,
			Dir: t.TempDir(), Out: t.TempDir(), Profiler: None, Timeout: time.Minute, Output: &log, Plain: true})
		if err != nil {
			t.Fatalf("network %s: Run: %v\n%s", network, err, log.String())
		}
		reached := strings.Contains(log.String(), "greeting-from-outside")
		if network == NetHost && !reached {
			t.Fatalf("network host: the job did not reach the socket (the test's premise):\n%s", log.String())
		}
		if network == NetNone && reached {
			t.Errorf("network none: the job reached a socket bound in another network namespace:\n%s", log.String())
		}
	}
}

// TestStoreReadOnlyForJob: the SQLite store gpugate picks the baseline
// from after the job is read-only to the job in its namespace (issue
// 34's review: the job, gpugate's user, could insert slow baseline runs
// and pass its own regression); where the job's own folder lies in the
// store's, the isolation line says the job could rewrite it.
func TestStoreReadOnlyForJob(t *testing.T) {
	isolate(t, "namespace")
	// Not under /tmp: the private /tmp would hide it anyway.
	base, err := os.MkdirTemp("/var/lib", "gpugate-store-test-")
	if err != nil {
		t.Skipf("no folder outside /tmp: %v", err)
	}
	defer os.RemoveAll(base)
	os.Chmod(base, 0o755)
	db := filepath.Join(base, "baseline.db")
	os.WriteFile(db, []byte("store"), 0o644)
	SetStore(db)
	defer SetStore("")
	var log bytes.Buffer
	script := `echo forged >> ` + db + ` && echo WROTE-STORE; touch ` + db + `-journal && echo PLANTED; echo done`
	res, err := Run(context.Background(), Job{Name: "store", Args: []string{"sh", "-c", script}, Dir: t.TempDir(), Out: t.TempDir(), Profiler: None, Timeout: time.Minute, Output: &log, Plain: true})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, log.String())
	}
	if b, _ := os.ReadFile(db); string(b) != "store" || strings.Contains(log.String(), "WROTE-STORE") || strings.Contains(log.String(), "PLANTED") {
		t.Errorf("the job wrote the store's folder (store now %q):\n%s", b, log.String())
	}
	if !strings.Contains(res.Isolation, "read-only: "+base) {
		t.Errorf("isolation %q does not name the store's folder read-only", res.Isolation)
	}
	// The job's folder inside the store's: not read-only, and said.
	work := filepath.Join(base, "work")
	os.Mkdir(work, 0o755)
	res, err = Run(context.Background(), Job{Name: "store", Args: []string{"sh", "-c", "echo done"}, Dir: work, Out: t.TempDir(), Profiler: None, Timeout: time.Minute, Output: &log, Plain: true})
	if err != nil {
		t.Fatalf("Run in the store's folder: %v\n%s", err, log.String())
	}
	if !strings.Contains(res.Isolation, "the job could rewrite the store") {
		t.Errorf("isolation %q does not say the job could rewrite the store", res.Isolation)
	}
}

// TestRunnerFolderReadOnly: in its namespace the job cannot rewrite the
// Actions runner's own folder (its externals, the actions the workflow's
// later steps run), while the workspace, RUNNER_TEMP and its run folder
// stay writable (issue 34's review: the job, the runner's user, could
// plant code in _work/_actions for the steps after it).
func TestRunnerFolderReadOnly(t *testing.T) {
	isolate(t, "namespace")
	root, err := os.MkdirTemp("/var/lib", "gpugate-runner-test-") // outside the private /tmp
	if err != nil {
		t.Skipf("no folder outside /tmp: %v", err)
	}
	defer os.RemoveAll(root)
	os.Chmod(root, 0o755)
	ws := filepath.Join(root, "_work", "repo")
	temp := filepath.Join(root, "_work", "_temp")
	action := filepath.Join(root, "_work", "_actions", "actions", "upload-artifact", "v4", "dist", "index.js")
	node := filepath.Join(root, "externals", "node20", "bin", "node")
	out := filepath.Join(ws, ".gpugate", "run1")
	for _, d := range []string{filepath.Join(ws, "repo"), temp, filepath.Dir(action), filepath.Dir(node), out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(action, []byte("upload\n"), 0o644)
	os.WriteFile(node, []byte("node\n"), 0o755)
	t.Setenv("RUNNER_WORKSPACE", ws)
	t.Setenv("RUNNER_TEMP", temp)
	job := filepath.Join(ws, "repo")
	script := `echo evil >> ` + action + ` && echo WROTE-ACTION
echo evil >> ` + node + ` && echo WROTE-NODE
touch ` + filepath.Join(root, "_work", "_actions", "new") + ` && echo PLANTED
echo w > ` + filepath.Join(job, "ok") + ` && echo wrote-workspace
echo w > ` + filepath.Join(temp, "ok") + ` && echo wrote-temp
echo w > ` + filepath.Join(out, "ok") + ` && echo wrote-out`
	var log bytes.Buffer
	res, err := Run(context.Background(), Job{Name: "runner", Args: []string{"sh", "-c", script}, Dir: job, Out: out, Profiler: None, Timeout: time.Minute, Output: &log, Plain: true})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, log.String())
	}
	l := log.String()
	for _, bad := range []string{"WROTE-ACTION", "WROTE-NODE", "PLANTED"} {
		if strings.Contains(l, bad) {
			t.Errorf("the job could write the runner's folder: %s\n%s", bad, l)
		}
	}
	for _, want := range []string{"wrote-workspace", "wrote-temp", "wrote-out"} {
		if !strings.Contains(l, want) {
			t.Errorf("the job could not write where it must: %s missing\n%s", want, l)
		}
	}
	if b, _ := os.ReadFile(action); string(b) != "upload\n" {
		t.Errorf("the action is now %q", b)
	}
	if !strings.Contains(res.Isolation, "the runner's folder read-only") {
		t.Errorf("isolation %q does not say the runner's folder is read-only", res.Isolation)
	}
}
