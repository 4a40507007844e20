//go:build linux

package runner

// The isolation choice: one function (chooseIsolation) says how every job
// of this process is kept from what it must not reach, and why; run, the
// fingerprint's probe (isolatedArgv) and the tests read it. The modes, in
// order of preference:
//
//   - namespaces: the init is PID 1 of new PID and mount namespaces, in a
//     user namespace of its own unless gpugate is root with CAP_SYS_ADMIN
//     (isolate_linux.go). Root without CAP_SYS_ADMIN (root in a container)
//     takes the user-namespace path as an ordinary user does: in a user
//     namespace the init holds CAP_SYS_ADMIN even where root has none.
//   - uid: gpugate is root and no namespace can be made (a default Docker
//     container, whose seccomp profile refuses them): the job runs under a
//     dedicated unprivileged uid and gid of its own (isolate_uid_linux.go).
//   - none: neither works; the warning names what stopped the namespaces
//     (isolation_cause_linux.go) and points to docs/containers.md.
//
// A new mode is one more case of isoMode and of chooseIsolation's order.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpugate/gpugate/internal/escape"
)

// The isolation env var's values: "" (or "auto") chooses; "none",
// "namespaces" and "uid" force a mode (a forced mode that cannot be made
// fails the job, it is never silently weakened; "none" is always there).
const (
	isoAuto = "auto"
)

var (
	probeMu sync.Mutex
	probed  = map[string]isolation{} // by the env var's value
)

// chooseIsolation returns the mode every job of this process runs in,
// probed once: namespaces where they can be made, else the job's own uid
// where gpugate is root, else none, with why.
func chooseIsolation() isolation {
	switch v := os.Getenv(isolationEnv); v {
	case "none":
		return isolation{mode: modeNone, what: "none (" + isolationEnv + "=none): the job can see every process of its user", warn: "no isolation for the job (" + isolationEnv + "=none)"}
	case "", isoAuto, "namespaces", "uid":
	default:
		return isolation{mode: modeNone, what: "none (" + isolationEnv + "=" + escape.Terminal(v) + " is not none, namespaces, uid or auto)", warn: "no isolation for the job: " + isolationEnv + "=" + escape.Terminal(v) + " is not one of none, namespaces, uid, auto"}
	}
	want := os.Getenv(isolationEnv)
	probeMu.Lock()
	defer probeMu.Unlock()
	i, ok := probed[want]
	if !ok {
		i = decideIsolation(want)
		probed[want] = i
	}
	return i
}

// decideIsolation is chooseIsolation's order; want forces one mode.
func decideIsolation(want string) isolation {
	var nsErr error
	if want != "uid" {
		i, err := probeNamespaces()
		if err == nil {
			return i
		}
		nsErr = err
	}
	if os.Geteuid() == 0 && want != "namespaces" {
		// Root: the job's own uid.
		u, err := jobUser()
		if err != nil {
			return isolation{mode: modeNone, what: "none (" + escape.Terminal(err.Error()) + ")", warn: "no isolation for the job: " + err.Error()}
		}
		i := isolation{mode: modeUID, uid: u.uid, gid: u.gid,
			what: fmt.Sprintf("the job's own uid %d and gid %d (no supplementary group, no capability, no_new_privs; private HOME and TMPDIR; every process of the uid killed after it)", u.uid, u.gid)}
		if nsErr != nil {
			i.warn = "no namespace for the job (" + causeText(nsErr) + "); it runs as uid " + fmt.Sprint(u.uid) + " instead, which sees every process of the machine but can read no other user's process environment or private file: " + docsContainers
		}
		return i
	}
	if nsErr == nil {
		nsErr = fmt.Errorf("%s=uid needs gpugate to run as root", isolationEnv)
	}
	return isolation{mode: modeNone, what: "none (" + shortWhy(nsErr) + "): the job can see every process of its user",
		warn: "no isolation for the job: " + causeText(nsErr) + ": " + docsContainers}
}

// docsContainers is where the warnings send the reader.
const docsContainers = "see docs/containers.md for the settings that let gpugate isolate the job here"

