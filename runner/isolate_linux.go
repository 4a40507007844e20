//go:build linux

package runner

// The job's init: gpugate starts every job through a copy of itself (the
// same executable, started with argv[0] initArg0), which starts the job,
// reaps it and everything it leaves behind, and reports back on fd 3. It
// exists for three reasons:
//
//   - Isolation. Where the kernel allows it (root, or unprivileged user
//     namespaces), the init is PID 1 of a PID, a mount and (unless gpugate
//     is root) a user namespace of its own, with a fresh /proc and
//     /dev/shm, and the files that hold credentials (the store's -db-file,
//     ~/.pgpass, the runner's .credentials) covered by an empty read-only
//     file: the job then sees no process but its own, cannot read the
//     /proc/PID/environ or cmdline of gpugate, the step's shell or the
//     runner, which hold the workflow's secrets, nor those files. When the
//     init (PID 1 there) exits, the kernel kills whatever is left in the
//     namespace.
//   - The job's peak memory. Go starts processes with vfork semantics
//     (CLONE_VM), and Linux carries the parent's high-water RSS into the
//     child's ru_maxrss at execve (exec_mmap's setmax_mm_hiwater_rss), so
//     every child of gpugate — the job's first process and each nvidia-smi
//     the sampler starts — reported at least gpugate's own peak (4.2 GB after
//     a hostile nvidia-smi's flood). The init is a fresh small process: the
//     job's processes are its children, and its RUSAGE_CHILDREN is theirs
//     alone (plus at most the init's own few MB, carried the same way).
//   - Leftovers. The init is a child subreaper: what the job leaves running
//     (a setsid daemon included) stays below it, is killed when the job's
//     first process exits, and is reported.
//
// How the namespaces are made, for an ordinary user (issue 26). gpugate is
// not dumpable (notDumpable), and a child it clones is not either until it
// execs: its /proc/PID/uid_map belongs to root, and gpugate, not root, could
// not write it (the clone failed with EACCES, and every ordinary user ran
// without a namespace). So gpugate starts a spawner (argv[0] spawnArg0) as a
// plain child, which exec makes dumpable again and which holds nothing
// secret (an empty environment, ownEnv); the spawner clones the init into
// the new namespaces and writes its uid_map. The init gets CAP_SYS_ADMIN in
// its user namespace as an ambient capability (it runs as the user's own uid
// there, not as root), mounts /proc, /dev/shm and the covers, and then
// sets no_new_privs and re-executes itself with no capability left (capabilities are per thread,
// and Go's init has several: only an execve drops them from every thread at
// once). Then it makes itself non-dumpable, so that the job, the same uid
// without a capability, can neither ptrace it nor open its
// /proc/1/fd/3, the report channel, and starts the job.
//
// What the job must not reach besides (issue 34, reach.go, mounts_linux.go):
// the spawner, the init and its re-exec are the running binary
// (/proc/self/exe, never a path the job could replace) and run with an
// empty environment: the job's, perf.yaml's env included (LD_PRELOAD...),
// comes to the init on a sealed memfd (fd 4) and reaches the job's execve
// alone. In the namespace the init also mounts a private /tmp and
// /var/tmp (the job's folders kept), covers the Actions runner's
// file-command files and step scripts, makes gpugate's install folder
// read-only, and, for network: none, brings up the loopback of a network
// namespace of the job's own (CAP_NET_ADMIN, ambient like CAP_SYS_ADMIN)
// and covers the machine's Unix sockets.
//
// Why not bubblewrap (bwrap): it does the same from C, but it is one more
// program every self-hosted runner would need installed (Debian's
// bubblewrap; not in GitHub's runner images by default), setuid on some
// distributions, and gpugate's init must stay the namespace's PID 1 anyway:
// it reaps, sweeps and measures the job's peak memory. docs/security.md.
//
// Without namespaces the init runs all the same, non-dumpable, in the job's
// process group, in a cgroup v2 folder of its own where gpugate can make one
// (cgroup.kill ends everything in it), and gpugate's own leftover sweep
// (reap_linux.go) stays as a backstop for an init that was killed.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpugate/gpugate/internal/escape"
)

// haveInit: on Linux every job is started through the init.
const haveInit = true

