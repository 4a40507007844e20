// Package ci tells which continuous-integration system gpugate runs in and
// what kind of build it is, from the variables each system documents:
// GitHub Actions (GITHUB_ACTIONS), GitLab CI (GITLAB_CI) and Buildkite
// (BUILDKITE). Detect is the one place that reads them: the branch and
// commit of every run (pipeline.GitInfo), and what gpugate ci does (judge a
// merge or pull request, or record a baseline) come from its Build.
package ci

import (
	"regexp"
	"strconv"
	"strings"
)

// Kind names a CI system; "" is none gpugate knows.
type Kind string

const (
	GitHub    Kind = "github"
	GitLab    Kind = "gitlab"
	Buildkite Kind = "buildkite"
)

// Build is what the environment says about the build gpugate runs in.
type Build struct {
	// CI is the system; "" outside any gpugate knows.
	CI Kind
	// Branch and Commit name the code under test, first match wins:
	// GPUGATE_BRANCH/GPUGATE_COMMIT, then GitHub Actions (a pull request's
	// head branch, else the pushed branch), GitLab CI (a merge request's
	// source branch, else the pipeline's branch or tag) and Buildkite. CI
	// systems check out a detached HEAD, so git alone cannot tell. Branch
	// is never "HEAD"; Commit is a full SHA or "" (Buildkite allows "HEAD"
	// as a build's commit).
	Branch, Commit string
	// Change is a merge-request (GitLab) or pull-request (GitHub,
	// Buildkite) build; Number is its number (a GitLab MR's IID), 0 when
	// the system does not say.
	Change bool
	Number int
	// Target is the branch a change merges into; DiffBase the commit it
	// is compared with (GitLab's CI_MERGE_REQUEST_DIFF_BASE_SHA), "" when
	// not told.
	Target, DiffBase string
	// Schedule is a scheduled build (GitLab's and Buildkite's schedules,
	// GitHub's schedule event).
	Schedule bool
	// Default is the project's default branch, "" when the system does not
	// say (GitHub Actions keeps it in the event file only).
	Default string
	// GitLab's API: CI_API_V4_URL and CI_PROJECT_ID.
	APIURL, Project string
}

var branchVars = []string{
	"GPUGATE_BRANCH",
	"GITHUB_HEAD_REF", "GITHUB_REF_NAME",
	"CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "CI_COMMIT_REF_NAME",
	"BUILDKITE_BRANCH",
}

var commitVars = []string{"GPUGATE_COMMIT", "GITHUB_SHA", "CI_COMMIT_SHA", "BUILDKITE_COMMIT"}

var fullSHA = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

var prRef = regexp.MustCompile(`^refs/pull/([0-9]+)/(merge|head)$`)

// Detect reads the build from getenv. It never fails: a variable that is
// absent or malformed leaves its field empty.
func Detect(getenv func(string) string) Build {
	var b Build
	for _, k := range branchVars {
		if v := getenv(k); v != "" && v != "HEAD" {
			b.Branch = v
			break
		}
	}
	for _, k := range commitVars {
		if v := getenv(k); fullSHA.MatchString(v) {
			b.Commit = v
			break
		}
	}
	number := func(s string) int {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return 0
		}
		return n
	}
	switch {
	// GitHub first: under GITHUB_ACTIONS the output goes to GitHub's
	// runner, which reads workflow commands in it, whatever else is set.
	case getenv("GITHUB_ACTIONS") == "true":
		b.CI = GitHub
		ev := getenv("GITHUB_EVENT_NAME")
		b.Schedule = ev == "schedule"
		if strings.HasPrefix(ev, "pull_request") {
			b.Change = true
			b.Target = getenv("GITHUB_BASE_REF")
			if m := prRef.FindStringSubmatch(getenv("GITHUB_REF")); m != nil {
				b.Number = number(m[1])
			}
		}
	case getenv("GITLAB_CI") == "true":
		b.CI = GitLab
		b.APIURL, b.Project = getenv("CI_API_V4_URL"), getenv("CI_PROJECT_ID")
		b.Default = getenv("CI_DEFAULT_BRANCH")
		b.Schedule = getenv("CI_PIPELINE_SOURCE") == "schedule"
		// A merge-request pipeline (merge_request_event, also merged
		// results and merge trains) has the MR's IID; a branch pipeline
		// of the same commit has none, and is not a change.
		if iid := getenv("CI_MERGE_REQUEST_IID"); iid != "" {
			b.Change, b.Number = true, number(iid)
			b.Target = getenv("CI_MERGE_REQUEST_TARGET_BRANCH_NAME")
			if d := getenv("CI_MERGE_REQUEST_DIFF_BASE_SHA"); fullSHA.MatchString(d) {
				b.DiffBase = d
			}
		}
	case getenv("BUILDKITE") == "true":
		b.CI = Buildkite
		b.Default = getenv("BUILDKITE_PIPELINE_DEFAULT_BRANCH")
		b.Schedule = getenv("BUILDKITE_SOURCE") == "schedule"
		// BUILDKITE_PULL_REQUEST is "false" outside a pull request.
		if n := number(getenv("BUILDKITE_PULL_REQUEST")); n > 0 {
			b.Change, b.Number = true, n
			b.Target = getenv("BUILDKITE_PULL_REQUEST_BASE_BRANCH")
		}
	}
	return b
}

// Records reports whether the build records baselines rather than
// judging: a scheduled build, or a push to the default branch (base when
// the system does not name its default branch: perf.yaml's
// baseline.branch). A change never records, whatever its branch.
func (b Build) Records(base string) bool {
	if b.Change {
		return false
	}
	def := b.Default
	if def == "" {
		def = base
	}
	return b.Schedule || (b.Branch != "" && b.Branch == def)
}
