package pipeline

// The checkouts and setup commands of an A/B run (ab.go). Everything ab
// starts besides git itself runs through runner.Run, with the job's
// protections: the denied environment (no token, no store credential, no
// GITHUB_OUTPUT), a process group of its own, the init and its namespace,
// a timeout that kills what the command left running. The worktrees are
// removed and pruned on every way out of AB: its return (an error, or a
// signal, which cancels ctx: see cmd/gpugate/main.go's signals, SIGPIPE
// included); and an ab that could not clean up (SIGKILL) has its leftover
// worktrees removed by the next ab in the repository (pruneStale).

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/runner"
)

// abTempPrefix names the temporary folders that hold an ab's worktrees.
const abTempPrefix = "gpugate-ab-"

// ownerFile, in such a folder, holds "PID STARTTIME" of the gpugate that
// made it, so that a later ab can tell a live one's from a dead one's.
const ownerFile = "owner"

// checkouts are the worktrees of one A/B run.
type checkouts struct {
	root string // the repository
	tmp  string // the folder that holds them
	dirs []string
	log  io.Writer
}

// newCheckouts makes the folder for an A/B run's worktrees, after removing
// what a killed ab left in the repository.
func newCheckouts(ctx context.Context, root string, log io.Writer) (*checkouts, error) {
	pruneStale(root, log)
	tmp, err := os.MkdirTemp("", abTempPrefix)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, ownerFile), []byte(procID(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return &checkouts{root: root, tmp: tmp, log: log}, nil
}

// add checks a side's commit out into a detached worktree.
func (c *checkouts) add(ctx context.Context, s *Side) error {
	s.Dir = filepath.Join(c.tmp, s.Name)
	c.dirs = append(c.dirs, s.Dir) // removed even if add fails half-way
	if _, err := gitOut(ctx, c.root, "worktree", "add", "--detach", "--quiet", s.Dir, s.Commit); err != nil {
		return fmt.Errorf("ab: check out %s %s: %v", s.Name, s.Ref, err)
	}
	return nil
}

// close removes the worktrees and their folder and prunes git's records.
// It runs without the (maybe cancelled) context, bounded on its own.
func (c *checkouts) close() {
	for _, d := range c.dirs {
		gitBounded(c.root, "worktree", "remove", "--force", d)
	}
	os.RemoveAll(c.tmp)
	gitBounded(c.root, "worktree", "prune")
}

// gitBounded runs a clean-up git command, at most 30 s.
func gitBounded(dir string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := gitCommand(ctx, dir, args...)
	cmd.WaitDelay = time.Second
	return cmd.Run()
}

// procID is "PID STARTTIME" of a live process ("" when it is gone): the
// start time tells a reused pid from the process that made a folder.
func procID(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if syscall.Kill(pid, 0) == nil {
			return strconv.Itoa(pid) // no /proc (not Linux): the pid alone
		}
		return ""
	}
	// Fields after the command's closing parenthesis: state is the 3rd
	// field of the line, starttime the 22nd.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return strconv.Itoa(pid) + " " + f[19]
}

// pruneStale removes the worktrees of root that an ab which is no longer
// running left behind (killed by SIGKILL, or by the stop grace of
// cmd/gpugate), then prunes git's records of worktrees whose folder is
// gone.
func pruneStale(root string, log io.Writer) {
	out, err := gitOut(context.Background(), root, "worktree", "list", "--porcelain")
	if err != nil {
		return
	}
	tmpRoot := filepath.Clean(os.TempDir())
	for _, line := range strings.Split(out, "\n") {
		wt, ok := strings.CutPrefix(line, "worktree ")
		if !ok {
			continue
		}
		parent := filepath.Dir(wt)
		if filepath.Dir(parent) != tmpRoot || !strings.HasPrefix(filepath.Base(parent), abTempPrefix) {
			continue
		}
		owner, err := os.ReadFile(filepath.Join(parent, ownerFile))
		if err == nil {
			f := strings.Fields(string(owner))
			if len(f) > 0 {
				if pid, err := strconv.Atoi(f[0]); err == nil && procID(pid) == strings.TrimSpace(string(owner)) {
					continue // a running ab's
				}
			}
		}
		fmt.Fprintf(log, "gpugate: ab: removing the worktree %s that an ab no longer running left behind\n", wt)
		gitBounded(root, "worktree", "remove", "--force", wt)
		os.RemoveAll(parent)
	}
	gitBounded(root, "worktree", "prune")
}

// runSetup runs a side's setup command in its checkout as a job: through
// runner.Run, with the denied environment and the workload's env:, its
// output in the log with the side's prefix and in OUT/SIDE-setup/job.log,
// and the workload's timeout, after which the command and everything it
// started are killed.
func runSetup(ctx context.Context, side, dir string, cmd config.Command, w *config.Workload, out string, log io.Writer) error {
	_, err := runner.Run(ctx, runner.Job{Name: side + " setup", Args: cmd.Args(), Dir: dir, Env: w.Env,
		Timeout: time.Duration(w.Timeout), Profiler: runner.None, Out: filepath.Join(out, side+"-setup"),
		Output: log, KillGrace: 2 * time.Second, Plain: true})
	if err != nil {
		return fmt.Errorf("ab %s setup %q: %w", side, cmd.String(), err)
	}
	fmt.Fprintf(log, "gpugate: ab %s setup done: %s\n", side, cmd.String())
	return nil
}
