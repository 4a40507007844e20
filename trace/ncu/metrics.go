package ncu

import "strings"

type metricKind uint8

const (
	kindFloat metricKind = iota
	kindInt
	kindSharedMem
)

// metricSpec says where a value goes and in which unit it is stored.
type metricSpec struct {
	kind    metricKind
	unit    string // base unit of the field; "*" for counts with any unit word
	float   func(*Launch) **float64
	int     func(*Launch) **int64
	dynamic bool // kindSharedMem: the dynamic part
}

func fl(unit string, f func(*Launch) **float64) metricSpec {
	return metricSpec{kind: kindFloat, unit: unit, float: f}
}

func in(f func(*Launch) **int64) metricSpec { return metricSpec{kind: kindInt, unit: "*", int: f} }

var (
	duration      = fl("nsecond", func(l *Launch) **float64 { return &l.Duration })
	elapsed       = fl("cycle", func(l *Launch) **float64 { return &l.ElapsedCycles })
	smFreq        = fl("cycle/second", func(l *Launch) **float64 { return &l.SMFrequency })
	dramFreq      = fl("cycle/second", func(l *Launch) **float64 { return &l.DRAMFrequency })
	smPct         = fl("%", func(l *Launch) **float64 { return &l.SMThroughput })
	memPct        = fl("%", func(l *Launch) **float64 { return &l.MemoryThroughput })
	dramPct       = fl("%", func(l *Launch) **float64 { return &l.DRAMThroughput })
	achieved      = fl("%", func(l *Launch) **float64 { return &l.AchievedOccupancy })
	theoretical   = fl("%", func(l *Launch) **float64 { return &l.TheoreticalOccupancy })
	waves         = fl("", func(l *Launch) **float64 { return &l.WavesPerSM })
	gridSize      = in(func(l *Launch) **int64 { return &l.GridSize })
	blockSize     = in(func(l *Launch) **int64 { return &l.BlockSize })
	registers     = in(func(l *Launch) **int64 { return &l.RegistersPerThread })
	limitRegs     = in(func(l *Launch) **int64 { return &l.BlockLimits.Registers })
	limitSmem     = in(func(l *Launch) **int64 { return &l.BlockLimits.SharedMem })
	limitWarps    = in(func(l *Launch) **int64 { return &l.BlockLimits.Warps })
	limitBlocks   = in(func(l *Launch) **int64 { return &l.BlockLimits.Blocks })
	smemStatic    = metricSpec{kind: kindSharedMem, unit: "byte/block"}
	smemDynamic   = metricSpec{kind: kindSharedMem, unit: "byte/block", dynamic: true}
	smemStaticRaw = smemStatic
	smemDynRaw    = smemDynamic
)

// rawSpecs map the raw page's metric names, which do not change between
// ncu versions, to fields. The Speed Of Light labels are defined on them
// (sections/SpeedOfLight.section, Occupancy.py).
var rawSpecs = map[string]metricSpec{
	"gpu__time_duration.sum":                                           duration,
	"gpc__cycles_elapsed.max":                                          elapsed,
	"gpc__cycles_elapsed.avg.per_second":                               smFreq,
	"dram__cycles_elapsed.avg.per_second":                              dramFreq,
	"sm__throughput.avg.pct_of_peak_sustained_elapsed":                 smPct,
	"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": memPct,
	"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed":           dramPct,
	"sm__warps_active.avg.pct_of_peak_sustained_active":                achieved,
	"sm__maximum_warps_per_active_cycle_pct":                           theoretical,
	"launch__waves_per_multiprocessor":                                 waves,
	"launch__grid_size":                                                gridSize,
	"launch__block_size":                                               blockSize,
	"launch__registers_per_thread":                                     registers,
	"launch__occupancy_limit_registers":                                limitRegs,
	"launch__occupancy_limit_shared_mem":                               limitSmem,
	"launch__occupancy_limit_warps":                                    limitWarps,
	"launch__occupancy_limit_blocks":                                   limitBlocks,
	"launch__shared_mem_per_block_static":                              smemStaticRaw,
	"launch__shared_mem_per_block_dynamic":                             smemDynRaw,
}

// labelSpec maps a details-page row to a field by its section and display
// label. Labels depend on the ncu version that wrote the report, because
// section definitions are stored in it: 2020.3 writes "GPU Speed Of Light"
// with "SM [%]" and "SOL DRAM"; 2021.2 to 2023.1 write "GPU Speed Of Light
// Throughput" with "Compute (SM) [%]", "Memory [%]" and "DRAM Throughput";
// newer section files say "Compute (SM) Throughput" and "Memory Throughput"
// (in %; the Memory Workload Analysis "Memory Throughput" is in byte/second
// and is not this one).
func labelSpec(section, label string) (metricSpec, bool) {
	switch {
	case strings.HasPrefix(section, "GPU Speed Of Light"):
		switch label {
		case "Duration":
			return duration, true
		case "Elapsed Cycles":
			return elapsed, true
		case "SM Frequency":
			return smFreq, true
		case "DRAM Frequency":
			return dramFreq, true
		case "Compute (SM) [%]", "SM [%]", "Compute (SM) Throughput":
			return smPct, true
		case "Memory [%]", "Memory Throughput":
			return memPct, true
		case "DRAM Throughput", "SOL DRAM":
			return dramPct, true
		}
	case section == "Launch Statistics":
		switch label {
		case "Grid Size":
			return gridSize, true
		case "Block Size":
			return blockSize, true
		case "Registers Per Thread":
			return registers, true
		case "Static Shared Memory Per Block":
			return smemStatic, true
		case "Dynamic Shared Memory Per Block":
			return smemDynamic, true
		case "Waves Per SM":
			return waves, true
		}
	case section == "Occupancy":
		switch label {
		case "Achieved Occupancy":
			return achieved, true
		case "Theoretical Occupancy":
			return theoretical, true
		case "Block Limit Registers":
			return limitRegs, true
		case "Block Limit Shared Mem":
			return limitSmem, true
		case "Block Limit Warps":
			return limitWarps, true
		case "Block Limit SM":
			return limitBlocks, true
		}
	}
	return metricSpec{}, false
}
