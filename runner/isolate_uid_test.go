//go:build linux

package runner

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestUIDMode: gpugate as root, in the uid mode (forced here, where
// namespaces work; in a default container it is chosen, see
// examples/containers): the job runs as the job's uid, with no capability,
// no_new_privs and no supplementary group; it cannot read a root process's
// environment nor root's 0600 file, nor signal root's process; it writes
// its artifacts, HOME and TMPDIR; and a setsid, double-forked,
// empty-environment grandchild is gone when Run returns.
func TestUIDMode(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the uid mode needs root")
	}
	t.Setenv(isolationEnv, "uid")
	const uid = 59990
	SetJobUser(uid, uid)
	defer SetJobUser(DefaultJobUID, DefaultJobUID)
	if who := uidInUse(uid); who != "" {
		t.Fatalf("uid %d in use before the test: %s", uid, who)
	}
	secretDir := t.TempDir()
	os.Chmod(secretDir, 0o755)
	secretFile := filepath.Join(secretDir, ".credentials")
	if err := os.WriteFile(secretFile, []byte("canary-credentials-file"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A credential file any user may read: the uid mode cannot hide it,
	// and says so.
	openFile := filepath.Join(secretDir, ".runner")
	if err := os.WriteFile(openFile, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	SetHidden([]string{secretFile, openFile})
	defer SetHidden(nil)
	standin := exec.Command("sleep", "120")
	standin.Env = []string{"RUNNER_TOKEN=canary-standin-token"}
	if err := standin.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { standin.Process.Kill(); standin.Wait() }()
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755) // t.TempDir's parent: 0700
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	script := `id -u; id -g; id -G
grep -E '^(CapEff|CapPrm|NoNewPrivs):' /proc/self/status
cat ` + secretFile + ` 2>/dev/null && echo LEAK-FILE
tr '\0' '\n' < /proc/` + strconv.Itoa(standin.Process.Pid) + `/environ 2>/dev/null | grep canary && echo LEAK-ENV
kill -0 ` + strconv.Itoa(standin.Process.Pid) + ` 2>/dev/null && echo CAN-SIGNAL
echo trace > "$OUTDIR/trace.json" && echo wrote-out
echo h > "$HOME/h" && echo wrote-home
echo t > "$TMPDIR/t" && echo wrote-tmp
echo "home=$HOME"
ln -s /etc/hostname "$OUTDIR/analysis.json" && echo planted-link
mkfifo "$OUTDIR/fifo"
mkdir "$OUTDIR/open" && chmod 06777 "$OUTDIR/open" "$OUTDIR" && echo opened-folders
setsid sh -c 'env -i sh -c "sleep 301 & exec sleep 302" &' &
sleep 0.3
echo done`
	res, output, log, err := runJob(t, Job{Args: []string{"/bin/sh", "-c", script}, Dir: dir, Out: out, Env: map[string]string{"OUTDIR": out}, KillGrace: time.Second})
	if err != nil {
		t.Fatalf("%v\n%s", err, output)
	}
	l := string(log)
	t.Logf("isolation: %s\nlog:\n%s", res.Isolation, l)
	if !strings.Contains(res.Isolation, "the job's own uid 59990") {
		t.Errorf("isolation %q does not name the uid mode", res.Isolation)
	}
	for _, want := range []string{"59990\n59990\n59990\n", "CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "NoNewPrivs:\t1", "wrote-out", "wrote-home", "wrote-tmp", "done"} {
		if !strings.Contains(l, want) {
			t.Errorf("the job's log lacks %q", want)
		}
	}
	for _, bad := range []string{"LEAK", "canary", "CAN-SIGNAL"} {
		if strings.Contains(l, bad) {
			t.Errorf("the job's log has %q", bad)
		}
	}
	if who := uidInUse(uid); who != "" {
		t.Errorf("a process of the job's uid outlived it: %s", who)
	}
	if len(res.Killed) < 2 {
		t.Errorf("killed %q, want the two sleeps", res.Killed)
	}
	if w := strings.Join(res.IsolationWarnings, "\n"); !strings.Contains(w, "can read files that hold credentials") || !strings.Contains(w, openFile) || strings.Contains(w, secretFile) {
		t.Errorf("warnings %q: want %s named as readable, and not %s", w, openFile, secretFile)
	}
	if fi, err := os.Stat(out); err != nil || fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("the artifacts folder was not given back to root: %v", err)
	}
	// What the job wrote is root's again; the link it planted under a
	// name gpugate writes after the job, and its FIFO, are gone.
	if fi, err := os.Lstat(filepath.Join(out, "trace.json")); err != nil || fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("the job's trace was not given back to root: %v", err)
	}
	// No folder of root's stays open to others (review: the job's chmod
	// 0777 and a 06777 folder survived the change of owner).
	for _, p := range []string{out, filepath.Join(out, "open")} {
		if fi, err := os.Stat(p); err != nil || fi.Mode()&(fs.ModePerm|fs.ModeSetgid|fs.ModeSetuid|fs.ModeSticky) != 0o755 {
			t.Errorf("%s after the job: %v %v, want drwxr-xr-x", p, fi.Mode(), err)
		}
	}
	if !strings.Contains(l, "opened-folders") {
		t.Errorf("the job could not open its folders (the test's premise)")
	}
	for _, p := range []string{"analysis.json", "fifo"} {
		if _, err := os.Lstat(filepath.Join(out, p)); err == nil {
			t.Errorf("the job's %s is still in the artifacts folder", p)
		}
	}
	if !strings.Contains(output, "removed 2 entries the job left in the artifacts folder") || !strings.Contains(l, "planted-link") {
		t.Errorf("the removal is not said:\n%s", output)
	}
	for _, line := range strings.Split(l, "\n") {
		if h, ok := strings.CutPrefix(line, "home="); ok {
			if _, err := os.Stat(h); err == nil {
				t.Errorf("the job's HOME %s is still there", h)
			}
		}
	}
}

