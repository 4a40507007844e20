package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSMIDeniedEnv: the nvidia-smi the sampler starts (its --help-query-gpu
// call and the streaming one, which runs as long as the job and is
// dumpable) got gpugate's whole environment: a job without a namespace read
// every token and the store's URL from /proc/<nvidia-smi>/environ (issue
// 26). The stand-in here writes its environment to a file per call.
func TestSMIDeniedEnv(t *testing.T) {
	for k, v := range secretEnv {
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	smi := filepath.Join(dir, "nvidia-smi")
	help, err := filepath.Abs(filepath.Join("testdata", "smi", "help-query-gpu-580.txt"))
	if err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nenv > " + dir + "/env.$$\ncase \"$1\" in --help-query-gpu) cat " + help + "; exit 0;; esac\nexec sleep 30\n"
	if err := os.WriteFile(smi, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s := StartSMI(context.Background(), SMIOptions{Path: smi, Interval: 50 * time.Millisecond})
	var files []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && len(files) < 2; {
		time.Sleep(50 * time.Millisecond)
		files, _ = filepath.Glob(filepath.Join(dir, "env.*"))
	}
	s.Stop()
	if len(files) < 2 {
		t.Fatalf("nvidia-smi ran %d times, want the --help-query-gpu call and a sampler", len(files))
	}
	for _, f := range files {
		env, _ := os.ReadFile(f)
		if !bytes.Contains(env, []byte("PATH=")) {
			t.Fatalf("%s: no environment written: %q", f, env)
		}
		for k, v := range secretEnv {
			if bytes.Contains(env, []byte(v)) {
				t.Errorf("nvidia-smi got %s", k)
			}
		}
	}
}
