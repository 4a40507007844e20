package gate

import (
	"fmt"

	"github.com/gpugate/gpugate/analysis"
)

// CheckSide refuses runs that cannot be compared, before any verdict: no
// runs, a run without profiles, a profile without steps, a step that ends
// before it starts or has a negative time or count. Such input is trouble
// (exit 2), not something more runs could settle: compared, an empty side
// would read as inconclusive (exit 3), which an Action configured with
// on-inconclusive: pass turns green, and an inverted step as a negative
// step time. side names the side in the error ("baseline", "candidate").
func CheckSide(side string, runs []Run) error {
	if len(runs) == 0 {
		return fmt.Errorf("%s: no runs to compare", side)
	}
	for i, run := range runs {
		if err := CheckRun(run); err != nil {
			if len(runs) == 1 {
				return fmt.Errorf("%s: %w", side, err)
			}
			return fmt.Errorf("%s run %d: %w", side, i+1, err)
		}
	}
	return nil
}

// CheckRun is CheckSide for one run.
func CheckRun(run Run) error {
	if len(run) == 0 {
		return fmt.Errorf("no profiles: nothing to compare (an empty analysis document, or a job that wrote no trace)")
	}
	for _, r := range run {
		if len(r.Steps) == 0 {
			return fmt.Errorf("%q: no steps: nothing to compare (the job made no step the analysis could find; too few steps for warmup_steps?)", r.Profile.Path)
		}
		for i := range r.Steps {
			if err := checkStep(&r.Steps[i]); err != nil {
				return fmt.Errorf("%q: step %d (%q): %w", r.Profile.Path, i+1, r.Steps[i].Name, err)
			}
		}
	}
	return nil
}

func checkStep(s *analysis.Step) error {
	switch {
	case s.Start < 0 || s.End < 0 || s.HostStart < 0 || s.HostEnd < 0:
		return fmt.Errorf("negative time (start %d ns, end %d ns, host start %d ns, host end %d ns)", s.Start, s.End, s.HostStart, s.HostEnd)
	case s.End < s.Start:
		return fmt.Errorf("ends before it starts (start %d ns, end %d ns)", s.Start, s.End)
	case s.HostEnd < s.HostStart:
		return fmt.Errorf("its host range ends before it starts (host start %d ns, host end %d ns)", s.HostStart, s.HostEnd)
	}
	for _, v := range []struct {
		name string
		v    int64
	}{
		{"kernels", int64(s.Kernels)}, {"gpu_busy", s.GPUBusy}, {"cpu_wait", s.CPUWait}, {"data_wait", s.DataWait},
		{"sync_calls", int64(s.SyncCalls)}, {"sync_time", s.SyncTime}, {"comm_time", s.CommTime}, {"exposed_comm", s.ExposedComm},
		{"exposed_copy", s.ExposedCopy}, {"launch_overhead", s.LaunchOverhead},
	} {
		if v.v < 0 {
			return fmt.Errorf("negative %s (%d)", v.name, v.v)
		}
	}
	return nil
}
