package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnsafeWorkloadNames: a workload named with "../" wrote artifacts
// outside .gpugate/runs, and in action mode overwrote a README.md outside
// the workspace; a "/" made the action fail; a newline added GITHUB_OUTPUT
// entries. Such names are refused before anything runs.
func TestUnsafeWorkloadNames(t *testing.T) {
	for _, name := range []string{"../../README", "a/b", `a\nverdict=pass`, "demo -->"} {
		dir := t.TempDir()
		ws := filepath.Join(dir, "ws")
		os.MkdirAll(ws, 0o755)
		cfg := filepath.Join(ws, "perf.yaml")
		os.WriteFile(cfg, []byte("version: 1\nworkloads:\n  - name: \""+name+"\"\n    profiler: none\n    step_log: 'step ([0-9.]+)'\n    command: [\"/bin/sh\", \"-c\", \"echo step 1; echo pwned > README.md\"]\n"), 0o644)
		output := filepath.Join(dir, "output")
		env := map[string]string{"GPUGATE_CONFIG": cfg, "RUNNER_TEMP": filepath.Join(dir, "tmp"), "GITHUB_OUTPUT": output, "GITHUB_WORKSPACE": ws}
		var out, errOut bytes.Buffer
		err := runAction(t.Context(), func(k string) string { return env[k] }, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), "perf.yaml:3:11: workload name") {
			t.Errorf("action with workload %q: %v, want the name refused at perf.yaml:3:11", name, err)
		}
		var made []string
		filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
			if p != dir && p != ws && p != cfg {
				made = append(made, p)
			}
			return nil
		})
		if len(made) > 0 {
			t.Errorf("action with workload %q wrote %q", name, made)
		}
		code := gpugate(t.Context(), []string{"run", "-config", cfg}, &out, &errOut)
		if code != exitTrouble || !strings.Contains(errOut.String(), "workload name") {
			t.Errorf("run with workload %q: exit %d, %s", name, code, errOut.String())
		}
	}
}
