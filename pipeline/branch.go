package pipeline

import (
	"context"
	"regexp"
)

// Detached is the branch of a run whose branch nobody could tell: a
// detached HEAD without a CI variable naming the branch. It has a space,
// which no git branch name has, so it never matches a real branch; a run
// on it is compared with the base branch at the merge-base and can never
// be recorded as a baseline.
const Detached = "(detached HEAD)"

// branchVars are the variables that name the branch under test, first
// match wins: gpugate's own, then GitHub Actions (a pull request's head
// branch, else the pushed branch), GitLab CI (a merge request's source
// branch, else the pipeline's branch or tag) and Buildkite. CI systems
// check out a detached HEAD, so git alone cannot tell.
var branchVars = []string{
	"GPUGATE_BRANCH",
	"GITHUB_HEAD_REF", "GITHUB_REF_NAME",
	"CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "CI_COMMIT_REF_NAME",
	"BUILDKITE_BRANCH",
}

// commitVars name the commit under test, in the same order.
var commitVars = []string{"GPUGATE_COMMIT", "GITHUB_SHA", "CI_COMMIT_SHA", "BUILDKITE_COMMIT"}

var fullSHA = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// GitInfo says which branch and commit the code in dir is: from the
// variables above, else from git. A detached HEAD that no variable names
// is Detached, never "HEAD" (which the store would take for a branch of
// that name); outside a git repository the branch and commit are "".
func GitInfo(ctx context.Context, dir string, getenv func(string) string) (branch, commit string) {
	for _, k := range branchVars {
		if v := getenv(k); v != "" && v != "HEAD" {
			branch = v
			break
		}
	}
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
	for _, k := range commitVars {
		// Buildkite allows "HEAD" as a build's commit: only a full SHA is one.
		if v := getenv(k); fullSHA.MatchString(v) {
			commit = v
			break
		}
	}
	if commit == "" {
		commit, _ = gitOut(ctx, dir, "rev-parse", "HEAD")
	}
	return branch, commit
}
