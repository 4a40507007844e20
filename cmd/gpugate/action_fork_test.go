package main

import (
	"encoding/json"
	"fmt"
	"github.com/gpugate/gpugate/action"
	"github.com/gpugate/gpugate/internal/mdcheck"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fork flow's privileged side: mode comment takes the pull request from
// the workflow_run event and the API, never from the artifact, and refuses
// an artifact that disagrees; names in the artifact are escaped.
func TestActionCommentModeForged(t *testing.T) {
	f := newActionFixture(t)
	// The untrusted side: a pr-mode run of PR 12 (its head SHA is a's) that
	// writes gpugate-result.json and comments nowhere.
	m, _, _ := f.env(t, 12, f.regressCfg, nil, "GPUGATE_COMMENT", "never", "GPUGATE_FAIL_ON_REGRESSION", "false")
	if err, _, _ := runEnv(m); err != nil {
		t.Fatal(err)
	}
	_, art := action.Folders(m.get, "resnet")
	genuine, err := os.ReadFile(filepath.Join(art, "gpugate-result.json"))
	if err != nil {
		t.Fatal(err)
	}
	head := strings.Repeat("a", 40)
	other := strings.Repeat("b", 40)
	f.gh.AddPR(12, "fork/train", "feature", head)
	f.gh.AddPR(13, "acme/train", "victim", other)

	// comment runs the privileged job on a workflow_run event for the run
	// of headSHA, with the artifact edited by forge.
	comment := func(conclusion, headSHA string, forge func(map[string]any)) (error, string, string) {
		t.Helper()
		var doc map[string]any
		json.Unmarshal(genuine, &doc)
		if forge != nil {
			forge(doc)
		}
		dir := t.TempDir()
		res, event := filepath.Join(dir, "gpugate-result.json"), filepath.Join(dir, "event.json")
		b, _ := json.Marshal(doc)
		os.WriteFile(res, b, 0o644)
		ev, _ := json.Marshal(map[string]any{"action": "completed", "workflow_run": map[string]any{"id": 991, "conclusion": conclusion, "event": "pull_request",
			"head_sha": headSHA, "head_branch": "feature", "head_repository": map[string]any{"full_name": "fork/train"}}})
		os.WriteFile(event, ev, 0o644)
		sum := filepath.Join(dir, "summary")
		os.WriteFile(sum, nil, 0o644)
		env := actionEnv{"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": sum, "GITHUB_EVENT_NAME": "workflow_run", "GITHUB_EVENT_PATH": event,
			"GITHUB_API_URL": f.gh.URL, "GITHUB_REPOSITORY": "acme/train", "GITHUB_SERVER_URL": "https://github.example",
			"GPUGATE_MODE": "comment", "GPUGATE_RESULT": res, "GPUGATE_GITHUB_TOKEN": "token-abcdefghijkl",
			"GPUGATE_CONFIG": f.regressCfg}
		err, stdout, _ := runEnv(env)
		s, _ := os.ReadFile(sum)
		return err, stdout, string(s)
	}
	nothingPosted := func(what string) {
		t.Helper()
		for _, pr := range []int{12, 13} {
			if c, _ := f.gh.Snapshot(pr); len(c) != 0 {
				t.Errorf("%s: posted to #%d: %q", what, pr, c[0].Body)
			}
		}
	}
	refused := func(what string, err error, stdout, summary string, why string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), why) || !strings.Contains(stdout, "::error title=gpugate%3A artifact refused::") || !strings.Contains(summary, "posted no comment") {
			t.Errorf("%s: err %v; want a refusal naming %q, annotated and in the summary\n%s", what, err, why, stdout)
		}
		nothingPosted(what)
	}

	// Forged: the artifact names the other PR.
	err, out, sum := comment("success", head, func(d map[string]any) { d["pr"] = 13 })
	refused("other PR number", err, out, sum, "names pull request #13")
	// Forged: the artifact is for another commit (the victim's).
	err, out, sum = comment("success", head, func(d map[string]any) { d["head_sha"] = other })
	refused("other head SHA", err, out, sum, "is for commit")
	// A run that failed, or a commit that heads no open PR.
	err, out, sum = comment("failure", head, nil)
	refused("failed run", err, out, sum, "concluded")
	err, out, sum = comment("success", strings.Repeat("c", 40), nil)
	refused("unknown commit", err, out, sum, "no open pull request")
	// A workload name that is not a plain name, and a metric gpugate does
	// not compute.
	err, out, sum = comment("success", head, func(d map[string]any) { d["workload"] = "resnet --> </details> @admin" })
	refused("workload name", err, out, sum, "not a plain name")
	err, out, sum = comment("success", head, func(d map[string]any) {
		d["report"].(map[string]any)["metrics"].([]any)[0].(map[string]any)["name"] = "[click](https://evil.example)"
	})
	refused("unknown metric", err, out, sum, "does not compute")
	if strings.Contains(sum, "[click](https://evil.example)") && !strings.Contains(sum, "`nothing posted") {
		t.Errorf("the refusal renders the artifact's Markdown in the summary:\n%s", sum)
	}

	// Hostile text in names that may hold anything (kernel names, finding
	// text, warnings, the machine), and a Markdown comment smuggled in the
	// old format's "comment" field: posted to #12 only, escaped; the verdict
	// comes from the metrics, not from the artifact's say-so.
	const evil = "x</details>\n\n## @octocat **pwned** [click](https://evil.example) <img src=x>\n::warning::injected"
	err, out, _ = comment("success", head, func(d map[string]any) {
		d["comment"] = "<!-- gpugate:resnet -->\n# raw markdown from the artifact"
		d["machine"] = evil
		d["baseline"] = evil
		r := d["report"].(map[string]any)
		r["verdict"] = "pass"
		r["warnings"] = []any{evil}
		if ks := r["kernels"].(map[string]any)["added"].([]any); len(ks) > 0 {
			ks[0].(map[string]any)["name"] = evil
		}
		if fs := r["findings"].([]any); len(fs) > 0 {
			fs[0].(map[string]any)["summary"] = evil
			fs[0].(map[string]any)["suggestion"] = evil
		}
	})
	if err != nil {
		t.Fatalf("genuine artifact with hostile names: %v", err)
	}
	if c, _ := f.gh.Snapshot(13); len(c) != 0 {
		t.Fatalf("posted to the other PR")
	}
	c, _ := f.gh.Snapshot(12)
	if len(c) != 1 {
		t.Fatalf("%d comments on #12, want 1", len(c))
	}
	body := c[0].Body
	// What GitHub would make of it (goldmark as the stand-in, as the
	// escaping fuzzers do): only gpugate's own HTML, no live mention, no
	// link, no heading or emphasis from the artifact, no workflow command.
	h := mdcheck.HTML(body)
	tags := mdcheck.Tags(h)
	for tag := range tags {
		switch strings.TrimPrefix(tag, "/") {
		case "p", "h3", "h4", "strong", "em", "code", "pre", "table", "thead", "tbody", "tr", "th", "td", "ul", "li", "details", "summary", "sub", "!--", "blockquote":
		default:
			t.Errorf("tag <%s> from the artifact in the rendered comment:\n%s", tag, h)
		}
	}
	if tags["details"] != tags["/details"] {
		t.Errorf("%d <details> but %d </details>", tags["details"], tags["/details"])
	}
	if live := mdcheck.Live(mdcheck.Text(h)); live != "" {
		t.Errorf("live mention or reference %q in the comment", live)
	}
	for _, bad := range []string{"<strong>pwned", ">raw markdown</h", "<a ", "\n::warning::injected"} {
		if strings.Contains(h, bad) || strings.Contains(body, "\n::warning::injected") {
			t.Errorf("comment holds %q from the artifact", bad)
		}
	}
	if !strings.Contains(body, "❌ **regression**") {
		t.Errorf("the artifact's \"pass\" was believed over its metrics:\n%.600s", body)
	}
	if !strings.Contains(body, "https://github.example/acme/train/actions/runs/991") {
		t.Errorf("no link to the run's artifacts")
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "::warning::injected") {
			t.Errorf("workflow command from the artifact in the log: %q", line)
		}
	}
	fmt.Fprint(os.Stderr, "")
}
