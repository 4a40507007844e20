package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
)

// TestNoGPU runs the deep-dive for real on a machine without a GPU: it is
// skipped (exit 3) with the note, and nothing is faked.
func TestNoGPU(t *testing.T) {
	cli := os.Getenv("GPUGATE_NCU")
	if cli == "" {
		t.Skip("GPUGATE_NCU not set: skipping the test that needs the ncu CLI (scripts/setup-ncu.sh installs it; scripts/test.sh sets it)")
	}
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("this machine has a GPU: the no-GPU path does not apply")
	}
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	code := deepdive(context.Background(), []string{"-ncu", cli, "-out", dir, "-kernel", "k", "--", "/bin/true"}, &out, &errOut)
	if code != 3 || !strings.Contains(out.String(), "deep-dive skipped: no NVIDIA GPU or driver here") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a skipped deep-dive wrote %d files", len(entries))
	}
	out.Reset()
	if code := deepdive(context.Background(), []string{"-ncu", cli, "-probe"}, &out, &errOut); code != 3 || !strings.HasPrefix(out.String(), "deep-dive skipped: no NVIDIA GPU or driver here") {
		t.Errorf("-probe: exit %d, stdout %q", code, out.String())
	}
}

func TestCompareMode(t *testing.T) {
	cli := os.Getenv("GPUGATE_NCU")
	if cli == "" {
		t.Skip("GPUGATE_NCU not set: skipping the test that needs the ncu CLI (scripts/setup-ncu.sh installs it; scripts/test.sh sets it)")
	}
	rep := fixtures.Path(t, "ncu/cudacode-rtx2080ti/cudacode-rtx2080ti.ncu-rep")
	var out, errOut bytes.Buffer
	code := deepdive(context.Background(), []string{"-ncu", cli, "-compare", rep, rep}, &out, &errOut)
	if code != 0 || out.String() != "kernel_A +0%: no change in launch configuration, occupancy or throughput beyond ncu's noise: compute-bound\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	other := fixtures.Path(t, "ncu/speedyscan-rtx3070/speedyscan-rtx3070.ncu-rep")
	out.Reset()
	errOut.Reset()
	if code := deepdive(context.Background(), []string{"-ncu", cli, "-compare", rep, other}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "different kernels") {
		t.Errorf("different kernels: exit %d, %q", code, errOut.String())
	}
}
