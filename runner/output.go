package runner

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
)

// Limits of what the runner keeps of a job's output. The job's pipe is
// read in blocks, never by a line scanner, so a line of any length (a tqdm
// bar redrawn with \r for megabytes) never stops the reader.
const (
	// LogHead and LogTail bound job.log: it keeps the first LogHead and the
	// last LogTail bytes of the output, and says how much it left out
	// between them.
	LogHead = 1 << 20
	LogTail = 4 << 20
	// maxLine is the longest line (or \r-separated segment) kept for
	// parsing; the rest of a longer one is counted, not kept.
	maxLine = 64 << 10
	// maxEcho is the longest line echoed to the terminal or kept in an
	// error's tail.
	maxEcho = 2000
	// EchoHead and EchoTail bound the echo of the job's output to
	// gpugate's own output (in Actions, the job's log): the lines of the
	// first EchoHead and the last EchoTail bytes of the echo are shown,
	// with a line between them saying how many lines and bytes were left
	// out. gpugate's own lines are not counted.
	EchoHead = 1 << 20
	EchoTail = 1 << 20
)

// echoCap echoes the job's lines to w: the first EchoHead bytes as they
// come, then it keeps the lines of the last EchoTail bytes, which flush
// writes after a line saying what was left out.
type echoCap struct {
	w         io.Writer
	head      int64 // bytes written so far
	closed    bool  // the head is full: lines go to the tail
	tail      []string
	tailBytes int
	leftLines int64
	leftBytes int64
}

func (e *echoCap) line(s string) {
	if !e.closed {
		if e.head+int64(len(s)) <= EchoHead {
			e.head += int64(len(s))
			io.WriteString(e.w, s)
			return
		}
		e.closed = true
	}
	e.tail = append(e.tail, s)
	e.tailBytes += len(s)
	drop := 0
	for e.tailBytes > EchoTail && drop < len(e.tail) {
		e.tailBytes -= len(e.tail[drop])
		e.leftBytes += int64(len(e.tail[drop]))
		e.leftLines++
		drop++
	}
	if drop > 0 {
		e.tail = append(e.tail[:0], e.tail[drop:]...)
	}
}

// flush writes the line saying what was left out, if anything was, and
// the kept tail.
func (e *echoCap) flush(name, log string) {
	if e.leftLines > 0 {
		fmt.Fprintf(e.w, "[%s] gpugate: %d lines (%d bytes) of the job's output left out of this echo here: it shows the first %d MiB and the last %d MiB of the echo (job.log keeps the first %d MiB and the last %d MiB of the output: %s)\n",
			name, e.leftLines, e.leftBytes, EchoHead>>20, EchoTail>>20, LogHead>>20, LogTail>>20, log)
	}
	for _, s := range e.tail {
		io.WriteString(e.w, s)
	}
	e.tail, e.tailBytes, e.leftLines, e.leftBytes = nil, 0, 0, 0
}

// capLog writes the head of the output to a file and keeps its tail in a
// ring buffer, written out on Close.
type capLog struct {
	f       *os.File
	written int64 // to the file, in the head
	ring    []byte
	pos     int   // next write in ring
	full    bool  // ring has wrapped
	total   int64 // bytes seen
}

func (l *capLog) Write(p []byte) (int, error) {
	n := len(p)
	l.total += int64(n)
	if l.written < LogHead {
		k := min(int64(len(p)), LogHead-l.written)
		if _, err := l.f.Write(p[:k]); err != nil {
			return 0, err
		}
		l.written += k
		p = p[k:]
	}
	for len(p) > 0 {
		if l.ring == nil {
			l.ring = make([]byte, LogTail)
		}
		k := copy(l.ring[l.pos:], p)
		l.pos += k
		p = p[k:]
		if l.pos == len(l.ring) {
			l.pos, l.full = 0, true
		}
	}
	return n, nil
}

// Close writes the tail and closes the file.
func (l *capLog) Close() error {
	if l.ring != nil {
		tail := l.ring[:l.pos]
		if l.full {
			tail = append(append([]byte(nil), l.ring[l.pos:]...), l.ring[:l.pos]...)
			fmt.Fprintf(l.f, "\n[gpugate: %d bytes of output left out here; job.log keeps the first %d MiB and the last %d MiB of %d bytes]\n",
				l.total-l.written-int64(len(tail)), LogHead>>20, LogTail>>20, l.total)
		}
		l.f.Write(tail)
	}
	return l.f.Close()
}

