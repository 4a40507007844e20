//go:build !linux

package runner

import (
	"io"
	"syscall"
)

// haveInit: elsewhere than Linux the job is started directly, in a process
// group of its own, without an init or namespaces.
const haveInit = false

const initArg0 = ""

const isolationEnv = "GPUGATE_ISOLATION"

type isolation struct {
	ns   bool
	what string
}

func (isolation) attr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func chooseIsolation() isolation { return isolation{what: "none (not Linux)"} }

type initReport struct {
	Err          string
	Exit, Signal int
	MaxRSS       int64
	Killed       []string
}

func (r *initReport) status() string { return "" }

func readInitReport(io.Reader) *initReport { return nil }

func notDumpable() error { return nil }
