package runner

import (
	"slices"
	"strings"
	"testing"
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
