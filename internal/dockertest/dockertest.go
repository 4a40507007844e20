// Package dockertest starts a throwaway Docker daemon for tests, the way
// internal/pgtest starts PostgreSQL: Debian's dockerd (docker.io, which
// scripts/setup-docker.sh installs) with its data, its containerd and its
// socket in a temporary folder, no iptables and no bridge (containers run
// with --network none), stopped and removed by Stop. Its one image,
// gpugate-test:local, is imported from a root filesystem built here from
// busybox-static: no registry. Without dockerd tests skip, saying so,
// except under CI=true, where they fail.
package dockertest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Image is the test image's name.
const Image = "gpugate-test:local"

// RunnerUID is the image's ordinary user, "runner", with HOME /home/runner.
const RunnerUID = 1000

// Daemon is a running dockerd.
type Daemon struct {
	dir, sock string
	cmd       *exec.Cmd
	watch     *exec.Cmd
	err       error
}

var (
	once sync.Once
	d    Daemon
)

// Docker is Debian's docker client (the daemon's own version; another
// docker on PATH may be newer than the daemon's API).
const Docker = "/usr/bin/docker"

// Start returns the package's daemon, started on first use, with the
// image imported. It skips the test without dockerd (fails under CI=true).
func Start(t testing.TB) *Daemon {
	t.Helper()
	once.Do(start)
	if d.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("dockertest: %v", d.err)
		}
		t.Skipf("dockertest: %v", d.err)
	}
	return &d
}

func start() {
	if os.Geteuid() != 0 {
		d.err = fmt.Errorf("starting dockerd needs root")
		return
	}
	for _, b := range []string{"dockerd", "containerd", "runc"} {
		if _, err := exec.LookPath(b); err != nil {
			d.err = fmt.Errorf("%s not found: run scripts/setup-docker.sh", b)
			return
		}
	}
	if _, err := os.Stat(Docker); err != nil {
		d.err = fmt.Errorf("%s not found: run scripts/setup-docker.sh", Docker)
		return
	}
	dir, err := os.MkdirTemp("", "gpugate-docker-")
	if err != nil {
		d.err = err
		return
	}
	d.dir, d.sock = dir, filepath.Join(dir, "docker.sock")
	log, err := os.Create(filepath.Join(dir, "dockerd.log"))
	if err != nil {
		d.err = err
		return
	}
	defer log.Close()
	d.cmd = exec.Command("dockerd", "--iptables=false", "--ip6tables=false", "--bridge=none",
		"--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "dockerd.pid"), "-H", "unix://"+d.sock,
		"--containerd-namespace", "gpugate-test-"+strconv.Itoa(os.Getpid()),
		"--containerd-plugins-namespace", "gpugate-test-plugins-"+strconv.Itoa(os.Getpid()))
	d.cmd.Stdout, d.cmd.Stderr = log, log
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := d.cmd.Start(); err != nil {
		d.err = fmt.Errorf("start dockerd: %v", err)
		return
	}
	// The watchdog stops the daemon and removes its folder when the test
	// binary dies without Stop (killed, or go test's timeout).
	script := `p=$1; d=$2; q=$3; while kill -0 "$p" 2>/dev/null; do sleep 1; done; kill "$q" 2>/dev/null; sleep 5; kill -9 "$q" 2>/dev/null; umount -R "$d/data" 2>/dev/null; rm -rf "$d"`
	d.watch = exec.Command("sh", "-c", script, "dockertest-watch", strconv.Itoa(os.Getpid()), dir, strconv.Itoa(d.cmd.Process.Pid))
	d.watch.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := d.watch.Start(); err != nil {
		d.err = fmt.Errorf("start the daemon's watchdog: %v", err)
		return
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		out, err := d.docker(context.Background(), nil, "info", "--format", "{{.ServerVersion}} {{.Driver}}")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "dockerd.log"))
			d.err = fmt.Errorf("dockerd did not answer in 90 s: %v %s\n%s", err, out, tail(string(b), 2000))
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
	if d.err = d.importImage(); d.err != nil {
		return
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// docker runs Debian's docker client against the daemon.
func (d *Daemon) docker(ctx context.Context, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, Docker, append([]string{"-H", "unix://" + d.sock}, args...)...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+filepath.Join(d.dir, "client"))
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// importImage builds the root filesystem (busybox-static's shell and
// tools, an /etc/passwd with root and runner) and imports it as Image.
func (d *Daemon) importImage() error {
	root := filepath.Join(d.dir, "rootfs")
	for _, p := range []string{"bin", "etc", "tmp", "proc", "sys", "dev", "root", "home/runner", "srv", "usr/local/bin", "work"} {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			return err
		}
	}
	os.Chmod(filepath.Join(root, "tmp"), 0o1777)
	os.Chmod(filepath.Join(root, "root"), 0o700)
	os.Chown(filepath.Join(root, "home/runner"), RunnerUID, RunnerUID)
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return fmt.Errorf("busybox-static: %v (run scripts/setup-docker.sh)", err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin/busybox"), bb, 0o755); err != nil {
		return err
	}
	out, err := exec.Command(filepath.Join(root, "bin/busybox"), "--list").Output()
	if err != nil {
		return fmt.Errorf("busybox --list: %v", err)
	}
	for _, name := range strings.Fields(string(out)) {
		if name != "busybox" {
			os.Symlink("busybox", filepath.Join(root, "bin", name))
		}
	}
	os.Symlink("bin", filepath.Join(root, "usr/bin"))
	files := map[string]string{
		"etc/passwd": fmt.Sprintf("root:x:0:0:root:/root:/bin/sh\nrunner:x:%d:%d:runner:/home/runner:/bin/sh\n", RunnerUID, RunnerUID),
		"etc/group":  fmt.Sprintf("root:x:0:\nrunner:x:%d:\n", RunnerUID),
	}
	for p, s := range files {
		if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o644); err != nil {
			return err
		}
	}
	tar, err := exec.Command("tar", "-C", root, "-c", ".").Output()
	if err != nil {
		return fmt.Errorf("tar the root filesystem: %v", err)
	}
	if out, err := d.docker(context.Background(), tar, "import", "-", Image); err != nil {
		return fmt.Errorf("docker import: %v: %s", err, out)
	}
	return nil
}

// Run runs a container of Image (docker run --rm --network none, then
// args: options, then "--", then the command) and returns its combined
// output and exit code.
func (d *Daemon) Run(ctx context.Context, opts []string, command ...string) (string, int, error) {
	args := append([]string{"run", "--rm", "--network", "none"}, opts...)
	args = append(append(args, Image), command...)
	out, err := d.docker(ctx, nil, args...)
	if ee, ok := err.(*exec.ExitError); ok {
		return out, ee.ExitCode(), nil
	}
	return out, 0, err
}

// Stop stops the daemon, waits for it and removes its folder; for
// TestMain, after m.Run.
func Stop() {
	if d.cmd == nil || d.cmd.Process == nil {
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		d.cmd.Process.Kill()
		<-done
	}
	exec.Command("umount", "-R", filepath.Join(d.dir, "data")).Run()
	exec.Command("umount", "-R", filepath.Join(d.dir, "exec")).Run()
	os.RemoveAll(d.dir)
	if d.watch != nil && d.watch.Process != nil {
		d.watch.Process.Kill()
		d.watch.Wait()
	}
}