// initArg0, spawnArg0 and readyArg0 are the argv[0] by which a copy of
// gpugate knows it is a job's init, the spawner that starts the init in
// its namespaces, or the init re-executed without capabilities after the
// namespace's set-up.
const (
	initArg0  = "gpugate-job-init"
	spawnArg0 = "gpugate-job-spawn"
	readyArg0 = "gpugate-job-init-ready"
)

// selfExe is what gpugate executes to start its own processes (the
// spawner, the init, the init's re-exec without capabilities, the probe):
// the running binary itself, never a path the job could write. Not
// os.Executable: it reads the same link but trims " (deleted)" and returns
// a path, so that a job which unlinked gpugate's binary and wrote its own
// file there (RUNNER_TEMP/gpugate-bin/gpugate is the runner user's, and so
// the job's, to replace) had that file run as the next run's spawner,
// outside every namespace and holding the report channel (issue 34).
// /proc/self/exe is resolved in the child between fork and execve, where
// it is the child's own executable, gpugate's open inode even once
// unlinked or replaced (a magic link: no path lookup of the name, no
// mount over the name, such as the covers, changes it). An fd opened at
// start and executed with execveat(AT_EMPTY_PATH) would do the same but
// needs a path for exec.Cmd anyway (/proc/self/fd/N, an fd every child
// must then inherit); /proc/self/exe needs no fd kept open, and is there
// in each of gpugate's processes: gpugate, the spawner and the init, which
// mounts a fresh /proc before its re-exec (a magic link crosses /proc's
// noexec: execve checks the mount of the file it reaches, not /proc's).
const selfExe = "/proc/self/exe"

// isolationEnv set to "none" turns the namespaces off (the job then sees
// every process of its user, as before): for kernels or tools that
// misbehave in a PID namespace.
const isolationEnv = "GPUGATE_ISOLATION"

func init() {
	if len(os.Args) == 0 {
		return
	}
	switch os.Args[0] {
	case initArg0:
		os.Exit(jobInit(os.Args[1:], false))
	case readyArg0:
		os.Exit(jobInit(os.Args[1:], true))
	case spawnArg0:
		os.Exit(spawn(os.Args[1:]))
	}
}

// initSpec is what the spawner and the init are told, as JSON in argv[1]
// (no secret: paths and flags; the command line is world-readable).
type initSpec struct {
	NS    bool     `json:"ns,omitempty"`    // PID 1 of new PID and mount namespaces
	User  bool     `json:"user,omitempty"`  // and a user namespace (gpugate is not root)
	Hide  []string `json:"hide,omitempty"`  // files (or folders) to cover, absolute
	Probe bool     `json:"probe,omitempty"` // set up, then exit: does it work here?
	// Tool: no report channel; the init exits as the program it runs
	// does (a probe of the job's Python, isolatedArgv).
	Tool bool `json:"tool,omitempty"`
	// Env: the job's environment comes on fd 4 (jobEnvFile), not in the
	// spawner's and the init's own, which is ownEnv: perf.yaml's env
	// (LD_PRELOAD, LD_LIBRARY_PATH, BASH_ENV...) reaches the job's exec
	// only, never a process of gpugate's that holds a capability or the
	// report channel.
	Env bool `json:"env,omitempty"`
	// Net: a network namespace of the job's own, loopback only (perf.yaml
	// network: none), and the Unix sockets of Sockets covered.
	Net     bool     `json:"net,omitempty"`
	Sockets []string `json:"sockets,omitempty"`
	// Tmp: a private /tmp and /var/tmp (tmpfs), in which the folders of
	// Keep (the job's folder, its run folder, nsys's TMPDIR) stay
	// reachable, bind-mounted from outside.
	Tmp  bool     `json:"tmp,omitempty"`
	Keep []string `json:"keep,omitempty"`
	// RO are folders bind-mounted read-only (gpugate's install folder).
	RO []string `json:"ro,omitempty"`
	// RunnerRO is the Actions runner's folder, read-only but for the
	// folders of RunnerRW (the workspace, RUNNER_TEMP, the job's own),
	// bound back writable: the runner's externals and actions are code
	// the workflow's later steps run.
	RunnerRO string   `json:"runner_ro,omitempty"`
	RunnerRW []string `json:"runner_rw,omitempty"`
	// UID and GID: the job runs as this uid and gid (the uid mode,
	// isolate_uid_linux.go), and every process of the uid is killed after.
	UID int `json:"uid,omitempty"`
	GID int `json:"gid,omitempty"`
	// InUID and InGID: the uid and gid of the init and the job, inside
	// their user namespace and on the host alike, when gpugate is root
	// without CAP_SYS_ADMIN (the job's uid, jobUser: never 0, which would
	// be root on the host and, inside, get every capability of the
	// namespace at execve); unset otherwise (gpugate's own ids).
	InUID int `json:"in_uid,omitempty"`
	InGID int `json:"in_gid,omitempty"`
}

