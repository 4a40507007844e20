// Package bounded runs the external tools gpugate asks for facts
// (nvidia-smi, nsys --version, the job's Python, nsys export) so that none
// can hold gpugate past a limit or fill its memory: the tool runs in a
// process group of its own, which is killed at the deadline; its output is
// read up to a cap (what comes after is not kept, and the tool, writing to
// a closed pipe, is stopped); and the pipes are closed shortly after the
// tool exits even when a child it left behind still holds them
// (exec.Cmd.WaitDelay), that child's group being killed too.
//
// A hostile nvidia-smi on PATH did each of these: a --help-query-gpu that
// left a child holding stdout hung gpugate past every limit, and a probe
// that streamed 40 MB/s drove it to 4.2 GB.
package bounded

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/gpugate/gpugate/internal/denyenv"
)

// Options bound one run.
type Options struct {
	// Limit is the most time the tool gets (required).
	Limit time.Duration
	// MaxOutput is the most bytes of output kept, stdout and stderr
	// together; 1 MiB when 0.
	MaxOutput int
	// Stderr keeps stderr in the output too (else it is discarded).
	Stderr bool
	// Argv0, when not empty, is the tool's argv[0] (name is still the
	// file run).
	Argv0 string
	// Env, when not nil, is the tool's environment; nil gives it
	// gpugate's environment without the credentials (internal/denyenv).
	Env []string
}

// Result is what the tool printed and how it ended.
type Result struct {
	Out       []byte
	Truncated bool // more output came than MaxOutput; the tool was stopped
	TimedOut  bool // it ran past Limit (or ctx ended) and was killed
}

// ErrTruncated is the error of a tool whose output went past the cap.
var ErrTruncated = errors.New("output over the limit")

// capWriter keeps the first max bytes and fails the write after that,
// which ends exec's copy and, through the closed pipe, the tool.
type capWriter struct {
	buf       []byte
	max       int
	truncated bool
	full      func() // stops the tool: a full pipe would block it until the limit
}

func (w *capWriter) Write(p []byte) (int, error) {
	if room := w.max - len(w.buf); len(p) > room {
		w.buf = append(w.buf, p[:max(room, 0)]...)
		if !w.truncated {
			w.truncated = true
			w.full()
		}
		return max(room, 0), ErrTruncated
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// Run runs name with args under the bounds. The error is the tool's (an
// *exec.ExitError, a start failure), context.DeadlineExceeded when it ran
// past its limit, or ErrTruncated.
func Run(ctx context.Context, o Options, name string, args ...string) (Result, error) {
	if o.MaxOutput <= 0 {
		o.MaxOutput = 1 << 20
	}
	ctx, cancel := context.WithTimeout(ctx, o.Limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if o.Argv0 != "" {
		cmd.Args[0] = o.Argv0
	}
	cmd.Env = o.Env
	if cmd.Env == nil {
		cmd.Env = denyenv.Filter(os.Environ())
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// After the tool exits, a child that still holds its pipes gets a
	// second, then the pipes are closed under it.
	cmd.WaitDelay = time.Second
	w := &capWriter{max: o.MaxOutput, full: cancel}
	cmd.Stdout = w
	if o.Stderr {
		cmd.Stderr = w
	}
	err := cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what it left in its group
	}
	res := Result{Out: w.buf, Truncated: w.truncated, TimedOut: !w.truncated && ctx.Err() != nil}
	switch {
	case res.TimedOut:
		return res, context.DeadlineExceeded
	case res.Truncated:
		return res, ErrTruncated
	case errors.Is(err, exec.ErrWaitDelay):
		return res, nil // it exited well; a child of it held the pipes
	}
	return res, err
}
