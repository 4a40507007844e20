package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the repository this package is in.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// buildRelease runs scripts/release.sh for tag into a new folder.
func buildRelease(t *testing.T, tag, platforms string) string {
	t.Helper()
	dist := t.TempDir()
	cmd := exec.Command("bash", "scripts/release.sh", tag, dist)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "PLATFORMS="+platforms, "PATH="+os.Getenv("PATH")+":/usr/local/go/bin")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, out)
	}
	return dist
}

// The release archives verify with sha256sum -c, hold static binaries for
// both architectures that report the tag, and are reproducible.
func TestReleaseArchives(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gpugate for two architectures")
	}
	dist := buildRelease(t, "v0.0.0-test.1", "linux/amd64 linux/arm64")
	sum := exec.Command("sha256sum", "-c", "checksums.txt")
	sum.Dir = dist
	if out, err := sum.CombinedOutput(); err != nil || strings.Count(string(out), ": OK") != 2 {
		t.Fatalf("sha256sum -c: %v\n%s", err, out)
	}
	for _, c := range []struct {
		arch    string
		machine elf.Machine
	}{{"amd64", elf.EM_X86_64}, {"arm64", elf.EM_AARCH64}} {
		dir := t.TempDir()
		if out, err := exec.Command("tar", "-xzf", filepath.Join(dist, "gpugate_linux_"+c.arch+".tar.gz"), "-C", dir).CombinedOutput(); err != nil {
			t.Fatalf("tar: %v %s", err, out)
		}
		for _, f := range []string{"gpugate", "LICENSE", "README.md"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("%s archive lacks %s", c.arch, f)
			}
		}
		f, err := elf.Open(filepath.Join(dir, "gpugate"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
				t.Errorf("%s binary is dynamically linked", c.arch)
			}
		}
		if f.Machine != c.machine {
			t.Errorf("%s binary is for %v", c.arch, f.Machine)
		}
		f.Close()
		if c.arch == "amd64" {
			out, err := exec.Command(filepath.Join(dir, "gpugate"), "version").Output()
			if err != nil || strings.TrimSpace(string(out)) != "gpugate v0.0.0-test.1" {
				t.Errorf("released gpugate version = %q, %v", out, err)
			}
		}
	}
	// Reproducible: a second build gives the same bytes.
	again := buildRelease(t, "v0.0.0-test.1", "linux/amd64")
	a, _ := os.ReadFile(filepath.Join(dist, "checksums.txt"))
	b, _ := os.ReadFile(filepath.Join(again, "checksums.txt"))
	if first := strings.SplitN(string(a), "\n", 2)[0]; first != strings.TrimSpace(string(b)) {
		t.Errorf("two builds differ:\n%s\n%s", a, b)
	}
	if err := exec.Command("bash", filepath.Join(repoRoot(t), "scripts/release.sh"), "1.0").Run(); err == nil {
		t.Errorf("release.sh accepted a tag that is not vX.Y.Z")
	}
}

// go install ./cmd/gpugate in a clean clone with a tag checked out reports
// that tag: the go command stamps the module version from the VCS.
func TestVersionFromTaggedClone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gpugate")
	}
	clone := filepath.Join(t.TempDir(), "gpugate")
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git(repoRoot(t), "clone", "-q", repoRoot(t), clone)
	git(clone, "tag", "v0.9.1")
	bin := t.TempDir()
	install := exec.Command("go", "install", "./cmd/gpugate")
	install.Dir = clone
	install.Env = append(os.Environ(), "GOBIN="+bin, "GOPROXY=off", "GOFLAGS=-mod=readonly", "GOWORK=off", "PATH="+os.Getenv("PATH")+":/usr/local/go/bin")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(bin, "gpugate"), "version").Output()
	if err != nil || strings.TrimSpace(string(out)) != "gpugate v0.9.1" {
		t.Errorf("gpugate version = %q, %v; want gpugate v0.9.1", out, err)
	}
}
