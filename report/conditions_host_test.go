package report

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gpugate/gpugate/runcond"
)

// A run's host line says what the job's own threads waited for a CPU
// (schedstat), and a Slurm run has a line per node, its name escaped with
// the rest of the line.
func TestHostLinesJobWaitAndNodes(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	one := &runcond.Conditions{Host: &runcond.Host{WallSec: 4, CPUs: 2, OtherCPU: f(1.8), CPUPressure: f(0.95), JobCPUSec: f(1.25), JobWaitSec: f(2.5), JobThreads: 3}}
	slurm := &runcond.Conditions{HostNodes: []*runcond.Host{
		{Node: "n1", WallSec: 3, CPUs: 2, OtherCPU: f(0.1), CPUPressure: f(0.05), JobCPUSec: f(0.5), JobWaitSec: f(0)},
		{Node: "n2`x", NotSampled: "the node's sampler step took fewer than two readings"},
	}}
	got := hostLines([]*runcond.Conditions{one, slurm}, func(i int) string { return fmt.Sprintf("run %d", i+1) }, func(s string) string { return "<" + s + ">" })
	want := []string{
		"<run 1: host: other processes used 1.8 of 2 CPUs, CPU pressure 95% (over 4.0s); the job's threads ran 1.2s on a CPU and waited 2.5s for one>",
		"<run 2: node n1: host: other processes used 0.1 of 2 CPUs, CPU pressure 5% (over 3.0s); the job's threads ran 0.5s on a CPU and waited 0.0s for one>",
		"<run 2: node n2`x: host: not sampled: the node's sampler step took fewer than two readings>",
	}
	if !slices.Equal(got, want) {
		t.Errorf("hostLines =\n%q\nwant\n%q", got, want)
	}
}