// jobEnvFD is the init's fd on which the job's environment comes
// (initSpec.Env): NUL-separated, in a sealed memfd.
const jobEnvFD = 4

// ownEnv is the environment of gpugate's own processes (the spawner, the
// init): fixed and minimal. None of them looks anything up on PATH (every
// path is absolute), so it is empty.
func ownEnv() []string { return []string{} }

// jobEnvFile writes env to a sealed memfd, for the init's jobEnvFD: a
// channel that is neither the environment (which the dynamic loader of
// the spawner and the init would read) nor argv (world-readable).
func jobEnvFile(env []string) (*os.File, error) {
	fd, err := unix.MemfdCreate("gpugate-job-env", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("job environment: %w", err)
	}
	f := os.NewFile(uintptr(fd), "job-env")
	var b strings.Builder
	for _, e := range env {
		if strings.IndexByte(e, 0) >= 0 {
			continue // cannot be in an environment anyway
		}
		b.WriteString(e)
		b.WriteByte(0)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return nil, fmt.Errorf("job environment: %w", err)
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE); err != nil {
		f.Close()
		return nil, fmt.Errorf("job environment: %w", err)
	}
	return f, nil
}

// readJobEnv reads the job's environment from jobEnvFD and closes it.
func readJobEnv() ([]string, error) {
	f := os.NewFile(jobEnvFD, "job-env")
	if f == nil {
		return nil, errors.New("no job environment")
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("job environment: %w", err)
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("job environment: %w", err)
	}
	var env []string
	for _, e := range strings.Split(string(b), "\x00") {
		if e != "" {
			env = append(env, e)
		}
	}
	return env, nil
}

// The isolation's choice (chooseIsolation, the modes) is
// isolation_choice_linux.go; the uid mode's set-up isolate_uid_linux.go.

// runBounded runs cmd with a deadline and returns its combined output.
func runBounded(cmd *exec.Cmd, limit time.Duration) (string, error) {
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return "", err
	}
	t := time.AfterFunc(limit, func() { cmd.Process.Kill() })
	defer t.Stop()
	err := cmd.Wait()
	return out.String(), err
}

// initArgs is the command line that starts the job (path, then its argv)
// through the init: in namespaces through the spawner.
func initArgs(spec initSpec, path string, argv []string) []string {
	b, _ := json.Marshal(spec)
	first := initArg0
	if spec.NS {
		first = spawnArg0
	}
	return append([]string{first, string(b), path}, argv...)
}

// isolatedArgv is the command line that runs path with argv (argv[0]
// first) in namespaces like a job's, for a program that runs the pull
// request's code outside a job (the fingerprint's probe of the job's
// Python, which imports what lies beside it): the spawner, with an init
// that exits as the program does (in the uid mode, an init that runs it
// as the job's uid). ok is false where the job would run without
// isolation.
func isolatedArgv(path string, argv []string) (self string, args []string, ok bool) {
	iso := chooseIsolation()
	if iso.mode == modeNone {
		return "", nil, false
	}
	spec := iso.spec(hiddenFiles(nil))
	spec.Tool = true
	return selfExe, initArgs(spec, path, argv), true
}

// catchStops catches the stop signals gpugate sends to the process group:
// they are for the job; the spawner and the init stay to reap and report.
// Caught, not ignored: an ignored signal would stay ignored in the job
// across execve.
func catchStops() {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	go func() {
		for range sigs {
		}
	}()
}

