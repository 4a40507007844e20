package runner

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpugate/gpugate/internal/escape"
)

// Networks (perf.yaml network:).
const (
	// NetHost: the job shares the machine's network (the default).
	NetHost = "host"
	// NetNone: a network namespace of the job's own, loopback only, and
	// the machine's Unix sockets covered.
	NetNone = "none"
)

// fileCommandVars name the Actions runner's file-command files of the
// step: a line appended to them reaches every later step of the job
// (GITHUB_ENV's BASH_ENV=..., GITHUB_PATH's folder), the post step that
// holds the token included.
var fileCommandVars = []string{"GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY"}

// runnerFiles are the Actions runner's files that the job must not write
// (issue 34), read from gpugate's own environment (getenv), before the
// job's is filtered: cover, to be covered with an empty read-only file or
// folder — RUNNER_TEMP/_runner_file_commands, the files that
// fileCommandVars name, and the step scripts the runner writes in
// RUNNER_TEMP (one GUID.sh per run: step, which hold the workflow's
// expressions, secrets included, expanded) — and ro, to be made
// read-only: gpugate's own install folder (RUNNER_TEMP/gpugate-bin, where
// scripts/install-action.sh puts it, and the folder of the running
// binary). Only paths that exist are returned.
func runnerFiles(getenv func(string) string) (cover, ro []string) {
	add := func(list *[]string, p string) {
		if p == "" || !filepath.IsAbs(p) {
			return
		}
		p = filepath.Clean(p)
		for _, q := range *list {
			if within(p, q) {
				return // covered with its folder
			}
		}
		if _, err := os.Stat(p); err == nil {
			*list = append(*list, p)
		}
	}
	tmp := getenv("RUNNER_TEMP")
	if tmp != "" {
		add(&cover, filepath.Join(tmp, "_runner_file_commands"))
		for _, pat := range []string{"*.sh", "*.ps1", "*.cmd", "*.py"} {
			scripts, _ := filepath.Glob(filepath.Join(filepath.Clean(tmp), pat))
			for _, s := range scripts {
				if fi, err := os.Lstat(s); err == nil && fi.Mode().IsRegular() {
					add(&cover, s)
				}
			}
		}
		add(&ro, filepath.Join(tmp, "gpugate-bin"))
	}
	for _, k := range fileCommandVars {
		add(&cover, getenv(k))
	}
	if exe, err := os.Readlink(selfExeLink); err == nil && !strings.HasSuffix(exe, " (deleted)") {
		add(&ro, filepath.Dir(exe))
	}
	return cover, ro
}

// selfExeLink is the running binary, for its folder's name only.
const selfExeLink = "/proc/self/exe"

