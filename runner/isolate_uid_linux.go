//go:build linux

package runner

// The uid mode (issue 38): where gpugate is root and no namespace can be
// made (root in a default Docker container: its seccomp profile refuses
// them, and root there has no CAP_SYS_ADMIN), the job runs under an
// identity of its own, a dedicated unprivileged uid and gid (-job-uid;
// DefaultJobUID by default). The init, root, starts the job with
//
//   - that uid and gid, no supplementary group, and so no capability (the
//     kernel clears them all when every uid of a process leaves 0);
//   - no_new_privs, so that no setuid program or file capability gives
//     any back;
//   - a private HOME and TMPDIR of the uid's own (0700), and the run's
//     artifacts folder handed to the uid for the job's time, so that
//     traces and step files still arrive.
//
// The job then cannot read root's 0600 files (the runner's .credentials,
// the -db-file), cannot open another user's /proc/PID/environ (the
// runner's, the step shell's, gpugate's), and can neither ptrace nor
// signal them. After the job's first process exits, the init kills every
// process of the uid with kill(-1, SIGKILL) from a thread that has the
// uid (sweepUID): whatever the job left (setsid, double fork, an empty
// environment) ends, and kill(-1) is one pass of the kernel with forks
// held off, so a fork loop cannot outrun it. That is why the uid must be
// the job's alone: run refuses a job while a process of the uid exists.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
	"syscall"
	"time"
)

// DefaultJobUID is the uid and gid the job runs as in the uid mode unless
// -job-uid names others: the top of Debian's range for ordinary accounts
// (1000-59999), which useradd hands out last, below systemd's dynamic
// users (61184-65519) and Debian's on-demand system ids (60000-64999),
// not nobody (65534, shared with NFS and other daemons), and below 65536,
// so that a container's user namespace (Kubernetes hostUsers: false maps
// 0-65535) has it.
const DefaultJobUID = 59999

type jobIdentity struct{ uid, gid int }

var (
	jobIDMu sync.Mutex
	jobID   *jobIdentity // SetJobUser's
)

// jobUIDEnv names the uid mode's uid and gid, "UID" or "UID:GID", where
// DefaultJobUID will not do. An environment variable, as GPUGATE_ISOLATION
// is, set by whoever runs the runner (its service, the pod's spec): not a
// perf.yaml key, which the pull request under test writes and could point
// at root or at the runner's own uid; and not a flag, so that every
// command that runs a job (the action included) takes it the same way.
const jobUIDEnv = "GPUGATE_JOB_UID"

// SetJobUser sets the uid and gid of the uid mode for every job of this
// process, over GPUGATE_JOB_UID (tests).
func SetJobUser(uid, gid int) {
	jobIDMu.Lock()
	defer jobIDMu.Unlock()
	jobID = &jobIdentity{uid, gid}
	probeMu.Lock()
	clear(probed) // the choice names the uid: choose again
	probeMu.Unlock()
}

// jobUser is the uid mode's uid and gid: SetJobUser's, else
// GPUGATE_JOB_UID's, else DefaultJobUID's. An error says why the value
// will not do (never silently the default).
func jobUser() (jobIdentity, error) {
	jobIDMu.Lock()
	defer jobIDMu.Unlock()
	if jobID != nil {
		return *jobID, jobID.usable()
	}
	v := os.Getenv(jobUIDEnv)
	if v == "" {
		return jobIdentity{DefaultJobUID, DefaultJobUID}, nil
	}
	us, gs, ok := strings.Cut(v, ":")
	if !ok {
		gs = us
	}
	uid, err1 := strconv.Atoi(us)
	gid, err2 := strconv.Atoi(gs)
	if err1 != nil || err2 != nil {
		return jobIdentity{}, fmt.Errorf("%s=%q: want UID or UID:GID, numbers", jobUIDEnv, v)
	}
	id := jobIdentity{uid, gid}
	return id, id.usable()
}

// usable refuses ids that are root's, and ids beyond 65535, which a
// container's user namespace does not map.
func (u jobIdentity) usable() error {
	if u.uid <= 0 || u.gid <= 0 || u.uid > 65535 || u.gid > 65535 {
		return fmt.Errorf("the job's uid and gid must be between 1 and 65535, not %d:%d (%s)", u.uid, u.gid, jobUIDEnv)
	}
	return nil
}

