// Package action speaks GitHub Actions for gpugate: inputs, outputs, the
// job summary, annotations and log groups through
// github.com/sethvargo/go-githubactions, and the pull request comment and
// check run through github.com/google/go-github. Outside a workflow every
// file command is skipped instead of panicking.
package action

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gpugate/gpugate/ci"
	"github.com/gpugate/gpugate/internal/escape"

	"github.com/sethvargo/go-githubactions"
)

// IO is the workflow's side of a run.
type IO struct {
	a      *githubactions.Action
	getenv func(string) string
}

// New returns an IO that reads the environment through getenv and writes
// workflow commands to w.
func New(getenv func(string) string, w io.Writer) *IO {
	// Workflow commands bypass the line escaping of gpugate's output.
	return &IO{a: githubactions.New(githubactions.WithGetenv(getenv), githubactions.WithWriter(escape.Raw(w))), getenv: getenv}
}

// InActions reports whether gpugate runs inside a workflow.
func (io *IO) InActions() bool { return ci.Detect(io.getenv).CI == ci.GitHub }

// Input reads an input that the composite action passed as GPUGATE_<NAME>:
// composite steps get no INPUT_* variables on the real runner.
func (io *IO) Input(name string) string {
	return strings.TrimSpace(io.getenv("GPUGATE_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))))
}

// SetOutput sets a step output; it does nothing outside a workflow (the
// library panics when GITHUB_OUTPUT is unset). go-githubactions' own
// SetOutput writes every value between the fixed delimiter
// "_GitHubActionsFileCommandDelimeter_", so that a value holding that line
// (a name from a trace, a config) adds outputs of its own; the entry is
// made here with a random delimiter per value (escape.FileCommand) and
// written through the library's IssueFileCommand.
func (io *IO) SetOutput(k, v string) error {
	if io.getenv("GITHUB_OUTPUT") == "" {
		return nil
	}
	entry, err := escape.FileCommand(k, v)
	if err != nil {
		return fmt.Errorf("set output: %w", err)
	}
	io.a.IssueFileCommand(&githubactions.Command{Name: "output", Message: entry})
	return nil
}

// Summary appends Markdown to the job summary, if there is one.
func (io *IO) Summary(md string) {
	if io.getenv("GITHUB_STEP_SUMMARY") != "" {
		io.a.AddStepSummary(md)
	}
}

// Error and Warning write annotations.
func (io *IO) Error(title, msg string) {
	io.a.WithFieldsMap(map[string]string{"title": title}).Errorf("%s", msg)
}

func (io *IO) Warning(title, msg string) {
	io.a.WithFieldsMap(map[string]string{"title": title}).Warningf("%s", msg)
}

// ErrorAt writes an error annotation on a line of a file (line and col 0:
// the file only). The library escapes the properties and the message, so
// that a newline or "::" in them cannot start a workflow command.
func (io *IO) ErrorAt(file string, line, col int, title, msg string) {
	f := map[string]string{"title": title, "file": file}
	if line > 0 {
		f["line"] = strconv.Itoa(line)
		if col > 0 {
			f["col"] = strconv.Itoa(col)
		}
	}
	io.a.WithFieldsMap(f).Errorf("%s", msg)
}

// Notice writes a notice annotation.
func (io *IO) Notice(title, msg string) {
	io.a.WithFieldsMap(map[string]string{"title": title}).Noticef("%s", msg)
}

// Group and EndGroup fold log lines.
func (io *IO) Group(title string) { io.a.Group(title) }
func (io *IO) EndGroup()          { io.a.EndGroup() }

// Mask hides a value in the log.
func (io *IO) Mask(v string) {
	if v != "" {
		io.a.AddMask(v)
	}
}
