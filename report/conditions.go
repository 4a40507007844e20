package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/runcond"
)

// Run conditions come from nvidia-smi: GPU and process names are chosen by
// whoever named the device or started the process, so every string of a
// runcond.Conditions goes through the output format's escaping (names through
// name, other text through txt) and nothing is printed raw.

// ConditionsText describes the conditions of a series of runs for a
// terminal, escaped with escape.Terminal: one block per run ("run 2: GPU
// 0 ..."), or one for all when they read the same ("all 5 runs: not
// sampled: no nvidia-smi"). A nil entry is a run stored without.
func ConditionsText(cs []*runcond.Conditions) []string {
	if len(cs) == 0 {
		return nil
	}
	return sideLines(cs, gate.RunByPosition, func(s string) string { return fmt.Sprintf("%q", s) }, escape.Terminal)
}

// conditionLines describes one run's GPU conditions, one line per GPU
// (hostLines describes its host).
func conditionLines(c *runcond.Conditions, name, txt func(string) string) []string {
	if c == nil {
		return []string{txt("not recorded")}
	}
	return gpuLines(c, name, txt)
}

// hostLines describes the host of each run that has host conditions, one
// line a run ("run 2: host: ..."), escaped by txt.
func hostLines(cs []*runcond.Conditions, run func(int) string, txt func(string) string) []string {
	var out []string
	for i, c := range cs {
		if c == nil {
			continue
		}
		if h := HostText(c.Host); h != "" {
			out = append(out, txt(fmt.Sprintf("%s: %s", run(i), h)))
		}
		for _, n := range c.HostNodes { // a Slurm job's nodes
			if h := HostText(n); h != "" {
				out = append(out, txt(fmt.Sprintf("%s: node %s: %s", run(i), n.Node, h)))
			}
		}
	}
	return out
}

// HostText describes the host's CPUs during a run in one line ("host:
// other processes used 1.4 of 2 CPUs, CPU pressure 86%, steal 0%, no
// cgroup CPU quota"); "" for a run stored before gpugate sampled it.
func HostText(h *runcond.Host) string {
	if h == nil {
		return ""
	}
	if h.NotSampled != "" {
		return "host: not sampled: " + h.NotSampled
	}
	var parts []string
	if h.OtherCPU != nil {
		parts = append(parts, fmt.Sprintf("other processes used %.1f of %d CPUs", *h.OtherCPU, h.CPUs))
	}
	if h.CPUPressure != nil {
		parts = append(parts, fmt.Sprintf("CPU pressure %.0f%%", *h.CPUPressure*100))
	} else {
		parts = append(parts, "no CPU pressure figures (/proc/pressure/cpu)")
	}
	if h.Steal != nil {
		parts = append(parts, fmt.Sprintf("steal %.0f%%", *h.Steal*100))
	}
	if h.Throttled != nil {
		parts = append(parts, fmt.Sprintf("cgroup CPU-throttled in %.0f%% of periods", *h.Throttled*100))
	}
	s := fmt.Sprintf("host: %s (over %.1fs)", strings.Join(parts, ", "), h.WallSec)
	if h.JobCPUSec != nil && h.JobWaitSec != nil {
		// What the other work took from the job itself (schedstat).
		s += fmt.Sprintf("; the job's threads ran %.1fs on a CPU and waited %.1fs for one", *h.JobCPUSec, *h.JobWaitSec)
	}
	return s
}

// gpuLines describes what nvidia-smi saw, one line per GPU.
func gpuLines(c *runcond.Conditions, name, txt func(string) string) []string {
	if !c.Sampled {
		if strings.HasPrefix(c.NotSampled, "not recorded") {
			return []string{txt(c.NotSampled)} // not "not sampled: not recorded"
		}
		return []string{txt("not sampled: " + c.NotSampled)}
	}
	var out []string
	for _, g := range c.GPUs {
		var parts []string
		head := fmt.Sprintf("GPU %d", g.Index)
		if g.Name != "" {
			head += " " + name(g.Name)
		}
		if c.JobGPUsKnown && !g.JobSeen {
			head += txt(" (not the job's)")
		}
		n := fmt.Sprintf("%d samples", g.Samples)
		if g.Busy != g.Samples {
			n += fmt.Sprintf(" (%d busy)", g.Busy)
		}
		parts = append(parts, n)
		if g.SMClockMedianMHz != nil {
			sm := fmt.Sprintf("SM clock %.0f MHz", *g.SMClockMedianMHz)
			if g.SMClockMinMHz != nil && *g.SMClockMinMHz != *g.SMClockMedianMHz {
				sm += fmt.Sprintf(" (min %.0f", *g.SMClockMinMHz)
				if g.SMClockMaxMHz != nil {
					sm += fmt.Sprintf(", max %.0f", *g.SMClockMaxMHz)
				}
				sm += ")"
			} else if g.SMClockMaxMHz != nil {
				sm += fmt.Sprintf(" of %.0f", *g.SMClockMaxMHz)
			}
			parts = append(parts, sm)
		}
		if g.MemClockMedianMHz != nil {
			parts = append(parts, fmt.Sprintf("memory clock %.0f MHz", *g.MemClockMedianMHz))
		}
		if g.TempMaxC != nil {
			parts = append(parts, fmt.Sprintf("up to %.0f °C", *g.TempMaxC))
		}
		if g.PowerMedianW != nil {
			parts = append(parts, fmt.Sprintf("%.0f W", *g.PowerMedianW))
		}
		if g.UtilMedianPct != nil {
			parts = append(parts, fmt.Sprintf("utilization %.0f%%", *g.UtilMedianPct))
		}
		var active []string
		for _, k := range runcond.ThrottleReasons() {
			if v, ok := g.ReasonShare[k]; ok && v > 0 {
				active = append(active, fmt.Sprintf("%s %.0f%%", strings.ReplaceAll(k, "_", " "), 100*v))
			}
		}
		switch {
		case len(active) > 0:
			parts = append(parts, "throttled: "+strings.Join(active, ", ")+" of samples")
		case len(g.ReasonShare) > 0:
			parts = append(parts, "no throttling")
		}
		procs := func(label string, ps []runcond.ComputeProcess) {
			if len(ps) == 0 {
				return
			}
			var s []string
			for i, p := range ps {
				if i == 5 {
					s = append(s, fmt.Sprintf("%d more", len(ps)-5))
					break
				}
				x := fmt.Sprintf("pid %d ", p.PID) + name(cut(p.Name, maxCell))
				if p.UsedMiB != nil {
					x += fmt.Sprintf(" (%.0f MiB)", *p.UsedMiB)
				}
				s = append(s, x)
			}
			parts = append(parts, label+": "+strings.Join(s, ", "))
		}
		procs("other processes", g.Others)
		procs("processes not visible here", g.Unattributed)
		out = append(out, head+": "+strings.Join(parts, "; "))
	}
	for _, w := range c.Warnings {
		out = append(out, txt("note: "+cut(w, maxText)))
	}
	return out
}

