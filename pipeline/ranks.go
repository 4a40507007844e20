package pipeline

import (
	"fmt"
	"path/filepath"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/runner"
)

// fromJob applies what the job's training processes reported from inside
// (runner.Result.Processes) to the plan and the run: the fingerprint's
// versions come from the process that trained, whatever the command line
// (torchrun, a shell script, uv run), and a trace whose format does not
// carry its rank (torch 1.13's legacy autograd trace) gets the rank and
// world size of the process that wrote it.
func (p *Plan) fromJob(res *runner.Result, results []*analysis.Result) error {
	byTrace := map[string]runner.Process{}
	for _, pr := range res.Processes {
		if pr.Trace != "" {
			byTrace[filepath.Base(pr.Trace)] = pr
		}
	}
	for _, r := range results {
		pr, ok := byTrace[filepath.Base(r.Profile.Path)]
		if !ok || pr.Rank == nil {
			continue
		}
		if r.Profile.Rank < 0 {
			r.Profile.Rank = *pr.Rank
		}
		if r.Profile.WorldSize == 0 {
			r.Profile.WorldSize = pr.WorldSize
		}
		r.Profile.Node = slurmNode(res, pr.Node) // slurm.go
	}
	src, err := p.FP.FromJob(res.Processes)
	if err != nil {
		return fmt.Errorf("workload %s: %w", p.name, err)
	}
	if p.fpLogged {
		return nil
	}
	p.fpLogged = true
	if src == "" {
		src = p.fpFallback
	}
	fmt.Fprintf(p.o.Log, "gpugate: fingerprint versions: %s\n", escape.Terminal(src))
	return nil
}
