package containers

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// AppArmor 4's parser (Debian 13's apparmor, which knows the userns rule;
// Debian 12's 3.0 does not), unpacked in the Debian 13 chroot by
// scripts/setup-docker.sh.
const (
	trixie   = "/opt/gpugate/trixie"
	aaParser = "/opt/apparmor4/usr/sbin/apparmor_parser"
	aaBase   = "/opt/apparmor4/etc/apparmor.d"
)

// parseProfile runs apparmor_parser -Q -K (parse, load nothing) on text.
func parseProfile(t *testing.T, text string) (string, error) {
	t.Helper()
	dir, err := os.MkdirTemp(filepath.Join(trixie, "tmp"), "gpugate-aa-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "gpugate"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	in := "/tmp/" + filepath.Base(dir) + "/gpugate"
	out, err := exec.Command("chroot", trixie, aaParser, "-Q", "-K", "--base", aaBase, "-I", aaBase, in).CombinedOutput()
	return string(out), err
}

// TestAppArmorProfile: examples/apparmor/gpugate parses with AppArmor 4,
// and a broken copy does not (the check can fail).
func TestAppArmorProfile(t *testing.T) {
	if _, err := os.Stat(filepath.Join(trixie, aaParser)); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("AppArmor 4's parser: %v (scripts/setup-torch2.sh, then scripts/setup-docker.sh)", err)
		}
		t.Skipf("AppArmor 4's parser: %v (scripts/setup-torch2.sh, then scripts/setup-docker.sh)", err)
	}
	b, err := os.ReadFile("../apparmor/gpugate")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\n  userns,\n") {
		t.Fatalf("the profile grants no userns")
	}
	if out, err := parseProfile(t, string(b)); err != nil {
		t.Errorf("apparmor_parser rejects examples/apparmor/gpugate: %v\n%s", err, out)
	}
	if out, err := parseProfile(t, strings.Replace(string(b), "userns,", "userns bogus,", 1)); err == nil {
		t.Errorf("apparmor_parser accepts a broken profile: the check proves nothing\n%s", out)
	}
}
