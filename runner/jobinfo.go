package runner

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gpugate/gpugate/internal/safefile"
)

// jobInfoName is the file each training process of a job writes at its
// first optimizer step (runner/inject/common/gpugate_job.py), "{rank}"
// replaced by its rank: its claim on the rank, and the versions it runs on.
const jobInfoName = "job-{rank}.json"

// Process is what one training process of the job reported about itself
// from inside (gpugate_job.py): the process that called optimizer.step(),
// whatever the command line that started it.
type Process struct {
	// Rank is nil for a process without one (a single-process job).
	Rank      *int   `json:"rank"`
	WorldSize int    `json:"world_size"`
	PID       int    `json:"pid"`
	Trace     string `json:"trace"` // the trace it writes under torch.profiler
	Python    string `json:"python"`
	Torch     string `json:"torch"`
	CUDA      string `json:"cuda"`
	CUDNN     string `json:"cudnn"`
	NCCL      string `json:"nccl"`
	Error     string `json:"error"` // why the versions are missing
	// Node is the Slurm node the process ran on (SLURMD_NODENAME); empty
	// outside Slurm.
	Node string `json:"node,omitempty"`
}

// RankOr is the process's rank, or def without one.
func (p Process) RankOr(def int) int {
	if p.Rank == nil {
		return def
	}
	return *p.Rank
}

// maxJobInfo is the limit of a rank report (job-*.json).
const maxJobInfo = 1 << 20

// readProcesses reads the job-*.json files in out, by rank. A file that
// cannot be read is an error: a rank the job claimed but gpugate lost
// would be a silently missing rank.
func readProcesses(dir *safefile.Dir) ([]Process, error) {
	files, err := dir.Glob("job-*.json")
	if err != nil {
		return nil, err
	}
	var ps []Process
	for _, f := range files {
		b, err := dir.ReadFile(f, maxJobInfo)
		if err != nil {
			return nil, err
		}
		var p Process
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, fmt.Errorf("read %s: %s", f, safefile.JSONWhy(err))
		}
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].RankOr(0) < ps[j].RankOr(0) })
	return ps, nil
}

// missingRanks checks that every rank of the job's world wrote a trace:
// the world size the processes reported against the ranks that trained
// and the traces there are. It returns what is missing, for people, or "".
func missingRanks(ps []Process, traces []string) string {
	world := 0
	for _, p := range ps {
		world = max(world, p.WorldSize)
	}
	if world <= 1 {
		return ""
	}
	have := map[string]bool{}
	for _, t := range traces {
		have[filepath.Base(t)] = true
	}
	trained := map[int]bool{}
	for _, p := range ps {
		trained[p.RankOr(0)] = true
	}
	var missing []string
	for r := range world {
		switch {
		case !trained[r]:
			missing = append(missing, fmt.Sprintf("rank %d never called optimizer.step()", r))
		case !have[fmt.Sprintf("trace-%d.json", r)]:
			missing = append(missing, fmt.Sprintf("rank %d wrote no trace", r))
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("is a job of world size %d, but %s", world, strings.Join(missing, ", "))
}

// FromJob replaces the versions in the fingerprint with those the job's
// training processes reported from inside (rank 0's, the lowest rank's
// when there is none), and says where they came from. Ranks on different
// versions are an error: one run of one job cannot be fingerprinted.
func (f *Fingerprint) FromJob(ps []Process) (string, error) {
	var src *Process
	for i := range ps {
		if ps[i].Torch != "" {
			src = &ps[i]
			break
		}
	}
	if src == nil {
		return "", nil
	}
	for _, p := range ps {
		if p.Torch == "" {
			continue
		}
		if p.Python != src.Python || p.Torch != src.Torch || p.CUDA != src.CUDA || p.CUDNN != src.CUDNN || p.NCCL != src.NCCL {
			return "", fmt.Errorf("the job's ranks run on different versions: rank %d python %s torch %s cuda %s, rank %d python %s torch %s cuda %s",
				src.RankOr(0), src.Python, src.Torch, src.CUDA, p.RankOr(0), p.Python, p.Torch, p.CUDA)
		}
	}
	f.Python, f.Torch, f.CUDA, f.CUDNN, f.NCCL = src.Python, src.Torch, src.CUDA, src.CUDNN, src.NCCL
	who := "its training process"
	if src.Rank != nil {
		who = fmt.Sprintf("rank %d", *src.Rank)
	}
	return fmt.Sprintf("torch %s, CUDA %s, Python %s, from inside the job (%s, pid %d)", src.Torch, src.CUDA, src.Python, who, src.PID), nil
}
