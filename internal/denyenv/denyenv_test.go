package denyenv

import (
	"slices"
	"testing"
)

func TestFilter(t *testing.T) {
	in := []string{"PATH=/bin", "GITHUB_TOKEN=t", "INPUT_GITHUB-TOKEN=t", "ACTIONS_ID_TOKEN_REQUEST_URL=u", "PGPASSWORD=p",
		"GPUGATE_ENV_DENY=MY_SECRET, CLOUD_*", "MY_SECRET=s", "CLOUD_KEY=k", "CLOUDY=ok", "HOME=/h", "GITHUB_TOKENS=kept"}
	got := Filter(in)
	want := []string{"PATH=/bin", "GPUGATE_ENV_DENY=MY_SECRET, CLOUD_*", "CLOUDY=ok", "HOME=/h", "GITHUB_TOKENS=kept"}
	if !slices.Equal(got, want) {
		t.Errorf("Filter(%q) = %q, want %q", in, got, want)
	}
}
