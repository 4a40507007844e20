package main

import (
	"strings"
	"testing"

	"github.com/gpugate/gpugate/action"
)

// The issue's done-when for the alert, through the action in refresh mode
// against the GitHub stand-in: a night of num_workers=4 runs, then a night
// of num_workers=0 runs opens one issue per shifted metric (step_time
// among them, label gpugate/perf-shift); the next night's refresh updates
// them and opens none.
func TestActionRefreshAlert(t *testing.T) {
	f := newActionFixture(t)
	night := func(cfg string) string {
		t.Helper()
		m, _, _ := f.env(t, 0, cfg, nil, "GPUGATE_MODE", "refresh", "GITHUB_EVENT_NAME", "schedule")
		err, stdout, stderr := runEnv(m)
		if err != nil {
			t.Fatalf("refresh: %v\n%s\n%s", err, stdout, stderr)
		}
		return stdout
	}
	night(f.passCfg)
	if len(f.gh.Issues) != 0 {
		t.Fatalf("a night without a shift opened %d issue(s)", len(f.gh.Issues))
	}
	out := night(f.regressCfg)
	var step *struct{ n int }
	titles := map[string]bool{}
	for _, is := range f.gh.Issues {
		titles[is.Title] = true
		if is.Title == "gpugate: sustained shift in step_time of resnet" {
			step = &struct{ n int }{is.Number}
			if !strings.HasPrefix(is.Body, "<!-- gpugate:perf-shift:resnet:step_time -->") || !strings.Contains(is.Body, "moved at run #9 of 13") ||
				!strings.Contains(is.Body, "xychart-beta") || len(is.Labels) != 1 || is.Labels[0].Name != action.ShiftLabel {
				t.Errorf("step_time issue:\n%s", is.Body)
			}
		}
	}
	if step == nil || len(titles) != len(f.gh.Issues) {
		t.Fatalf("issues %v; log:\n%s", titles, out)
	}
	if !strings.Contains(out, "opened issue #") {
		t.Errorf("no notice of the new issue:\n%s", out)
	}
	n := len(f.gh.Issues)
	out = night(f.regressCfg)
	if len(f.gh.Issues) != n || !strings.Contains(out, "updated issue #") {
		t.Errorf("night 3: %d issues (want the %d of night 2, updated)\n%s", len(f.gh.Issues), n, out)
	}
	if body := f.gh.Issues[step.n-1].Body; !strings.Contains(body, "moved at run #9 of 18") {
		t.Errorf("night 3: the step_time issue was not updated:\n%s", body)
	}
	t.Logf("issues: %v", titles)
}
