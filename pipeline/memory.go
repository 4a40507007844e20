package pipeline

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/internal/safefile"
	"github.com/gpugate/gpugate/runner"
	"github.com/gpugate/gpugate/trace"
)

// The step hook's memory samples (runner.StepSample) joined to the
// trace's steps.
//
// Step numbers: torch.profiler names the step that holds the job's Nth
// optimizer step ProfilerStep#(N-1) (it opens ProfilerStep#0 at start and
// the next one at every step()), and gpugate's NVTX injection numbers its
// ranges the same way; the hook samples at the end of optimizer step N,
// before the profiler's step boundary, so sample N belongs to
// ProfilerStep#(N-1). Steps named otherwise (a custom step_pattern) are
// not joined.
//
// Processes: a sample file is per rank (steps-RANK.jsonl) and its lines
// carry the pid. An nsys profile knows its process id and takes that pid's
// samples; a Kineto trace-RANK.json takes steps-RANK.jsonl, when that file
// holds one process.

var profilerStep = regexp.MustCompile(`^ProfilerStep#(\d+)$`)

var rankFile = regexp.MustCompile(`-(\d+)\.(?:json(?:\.gz)?|jsonl)$`)

// joinStepSamples gives each result the step hook's samples of its
// process; it returns warnings for samples that could not be joined.
//
// The files are the job's, read through dir (runner.ReadStepSamples): a
// file that is not a regular file (a link, a FIFO) or is over its limit
// was planted, and is an error, not a warning.
func joinStepSamples(results []*analysis.Result, dir *safefile.Dir, files []string) ([]string, error) {
	if len(files) == 0 {
		return nil, nil
	}
	var warnings []string
	byPID := map[int]map[int]runner.StepSample{} // pid → step → sample
	byRank := map[string][]int{}                 // rank (from the file name) → pids
	for _, f := range files {
		ss, err := runner.ReadStepSamples(dir, f)
		if errors.Is(err, safefile.ErrNotRegular) || errors.Is(err, safefile.ErrTooLarge) {
			return nil, fmt.Errorf("step memory samples refused: %w", err)
		}
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("step memory samples not used: %v", err))
			continue
		}
		warnings = append(warnings, ss.Warnings...)
		rank := ""
		if m := rankFile.FindStringSubmatch(filepath.Base(f)); m != nil {
			rank = m[1]
		}
		seen := map[int]bool{}
		for _, s := range ss.Samples {
			if byPID[s.PID] == nil {
				byPID[s.PID] = map[int]runner.StepSample{}
			}
			byPID[s.PID][s.Step] = s
			if !seen[s.PID] {
				seen[s.PID] = true
				byRank[rank] = append(byRank[rank], s.PID)
			}
		}
	}
	for _, r := range results {
		p := r.Profile
		pid := 0
		switch {
		case p.Format == trace.FormatNsys && p.Process != 0:
			pid = p.Process
		default:
			rank := ""
			if m := rankFile.FindStringSubmatch(filepath.Base(p.Path)); m != nil {
				rank = m[1]
			}
			if pids := byRank[rank]; len(pids) == 1 {
				pid = pids[0]
			} else if len(pids) > 1 {
				warnings = append(warnings, fmt.Sprintf("%s: step memory samples of %d processes for one trace: not joined", filepath.Base(p.Path), len(pids)))
				continue
			}
		}
		samples := byPID[pid]
		if len(samples) == 0 {
			continue
		}
		hs := make([]*analysis.HookSample, len(r.Steps))
		for i, st := range r.Steps {
			m := profilerStep.FindStringSubmatch(st.Name)
			if m == nil {
				continue
			}
			k, err := strconv.Atoi(m[1])
			if err != nil {
				continue
			}
			s, ok := samples[k+1]
			if !ok {
				continue
			}
			h := &analysis.HookSample{RSS: s.RSSBytes, MaxRSS: s.MaxRSSBytes, CUDADevice: s.CUDADevice,
				CUDAMaxAllocated: s.CUDAMaxAllocatedBytes, CUDAMaxReserved: s.CUDAMaxReservedBytes}
			if prev, ok := samples[k]; ok {
				h.PrevMaxRSS = prev.MaxRSSBytes
			}
			hs[i] = h
		}
		if n := r.SetHookMemory(hs); n > 0 && n < len(r.Steps) {
			warnings = append(warnings, fmt.Sprintf("%s: step memory samples for %d of %d steps: memory metrics from them left out", filepath.Base(p.Path), n, len(r.Steps)))
		}
	}
	return warnings, nil
}
