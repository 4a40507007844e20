package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	// What README's Install paragraph says a tagged build needs:
	//   - -buildvcs=true: a go env file (or GOFLAGS) may turn the VCS
	//     stamp off, as this machine's does (GOFLAGS=-buildvcs=false); the
	//     environment's GOFLAGS replaces the file's;
	//   - a GOPROXY other than "off": with GOPROXY=off the go command
	//     names the commit by a pseudo-version it cached for the same
	//     commit before it was tagged (modfetch.readDiskStat's fallback),
	//     as issue 37 saw on a fresh clone of a commit built before
	//     (gpugate v0.0.0-20261203223437-f4909b6a7818). An empty file://
	//     proxy keeps the build off the network all the same: the
	//     dependencies come from the module cache, and the version from
	//     the clone's own tags.
	noProxy := "file://" + filepath.ToSlash(t.TempDir())
	install.Env = append(os.Environ(), "GOBIN="+bin, "GOPROXY="+noProxy, "GOFLAGS=-mod=readonly -buildvcs=true", "GOWORK=off", "PATH="+os.Getenv("PATH")+":/usr/local/go/bin")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(bin, "gpugate"), "version").Output()
	if err != nil || strings.TrimSpace(string(out)) != "gpugate v0.9.1" {
		t.Errorf("gpugate version = %q, %v; want gpugate v0.9.1", out, err)
	}
}

// TestReleasePinAndCheck: PIN=1 pins a tag's archives (and the Go that
// built them) in action/checksums.txt; the pin commit does not change the
// archives, so CHECK=1, which the release workflow runs on the tagged
// commit, passes; a change to what the archives hold after pinning fails
// it.
func TestReleasePinAndCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gpugate three times")
	}
	root := repoRoot(t)
	files, err := exec.Command("git", "-C", root, "ls-files", "-co", "--exclude-standard").Output()
	if err != nil {
		t.Fatal(err)
	}
	tree := t.TempDir()
	for _, f := range strings.Fields(string(files)) {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the working tree
		}
		os.MkdirAll(filepath.Dir(filepath.Join(tree, f)), 0o755)
		os.WriteFile(filepath.Join(tree, f), data, 0o644)
	}
	release := func(env ...string) (string, error) {
		cmd := exec.Command("bash", "scripts/release.sh", "v0.0.0-test.2", t.TempDir())
		cmd.Dir = tree
		cmd.Env = append(append(os.Environ(), "PLATFORMS=linux/amd64", "PATH="+os.Getenv("PATH")+":/usr/local/go/bin"), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := release("CHECK=1"); err == nil || !strings.Contains(out, "not the ones action/checksums.txt pins") {
		t.Fatalf("CHECK=1 before pinning: %v\n%s", err, out)
	}
	out, err := release("PIN=1")
	if err != nil {
		t.Fatalf("PIN=1: %v\n%s", err, out)
	}
	pins, _ := os.ReadFile(filepath.Join(tree, "action", "checksums.txt"))
	goVersion, _ := exec.Command("go", "env", "GOVERSION").Output()
	if !strings.Contains(string(pins), "# v0.0.0-test.2 built with "+strings.TrimSpace(string(goVersion))+"\n") ||
		!regexp.MustCompile(`(?m)^[0-9a-f]{64}  v0\.0\.0-test\.2  gpugate_linux_amd64\.tar\.gz$`).Match(pins) {
		t.Fatalf("action/checksums.txt after PIN=1:\n%s", pins)
	}
	// The tree now differs from the pinned one by action/checksums.txt,
	// as the tagged pin commit does.
	if out, err := release("CHECK=1"); err != nil {
		t.Errorf("CHECK=1 on the pin commit: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(tree, "README.md"), []byte("changed after pinning\n"), 0o644)
	if out, err := release("CHECK=1"); err == nil {
		t.Errorf("CHECK=1 passed although README.md changed after pinning:\n%s", out)
	}
}
