package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestActionTokens: only the steps that post (post, comment, and refresh
// mode's alert, which opens issues after the job has ended) get a token;
// the steps that run the pull request's code (gate) or prepare for it get
// none, nor the store's URL beyond the steps that open it. A token the
// run phase never holds cannot leak to the job, whatever the job reads.
func TestActionTokens(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		Runs struct {
			Steps []struct {
				ID   string            `yaml:"id"`
				Env  map[string]string `yaml:"env"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"runs"`
	}
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	posting := map[string]bool{"post": true, "comment": true, "alert": true}
	seen := 0
	for _, s := range a.Runs.Steps {
		for k, v := range s.Env {
			token := strings.Contains(v, "github-token") || strings.Contains(v, "github.token") || strings.Contains(v, "secrets.") || strings.Contains(k, "TOKEN")
			if token && !posting[s.ID] {
				t.Errorf("step %q gets a token: %s: %s", s.ID, k, v)
			}
			if token && posting[s.ID] {
				seen++
			}
		}
	}
	if seen == 0 {
		t.Error("no step gets the token: the test reads action.yml wrong")
	}
}