// unixSockets are the paths of the Unix sockets bound on this machine (in
// gpugate's network namespace: /proc/net/unix), to be covered for a job
// of network: none: a network namespace stops abstract sockets and every
// TCP/UDP port, not a socket file that the job can reach by its path (a
// database's, a container runtime's, an agent's).
func unixSockets() []string {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// Num RefCount Protocol Flags Type St Inode Path
		line := sc.Text()
		i := strings.Index(line, " /")
		if i < 0 || len(strings.Fields(line[:i])) != 7 {
			continue
		}
		p := filepath.Clean(line[i+1:])
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// jobReach completes spec with what the job must not reach besides
// gpugate's credential files (issue 34): the runner's files (runnerFiles),
// covered or read-only; a private /tmp and /var/tmp, in which its folder
// (job.Dir, else gpugate's), its run folder (out) and gpugate's own
// folders (job.keep) stay; and, for network: none, a network namespace
// with the machine's Unix sockets covered. It returns the words the
// isolation line gets, and without a namespace the warning that says
// what stays within the job's reach. network: none without a namespace
// is an error: the job would run with the machine's network, which the
// user asked to keep from it.
func jobReach(job Job, out string, iso isolation, spec *initSpec) (text, warning string, err error) {
	network := job.Network
	if network == "" {
		network = NetHost
	}
	if network != NetHost && network != NetNone {
		return "", "", fmt.Errorf("network %q: want none or host", network)
	}
	cover, ro := runnerFiles(os.Getenv)
	hostNet := "; network: host (the machine's: its local services, Unix sockets and any cloud metadata service are within the job's reach; perf.yaml network: none keeps it to loopback, docs/security.md)"
	if !iso.ns {
		if network == NetNone {
			return "", "", fmt.Errorf("asks for network: none, but no network namespace can be made here (isolation %s): it would run with the machine's network; run it where user namespaces are allowed (docs/security.md), or set network: host", iso.what)
		}
		var open []string
		if len(cover) > 0 {
			open = append(open, "the runner's files, which it could rewrite for every later step of the workflow: "+strings.Join(cover, ", "))
		}
		if len(ro) > 0 {
			open = append(open, "gpugate's install folder, writable by it: "+strings.Join(ro, ", "))
		}
		open = append(open, "the machine's /tmp and /var/tmp", "the machine's network and Unix sockets")
		return hostNet, "without a namespace, within the job's reach are " + escape.Terminal(strings.Join(open, "; ")), nil
	}
	// A Slurm run's job runs on the nodes, outside gpugate's namespaces;
	// the local srun, Slurm's client, needs its own files (SLURM_CONF).
	spec.Tmp = job.Slurm == nil
	dir := job.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	keepFolders(job, dir, out, spec)
	// What lies in the machine's /tmp is out of the job's reach already,
	// unless a kept folder holds it.
	reachable := func(p string) bool {
		if !spec.Tmp || !within(p, "/tmp") && !within(p, "/var/tmp") {
			return true
		}
		return slices.ContainsFunc(spec.Keep, func(k string) bool { return within(p, k) })
	}
	// A folder that holds the job's own (its folder, its run folder, a
	// kept one) is the job's to write.
	jobs := append([]string{absDir(dir), out}, spec.Keep...)
	holdsJobs := func(p string) bool {
		return slices.ContainsFunc(jobs, func(k string) bool { return k != "" && within(k, p) })
	}
	runnerText := runnerFolder(dir, out, spec)
	// The store's folder, read-only, unless the job's own folders lie in
	// it (a store in the repository): then the job could rewrite it, and
	// the isolation line says so.
	var inJob []string
	folders, secret := storeFolders()
	if secret {
		runnerText += "; the baseline store's folder is not made read-only: its location came from -db-file or $GPUGATE_DB, and would be named on the init's command line"
	}
	for _, d := range folders {
		if holdsJobs(d) {
			inJob = append(inJob, d)
			continue
		}
		ro = append(ro, d)
	}
	cover = slices.DeleteFunc(cover, func(p string) bool { return !reachable(p) })
	// A read-only folder that holds the job's own (gpugate built into the
	// job's folder, as scripts/e2e-torch2.sh does) stays writable:
	// read-only, it made the job's run folder read-only, and no trace
	// was written.
	ro = slices.DeleteFunc(ro, func(p string) bool { return !reachable(p) || holdsJobs(p) })
	spec.Hide = append(spec.Hide, cover...)
	spec.RO = ro
	if spec.Tmp {
		text = "; a private /tmp and /var/tmp"
	}
	if len(spec.Keep) > 0 && spec.Tmp {
		text += " (in which the job's folders stay: " + strings.Join(spec.Keep, ", ") + ")"
	}
	if len(cover) > 0 {
		text += "; the runner's files covered: " + strings.Join(cover, ", ")
	}
	if len(ro) > 0 {
		text += "; read-only: " + strings.Join(ro, ", ")
	}
	text += runnerText
	if len(inJob) > 0 {
		text += "; the baseline store's folder holds the job's own, and the job could rewrite the store: " + strings.Join(inJob, ", ") + " (keep it elsewhere, docs/security.md)"
	}
	if network == NetNone {
		spec.Net = true
		spec.Sockets = unixSockets()
		text += fmt.Sprintf("; network: none (a network namespace of its own, loopback only; %d Unix sockets of the machine covered)", len(spec.Sockets))
	} else {
		text += hostNet
	}
	return escape.Terminal(text), "", nil
}

// keepFolders adds to spec.Keep the folders under /tmp and /var/tmp that
// stay in the job's private ones: its folder (dir), its run folder (out),
// gpugate's own (job.keep), the folders on gpugate's PATH (the
// workflow's, not perf.yaml's) with the parent of a .../bin (a virtual
// environment's or a toolchain's root), and the folders of the programs
// gpugate starts (nsys, the job's first program where a path names it),
// each by its real path, none twice.
func keepFolders(job Job, dir, out string, spec *initSpec) {
	var path []string
	for _, p := range filepath.SplitList(os.Getenv("PATH")) {
		if filepath.IsAbs(p) {
			p = filepath.Clean(p)
			if d := filepath.Dir(p); filepath.Base(p) == "bin" && (within(d, "/tmp") || within(d, "/var/tmp")) && d != "/tmp" && d != "/var/tmp" {
				p = d
			}
			path = append(path, p)
		}
	}
	for _, p := range []string{job.NsysPath, first(job.Args)} {
		if filepath.IsAbs(p) {
			path = append(path, filepath.Dir(p))
		}
	}
	for _, p := range append(append([]string{dir, out}, job.keep...), path...) {
		if p == "" {
			continue
		}
		a, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		if a, err = filepath.EvalSymlinks(a); err != nil {
			continue
		}
		if !within(a, "/tmp") && !within(a, "/var/tmp") {
			continue // reachable anyway
		}
		if fi, err := os.Stat(a); err == nil && fi.IsDir() && !slices.ContainsFunc(spec.Keep, func(k string) bool { return within(a, k) }) {
			spec.Keep = slices.DeleteFunc(spec.Keep, func(k string) bool { return within(k, a) })
			spec.Keep = append(spec.Keep, a)
		}
	}
}

// runnerFolder makes the Actions runner's folder (two levels above
// RUNNER_WORKSPACE, as hide.go's credentials) read-only but for the
// workspace, RUNNER_TEMP and the job's own folders where they lie in it
// (spec.RunnerRO, RunnerRW), and returns the words the isolation line
// gets; nothing where RUNNER_WORKSPACE names no runner's folder.
func runnerFolder(dir, out string, spec *initSpec) string {
	ws := os.Getenv("RUNNER_WORKSPACE")
	if !filepath.IsAbs(ws) {
		return ""
	}
	root := filepath.Dir(filepath.Dir(filepath.Clean(ws)))
	r, err := filepath.EvalSymlinks(root)
	if err != nil || root == "/" || !isRunnerFolder(r) {
		return ""
	}
	spec.RunnerRO = r
	for _, p := range append([]string{ws, os.Getenv("RUNNER_TEMP"), dir, out}, spec.Keep...) {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		if rp, err := filepath.EvalSymlinks(p); err == nil && within(rp, r) && rp != r && !slices.ContainsFunc(spec.RunnerRW, func(k string) bool { return within(rp, k) }) {
			spec.RunnerRW = append(spec.RunnerRW, rp)
		}
	}
	return "; the runner's folder read-only but for the workspace, RUNNER_TEMP and the job's folders: " + r
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// first is args' first word, or "".
func first(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// isRunnerFolder: dir is an Actions runner's own folder (its .runner
// file, its bin/Runner.Worker or its externals), not whatever lies two
// levels above a workspace elsewhere (a home folder, /tmp), which the
// job may need to write.
func isRunnerFolder(dir string) bool {
	for _, f := range []string{".runner", "bin/Runner.Worker", "externals"} {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// absDir is dir, absolute and with its links resolved ("" when it cannot
// be).
func absDir(dir string) string {
	a, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(a); err == nil {
		return r
	}
	return a
}
