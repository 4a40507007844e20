package escape

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// ActionsWriter passes output through line by line with ActionsLine
// applied, so that nothing written to it starts a workflow command.
// gpugate's own workflow commands go to Raw. It is safe for concurrent use.
type ActionsWriter struct {
	mu      sync.Mutex
	w       io.Writer
	pending []byte // an incomplete last line
}

// maxPending bounds the incomplete line kept back; a longer one is passed
// on in pieces (each piece escaped as if it started a line).
const maxPending = 64 << 10

// NewActionsWriter returns a writer that escapes each line for w.
func NewActionsWriter(w io.Writer) *ActionsWriter { return &ActionsWriter{w: w} }

// Write escapes the complete lines of p and keeps back the rest.
func (a *ActionsWriter) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := len(p)
	var out bytes.Buffer
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			a.pending = append(a.pending, p...)
			if len(a.pending) >= maxPending {
				// Keep back up to two trailing '#', so that a "##["
				// never straddles two pieces (the kept "##" is escaped
				// with what follows it).
				run := 0
				for run < 2 && a.pending[len(a.pending)-1-run] == '#' {
					run++
				}
				k := len(a.pending) - run
				out.WriteString(ActionsLine(string(a.pending[:k])))
				a.pending = append(a.pending[:0], a.pending[k:]...)
			}
			break
		}
		a.pending = append(a.pending, p[:i]...)
		out.WriteString(ActionsLine(string(a.pending)))
		out.WriteByte('\n')
		a.pending = a.pending[:0]
		p = p[i+1:]
	}
	if out.Len() > 0 {
		if _, err := a.w.Write(out.Bytes()); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// Flush writes out an incomplete last line, escaped.
func (a *ActionsWriter) Flush() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.flushLocked()
}

func (a *ActionsWriter) flushLocked() error {
	if len(a.pending) == 0 {
		return nil
	}
	_, err := io.WriteString(a.w, ActionsLine(string(a.pending))+"\n")
	a.pending = a.pending[:0]
	return err
}

// Raw returns a writer for gpugate's own workflow commands: it ends any
// incomplete line first, so that a command always starts a line.
func (a *ActionsWriter) Raw() io.Writer { return rawWriter{a} }

type rawWriter struct{ a *ActionsWriter }

func (r rawWriter) Write(p []byte) (int, error) {
	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	if err := r.a.flushLocked(); err != nil {
		return 0, err
	}
	return r.a.w.Write(p)
}

// Raw returns the writer under w when w is an ActionsWriter, for workflow
// commands, and w itself otherwise.
func Raw(w io.Writer) io.Writer {
	if a, ok := w.(*ActionsWriter); ok {
		return a.Raw()
	}
	return w
}

// StopCommands writes "::stop-commands::TOKEN" with a fresh random token to
// w, so that the runner processes no workflow command in what follows, and
// returns the function that writes "::TOKEN::" to resume. Echoed job output
// goes between the two: a job cannot guess the token.
func StopCommands(w io.Writer) (resume func()) {
	tok := "gpugate-" + Token(16)
	fmt.Fprintf(Raw(w), "::stop-commands::%s\n", tok)
	return func() { fmt.Fprintf(Raw(w), "::%s::\n", tok) }
}
