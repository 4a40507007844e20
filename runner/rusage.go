package runner

import (
	"os"
	"syscall"
)

// The job's peak resident memory, from the kernel's resource accounting:
// wait4's rusage of the job's first process covers it and every
// descendant it waited for (ru_maxrss is the largest of them, not a sum);
// descendants that outlived their parent are re-parented to gpugate (the
// subreaper, reap_linux.go) and show in gpugate's RUSAGE_CHILDREN, whose
// maximum counts only when it rose during this run (it spans every child
// gpugate ever waited for).

// childrenMaxRSS is gpugate's RUSAGE_CHILDREN ru_maxrss in bytes, 0 when
// unknown.
func childrenMaxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return int64(ru.Maxrss) * 1024 // KiB on Linux
}

// jobMaxRSS is the largest resident set of any one process of the job, in
// bytes; 0 when unknown.
func jobMaxRSS(ps *os.ProcessState, childrenBefore int64) int64 {
	var peak int64
	if ps != nil {
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			peak = int64(ru.Maxrss) * 1024
		}
	}
	if after := childrenMaxRSS(); after > childrenBefore {
		peak = max(peak, after)
	}
	return peak
}
