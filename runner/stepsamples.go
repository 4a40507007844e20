package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gpugate/gpugate/internal/safefile"
	"github.com/gpugate/gpugate/trace"
)

// StepSample is the memory of a job's process at the end of one optimizer
// step, as the injected step hook (inject/common/gpugate_stephook.py)
// writes it to GPUGATE_STEP_SAMPLES, one JSON object a line.
type StepSample struct {
	// Step is the process's Nth optimizer step, from 1: the N of the
	// "gpugate-step N" log line.
	Step int `json:"step"`
	// TimeNS is the wall clock (time.time_ns) when the sample was taken.
	TimeNS int64 `json:"t_ns"`
	PID    int   `json:"pid"`
	// RSSBytes is the process's resident memory at the end of the step;
	// MaxRSSBytes its peak so far (getrusage ru_maxrss), nil when the
	// platform has no getrusage.
	RSSBytes    int64  `json:"rss_bytes"`
	MaxRSSBytes *int64 `json:"maxrss_bytes,omitempty"`
	// On CUDA (once the job initialized it): the device, and the peaks of
	// PyTorch's caching allocator during the step
	// (torch.cuda.max_memory_allocated / max_memory_reserved, reset after
	// each step). Nil on a CPU job: absent, not zero.
	CUDADevice            *int   `json:"cuda_device,omitempty"`
	CUDAMaxAllocatedBytes *int64 `json:"cuda_max_allocated_bytes,omitempty"`
	CUDAMaxReservedBytes  *int64 `json:"cuda_max_reserved_bytes,omitempty"`
	// CUDAAllocatedBytes is what was still allocated at the end of the
	// step: the steady growth of a leak. Nil from a hook older than this
	// field or on a CPU job.
	CUDAAllocatedBytes *int64 `json:"cuda_allocated_bytes,omitempty"`
}

// StepSamples are the samples of one file, in file order.
type StepSamples struct {
	Samples []StepSample
	// Warnings: a last line cut short (the job was killed while the hook
	// wrote it) is dropped and said here.
	Warnings []string
}

// Limits of a step samples file.
const (
	MaxStepSampleLine = 4096
	MaxStepSamples    = 1_000_000
)

// ParseStepSamples reads the hook's JSON lines. name is used in errors.
// Samples must be complete (step ≥ 1, pid > 0, rss_bytes ≥ 0, byte counts
// not negative) and each process's steps must increase; anything else is
// an error that names the line. Unknown fields are ignored, so that an
// older gpugate reads a newer hook's lines.
func ParseStepSamples(r io.Reader, name string) (*StepSamples, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	res := &StepSamples{}
	last := map[int]int{} // pid → last step
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) || len(line) > MaxStepSampleLine {
			return nil, &trace.SyntaxError{File: name, Pos: fmt.Sprintf("line %d", n), Msg: fmt.Sprintf("line longer than %d bytes: not a step sample", MaxStepSampleLine)}
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("read step samples %s: %w", name, err)
		}
		atEOF := err == io.EOF
		text := bytes.TrimSpace(line)
		if len(text) > 0 {
			var raw rawSample
			if derr := json.Unmarshal(text, &raw); derr != nil {
				if atEOF {
					// No newline after it: the hook was cut off mid-write.
					res.Warnings = append(res.Warnings, fmt.Sprintf("%s: line %d cut short (the job ended while it was written): dropped", name, n))
					break
				}
				return nil, &trace.SyntaxError{File: name, Pos: fmt.Sprintf("line %d", n), Msg: "not a step sample: " + safefile.JSONWhy(derr)}
			}
			s, msg := raw.sample()
			if msg != "" {
				return nil, &trace.SyntaxError{File: name, Pos: fmt.Sprintf("line %d", n), Msg: msg}
			}
			if prev, ok := last[s.PID]; ok && s.Step <= prev {
				return nil, &trace.SyntaxError{File: name, Pos: fmt.Sprintf("line %d", n), Msg: fmt.Sprintf("step %d of pid %d after its step %d: samples of two runs in one file?", s.Step, s.PID, prev)}
			}
			last[s.PID] = s.Step
			if len(res.Samples) == MaxStepSamples {
				return nil, &trace.SyntaxError{File: name, Pos: fmt.Sprintf("line %d", n), Msg: fmt.Sprintf("more than %d step samples", MaxStepSamples)}
			}
			res.Samples = append(res.Samples, s)
		}
		if atEOF {
			break
		}
	}
	return res, nil
}