// spawn is the spawner: it starts the init in new namespaces, hands it the
// report channel (fd 3) and its own stdio, and exits as it does.
func spawn(args []string) int {
	var spec initSpec
	if len(args) == 0 || json.Unmarshal([]byte(args[0]), &spec) != nil {
		fmt.Fprintln(os.Stderr, "gpugate: spawn: no spec")
		return 125
	}
	catchStops()
	cmd := exec.Command(selfExe)
	cmd.Args = append([]string{initArg0}, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = ownEnv()
	var report, env *os.File
	if !spec.Probe && !spec.Tool {
		report = os.NewFile(3, "report")
		cmd.ExtraFiles = []*os.File{report}
	}
	if spec.Env {
		env = os.NewFile(jobEnvFD, "job-env")
		cmd.ExtraFiles = []*os.File{report, env} // a nil report: fd 3 closed
	}
	// CLONE_NEWNS in Unshareflags (not Cloneflags): Go then makes every
	// mount private in the child before anything else, so the fresh /proc
	// never propagates back to the machine's mount table.
	a := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Unshareflags: syscall.CLONE_NEWNS}
	if spec.User {
		// The same uid and gid inside: the job's files keep their owner,
		// and the job is not root there (root in the namespace could undo
		// the covers). CAP_SYS_ADMIN, for the init's mounts only, comes as
		// an ambient capability, which survives the init's execve.
		uid, gid := os.Getuid(), os.Getgid()
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.GidMappingsEnableSetgroups = false
		if uid == 0 {
			// Root without CAP_SYS_ADMIN (a container's root): the init
			// and the job are the job's uid and gid (InUID, InGID) on the
			// host too, never host root behind another id (uid 0 mapped
			// to 59999 inside: a kernel uid 0 that owned and read root's
			// 0600 files and wrote /proc/sys). Root may map any host id
			// (CAP_SETUID, CAP_SETGID in its own namespace); Go's child
			// then takes the ids once the maps are written, drops every
			// supplementary group (setgroups, allowed here, and needed:
			// it would keep root's), and raises the ambient capabilities
			// after its setuid.
			if spec.InUID <= 0 || spec.InGID <= 0 {
				fmt.Fprintln(os.Stderr, "gpugate: could not isolate the job: root's user namespace needs the job's uid and gid")
				return 125
			}
			a.UidMappings[0].ContainerID, a.UidMappings[0].HostID = spec.InUID, spec.InUID
			a.GidMappings[0].ContainerID, a.GidMappings[0].HostID = spec.InGID, spec.InGID
			a.GidMappingsEnableSetgroups = true
			a.Credential = &syscall.Credential{Uid: uint32(spec.InUID), Gid: uint32(spec.InGID), Groups: []uint32{}}
		}
		a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
		if spec.Net {
			a.AmbientCaps = append(a.AmbientCaps, unix.CAP_NET_ADMIN) // to bring lo up
		}
	}
	if spec.Net {
		// A network namespace of the job's own, owned by its user
		// namespace: only a loopback interface, which the init brings up.
		a.Cloneflags |= syscall.CLONE_NEWNET
	}
	cmd.SysProcAttr = a
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "gpugate: could not isolate the job:", err)
		return 125
	}
	if report != nil {
		report.Close() // only the init holds it now
	}
	if env != nil {
		env.Close()
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return 125
	}
	return 0
}

// setupNS makes the namespace the job will see: run in the init, PID 1,
// with CAP_SYS_ADMIN in the namespace.
func setupNS(spec initSpec) error {
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	// A /dev/shm of the job's own. Nsight Systems 2022.4 names its agent's
	// shared memory by pid (/dev/shm/quadd-agent-instance-PID), and pids
	// repeat in every new PID namespace: an object an earlier namespaced
	// job left there made the next one's agent fail ("Agent launcher
	// failed", issue 26; reproduced with unshare and nsys alone). It also
	// keeps the job's shared memory from other jobs of the user.
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
			return fmt.Errorf("mount /dev/shm: %w", err)
		}
	}
	if err := privateRun(spec); err != nil {
		return err
	}
	if spec.Tmp {
		// The init's folder is the job's; after the tmpfs it is found
		// again by its name, through the bind that keeps it: the old one
		// would lead ("..") into the machine's /tmp below the tmpfs.
		cwd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("private /tmp: %w", err)
		}
		if _, err := privateTmp(spec.Keep); err != nil {
			return err
		}
		if err := os.Chdir(cwd); err != nil {
			return fmt.Errorf("private /tmp: the job's folder %s: %w", cwd, err)
		}
	}
	if err := runnerReadOnly(spec.RunnerRO, spec.RunnerRW); err != nil {
		return err
	}
	if err := cover(spec.Hide); err != nil {
		return err
	}
	if err := cover(spec.Sockets); err != nil {
		return err
	}
	if err := readOnly(spec.RO); err != nil {
		return err
	}
	if spec.Net {
		return loopbackUp()
	}
	return nil
}