// uidInUse returns "pid (comm)" of a live process (a zombie is not) that
// runs as uid (real, effective, saved or filesystem), "" when there is
// none.
func uidInUse(uid int) string {
	ents, _ := os.ReadDir("/proc")
	want := strconv.Itoa(uid)
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		if strings.HasPrefix(statusField(string(b), "State"), "Z") {
			continue // dead, waiting for its parent
		}
		for _, f := range strings.Fields(statusField(string(b), "Uid")) {
			if f == want {
				return e.Name() + " (" + statusField(string(b), "Name") + ")"
			}
		}
	}
	return ""
}

// uidJob is a job's set-up in the uid mode: its private folder (HOME and
// TMPDIR below it) and the artifacts folder handed to it.
type uidJob struct {
	id      jobIdentity
	private string // root's folder holding home/ and tmp/
	out     string // the artifacts folder, the uid's for the job's time
	outUID  int
	outGID  int
}

// prepareUIDJob makes the job's HOME and TMPDIR and hands it the
// artifacts folder out; the environment to add is returned.
func prepareUIDJob(id jobIdentity, out string) (*uidJob, []string, error) {
	if who := uidInUse(id.uid); who != "" {
		return nil, nil, fmt.Errorf("the job's uid %d is in use by process %s: every process of that uid is killed after the job, so it must be the job's alone (another gpugate's job, or a service: name another with -job-uid)", id.uid, who)
	}
	j := &uidJob{id: id}
	var err error
	if j.private, err = os.MkdirTemp("", "gpugate-job-"); err != nil {
		return nil, nil, fmt.Errorf("the job's HOME: %w", err)
	}
	// Root's, searchable: the job reaches its own home/ and tmp/ below.
	if err := os.Chmod(j.private, 0o711); err != nil {
		j.done()
		return nil, nil, fmt.Errorf("the job's HOME: %w", err)
	}
	home, tmp := filepath.Join(j.private, "home"), filepath.Join(j.private, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			j.done()
			return nil, nil, fmt.Errorf("the job's HOME: %w", err)
		}
		if err := os.Lchown(d, id.uid, id.gid); err != nil {
			j.done()
			return nil, nil, fmt.Errorf("the job's HOME: %w", err)
		}
	}
	if out != "" {
		fi, err := os.Lstat(out)
		if err != nil {
			j.done()
			return nil, nil, fmt.Errorf("the artifacts folder: %w", err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		j.outUID, j.outGID = int(st.Uid), int(st.Gid)
		if err := os.Lchown(out, id.uid, id.gid); err != nil {
			j.done()
			return nil, nil, fmt.Errorf("hand the artifacts folder to the job's uid: %w", err)
		}
		j.out = out
		if err := reachable(filepath.Dir(out), id); err != nil {
			j.done()
			return nil, nil, fmt.Errorf("the artifacts folder %s: %w", out, err)
		}
	}
	return j, []string{"HOME=" + home, "TMPDIR=" + tmp, "USER=", "LOGNAME="}, nil
}

// done gives the artifacts folder back to its owner (what the job wrote
// in it stays the uid's: gpugate opens those files as it opens any file
// the job wrote) and removes HOME and TMPDIR. Every process of the uid
// has ended by then (the init's sweep).
func (j *uidJob) done() []string {
	if j == nil {
		return nil
	}
	// The init swept the uid; gpugate sweeps it again, for an init that
	// was killed (a timeout's SIGKILL to the job's process group) before
	// its sweep: nothing of the uid may touch the folder any more.
	if err := sweepUID(j.id.uid); err != nil {
		fmt.Fprintf(os.Stderr, "gpugate: %v\n", err)
	}
	var removed []string
	if j.out != "" {
		removed = j.reclaim()
	}
	if j.private != "" {
		// RemoveAll follows no symbolic link the job left there.
		if err := os.RemoveAll(j.private); err != nil && !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(os.Stderr, "gpugate: remove the job's HOME %s: %v\n", j.private, err)
		}
	}
	return removed
}