// rawSample is a line as decoded, with the required fields as pointers
// to tell absent from zero.
type rawSample struct {
	Step                  *int   `json:"step"`
	TimeNS                *int64 `json:"t_ns"`
	PID                   *int   `json:"pid"`
	RSSBytes              *int64 `json:"rss_bytes"`
	MaxRSSBytes           *int64 `json:"maxrss_bytes"`
	CUDADevice            *int   `json:"cuda_device"`
	CUDAMaxAllocatedBytes *int64 `json:"cuda_max_allocated_bytes"`
	CUDAMaxReservedBytes  *int64 `json:"cuda_max_reserved_bytes"`
	CUDAAllocatedBytes    *int64 `json:"cuda_allocated_bytes"`
}

// sample checks a decoded line and returns it, or what is wrong with it.
func (r *rawSample) sample() (StepSample, string) {
	for _, f := range []struct {
		name string
		ok   bool
	}{{"step", r.Step != nil}, {"t_ns", r.TimeNS != nil}, {"pid", r.PID != nil}, {"rss_bytes", r.RSSBytes != nil}} {
		if !f.ok {
			return StepSample{}, fmt.Sprintf("step sample without %q", f.name)
		}
	}
	s := StepSample{Step: *r.Step, TimeNS: *r.TimeNS, PID: *r.PID, RSSBytes: *r.RSSBytes, MaxRSSBytes: r.MaxRSSBytes,
		CUDADevice: r.CUDADevice, CUDAMaxAllocatedBytes: r.CUDAMaxAllocatedBytes, CUDAMaxReservedBytes: r.CUDAMaxReservedBytes,
		CUDAAllocatedBytes: r.CUDAAllocatedBytes}
	switch {
	case s.Step < 1:
		return s, fmt.Sprintf("step %d: steps count from 1", s.Step)
	case s.PID <= 0:
		return s, fmt.Sprintf("pid %d", s.PID)
	case s.RSSBytes < 0:
		return s, fmt.Sprintf("rss_bytes %d", s.RSSBytes)
	case negative(s.MaxRSSBytes), negative(s.CUDAMaxAllocatedBytes), negative(s.CUDAMaxReservedBytes), negative(s.CUDAAllocatedBytes):
		return s, "negative byte count"
	case (s.CUDADevice == nil) != (s.CUDAMaxAllocatedBytes == nil) || (s.CUDADevice == nil) != (s.CUDAMaxReservedBytes == nil):
		return s, "cuda_device, cuda_max_allocated_bytes and cuda_max_reserved_bytes come together"
	case s.CUDAAllocatedBytes != nil && s.CUDADevice == nil:
		return s, "cuda_allocated_bytes without cuda_device"
	case s.CUDADevice != nil && *s.CUDADevice < 0:
		return s, fmt.Sprintf("cuda_device %d", *s.CUDADevice)
	}
	return s, ""
}

func negative(p *int64) bool { return p != nil && *p < 0 }

// MaxStepSamplesFile is the limit of a step samples file: a file the job
// made larger is refused, not read.
const MaxStepSamplesFile = 1 << 30

// ReadStepSamples reads a step samples file, which the job's processes
// wrote: through dir (the run's folder, opened before the job ran) when
// not nil, else by its path, never through a link, never waiting on a
// FIFO, a regular file of at most MaxStepSamplesFile bytes
// (internal/safefile).
func ReadStepSamples(dir *safefile.Dir, path string) (*StepSamples, error) {
	var f *os.File
	var err error
	if dir != nil {
		f, err = dir.Open(path, MaxStepSamplesFile)
	} else {
		f, err = safefile.Open(path, MaxStepSamplesFile)
	}
	if err != nil {
		return nil, fmt.Errorf("read step samples %w", err)
	}
	defer f.Close()
	return ParseStepSamples(f, path)
}
