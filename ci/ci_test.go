package ci

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

const sha = "0123456789abcdef0123456789abcdef01234567"
const base = "89abcdef0123456789abcdef0123456789abcdef"

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name    string
		getenv  func(string) string
		want    Build
		records bool
	}{
		{"none", env("CI", "true", "CI_COMMIT_REF_NAME", "x"), Build{Branch: "x"}, false},
		{"gitlab MR", env("GITLAB_CI", "true", "CI_PIPELINE_SOURCE", "merge_request_event", "CI_MERGE_REQUEST_IID", "12",
			"CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "feat", "CI_COMMIT_REF_NAME", "feat", "CI_COMMIT_SHA", sha,
			"CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "release", "CI_MERGE_REQUEST_DIFF_BASE_SHA", base, "CI_DEFAULT_BRANCH", "main",
			"CI_API_V4_URL", "https://gitlab.example/api/v4", "CI_PROJECT_ID", "42"),
			Build{CI: GitLab, Branch: "feat", Commit: sha, Change: true, Number: 12, Target: "release", DiffBase: base, Default: "main",
				APIURL: "https://gitlab.example/api/v4", Project: "42"}, false},
		// An MR whose source branch is the default branch is still a change.
		{"gitlab MR from main", env("GITLAB_CI", "true", "CI_MERGE_REQUEST_IID", "3", "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "main", "CI_DEFAULT_BRANCH", "main", "CI_MERGE_REQUEST_DIFF_BASE_SHA", "HEAD"),
			Build{CI: GitLab, Branch: "main", Change: true, Number: 3, Default: "main"}, false},
		{"gitlab schedule", env("GITLAB_CI", "true", "CI_PIPELINE_SOURCE", "schedule", "CI_COMMIT_REF_NAME", "nightly", "CI_DEFAULT_BRANCH", "main"),
			Build{CI: GitLab, Branch: "nightly", Schedule: true, Default: "main"}, true},
		{"gitlab push main", env("GITLAB_CI", "true", "CI_PIPELINE_SOURCE", "push", "CI_COMMIT_REF_NAME", "main", "CI_DEFAULT_BRANCH", "main"),
			Build{CI: GitLab, Branch: "main", Default: "main"}, true},
		{"gitlab push branch", env("GITLAB_CI", "true", "CI_PIPELINE_SOURCE", "push", "CI_COMMIT_REF_NAME", "feat", "CI_DEFAULT_BRANCH", "main"),
			Build{CI: GitLab, Branch: "feat", Default: "main"}, false},
		{"buildkite PR", env("BUILDKITE", "true", "BUILDKITE_PULL_REQUEST", "77", "BUILDKITE_PULL_REQUEST_BASE_BRANCH", "main", "BUILDKITE_BRANCH", "feat", "BUILDKITE_COMMIT", "HEAD"),
			Build{CI: Buildkite, Branch: "feat", Change: true, Number: 77, Target: "main"}, false},
		{"buildkite push", env("BUILDKITE", "true", "BUILDKITE_PULL_REQUEST", "false", "BUILDKITE_BRANCH", "trunk", "BUILDKITE_PIPELINE_DEFAULT_BRANCH", "trunk", "BUILDKITE_COMMIT", sha),
			Build{CI: Buildkite, Branch: "trunk", Commit: sha, Default: "trunk"}, true},
		{"buildkite schedule", env("BUILDKITE", "true", "BUILDKITE_PULL_REQUEST", "false", "BUILDKITE_SOURCE", "schedule", "BUILDKITE_BRANCH", "main"),
			Build{CI: Buildkite, Branch: "main", Schedule: true}, true},
		{"github PR", env("GITHUB_ACTIONS", "true", "GITHUB_EVENT_NAME", "pull_request", "GITHUB_REF", "refs/pull/5/merge", "GITHUB_BASE_REF", "main", "GITHUB_HEAD_REF", "feat", "GITHUB_SHA", sha),
			Build{CI: GitHub, Branch: "feat", Commit: sha, Change: true, Number: 5, Target: "main"}, false},
		// No default branch in GitHub's variables: perf.yaml's (main) decides.
		{"github push main", env("GITHUB_ACTIONS", "true", "GITHUB_EVENT_NAME", "push", "GITHUB_REF_NAME", "main"),
			Build{CI: GitHub, Branch: "main"}, true},
		{"gpugate's own first", env("GITLAB_CI", "true", "GPUGATE_BRANCH", "mine", "CI_COMMIT_REF_NAME", "theirs"),
			Build{CI: GitLab, Branch: "mine"}, false},
	} {
		got := Detect(tc.getenv)
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s: Detect (-want +got):\n%s", tc.name, d)
		}
		if r := got.Records("main"); r != tc.records {
			t.Errorf("%s: Records(main) = %v, want %v", tc.name, r, tc.records)
		}
	}
}