// sideLines describes the runs of one side: one block per run, or one
// line for runs that all say the same.
func sideLines(cs []*runcond.Conditions, run func(int) string, name, txt func(string) string) []string {
	var out []string
	same := len(cs) > 0
	var prev string
	for i, c := range cs {
		lines := conditionLines(c, name, txt)
		j := strings.Join(lines, "\n")
		if i > 0 && j != prev {
			same = false
		}
		prev = j
	}
	if same {
		lines := conditionLines(cs[0], name, txt)
		if len(cs) > 1 {
			lines[0] = fmt.Sprintf("all %d runs: %s", len(cs), lines[0])
		}
		return lines
	}
	for i, c := range cs {
		for k, l := range conditionLines(c, name, txt) {
			if k == 0 {
				l = fmt.Sprintf("%s: %s", run(i), l)
			}
			out = append(out, l)
		}
	}
	return out
}

// sideNames names a side's runs by their store ids (gate.Report.RunName).
func sideNames(r *gate.Report, side string) func(int) string {
	return func(i int) string { return r.RunName(side, i) }
}

// WriteConditionsText writes the run-conditions section of r for a
// terminal, each run named by its store id where it has one; nothing
// when r has no conditions.
func WriteConditionsText(w io.Writer, r *gate.Report) {
	rc := r.Conditions
	if rc == nil {
		return
	}
	name := func(s string) string { return fmt.Sprintf("%q", s) }
	fmt.Fprintln(w, "\nrun conditions (nvidia-smi and the host's CPUs while the job ran):")
	for _, side := range []struct {
		label string
		cs    []*runcond.Conditions
	}{{"baseline", rc.Baseline}, {"candidate", rc.Candidate}} {
		if len(side.cs) == 0 {
			continue
		}
		run := sideNames(r, side.label)
		for i, l := range append(sideLines(side.cs, run, name, escape.Terminal), hostLines(side.cs, run, escape.Terminal)...) {
			if i == 0 {
				fmt.Fprintf(w, "  %-9s %s\n", side.label+":", l)
			} else {
				fmt.Fprintf(w, "  %-9s %s\n", "", l)
			}
		}
	}
	for _, v := range rc.Void {
		fmt.Fprintf(w, "  void: %s\n", escape.Terminal(v))
	}
	for _, v := range rc.BaselineWorse {
		fmt.Fprintf(w, "  baseline worse: %s\n", escape.Terminal(v))
	}
}

// writeConditionsMarkdown writes the run-conditions section of a comment.
func writeConditionsMarkdown(w io.Writer, r *gate.Report) {
	rc := r.Conditions
	if rc == nil {
		return
	}
	name := func(s string) string { return escape.CodeSpan(cut(s, maxCell)) }
	fmt.Fprint(w, "\n#### Run conditions\n\n")
	if rc.Voided {
		fmt.Fprint(w, "**The verdict is inconclusive because of them:** ")
		var why []string
		for _, v := range append(append([]string{}, rc.Void...), rc.BaselineWorse...) {
			why = append(why, text(v))
		}
		fmt.Fprintf(w, "%s.\n\n", strings.Join(why, "; "))
	} else if len(rc.Void) > 0 {
		var why []string
		for _, v := range rc.Void {
			why = append(why, text(v))
		}
		fmt.Fprintf(w, "The candidate ran under worse conditions and still did not regress: %s.\n\n", strings.Join(why, "; "))
	}
	for _, side := range []struct {
		label string
		cs    []*runcond.Conditions
	}{{"baseline", rc.Baseline}, {"candidate", rc.Candidate}} {
		if len(side.cs) == 0 {
			continue
		}
		run := sideNames(r, side.label)
		for i, l := range append(sideLines(side.cs, run, name, text), hostLines(side.cs, run, text)...) {
			if i == 0 {
				fmt.Fprintf(w, "- %s: %s\n", side.label, l)
			} else {
				fmt.Fprintf(w, "  - %s\n", l)
			}
		}
	}
}
