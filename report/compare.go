package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/stats"
)

// WriteCompareJSON writes a comparison as the JSON contract of docs/json.md.
func WriteCompareJSON(w io.Writer, r *gate.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// maxCell bounds a table cell, so that a comment stays far below GitHub's
// 65,536-character limit whatever the kernel names.
const maxCell = 80

func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > maxCell {
		s = string(r[:maxCell-1]) + "…"
	}
	return s
}

func value(v float64, unit string) string {
	switch unit {
	case "ratio":
		return fmt.Sprintf("%.1f%%", 100*v)
	case "count":
		return num(v)
	case "us":
		unit = "µs"
	}
	return num(v) + " " + unit
}

// Value formats a metric value with its unit.
func Value(v float64, unit string) string { return value(v, unit) }

// Delta formats a metric's change: "~" when not significant.
func Delta(m stats.Result) string { return delta(m) }

// delta formats the change benchstat's way: "~" when not significant.
func delta(m stats.Result) string {
	switch {
	case m.Verdict == stats.Inconclusive:
		return "?"
	case !m.Significant:
		return "~"
	case math.IsInf(m.DeltaPct, 1):
		return "new"
	case math.IsInf(m.DeltaPct, -1):
		return "gone"
	}
	return fmt.Sprintf("%+.1f%%", m.DeltaPct)
}

func verdictWord(v stats.Verdict) string {
	switch v {
	case stats.Regression:
		return "❌ regression"
	case stats.Improvement:
		return "✅ improvement"
	case stats.Inconclusive:
		return "⚠️ inconclusive"
	}
	return "pass"
}

func counts(r *gate.Report) (reg, imp, inc int) {
	for _, m := range r.Metrics {
		switch m.Verdict {
		case stats.Regression:
			reg++
		case stats.Improvement:
			imp++
		case stats.Inconclusive:
			inc++
		}
	}
	return
}

// shown reports whether a metric row belongs in the table: gate metrics
// always, others when they changed or could not be judged.
func shown(m stats.Result) bool { return m.Gate || m.Verdict != stats.Pass }

func sides(r *gate.Report) string {
	side := func(s gate.Side) string {
		names := make([]string, 0, len(s.Paths))
		for _, p := range s.Paths {
			names = append(names, filepath.Base(p))
		}
		if len(names) > 3 {
			names = append(names[:3], fmt.Sprintf("+%d more", len(names)-3))
		}
		return fmt.Sprintf("%d run(s), %d step(s): %s", s.Runs, s.Steps, strings.Join(names, ", "))
	}
	return "baseline " + side(r.Baseline) + "; candidate " + side(r.Candidate)
}