// cover mounts an empty read-only file over each file of paths (an empty
// read-only tmpfs over a folder). A path that does not exist, or that the
// init (the job's uid) cannot reach, is left: the job cannot read it either.
func cover(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	// The empty file lives on a tmpfs of the init's own, mounted on /proc's
	// neighbour /dev/shm only for the time of the binds: the binds keep
	// the file, unlinked, and nothing else names it.
	const empty = "/dev/shm/.gpugate-cover"
	f, err := os.OpenFile(empty, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o400)
	if err != nil {
		return fmt.Errorf("cover files: %w", err)
	}
	f.Close()
	defer os.Remove(empty)
	const ro = unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	for _, p := range paths {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			continue
		}
		if err != nil {
			return fmt.Errorf("cover %s: %w", p, err)
		}
		if fi.IsDir() {
			if err := unix.Mount("tmpfs", p, "tmpfs", ro, "size=4k,mode=0500"); err != nil {
				return fmt.Errorf("cover %s: %w", p, err)
			}
			continue
		}
		if err := unix.Mount(empty, p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("cover %s: %w", p, err)
		}
		if err := unix.Mount("", p, "", unix.MS_BIND|unix.MS_REMOUNT|ro, ""); err != nil {
			return fmt.Errorf("cover %s read-only: %w", p, err)
		}
	}
	return nil
}

// dropCaps re-executes the init (still PID 1, its mounts in place) with
// no capability: ambient and inheritable sets cleared on this thread,
// then execve, which computes every thread's new sets from them.
func dropCaps(args []string) error {
	runtime.LockOSThread()
	// No new privileges for the init and the job: in the user namespace a
	// file capability (its root maps to an ancestor namespace's root) would
	// otherwise still be granted at execve, in this namespace, and
	// CAP_SYS_ADMIN there could undo the covers. Per thread, kept across
	// execve and inherited by every child.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	// The init's own environment is the spawner's fixed minimal one
	// (ownEnv); the job's comes on fd 4 and is read only after this exec.
	return syscall.Exec(selfExe, append([]string{readyArg0}, args...), ownEnv())
}

// haveCaps reports whether this process holds any capability.
func haveCaps() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) != nil {
		return true
	}
	return data[0].Effective|data[1].Effective|data[0].Permitted|data[1].Permitted|data[0].Inheritable|data[1].Inheritable != 0
}

// initReport is what the init tells gpugate on fd 3.
type initReport struct {
	Err    string `json:"err,omitempty"` // the job could not start
	Exit   int    `json:"exit"`
	Signal int    `json:"signal,omitempty"`
	Core   bool   `json:"core,omitempty"`
	MaxRSS int64  `json:"max_rss"` // bytes: the largest of any one process of the job
	// Ended is how many processes the job left running were ended after
	// it; Killed names a few of them, "pid (comm)" (maxNamed).
	Ended  int      `json:"ended,omitempty"`
	Killed []string `json:"killed,omitempty"`
	// SweepMS is how long the sweep of what the job left took, in ms.
	SweepMS int64 `json:"sweep_ms,omitempty"`
}

// maxNamed is how many of the processes ended after the job are named in
// the report and the log: the count says how many there were (a job that
// left 10,000 made a 10,000-name line).
const maxNamed = 5

// status is the job's end as os.ProcessState.String says it.
func (r *initReport) status() string {
	if r.Signal != 0 {
		s := "signal: " + syscall.Signal(r.Signal).String()
		if r.Core {
			s += " (core dumped)"
		}
		return s
	}
	return "exit status " + strconv.Itoa(r.Exit)
}

