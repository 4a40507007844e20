package runner

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gpugate/gpugate/internal/escape"
)

// isoMode is how the job is isolated (chooseIsolation,
// isolation_choice_linux.go).
type isoMode int

const (
	modeNone       isoMode = iota // the process group, a cgroup where one can be made, gpugate's sweep
	modeNamespaces                // PID + mount (+ user) namespaces
	modeUID                       // a dedicated uid and gid
)

// String is the mode's name.
func (m isoMode) String() string {
	switch m {
	case modeNamespaces:
		return "namespaces"
	case modeUID:
		return "uid"
	}
	return "none"
}

// isolation is how the job is started, and why.
type isolation struct {
	mode isoMode
	// ns and user: the init makes PID and mount namespaces, and a user
	// namespace too (modeNamespaces).
	ns, user bool
	// uid and gid: the job's own identity (modeUID), and in a user
	// namespace made by root the ids gpugate has there.
	uid, gid int
	what     string // for the log and the report
	// warn, for modeNone and modeUID: what the mode leaves open and why
	// nothing better could be made, for the log, the comment and the
	// report; "" when nothing is to be said.
	warn string
}

// jobIsolation is one job's isolation, set up: what the init is told,
// what the job's environment gets, and what to undo after it.
type jobIsolation struct {
	spec initSpec
	env  []string
	cg   *jobCgroup
	uid  *uidJob
}

// isolateJob sets up the isolation chooseIsolation picked for one job,
// saying in res what it is and what it leaves open.
func isolateJob(job Job, res *Result, token string) (*jobIsolation, error) {
	iso := chooseIsolation()
	hide := hiddenFiles(job.Hide)
	ji := &jobIsolation{spec: iso.spec(hide)}
	// The job's environment comes to the init on its own channel, never
	// in the environment of gpugate's processes (jobEnvFile).
	ji.spec.Env = haveInit
	res.Isolation = iso.what
	if iso.warn != "" {
		res.IsolationWarnings = append(res.IsolationWarnings, iso.warn)
	}
	if iso.mode == modeUID || iso.mode == modeNamespaces && iso.uid != 0 {
		// The job is a uid of its own (the uid mode, or the user
		// namespace of root without CAP_SYS_ADMIN, where it is that uid
		// on the host too): the artifacts folder is handed to it for the
		// job's time, with a HOME and TMPDIR of its own (kept in its
		// private /tmp), and it is refused while the uid is in use.
		out, err := filepath.Abs(job.Out)
		if job.Out == "" || err != nil {
			out = ""
		}
		u, env, err := prepareUIDJob(jobIdentity{iso.uid, iso.gid}, out)
		if err != nil {
			return nil, &Error{Job: job.Name, What: "could not isolate the job: " + err.Error(), Log: res.Log}
		}
		ji.uid, ji.env = u, env
		if u != nil {
			job.keep = append(job.keep, u.private)
		}
	}
	// What else the job must not reach: the runner's files, /tmp, the
	// network (reach.go).
	reach, unreached, err := jobReach(job, filepath.Dir(res.Log), iso, &ji.spec)
	if err != nil {
		ji.uid.done()
		return nil, &Error{Job: job.Name, What: err.Error(), Log: res.Log}
	}
	switch iso.mode {
	case modeNamespaces:
		if len(hide) > 0 {
			res.Isolation += "; covered with an empty file: " + escape.Terminal(strings.Join(hide, ", "))
		}
		res.Isolation += reach
	case modeUID:
		res.Isolation += reach
		if len(hide) > 0 {
			res.Isolation += "; files that hold credentials are not covered (no mount namespace), the job's uid reads what its mode bits let any user read: " + escape.Terminal(strings.Join(hide, ", "))
		}
		if r := readableBy(hide, jobIdentity{iso.uid, iso.gid}); len(r) > 0 {
			res.IsolationWarnings = append(res.IsolationWarnings, fmt.Sprintf("the job (uid %d) can read files that hold credentials, which their mode lets any user read: %s: make them 0600", iso.uid, strings.Join(r, ", ")))
		}
	default:
		res.Isolation += reach
		if unreached != "" {
			res.IsolationWarnings = append(res.IsolationWarnings, unreached)
		}
		if len(hide) > 0 {
			res.IsolationWarnings = append(res.IsolationWarnings, "the files that hold credentials could not be covered (no namespace for the job), and the job could read them: "+strings.Join(hide, ", "))
		}
		if haveInit {
			cg, err := newJobCgroup(token)
			if err != nil {
				res.IsolationWarnings = append(res.IsolationWarnings, "no cgroup of the job's own ("+err.Error()+"): a process the job leaves running outside its process group and session may outlive it")
			} else {
				ji.cg = cg
				res.Isolation += "; a cgroup of its own, killed after it (" + escape.Terminal(cg.where()) + ")"
			}
		}
	}
	return ji, nil
}

// command is the command that starts the job (args) through its init, in
// dir, with env: in the environment of gpugate's own processes where the
// init takes it there, else on its own channel (envFile, the init's fd 4,
// initSpec.Env), and those processes get ownEnv. The caller passes
// envFile on as the second of cmd's ExtraFiles, and closes it.
func (ji *jobIsolation) command(args []string, dir string, env []string) (cmd *exec.Cmd, envFile *os.File, err error) {
	cmd, err = jobCommand(args, ji.spec)
	if err != nil {
		return nil, nil, err
	}
	cmd.Dir = dir
	if !ji.spec.Env {
		cmd.Env = env
	} else {
		if envFile, err = jobEnvFile(env); err != nil {
			return nil, nil, err
		}
		cmd.Env = ownEnv()
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if ji.cg != nil {
		ji.cg.attach(cmd.SysProcAttr)
	}
	return cmd, envFile, nil
}

// killCgroup ends the job's cgroup, if it has one, returning what was
// left in it.
func (ji *jobIsolation) killCgroup() []string {
	if ji.cg == nil {
		return nil
	}
	cg := ji.cg
	ji.cg = nil
	return cg.kill()
}

// done undoes what isolateJob set up: a cgroup never killed (the job did
// not start), the uid mode's HOME and artifacts folder; it says on out
// what it removed from the artifacts folder.
func (ji *jobIsolation) done(out io.Writer, name string) {
	ji.killCgroup()
	if removed := ji.uid.done(); len(removed) > 0 {
		fmt.Fprintf(out, "[%s] gpugate: removed %d entries the job left in the artifacts folder that were not plain files (a link, a FIFO): %s\n", name, len(removed), escape.Terminal(strings.Join(removed, ", ")))
	}
}
