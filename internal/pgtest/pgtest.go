// Package pgtest starts a throwaway PostgreSQL cluster for tests: initdb in
// a temporary folder, the server on a Unix socket in that folder only (no
// TCP), password authentication for every role but the superuser, stopped
// and removed by Stop. Debian's postgresql package provides the binaries
// (scripts/setup-postgres.sh installs it). Without them tests skip, saying
// so, except under CI=true, where they fail.
package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
)

// Role and Password are the role the URLs of DB connect as; the password
// is long and unusual so that tests can search output for it.
const (
	Role     = "gpugate_test"
	Password = "pg-S3cret:with@odd/chars?&x"
)

type cluster struct {
	dir, bin, sock string
	super          *sql.DB
	err            error
	// watch stops the cluster and removes its folder when the test
	// binary dies without Stop (killed, or go test's timeout).
	watch *exec.Cmd
}

var (
	once sync.Once
	c    cluster
	dbs  atomic.Int64
)

// binDir finds initdb and pg_ctl: Debian's versioned folders, newest
// first, then PATH.
func binDir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		a, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		b, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return a > b
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d
		}
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

// command runs a server binary as the user that owns the cluster: the
// postgres user when the tests run as root (PostgreSQL refuses root).
func command(name string, args ...string) *exec.Cmd {
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(c.bin, name)}, args...)...)
	}
	return exec.Command(filepath.Join(c.bin, name), args...)
}

func start() {
	c.bin = binDir()
	if c.bin == "" {
		c.err = fmt.Errorf("PostgreSQL server binaries (initdb, pg_ctl) not found in /usr/lib/postgresql/*/bin or PATH: run scripts/setup-postgres.sh")
		return
	}
	dir, err := os.MkdirTemp("", "gpugate-pg-")
	if err != nil {
		c.err = err
		return
	}
	c.dir, c.sock = dir, dir
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			c.err = fmt.Errorf("running as root needs the postgres user (Debian's postgresql package creates it): %v", err)
			return
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			c.err = err
			return
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := command("initdb", "-D", data, "-U", "postgres", "--auth-local=scram-sha-256", "--auth-host=reject", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync").CombinedOutput(); err != nil {
		c.err = fmt.Errorf("initdb: %v: %s", err, out)
		return
	}
	// The superuser connects without a password; every other role needs
	// its password.
	hba := "local all postgres trust\nlocal all all scram-sha-256\n"
	if err := writeAs(filepath.Join(data, "pg_hba.conf"), hba); err != nil {
		c.err = err
		return
	}
	if c.err = startWatch(dir); c.err != nil {
		return
	}
	opts := fmt.Sprintf("-c listen_addresses='' -c unix_socket_directories=%s -c fsync=off -c max_connections=200", dir)
	if out, err := command("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-o", opts, "-w", "-t", "60", "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		c.err = fmt.Errorf("pg_ctl start: %v: %s %s", err, out, log)
		return
	}
	c.super, c.err = sql.Open("pgx", fmt.Sprintf("host=%s user=postgres dbname=postgres", dir))
	if c.err != nil {
		return
	}
	if _, err := c.super.Exec(fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'`, Role, strings.ReplaceAll(Password, "'", "''"))); err != nil {
		c.err = fmt.Errorf("create role: %v", err)
	}
}

// startWatch starts the cluster's watchdog: a shell in a session of its
// own that polls this process once a second and, when it is gone without
// Stop (a test binary killed, or ended by go test's timeout, runs no
// TestMain epilogue), stops the server at once and removes dir. Without
// it every killed run left a postgres running (three were found after
// one session's killed runs).
func startWatch(dir string) error {
	stop := command("pg_ctl", "-D", filepath.Join(dir, "data"), "-m", "immediate", "-w", "stop").Args
	script := `p=$1; d=$2; shift 2; while kill -0 "$p" 2>/dev/null; do sleep 1; done; "$@" >/dev/null 2>&1; rm -rf "$d"`
	w := exec.Command("sh", append([]string{"-c", script, "pgtest-watch", strconv.Itoa(os.Getpid()), dir}, stop...)...)
	w.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := w.Start(); err != nil {
		return fmt.Errorf("pgtest: start the cluster's watchdog: %v", err)
	}
	c.watch = w
	return nil
}

// writeAs writes a file of the cluster, owned by the cluster's user.
func writeAs(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		u, _ := user.Lookup("postgres")
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return os.Chown(path, uid, gid)
	}
	return nil
}

// Available reports whether a cluster runs (starting it on first use).
func Available() error {
	once.Do(start)
	return c.err
}

// DB returns the postgres:// URL of a new, empty database owned by Role on
// the shared throwaway cluster, with Role's password in it. It skips the
// test when PostgreSQL is not installed, and fails it under CI=true.
func DB(t testing.TB) string {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is needed in CI: %v", err)
		}
		t.Skipf("no PostgreSQL: %v", err)
	}
	name := fmt.Sprintf("gpugate_%d_%d", os.Getpid(), dbs.Add(1))
	if _, err := c.super.Exec(`CREATE DATABASE ` + name + ` OWNER ` + Role); err != nil {
		t.Fatalf("create database: %v", err)
	}
	return URL(name)
}

// URL is the postgres:// URL of database name as Role.
func URL(name string) string { return URLAs(Role, Password, name) }

// URLAs is the postgres:// URL of database name as role.
func URLAs(role, password, name string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(role, password), Path: "/" + name, RawQuery: "host=" + url.QueryEscape(c.sock)}
	return u.String()
}

// Super opens database name as the superuser, for checks that look at the
// tables directly; search_path is gpugate's schema.
func Super(t testing.TB, name string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", fmt.Sprintf("host=%s user=postgres dbname=%s search_path=gpugate", c.sock, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Name is the database name of a URL made by DB.
func Name(rawURL string) string {
	u, _ := url.Parse(rawURL)
	return strings.TrimPrefix(u.Path, "/")
}

// Restart stops the server (fast shutdown: connections are cut) and, after
// pause, starts it again. A test of a server that goes away mid-run uses
// it.
func StopServer() error {
	out, err := command("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "fast", "-w", "stop").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, out)
	}
	return nil
}

// StartServer starts a stopped server again.
func StartServer() error {
	opts := fmt.Sprintf("-c listen_addresses='' -c unix_socket_directories=%s -c fsync=off -c max_connections=200", c.dir)
	out, err := command("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-l", filepath.Join(c.dir, "log"), "-o", opts, "-w", "-t", "60", "start").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl start: %v: %s", err, out)
	}
	// The superuser's pool reconnects by itself.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.super.PingContext(ctx)
}

// Stop stops the cluster, if one was started, and removes its folder. Call
// it from TestMain after m.Run.
func Stop() {
	if c.dir == "" {
		return
	}
	if c.super != nil {
		c.super.Close()
	}
	if c.watch != nil {
		c.watch.Process.Kill()
		c.watch.Wait()
	}
	command("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "immediate", "-w", "stop").Run()
	os.RemoveAll(c.dir)
}

// Dir is the cluster's folder ("" before one started): a test of the
// watchdog looks for it.
func Dir() string { return c.dir }
