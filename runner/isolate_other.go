//go:build !linux

package runner

import (
	"io"
	"os"
	"syscall"
)

// haveInit: elsewhere than Linux the job is started directly, in a process
// group of its own, without an init or namespaces.
const haveInit = false

const isolationEnv = "GPUGATE_ISOLATION"

type initSpec struct {
	NS, User, Env, Net, Tmp bool
	Hide, Sockets, Keep, RO []string
	RunnerRO                string
	RunnerRW                []string
}

const selfExe = ""

const maxNamed = 5

func ownEnv() []string { return nil }

func jobEnvFile([]string) (*os.File, error) { return nil, nil }

func chooseIsolation() isolation {
	return isolation{what: "none (not Linux)", warn: "no isolation for the job: gpugate isolates jobs on Linux only"}
}

func (isolation) spec([]string) initSpec { return initSpec{} }

type uidJob struct{ private string }

func (*uidJob) done() []string { return nil }

func prepareUIDJob(jobIdentity, string) (*uidJob, []string, error) { return nil, nil, nil }

type jobIdentity struct{ uid, gid int }

func initArgs(initSpec, string, []string) []string { return nil }

func isolatedArgv(string, []string) (string, []string, bool) { return "", nil, false }

type initReport struct {
	Err          string
	Exit, Signal int
	MaxRSS       int64
	Ended        int
	SweepMS      int64
	Killed       []string
}

func (r *initReport) status() string { return "" }

func readInitReport(io.Reader) (*initReport, error) { return nil, nil }

type jobCgroup struct{ f *os.File }

func (*jobCgroup) kill() []string { return nil }

func (*jobCgroup) where() string { return "" }

func (*jobCgroup) attach(*syscall.SysProcAttr) {}

func newJobCgroup(string) (*jobCgroup, error) { return nil, nil }

func notDumpable() error { return nil }

func readableBy([]string, jobIdentity) []string { return nil }
