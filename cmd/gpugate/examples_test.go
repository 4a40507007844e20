package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The example workflows keep the properties the README promises of them.
func TestExampleWorkflows(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(repoRoot(t), "examples", "workflows", "*.yml"))
	if len(files) != 4 {
		t.Fatalf("%d example workflows, want 4", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var wf struct {
			Concurrency any `yaml:"concurrency"`
			Jobs        map[string]struct {
				If    string           `yaml:"if"`
				Steps []map[string]any `yaml:"steps"`
			} `yaml:"jobs"`
		}
		if err := yaml.Unmarshal(b, &wf); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		name := filepath.Base(f)
		if wf.Concurrency == nil {
			t.Errorf("%s: no concurrency group", name)
		}
		s := string(b)
		if strings.Contains(s, "|| true") {
			t.Errorf("%s hides a failure behind || true", name)
		}
		if strings.Contains(s, "@main") {
			t.Errorf("%s pins a branch, not a release", name)
		}
		for _, j := range wf.Jobs {
			switch name {
			case "gpugate-fork-safe-comment.yml":
				if !strings.Contains(j.If, "workflow_run.conclusion == 'success'") {
					t.Errorf("%s: no conclusion == 'success' guard", name)
				}
				if !strings.Contains(s, "pr-info: pr/gpugate-pr.json") || !strings.Contains(s, "name: gpugate-pr") {
					t.Errorf("%s: does not take the pull request from part 1's gpugate-pr", name)
				}
			case "gpugate-fork-safe-run.yml":
				if !strings.Contains(j.If, "github.event.label.name == 'gpu-perf'") {
					t.Errorf("%s: not gated on the label being added", name)
				}
				if !strings.Contains(s, "environment: gpu-perf") || !strings.Contains(s, "persist-credentials: false") {
					t.Errorf("%s: no environment protection or credentials kept", name)
				}
				// Issue 23: the pull request is recorded by a job that runs
				// no PR code, before the GPU job.
				if !strings.Contains(s, "name: gpugate-pr") || !strings.Contains(s, "needs: pr") || strings.Count(s, "actions/checkout") != 1 {
					t.Errorf("%s: no job that records the pull request without its code", name)
				}
			}
		}
	}
}
