package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// yamlStrings returns every string scalar of a YAML document, comments
// included (examples show commands in comments too).
func yamlStrings(n *yaml.Node, out *[]string) {
	if n.Kind == yaml.ScalarNode {
		*out = append(*out, n.Value)
	}
	for _, c := range []string{n.HeadComment, n.LineComment, n.FootComment} {
		if c != "" {
			*out = append(*out, c)
		}
	}
	for _, c := range n.Content {
		yamlStrings(c, out)
	}
}

var gpugateCall = regexp.MustCompile(`\bgpugate((?:[ \t]+[^ \t\n;|&>)]+)+)`)

// errorfer is what checkGpugateCalls reports to: a *testing.T, or a
// recorder in the test of the check itself.
type errorfer interface {
	Helper()
	Errorf(format string, args ...any)
}

type recorder struct{ errs []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// checkGpugateCalls checks every "gpugate CMD -flag" in texts against the
// command table: the command exists and has each flag. It returns how
// many calls it checked.
func checkGpugateCalls(t errorfer, name string, texts []string) int {
	t.Helper()
	n := 0
	for _, text := range texts {
		for _, m := range gpugateCall.FindAllStringSubmatch(text, -1) {
			words := strings.Fields(m[1])
			if len(words) == 0 || strings.HasPrefix(words[0], "-") || strings.Contains(words[0], "/") || strings.ContainsAny(words[0], ".:") {
				continue // prose: "gpugate/gpu", "gpugate." or a path
			}
			cmd, rest := lookup(words)
			if cmd == nil {
				if words[0] == strings.ToLower(words[0]) && len(words) > 1 && strings.HasPrefix(words[1], "-") {
					t.Errorf("%s: %q: no such gpugate command", name, m[0])
				}
				continue
			}
			fs := flag.NewFlagSet(cmd.name(), flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			cmd.flags(fs)
			dbFileFlag(fs)
			for _, w := range rest {
				if !strings.HasPrefix(w, "-") || w == "-" {
					continue
				}
				f, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
				if fs.Lookup(f) == nil {
					t.Errorf("%s: %q: gpugate %s has no flag -%s", name, m[0], cmd.name(), f)
				}
			}
			n++
		}
	}
	return n
}

// TestCIExamples: the GitLab and Buildkite examples parse as YAML, have
// what their docs promise (the MR/PR job, the schedule, exit 3 allowed,
// artifacts, one check at a time), and every gpugate flag they use is one
// the CLI has.
func TestCIExamples(t *testing.T) {
	root := filepath.Join("..", "..", "examples")
	read := func(p string) (*yaml.Node, map[string]any) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		var doc yaml.Node
		var m map[string]any
		if err := yaml.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if err := yaml.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return &doc, m
	}

	doc, gl := read("gitlab/.gitlab-ci.yml")
	var texts []string
	yamlStrings(doc, &texts)
	if n := checkGpugateCalls(t, ".gitlab-ci.yml", texts); n < 3 {
		t.Errorf(".gitlab-ci.yml: %d gpugate calls checked, want the ci job's and the cache-key's", n)
	}
	job := func(name string) map[string]any {
		j, _ := gl[name].(map[string]any)
		if j == nil {
			t.Fatalf(".gitlab-ci.yml: no job %s", name)
		}
		return j
	}
	tmpl, mr, nightly := job(".gpugate"), job("gpugate-mr"), job("gpugate-baseline")
	if af, _ := mr["allow_failure"].(map[string]any); af == nil || len(af["exit_codes"].([]any)) != 1 || af["exit_codes"].([]any)[0] != 3 {
		t.Errorf("gpugate-mr: allow_failure %v, want exit_codes: [3]", mr["allow_failure"])
	}
	if a, _ := tmpl["artifacts"].(map[string]any); a == nil || a["expire_in"] == nil || a["paths"] == nil {
		t.Errorf(".gpugate: artifacts %v, want paths and expire_in", tmpl["artifacts"])
	}
	if tmpl["resource_group"] == nil {
		t.Errorf(".gpugate: no resource_group")
	}
	for name, j := range map[string]map[string]any{"gpugate-mr": mr, "gpugate-baseline": nightly} {
		if j["extends"] != ".gpugate" {
			t.Errorf("%s extends %v, want .gpugate", name, j["extends"])
		}
	}
	ruleIfs := func(j map[string]any) string {
		var s []string
		for _, r := range j["rules"].([]any) {
			s = append(s, r.(map[string]any)["if"].(string))
		}
		return strings.Join(s, " ; ")
	}
	if r := ruleIfs(mr); !strings.Contains(r, `merge_request_event`) {
		t.Errorf("gpugate-mr rules %q: not merge request pipelines", r)
	}
	if r := ruleIfs(nightly); !strings.Contains(r, `"schedule"`) || strings.Contains(r, "merge_request") {
		t.Errorf("gpugate-baseline rules %q: want the schedule and no merge requests", r)
	}
	if s := tmpl["script"].([]any); !strings.Contains(s[len(s)-1].(string), "gpugate ci ") {
		t.Errorf(".gpugate script %v: does not run gpugate ci", s)
	}

	doc, bk := read("buildkite/pipeline.yml")
	texts = nil
	yamlStrings(doc, &texts)
	if n := checkGpugateCalls(t, "pipeline.yml", texts); n < 2 {
		t.Errorf("pipeline.yml: %d gpugate calls checked, want 2", n)
	}
	steps, _ := bk["steps"].([]any)
	if len(steps) != 2 {
		t.Fatalf("pipeline.yml: %d steps, want the pull request's and the baseline's", len(steps))
	}
	pr, base := steps[0].(map[string]any), steps[1].(map[string]any)
	if !strings.Contains(pr["if"].(string), "pull_request") || !strings.Contains(base["if"].(string), `"schedule"`) {
		t.Errorf("pipeline.yml: if %q and %q, want a pull request step and a scheduled one", pr["if"], base["if"])
	}
	if sf, _ := pr["soft_fail"].([]any); len(sf) != 1 || sf[0].(map[string]any)["exit_status"] != 3 {
		t.Errorf("pull request step: soft_fail %v, want [{exit_status: 3}]", pr["soft_fail"])
	}
	for _, s := range []map[string]any{pr, base} {
		if s["artifact_paths"] == nil || !strings.HasPrefix(s["command"].(string), "gpugate ci ") {
			t.Errorf("step %q: artifact_paths %v, command %q", s["label"], s["artifact_paths"], s["command"])
		}
	}
}

// TestCIExamplesCheckFlags: the flag check finds a flag the CLI lacks.
func TestCIExamplesCheckFlags(t *testing.T) {
	texts := []string{"script: gpugate ci -config perf.yaml -bogus x", "gpugate baseline cache-key -config p -db d", "gpugate ci-nope -config x"}
	r := &recorder{}
	if n := checkGpugateCalls(r, "x", texts); n != 2 {
		t.Errorf("%d calls checked, want 2", n)
	}
	if len(r.errs) != 2 || !strings.Contains(r.errs[0], "no flag -bogus") || !strings.Contains(r.errs[1], "no such gpugate command") {
		t.Errorf("errors %q, want one about -bogus and one about ci-nope", r.errs)
	}
}