// jobInit is the init: args are its spec (JSON), then the job's executable
// path and argv. ready says it was re-executed after the namespace's
// set-up (dropCaps).
func jobInit(args []string, ready bool) int {
	var spec initSpec
	if len(args) == 0 || json.Unmarshal([]byte(args[0]), &spec) != nil {
		fmt.Fprintln(os.Stderr, "gpugate: init: no spec")
		return 125
	}
	spec0, args := args[0], args[1:]
	var report *os.File
	if !spec.Probe && !spec.Tool {
		report = os.NewFile(3, "report")
	}
	var rep initReport
	emit := func() int {
		if report != nil {
			json.NewEncoder(report).Encode(&rep)
			report.Close()
		}
		if spec.Tool {
			switch {
			case rep.Err != "":
				fmt.Fprintln(os.Stderr, "gpugate:", rep.Err)
				return 125
			case rep.Signal != 0:
				return 128 + rep.Signal
			}
			return rep.Exit
		}
		return 0
	}
	fail := func(err error) int {
		if spec.Probe {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		rep.Err = "could not isolate the job: " + err.Error()
		return emit()
	}
	if spec.NS && os.Getpid() != 1 {
		return fail(errors.New("the init is not PID 1 of a namespace"))
	}
	if spec.NS && !ready {
		if err := setupNS(spec); err != nil {
			return fail(err)
		}
		if spec.Probe {
			return 0
		}
		if spec.User {
			return fail(dropCaps(append([]string{spec0}, args...))) // returns only on error
		}
	}
	if spec.User && haveCaps() {
		return fail(errors.New("the init kept a capability after its set-up"))
	}
	if nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); spec.User && (err != nil || nnp != 1) {
		return fail(errors.New("the init lost no_new_privs"))
	}
	if len(args) < 2 {
		rep.Err = "init: no job"
		return emit()
	}
	if report != nil {
		syscall.CloseOnExec(3)
	}
	env := os.Environ() // a Tool's: the filtered environment it was started with
	if spec.Env {
		var err error
		if env, err = readJobEnv(); err != nil {
			return fail(err)
		}
	}
	// Not dumpable from here: the job (the same uid, without a capability)
	// can neither ptrace the init nor open its /proc/PID/fd/3, the report
	// channel. Its children are dumpable again after their execve.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail(fmt.Errorf("make the init non-dumpable: %w", err))
	}
	ns := spec.NS
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	catchStops()
	// Nothing but stdio reaches the job: a descriptor gpugate inherited
	// from whoever started it (not close-on-exec) went on through the
	// spawner and the init, and an open folder or file of the host's
	// would reach past the covers, the private /tmp and, in the uid mode,
	// the job's uid (issue 34's review).
	if err := closeOnExecFrom(3); err != nil {
		return fail(err)
	}
	attr := &os.ProcAttr{Env: env, Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}}
	if spec.UID != 0 {
		// The uid mode: no_new_privs (per thread, so set on the thread
		// that forks), and the job's own uid and gid.
		runtime.LockOSThread()
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fail(fmt.Errorf("no_new_privs: %w", err))
		}
		attr.Sys = uidJobAttr(spec.UID, spec.GID)
	}
	p, err := os.StartProcess(args[0], args[1:], attr)
	if err != nil {
		rep.Err = fmt.Sprintf("could not start %q: %v", args[1], err)
		return emit()
	}
	first := p.Pid
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			break
		}
		if pid == first {
			switch {
			case ws.Signaled():
				rep.Signal, rep.Core = int(ws.Signal()), ws.CoreDump()
			default:
				rep.Exit = ws.ExitStatus()
			}
			break
		}
	}
	swept := time.Now()
	if ns {
		rep.Ended, rep.Killed = sweepNS()
	} else {
		rep.Killed = initSweep(false)
		rep.Ended = len(rep.Killed)
		if len(rep.Killed) > maxNamed {
			rep.Killed = rep.Killed[:maxNamed]
		}
	}
	rep.SweepMS = time.Since(swept).Milliseconds()
	if spec.UID != 0 && !spec.Tool {
		// What of the uid was not below the init (nothing, unless it
		// escaped the subreaper) ends too.
		if err := sweepUID(spec.UID); err != nil {
			rep.Err = err.Error()
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		rep.MaxRSS = int64(ru.Maxrss) * 1024 // KiB on Linux
	}
	return emit()
}

