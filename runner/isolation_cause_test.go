//go:build linux

package runner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFindCauses: each cause is found from what /proc says about the
// process, as a default container, Ubuntu 24.04 and a plain host show it.
func TestFindCauses(t *testing.T) {
	container := map[string]string{
		"/proc/self/status": "Name:\tgpugate\nUid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\nSeccomp:\t2\n",
		"/proc/self/mounts": "proc /proc proc rw 0 0\nproc /proc/bus proc ro 0 0\ntmpfs /proc/kcore tmpfs rw 0 0\nbinfmt_misc /proc/sys/fs/binfmt_misc binfmt_misc rw 0 0\n",
	}
	rootContainer := map[string]string{
		"/proc/self/status": "Uid:\t0\t0\t0\t0\nCapEff:\t00000000a80425fb\nSeccomp:\t2\n",
	}
	ubuntu := map[string]string{
		"/proc/self/status": "Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\nSeccomp:\t0\n",
		"/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1\n",
		"/proc/self/attr/apparmor/current":                       "unconfined\n",
	}
	host := map[string]string{
		"/proc/self/status": "Uid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\nSeccomp:\t0\n",
		"/proc/self/mounts": "proc /proc proc rw 0 0\nbinfmt_misc /proc/sys/fs/binfmt_misc binfmt_misc rw 0 0\n",
	}
	for _, c := range []struct {
		name, probe string
		files       map[string]string
		want        []string
	}{
		{"user in a default container", "fork/exec /usr/local/bin/gpugate: operation not permitted", container, []string{"seccomp", "masked /proc"}},
		{"seccomp allowed, /proc masked", "exit status 1 mount /proc: operation not permitted", container, []string{"masked /proc"}},
		{"root in a default container", "fork/exec: operation not permitted", rootContainer, []string{"seccomp", "no CAP_SYS_ADMIN"}},
		{"Ubuntu 24.04", "exit status 1 mount /proc: operation not permitted", ubuntu, []string{"AppArmor"}},
		{"a plain host", "something else", host, nil},
	} {
		got := findCauses(c.probe, func(p string) string { return c.files[p] })
		var names []string
		for _, g := range got {
			names = append(names, g.name)
		}
		if strings.Join(names, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: causes %q, want %q", c.name, names, c.want)
		}
		for _, g := range got {
			if g.name == "masked /proc" && (!strings.Contains(g.text, "/proc/kcore") || strings.Contains(g.text, "binfmt_misc") || !strings.Contains(g.text, "systempaths=unconfined")) {
				t.Errorf("%s: %q", c.name, g.text)
			}
		}
	}
}

