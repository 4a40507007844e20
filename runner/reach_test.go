//go:build linux

package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJobReach: what the init is told to keep, cover and make read-only,
// and what the report says, for a runner-like environment.
func TestJobReach(t *testing.T) {
	// RUNNER_TEMP in the job's folder, kept in its private /tmp: what
	// lies in the machine's /tmp outside the kept folders is out of reach
	// and neither covered nor listed.
	work, out := t.TempDir(), t.TempDir()
	temp := filepath.Join(work, "_temp")
	cmds := filepath.Join(temp, "_runner_file_commands")
	os.MkdirAll(filepath.Join(temp, "gpugate-bin"), 0o755)
	os.MkdirAll(cmds, 0o755)
	env := filepath.Join(cmds, "set_env_x")
	os.WriteFile(env, nil, 0o644)
	script := filepath.Join(temp, "0f3c.sh")
	os.WriteFile(script, nil, 0o644)
	venv := filepath.Join(t.TempDir(), "venv")
	os.MkdirAll(filepath.Join(venv, "bin"), 0o755)
	t.Setenv("RUNNER_TEMP", temp)
	t.Setenv("GITHUB_ENV", env)
	t.Setenv("GITHUB_OUTPUT", "/nonexistent/set_output_x")
	t.Setenv("PATH", filepath.Join(venv, "bin")+":/usr/bin:/bin")
	ns := isolation{ns: true, user: true}

	var spec initSpec
	text, warn, err := jobReach(Job{Dir: work}, out, ns, &spec)
	if err != nil || warn != "" {
		t.Fatalf("jobReach: %v %q", err, warn)
	}
	real := func(p string) string { r, _ := filepath.EvalSymlinks(p); return r }
	for _, want := range []string{real(work), real(out), real(venv)} {
		if !contains(spec.Keep, want) {
			t.Errorf("keep %q lacks %s", spec.Keep, want)
		}
	}
	// The file-command folder is covered whole; the file GITHUB_ENV
	// names lies in it; the one GITHUB_OUTPUT names does not exist.
	if !contains(spec.Hide, cmds) || !contains(spec.Hide, script) || contains(spec.Hide, env) || len(spec.Hide) != 2 {
		t.Errorf("hide %q, want %s and %s", spec.Hide, cmds, script)
	}
	if !contains(spec.RO, filepath.Join(temp, "gpugate-bin")) {
		t.Errorf("read-only %q lacks gpugate-bin", spec.RO)
	}
	if !spec.Tmp || spec.Net || !strings.Contains(text, "network: host (") || !strings.Contains(text, "a private /tmp and /var/tmp") {
		t.Errorf("tmp %v net %v: %s", spec.Tmp, spec.Net, text)
	}

	spec = initSpec{}
	text, _, err = jobReach(Job{Dir: work, Network: NetNone}, out, ns, &spec)
	if err != nil || !spec.Net || !strings.Contains(text, "network: none (") {
		t.Errorf("network none: %v, net %v: %s", err, spec.Net, text)
	}

	// Without a namespace: network none is refused, and the warning says
	// what stays within the job's reach.
	spec = initSpec{}
	if _, _, err := jobReach(Job{Network: NetNone}, out, isolation{what: "none"}, &spec); err == nil || !strings.Contains(err.Error(), "no network namespace can be made") {
		t.Errorf("network none without a namespace: %v", err)
	}
	_, warn, err = jobReach(Job{}, out, isolation{what: "none"}, &spec)
	if err != nil || !strings.Contains(warn, cmds) || !strings.Contains(warn, "gpugate-bin") || spec.Tmp || len(spec.Hide) > 0 {
		t.Errorf("no namespace: %v, warning %q, spec %+v", err, warn, spec)
	}
	if _, _, err := jobReach(Job{Network: "bridge\n"}, out, ns, &spec); err == nil {
		t.Errorf("network %q accepted", "bridge\n")
	}
	// A Slurm run's job runs on the nodes: no private /tmp for srun.
	spec = initSpec{}
	if text, _, _ := jobReach(Job{Slurm: &Slurm{}}, out, ns, &spec); spec.Tmp || strings.Contains(text, "private /tmp") {
		t.Errorf("slurm: a private /tmp: %s", text)
	}
}
