package containers

import (
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite seccomp.json from Docker's default profile and gpugate's rules")

// defaultProfile is Docker's default seccomp profile as Debian's
// docker.io 20.10 builds it in (scripts/setup-docker.sh keeps a copy).
const defaultProfile = "/opt/gpugate/docker/seccomp-default.json"

// Masks and flags of clone(2) and unshare(2), as in Docker's own rule
// (clone is allowed without CAP_SYS_ADMIN when arg0 & nsFlags == 0).
const (
	nsFlags     = 0x7E020000 // CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
	cloneNewNS  = 0x00020000
	cloneNewUsr = 0x10000000
	cloneNewPID = 0x20000000
	cloneNewNet = 0x40000000
)

// gpugateRules are what seccomp.json adds to Docker's default profile:
// exactly what gpugate's isolation calls (runner/isolate_linux.go), for a
// process without CAP_SYS_ADMIN (with it, Docker's profile allows all of
// them already):
//
//   - clone with CLONE_NEWUSER|CLONE_NEWPID and no other namespace flag:
//     the spawner starting the job's init; with CLONE_NEWNET too for
//     network: none;
//   - unshare(CLONE_NEWNS) and nothing else: Go's Unshareflags in the
//     init, a mount namespace inside its user namespace;
//   - mount: the init's fresh /proc, /dev/shm and covers. The kernel
//     allows it only in a mount namespace whose user namespace gives the
//     caller CAP_SYS_ADMIN: the init's, never the container's own.
func gpugateRules() []any {
	notAdmin := map[string]any{"caps": []any{"CAP_SYS_ADMIN"}, "arches": []any{"s390", "s390x"}}
	masked := func(index int, datum uint64) []any {
		return []any{map[string]any{"index": float64(index), "value": float64(nsFlags), "valueTwo": float64(datum), "op": "SCMP_CMP_MASKED_EQ"}}
	}
	return []any{
		map[string]any{"names": []any{"clone"}, "action": "SCMP_ACT_ALLOW", "args": masked(0, cloneNewUsr|cloneNewPID),
			"comment": "gpugate: the job's init in a user and PID namespace (docs/containers.md)", "includes": map[string]any{}, "excludes": notAdmin},
		map[string]any{"names": []any{"clone"}, "action": "SCMP_ACT_ALLOW", "args": masked(0, cloneNewUsr|cloneNewPID|cloneNewNet),
			"comment": "gpugate: the same with a network namespace (network: none)", "includes": map[string]any{}, "excludes": notAdmin},
		map[string]any{"names": []any{"unshare"}, "action": "SCMP_ACT_ALLOW", "args": masked(0, cloneNewNS),
			"comment": "gpugate: the init's mount namespace, inside its user namespace", "includes": map[string]any{}, "excludes": map[string]any{"caps": []any{"CAP_SYS_ADMIN"}}},
		map[string]any{"names": []any{"mount"}, "action": "SCMP_ACT_ALLOW", "args": []any{},
			"comment": "gpugate: the init's /proc, /dev/shm and covers; the kernel allows a mount only where the user namespace gives CAP_SYS_ADMIN", "includes": map[string]any{}, "excludes": map[string]any{"caps": []any{"CAP_SYS_ADMIN"}}},
	}
}

// TestSeccompProfile: seccomp.json is valid JSON, and exactly Docker's
// default profile plus gpugateRules (go test -run TestSeccompProfile
// -update rewrites it from the default).
func TestSeccompProfile(t *testing.T) {
	b, err := os.ReadFile("seccomp.json")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("seccomp.json is not valid JSON: %v", err)
	}
	def, err := os.ReadFile(defaultProfile)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Docker's default profile: %v (scripts/setup-docker.sh)", err)
		}
		t.Skipf("Docker's default profile: %v (scripts/setup-docker.sh)", err)
	}
	var want map[string]any
	if err := json.Unmarshal(def, &want); err != nil {
		t.Fatal(err)
	}
	want["syscalls"] = append(want["syscalls"].([]any), gpugateRules()...)
	if *update {
		out, _ := json.MarshalIndent(want, "", "\t")
		if err := os.WriteFile("seccomp.json", append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("seccomp.json is not Docker's default profile plus gpugate's rules: go test -run TestSeccompProfile -update")
	}
}