// TestSweepUID: the sweep kills every process of the uid, wherever it is
// (here started by the test, in sessions of their own, not below any
// init: what an init killed before its sweep would leave), spares root's,
// and leaves gpugate itself root (the sweep's thread is never the main
// thread, which Go keeps: once gpugate stayed the uid's in
// /proc/PID/status and refused its next job).
func TestSweepUID(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the uid mode needs root")
	}
	const uid = 59992
	for round := range 10 {
		var ps []*exec.Cmd
		for range 3 {
			c := exec.Command("sh", "-c", "sleep 300 & exec sleep 301")
			c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: &syscall.Credential{Uid: uid, Gid: uid}}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			ps = append(ps, c)
		}
		root := exec.Command("sleep", "60")
		if err := root.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		if err := sweepUID(uid); err != nil {
			t.Fatal(err)
		}
		for _, c := range ps {
			go c.Wait() // reaps the killed shells, which are the test's children
		}
		deadline := time.Now().Add(2 * time.Second)
		for uidInUse(uid) != "" && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond) // the orphaned sleeps, reaped by init
		}
		if who := uidInUse(uid); who != "" {
			t.Errorf("round %d: %s of uid %d outlived the sweep", round, who, uid)
			for who := uidInUse(uid); who != ""; who = uidInUse(uid) { // the processes this test started, by pid
				pid, _ := strconv.Atoi(strings.Fields(who)[0])
				syscall.Kill(pid, syscall.SIGKILL)
				time.Sleep(10 * time.Millisecond)
			}
			return
		}
		if !alive(root.Process.Pid) {
			t.Errorf("round %d: root's process was killed", round)
		}
		root.Process.Kill()
		root.Wait()
		b, _ := os.ReadFile("/proc/self/status")
		if f := strings.Fields(statusField(string(b), "Uid")); len(f) != 4 || f[0] != "0" || f[1] != "0" {
			t.Fatalf("round %d: gpugate's main thread is no longer root's: Uid %v", round, f)
		}
	}
}
