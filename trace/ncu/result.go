package ncu

import (
	"fmt"
	"strings"
)

// DeepDiveReport is what a deep-dive found: one result per regressed
// kernel, or a note that says why none was profiled. It is part of the
// comparison's JSON (docs/json.md, "deep_dive").
type DeepDiveReport struct {
	// Note says how the deep-dive ran, or why it did not ("deep-dive
	// skipped: no NVIDIA GPU or driver here (…)").
	Note    string         `json:"note,omitempty"`
	Kernels []KernelResult `json:"kernels"`
}

// KernelResult is the deep-dive of one kernel: one launch of it profiled
// by ncu on the candidate's side (Head) and, where known, on the
// baseline's (Base).
type KernelResult struct {
	// Kernel is the kernel's name as the trace has it; Function is the
	// function name ncu matched (FunctionName).
	Kernel   string `json:"kernel"`
	Function string `json:"function"`
	// DeltaMs is the kernel's change in time per step as gpugate measured
	// it from the traces; ChangePct the same in % of the baseline's time,
	// null for a kernel the baseline does not run.
	DeltaMs   float64  `json:"delta_ms_per_step"`
	ChangePct *float64 `json:"change_pct"`
	// Base and Head are the profiled launches; null when that side has
	// none (Note says why).
	Base *Launch `json:"base"`
	Head *Launch `json:"head"`
	// BaseFrom says where Base came from: "store" (a deep-dive recorded
	// with the baseline runs), "ncu" (profiled now, A/B mode), or "" (none).
	BaseFrom string `json:"base_from"`
	// Note says why a side is missing: ncu failed or timed out, its report
	// holds no launch of the kernel, the baseline has no ncu data.
	Note string `json:"note,omitempty"`
}

// Summary is the kernel's one-line explanation without its name, for a
// caller that writes the name in its own format: Diff.Summary when both
// sides were profiled ("+18%: achieved occupancy 62% → 31% (registers/thread
// 128 → 168), SM throughput 71% → 54%: register-limited"), the candidate's
// own values when only it was ("+18%: candidate only: …"), and "" when
// neither was. It is made of numbers and fixed words only, never of a
// string from a report, so that it can be rendered from JSON written by
// untrusted code.
func (k *KernelResult) Summary() string {
	var change *float64
	if k.ChangePct != nil {
		c := *k.ChangePct / 100
		change = &c
	}
	switch {
	case k.Head == nil:
		return ""
	case k.Base != nil:
		return Compare(k.Base, k.Head, change).Summary()
	}
	var b strings.Builder
	if change != nil {
		fmt.Fprintf(&b, "%+.0f%%: ", 100**change)
	} else {
		b.WriteString("new: ")
	}
	b.WriteString("candidate only: " + Describe(k.Head))
	return b.String()
}

// Describe is one launch's values in a line, numbers and fixed words only:
// "grid 5418 blocks, block 256 threads, registers/thread 16, achieved
// occupancy 38% of 100% theoretical, SM throughput 24%, memory throughput
// 43%: latency-bound".
func Describe(l *Launch) string {
	var items []string
	if l.GridSize != nil {
		items = append(items, fmt.Sprintf("grid %d blocks", *l.GridSize))
	}
	if l.BlockSize != nil {
		items = append(items, fmt.Sprintf("block %d threads", *l.BlockSize))
	}
	if l.RegistersPerThread != nil {
		items = append(items, fmt.Sprintf("registers/thread %d", *l.RegistersPerThread))
	}
	switch a, t := l.AchievedOccupancy, l.TheoreticalOccupancy; {
	case a != nil && t != nil:
		items = append(items, fmt.Sprintf("achieved occupancy %.0f%% of %.0f%% theoretical", *a, *t))
	case a != nil:
		items = append(items, fmt.Sprintf("achieved occupancy %.0f%%", *a))
	case t != nil:
		items = append(items, fmt.Sprintf("theoretical occupancy %.0f%%", *t))
	}
	if l.SMThroughput != nil {
		items = append(items, fmt.Sprintf("SM throughput %.0f%%", *l.SMThroughput))
	}
	if l.MemoryThroughput != nil {
		items = append(items, fmt.Sprintf("memory throughput %.0f%%", *l.MemoryThroughput))
	}
	s := strings.Join(items, ", ")
	if s == "" {
		s = "no launch configuration, occupancy or throughput in the report"
	}
	if lim := l.Limiter(); lim != "" {
		s += ": " + lim
	}
	return s
}
