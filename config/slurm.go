package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Slurm configures a workload that runs as the tasks of one Slurm job
// step (docs/slurm.md):
//
//	slurm: {nodes: 2, ntasks_per_node: 1, gpus_per_node: 1, partition: debug, time: 10m}
type Slurm struct {
	// Nodes is the number of nodes (srun -N), default 1.
	Nodes int `yaml:"nodes"`
	// NtasksPerNode is the number of tasks (ranks) per node, default 1.
	NtasksPerNode int `yaml:"ntasks_per_node"`
	// GPUsPerNode is requested as --gres=gpu:N; 0 (the default) requests
	// none.
	GPUsPerNode int `yaml:"gpus_per_node"`
	// Partition is salloc's --partition; empty: the cluster's default.
	Partition string `yaml:"partition"`
	// Time is the allocation's time limit (salloc --time, whole minutes,
	// rounded up); default the workload's timeout plus a minute.
	Time Duration `yaml:"time"`
	// Args are more salloc arguments (--account, --qos, --constraint);
	// unused inside an existing allocation.
	Args []string `yaml:"args"`
	// StepArgs are more arguments of the job step's srun (--mpi, --cpu-bind).
	StepArgs []string `yaml:"step_args"`
	// SharedDir is a folder every node and gpugate's machine see at the same
	// path, where the tasks write their traces; default the run's
	// artifacts folder. Relative paths are relative to the config's folder.
	SharedDir string `yaml:"shared_dir"`
	// QueueTimeout bounds the wait for the allocation, apart from the
	// run's timeout; default 10m.
	QueueTimeout Duration `yaml:"queue_timeout"`

	set       map[string]bool
	line, col int
}

// DefaultQueueTimeout bounds the wait for a Slurm allocation when
// slurm.queue_timeout is not set.
const DefaultQueueTimeout = 10 * time.Minute

// MaxSlurmTasks bounds nodes × ntasks_per_node: each task is one rank,
// one trace to read and analyze.
const MaxSlurmTasks = 1024

// validateSlurm checks and defaults workload i's slurm: block; errors are
// at the offending key (file:line:col), or at slurm: itself.
func (c *Config) validateSlurm(i int) Errors {
	w := &c.Workloads[i]
	sl := w.Slurm
	if sl == nil {
		return nil
	}
	var errs Errors
	at := func(key, format string, args ...any) {
		line, col := sl.line, sl.col
		if key != "" && sl.set[key] {
			if l, cl := c.Position("workloads", strconv.Itoa(i), "slurm", key); l > 0 {
				line, col = l, cl
			}
		}
		errs = append(errs, &Error{File: c.File, Line: line, Col: col,
			Msg: fmt.Sprintf("workload %q: slurm: ", w.Name) + fmt.Sprintf(format, args...)})
	}
	if !sl.set["nodes"] {
		sl.Nodes = 1
	}
	if !sl.set["ntasks_per_node"] {
		sl.NtasksPerNode = 1
	}
	if sl.Nodes < 1 {
		at("nodes", "nodes must be at least 1, not %d", sl.Nodes)
	}
	if sl.NtasksPerNode < 1 {
		at("ntasks_per_node", "ntasks_per_node must be at least 1, not %d", sl.NtasksPerNode)
	}
	if sl.Nodes >= 1 && sl.NtasksPerNode >= 1 && sl.Nodes*sl.NtasksPerNode > MaxSlurmTasks {
		at("nodes", "nodes × ntasks_per_node is %d tasks, more than %d", sl.Nodes*sl.NtasksPerNode, MaxSlurmTasks)
	}
	if sl.GPUsPerNode < 0 || sl.GPUsPerNode > 64 {
		at("gpus_per_node", "gpus_per_node must be 0 to 64, not %d", sl.GPUsPerNode)
	}
	if sl.Partition != "" && !slurmWord(sl.Partition) {
		at("partition", "partition %s: want a Slurm partition name (letters, digits, '.', '_', '-')", strconv.QuoteToASCII(sl.Partition))
	}
	if sl.set["time"] && sl.Time <= 0 {
		at("time", "time must be above 0s (leave it out for the workload's timeout plus a minute)")
	}
	if sl.Time == 0 {
		sl.Time = w.Timeout + Duration(time.Minute)
	}
	if sl.Time < w.Timeout {
		at("time", "time %s is shorter than the workload's timeout %s: Slurm would end the job before gpugate's timeout", time.Duration(sl.Time), time.Duration(w.Timeout))
	}
	if sl.set["queue_timeout"] && sl.QueueTimeout <= 0 {
		at("queue_timeout", "queue_timeout must be above 0s (leave it out for the default, %s)", DefaultQueueTimeout)
	}
	if sl.QueueTimeout == 0 {
		sl.QueueTimeout = Duration(DefaultQueueTimeout)
	}
	for _, a := range []struct {
		key  string
		args []string
	}{{"args", sl.Args}, {"step_args", sl.StepArgs}} {
		for _, x := range a.args {
			if !strings.HasPrefix(x, "-") {
				at(a.key, "%s: %s is not an option (each entry is one option such as --account=ml): a command here would replace gpugate's", a.key, strconv.QuoteToASCII(x))
			}
			if strings.ContainsFunc(x, unicode.IsControl) {
				at(a.key, "%s: %s holds a control character", a.key, strconv.QuoteToASCII(x))
			}
		}
	}
	if strings.ContainsFunc(sl.SharedDir, unicode.IsControl) || strings.Contains(sl.SharedDir, ",") {
		// A comma cannot pass through srun --export (it separates the
		// variables), and the folder is in several of them.
		at("shared_dir", "shared_dir %s: a folder whose path has no comma or control character", strconv.QuoteToASCII(sl.SharedDir))
	}
	switch w.Profiler {
	case "none":
		at("", "profiler none (an unprofiled timing pass) does not run under Slurm: use torch or nsys")
	case "auto":
		// gpugate's own machine is a login node: whether it has a GPU
		// says nothing of the nodes'.
		w.Profiler = "torch"
	}
	if w.StepLog != "" {
		at("", "step_log (an unprofiled timing pass) does not run under Slurm")
	}
	if w.DeepDive != nil {
		at("", "deep_dive runs Nsight Compute on gpugate's own machine, not under Slurm")
	}
	return errs
}

// slurmWord reports whether s is a plain Slurm name.
func slurmWord(s string) bool {
	for _, r := range s {
		if !(r < 128 && (isAlnum(byte(r)) || r == '.' || r == '_' || r == '-')) {
			return false
		}
	}
	return s != ""
}
