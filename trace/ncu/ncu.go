// Package ncu reads Nsight Compute results into one record per kernel
// launch: .ncu-rep reports through the installed ncu CLI (ncu --import
// --csv), and the CSV pages ncu exports (--page details, --page raw). It
// also compares two launches of a kernel in one line, and builds the ncu
// command lines of a deep-dive on the kernels that regressed.
//
// A report is not a timeline, so the package produces Launch records, not a
// trace.Profile. Values a report does not hold are nil (absent), never zero:
// a report collected with only some sections has no Duration or occupancy.
//
// Every string in a report (kernel names come from user code) is data: it
// is never interpreted, and no path is built from it.
package ncu

import (
	"slices"
	"strings"
)

// Report is one Nsight Compute report or CSV export.
type Report struct {
	Path string `json:"path"`
	// Source says what was read: "ncu-rep", "details-csv" or "raw-csv".
	Source string `json:"source"`
	// Writer is the Nsight Compute version that wrote the report, read
	// from the report itself; empty for CSV exports.
	Writer   string    `json:"writer,omitempty"`
	Launches []*Launch `json:"launches"`
	Warnings []string  `json:"warnings,omitempty"`
}

// Launch is one profiled kernel launch. Pointer fields are nil when the
// report does not hold the value (a section that was not collected).
type Launch struct {
	// ID is ncu's launch ID within the report.
	ID int `json:"id"`
	// Name is the kernel name as ncu prints it (demangled, with
	// parameters; cuBLAS names without a demangled form unchanged).
	Name      string `json:"name"`
	ProcessID int    `json:"process_id,omitempty"`
	Context   int    `json:"context,omitempty"`
	Stream    int    `json:"stream,omitempty"`
	Device    string `json:"device,omitempty"`

	// Grid and Block are the launch dimensions (raw page only).
	Grid  *Dim3 `json:"grid"`
	Block *Dim3 `json:"block"`
	// GridSize is the number of blocks, BlockSize the threads per block.
	GridSize           *int64 `json:"grid_size"`
	BlockSize          *int64 `json:"block_size"`
	RegistersPerThread *int64 `json:"registers_per_thread"`
	// SharedMemPerBlock is static plus dynamic shared memory, in bytes.
	SharedMemPerBlock *int64 `json:"shared_mem_per_block_bytes"`

	// Duration is gpu__time_duration.sum, in ns.
	Duration *float64 `json:"duration_ns"`
	// ElapsedCycles are the SM cycles the launch took.
	ElapsedCycles *float64 `json:"elapsed_cycles"`
	// SMFrequency and DRAMFrequency are in Hz (cycle/second).
	SMFrequency   *float64 `json:"sm_frequency_hz"`
	DRAMFrequency *float64 `json:"dram_frequency_hz"`
	// SMThroughput, MemoryThroughput and DRAMThroughput are percent of
	// peak ("Compute (SM) [%]" / "SM [%]", "Memory [%]", "DRAM Throughput"
	// / "SOL DRAM").
	SMThroughput     *float64 `json:"sm_throughput_pct"`
	MemoryThroughput *float64 `json:"memory_throughput_pct"`
	DRAMThroughput   *float64 `json:"dram_throughput_pct"`
	// AchievedOccupancy and TheoreticalOccupancy are percent of the SM's
	// warp slots.
	AchievedOccupancy    *float64 `json:"achieved_occupancy_pct"`
	TheoreticalOccupancy *float64 `json:"theoretical_occupancy_pct"`
	WavesPerSM           *float64 `json:"waves_per_sm"`
	// BlockLimits are the blocks per SM that each resource allows
	// (launch__occupancy_limit_*); the smallest sets theoretical occupancy.
	BlockLimits BlockLimits `json:"block_limits"`

	// Bound is what ncu's SOLBottleneck rule says limits the kernel:
	// "compute", "memory", "latency", "small-grid", "balanced"; empty
	// when the report has no such rule result.
	Bound string `json:"bound,omitempty"`
	// OccupancyLimiters are the resources ncu's Occupancy rule names as
	// limiting theoretical occupancy ("registers", "shared_mem", "warps",
	// "blocks"); empty when occupancy is not limited or not known.
	OccupancyLimiters []string `json:"occupancy_limiters"`
	// Rules are ncu's rule results, in report order.
	Rules []Rule `json:"rules"`
}

// Dim3 is a grid or block shape.
type Dim3 struct {
	X int64 `json:"x"`
	Y int64 `json:"y"`
	Z int64 `json:"z"`
}

// BlockLimits are blocks per SM allowed by each resource; nil when absent.
type BlockLimits struct {
	Registers *int64 `json:"registers"`
	SharedMem *int64 `json:"shared_mem"`
	Warps     *int64 `json:"warps"`
	Blocks    *int64 `json:"blocks"` // the SM's own block limit ("Block Limit SM")
}

