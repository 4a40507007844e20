package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/escape"
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

// cut bounds a name to n characters before it is quoted.
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}

// cell quotes a name for a table cell: a code span the name cannot end.
func cell(s string) string { return escape.TableCode(cut(s, maxCell)) }

func value(v float64, unit string) string {
	// A geometric mean of equal counts is the count to within rounding
	// (exp(log 1478) = 1477.9999999999998): shown as the count.
	if r := math.Round(v); r != v && math.Abs(v-r) <= 1e-9*math.Abs(v) {
		v = r
	}
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

// Delta formats a metric's change with its confidence interval, as
// "+7.5% [+2.1, +12.9]".
func Delta(m stats.Result) string { return delta(m) }

// delta formats the change and its interval; "new" and "gone" from or to a
// baseline median of 0, with the absolute change.
func delta(m stats.Result) string {
	if math.IsInf(m.DeltaPct, 0) {
		return fmt.Sprintf("%s (%+g)", stats.FormatDelta(m), math.Round(m.Delta*1000)/1000)
	}
	return stats.FormatDelta(m)
}

// legend explains the columns, the Δ column and the verdicts, with the
// α and unit used.
func legend(r *gate.Report) string {
	unit := "runs (each run's mean step)"
	if st := stepTime(r); st != nil && st.Candidate.N == 1 && st.SampleUnit == stats.UnitRun {
		unit = "runs (each run's mean step; the 1 candidate run is judged by its prediction interval against the baseline runs)"
	}
	if r.SampleUnit == stats.UnitPair {
		unit = "A/B pairs (each pair's log-ratio head/base)"
	}
	return fmt.Sprintf("mean: each run's mean per step, ranks combined as the gate combines them (a step takes its slowest rank's time; counts add up over ranks), then the geometric mean over the side's runs (the arithmetic mean where a run's is 0). "+
		"Δ: candidate mean / baseline mean − 1, with its %s interval (t, on the log scale); samples are %s. "+
		"regression: the interval excludes 0 and the change is beyond the allowance; pass: the interval stays within the allowance; otherwise inconclusive.",
		confidence(r.Alpha), unit)
}

// stepTime is the report's step_time result, or nil.
func stepTime(r *gate.Report) *stats.Result {
	for i := range r.Metrics {
		if r.Metrics[i].Name == "step_time" {
			return &r.Metrics[i]
		}
	}
	return nil
}

func confidence(alpha float64) string {
	if alpha == 0 {
		alpha = stats.DefaultThresholds.Alpha
	}
	return strconv.FormatFloat(100*(1-alpha), 'f', -1, 64) + "%"
}

func alphaString(alpha float64) string {
	if alpha == 0 {
		alpha = stats.DefaultThresholds.Alpha
	}
	return strconv.FormatFloat(alpha, 'g', -1, 64)
}

// metricWarnings collects the metrics' own warnings (benchmath's), once each.
func metricWarnings(r *gate.Report) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range r.Metrics {
		for _, w := range m.Warnings {
			if w = m.Name + ": " + w; !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	return out
}

func verdictWord(v stats.Verdict) string {
	switch v {
	case stats.Regression:
		return "❌ regression"
	case stats.Improvement:
		return "✅ improvement"
	case stats.Inconclusive:
		return "⚠️ inconclusive"
	case stats.Accepted:
		return "☑️ accepted"
	case stats.NoBaseline:
		return "no baseline"
	}
	return "pass"
}

// counts counts the verdicts of the gated metrics, the ones the verdict
// rests on: a headline "PASS — 1 regression(s)" for a metric that does not
// gate read as a contradiction (issue 19); the others have their own
// table, never the headline (issue 28).
func counts(r *gate.Report) (reg, imp, inc int) {
	for _, m := range r.Metrics {
		if !m.Gate {
			continue
		}
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

// shown reports whether a metric row belongs in a table: gate metrics
// always (the gated table), others when they changed or could not be
// judged (the table of metrics that do not gate).
func shown(m stats.Result) bool { return m.Gate || m.Verdict != stats.Pass }

// ungated are the metrics that do not gate and are shown: they explain
// the verdict, in their own table, never in the headline (issue 28).
func ungated(r *gate.Report) []stats.Result {
	var out []stats.Result
	for _, m := range r.Metrics {
		if !m.Gate && shown(m) {
			out = append(out, m)
		}
	}
	return out
}

// metricRowMarkdown is one metric's row: the means Δ compares.
func metricRowMarkdown(w io.Writer, m stats.Result) {
	fmt.Fprintf(w, "| %s | %s | %s | %s | ±%s | %s (p=%.3f n=%d+%d) |\n", m.Name, value(m.Baseline.Value, m.Unit), value(m.Candidate.Value, m.Unit),
		delta(m), allowance(m), verdictWord(m.Verdict), m.P, m.Baseline.N, m.Candidate.N)
}

const metricHeadMarkdown = "| metric | baseline mean | candidate mean | Δ | allowance | verdict |\n|:--|--:|--:|--:|--:|:--|\n"

// writeMediansMarkdown writes the steps' medians and p90 of the metrics in
// the tables, folded: for people, labelled; Δ is not of them.
func writeMediansMarkdown(w io.Writer, r *gate.Report) {
	fmt.Fprint(w, "\n<details><summary>Medians and p90 over steps (for reading; Δ compares the means)</summary>\n\n| metric | baseline median | baseline p90 | candidate median | candidate p90 |\n|:--|--:|--:|--:|--:|\n")
	for _, m := range r.Metrics {
		if shown(m) {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", m.Name, value(m.Baseline.Median, m.Unit), value(m.Baseline.P90, m.Unit), value(m.Candidate.Median, m.Unit), value(m.Candidate.P90, m.Unit))
		}
	}
	fmt.Fprint(w, "\n</details>\n")
}

// meanStepLine says what the decomposition's mean step is and, when it
// differs from the table's, how the two relate: the parts add up on the
// arithmetic mean of the run means, the Δ column is of geometric means.
func meanStepLine(r *gate.Report) string {
	d := r.Decomposition
	s := fmt.Sprintf("mean step per run %s → %s (%+.2f ms", value(d.Baseline, "ms"), value(d.Candidate, "ms"), d.Delta)
	if d.Baseline > 0 {
		s += fmt.Sprintf(", %+.1f%%", 100*d.Delta/d.Baseline)
	}
	s += "; the arithmetic mean of the run means, on which the parts add up"
	timed := r.Timing != nil && slices.Contains(r.Timing.Metrics, "step_time")
	if timed {
		// The parts are in the traces: the step they add up to is the
		// profiled runs', profiler overhead included.
		s += ", of the profiled runs"
	}
	if st := stepTime(r); st != nil && d.Baseline > 0 && !math.IsInf(st.DeltaPct, 0) && math.Abs(100*d.Delta/d.Baseline-st.DeltaPct) >= 0.05 {
		if timed {
			s += fmt.Sprintf("; the table's Δ %+.1f%% is of the timing runs' geometric means %s → %s", st.DeltaPct, value(st.Baseline.Value, "ms"), value(st.Candidate.Value, "ms"))
		} else {
			s += fmt.Sprintf("; the table's Δ %+.1f%% is of the geometric means %s → %s", st.DeltaPct, value(st.Baseline.Value, "ms"), value(st.Candidate.Value, "ms"))
		}
	}
	return s + ")"
}

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
	if r.Recorded != "" {
		// A baseline recording compares nothing: say what was done, not
		// "no baseline" and an empty table.
		runs := "runs"
		if r.Candidate.Runs == 1 {
			runs = "run"
		}
		if r.Verdict == stats.Inconclusive {
			// No run was quiet (pipeline.busyBaseline): stored, but not
			// a baseline time can be judged by; the warning says it
			// whole, above the footer that may be cut.
			fmt.Fprintf(w, "### gpugate: ⚠️ **inconclusive: no quiet baseline run**\n\n%d %s stored as the baseline of %s, every one disturbed.\n", r.Candidate.Runs, runs, escape.CodeSpan(r.Recorded))
			if len(r.Warnings) > 0 {
				fmt.Fprintf(w, "\n> [!WARNING]\n> %s.\n", text(r.Warnings[0]))
			}
		} else {
			fmt.Fprintf(w, "### gpugate: ✅ **baseline recorded**\n\n%d %s recorded as the baseline of %s; pull requests are compared with them.\n", r.Candidate.Runs, runs, escape.CodeSpan(r.Recorded))
		}
		writeConditionsMarkdown(w, r)
		fmt.Fprintf(w, "\n<sub>%s.", text(sides(r)))
		for _, wn := range r.Warnings {
			fmt.Fprintf(w, " ⚠️ %s.", text(wn))
		}
		fmt.Fprint(w, "</sub>\n")
		return nil
	}
	fmt.Fprintf(w, "### gpugate: %s\n\n", head)
	if len(r.Mismatch) > 0 {
		fmt.Fprintf(w, "> ⚠️ **Not the same hardware or profiler, compared anyway** (-allow-mismatch): %s.\n\n", text(strings.Join(r.Mismatch, "; ")))
	}
	fmt.Fprintf(w, "%d regression(s) · %d improvement(s) · %d inconclusive among gated metrics (α=%s, %s intervals, %s as samples)", reg, imp, inc, alphaString(r.Alpha), confidence(r.Alpha), unitWord(r))
	fmt.Fprint(w, "\n\n")
	if f := cause(r); f != nil {
		fmt.Fprintf(w, "**Why:** %s — %s. %s.\n\n**Try:** %s.\n\n", escape.CodeSpan(f.ID), clip(f.Summary), clip(f.Evidence), f.Suggestion)
	}
	if l := gate.RanksLine(r.Ranks); l != "" {
		fmt.Fprintf(w, "**Ranks** (each rank's own mean step; the job's step is its slowest rank's): %s.\n\n", text(l))
	}
	fmt.Fprint(w, metricHeadMarkdown)
	for _, m := range r.Metrics {
		if m.Gate {
			metricRowMarkdown(w, m)
		}
	}
	fmt.Fprintf(w, "\nThese metrics gate the check. %s\n", legend(r))
	if ug := ungated(r); len(ug) > 0 {
		fmt.Fprint(w, "\n#### Not gated: what else moved\n\nThese explain the verdict and do not decide it.\n\n"+metricHeadMarkdown)
		for _, m := range ug {
			metricRowMarkdown(w, m)
		}
	}
	if len(r.Metrics) > 0 {
		writeMediansMarkdown(w, r)
	}
	writeWorkMarkdown(w, r.Work)
	var notes []string
	for _, m := range gatedFirst(r.Metrics) {
		switch {
		case m.Verdict == stats.Regression && m.Why != "":
			notes = append(notes, fmt.Sprintf("- **%s** regressed: %s.", m.Name, clip(m.Why)))
		case m.Verdict == stats.Inconclusive && shown(m):
			notes = append(notes, fmt.Sprintf("- **%s** inconclusive: %s.", m.Name, text(m.Reason)))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\n%s\n", strings.Join(notes, "\n"))
	}

	d := r.Decomposition
	if len(d.Parts) > 0 {
		fmt.Fprintf(w, "\n#### Where the step time went\n\n%s:\n\n| part | baseline | candidate | Δ |\n|:--|--:|--:|--:|\n", capital(meanStepLine(r)))
		for _, p := range d.Parts {
			fmt.Fprintf(w, "| %s | %s | %s | %+.2f ms |\n", p.Name, value(p.Baseline, "ms"), value(p.Candidate, "ms"), p.Delta)
		}
	}
	causes, context := splitFindings(r.Findings)
	if noBaseline(r) && len(r.Findings) > 0 {
		fmt.Fprint(w, "\n#### Findings in the candidate\n\n")
		for _, f := range r.Findings {
			fmt.Fprintf(w, "- %s (%s): %s. %s. *Try:* %s.\n", escape.CodeSpan(f.ID), escape.Markdown(f.Severity), clip(f.Summary), clip(f.Evidence), f.Suggestion)
		}
		causes, context = nil, nil
	}
	if len(causes) > 0 {
		fmt.Fprint(w, "\n#### Findings: new or worse than in the baseline\n\nRanked by the milliseconds of the change in mean step they account for.\n\n")
		for _, f := range causes {
			tag := " **new**"
			if !f.New {
				tag = fmt.Sprintf(" **worse** (was %.0f%% of the step)", 100*f.BaselineShare)
			}
			fmt.Fprintf(w, "- %s (%s)%s, accounts for %.2f ms: %s. %s. *Try:* %s.\n", escape.CodeSpan(f.ID), escape.Markdown(f.Severity), tag, f.AccountsMs, clip(f.Summary), clip(f.Evidence), f.Suggestion)
		}
	}
	if len(context) > 0 {
		fmt.Fprint(w, "\n#### Context: as in the baseline, not a cause of the change\n\n")
		for _, f := range context {
			fmt.Fprintf(w, "- %s (%s), %.0f%% of the step (baseline %.0f%%): %s. %s. *Try:* %s.\n", escape.CodeSpan(f.ID), escape.Markdown(f.Severity), 100*f.Share, 100*f.BaselineShare, clip(f.Summary), clip(f.Evidence), f.Suggestion)
		}
	}
	k := r.Kernels
	if len(k.Added)+len(k.Removed)+len(k.Changed) > 0 {
		fmt.Fprint(w, "\n<details><summary>Kernels that changed (per step)</summary>\n\n| kernel | | count | time |\n|:--|:--|--:|--:|\n")
		row := func(what string, c gate.KernelChange) {
			fmt.Fprintf(w, "| %s | %s | %s → %s | %.3f → %.3f ms (%+.3f) |\n", cell(c.Name), what, num(c.BaselineCount), num(c.CandidateCount), c.BaselineMs, c.CandidateMs, c.DeltaMs)
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
	writeDeepDiveMarkdown(w, r)
	writeNodesMarkdown(w, r.Nodes)
	writeConditionsMarkdown(w, r)
	fmt.Fprintf(w, "\n<sub>%s. Noise: %s.", text(sides(r)), text(r.Noise))
	if t := r.Timing.Text(); t != "" {
		fmt.Fprintf(w, " Timing: %s.", text(t))
	}
	if o := r.Overhead; o != nil {
		fmt.Fprintf(w, " Profiling overhead %s.", OverheadText(o))
	}
	if r.Isolation != "" {
		fmt.Fprintf(w, " Isolation: %s.", text(r.Isolation))
	}
	for _, wn := range append(slices.Clone(r.Warnings), metricWarnings(r)...) {
		fmt.Fprintf(w, " ⚠️ %s.", text(wn))
	}
	fmt.Fprint(w, "</sub>\n")
	return nil
}

// maxText bounds free text in a comment line.
const maxText = 600

// text is free text with data in it (a warning, a file name, a branch) for
// a comment line: cut, then escaped as Markdown text.
func text(s string) string { return escape.Markdown(cut(s, maxText)) }

// clip bounds a finding's text, which is Markdown whose names are code
// spans (analysis quotes them): it cuts only outside a code span, so that a
// cut never leaves a span open and the name after it live.
func clip(md string) string {
	if utf8.RuneCountInString(md) <= maxText {
		return md
	}
	last, open, n, i := 0, 0, 0, 0
	for i < len(md) && n < maxText-1 {
		if open == 0 {
			last = i
		}
		if md[i] == '`' {
			j := i
			for j < len(md) && md[j] == '`' {
				j++
			}
			if k := j - i; open == 0 {
				open = k
			} else if open == k {
				open = 0
			}
			n += j - i
			i = j
			continue
		}
		_, size := utf8.DecodeRuneInString(md[i:])
		i += size
		n++
	}
	if open == 0 {
		last = i
	}
	return md[:last] + "…"
}

// WriteCompareText writes the comparison for a terminal.
func WriteCompareText(w io.Writer, r *gate.Report) error {
	reg, imp, inc := counts(r)
	fmt.Fprintf(w, "gpugate: %s — %d regression(s), %d improvement(s), %d inconclusive among gated metrics (α=%s, %s intervals, %s as samples)\n",
		strings.ToUpper(string(r.Verdict)), reg, imp, inc, alphaString(r.Alpha), confidence(r.Alpha), unitWord(r))
	if f := cause(r); f != nil {
		fmt.Fprintf(w, "why: %s: %s\n", escape.Terminal(f.ID), escape.Terminal(f.Summary))
	}
	if l := gate.RanksLine(r.Ranks); l != "" {
		fmt.Fprintf(w, "ranks (each rank's own mean step; the job's step is its slowest rank's): %s\n", escape.Terminal(l))
	}
	fmt.Fprintln(w)
	if len(r.Mismatch) > 0 {
		fmt.Fprintf(w, "warning: not the same hardware or profiler, compared anyway (-allow-mismatch): %s\n\n", escape.Terminal(strings.Join(r.Mismatch, "; ")))
	}
	row := func(m stats.Result) {
		// "*" marks a gated metric, as before the gated metrics had a
		// table of their own: scripts grep for it.
		mark := " "
		if m.Gate {
			mark = "*"
		}
		fmt.Fprintf(w, "%-20s %14s %14s %24s %7s  %s (p=%.3f n=%d+%d)\n", mark+m.Name, value(m.Baseline.Value, m.Unit), value(m.Candidate.Value, m.Unit),
			delta(m), "±"+allowance(m), m.Verdict, m.P, m.Baseline.N, m.Candidate.N)
	}
	fmt.Fprintf(w, "%-20s %14s %14s %24s %7s  %s\n", "gated metric", "baseline mean", "candidate mean", "Δ [interval]", "allow", "verdict")
	for _, m := range r.Metrics {
		if m.Gate {
			row(m)
		}
	}
	if ug := ungated(r); len(ug) > 0 {
		fmt.Fprintf(w, "\nnot gated (explains the verdict, does not decide it):\n")
		for _, m := range ug {
			row(m)
		}
	}
	if len(r.Metrics) > 0 {
		fmt.Fprintf(w, "\n%s\n", legend(r))
	}
	writeWorkText(w, r.Work)
	for _, m := range gatedFirst(r.Metrics) {
		switch {
		case m.Verdict == stats.Regression && m.Why != "":
			fmt.Fprintf(w, "  %s regressed: %s\n", m.Name, escape.Terminal(m.Why))
		case m.Verdict == stats.Inconclusive && shown(m):
			fmt.Fprintf(w, "  %s inconclusive: %s\n", m.Name, escape.Terminal(m.Reason))
		}
	}
	d := r.Decomposition
	if len(d.Parts) > 0 {
		fmt.Fprintf(w, "\n%s:", meanStepLine(r))
		for _, p := range d.Parts {
			fmt.Fprintf(w, " %s %+.2f;", p.Name, p.Delta)
		}
		fmt.Fprintln(w)
	}
	causes, context := splitFindings(r.Findings)
	if noBaseline(r) {
		for _, f := range r.Findings {
			fmt.Fprintf(w, "\n%s (%s): %s\n  evidence: %s\n  try: %s\n", escape.Terminal(f.ID), escape.Terminal(f.Severity),
				escape.Terminal(f.Summary), escape.Terminal(f.Evidence), escape.Terminal(f.Suggestion))
		}
		causes, context = nil, nil
	}
	for _, f := range causes {
		tag := " [new]"
		if !f.New {
			tag = " [worse]"
		}
		fmt.Fprintf(w, "\n%s (%s)%s, accounts for %.2f ms: %s\n  evidence: %s\n  try: %s\n", escape.Terminal(f.ID), escape.Terminal(f.Severity), tag, f.AccountsMs,
			escape.Terminal(f.Summary), escape.Terminal(f.Evidence), escape.Terminal(f.Suggestion))
	}
	if len(context) > 0 {
		fmt.Fprintf(w, "\ncontext (as in the baseline, not a cause of the change):\n")
	}
	for _, f := range context {
		fmt.Fprintf(w, "  %s (%s), %.0f%% of the step (baseline %.0f%%): %s\n    evidence: %s\n", escape.Terminal(f.ID), escape.Terminal(f.Severity), 100*f.Share, 100*f.BaselineShare,
			escape.Terminal(f.Summary), escape.Terminal(f.Evidence))
	}
	writeDeepDiveText(w, r)
	writeNodesText(w, r.Nodes)
	WriteConditionsText(w, r)
	fmt.Fprintf(w, "\n%s\nnoise: %s\n", escape.Terminal(sides(r)), escape.Terminal(r.Noise))
	if t := r.Timing.Text(); t != "" {
		fmt.Fprintf(w, "timing: %s\n", escape.Terminal(t))
	}
	if o := r.Overhead; o != nil {
		fmt.Fprintf(w, "profiling overhead: %s\n", OverheadText(o))
	}
	if r.Isolation != "" {
		fmt.Fprintf(w, "isolation: %s\n", escape.Terminal(r.Isolation))
	}
	if c := CostText(r.Cost); c != "" {
		fmt.Fprintf(w, "cost: %s\n", c)
	}
	for _, wn := range append(slices.Clone(r.Warnings), metricWarnings(r)...) {
		fmt.Fprintf(w, "warning: %s\n", escape.Terminal(wn))
	}
	return nil
}

func unitWord(r *gate.Report) string {
	if r.SampleUnit == stats.UnitPair {
		return "pairs"
	}
	return "runs"
}

// allowance formats a metric's allowance: "15%", or the absolute minimum
// when the allowance is 0 ("0% (≥ 0.5)").
func allowance(m stats.Result) string {
	s := strconv.FormatFloat(m.AllowancePct, 'f', -1, 64) + "%"
	if m.AllowancePct == 0 && m.MinAbs > 0 {
		s += fmt.Sprintf(" (≥ %g)", m.MinAbs)
	}
	return s
}

// gatedFirst orders metrics gated ones first, each group in its order.
func gatedFirst(ms []stats.Result) []stats.Result {
	out := make([]stats.Result, 0, len(ms))
	for _, g := range []bool{true, false} {
		for _, m := range ms {
			if m.Gate == g {
				out = append(out, m)
			}
		}
	}
	return out
}

// capital makes the first letter of s upper case.
func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// splitFindings separates the findings that are new or worse than in the
// baseline (possible causes, ranked by the gate) from those present as
// much in the baseline: context, never a cause (issue 28). A report
// without a baseline has no causes: its findings are the candidate's own.
func splitFindings(fs []gate.Finding) (causes, context []gate.Finding) {
	for _, f := range fs {
		if f.New || f.Worse {
			causes = append(causes, f)
		} else {
			context = append(context, f)
		}
	}
	return causes, context
}

// noBaseline reports whether r compared nothing: its findings are the
// candidate's own, neither causes nor context.
func noBaseline(r *gate.Report) bool { return r.Verdict == stats.NoBaseline || len(r.Metrics) == 0 }
