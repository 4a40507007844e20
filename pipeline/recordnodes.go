package pipeline

import (
	"fmt"
	"path/filepath"
	"unicode"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/runner"
)

// maxNodeName bounds a Slurm node name read from a job's files.
const maxNodeName = 255

// NodesFromJobFiles gives the traces of a gpugate run that baseline
// record stores (results) the Slurm node and rank their training process
// reported (runner.Process, job-{rank}.json beside the traces), as
// gpugate run gives them (fromJob): without them a recorded Slurm
// baseline had no nodes, and no node could be judged against it. A
// process file that cannot be read, or a node name that no Slurm node
// has (control characters, spaces, over 255 bytes), is a warning and the
// trace keeps no node; names are escaped wherever they are shown.
func NodesFromJobFiles(results []*analysis.Result) (warnings []string) {
	byDir := map[string][]runner.Process{}
	for _, r := range results {
		if r.Profile == nil || r.Profile.Path == "" {
			continue
		}
		dir := filepath.Dir(r.Profile.Path)
		ps, ok := byDir[dir]
		if !ok {
			var err error
			if ps, err = runner.ReadProcesses(dir); err != nil {
				warnings = append(warnings, fmt.Sprintf("%s: the job's process files cannot be read, its traces keep no node: %v", dir, err))
			}
			byDir[dir] = ps
		}
		for _, pr := range ps {
			if pr.Trace == "" || filepath.Base(pr.Trace) != filepath.Base(r.Profile.Path) || pr.Node == "" {
				continue
			}
			if !nodeName(pr.Node) {
				warnings = append(warnings, fmt.Sprintf("%s: node name %q is not a Slurm node's: left out", r.Profile.Path, pr.Node))
				continue
			}
			r.Profile.Node = pr.Node
			if r.Profile.Rank < 0 && pr.Rank != nil {
				r.Profile.Rank = *pr.Rank
			}
			if r.Profile.WorldSize == 0 {
				r.Profile.WorldSize = pr.WorldSize
			}
		}
	}
	return warnings
}

// nodeName reports whether s could be a Slurm node's name: printable,
// without spaces, at most maxNodeName bytes.
func nodeName(s string) bool {
	if len(s) == 0 || len(s) > maxNodeName {
		return false
	}
	for _, c := range s {
		if !unicode.IsPrint(c) || unicode.IsSpace(c) {
			return false
		}
	}
	return true
}
