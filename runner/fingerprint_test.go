package runner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFingerprintDiff(t *testing.T) {
	a := Fingerprint{GPU: "NVIDIA H100", GPUCount: 8, Driver: "550.54", CUDA: "12.4", Torch: "2.3.0", Profiler: "nsys"}
	b := a
	if d := a.Diff(b); len(d) != 0 || a.Hash() != b.Hash() {
		t.Errorf("equal fingerprints differ: %v", d)
	}
	b.GPUCount, b.Driver = 4, "555.42"
	d := a.Diff(b)
	slices.Sort(d)
	want := []string{`driver: "550.54" != "555.42"`, "gpu_count: 8 != 4"}
	if !slices.Equal(d, want) || a.Hash() == b.Hash() {
		t.Errorf("Diff = %q, want %q", d, want)
	}
}

func TestFingerprintHasNoSecrets(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "canary-value-123")
	f := TakeFingerprint(t.Context(), "", "", Torch)
	if b := f.Hash(); strings.Contains(b, "canary") {
		t.Fatal("secret in the hash")
	}
	d := f.Diff(Fingerprint{})
	for _, line := range d {
		if strings.Contains(line, "canary-value-123") {
			t.Errorf("fingerprint holds an environment variable: %s", line)
		}
	}
}

// A Python that does not answer in time is not a Python without torch: the
// fingerprint says "unknown" so that it cannot match a baseline silently.
func TestFingerprintSlowTorchImport(t *testing.T) {
	slow := filepath.Join(t.TempDir(), "python3")
	if err := os.WriteFile(slow, []byte("#!/bin/sh\ncase \"$2\" in *torch*) exec sleep 5;; esac\necho 3.11.2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	defer func(d time.Duration) { torchProbeLimit = d }(torchProbeLimit)
	torchProbeLimit = 200 * time.Millisecond
	f := TakeFingerprint(context.Background(), slow, "", Torch)
	if !strings.HasPrefix(f.Torch, "unknown") || !strings.HasPrefix(f.CUDA, "unknown") || f.Python != "3.11.2" {
		t.Errorf("fingerprint with a slow torch import: torch %q, cuda %q, python %q", f.Torch, f.CUDA, f.Python)
	}
}

// A mismatch message lists the fields in the struct's order, every time.
func TestFingerprintDiffOrder(t *testing.T) {
	a := Fingerprint{GPU: "A100", GPUCount: 8, Driver: "1", CUDA: "12.1", Torch: "2.1", Python: "3.11", Profiler: "torch", OS: "linux"}
	b := Fingerprint{GPU: "V100", GPUCount: 2, Driver: "2", CUDA: "11.8", Torch: "2.0", Python: "3.10", Profiler: "nsys", OS: "linux", Nsys: "2024.1"}
	want := []string{`gpu: "A100" != "V100"`, "gpu_count: 8 != 2", `driver: "1" != "2"`, `cuda: "12.1" != "11.8"`,
		`torch: "2.1" != "2.0"`, `python: "3.11" != "3.10"`, `nsys: (none) != "2024.1"`, `profiler: "torch" != "nsys"`}
	for range 20 {
		if got := a.Diff(b); !slices.Equal(got, want) {
			t.Fatalf("Diff = %q, want %q", got, want)
		}
	}
}
