package buildkite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnnotate: the agent gets annotate --context --style and the body on
// stdin; an agent that fails gives an error with what it said.
func TestAnnotate(t *testing.T) {
	dir := t.TempDir()
	agent := filepath.Join(dir, "buildkite-agent")
	os.WriteFile(agent, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$REC.args\"\ncat > \"$REC.md\"\n[ -z \"$FAIL\" ] || { echo 'fatal: annotation body too large' >&2; exit 1; }\n"), 0o755)
	rec := filepath.Join(dir, "rec")
	body := "<!-- gpugate:train -->\n**gpugate**: 1 regression\n"
	if err := Annotate(context.Background(), agent, []string{"REC=" + rec}, Context("train"), Error, []byte(body)); err != nil {
		t.Fatal(err)
	}
	args, _ := os.ReadFile(rec + ".args")
	md, _ := os.ReadFile(rec + ".md")
	if got := strings.Fields(string(args)); strings.Join(got, " ") != "annotate --context gpugate-train --style error" {
		t.Errorf("args %q", got)
	}
	if string(md) != body {
		t.Errorf("stdin %q, want %q", md, body)
	}
	err := Annotate(context.Background(), agent, []string{"REC=" + rec, "FAIL=1"}, Context("train"), Warning, []byte(body))
	if err == nil || !strings.Contains(err.Error(), "annotation body too large") || !strings.Contains(err.Error(), "gpugate-train") {
		t.Errorf("failing agent: %v", err)
	}
	if err := Annotate(context.Background(), filepath.Join(dir, "absent"), nil, "c", Info, nil); err == nil {
		t.Errorf("absent agent: no error")
	}
}