// WriteCompareMarkdown writes the comparison as a PR comment body.
func WriteCompareMarkdown(w io.Writer, r *gate.Report) error {
	reg, imp, inc := counts(r)
	head := map[stats.Verdict]string{stats.Regression: "❌ **regression**", stats.Pass: "✅ **pass**", stats.Inconclusive: "⚠️ **inconclusive**",
		stats.Accepted: "☑️ **regression accepted**", stats.NoBaseline: "⚠️ **no baseline**"}[r.Verdict]
	fmt.Fprintf(w, "### gpugate: %s\n\n%d regression(s) · %d improvement(s) · %d inconclusive (α=0.05, Mann–Whitney U)\n\n", head, reg, imp, inc)
	if len(r.Findings) > 0 && (r.Findings[0].New || r.Findings[0].Worse) && r.Verdict == stats.Regression {
		f := r.Findings[0]
		fmt.Fprintf(w, "**Why:** `%s` — %s. %s.\n\n**Try:** %s.\n\n", f.ID, f.Summary, f.Evidence, f.Suggestion)
	}
	fmt.Fprint(w, "| metric | baseline | candidate | Δ | allowance | verdict |\n|:--|--:|--:|--:|--:|:--|\n")
	for _, m := range r.Metrics {
		if !shown(m) {
			continue
		}
		name := m.Name
		if m.Gate {
			name = "**" + name + "**"
		}
		p := fmt.Sprintf(" (p=%.3f n=%d+%d)", m.P, m.Baseline.N, m.Candidate.N)
		fmt.Fprintf(w, "| %s | %s | %s | %s | ±%.0f%% | %s%s |\n", name, value(m.Baseline.Median, m.Unit), value(m.Candidate.Median, m.Unit),
			delta(m), m.AllowancePct, verdictWord(m.Verdict), p)
	}
	fmt.Fprint(w, "\nMedians over steps; `~` not significant. Bold metrics gate the check; the others explain it.\n")

	d := r.Decomposition
	if len(d.Parts) > 0 {
		fmt.Fprintf(w, "\n#### Where the step time went\n\nMean step %s → %s (%+.2f ms):\n\n| part | baseline | candidate | Δ |\n|:--|--:|--:|--:|\n",
			value(d.Baseline, "ms"), value(d.Candidate, "ms"), d.Delta)
		for _, p := range d.Parts {
			fmt.Fprintf(w, "| %s | %s | %s | %+.2f ms |\n", p.Name, value(p.Baseline, "ms"), value(p.Candidate, "ms"), p.Delta)
		}
	}
	if len(r.Findings) > 0 {
		fmt.Fprint(w, "\n#### Findings in the candidate\n\n")
		for _, f := range r.Findings {
			tag := ""
			switch {
			case f.New:
				tag = " **new**"
			case f.Worse:
				tag = fmt.Sprintf(" **worse** (was %.0f%% of the step)", 100*f.BaselineShare)
			}
			fmt.Fprintf(w, "- `%s` (%s)%s: %s. %s. *Try:* %s.\n", f.ID, f.Severity, tag, cell2(f.Summary), cell2(f.Evidence), f.Suggestion)
		}
	}
	k := r.Kernels
	if len(k.Added)+len(k.Removed)+len(k.Changed) > 0 {
		fmt.Fprint(w, "\n<details><summary>Kernels that changed (per step)</summary>\n\n| kernel | | count | time |\n|:--|:--|--:|--:|\n")
		row := func(what string, c gate.KernelChange) {
			fmt.Fprintf(w, "| `%s` | %s | %s → %s | %.3f → %.3f ms (%+.3f) |\n", cell(c.Name), what, num(c.BaselineCount), num(c.CandidateCount), c.BaselineMs, c.CandidateMs, c.DeltaMs)
		}
		for _, c := range k.Added {
			row("added", c)
		}
		for _, c := range k.Removed {
			row("removed", c)
		}
		for _, c := range k.Changed {
			row("changed", c)
		}
		fmt.Fprint(w, "\n</details>\n")
	}
	fmt.Fprintf(w, "\n<sub>%s. Noise: %s.", cell2(sides(r)), r.Noise)
	if o := r.Overhead; o != nil {
		fmt.Fprintf(w, " Profiling overhead ×%.2f (median step %.2f ms profiled, %.2f ms unprofiled).", o.Ratio, o.ProfiledMs, o.UnprofiledMs)
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(w, " ⚠️ %s.", cell2(wn))
	}
	fmt.Fprint(w, "</sub>\n")
	return nil
}

// cell2 bounds free text in a comment line.
func cell2(s string) string {
	if r := []rune(s); len(r) > 600 {
		return string(r[:599]) + "…"
	}
	return s
}

// WriteCompareText writes the comparison for a terminal.
func WriteCompareText(w io.Writer, r *gate.Report) error {
	reg, imp, inc := counts(r)
	fmt.Fprintf(w, "gpugate: %s — %d regression(s), %d improvement(s), %d inconclusive\n\n", strings.ToUpper(string(r.Verdict)), reg, imp, inc)
	fmt.Fprintf(w, "%-20s %14s %14s %9s %9s  %s\n", "metric", "baseline", "candidate", "Δ", "allow", "verdict")
	for _, m := range r.Metrics {
		if !shown(m) {
			continue
		}
		gateMark := " "
		if m.Gate {
			gateMark = "*"
		}
		fmt.Fprintf(w, "%-20s %14s %14s %9s %8.0f%%  %s (p=%.3f n=%d+%d)\n", gateMark+m.Name, value(m.Baseline.Median, m.Unit), value(m.Candidate.Median, m.Unit),
			delta(m), m.AllowancePct, m.Verdict, m.P, m.Baseline.N, m.Candidate.N)
	}
	d := r.Decomposition
	if len(d.Parts) > 0 {
		fmt.Fprintf(w, "\nmean step %.2f → %.2f ms (%+.2f):", d.Baseline, d.Candidate, d.Delta)
		for _, p := range d.Parts {
			fmt.Fprintf(w, " %s %+.2f;", p.Name, p.Delta)
		}
		fmt.Fprintln(w)
	}
	for _, f := range r.Findings {
		tag := ""
		switch {
		case f.New:
			tag = " [new]"
		case f.Worse:
			tag = " [worse]"
		}
		fmt.Fprintf(w, "\n%s (%s)%s: %s\n  evidence: %s\n  try: %s\n", f.ID, f.Severity, tag, f.Summary, f.Evidence, f.Suggestion)
	}
	fmt.Fprintf(w, "\n%s\nnoise: %s\n", sides(r), r.Noise)
	if o := r.Overhead; o != nil {
		fmt.Fprintf(w, "profiling overhead: ×%.2f (median step %.2f ms profiled, %.2f ms unprofiled)\n", o.Ratio, o.ProfiledMs, o.UnprofiledMs)
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", wn)
	}
	return nil
}
