package pipeline

import (
	"context"

	"github.com/gpugate/gpugate/ci"
)

// Detached is the branch of a run whose branch nobody could tell: a
// detached HEAD without a CI variable naming the branch. It has a space,
// which no git branch name has, so it never matches a real branch; a run
// on it is compared with the base branch at the merge-base and can never
// be recorded as a baseline.
const Detached = "(detached HEAD)"

// GitInfo says which branch and commit the code in dir is: from the
// CI's variables (ci.Detect), else from git. A detached HEAD that no variable names
// is Detached, never "HEAD" (which the store would take for a branch of
// that name); outside a git repository the branch and commit are "".
func GitInfo(ctx context.Context, dir string, getenv func(string) string) (branch, commit string) {
	// ci.Detect names the variables, for every CI in one place.
	b := ci.Detect(getenv)
	branch, commit = b.Branch, b.Commit
	if branch == "" {
		// Outside a git repository branch stays "": the base branch, as
		// for a job that is not under version control.
		if _, err := gitOut(ctx, dir, "rev-parse", "--git-dir"); err == nil {
			if b, err := gitOut(ctx, dir, "symbolic-ref", "-q", "--short", "HEAD"); err == nil && b != "" {
				branch = b
			} else {
				branch = Detached
			}
		}
	}
	if commit == "" {
		commit, _ = gitOut(ctx, dir, "rev-parse", "HEAD")
	}
	return branch, commit
}
