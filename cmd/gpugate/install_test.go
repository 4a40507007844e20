package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// installRun is what a run of scripts/install-action.sh printed and wrote
// to GITHUB_OUTPUT.
type installRun struct {
	out, log string
	err      error
}

// runInstall runs scripts/install-action.sh's step in an action folder
// (GITHUB_ACTION_PATH) holding go.mod's go line and pins, with a fake go
// reporting goVersion ("" for no go on PATH), in the environment action.yml
// gives it plus env.
func runInstall(t *testing.T, step, pins, goVersion string, env map[string]string) installRun {
	t.Helper()
	dir := t.TempDir()
	ap := filepath.Join(dir, "action-path")
	os.MkdirAll(filepath.Join(ap, "action"), 0o755)
	os.WriteFile(filepath.Join(ap, "go.mod"), []byte("module github.com/gpugate/gpugate\n\ngo 1.26.0\n"), 0o644)
	os.WriteFile(filepath.Join(ap, "action", "checksums.txt"), []byte("# sha256  version  asset\n"+pins), 0o644)
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	if goVersion != "" {
		os.WriteFile(filepath.Join(bin, "go"), []byte("#!/bin/sh\n[ \"$1 $2\" = \"env GOVERSION\" ] && echo "+goVersion+" && exit 0\nexit 3\n"), 0o755)
	}
	out := filepath.Join(dir, "output")
	os.WriteFile(out, nil, 0o644)
	// The install leaves its folder read-only: writable again for the
	// test's cleanup when it does not run as root.
	t.Cleanup(func() { os.Chmod(filepath.Join(dir, "tmp", "gpugate-bin"), 0o755) })
	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "scripts", "install-action.sh"))
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "GITHUB_ACTION_PATH=" + ap, "GITHUB_OUTPUT=" + out, "GITHUB_PATH=" + filepath.Join(dir, "path"),
		"RUNNER_TEMP=" + filepath.Join(dir, "tmp"), "GPUGATE_INSTALL_STEP=" + step, "GPUGATE_RUNNER_OS=Linux", "GPUGATE_RUNNER_ARCH=X64"}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	log, err := cmd.CombinedOutput()
	o, _ := os.ReadFile(out)
	return installRun{out: string(o), log: string(log), err: err}
}