// probeNamespaces starts a spawner and an init that set the namespaces up
// and exit: does it work here? An error says what failed.
func probeNamespaces() (isolation, error) {
	// The probe covers a file that exists, the binary's path (a cover of
	// the magic link /proc/self/exe itself fails); it runs the binary
	// itself (selfExe), never a path the job could replace.
	self, err := os.Readlink(selfExe)
	if err != nil {
		return isolation{what: "none (" + err.Error() + "): the job can see every process of its user"}, err
	}
	user := os.Getuid() != 0 || !hasCap(unix.CAP_SYS_ADMIN)
	i := isolation{mode: modeNamespaces, ns: true, user: user}
	if user && os.Getuid() == 0 {
		// Root without CAP_SYS_ADMIN: the init and the job run as the
		// job's uid and gid, on the host too (spawn): not root there, nor
		// uid 0 in the namespace, which execve would give every
		// capability there (enough to undo the covers). Their run folder
		// is handed to the uid as in the uid mode (isolateJob). The init
		// is gpugate's binary, executed as the uid: where the uid may not
		// execute it, the uid mode is chosen instead.
		u, err := jobUser()
		if err != nil {
			return isolation{what: "none (" + escape.Terminal(err.Error()) + ")"}, err
		}
		if err := executableBy(self, u); err != nil {
			return isolation{what: "none (" + escape.Terminal(err.Error()) + ")"}, err
		}
		i.uid, i.gid = u.uid, u.gid
	}
	spec, _ := json.Marshal(initSpec{NS: true, User: user, Probe: true, Hide: []string{self}, InUID: i.uid, InGID: i.gid, Tmp: true})
	cmd := exec.Command(selfExe)
	cmd.Args = []string{spawnArg0, string(spec)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = []string{}
	// In /, which the private /tmp leaves: gpugate's own folder may lie
	// below /tmp, and the probe keeps no folder there (a job keeps its own).
	cmd.Dir = "/"
	out, err := runBounded(cmd, 10*time.Second)
	if err != nil {
		why := strings.TrimSpace(fmt.Sprintf("%v %s", err, out))
		e := &nsError{probe: why, causes: namespaceCauses(why)}
		return isolation{what: "none (" + e.short() + "): the job can see every process of its user"}, e
	}
	switch {
	case user && os.Getuid() == 0:
		i.what = fmt.Sprintf("user, PID and mount namespace with a fresh /proc and /dev/shm (the job sees only its own processes; gpugate runs as root without CAP_SYS_ADMIN, and the job is uid %d and gid %d on the host too, without supplementary group or capability)", i.uid, i.gid)
	case user:
		i.what = "user, PID and mount namespace with a fresh /proc and /dev/shm (the job sees only its own processes)"
	default:
		i.what = "PID and mount namespace with a fresh /proc and /dev/shm (the job sees only its own processes; gpugate runs as root, and so does the job: it could undo the covers, docs/security.md)"
	}
	return i, nil
}

// nsError is a failed probe: what it printed, and the causes found.
type nsError struct {
	probe  string
	causes []cause
}

func (e *nsError) Error() string { return "no namespace could be made: " + e.probe }

// short names the causes, for the isolation line.
func (e *nsError) short() string {
	var names []string
	for _, c := range e.causes {
		if !slices.Contains(names, c.name) {
			names = append(names, c.name)
		}
	}
	if len(names) == 0 {
		return "no namespace could be made"
	}
	return "no namespace: " + strings.Join(names, ", ")
}

// causeText is why no namespace could be made, causes first, then what
// the probe printed.
func causeText(err error) string {
	e, ok := err.(*nsError)
	if !ok {
		return err.Error()
	}
	s := "no namespace could be made"
	for i, c := range e.causes {
		if i == 0 {
			s += ": "
		} else {
			s += "; "
		}
		s += c.text
	}
	return s + " (" + escape.Terminal(e.probe) + ")"
}

// shortWhy is the isolation line's reason for err.
func shortWhy(err error) string {
	if e, ok := err.(*nsError); ok {
		return e.short()
	}
	return escape.Terminal(err.Error())
}

// executableBy says why u may not execute the file path by its mode bits
// (the check execve makes, as u, of gpugate's binary), nil if it may.
func executableBy(path string, u jobIdentity) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	st := fi.Sys().(*syscall.Stat_t)
	m := fi.Mode().Perm()
	switch {
	case int(st.Uid) == u.uid:
		m &= 0o100
	case int(st.Gid) == u.gid:
		m &= 0o010
	default:
		m &= 0o001
	}
	if m == 0 {
		return fmt.Errorf("gpugate's binary %s is not executable by the job's uid %d (mode %04o, owned by %d:%d): chmod o+x it to give the job a namespace", path, u.uid, fi.Mode().Perm(), st.Uid, st.Gid)
	}
	return nil
}

// hasCap reports whether capability c is in this process's effective set.
func hasCap(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) != nil {
		return false
	}
	return data[c/32].Effective&(1<<(uint(c)%32)) != 0
}

// spec is what the init is told for a job of this mode, hide the files to
// cover (in a mount namespace).
func (i isolation) spec(hide []string) initSpec {
	switch i.mode {
	case modeNamespaces:
		return initSpec{NS: true, User: i.user, Hide: hide, InUID: i.uid, InGID: i.gid}
	case modeUID:
		return initSpec{UID: i.uid, GID: i.gid}
	}
	return initSpec{}
}
