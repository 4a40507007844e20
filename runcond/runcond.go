// Package runcond holds the run conditions of one job: what the machine
// was doing while the job ran (nvidia-smi's clocks, throttling and other
// compute processes). The runner samples them and the gate judges them;
// both import this package, so that the sampler need not know the judge.
package runcond

// Conditions are the run conditions of one job as nvidia-smi saw them while
// it ran (runner.SampleSMI measures them; gate judges them): clocks, temperature, power,
// throttle reasons and the other compute processes on the job's GPUs. They
// are the preconditions of a verdict: a run on a throttled or shared GPU
// says nothing about the code. Stored with the run as JSON.
type Conditions struct {
	// Sampled is false when nothing was measured; NotSampled then says
	// why ("no nvidia-smi"). Nothing is ever filled in for a run
	// that was not sampled.
	Sampled    bool   `json:"sampled"`
	NotSampled string `json:"not_sampled,omitempty"`
	// ReasonFields is the name family of the throttle reasons the
	// installed nvidia-smi knows: "clocks_event_reasons" (drivers from
	// 535 on) or "clocks_throttle_reasons" (older); empty when it knows
	// neither and no reason was sampled.
	ReasonFields string `json:"reason_fields,omitempty"`
	// IntervalMS is the sampling period.
	IntervalMS int64 `json:"interval_ms,omitempty"`
	// JobGPUsKnown says whether the job's processes were seen on a GPU
	// (nvidia-smi --query-compute-apps). When not, every GPU counts as the
	// job's.
	JobGPUsKnown bool            `json:"job_gpus_known"`
	GPUs         []GPUConditions `json:"gpus,omitempty"`
	// Warnings: fields this nvidia-smi does not know, lines it printed that
	// could not be read, samples dropped at the limit.
	Warnings []string `json:"warnings,omitempty"`
	// Host is what the host's kernel reported about its CPUs over the
	// run (pressure, steal, other processes, cgroup throttling); nil for
	// a run stored before gpugate sampled it. It is sampled whether or
	// not nvidia-smi is: Sampled speaks of the GPUs only.
	Host *Host `json:"host,omitempty"`
	// HostNodes are the host figures of each node of a Slurm job (Node
	// set), sampled on the node as nvidia-smi is; Host is then nil. A run
	// is disturbed when any node was busy.
	HostNodes []*Host `json:"host_nodes,omitempty"`
}

// GPUConditions summarizes one GPU's samples. Values nvidia-smi reported as
// unavailable ([N/A], [Not Supported]) are absent (nil), never zero.
type GPUConditions struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid,omitempty"`
	Name  string `json:"name,omitempty"`
	// Node is the Slurm node the GPU is on; empty outside Slurm.
	Node string `json:"node,omitempty"`
	// Samples is the number of samples of this GPU; Busy those taken while
	// it ran work (utilization.gpu > 0, or, without utilization, the
	// gpu_idle reason not active). Clocks and reason shares are over the
	// busy samples when there are any, so that the job's start-up (imports,
	// data loading) does not pass for low clocks.
	Samples int `json:"samples"`
	Busy    int `json:"busy_samples"`
	// SM clock over the busy samples, MHz; SMClockMaxMHz is the GPU's
	// maximum (clocks.max.sm), not the largest sample.
	SMClockMedianMHz  *float64 `json:"sm_clock_median_mhz,omitempty"`
	SMClockMinMHz     *float64 `json:"sm_clock_min_mhz,omitempty"`
	SMClockMaxMHz     *float64 `json:"sm_clock_max_mhz,omitempty"`
	MemClockMedianMHz *float64 `json:"mem_clock_median_mhz,omitempty"`
	TempMaxC          *float64 `json:"temp_max_c,omitempty"`
	PowerMedianW      *float64 `json:"power_median_w,omitempty"`
	UtilMedianPct     *float64 `json:"util_median_pct,omitempty"`
	// ReasonShare is, per throttle reason (hw_slowdown,
	// hw_thermal_slowdown, hw_power_brake_slowdown, sw_thermal_slowdown,
	// sw_power_cap), the share of samples (0..1) in which it was active;
	// a reason nvidia-smi never reported is absent.
	ReasonShare map[string]float64 `json:"reason_share,omitempty"`
	// JobSeen: one of the job's processes had a compute context on it.
	JobSeen bool `json:"job_seen"`
	// Others are compute processes on this GPU outside the job's process
	// tree; Unattributed are processes whose pid is not visible here (a
	// container with its own PID namespace): they cannot be told apart
	// from the job's and void nothing.
	Others       []ComputeProcess `json:"other_processes,omitempty"`
	Unattributed []ComputeProcess `json:"unattributed_processes,omitempty"`
}

