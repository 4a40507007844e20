//go:build linux

package runner

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// namespaceCauses names what kept the namespaces from being made, from
// what the process can read about itself (probe is what the failed probe
// printed): a seccomp filter (a container's default profile refuses
// clone(CLONE_NEWUSER) and unshare without CAP_SYS_ADMIN), a masked /proc
// (the kernel refuses a fresh proc mount where parts of /proc are mounted
// over), AppArmor's restriction of unprivileged user namespaces (Ubuntu
// 24.04), user namespaces turned off, or root without CAP_SYS_ADMIN. Each
// says where the fix is.
func namespaceCauses(probe string) []cause {
	return findCauses(probe, readFile)
}

// cause is one reason found: its name, for the report's isolation line,
// and what to do, for the warning.
type cause struct{ name, text string }

func readFile(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return string(b)
}

// findCauses is namespaceCauses over a file reader, for tests.
func findCauses(probe string, read func(string) string) []cause {
	var out []cause
	status := read("/proc/self/status")
	if v := statusField(status, "Seccomp"); v == "2" && !strings.Contains(probe, "mount /proc") {
		out = append(out, cause{"seccomp", "a seccomp filter (Seccomp: 2 in /proc/self/status; a container's default profile) refuses the namespaces: run with examples/containers/seccomp.json"})
	}
	if masked := maskedProc(read("/proc/self/mounts")); len(masked) > 0 {
		s := "/proc is masked (" + strings.Join(masked, ", ") + " mounted over; a container's default), so the kernel refuses a fresh /proc in the namespace"
		if !strings.Contains(probe, "mount /proc") {
			s += " too"
		}
		out = append(out, cause{"masked /proc", s + ": Docker --security-opt systempaths=unconfined, Kubernetes procMount: Unmasked"})
	}
	if strings.TrimSpace(read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")) == "1" {
		prof := strings.TrimSpace(read("/proc/self/attr/apparmor/current"))
		if prof == "" {
			prof = strings.TrimSpace(read("/proc/self/attr/current"))
		}
		out = append(out, cause{"AppArmor", fmt.Sprintf("AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1; gpugate's profile: %q): load examples/apparmor/gpugate", prof)})
	}
	if strings.TrimSpace(read("/proc/sys/user/max_user_namespaces")) == "0" {
		out = append(out, cause{"user namespaces off", "user namespaces are turned off (user.max_user_namespaces=0)"})
	}
	if strings.TrimSpace(read("/proc/sys/kernel/unprivileged_userns_clone")) == "0" {
		out = append(out, cause{"user namespaces off", "unprivileged user namespaces are turned off (kernel.unprivileged_userns_clone=0)"})
	}
	if eff, uid := statusField(status, "CapEff"), strings.Fields(statusField(status, "Uid")); eff != "" && len(uid) > 1 && uid[1] == "0" {
		var caps uint64
		fmt.Sscanf(eff, "%x", &caps)
		if caps&(1<<unix.CAP_SYS_ADMIN) == 0 {
			out = append(out, cause{"no CAP_SYS_ADMIN", "gpugate runs as root without CAP_SYS_ADMIN (CapEff " + eff + "), as in a container"})
		}
	}
	return out
}

// statusField is a field of /proc/PID/status ("Seccomp:\t2").
func statusField(status, key string) string {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// maskedProc lists the mount points below /proc other than
// binfmt_misc: what a container runtime mounts over /proc/kcore,
// /proc/keys, /proc/sys and the like.
func maskedProc(mounts string) []string {
	var out []string
	for _, line := range strings.Split(mounts, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasPrefix(f[1], "/proc/") || strings.HasPrefix(f[1], "/proc/sys/fs/binfmt_misc") {
			continue
		}
		out = append(out, f[1])
	}
	return out
}
