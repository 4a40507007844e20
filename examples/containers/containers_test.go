package containers

// The container tests (issue 38): gpugate, built statically, inside a real
// Docker container (internal/dockertest: Debian's dockerd, a local image
// of busybox), where self-hosted GPU runners live. A hostile job dumps
// every /proc/*/environ and cmdline it can open, the runner's .credentials
// and the -db-file, and leaves a setsid, empty-environment grandchild;
// the container's own environment (GITHUB_TOKEN, PGPASSWORD), a runner
// stand-in of gpugate's user (a token in its environment), the
// .credentials and the -db-file hold canaries, none of which may reach
// the job.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpugate/gpugate/internal/dockertest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	dockertest.Stop()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// gpugateBinary builds gpugate statically (CGO_ENABLED=0), for the image,
// which has no C library.
func gpugateBinary(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("GPUGATE_CONTAINER_BIN"); b != "" {
		return b // a static gpugate built elsewhere (another commit's, to see these tests fail on it)
	}
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "gpugate-container-bin-")
		if buildErr != nil {
			return
		}
		os.Chmod(binDir, 0o755)
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = "/usr/local/go/bin/go"
		}
		cmd := exec.Command(goBin, "build", "-o", filepath.Join(binDir, "gpugate"), "../../cmd/gpugate")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{err, string(out)}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "gpugate")
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "build gpugate: " + e.err.Error() + ": " + e.out }

// The job: every /proc/*/environ and cmdline it can open, the runner's
// credential files, then a grandchild in a session of its own with an
// empty environment, and a step time for step_log.
const jobScript = `n=0
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do
	if s=$(tr '\0' ' ' < "$f" 2>/dev/null); then n=$((n+1)); echo "$f: $s"; fi
done
echo "opened $n"
runner=$(dirname "$(dirname "$RUNNER_WORKSPACE")")
for f in "$runner/.credentials" "$runner/db-url" /root-only; do echo "read $f: $(cat "$f" 2>&1)"; done
setsid sh -c 'env -i sh -c "sleep 3001 & exec sleep 3002" &'
sleep 0.2
echo "job: $(id)"
echo time_ms=12.5
`

const perfYAML = `version: 1
workloads:
  - name: hostile
    command: ["/bin/sh", "/work/job.sh"]
    profiler: none
    step_log: 'time_ms=([0-9.]+)'
`

// The scenario, run as the container's user: the runner's files and its
// stand-in, then gpugate, then what is left of the grandchild.
const scenario = `R=$HOME/actions-runner
mkdir -p "$R/_work/repo"
umask 077
printf '%s\n' "$CRED" > "$R/.credentials"
printf '%s\n' "/tmp/store-$DBCANARY.db" > "$R/db-url"
# Root's 0600 file in a folder anyone searches, covered by nothing: only
# the job's mode bits keep it out (a job that is root on the host behind
# another uid read it).
[ "$(id -u)" = 0 ] && printf '%s\n' "$ROOTONLY" > /root-only
umask 022
export RUNNER_WORKSPACE=$R/_work/repo
env RUNNER_TOKEN="$STANDIN_TOKEN" sleep 600 &
unset CRED DBCANARY STANDIN_TOKEN ROOTONLY
cd /work
gpugate run -config /work/perf.yaml -db-file "$R/db-url" -out /tmp/out > /tmp/report.txt 2> /tmp/log.txt
echo "==EXIT== $?"
echo "==REPORT=="; cat /tmp/report.txt
echo "==LOG=="; cat /tmp/log.txt
echo "==JOBLOG=="; cat $(find /tmp/out -name job.log)
echo "==LEFT=="
for p in /proc/[0-9]*; do
	c=$(tr '\0' ' ' < "$p/cmdline" 2>/dev/null)
	case "$c" in *"sleep 300"[12]*) echo "left: ${p#/proc/} $c";; esac
done
echo "==END=="
`