// TestRootWithoutSysAdmin: root without CAP_SYS_ADMIN in its effective
// set (a container's root; here setpriv drops it from the bounding set)
// takes the user-namespace path, as an ordinary user does, and gets it
// where the kernel allows user namespaces. Before issue 38 it tried only
// the root path (clone of PID and mount namespaces, which needs
// CAP_SYS_ADMIN) and ran with none. And the job is the job's uid on the
// host too, not host root mapped to 59999 inside (as it was): it can
// neither read nor append to root's 0600 file nor write /proc/sys, and
// from the host its init and the file it makes are uid 59999's. Where
// the uid may not execute gpugate's binary, the uid mode is chosen.
func TestRootWithoutSysAdmin(t *testing.T) {
	if os.Getenv("GPUGATE_TEST_NO_SYS_ADMIN") == "1" {
		if hasCap(0x15) { // CAP_SYS_ADMIN
			t.Fatal("CAP_SYS_ADMIN still effective")
		}
		i := chooseIsolation()
		t.Logf("isolation: %s", i.what)
		if i.mode != modeNamespaces || !i.user || i.uid == 0 {
			t.Fatalf("root without CAP_SYS_ADMIN: mode %v user %v uid %d (%s), want a user namespace with the job not root", i.mode, i.user, i.uid, i.what)
		}
		// Folders the job's uid can reach (t.TempDir's are 0700).
		reachableDir := func() string {
			d := t.TempDir()
			os.Chmod(d, 0o755)
			os.Chmod(filepath.Dir(d), 0o755)
			return d
		}
		dir, out := reachableDir(), reachableDir()
		secret := filepath.Join(dir, "root-secret")
		if err := os.WriteFile(secret, []byte("canary-root-secret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		script := `id -u; id -g; echo "groups=$(id -G)"
grep CapEff /proc/self/status
echo "procs=$(ls /proc | grep -c '^[0-9]')"
cat root-secret 2>/dev/null && echo LEAK-READ
echo appended 2>/dev/null >> root-secret && echo LEAK-APPEND
v=$(cat /proc/sys/fs/protected_symlinks) && echo "$v" 2>/dev/null > /proc/sys/fs/protected_symlinks && echo LEAK-SYSCTL
echo made > "$OUTDIR/made"
sleep 2`
		// From the host, while the job sleeps: the owner of the file it
		// made, and the ids of its init.
		var made, initIDs string
		polled := make(chan struct{})
		go func() {
			defer close(polled)
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				fi, err := os.Stat(filepath.Join(out, "made"))
				if err != nil {
					continue
				}
				st := fi.Sys().(*syscall.Stat_t)
				made = fmt.Sprintf("%d:%d", st.Uid, st.Gid)
				ents, _ := os.ReadDir("/proc")
				for _, e := range ents {
					cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
					if strings.HasPrefix(string(cmdline), readyArg0+"\x00") {
						st, _ := os.ReadFile("/proc/" + e.Name() + "/status")
						initIDs = "Uid " + statusField(string(st), "Uid") + " Gid " + statusField(string(st), "Gid") + " Groups " + statusField(string(st), "Groups")
					}
				}
				return
			}
		}()
		res, _, log, err := runJob(t, Job{Args: []string{"/bin/sh", "-c", script}, Dir: dir, Out: out, Env: map[string]string{"OUTDIR": out}})
		<-polled
		if err != nil {
			t.Fatal(err)
		}
		l := string(log)
		t.Logf("%s\n%s\nfrom the host: made %s, init %s", res.Isolation, l, made, initIDs)
		if !strings.Contains(l, "59999\n59999\ngroups=59999\n") || !strings.Contains(l, "CapEff:\t0000000000000000") {
			t.Errorf("the job is not uid and gid 59999, without supplementary group or capability, in its namespace:\n%s", l)
		}
		if strings.Contains(l, "LEAK") {
			t.Errorf("the job read or wrote what only root may:\n%s", l)
		}
		if b, _ := os.ReadFile(secret); string(b) != "canary-root-secret\n" {
			t.Errorf("root's 0600 file now holds %q", b)
		}
		if made != "59999:59999" {
			t.Errorf("the file the job made is %q's on the host, want 59999:59999", made)
		}
		if initIDs != "Uid 59999\t59999\t59999\t59999 Gid 59999\t59999\t59999\t59999 Groups " {
			t.Errorf("the job's init, from the host: %q, want uid and gid 59999 and no supplementary group", initIDs)
		}
		if !strings.Contains(res.Isolation, "the job is uid 59999 and gid 59999 on the host too") {
			t.Errorf("isolation %q does not say the job is uid 59999 on the host", res.Isolation)
		}
		if fi, err := os.Stat(out); err != nil || fi.Sys().(*syscall.Stat_t).Uid != 0 {
			t.Errorf("the run folder was not given back to root: %v", err)
		}
		// network: none: the init, uid 59999, also holds CAP_NET_ADMIN in
		// its namespace, to bring the loopback up.
		res, _, log, err = runJob(t, Job{Args: []string{"/bin/sh", "-c", "id -u; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"}, Dir: dir, Out: reachableDir(), Network: NetNone})
		if err != nil {
			t.Fatalf("network: none: %v", err)
		}
		if l := string(log); !strings.Contains(res.Isolation, "network: none") || l != "59999\nlo\n" {
			t.Errorf("network: none: isolation %q, log %q, want uid 59999 and only lo (the init brought it up, or the job would not have started)", res.Isolation, l)
		}
		// A binary the job's uid may not execute: the uid mode instead.
		self, _ := os.Executable()
		fi, err := os.Stat(self)
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(self, 0o700)
		defer os.Chmod(self, fi.Mode().Perm())
		probeMu.Lock()
		clear(probed)
		probeMu.Unlock()
		if i := chooseIsolation(); i.mode != modeUID || !strings.Contains(i.warn, "is not executable by the job's uid 59999") {
			t.Errorf("binary not executable by the job's uid: mode %v (%s), warning %q; want the uid mode, saying why", i.mode, i.what, i.warn)
		}
		return
	}
	if os.Getuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("needs setpriv (util-linux)")
	}
	if ns := chooseIsolation(); !ns.ns {
		t.Skipf("no namespace here even for root: %s", ns.what)
	}
	self, _ := os.Executable()
	cmd := exec.Command("setpriv", "--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin", self, "-test.run", "^TestRootWithoutSysAdmin$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "GPUGATE_TEST_NO_SYS_ADMIN=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	t.Logf("without CAP_SYS_ADMIN:\n%s", out)
	if err != nil {
		t.Fatal(err)
	}
}

// TestUIDInUse: a job is refused while a process of the job's uid runs:
// the sweep after it would kill that process too.
func TestUIDInUse(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the uid mode needs root")
	}
	t.Setenv(isolationEnv, "uid")
	const uid = 59991
	SetJobUser(uid, uid)
	defer SetJobUser(DefaultJobUID, DefaultJobUID)
	other := exec.Command("sleep", "60")
	other.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	_, _, _, err := runJob(t, Job{Args: []string{"/bin/echo", "ran"}})
	if err == nil || !strings.Contains(err.Error(), "uid 59991 is in use by process") {
		t.Fatalf("err %v, want the job refused", err)
	}
	if !alive(other.Process.Pid) {
		t.Errorf("the other process of the uid was killed")
	}
}