// ComputeProcess is a process with a compute context on a GPU.
type ComputeProcess struct {
	PID  int    `json:"pid"`
	Name string `json:"name"`
	// UsedMiB is the largest GPU memory nvidia-smi reported for it; nil
	// when not available (Windows WDDM).
	UsedMiB *float64 `json:"used_mib,omitempty"`
	// Samples is how many samples saw it.
	Samples int `json:"samples"`
}

// Reason is a throttle reason gpugate samples: its key in
// GPUConditions.ReasonShare and the words it is reported in.
type Reason struct{ Key, Label string }

// Reasons are the throttle reasons gpugate samples, in report order.
var Reasons = []Reason{
	{"hw_slowdown", "HW slowdown"},
	{"hw_thermal_slowdown", "HW thermal slowdown"},
	{"hw_power_brake_slowdown", "HW power brake slowdown"},
	{"sw_thermal_slowdown", "SW thermal slowdown"},
	{"sw_power_cap", "SW power cap"},
}

// ThrottleReasons are the keys of GPUConditions.ReasonShare.
func ThrottleReasons() []string {
	keys := make([]string, len(Reasons))
	for i, r := range Reasons {
		keys[i] = r.Key
	}
	return keys
}

// Host is what the host's kernel says about the CPUs while the job ran:
// how long runnable tasks waited for a CPU, how much CPU the hypervisor
// took, how much other processes used, and how often the job's cgroup was
// throttled. Each is measured as the difference of the kernel's
// cumulative counters at the job's start and end, so it covers the whole
// run however short. A figure the host does not provide is nil, never
// zero.
type Host struct {
	// WallSec is the time between the two readings; CPUs the online CPUs.
	WallSec float64 `json:"wall_sec"`
	CPUs    int     `json:"cpus"`
	// CPUPressure is the share of the run (0..1) during which at least one
	// runnable task waited for a CPU (/proc/pressure/cpu "some"). The
	// job's own threads count too: a job with more busy threads than
	// CPUs raises it on a quiet host.
	CPUPressure *float64 `json:"cpu_pressure,omitempty"`
	// Steal is the share of the CPUs' time (0..1) the hypervisor gave to
	// other guests (/proc/stat steal).
	Steal *float64 `json:"steal,omitempty"`
	// OtherCPU is the CPU time of processes outside the job's process
	// tree and gpugate, in CPUs (1.5: one and a half CPUs busy on average
	// over the run): /proc/stat's busy time less what the job and gpugate
	// used (getrusage).
	OtherCPU *float64 `json:"other_cpu,omitempty"`
	// Throttled is the share of the cgroup's CPU quota periods (0..1) in
	// which it was throttled (cpu.stat nr_throttled / nr_periods); nil
	// without a CPU quota.
	Throttled *float64 `json:"cpu_throttled,omitempty"`
	// Cgroup is the cgroup whose cpu.stat was read.
	Cgroup string `json:"cgroup,omitempty"`
	// JobCPUSec and JobWaitSec are the CPU time of the job's threads and
	// the time they waited in a CPU run queue, seconds, summed over every
	// thread of every process of the job (schedstat, read every 200 ms,
	// each thread's last reading kept); JobThreads how many threads were
	// seen. On a busy host the wait is what other work took from the job
	// (docs/verdicts.md §5c). Nil where the kernel has no schedstat.
	JobCPUSec  *float64 `json:"job_cpu_sec,omitempty"`
	JobWaitSec *float64 `json:"job_wait_sec,omitempty"`
	JobThreads int      `json:"job_threads,omitempty"`
	// Node is the Slurm node the figures are of; empty outside Slurm.
	Node string `json:"node,omitempty"`
	// NotSampled says why nothing was measured (not Linux); empty when
	// something was.
	NotSampled string `json:"not_sampled,omitempty"`
}
