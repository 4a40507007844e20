package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/action"
)

// prTargetRunEvent is a workflow_run "completed" event for a run of part 1
// that pull_request_target started, shaped as GitHub sends it. Sources:
//   - the payload's fields: octokit/webhooks,
//     payload-examples/api.github.com/workflow_run/completed.payload.json
//     (action, workflow_run.{id, event, conclusion, head_branch, head_sha,
//     head_repository, repository, pull_requests}, repository, sender);
//   - what a pull_request_target run is on: GitHub's "Events that trigger
//     workflows", pull_request_target: GITHUB_SHA is the last commit on the
//     pull request's base branch and GITHUB_REF the base branch, so the run
//     (and the workflow_run event about it) has head_sha = the base's
//     commit, head_branch = the base branch, head_repository = the base
//     repository; workflow_run.pull_requests is empty for a fork.
func prTargetRunEvent(t *testing.T, path, conclusion, baseSHA string) {
	t.Helper()
	repo := map[string]any{"id": 300029405, "name": "train", "full_name": "acme/train", "fork": false, "owner": map[string]any{"login": "acme", "type": "Organization"}}
	ev := map[string]any{
		"action":   "completed",
		"workflow": map[string]any{"id": 2823525, "name": "gpugate (fork-safe run)", "path": ".github/workflows/gpugate-fork-safe-run.yml", "state": "active"},
		"workflow_run": map[string]any{
			"id": 991, "name": "gpugate (fork-safe run)", "event": "pull_request_target", "status": "completed", "conclusion": conclusion,
			"head_branch": "main", "head_sha": baseSHA,
			"head_commit":     map[string]any{"id": baseSHA, "message": "the base branch's last commit"},
			"head_repository": repo, "repository": repo, "pull_requests": []any{},
			"html_url":      "https://github.com/acme/train/actions/runs/991",
			"artifacts_url": "https://api.github.com/repos/acme/train/actions/runs/991/artifacts",
		},
		"repository": repo,
		"sender":     map[string]any{"login": "maintainer", "type": "User"},
	}
	b, _ := json.Marshal(ev)
	os.WriteFile(path, b, 0o644)
}

