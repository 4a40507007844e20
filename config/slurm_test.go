package config

import (
	"strings"
	"testing"
	"time"
)

func TestSlurmDefaults(t *testing.T) {
	c, err := Parse([]byte(`version: 1
workloads:
  - name: ddp
    command: [python3, train.py]
    timeout: 4m
    slurm: {nodes: 2, gpus_per_node: 8, partition: gpu-a100, args: [--account=ml], shared_dir: /scratch/gg}
`), "perf.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w := c.Workloads[0]
	sl := w.Slurm
	if sl == nil || sl.Nodes != 2 || sl.NtasksPerNode != 1 || sl.GPUsPerNode != 8 || sl.Partition != "gpu-a100" ||
		strings.Join(sl.Args, " ") != "--account=ml" || sl.SharedDir != "/scratch/gg" {
		t.Fatalf("slurm = %+v", sl)
	}
	// time: the timeout plus a minute; queue_timeout: 10m; profiler auto:
	// torch (the login node's GPU says nothing of the nodes').
	if time.Duration(sl.Time) != 5*time.Minute || time.Duration(sl.QueueTimeout) != 10*time.Minute || w.Profiler != "torch" {
		t.Errorf("time %s, queue_timeout %s, profiler %s; want 5m, 10m, torch", time.Duration(sl.Time), time.Duration(sl.QueueTimeout), w.Profiler)
	}
	if c.Workloads[0].Slurm.Nodes*c.Workloads[0].Slurm.NtasksPerNode != 2 {
		t.Error("tasks")
	}
}

func TestSlurmErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		// Strict decoding: an unknown key, at its line and column.
		{"    slurm: {nodes: 2, ntasks: 4}\n", "perf.yaml:5:23: field ntasks not found"},
		{"    slurm:\n      nodes: 0\n", "perf.yaml:6:7: workload \"w\": slurm: nodes must be at least 1, not 0"},
		{"    slurm:\n      ntasks_per_node: -1\n", "perf.yaml:6:7: workload \"w\": slurm: ntasks_per_node must be at least 1"},
		{"    slurm:\n      nodes: 2000\n", "slurm: nodes × ntasks_per_node is 2000 tasks, more than 1024"},
		{"    slurm:\n      partition: \"a b\"\n", "perf.yaml:6:7: workload \"w\": slurm: partition \"a b\": want a Slurm partition name"},
		{"    slurm:\n      time: 1m\n", "perf.yaml:6:7: workload \"w\": slurm: time 1m0s is shorter than the workload's timeout 2m0s"},
		{"    slurm:\n      queue_timeout: 0s\n", "slurm: queue_timeout must be above 0s"},
		{"    slurm:\n      args: [train.py]\n", "slurm: args: \"train.py\" is not an option"},
		{"    slurm:\n      step_args: [\"--mpi=pmix\\n\"]\n", "slurm: step_args: \"--mpi=pmix\\n\" holds a control character"},
		{"    slurm:\n      shared_dir: /a,b\n", "slurm: shared_dir \"/a,b\": a folder whose path has no comma"},
		{"    slurm: {time: soon}\n", "perf.yaml:5:5: \"soon\" is not a duration"},
		{"    slurm: {nodes: 2}\n    deep_dive: {kernels: 1}\n", "perf.yaml:5:5: workload \"w\": slurm: deep_dive runs Nsight Compute on gpugate's own machine"},
		{"    slurm: {nodes: 2}\n    profiler: none\n    step_log: 'x=([0-9.]+)'\n", "slurm: profiler none (an unprofiled timing pass) does not run under Slurm"},
	} {
		y := "version: 1\nworkloads:\n  - name: w\n    command: [python3, t.py]\n" + tc.yaml + "    timeout: 2m\n"
		if strings.Contains(tc.yaml, "timeout") {
			y = "version: 1\nworkloads:\n  - name: w\n    command: [python3, t.py]\n    timeout: 2m\n" + tc.yaml
		}
		_, err := Parse([]byte(y), "perf.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
