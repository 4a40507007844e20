//go:build linux

package runner

// The job's init: gpugate starts every job through a copy of itself (the
// same executable, started with argv[0] initArg0), which starts the job,
// reaps it and everything it leaves behind, and reports back on fd 3. It
// exists for three reasons:
//
//   - Isolation. Where the kernel allows it (root, or unprivileged user
//     namespaces), the init is started in a PID and a mount namespace of its
//     own and mounts a fresh /proc there, as `unshare --pid --fork
//     --mount-proc` does: the job then sees no process but its own, and
//     cannot read the /proc/PID/environ or cmdline of gpugate, the step's
//     shell or the runner, which hold the workflow's secrets. When the init
//     (PID 1 there) exits, the kernel kills whatever is left in the
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
// Without namespaces the init runs all the same, in the job's process
// group, and gpugate's own leftover sweep (reap_linux.go) stays as a
// backstop for an init that was killed.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpugate/gpugate/internal/escape"
)

// haveInit: on Linux every job is started through the init.
const haveInit = true

// initArg0 and probeArg0 are the argv[0] by which a copy of gpugate knows
// it is a job's init, or the probe that tests whether namespaces work.
const (
	initArg0  = "gpugate-job-init"
	probeArg0 = "gpugate-job-probe"
)

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
		os.Exit(jobInit(os.Args[1:]))
	case probeArg0:
		os.Exit(probeInit())
	}
}

// isolation is how the job is started: in namespaces or not, and why.
type isolation struct {
	ns, user bool
	what     string // for the log
}

func (i isolation) attr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if !i.ns {
		return a
	}
	// CLONE_NEWNS in Unshareflags (not Cloneflags): Go then makes every
	// mount private in the child before anything else, so the fresh /proc
	// never propagates back to the machine's mount table.
	a.Cloneflags = syscall.CLONE_NEWPID
	a.Unshareflags = syscall.CLONE_NEWNS
	if i.user {
		// The same uid and gid inside: the job's files keep their owner.
		uid, gid := os.Getuid(), os.Getgid()
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
	return a
}

var (
	probeOnce sync.Once
	probed    isolation
)

// chooseIsolation probes once whether a PID and mount namespace can be
// made (as root, else with a user namespace) and a /proc mounted in it.
func chooseIsolation() isolation {
	if os.Getenv(isolationEnv) == "none" {
		return isolation{what: "none (" + isolationEnv + "=none): the job can see every process of its user"}
	}
	probeOnce.Do(func() { probed = probeIsolation() })
	return probed
}

func probeIsolation() isolation {
	self, err := os.Executable()
	if err != nil {
		return isolation{what: "none (" + err.Error() + "): the job can see every process of its user"}
	}
	var why []string
	for _, user := range []bool{false, true} {
		if user && os.Getuid() == 0 {
			break
		}
		i := isolation{ns: true, user: user}
		cmd := exec.Command(self)
		cmd.Args = []string{probeArg0}
		cmd.SysProcAttr = i.attr()
		cmd.Env = []string{}
		out, err := runBounded(cmd, 10*time.Second)
		if err == nil {
			i.what = "PID and mount namespace with a fresh /proc (the job sees only its own processes)"
			if user {
				i.what = "user, PID and mount namespace with a fresh /proc (the job sees only its own processes)"
			}
			return i
		}
		why = append(why, strings.TrimSpace(fmt.Sprintf("%v %s", err, out)))
	}
	return isolation{what: "none (no namespace could be made: " + escape.Terminal(strings.Join(why, "; ")) + "): the job can see every process of its user"}
}

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

// probeInit runs in the probe: PID 1 of a new namespace that can mount a
// /proc of its own.
func probeInit() int {
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "not PID 1")
		return 1
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		fmt.Fprintln(os.Stderr, "mount /proc:", err)
		return 1
	}
	return 0
}

// initReport is what the init tells gpugate on fd 3.
type initReport struct {
	Err    string   `json:"err,omitempty"` // the job could not start
	Exit   int      `json:"exit"`
	Signal int      `json:"signal,omitempty"`
	Core   bool     `json:"core,omitempty"`
	MaxRSS int64    `json:"max_rss"` // bytes: the largest of any one process of the job
	Killed []string `json:"killed,omitempty"`
}

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

// jobInit is the init: args are the job's executable path, then its argv.
func jobInit(args []string) int {
	report := os.NewFile(3, "report")
	syscall.CloseOnExec(3)
	var rep initReport
	emit := func() int {
		if report != nil {
			json.NewEncoder(report).Encode(&rep)
			report.Close()
		}
		return 0
	}
	if len(args) < 2 {
		rep.Err = "init: no job"
		return emit()
	}
	ns := os.Getpid() == 1
	if ns {
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			rep.Err = "could not isolate the job: mount /proc: " + err.Error()
			return emit()
		}
	}
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	// The stop signals gpugate sends to the process group are for the
	// job; the init stays to reap and report. Caught, not ignored: an
	// ignored signal would stay ignored in the job across execve.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	go func() {
		for range sigs {
		}
	}()
	p, err := os.StartProcess(args[0], args[1:], &os.ProcAttr{Env: os.Environ(), Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}})
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
	rep.Killed = initSweep(ns)
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		rep.MaxRSS = int64(ru.Maxrss) * 1024 // KiB on Linux
	}
	return emit()
}

// initSweep kills and reaps what the job left running: in a namespace,
// every process but the init; without, every descendant of the init (a
// subreaper, so that the job's orphans stay below it).
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

// readInitReport reads the init's report once it has exited; nil when it
// wrote none (it was killed).
func readInitReport(r io.Reader) *initReport {
	b, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil || len(b) == 0 {
		return nil
	}
	var rep initReport
	if json.Unmarshal(b, &rep) != nil {
		return nil
	}
	return &rep
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