// Rule is one message of an ncu rule ("guided analysis").
type Rule struct {
	Section string `json:"section"` // section identifier, e.g. "SpeedOfLight"
	Name    string `json:"name"`    // rule identifier, e.g. "SOLBottleneck"
	Type    string `json:"type"`    // "INF", "WRN", "ERR", "OPT"
	Message string `json:"message"`
}

// Limiter is a short phrase for what limits the launch, from ncu's rules:
// the occupancy limiters ("register-limited") and the bound
// ("memory-bound"), or "" when the report's rules say neither.
func (l *Launch) Limiter() string {
	var parts []string
	// Only the words this package knows are said: a Launch read back from
	// JSON (a stored run, a report of untrusted code) may hold anything.
	var occ []string
	for _, r := range l.OccupancyLimiters {
		if w, ok := limiterWords[r]; ok {
			occ = append(occ, w+"-limited")
		}
	}
	if len(occ) > 0 {
		parts = append(parts, strings.Join(occ, " and "))
	}
	switch l.Bound {
	case "small-grid":
		parts = append(parts, "grid too small to fill the GPU")
	case "balanced":
		parts = append(parts, "compute and memory balanced")
	case "compute", "memory", "latency":
		parts = append(parts, l.Bound+"-bound")
	}
	return strings.Join(parts, ", ")
}

var limiterWords = map[string]string{
	"registers":  "register",
	"shared_mem": "shared-memory",
	"warps":      "block-size",
	"blocks":     "blocks-per-SM",
}

// occupancyPhrases are the Occupancy rule's words for each limiter
// (sections/Occupancy.py: "This kernel's theoretical occupancy (50.0%) is
// limited by the number of required registers").
var occupancyPhrases = []struct{ phrase, limiter string }{
	{"the number of required registers", "registers"},
	{"the required amount of shared memory", "shared_mem"},
	{"the number of warps within each block", "warps"},
	{"the number of blocks that can fit on the SM", "blocks"},
}

// boundPhrases are the SOLBottleneck rule's messages (sections/SpeedOfLight.py).
var boundPhrases = []struct{ phrase, bound string }{
	{"grid is too small", "small-grid"},
	{"low compute throughput and memory bandwidth", "latency"},
	{"Compute is more heavily utilized than Memory", "compute"},
	{"Memory is more heavily utilized than Compute", "memory"},
	{"Compute and Memory are well-balanced", "balanced"},
}

// applyRules derives Bound and OccupancyLimiters from the rule messages.
func (l *Launch) applyRules() {
	for _, r := range l.Rules {
		switch r.Name {
		case "Occupancy":
			if !strings.Contains(r.Message, "is limited by") {
				continue
			}
			for _, p := range occupancyPhrases {
				if strings.Contains(r.Message, "limited by "+p.phrase) && !contains(l.OccupancyLimiters, p.limiter) {
					l.OccupancyLimiters = append(l.OccupancyLimiters, p.limiter)
				}
			}
		case "SOLBottleneck":
			for _, p := range boundPhrases {
				if strings.Contains(r.Message, p.phrase) {
					l.Bound = p.bound
				}
			}
			// "The kernel is utilizing greater than 80.0% of the available
			// compute or memory performance": the rule's own pick is the
			// larger of the two throughputs.
			if l.Bound == "" && strings.Contains(r.Message, "utilizing greater than") &&
				l.SMThroughput != nil && l.MemoryThroughput != nil {
				l.Bound = "memory"
				if *l.SMThroughput >= *l.MemoryThroughput {
					l.Bound = "compute"
				}
			}
		}
	}
}

// LimitersFromBlockLimits returns the resources whose block limit is the
// smallest, as ncu's Occupancy rule computes them, or nil when theoretical
// occupancy is 100% or a limit is absent. It is a second way to the
// limiters when a report holds no rule results.
func (l *Launch) LimitersFromBlockLimits() []string {
	if l.TheoreticalOccupancy == nil || *l.TheoreticalOccupancy >= 100 {
		return nil
	}
	lim := []struct {
		name string
		v    *int64
	}{{"blocks", l.BlockLimits.Blocks}, {"registers", l.BlockLimits.Registers}, {"shared_mem", l.BlockLimits.SharedMem}, {"warps", l.BlockLimits.Warps}}
	var best int64 = -1
	for _, x := range lim {
		if x.v == nil {
			return nil
		}
		if best < 0 || *x.v < best {
			best = *x.v
		}
	}
	var out []string
	for _, p := range occupancyPhrases { // ncu's message order
		for _, x := range lim {
			if x.name == p.limiter && *x.v == best {
				out = append(out, x.name)
			}
		}
	}
	return out
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }
