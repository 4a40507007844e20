package action

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSetOutputDelimiter: go-githubactions v1.3.2 writes every output
// between the fixed delimiter _GitHubActionsFileCommandDelimeter_, so a
// value holding that line (a workload or range name with a newline) added
// outputs of its own, e.g. verdict=pass.
func TestSetOutputDelimiter(t *testing.T) {
	file := filepath.Join(t.TempDir(), "output")
	env := map[string]string{"GITHUB_OUTPUT": file}
	var log bytes.Buffer
	gha := New(func(k string) string { return env[k] }, &log)
	hostile := "x\n_GitHubActionsFileCommandDelimeter_\nverdict<<EOF\npass\nEOF"
	if err := gha.SetOutput("regressions", hostile); err != nil {
		t.Fatal(err)
	}
	if err := gha.SetOutput("verdict", "regression"); err != nil {
		t.Fatal(err)
	}
	if err := gha.SetOutput("bad\nname", "v"); err == nil {
		t.Errorf("SetOutput accepted a name with a newline")
	}
	b, _ := os.ReadFile(file)
	got := parseOutputs(t, string(b))
	if len(got) != 2 || got["regressions"] != hostile || got["verdict"] != "regression" {
		t.Errorf("GITHUB_OUTPUT reads back as %q:\n%s", got, b)
	}
}

// parseOutputs reads GITHUB_OUTPUT as the runner does: NAME=VALUE lines
// and NAME<<DELIMITER heredocs.
func parseOutputs(t *testing.T, s string) map[string]string {
	out := map[string]string{}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		if k, delim, ok := strings.Cut(lines[i], "<<"); ok {
			var v []string
			for i++; i < len(lines) && lines[i] != delim; i++ {
				v = append(v, lines[i])
			}
			if i == len(lines) {
				t.Fatalf("no closing %q", delim)
			}
			out[k] = strings.Join(v, "\n")
			continue
		}
		k, v, _ := strings.Cut(lines[i], "=")
		out[k] = v
	}
	return out
}
