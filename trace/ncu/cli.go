package ncu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/gpugate/gpugate/internal/bounded"
	"github.com/gpugate/gpugate/internal/denyenv"
	"github.com/gpugate/gpugate/trace"
)

// KnownPaths are where the ncu CLI is found when it is not on PATH:
// gpugate's own installer (scripts/setup-ncu.sh), Debian's nsight-compute
// package, the CUDA toolkit and NVIDIA's standalone installers.
var KnownPaths = []string{
	"/opt/gpugate/nsight-compute/usr/lib/nsight-compute/ncu",
	"/usr/lib/nsight-compute/ncu",
	"/usr/local/cuda/bin/ncu",
	"/opt/nvidia/nsight-compute/ncu",
}

// FindCLI returns the ncu binary to use: explicit if set, else ncu on PATH,
// else the first of KnownPaths that exists.
func FindCLI(explicit string) (string, error) {
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", fmt.Errorf("ncu %s: %w", explicit, err)
		}
		return explicit, nil
	}
	if p, err := exec.LookPath("ncu"); err == nil {
		return p, nil
	}
	for _, p := range KnownPaths {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("ncu not found (install Nsight Compute: scripts/setup-ncu.sh, or set GPUGATE_NCU)")
}

var cliVersionRE = regexp.MustCompile(`Version (\d{4}\.\d+(?:\.\d+)*)`)

// CLIVersion returns the version the ncu CLI reports, e.g. "2022.3.0.0",
// or "unknown".
func CLIVersion(ctx context.Context, ncu string) string {
	res, err := bounded.Run(ctx, bounded.Options{Limit: 30 * time.Second, MaxOutput: 64 << 10, Stderr: true}, ncu, "--version")
	out := res.Out
	if err != nil {
		return "unknown"
	}
	if m := cliVersionRE.FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return "unknown"
}

// importTimeout bounds one ncu --import; a page of a large report takes
// seconds.
const importTimeout = 5 * time.Minute

// ReadReport reads an .ncu-rep report with the ncu CLI: the details page
// (values under their display labels, and the rule results) and the raw page
// (values under their metric names, device, launch dimensions), both in
// base units. A report written by a newer ncu than the installed one, which
// ncu cannot open, gives an error that names both versions.
func ReadReport(ctx context.Context, ncu, path string) (*Report, error) {
	writer, werr := WriterVersion(path)
	if errors.Is(werr, ErrNotReport) {
		return nil, &trace.SyntaxError{File: path, Msg: ErrNotReport.Error()}
	}
	rep := &Report{Path: path, Source: "ncu-rep", Writer: writer}
	p := newParser(rep)
	for _, page := range []string{"details", "raw"} {
		if err := p.importPage(ctx, ncu, path, page); err != nil {
			return nil, err
		}
	}
	p.finish()
	return rep, nil
}

// importPage runs ncu --import on one page and parses its CSV as it
// streams out.
func (p *parser) importPage(ctx context.Context, ncu, path, page string) error {
	ctx, cancel := context.WithTimeout(ctx, importTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, ncu, "--import", path, "--csv", "--page", page, "--print-units", "base")
	cmd.Env = denyenv.Filter(os.Environ())
	// ncu and whatever it starts go at the limit, and a child of it that
	// holds the pipe does not keep the parser reading past it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{buf: &stderr, max: 64 << 10}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run ncu %s: %w", ncu, err)
	}
	parsed := make(chan struct{})
	defer close(parsed)
	go func() {
		select {
		case <-ctx.Done():
			select {
			case <-parsed:
			case <-time.After(time.Second):
				out.Close()
			}
		case <-parsed:
		}
	}()
	// ncu's own messages ("==ERROR== Failed to load report file") come on
	// stdout, before any CSV; keep them for the error.
	tee := &headBuffer{max: 4 << 10}
	perr := p.parse(teeReader{out, tee}, path)
	// Drain what the parser left, so that ncu is not blocked on a full pipe.
	_, _ = io.Copy(io.Discard, out)
	werr := cmd.Wait()
	if werr != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return &trace.SyntaxError{File: path, Msg: fmt.Sprintf("ncu --import --page %s ran past its time limit (at most %v a page, and the caller's)", page, importTimeout)}
		}
		return p.importError(ctx, ncu, path, werr, tee.String()+"\n"+stderr.String())
	}
	return perr
}

// importError explains a failed ncu --import. ncu says nothing about
// versions: a report from a newer ncu fails with a protobuf error ("Can't
// parse message of type NV.Profiler.Messages.ProfileResult because it is
// missing required fields: RuleResults[0].Body.Items[0].Message.Type")
// when it holds rule messages of a severity the old schema lacks. The
// failure depends on the content, not strictly on the version (2023.1
// reports open in 2022.3), so the version is compared only after a failure.
func (p *parser) importError(ctx context.Context, ncu, path string, err error, output string) error {
	installed := CLIVersion(ctx, ncu)
	if w := p.rep.Writer; w != "" && newer(w, installed) {
		return &trace.SyntaxError{File: path, Msg: fmt.Sprintf(
			"report written by Nsight Compute %s, newer than the installed %s (%s), which cannot open it: read it with ncu %s or later, or export it there (ncu --import REPORT --csv --page details --print-units base > REPORT.csv) and pass the CSV",
			shortVersion(w), installed, ncu, shortVersion(w))}
	}
	return &trace.SyntaxError{File: path, Msg: fmt.Sprintf("ncu --import failed (%v): %s", err, lastMessage(output))}
}

// lastMessage picks ncu's most telling line: the first "==ERROR==" line,
// else the last non-empty one.
func lastMessage(out string) string {
	var last string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "==ERROR==") {
			return trimMessage(l)
		}
		if l != "" {
			last = l
		}
	}
	if last == "" {
		return "no output"
	}
	return trimMessage(last)
}

func trimMessage(s string) string {
	const max = 300
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

type teeReader struct {
	r interface{ Read([]byte) (int, error) }
	w *headBuffer
}

func (t teeReader) Read(b []byte) (int, error) {
	n, err := t.r.Read(b)
	t.w.Write(b[:n])
	return n, err
}

// headBuffer keeps the first max bytes written to it.
type headBuffer struct {
	b   []byte
	max int
}

func (h *headBuffer) Write(b []byte) (int, error) {
	if room := h.max - len(h.b); room > 0 {
		h.b = append(h.b, b[:min(room, len(b))]...)
	}
	return len(b), nil
}

func (h *headBuffer) String() string { return string(h.b) }

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(b []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(b[:min(room, len(b))])
	}
	return len(b), nil
}
