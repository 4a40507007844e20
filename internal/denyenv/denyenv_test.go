package denyenv

import (
	"slices"
	"testing"
)

// TestFilterCI: the secrets of GitLab CI and Buildkite that gpugate ci
// runs with never reach the job; what the job legitimately reads about its
// build does.
func TestFilterCI(t *testing.T) {
	in := []string{"GPUGATE_GITLAB_TOKEN=glpat-x", "CI_JOB_TOKEN=j", "CI_REPOSITORY_URL=https://gitlab-ci-token:j@gitlab.example/a/b.git",
		"CI_REGISTRY_PASSWORD=j", "CI_DEPENDENCY_PROXY_PASSWORD=j", "CI_JOB_JWT_V2=jwt", "CI_DEPLOY_PASSWORD=d",
		"BUILDKITE_AGENT_ACCESS_TOKEN=bk", "BUILDKITE_AGENT_JOB_API_TOKEN=t", "BUILDKITE_AGENT_JOB_API_SOCKET=/s",
		"CI_COMMIT_SHA=abc", "CI_MERGE_REQUEST_IID=5", "BUILDKITE_BRANCH=main", "BUILDKITE_AGENT_NAME=gpu-1"}
	got := Filter(in)
	want := []string{"CI_COMMIT_SHA=abc", "CI_MERGE_REQUEST_IID=5", "BUILDKITE_BRANCH=main", "BUILDKITE_AGENT_NAME=gpu-1"}
	if !slices.Equal(got, want) {
		t.Errorf("Filter(%q) = %q, want %q", in, got, want)
	}
}

func TestFilter(t *testing.T) {
	in := []string{"PATH=/bin", "GITHUB_TOKEN=t", "INPUT_GITHUB-TOKEN=t", "ACTIONS_ID_TOKEN_REQUEST_URL=u", "PGPASSWORD=p",
		"GPUGATE_ENV_DENY=MY_SECRET, CLOUD_*", "MY_SECRET=s", "CLOUD_KEY=k", "CLOUDY=ok", "HOME=/h", "GITHUB_TOKENS=kept"}
	got := Filter(in)
	want := []string{"PATH=/bin", "GPUGATE_ENV_DENY=MY_SECRET, CLOUD_*", "CLOUDY=ok", "HOME=/h", "GITHUB_TOKENS=kept"}
	if !slices.Equal(got, want) {
		t.Errorf("Filter(%q) = %q, want %q", in, got, want)
	}
}
