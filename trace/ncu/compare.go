package ncu

import (
	"fmt"
	"math"
	"strings"
)

// Thresholds below which a change between two launches is not worth a word:
// ncu's percentages move by a point or two between identical runs.
const (
	minPointsChange = 5    // percentage points (occupancy, throughput)
	minClockChange  = 0.05 // relative (SM clock)
)

// Diff is what changed between two launches of one kernel: the baseline's
// and the candidate's.
type Diff struct {
	Base, Head *Launch
	// Change is the relative change of the kernel's time (0.18 is +18%):
	// the one gpugate measured when the caller gives it, else the change
	// in ncu's duration; nil when neither is known.
	Change *float64
	// Items are the changes worth reporting, most telling first, e.g.
	// "achieved occupancy 62% → 31% (registers/thread 128 → 168)".
	Items []string
	// Limiter is what ncu's rules say limits the candidate, e.g.
	// "register-limited" (Launch.Limiter).
	Limiter string
}

// Compare explains the change from base to head. change is the kernel's
// relative time change as gpugate measured it (per step, from the traces);
// nil takes it from ncu's durations.
func Compare(base, head *Launch, change *float64) *Diff {
	d := &Diff{Base: base, Head: head, Change: change, Limiter: head.Limiter()}
	if d.Change == nil && base.Duration != nil && head.Duration != nil && *base.Duration > 0 {
		c := *head.Duration / *base.Duration - 1
		d.Change = &c
	}
	add := func(s string) { d.Items = append(d.Items, s) }

	if s := intChange("grid", base.GridSize, head.GridSize, " blocks"); s != "" {
		add(s)
	}
	if s := intChange("block", base.BlockSize, head.BlockSize, " threads"); s != "" {
		add(s)
	}
	// The causes of an occupancy change: registers and shared memory per
	// block (the launch's resource use), said next to the occupancy they
	// moved, or alone when occupancy did not move.
	var causes []string
	if s := intChange("registers/thread", base.RegistersPerThread, head.RegistersPerThread, ""); s != "" {
		causes = append(causes, s)
	}
	if s := intChange("shared memory/block", base.SharedMemPerBlock, head.SharedMemPerBlock, " B"); s != "" {
		causes = append(causes, s)
	}
	theo := pctChange("theoretical occupancy", base.TheoreticalOccupancy, head.TheoreticalOccupancy)
	ach := pctChange("achieved occupancy", base.AchievedOccupancy, head.AchievedOccupancy)
	switch {
	case ach != "":
		if theo != "" {
			causes = append([]string{strings.TrimPrefix(theo, "theoretical occupancy ") + " theoretical"}, causes...)
		}
		if len(causes) > 0 {
			ach += " (" + strings.Join(causes, ", ") + ")"
		}
		add(ach)
	case theo != "":
		if len(causes) > 0 {
			theo += " (" + strings.Join(causes, ", ") + ")"
		}
		add(theo)
	default:
		for _, c := range causes {
			add(c)
		}
	}
	if s := pctChange("SM throughput", base.SMThroughput, head.SMThroughput); s != "" {
		add(s)
	}
	if s := pctChange("memory throughput", base.MemoryThroughput, head.MemoryThroughput); s != "" {
		add(s)
	}
	if b, h := base.SMFrequency, head.SMFrequency; b != nil && h != nil && *b > 0 && math.Abs(*h / *b - 1) >= minClockChange {
		add(fmt.Sprintf("SM clock %.2f → %.2f GHz", *b/1e9, *h/1e9))
	}
	if b, h := boundWords(base.Bound), boundWords(head.Bound); b != "" && h != "" && b != h {
		add(fmt.Sprintf("%s → %s", b, h))
	}
	return d
}

// Summary is the explanation without the kernel's name, for a caller that
// writes the name in its own format (a Markdown code span):
// "+18%: achieved occupancy 62% → 31% (registers/thread 128 → 168), SM
// throughput 71% → 54%: register-limited". It holds only numbers and fixed
// words, never a string from the report.
func (d *Diff) Summary() string {
	var b strings.Builder
	if d.Change != nil {
		fmt.Fprintf(&b, "%+.0f%%: ", 100**d.Change)
	}
	if len(d.Items) == 0 {
		b.WriteString("no change in launch configuration, occupancy or throughput beyond ncu's noise")
	} else {
		b.WriteString(strings.Join(d.Items, ", "))
	}
	if d.Limiter != "" {
		b.WriteString(": " + d.Limiter)
	}
	return b.String()
}

// String is the one-line explanation with the candidate's function name
// first, as plain text.
func (d *Diff) String() string {
	return FunctionName(d.Head.Name) + " " + d.Summary()
}

func boundWords(b string) string {
	l := Launch{Bound: b}
	return l.Limiter()
}

func intChange(label string, a, b *int64, unit string) string {
	if a == nil || b == nil || *a == *b {
		return ""
	}
	return fmt.Sprintf("%s %d → %d%s", label, *a, *b, unit)
}

func pctChange(label string, a, b *float64) string {
	if a == nil || b == nil || math.Abs(*b-*a) < minPointsChange {
		return ""
	}
	return fmt.Sprintf("%s %.0f%% → %.0f%%", label, *a, *b)
}
