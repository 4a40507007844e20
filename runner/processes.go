package runner

import "github.com/gpugate/gpugate/internal/safefile"

// ReadProcesses reads what the training processes of a job reported
// about themselves (job-{rank}.json) in dir, a gpugate run's folder, by
// rank: gpugate baseline record reads each trace's node and rank from
// them. The files are the job's, and read as readProcesses reads them
// (opened in the folder, regular files only, no symlinks, 1 MiB at most
// each).
func ReadProcesses(dir string) ([]Process, error) {
	d, err := safefile.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return readProcesses(d)
}