// TestInstallPlan: the install step takes the way the ref asks for and
// says why: a release tag pinned at that commit → that release; a moving
// major tag → the newest release pinned at it; anything else → a source
// build, with actions/setup-go when the go on PATH is older than go.mod's.
func TestInstallPlan(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	pins := ""
	for _, v := range []string{"v0.2.0", "v0.3.0", "v0.10.0", "v0.11.0-rc.1", "v1.0.0"} {
		pins += sum + "  " + v + "  gpugate_linux_amd64.tar.gz\n" + sum + "  " + v + "  gpugate_linux_arm64.tar.gz\n"
	}
	pins += sum + "  v0.12.0  gpugate_linux_arm64.tar.gz\n" // pinned for arm64 only
	for _, c := range []struct {
		name, goVersion string
		env             map[string]string
		how, version    string
		needGo          bool
		why             string
	}{
		{"uses: ./", "go1.26.8", nil, "source", "", false, "used from a path"},
		{"release tag", "go1.26.8", map[string]string{"GPUGATE_ACTION_REF": "v0.3.0"}, "release", "v0.3.0", false, "release tag v0.3.0"},
		{"release tag not pinned", "go1.26.8", map[string]string{"GPUGATE_ACTION_REF": "v0.4.0"}, "source", "", false, "pins no gpugate_linux_amd64.tar.gz"},
		{"major tag", "go1.26.8", map[string]string{"GPUGATE_ACTION_REF": "v0"}, "release", "v0.10.0", false, "pins v0.10.0 as its newest"},
		{"major tag arm64", "go1.26.8", map[string]string{"GPUGATE_ACTION_REF": "v0", "GPUGATE_RUNNER_ARCH": "ARM64"}, "release", "v0.12.0", false, "newest"},
		{"minor tag", "go1.26.8", map[string]string{"GPUGATE_ACTION_REF": "v0.2"}, "release", "v0.2.0", false, "moving tag v0.2"},
		{"major tag, nothing pinned", "go1.26.8", map[string]string{"GPUGATE_ACTION_REF": "v2"}, "source", "", false, "pins no v2.x release"},
		{"commit SHA", "go1.26.0", map[string]string{"GPUGATE_ACTION_REF": strings.Repeat("c", 40)}, "source", "", false, "at commit"},
		{"branch", "go1.27.1", map[string]string{"GPUGATE_ACTION_REF": "main"}, "source", "", false, "ref main"},
		{"go too old", "go1.25.9", nil, "source", "", true, "used from a path"},
		{"no go", "", nil, "source", "", true, "used from a path"},
		{"rc of an older go", "go1.26rc2", nil, "source", "", true, "used from a path"},
		{"build-from-source", "go1.26.8", map[string]string{"GPUGATE_ACTION_REF": "v0.3.0", "GPUGATE_BUILD_FROM_SOURCE": "true"}, "source", "", false, "build-from-source input"},
		{"version input", "", map[string]string{"GPUGATE_ACTION_REF": "main", "GPUGATE_VERSION": "v0.2.0"}, "release", "v0.2.0", false, "version input is v0.2.0"},
		{"not Linux", "go1.26.8", map[string]string{"GPUGATE_ACTION_REF": "v0.3.0", "GPUGATE_RUNNER_OS": "macOS"}, "source", "", false, "no archive for macos"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runInstall(t, "plan", pins, c.goVersion, c.env)
			if r.err != nil {
				t.Fatalf("%v\n%s", r.err, r.log)
			}
			for _, want := range []string{"how=" + c.how + "\n", "version=" + c.version + "\n", "need-go=" + map[bool]string{true: "true", false: "false"}[c.needGo] + "\n"} {
				if !strings.Contains(r.out, want) {
					t.Errorf("outputs lack %q:\n%s", want, r.out)
				}
			}
			if !strings.Contains(r.log, c.why) {
				t.Errorf("log does not say why (%q):\n%s", c.why, r.log)
			}
			if c.how == "source" && !strings.Contains(r.out, "go-version=1.26.0\n") {
				t.Errorf("go-version is not go.mod's:\n%s", r.out)
			}
			if c.needGo && !strings.Contains(r.log, "actions/setup-go installs go 1.26.0") {
				t.Errorf("log does not say setup-go runs:\n%s", r.log)
			}
		})
	}
	// An explicit version input that is not pinned, or not a tag, is an
	// error rather than a silent source build.
	for _, v := range []string{"v0.4.0", "latest"} {
		if r := runInstall(t, "plan", pins, "go1.26.8", map[string]string{"GPUGATE_VERSION": v}); r.err == nil || !strings.Contains(r.log, "::error title=gpugate install::") {
			t.Errorf("version input %q: %v\n%s", v, r.err, r.log)
		}
	}
	// The install step refuses a source build without a new enough go
	// (setup-go did not run or failed).
	if r := runInstall(t, "install", pins, "go1.25.0", nil); r.err == nil || !strings.Contains(r.log, "older than go.mod's go 1.26.0") || strings.Contains(r.out, "bin=") {
		t.Errorf("install with an old go: %v\n%s", r.err, r.log)
	}
}

// TestInstallRelease: the release archive is installed only when its
// sha256 is the pinned one.
func TestInstallRelease(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	script := "#!/bin/sh\necho gpugate v0.3.0\n"
	tw.WriteHeader(&tar.Header{Name: "gpugate", Mode: 0o755, Size: int64(len(script))})
	tw.Write([]byte(script))
	tw.Close()
	zw.Close()
	archive := buf.Bytes()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/gpugate/gpugate/releases/download/v0.3.0/gpugate_linux_amd64.tar.gz" {
			http.NotFound(w, r)
			return
		}
		w.Write(archive)
	}))
	defer srv.Close()
	h := sha256.Sum256(archive)
	good := hex.EncodeToString(h[:])
	env := map[string]string{"GPUGATE_ACTION_REF": "v0", "GITHUB_SERVER_URL": srv.URL, "GPUGATE_ACTION_REPOSITORY": "gpugate/gpugate"}
	r := runInstall(t, "install", good+"  v0.3.0  gpugate_linux_amd64.tar.gz\n", "", env)
	if r.err != nil || !strings.Contains(r.log, "gpugate: installed v0.3.0 (gpugate_linux_amd64.tar.gz, sha256 "+good) ||
		!strings.Contains(r.log, "moving tag v0") || !strings.Contains(r.log, "gpugate v0.3.0") || !strings.Contains(r.out, "bin=") {
		t.Errorf("install: %v\n%s\n%s", r.err, r.log, r.out)
	}
	bad := strings.Repeat("0", 64)
	r = runInstall(t, "install", bad+"  v0.3.0  gpugate_linux_amd64.tar.gz\n", "", env)
	if r.err == nil || !strings.Contains(r.log, "checksum mismatch") || strings.Contains(r.out, "bin=") {
		t.Errorf("install with a wrong pin: %v\n%s", r.err, r.log)
	}
}

