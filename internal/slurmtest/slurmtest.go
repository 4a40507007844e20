// Package slurmtest starts a throwaway Slurm cluster on this host for
// tests: MUNGE with a fresh key, slurmctld and two slurmd daemons (nodes n1
// and n2, each on a port of its own, with a GPU declared through gres.conf
// on a stand-in device file), every file under one temporary folder, all
// stopped and removed at the end of the test. Debian 12's slurm-wlm
// 22.05 and munge provide the binaries (scripts/setup-slurm.sh installs
// them). Without them, or without root (slurmd runs tasks as their user),
// tests skip, saying so, except under CI=true, where they fail.
//
// Two slurmd on one host: Debian's slurmd accepts -N NODENAME, and with
// each node's own Port= and a SlurmdSpoolDir, SlurmdPidFile and
// SlurmdLogFile with %n in them, the two daemons share nothing; both
// nodes have NodeHostname=localhost and NodeAddr=127.0.0.1.
package slurmtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Nodes are the cluster's node names.
var Nodes = []string{"n1", "n2"}

// Cluster is a running throwaway cluster.
type Cluster struct {
	Dir  string
	Conf string // its slurm.conf: SLURM_CONF for the client commands
	// Started is how long the cluster took to start (munged, slurmctld,
	// both slurmd, until sinfo shows both nodes idle).
	Started time.Duration
	// Private is a folder that node n2 does not share with the others
	// (Options.Private): there n2 sees an empty tmpfs of its own.
	Private string
	procs   []*exec.Cmd
	t       testing.TB
}

// Options change the cluster.
type Options struct {
	// Private starts n2's slurmd in a mount namespace of its own with a
	// tmpfs over Cluster.Private: a node that does not see what gpugate's
	// machine writes there, as a node without the shared filesystem.
	Private bool
}

// Env is the environment entry that points Slurm's commands at the
// cluster.
func (c *Cluster) Env() string { return "SLURM_CONF=" + c.Conf }

// skip skips the test, or fails it under CI=true.
func skip(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: a test that cannot run fails)", msg)
	}
	t.Skip(msg)
}