// canaries are the secrets planted, by the environment variable that
// carries each into the container.
var canaries = map[string]string{
	"GITHUB_TOKEN":  "canary-github-token-7f3a",
	"PGPASSWORD":    "canary-pgpassword-91bc",
	"STANDIN_TOKEN": "canary-runner-standin-token-55de",
	"CRED":          "canary-runner-credentials-c0ff",
	"DBCANARY":      "canary-db-file-url-e1e1",
	"ROOTONLY":      "canary-root-only-file-0a0a",
}

type outcome struct {
	all, report, log, jobLog, left string
}

func section(out, name string) string {
	_, after, ok := strings.Cut(out, "=="+name+"==")
	if !ok {
		return ""
	}
	if i := strings.Index(after, "\n=="); i >= 0 {
		return after[:i]
	}
	return after
}

// runScenario runs the scenario in a container with opts.
func runScenario(t *testing.T, d *dockertest.Daemon, opts []string, env ...string) outcome {
	t.Helper()
	bin := gpugateBinary(t)
	work := t.TempDir()
	os.Chmod(work, 0o755)
	for name, s := range map[string]string{"job.sh": jobScript, "perf.yaml": perfYAML, "scenario.sh": scenario} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"-v", bin + ":/usr/local/bin/gpugate:ro", "-v", work + ":/work:ro"}
	for k, v := range canaries {
		args = append(args, "-e", k+"="+v)
	}
	for _, e := range env {
		args = append(args, "-e", e)
	}
	args = append(args, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, code, err := d.Run(ctx, args, "sh", "/work/scenario.sh")
	if err != nil || code != 0 {
		t.Fatalf("docker run: %v (exit %d)\n%s", err, code, out)
	}
	if !strings.Contains(out, "==END==") {
		t.Fatalf("the scenario did not end:\n%s", out)
	}
	return outcome{all: out, report: section(out, "REPORT"), log: section(out, "LOG"), jobLog: section(out, "JOBLOG"), left: section(out, "LEFT")}
}

var isolationLine = regexp.MustCompile(`gpugate: isolation: (.*)`)

// checkContained: no canary reached the job, it really looked, the
// grandchild is gone, and the isolation named is want's.
func checkContained(t *testing.T, o outcome, want string) {
	t.Helper()
	for k, v := range canaries {
		if strings.Contains(o.jobLog, v) {
			t.Errorf("the job found %s's secret %q", k, v)
		}
	}
	if m := regexp.MustCompile(`opened (\d+)`).FindStringSubmatch(o.jobLog); m == nil {
		t.Errorf("the job did not dump /proc:\n%s", o.all)
	} else if n, _ := strconv.Atoi(m[1]); n < 2 {
		t.Errorf("the job opened %d /proc files: not even its own (the test proves nothing)", n)
	}
	if !strings.Contains(o.jobLog, "read /") || !strings.Contains(o.jobLog, "/.credentials") {
		t.Errorf("the job did not try the credential files:\n%s", o.jobLog)
	}
	if strings.TrimSpace(o.left) != "" {
		t.Errorf("the job's grandchild outlived gpugate: %s", o.left)
	}
	m := isolationLine.FindStringSubmatch(o.log)
	if m == nil {
		t.Fatalf("no isolation line in gpugate's log:\n%s", o.log)
	}
	if strings.HasPrefix(m[1], "none") || !strings.Contains(m[1], want) {
		t.Errorf("isolation %q, want %q", m[1], want)
	}
	if !strings.Contains(o.report, "isolation: ") || strings.Contains(o.report, "isolation: none") {
		t.Errorf("the text report does not name the isolation:\n%s", o.report)
	}
	t.Logf("isolation: %s", m[1])
}

func shipped(t *testing.T) []string {
	p, err := filepath.Abs("seccomp.json")
	if err != nil {
		t.Fatal(err)
	}
	return []string{"--security-opt", "seccomp=" + p, "--security-opt", "systempaths=unconfined"}
}