// splitter cuts a byte stream into lines at \n and \r, keeping at most
// maxLine bytes of each.
type splitter struct {
	mu      sync.Mutex
	line    []byte
	dropped int // bytes of the current line beyond maxLine
	emit    func(line string, dropped int, cr bool)
}

func (s *splitter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexAny(p, "\r\n")
		piece := p
		if i >= 0 {
			piece = p[:i]
		}
		if room := maxLine - len(s.line); room >= len(piece) {
			s.line = append(s.line, piece...)
		} else {
			s.line = append(s.line, piece[:max(room, 0)]...)
			s.dropped += len(piece) - max(room, 0)
		}
		if i < 0 {
			break
		}
		s.emit(string(s.line), s.dropped, p[i] == '\r')
		s.line, s.dropped = s.line[:0], 0
		p = p[i+1:]
	}
	return n, nil
}

// flush emits an unterminated last line.
func (s *splitter) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.line) > 0 || s.dropped > 0 {
		s.emit(string(s.line), s.dropped, false)
		s.line, s.dropped = nil, 0
	}
}

// jobOutput is what gpugate makes of the job's output, line by line (the
// splitter's emit): the step lines it counts, the step times of step_log,
// and the lines it echoes (capped, echoCap), with the last few kept for
// an error's tail.
type jobOutput struct {
	job   Job
	res   *Result
	start time.Time
	echo  *echoCap

	mu    sync.Mutex
	tail  []string
	lines int // lines that are not chatter: a job that printed none is an error
	// unshown is the last \r-terminated line, when it was not echoed (a
	// progress bar is echoed once per progressEvery); a \n right after it
	// (\r\n, or a bar's last redraw) shows it.
	unshown      string
	lastProgress time.Time
}

// show echoes a line and keeps it for the tail.
func (o *jobOutput) show(line string) {
	o.tail = append(o.tail, line)
	if len(o.tail) > 5 {
		o.tail = o.tail[1:]
	}
	o.echo.line("[" + o.job.Name + "] " + line + "\n")
}

// emit takes one line of the job's output (the splitter's callback).
func (o *jobOutput) emit(line string, dropped int, cr bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	job, res := o.job, o.res
	if line == "" && dropped == 0 {
		if !cr && o.unshown != "" {
			o.show(o.unshown)
		}
		o.unshown = ""
		return
	}
	o.unshown = ""
	if job.Slurm != nil {
		line = unlabel(line) // srun --label's "TASK: "
	}
	if !chatter(line) {
		o.lines++
	}
	if m := stepLine.FindStringSubmatch(line); m != nil {
		n, _ := strconv.Atoi(m[1])
		res.Steps = max(res.Steps, n) // the furthest rank
		if n%10 == 0 {
			rank := ""
			if m[2] != "" {
				rank = " rank " + m[2] + ":"
			}
			o.echo.line(fmt.Sprintf("[%s]%s step %d, %.1fs\n", job.Name, rank, n, time.Since(o.start).Seconds()))
		}
		return
	}
	if job.StepLog != nil {
		if m := job.StepLog.FindStringSubmatch(line); len(m) > 1 {
			if v, err := strconv.ParseFloat(m[1], 64); err == nil {
				res.StepTimes = append(res.StepTimes, v)
			}
		}
	}
	shown := clipLine(line, dropped)
	if cr && time.Since(o.lastProgress) < progressEvery {
		o.unshown = shown
		return
	}
	if cr {
		o.lastProgress = time.Now()
	}
	o.show(shown)
}

// flush shows a progress line left unshown at the end of the output.
func (o *jobOutput) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.unshown != "" {
		o.show(o.unshown)
		o.unshown = ""
	}
}

// end closes the echo (saying what its cap left out, with the log's
// path) and returns the last lines shown.
func (o *jobOutput) end(log string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.echo.flush(o.job.Name, log)
	return o.tail
}
