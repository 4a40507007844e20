package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestGPUCheckNoGPU runs scripts/gpu-check.sh, which drives this command,
// on a machine without a GPU (CI): it must build nothing it need not, skip
// every GPU part saying so, find the deep-dive skipped with its note, and
// exit 0.
func TestGPUCheckNoGPU(t *testing.T) {
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("this machine has a GPU: run scripts/gpu-check.sh itself")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	bin := t.TempDir()
	for _, b := range []struct{ out, pkg string }{{"gpugate", "./cmd/gpugate"}, {"gpugate-deepdive", "./internal/cmd/deepdive"}} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, b.out), b.pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "gpu-check.sh"), out)
	cmd.Env = append(os.Environ(), "GPUGATE_CHECK_BIN="+bin)
	log, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gpu-check.sh: %v\n%s", err, log)
	}
	sum, err := os.ReadFile(filepath.Join(out, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(sum)
	for _, want := range []string{
		"build              ok      carried binaries in " + bin,
		"nvidia-smi: no NVIDIA GPU here",
		"demo-baseline      SKIP    no CUDA GPU here",
		"demo-host-sync     SKIP    no CUDA GPU here",
		"deepdive           SKIP    no CUDA GPU here",
		"no GPU: the GPU parts were skipped; result: ok",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	// With ncu installed (CI), the deep-dive's own check ran and said why.
	if os.Getenv("GPUGATE_NCU") != "" && !strings.Contains(s, "deep-dive probe: deep-dive skipped: no NVIDIA GPU or driver here") {
		t.Errorf("summary lacks the deep-dive's note:\n%s", s)
	}
	if strings.Contains(s, "FAIL") || strings.Contains(s, "TIMEOUT") {
		t.Errorf("a step failed:\n%s", s)
	}
}
