package runner

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpugate/gpugate/internal/escape"
)

var subreaper sync.Once

// becomeSubreaper makes gpugate the child subreaper of its descendants
// (PR_SET_CHILD_SUBREAPER): a process the job leaves behind, a setsid
// daemon included, is re-parented to gpugate instead of init, so that it
// can be found by walking /proc and killed.
func becomeSubreaper() {
	subreaper.Do(func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })
}

// proc is a line of /proc/PID/stat.
type proc struct {
	pid, ppid, pgid, sid int
	comm, state          string
}

func readProcs() []proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp session ...; comm may hold spaces
		// and parentheses: it ends at the last ')'.
		i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if i < 0 || j < i {
			continue
		}
		f := strings.Fields(string(b[j+1:]))
		if len(f) < 4 {
			continue
		}
		p := proc{pid: pid, comm: string(b[i+1 : j]), state: f[0]}
		p.ppid, _ = strconv.Atoi(f[1])
		p.pgid, _ = strconv.Atoi(f[2])
		p.sid, _ = strconv.Atoi(f[3])
		out = append(out, p)
	}
	return out
}

// hasToken reports whether the process was started with the job's token
// in its environment.
func hasToken(pid int, token string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	return bytes.Contains(append([]byte{0}, b...), []byte("\x00"+tokenVar+"="+token+"\x00"))
}

// leftovers lists the live descendants of gpugate that belong to the job:
// in its process group, started with its token in the environment, in a
// session of their own (gpugate starts nothing with setsid, so such a
// descendant is a daemon the job started), or below one of those.
// Processes that were gpugate's descendants before the job started (before,
// from descendants) are not the job's unless they are in its group or carry
// its token: when gpugate runs inside a test or another program, what that
// program started (a database server) is left alone.
func leftovers(pgid int, token string, before map[int]bool) []proc {
	self := os.Getpid()
	selfSid, _ := unix.Getsid(self)
	all := readProcs()
	children := map[int][]proc{}
	for _, p := range all {
		children[p.ppid] = append(children[p.ppid], p)
	}
	var out []proc
	var walk func(pid int, inJob bool)
	walk = func(pid int, inJob bool) {
		for _, c := range children[pid] {
			mark := c.pgid == pgid || hasToken(c.pid, token)
			if before[c.pid] && !inJob && !mark {
				continue
			}
			job := inJob || mark || c.sid != selfSid
			if job {
				out = append(out, c)
			}
			walk(c.pid, job)
		}
	}
	walk(self, false)
	return out
}

// killLeftovers kills what the job left behind and reaps what was
// re-parented to gpugate; it returns "pid (comm)" for each process killed.
func killLeftovers(pgid int, token string, before map[int]bool) []string {
	var killed []string
	seen := map[int]bool{}
	for range 10 {
		ps := leftovers(pgid, token, before)
		fresh := 0
		for _, p := range ps {
			if p.state == "Z" {
				continue // dead already, to be reaped
			}
			if syscall.Kill(p.pid, syscall.SIGKILL) == nil && !seen[p.pid] {
				seen[p.pid] = true
				fresh++
				killed = append(killed, strconv.Itoa(p.pid)+" ("+escape.Terminal(p.comm)+")") // the job names its processes
			}
		}
		self := os.Getpid()
		for _, p := range ps {
			if p.ppid == self {
				reap(p.pid)
			}
		}
		if len(ps) == 0 || fresh == 0 && allGone(ps) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return killed
}

// descendants returns the pids of gpugate's live descendants, taken before
// the job starts so that they are never counted as the job's.
func descendants() map[int]bool {
	children := map[int][]int{}
	for _, p := range readProcs() {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	out := map[int]bool{}
	var walk func(pid int)
	walk = func(pid int) {
		for _, c := range children[pid] {
			out[c] = true
			walk(c)
		}
	}
	walk(os.Getpid())
	return out
}

// reap waits for a killed re-parented process, up to a second, so that it
// does not stay a zombie.
func reap(pid int) {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		var ws syscall.WaitStatus
		n, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if n == pid || err != nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func allGone(ps []proc) bool {
	for _, p := range ps {
		if p.state != "Z" && syscall.Kill(p.pid, 0) == nil {
			return false
		}
	}
	return true
}