// sweepNS ends what the job left running in its PID namespace, where the
// init is PID 1: kill(-1, SIGKILL) there reaches every process of the
// namespace but the init, at once (the kernel walks its task list; a fork
// that races it fails, its parent having a fatal signal pending), and
// every one of them is the init's child or orphan, so it reaps them all.
// It returns how many it ended (reaped, killed by SIGKILL) and names a
// few, read before the kill. 10,000 sleepers took 0.7 to 0.8 s on a
// loaded 2-core machine (cmd/gpugate TestTenThousandLeftovers; issue 34:
// the earlier sweep, which read all of /proc once a round, did not finish
// within the job's 2-minute timeout there). Without a namespace the walk
// below (initSweep) took 2 s for as many. A process that
// SIGKILL cannot end at once (in an uninterruptible sleep: a GPU driver
// call) is waited for up to sweepLimit; the kernel ends what is left
// when the init, PID 1, exits.
func sweepNS() (ended int, named []string) {
	named = someProcs(maxNamed)
	deadline := time.Now().Add(sweepLimit)
	for {
		syscall.Kill(-1, syscall.SIGKILL) // ESRCH: none alive, zombies may be left to reap
		progress := false
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if err == syscall.EINTR {
				continue
			}
			if err == syscall.ECHILD {
				return ended, named
			}
			if err != nil || pid <= 0 {
				break
			}
			progress = true
			if ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				ended++
			}
		}
		if time.Now().After(deadline) {
			return ended, named
		}
		if !progress {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// sweepLimit bounds the wait for processes that SIGKILL has not ended yet.
const sweepLimit = 20 * time.Second

// someProcs names up to n live processes of the namespace other than the
// init, "pid (comm)", reading no more of /proc than it needs.
func someProcs(n int) []string {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	var out []string
	for len(out) < n {
		names, err := d.Readdirnames(64)
		for _, name := range names {
			pid, err := strconv.Atoi(name)
			if err != nil || pid == os.Getpid() || len(out) == n {
				continue
			}
			b, err := os.ReadFile("/proc/" + name + "/stat")
			if err != nil {
				continue
			}
			i, j := strings.IndexByte(string(b), '('), strings.LastIndexByte(string(b), ')')
			if i < 0 || j < i || strings.HasPrefix(string(b[j+1:]), " Z") {
				continue
			}
			out = append(out, name+" ("+escape.Terminal(string(b[i+1:j]))+")") // the job names its processes
		}
		if err != nil {
			break
		}
	}
	return out
}

// initSweep kills and reaps what the job left running without a PID
// namespace: every descendant of the init (a subreaper, so that the job's
// orphans stay below it).
func initSweep(ns bool) []string {
	var killed []string
	seen := map[int]bool{}
	self := os.Getpid()
	for range 100 {
		ps := readProcs()
		children := map[int][]proc{}
		for _, p := range ps {
			children[p.ppid] = append(children[p.ppid], p)
		}
		var left []proc
		if ns {
			for _, p := range ps {
				if p.pid != self {
					left = append(left, p)
				}
			}
		} else {
			var walk func(int)
			walk = func(pid int) {
				for _, c := range children[pid] {
					left = append(left, c)
					walk(c.pid)
				}
			}
			walk(self)
		}
		for _, p := range left {
			if p.state != "Z" && syscall.Kill(p.pid, syscall.SIGKILL) == nil && !seen[p.pid] {
				seen[p.pid] = true
				killed = append(killed, strconv.Itoa(p.pid)+" ("+escape.Terminal(p.comm)+")") // the job names its processes
			}
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
		if len(left) == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return killed
}

// readInitReport reads the init's report once it has exited. A report
// that is missing (the init was killed) or does not parse (something else
// wrote on the channel) is an error, never a success: the job's end is
// then unknown.
func readInitReport(r io.Reader) (*initReport, error) {
	b, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("its init's report could not be read: %w", err)
	}
	if len(b) == 0 {
		return nil, errors.New("its init left no report (it was killed): how the job ended is unknown")
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var rep initReport
	if err := dec.Decode(&rep); err != nil || dec.More() {
		return nil, fmt.Errorf("its init's report does not parse (%d bytes): something else wrote on the init's channel, and how the job ended is unknown", len(b))
	}
	return &rep, nil
}

// jobCgroup is a cgroup v2 folder of the job's own, made when there is no
// PID namespace: everything the job starts stays in it (a process of the
// user can leave it only where the user owns the parent folder, a
// delegated cgroup), and cgroup.kill ends them all.
type jobCgroup struct {
	dir string
	f   *os.File // the folder, for CLONE_INTO_CGROUP
}

// newJobCgroup makes the folder below gpugate's own cgroup: it works as
// root, or where the user's cgroup is delegated to it (a systemd user
// service or a scope with Delegate=yes).
func newJobCgroup(token string) (*jobCgroup, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	own := ""
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			own = p
		}
	}
	if own == "" {
		return nil, errors.New("gpugate is in no cgroup v2")
	}
	mnt, err := cgroup2Mount()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(mnt, filepath.Clean("/"+own), "gpugate-job-"+token)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		os.Remove(dir)
		return nil, errors.New("no cgroup.kill (Linux before 5.14)")
	}
	f, err := os.Open(dir)
	if err != nil {
		os.Remove(dir)
		return nil, err
	}
	return &jobCgroup{dir: dir, f: f}, nil
}