// TestRootDefaultContainer: root in a default container (Docker's
// seccomp profile, masked /proc, no CAP_SYS_ADMIN), what many runner
// images ship: no namespace can be made, and the job runs as its own uid.
func TestRootDefaultContainer(t *testing.T) {
	d := dockertest.Start(t)
	o := runScenario(t, d, nil)
	checkContained(t, o, "the job's own uid 59999")
	if !strings.Contains(o.jobLog, "job: uid=59999") {
		t.Errorf("the job did not run as uid 59999:\n%s", o.jobLog)
	}
	// The warning says why there is no namespace, and where the fix is.
	if !strings.Contains(o.log, "WARNING: no namespace for the job") || !strings.Contains(o.log, "seccomp") || !strings.Contains(o.log, "docs/containers.md") {
		t.Errorf("no warning naming seccomp and docs/containers.md:\n%s", o.log)
	}
}

// TestRootDefaultContainerNone: the same with GPUGATE_ISOLATION=none: the
// job, root, finds the secrets. The control that shows the scenario can
// see a leak.
func TestRootDefaultContainerNone(t *testing.T) {
	d := dockertest.Start(t)
	o := runScenario(t, d, nil, "GPUGATE_ISOLATION=none")
	for _, k := range []string{"STANDIN_TOKEN", "CRED", "DBCANARY", "GITHUB_TOKEN"} {
		if !strings.Contains(o.jobLog, canaries[k]) {
			t.Errorf("without isolation the job did not find %s's secret: the scenario proves nothing", k)
		}
	}
}

// TestUserShippedSettings: an ordinary user with the shipped settings
// (seccomp.json, systempaths=unconfined): user, PID and mount namespaces.
func TestUserShippedSettings(t *testing.T) {
	d := dockertest.Start(t)
	o := runScenario(t, d, append(shipped(t), "--user", strconv.Itoa(dockertest.RunnerUID)+":"+strconv.Itoa(dockertest.RunnerUID)))
	checkContained(t, o, "user, PID and mount namespace")
}

// TestRootShippedSettings: root with the shipped settings, still without
// CAP_SYS_ADMIN: the user-namespace path, the job not root there nor on
// the host (root's 0600 /root-only stays unread: checkContained).
func TestRootShippedSettings(t *testing.T) {
	d := dockertest.Start(t)
	o := runScenario(t, d, shipped(t))
	checkContained(t, o, "user, PID and mount namespace")
	if !strings.Contains(o.log, "the job is uid 59999 and gid 59999 on the host too") {
		t.Errorf("the isolation does not say the job is uid 59999 on the host:\n%s", o.log)
	}
	if !strings.Contains(o.jobLog, "read /root-only: cat: can't open '/root-only': Permission denied") && !strings.Contains(o.jobLog, "read /root-only: cat: /root-only: Permission denied") {
		t.Errorf("the job's read of root's 0600 file was not refused:\n%s", o.jobLog)
	}
	if !strings.Contains(o.log, "without CAP_SYS_ADMIN") {
		t.Errorf("the isolation does not say gpugate is root without CAP_SYS_ADMIN:\n%s", o.log)
	}
}

// TestUserDefaultContainer: an ordinary user in a default container gets
// no isolation, and a warning, in the log and the text report, that names
// seccomp and docs/containers.md.
func TestUserDefaultContainer(t *testing.T) {
	d := dockertest.Start(t)
	o := runScenario(t, d, []string{"--user", strconv.Itoa(dockertest.RunnerUID) + ":" + strconv.Itoa(dockertest.RunnerUID)})
	t.Logf("log:\n%s\nreport:\n%s", o.log, o.report)
	for what, s := range map[string]string{"log": o.log, "report": o.report} {
		if !strings.Contains(s, "seccomp") || !strings.Contains(s, "docs/containers.md") {
			t.Errorf("the %s has no warning naming seccomp and docs/containers.md:\n%s", what, s)
		}
	}
}

// TestDockerAcceptsProfile: Docker runs a container with seccomp.json.
func TestDockerAcceptsProfile(t *testing.T) {
	d := dockertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, code, err := d.Run(ctx, shipped(t), "sh", "-c", "grep Seccomp: /proc/self/status")
	if err != nil || code != 0 || !strings.Contains(out, "Seccomp:\t2") {
		t.Errorf("docker run with seccomp.json: %v, exit %d: %s", err, code, out)
	}
}