// TestInstalledBinaryChecked (issue 34): the install step leaves gpugate
// read-only and states its sha256 as a step output, before any job runs;
// every later step of action.yml that runs gpugate runs it only while it
// has that digest. A job (the same user) that replaced the binary gets an
// error annotation and exit 1 from the next step, post step included, and
// its file never runs. Before issue 34 the steps ran "$GPUGATE_BIN" as it
// was.
func TestInstalledBinaryChecked(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	script := "#!/bin/sh\necho gpugate v0.3.0\nif [ \"$1\" = action ]; then echo genuine gpugate ran; fi\n"
	tw.WriteHeader(&tar.Header{Name: "gpugate", Mode: 0o755, Size: int64(len(script))})
	tw.Write([]byte(script))
	tw.Close()
	zw.Close()
	archive := buf.Bytes()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(archive) }))
	defer srv.Close()
	h := sha256.Sum256(archive)
	env := map[string]string{"GPUGATE_ACTION_REF": "v0", "GITHUB_SERVER_URL": srv.URL, "GPUGATE_ACTION_REPOSITORY": "gpugate/gpugate"}
	r := runInstall(t, "install", hex.EncodeToString(h[:])+"  v0.3.0  gpugate_linux_amd64.tar.gz\n", "", env)
	if r.err != nil {
		t.Fatalf("install: %v\n%s", r.err, r.log)
	}
	outs := map[string]string{}
	for _, l := range strings.Split(r.out, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			outs[k] = v
		}
	}
	bin, sum := outs["bin"], outs["sha256"]
	if bin == "" || len(sum) != 64 {
		t.Fatalf("install states bin=%q sha256=%q, want both:\n%s", bin, sum, r.out)
	}
	if got := sha256.Sum256([]byte(script)); hex.EncodeToString(got[:]) != sum {
		t.Errorf("stated sha256 %s is not the binary's (%x)", sum, got)
	}
	for _, p := range []string{bin, filepath.Dir(bin)} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o555 {
			t.Errorf("%s: mode %v (%v), want read-only 0555", p, st.Mode().Perm(), err)
		}
	}

	b, err := os.ReadFile(filepath.Join(repoRoot(t), "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		Runs struct {
			Steps []struct {
				ID, Name, Run string
				Env           map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	runStep := func(run, bin, sum string) (string, error) {
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", run)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "GPUGATE_BIN=" + bin, "GPUGATE_BIN_SHA256=" + sum, "GPUGATE_DB_FILE=/dev/null"}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	forged := filepath.Join(t.TempDir(), "gpugate")
	os.WriteFile(forged, []byte("#!/bin/sh\necho the job's file ran\n"), 0o755)
	steps := 0
	for _, s := range a.Runs.Steps {
		if !strings.Contains(s.Run, "$GPUGATE_BIN") {
			continue
		}
		steps++
		if s.Env["GPUGATE_BIN_SHA256"] != "${{ steps.install.outputs.sha256 }}" {
			t.Errorf("step %q runs gpugate without the install step's digest (GPUGATE_BIN_SHA256: %q)", s.Name, s.Env["GPUGATE_BIN_SHA256"])
		}
		if out, err := runStep(s.Run, bin, sum); err != nil || !strings.Contains(out, "genuine gpugate ran") {
			t.Errorf("step %q with the installed binary: %v\n%s", s.Name, err, out)
		}
		for name, c := range map[string]struct{ bin, sum string }{
			"replaced":  {forged, sum},
			"no digest": {bin, ""},
		} {
			out, err := runStep(s.Run, c.bin, c.sum)
			if err == nil || strings.Contains(out, "gpugate ran") || strings.Contains(out, "file ran") || !strings.Contains(out, "::error title=gpugate::") || !strings.Contains(out, "is not the binary the install step installed") {
				t.Errorf("step %q, binary %s: %v, want exit 1 with an error annotation and nothing run\n%s", s.Name, name, err, out)
			}
		}
	}
	if steps < 5 {
		t.Errorf("%d steps of action.yml run gpugate, want 5 (prepare, gate, alert, post, comment): the test reads action.yml wrong", steps)
	}
}