// Start starts a cluster and sets SLURM_CONF for the test (t.Setenv);
// t.Cleanup stops it.
func Start(t testing.TB) *Cluster {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith starts a cluster with options.
func StartWith(t testing.TB, opt Options) *Cluster {
	t.Helper()
	for _, b := range []string{"munged", "munge", "slurmctld", "slurmd", "srun", "salloc", "squeue", "scancel", "sinfo"} {
		if _, err := exec.LookPath(b); err != nil {
			skip(t, "slurmtest: %s not installed (scripts/setup-slurm.sh installs slurm-wlm and munge)", b)
		}
	}
	if os.Geteuid() != 0 {
		skip(t, "slurmtest: slurmd must run as root to start tasks")
	}
	begin := time.Now()
	// A short path: the munge socket's must fit in 107 bytes.
	dir, err := os.MkdirTemp("/tmp", "gg-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "slurm.conf"), t: t}
	t.Cleanup(c.stop)
	c.Private = filepath.Join(dir, "private")
	for _, d := range []string{"munge", "state", "spool/n1", "spool/n2", "dev", "log", "private"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// munged wants its own folders closed to others but the socket's
	// folder searchable.
	os.Chmod(filepath.Join(dir, "munge"), 0o711)
	key := make([]byte, 1024)
	rand.Read(key)
	keyFile := filepath.Join(dir, "munge", "munge.key")
	if err := os.WriteFile(keyFile, key, 0o400); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "munge", "munge.sock")
	c.start("munged", "--foreground", "--force", "--socket="+sock, "--key-file="+keyFile,
		"--log-file="+filepath.Join(dir, "log", "munged.log"), "--pid-file="+filepath.Join(dir, "munge", "munged.pid"),
		"--seed-file="+filepath.Join(dir, "munge", "munged.seed"))
	if err := waitFor(10*time.Second, func() error {
		out, err := exec.Command("munge", "--socket="+sock, "--no-input").CombinedOutput()
		if err != nil {
			return fmt.Errorf("munge: %v: %s", err, out)
		}
		return nil
	}); err != nil {
		t.Fatalf("slurmtest: munged did not answer: %v; log: %s", err, c.log("munged.log"))
	}

	ports := freePorts(t, 4)
	host, _ := os.Hostname()
	host, _, _ = strings.Cut(host, ".")
	var gres bytes.Buffer
	for i, n := range Nodes {
		// A stand-in GPU: a character device like /dev/null, which is what
		// gres.conf's File= wants (a regular file where mknod is refused).
		dev := filepath.Join(dir, "dev", fmt.Sprintf("nvidia%d", i))
		if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, int(1<<8|3)); err != nil {
			os.WriteFile(dev, nil, 0o666)
		}
		fmt.Fprintf(&gres, "NodeName=%s Name=gpu File=%s\n", n, dev)
	}
	if err := os.WriteFile(filepath.Join(dir, "gres.conf"), gres.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`ClusterName=gpugate-test
SlurmctldHost=%[1]s(127.0.0.1)
SlurmctldPort=%[2]d
SlurmdPort=%[3]d
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=%[4]s
CredType=cred/munge
StateSaveLocation=%[5]s/state
SlurmdSpoolDir=%[5]s/spool/%%n
SlurmctldPidFile=%[5]s/slurmctld.pid
SlurmdPidFile=%[5]s/slurmd-%%n.pid
SlurmctldLogFile=%[5]s/log/slurmctld.log
SlurmdLogFile=%[5]s/log/slurmd-%%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldTimeout=30
SlurmdTimeout=30
KillWait=5
MinJobAge=2
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=%[6]d CPUs=2 Gres=gpu:1 State=UNKNOWN
NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=%[7]d CPUs=2 Gres=gpu:1 State=UNKNOWN
PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
`, host, ports[0], ports[1], sock, dir, ports[2], ports[3])
	if err := os.WriteFile(c.Conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLURM_CONF", c.Conf)
	c.start("slurmctld", "-D", "-i", "-f", c.Conf)
	for _, n := range Nodes {
		if opt.Private && n == "n2" {
			c.start("unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
				`mount -t tmpfs gpugate-private "$0" && exec slurmd -D -N n2 -f "$1"`, c.Private, c.Conf)
			continue
		}
		c.start("slurmd", "-D", "-N", n, "-f", c.Conf)
	}
	if err := waitFor(60*time.Second, func() error {
		out, err := exec.Command("sinfo", "--noheader", "--Node", "--format=%N %t").CombinedOutput()
		if err != nil {
			return fmt.Errorf("sinfo: %v: %s", err, out)
		}
		if got := strings.Join(strings.Fields(string(out)), " "); got != "n1 idle n2 idle" {
			return fmt.Errorf("sinfo: %q, want n1 and n2 idle", got)
		}
		return nil
	}); err != nil {
		t.Fatalf("slurmtest: the cluster did not come up: %v\nslurmctld.log: %s\nslurmd-n1.log: %s", err, c.log("slurmctld.log"), c.log("slurmd-n1.log"))
	}
	c.Started = time.Since(begin)
	t.Logf("slurmtest: cluster (munged, slurmctld, slurmd n1 and n2) up in %.2fs under %s", c.Started.Seconds(), dir)
	return c
}

// Squeue is what squeue shows of the cluster's jobs, one per line.
func (c *Cluster) Squeue() string {
	out, err := exec.Command("squeue", "--noheader", "--format=%i %j %T").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("squeue failed: %v: %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

func (c *Cluster) start(name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), c.Env())
	f, err := os.Create(filepath.Join(c.Dir, "log", name+"-"+fmt.Sprint(len(c.procs))+".out"))
	if err != nil {
		c.t.Fatal(err)
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("slurmtest: start %s: %v", name, err)
	}
	c.procs = append(c.procs, cmd)
}

func (c *Cluster) log(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "log", name))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// stop cancels every job, stops the daemons (slurmd first, munged last)
// and removes the folder.
func (c *Cluster) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "scancel", "--user=root")
	cmd.Env = append(os.Environ(), c.Env())
	cmd.Run()
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		syscall.Kill(-p.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	if !c.t.Failed() || os.Getenv("CI") == "true" {
		os.RemoveAll(c.Dir)
	} else {
		c.t.Logf("slurmtest: kept %s for its logs", c.Dir)
	}
}

func waitFor(limit time.Duration, f func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// freePorts returns n TCP ports free on 127.0.0.1 just now.
func freePorts(t testing.TB, n int) []int {
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}