// reclaim gives the artifacts folder and what the job wrote in it back to
// the folder's owner, once every process of the uid has ended. The job
// owned the folder: it could have left a symbolic link (or a FIFO, a
// device, a hard link) under a name gpugate writes after it (analysis.json,
// the job's report), and gpugate, root, would follow it. Every such entry
// of the uid's is removed and named; plain files and folders become the
// owner's again.
func (j *uidJob) reclaim() []string {
	var removed []string
	filepath.WalkDir(j.out, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := os.Lstat(p) // WalkDir follows no link; neither does Lstat
		if err != nil {
			return nil
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) != j.id.uid && int(st.Gid) != j.id.gid {
			return nil
		}
		plain := fi.Mode().IsDir() || fi.Mode().IsRegular() && st.Nlink == 1
		if !plain && p != j.out {
			if os.Remove(p) == nil {
				removed = append(removed, p)
			}
			return nil
		}
		os.Lchown(p, j.outUID, j.outGID)
		switch {
		case fi.Mode().IsDir():
			// No folder stays open to others: a job's chmod 0777 (or a
			// set-gid, sticky folder) would let any uid, the next job's
			// included, plant entries in root's artifacts folder.
			os.Chmod(p, 0o755)
		case fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 || fi.Mode().Perm()&0o022 != 0:
			os.Chmod(p, fi.Mode().Perm()&^0o022) // no set-id bit, no write for others
		}
		return nil
	})
	os.Lchown(j.out, j.outUID, j.outGID)
	return removed
}

// uidJobAttr is how the init starts the job as the uid: no supplementary
// group; setuid from root to the uid clears every capability.
func uidJobAttr(uid, gid int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
}

// sweepUID kills every process of uid: one thread of the init takes the
// uid as its real and effective uid (setresuid on that thread alone, the
// saved uid staying root's) and calls kill(-1, SIGKILL), which signals
// every process the caller may signal, its own excepted: without
// CAP_KILL (gone with euid 0), those whose uid or saved uid is the uid.
// The thread is never given back to Go's scheduler: it ends with its
// goroutine; never the main thread, which Go does not end. In-process, not a helper exec'd as the uid, which could not
// run where gpugate's executable is not the uid's to execute.
func sweepUID(uid int) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if unix.Gettid() == unix.Getpid() {
			// The main thread, which Go never ends and /proc/PID/status
			// shows: gpugate would stay the uid's there. Another thread
			// does it (this one, locked, runs nothing else meanwhile).
			errc <- sweepUID(uid)
			runtime.UnlockOSThread()
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), uintptr(uid), 0); e != 0 {
			errc <- fmt.Errorf("sweep of uid %d: setresuid: %w", uid, e)
			return
		}
		for range 3 {
			if _, _, e := unix.RawSyscall(unix.SYS_KILL, ^uintptr(0), uintptr(unix.SIGKILL), 0); e == unix.ESRCH {
				break // none was left
			}
			time.Sleep(5 * time.Millisecond)
		}
		errc <- nil
	}()
	return <-errc
}

// reachable says which folder of dir's path the job's uid cannot search
// (no x bit for it): the job could not write its traces below it.
func reachable(dir string, id jobIdentity) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		m := fi.Mode().Perm()
		ok := m&0o001 != 0 || int(st.Uid) == id.uid && m&0o100 != 0 || int(st.Gid) == id.gid && m&0o010 != 0
		if !ok {
			return fmt.Errorf("the job's uid %d cannot reach it: %s is mode %04o, owned by %d:%d (make it searchable, o+x)", id.uid, d, m, st.Uid, st.Gid)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// readableBy lists the files of paths that the job's uid can read by
// their mode bits (others' read bit, or the group's where the file is the
// job's gid's) through folders it can search: what the uid mode cannot
// hide (no mount namespace to cover them).
func readableBy(paths []string, id jobIdentity) []string {
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || reachable(filepath.Dir(p), id) != nil {
			continue
		}
		st := fi.Sys().(*syscall.Stat_t)
		m := fi.Mode().Perm()
		if int(st.Uid) == id.uid || m&0o004 != 0 || int(st.Gid) == id.gid && m&0o040 != 0 {
			out = append(out, p)
		}
	}
	return out
}