// cgroup2Mount is where the cgroup v2 hierarchy is mounted.
func cgroup2Mount() (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
		pre, post, ok := strings.Cut(line, " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		if f := strings.Fields(pre); len(f) >= 5 && f[3] == "/" {
			return strings.ReplaceAll(f[4], "\\040", " "), nil
		}
	}
	return "", errors.New("no cgroup v2 hierarchy mounted")
}

// where is the folder.
func (c *jobCgroup) where() string { return c.dir }

// attach makes the process started with a begin in the folder
// (CLONE_INTO_CGROUP): no moment outside it.
func (c *jobCgroup) attach(a *syscall.SysProcAttr) {
	a.UseCgroupFD, a.CgroupFD = true, int(c.f.Fd())
}

// kill ends every process in the folder and removes it; it returns
// "pid (comm)" for each process that was still there.
func (c *jobCgroup) kill() []string {
	defer c.f.Close()
	var killed []string
	if b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs")); err == nil {
		for _, f := range strings.Fields(string(b)) {
			comm, _ := os.ReadFile("/proc/" + f + "/comm")
			killed = append(killed, f+" ("+escape.Terminal(strings.TrimSpace(string(comm)))+")") // the job names its processes
		}
	}
	os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0)
	for range 200 {
		if os.Remove(c.dir) == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return killed
}

// notDumpable marks gpugate non-dumpable (PR_SET_DUMPABLE 0) before it
// starts a job: its /proc/PID/environ, mem and the rest then belong to
// root, and a process of the same user (the job) can neither read them
// nor ptrace gpugate. /proc/PID/cmdline stays world-readable, which is why
// no secret travels on gpugate's argv. Root (CAP_SYS_PTRACE) is not
// stopped by it: there the namespace is what hides gpugate.
func notDumpable() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}

// closeOnExecFrom marks every descriptor from first up close-on-exec:
// close_range(2) where the kernel has it (5.11), else each one
// /proc/self/fd lists.
func closeOnExecFrom(first int) error {
	if err := unix.CloseRange(uint(first), ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return nil
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("close the job's inherited descriptors: %w", err)
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= first {
			syscall.CloseOnExec(fd)
		}
	}
	return nil
}

// privateRun hides the Unix sockets under /run that reach past the
// namespace (issue 34's review). Every job with a private /tmp gets an
// empty runtime folder of its own at /run/user/UID: the user's systemd
// and D-Bus there would start a process outside every namespace
// (systemd-run --user), and agents (gpg, ssh) listen there. With
// network: none, all of /run (and a /var/run that is a folder of its
// own) is an empty tmpfs: a socket bound in another network namespace,
// such as a container's mounted /var/run/docker.sock, is in no
// /proc/net/unix gpugate can read, and would be reachable by its path.
func privateRun(spec initSpec) error {
	const opts = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	if spec.Net {
		for _, d := range []string{"/run", "/var/run"} {
			if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
				continue // none, or a link to /run
			}
			if err := unix.Mount("tmpfs", d, "tmpfs", opts, "mode=0755"); err != nil {
				return fmt.Errorf("network none: a private %s: %w", d, err)
			}
		}
		return nil
	}
	if !spec.Tmp {
		return nil
	}
	d := "/run/user/" + strconv.Itoa(os.Getuid())
	if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
		return nil
	}
	if err := unix.Mount("tmpfs", d, "tmpfs", opts, "mode=0700"); err != nil {
		return fmt.Errorf("a private %s: %w", d, err)
	}
	return nil
}

// runnerReadOnly makes root read-only and binds each folder of rw (below
// it) back writable: the bind copies the read-only flag, and its own
// remount drops it, while the rest of root stays read-only.
func runnerReadOnly(root string, rw []string) error {
	if root == "" {
		return nil
	}
	if _, err := os.Stat(root); err != nil {
		return nil // not in this namespace (below a private /tmp)
	}
	if err := readOnly([]string{root}); err != nil {
		return err
	}
	for _, p := range rw {
		if err := remount(p, false); err != nil {
			return fmt.Errorf("in the read-only runner folder: %w", err)
		}
	}
	return nil
}
