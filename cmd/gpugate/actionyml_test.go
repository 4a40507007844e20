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

// TestActionStoreNotInEnv: the store's URL (which may hold a password)
// reaches no step's environment but prepare's, which runs before any job
// code and writes it to a file only this user can read; the later steps
// get the file's path (db-file) and pass it as -db-file. A step's
// environment is readable in /proc/PID/environ by every process of the
// user while the step runs, the job's included.
func TestActionStoreNotInEnv(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		Runs struct {
			Steps []struct {
				ID  string            `yaml:"id"`
				Env map[string]string `yaml:"env"`
				Run string            `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"runs"`
	}
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	byFile := 0
	for _, s := range a.Runs.Steps {
		for k, v := range s.Env {
			url := strings.Contains(v, "inputs.baseline-db") || strings.Contains(v, "steps.prepare.outputs.db }}") || k == "GPUGATE_BASELINE_DB"
			if url && s.ID != "prepare" {
				t.Errorf("step %q gets the store's URL: %s: %s", s.ID, k, v)
			}
			if strings.Contains(v, "steps.prepare.outputs.db-file") {
				byFile++
				if !strings.Contains(s.Run, `-db-file "$`+k+`"`) {
					t.Errorf("step %q gets the store's file in %s but does not pass it as -db-file: %s", s.ID, k, s.Run)
				}
			}
		}
	}
	if byFile < 2 {
		t.Errorf("%d steps pass the store's file, want the run and alert steps", byFile)
	}
}