// Issue 23 item 6: part 2 of the fork-safe pair on the payload GitHub
// sends for a pull_request_target run. The run's head_sha is the base's,
// so the pull request comes from pr-info (part 1's first job, which runs
// no PR code) checked against the API; every metric is judged again from
// its samples, whatever verdicts the artifact claims; $ reaches the
// comment only as &#36;.
func TestForkSafeCommentOnPullRequestTarget(t *testing.T) {
	f := newActionFixture(t)
	m, _, _ := f.env(t, 12, f.regressCfg, nil, "GPUGATE_COMMENT", "never", "GPUGATE_FAIL_ON_REGRESSION", "false")
	if err, _, stderr := runEnv(m); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	_, art := action.Folders(m.get, "resnet")
	genuine, err := os.ReadFile(filepath.Join(art, "gpugate-result.json"))
	if err != nil {
		t.Fatal(err)
	}
	head, other, base := strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("d", 40)
	f.gh.AddPR(12, "fork/train", "feature", head)
	f.gh.AddPR(13, "acme/train", "victim", other)
	stale := f.gh.AddPR(14, "fork/train", "pushed", strings.Repeat("e", 40))
	_ = stale

	comment := func(prInfo string, forge func(map[string]any)) (error, string) {
		t.Helper()
		var doc map[string]any
		json.Unmarshal(genuine, &doc)
		if forge != nil {
			forge(doc)
		}
		dir := t.TempDir()
		res, event, sum := filepath.Join(dir, "gpugate-result.json"), filepath.Join(dir, "event.json"), filepath.Join(dir, "summary")
		b, _ := json.Marshal(doc)
		os.WriteFile(res, b, 0o644)
		prTargetRunEvent(t, event, "success", base)
		os.WriteFile(sum, nil, 0o644)
		env := actionEnv{"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": sum, "GITHUB_EVENT_NAME": "workflow_run", "GITHUB_EVENT_PATH": event,
			"GITHUB_API_URL": f.gh.URL, "GITHUB_REPOSITORY": "acme/train", "GITHUB_SERVER_URL": "https://github.example",
			"GPUGATE_MODE": "comment", "GPUGATE_RESULT": res, "GPUGATE_GITHUB_TOKEN": "token-abcdefghijkl",
			"GPUGATE_CONFIG": f.regressCfg}
		if prInfo != "" {
			p := filepath.Join(dir, "gpugate-pr.json")
			os.WriteFile(p, []byte(prInfo), 0o644)
			env["GPUGATE_PR_INFO"] = p
		}
		err, stdout, _ := runEnv(env)
		return err, stdout
	}
	none := func(what string) {
		t.Helper()
		for _, pr := range []int{12, 13, 14} {
			if c, _ := f.gh.Snapshot(pr); len(c) != 0 {
				t.Fatalf("%s: posted to #%d", what, pr)
			}
		}
	}
	for _, c := range []struct{ name, info, want string }{
		// What comment mode did before: look for the PR whose head is the
		// run's head_sha, which is the base's commit: never found.
		{"no pr-info", "", "carries the base branch's commit"},
		{"pr-info of another PR", `{"pr": 13, "head_sha": "` + other + `", "head_repo": "acme/train"}`, "is for commit"},
		{"pr-info pushed to since", `{"pr": 14, "head_sha": "` + strings.Repeat("f", 40) + `", "head_repo": "fork/train"}`, "pushed to since"},
		{"pr-info of no PR", `{"pr": 99, "head_sha": "` + head + `", "head_repo": "fork/train"}`, "pull request #99"},
		{"pr-info not JSON", `#12 ` + head, "not {"},
		{"pr-info from another repo", `{"pr": 12, "head_sha": "` + head + `", "head_repo": "evil/train"}`, "comes from fork/train"},
	} {
		err, _ := comment(c.info, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a refusal naming %q", c.name, err, c.want)
		}
		none(c.name)
	}

	// The genuine pr-info: posted to #12. The artifact claims every metric
	// passed, and carries $…$ math in text the comment shows.
	info := `{"pr": 12, "head_sha": "` + head + `", "head_repo": "fork/train"}`
	err, _ = comment(info, func(d map[string]any) {
		r := d["report"].(map[string]any)
		r["verdict"] = "pass"
		for _, m := range r["metrics"].([]any) {
			m.(map[string]any)["verdict"] = "pass"
			m.(map[string]any)["why"] = "$\\frac{a}{b}$ fine"
		}
		r["warnings"] = []any{"$x^2$ and $$y$$ and $`z`$"}
		if fs := r["findings"].([]any); len(fs) > 0 {
			fs[0].(map[string]any)["summary"] = "$$\\int$$"
		}
	})
	if err != nil {
		t.Fatalf("genuine pr-info: %v", err)
	}
	cs, _ := f.gh.Snapshot(12)
	if len(cs) != 1 {
		t.Fatalf("%d comments on #12, want 1", len(cs))
	}
	body := cs[0].Body
	if !strings.Contains(body, "❌ **regression**") {
		t.Errorf("the artifact's verdicts were believed:\n%.800s", body)
	}
	row := ""
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "|") && strings.Contains(l, "step_time") && row == "" {
			row = l
		}
	}
	if !strings.Contains(row, "❌ regression") {
		t.Errorf("step_time row %q: the metric's 'pass' from the artifact was believed (177 ms against 121 ms)", row)
	}
	if strings.Contains(body, "$") {
		i := strings.Index(body, "$")
		t.Errorf("a $ reached the comment (math can open): …%s…", body[max(0, i-80):min(len(body), i+80)])
	}
	for _, c := range []int{13, 14} {
		if x, _ := f.gh.Snapshot(c); len(x) != 0 {
			t.Errorf("posted to #%d", c)
		}
	}
}
