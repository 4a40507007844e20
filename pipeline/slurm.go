package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/runner"
)

// slurmJob is the workload's slurm: block for the runner; nil without one.
// Inside an allocation (SLURM_JOB_ID set: gpugate itself runs in salloc or
// a batch script) the job step runs in it, and gpugate requests none.
func (p *Plan) slurmJob() *runner.Slurm {
	sl := p.o.Workload.Slurm
	if sl == nil {
		return nil
	}
	shared := sl.SharedDir
	if shared != "" && !filepath.IsAbs(shared) {
		shared = filepath.Join(filepath.Dir(p.o.Config.File), shared)
	}
	return &runner.Slurm{
		Nodes: sl.Nodes, TasksPerNode: sl.NtasksPerNode, GPUsPerNode: sl.GPUsPerNode, Partition: sl.Partition,
		Time: time.Duration(sl.Time), Args: sl.Args, StepArgs: sl.StepArgs, SharedDir: shared,
		QueueTimeout: time.Duration(sl.QueueTimeout), JobID: os.Getenv("SLURM_JOB_ID"),
	}
}

// fromSlurm puts the nodes the job ran on into the fingerprint (their
// number and each one's GPU model, so that a 2-node baseline never gates
// a 1-node run) in place of gpugate's own machine's GPU and CPU (a login
// node's), and returns the job's entry of the analysis document.
func (p *Plan) fromSlurm(res *runner.Result) (*report.SlurmJob, error) {
	info := res.Slurm
	if info == nil {
		return nil, nil
	}
	if len(info.Nodes) == 0 {
		return nil, fmt.Errorf("workload %s: the Slurm job reported no nodes", p.name)
	}
	n0 := info.Nodes[0]
	p.FP.Nodes, p.FP.NodeGPUs = len(info.Nodes), info.NodeGPUs()
	p.FP.GPU, p.FP.Driver, p.FP.CPU, p.FP.CPUs = n0.GPU, n0.Driver, n0.CPU, n0.CPUs
	p.FP.GPUCount = 0
	job := &report.SlurmJob{JobID: info.JobID, QueueWaitMs: float64(info.QueueWait) / 1e6, RunMs: float64(res.Duration) / 1e6}
	for _, n := range info.Nodes {
		p.FP.GPUCount += n.GPUCount
		job.Nodes = append(job.Nodes, n.Name)
	}
	fmt.Fprintf(p.o.Log, "gpugate: slurm job %s: %.1fs in the queue, %.1fs running, on %d node(s) (%s)\n", escape.Terminal(info.JobID),
		info.QueueWait.Seconds(), res.Duration.Seconds(), len(info.Nodes), escape.Terminal(p.FP.NodeGPUs))
	return job, nil
}

// slurmNode is the node a task reported (its SLURMD_NODENAME, written by
// the job's own process, so anyone's) when it is one the probe step found,
// else "".
func slurmNode(res *runner.Result, node string) string {
	if res.Slurm == nil {
		return ""
	}
	for _, n := range res.Slurm.Nodes {
		if n.Name == node {
			return node
		}
	}
	return ""
}
