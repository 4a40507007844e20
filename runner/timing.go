package runner

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gpugate/gpugate/internal/safefile"
)

// timingName is the file each training process of a timing run writes
// (runner/inject/timing/gpugate_timing.py), "{rank}" replaced by its rank.
const timingName = "timing-{rank}.json"

// Clocks a timing run's steps are timed by.
const (
	ClockCUDAEvents = "cuda-events" // torch.cuda.Event at each step boundary
	ClockHost       = "host"        // time.perf_counter_ns at each boundary
	ClockStepLog    = "step_log"    // the job's own log (perf.yaml step_log)
)

// RankTiming is one rank's timed steps in a timing run.
type RankTiming struct {
	Rank      int       `json:"rank"`
	PID       int       `json:"pid"`
	Clock     string    `json:"clock"`
	FirstStep int       `json:"first_step"`
	Complete  bool      `json:"complete"`
	StepMs    []float64 `json:"step_ms"`
	HostMs    []float64 `json:"host_step_ms"`
	// WaitMs and CPUMs are, per timed step, how long the rank's threads
	// (its process and every process below it) waited in a CPU run queue
	// and ran on a CPU (schedstat, gpugate_sched.py); nil where the kernel
	// keeps no schedstat, else as long as StepMs.
	WaitMs []float64 `json:"wait_ms,omitempty"`
	CPUMs  []float64 `json:"cpu_ms,omitempty"`
}

// Limits of a timing file: a job that writes more is refused, not read.
const (
	maxTimingFile  = 8 << 20
	maxTimingSteps = 100_000
	maxStepMs      = 1e8 // 27 hours
)

// readTimings reads the timing-*.json files in out, by rank. A file that
// cannot be read or holds an impossible value (a negative, non-finite or
// absurd step time, two files of one rank) is an error: timing files are
// written by the job's processes, which are untrusted code.
func readTimings(dir *safefile.Dir) ([]RankTiming, error) {
	files, err := dir.Glob("timing-*.json")
	if err != nil {
		return nil, err
	}
	var ts []RankTiming
	seen := map[int]bool{}
	for _, f := range files {
		b, err := dir.ReadFile(f, maxTimingFile)
		if err != nil {
			return nil, err
		}
		var t RankTiming
		if err := json.Unmarshal(b, &t); err != nil {
			return nil, fmt.Errorf("read %s: %s", filepath.Base(f), safefile.JSONWhy(err))
		}
		if err := t.check(); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(f), err)
		}
		if seen[t.Rank] {
			return nil, fmt.Errorf("%s: rank %d timed twice", filepath.Base(f), t.Rank)
		}
		seen[t.Rank] = true
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Rank < ts[j].Rank })
	return ts, nil
}

func (t RankTiming) check() error {
	switch {
	case t.Rank < 0 || t.Rank > 1<<20:
		return fmt.Errorf("rank %d out of range", t.Rank)
	case t.Clock != ClockCUDAEvents && t.Clock != ClockHost:
		return fmt.Errorf("unknown clock (want %s or %s)", ClockCUDAEvents, ClockHost)
	case len(t.StepMs) == 0:
		return fmt.Errorf("no step times")
	case len(t.StepMs) > maxTimingSteps || len(t.HostMs) > maxTimingSteps:
		return fmt.Errorf("more than %d steps", maxTimingSteps)
	case t.WaitMs != nil && len(t.WaitMs) != len(t.StepMs), t.CPUMs != nil && len(t.CPUMs) != len(t.StepMs):
		return fmt.Errorf("%d steps but %d waits and %d CPU times", len(t.StepMs), len(t.WaitMs), len(t.CPUMs))
	}
	for _, xs := range [][]float64{t.StepMs, t.HostMs, t.WaitMs, t.CPUMs} {
		for i, x := range xs {
			if math.IsNaN(x) || x < 0 || x > maxStepMs {
				return fmt.Errorf("step %d: time %v ms is not a step time (0 to %.0g ms)", i+1, x, maxStepMs)
			}
		}
	}
	return nil
}

// untimedRanks says which ranks that claimed a rank in the job (its
// job-*.json) wrote no step times; "" when every one did.
func untimedRanks(ps []Process, ts []RankTiming) string {
	have := map[int]bool{}
	for _, t := range ts {
		have[t.Rank] = true
	}
	var miss []string
	for _, p := range ps {
		if r := p.RankOr(0); !have[r] {
			miss = append(miss, fmt.Sprint(r))
		}
	}
	if len(miss) == 0 {
		return ""
	}
	return fmt.Sprintf("timed the steps of %d rank(s) but not of rank(s) %s, which trained (a rank that ended before its last timed step, or whose timing failed: see its log lines)", len(ts), strings.Join(miss, ", "))
}
