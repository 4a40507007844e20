package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/stats"
)

// CommentInfo is what a PR comment says besides the comparison. Every
// string in it may come from a trace, a config or an artifact written by
// untrusted code: WriteComment escapes them all.
type CommentInfo struct {
	Marker      string // hidden first line that finds the comment again; must be safe
	Workload    string
	Baseline    string // what was compared with: branch@commits, runs, date
	Fingerprint string // the machine, in words
	SummaryURL  string // where the full report is, when the comment is cut
	// ArtifactName and ArtifactURL point at the uploaded evidence: traces,
	// the report as Markdown and JSON, the job's log.
	ArtifactName, ArtifactURL string
	// Traces are the names of the trace files in the artifact; Omitted
	// counts those left out by the size cap.
	Traces  []string
	Omitted int
	// BaseSteps and CandSteps are step times (ms) of one baseline run and
	// one candidate run that step time was judged on, for the chart
	// (gate.Report.StepSeries; its title names the runs, StepRuns).
	BaseSteps, CandSteps []float64
	// Record is the command that records a baseline, shown when there is
	// none.
	Record string
	// StepPicture: the artifact holds step.svg, the median step of each
	// side as a picture (StepSVG).
	StepPicture bool
}

// MaxComment is GitHub's limit on a comment body.
const MaxComment = 65536

// maxSeries bounds the chart.
const maxSeries = 200

// WriteComment writes the PR comment: a banner for an accepted regression
// or a missing baseline, the Markdown report, a chart of step time per step
// (baseline vs PR, a Mermaid xychart that GitHub renders), where the
// evidence is and how to open it, the baseline and the fingerprint. Every
// name is escaped (see SafeReport). It stays under MaxComment.
func WriteComment(w io.Writer, r *gate.Report, info CommentInfo) error {
	r = SafeReport(r)
	var b bytes.Buffer
	if info.Marker != "" {
		fmt.Fprintf(&b, "%s\n", info.Marker)
	}
	if info.Workload != "" {
		fmt.Fprintf(&b, "<sub>workload %s</sub>\n\n", mdCode(info.Workload))
	}
	switch {
	case r.Verdict == stats.Accepted && r.Accepted != nil:
		names := make([]string, len(r.Accepted.Metrics))
		for i, m := range r.Accepted.Metrics {
			names[i] = mdCode(m)
		}
		fmt.Fprintf(&b, "> [!NOTE]\n> **Regression accepted** by the label %s: %s regressed and the pull request says that is intended. Remove the label to gate again.\n\n",
			mdCode(r.Accepted.Label), strings.Join(names, ", "))
	case r.Recorded != "":
		// A recording is a success: the heading says so, no banner.
	case r.Verdict == stats.NoBaseline || len(r.Metrics) == 0:
		why := "nothing stored to compare with"
		if len(r.Warnings) > 0 {
			why = r.Warnings[0]
		}
		fmt.Fprintf(&b, "> [!WARNING]\n> **No baseline**: %s.", text(why))
		if info.Record != "" {
			fmt.Fprintf(&b, " Record one on the base branch with %s.", mdCode(info.Record))
		}
		b.WriteString("\n\n")
	}
	WriteCompareMarkdown(&b, r)
	if chart := runChart(r); chart != "" {
		b.WriteString("\n<details><summary>Step time per run</summary>\n\n" + chart + "\n</details>\n")
	}
	if chart := stepChart(info.BaseSteps, info.CandSteps, r.StepRuns()); chart != "" {
		b.WriteString("\n<details><summary>Step time per step, one " + r.StepRuns() + " a side</summary>\n\n" + chart + "\n</details>\n")
	}
	if info.ArtifactURL != "" || len(info.Traces) > 0 || info.Omitted > 0 {
		b.WriteString("\n#### Evidence\n\n")
		if info.ArtifactURL != "" {
			fmt.Fprintf(&b, "Artifact %s: %s — the traces, this report as Markdown and JSON, and the job's log.\n", mdCode(info.ArtifactName), mdURL(info.ArtifactURL))
			if info.StepPicture {
				b.WriteString("Its `step.svg` pictures the median step of each side on one time axis: host thread, GPU streams, and the GPU's idle gaps with their causes.\n")
			}
		}
		b.WriteString(howToOpen(info.Traces, info.Omitted))
	}
	fmt.Fprintf(&b, "\n<sub>Baseline: %s. Machine: %s.</sub>\n", text(info.Baseline), text(info.Fingerprint))
	if c := CostText(r.Cost); c != "" {
		fmt.Fprintf(&b, "\n<sub>Cost of this check: %s.</sub>\n", c)
	}
	out := b.Bytes()
	if len(out) > MaxComment {
		cut := bytes.LastIndexByte(out[:MaxComment-400], '\n')
		note := "\n\n… the report is longer than a comment may be; the full report is in the job summary"
		if info.SummaryURL != "" {
			note += ": " + mdURL(info.SummaryURL)
		}
		out = out[:cut:cut]
		// Close what the cut left open: a code fence (the chart) and the
		// <details> sections; data cannot open either (it is escaped).
		if bytes.Count(out, []byte("\n```"))%2 == 1 {
			out = append(out, "\n```"...)
		}
		for range bytes.Count(out, []byte("<details>")) - bytes.Count(out, []byte("</details>")) {
			out = append(out, "\n</details>"...)
		}
		out = append(out, note+".\n"...)
	}
	_, err := w.Write(out)
	return err
}

// howToOpen says how to open each kind of trace in the artifact.
func howToOpen(traces []string, omitted int) string {
	var kineto, nsysRep, sqlite int
	for _, t := range traces {
		n := strings.ToLower(t)
		switch {
		case strings.HasSuffix(n, ".nsys-rep"), strings.HasSuffix(n, ".qdrep"), strings.HasSuffix(n, ".nsys-rep.gz"):
			nsysRep++
		case strings.HasSuffix(n, ".sqlite"), strings.HasSuffix(n, ".sqlite.gz"):
			sqlite++
		case strings.Contains(n, ".json"):
			kineto++
		}
	}
	var b strings.Builder
	if kineto > 0 {
		fmt.Fprintf(&b, "- %d torch.profiler (Kineto) trace(s), `.json.gz`: open in the Perfetto UI (https://ui.perfetto.dev, \"Open trace file\") or in Chrome at `chrome://tracing` (gunzip first if it refuses the file).\n", kineto)
	}
	if nsysRep > 0 {
		fmt.Fprintf(&b, "- %d Nsight Systems report(s), `.nsys-rep`: open in Nsight Systems (`nsys-ui`, File > Open; gunzip a `.gz` first), or `nsys stats` on the command line.\n", nsysRep)
	}
	if sqlite > 0 {
		fmt.Fprintf(&b, "- %d Nsight Systems SQLite export(s): query with `sqlite3`, or `gpugate analyze`.\n", sqlite)
	}
	if omitted > 0 {
		fmt.Fprintf(&b, "- %d trace(s) were left out: over the trace size cap (action input `trace-size-cap`).\n", omitted)
	}
	return b.String()
}

// runChart draws the mean step time of each baseline run and each run of
// this PR, in the order compared (b1 … bK, then PR1 … PRm), as bars, with
// the baseline runs' mean as a line across: what the verdict rests on
// (the run is the unit). Numbers only; "" without step_time or runs.
func runChart(r *gate.Report) string {
	var st *stats.Result
	for i := range r.Metrics {
		if r.Metrics[i].Name == "step_time" {
			st = &r.Metrics[i]
		}
	}
	if st == nil || len(st.Baseline.RunMeans) == 0 || len(st.Candidate.RunMeans) == 0 {
		return ""
	}
	bm, cm := st.Baseline.RunMeans, st.Candidate.RunMeans
	// Each bar is named by its run's store id, the runs step time's
	// selection judged (gate.Report.JudgedNames), else by position.
	stm, _ := analysis.MetricByName("step_time")
	bIDs, cIDs := r.JudgedNames(stm, len(bm), len(cm))
	if bIDs != nil {
		bIDs = bIDs[max(0, len(bm)-maxSeries/2):]
	}
	if cIDs != nil {
		cIDs = cIDs[:min(len(cm), maxSeries/2)]
	}
	bm, cm = bm[max(0, len(bm)-maxSeries/2):], cm[:min(len(cm), maxSeries/2)]
	var xs, bars, ref []string
	// The line is the baseline's geometric mean of run means, what the
	// gate compares with on the log scale (the arithmetic mean where a
	// run mean is not positive).
	var logSum, sum float64
	positive := true
	for _, v := range bm {
		sum += v
		logSum += math.Log(v)
		positive = positive && v > 0
	}
	mean := sum / float64(len(bm))
	if positive {
		mean = math.Exp(logSum / float64(len(bm)))
	}
	if math.IsNaN(mean) || math.IsInf(mean, 0) {
		return ""
	}
	for i, v := range append(slices.Clone(bm), cm...) {
		// Numbers only, and of a size a step time has (ms): a forged
		// 1e308 would print 300 digits.
		if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > 1e12 {
			return ""
		}
		label := fmt.Sprintf("\"b%d\"", i+1)
		if i >= len(bm) {
			label = fmt.Sprintf("\"PR%d\"", i-len(bm)+1)
		}
		switch {
		case bIDs != nil && i < len(bm):
			label = fmt.Sprintf("%q", bIDs[i])
		case cIDs != nil && i >= len(bm):
			label = fmt.Sprintf("%q", "PR "+cIDs[i-len(bm)])
		}
		xs = append(xs, label)
		bars = append(bars, fmt.Sprintf("%.3f", v))
		ref = append(ref, fmt.Sprintf("%.3f", mean))
	}
	return fmt.Sprintf("```mermaid\nxychart-beta\n    title \"mean step time per run (ms): %d baseline run(s), then this PR's %d; line: the baseline's geometric mean\"\n    x-axis [%s]\n    y-axis \"ms\"\n    bar [%s]\n    line [%s]\n```\n",
		len(bm), len(cm), strings.Join(xs, ", "), strings.Join(bars, ", "), strings.Join(ref, ", "))
}

// stepChart draws the step times of a baseline run and a candidate run,
// step by step. Numbers only: nothing from the artifact reaches the chart
// as text.
func stepChart(b, c []float64, runs string) string {
	b, c = b[:min(len(b), maxSeries)], c[:min(len(c), maxSeries)]
	if len(b) == 0 || len(c) == 0 {
		return ""
	}
	n := max(len(b), len(c))
	var xs []string
	for i := 1; i <= n; i++ {
		xs = append(xs, fmt.Sprint(i))
	}
	line := func(v []float64) string {
		var s []string
		for _, x := range v {
			s = append(s, fmt.Sprintf("%.2f", x))
		}
		return "[" + strings.Join(s, ", ") + "]"
	}
	return fmt.Sprintf("```mermaid\nxychart-beta\n    title \"step time (ms) of one %s a side: baseline first line, PR second\"\n    x-axis \"step\" [%s]\n    y-axis \"ms\"\n    line %s\n    line %s\n```\n",
		runs, strings.Join(xs, ", "), line(b), line(c))
}

// SafeReport returns a copy of r whose every string is safe to render as
// Markdown in a comment: identifiers (metric and finding ids, units,
// severities) keep only the characters such ids have; free text keeps its
// code spans and has everything else that Markdown or HTML would act on
// escaped (emphasis, links, images, HTML tags such as </details>,
// @mentions, table pipes, headings); names shown in code spans lose their
// backticks and line breaks. The reports of runs of untrusted code (the
// fork flow) are rendered through it, and so are all others: trace names
// are hostile too.
func SafeReport(r *gate.Report) *gate.Report {
	c := *r
	c.Metrics = make([]stats.Result, len(r.Metrics))
	for i, m := range r.Metrics {
		m.Name, m.Unit, m.Direction = ident(m.Name), ident(m.Unit), ident(m.Direction)
		m.Verdict = stats.Verdict(ident(string(m.Verdict)))
		m.Notes = texts(m.Notes)
		// The renderer passes Why through as Markdown (gpugate's own has
		// code spans); one from an artifact is escaped here.
		m.Why = mdText(m.Why)
		c.Metrics[i] = m
	}
	c.Verdict = stats.Verdict(ident(string(r.Verdict)))
	// Noise is escaped by the renderer (text), as warnings are.
	// Warnings, paths, kernel names and the accept label are escaped by
	// the renderers themselves (report/compare.go); escaping them here too
	// would show the escapes.
	c.Decomposition.Parts = append([]gate.Part(nil), r.Decomposition.Parts...)
	for i := range c.Decomposition.Parts {
		c.Decomposition.Parts[i].Name = mdText(c.Decomposition.Parts[i].Name)
	}
	c.Findings = make([]gate.Finding, len(r.Findings))
	for i, f := range r.Findings {
		f.ID, f.Severity = ident(f.ID), ident(f.Severity)
		f.Summary, f.Evidence, f.Suggestion = mdText(f.Summary), mdText(f.Evidence), mdText(f.Suggestion)
		c.Findings[i] = f
	}
	if r.Accepted != nil {
		a := *r.Accepted
		a.Metrics = make([]string, len(r.Accepted.Metrics))
		for i, m := range r.Accepted.Metrics {
			a.Metrics[i] = ident(m)
		}
		c.Accepted = &a
	}
	return &c
}

func texts(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = mdText(x)
	}
	return out
}

// ident keeps the characters of an identifier: letters, digits, _ - . /
func ident(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_-./", r)) {
			return r
		}
		return -1
	}, s)
}

// flat removes control characters (ANSI escapes, NUL) and makes line
// breaks spaces: one logical line, which no Markdown block can start in.
func flat(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == '\t' || r == '\u2028' || r == '\u2029':
			return ' '
		case unicode.IsControl(r), r == '\u200e', r == '\u200f', r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069':
			return -1 // control and bidirectional-override characters
		}
		return r
	}, s)
}

// mdCode renders s as a code span it cannot break.
func mdCode(s string) string { return escape.CodeSpan(cut(s, maxCell)) }

var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "#", `\#`, "!", `\!`,
	"~", `\~`, "|", `\|`, "<", "&lt;", ">", "&gt;", "&", "&amp;", "@", "@\u200b", "$", "&#36;",
)

// mdText escapes free text for Markdown, keeping its code spans (the
// findings quote trace names as code spans): outside them every character
// Markdown or HTML would act on is escaped and an @mention is broken with a
// zero-width space; inside them backticks cannot occur and line breaks are
// gone. An unpaired backtick is escaped.
func mdText(s string) string {
	s = flat(s)
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '`')
		if i < 0 {
			b.WriteString(mdEscaper.Replace(s))
			return b.String()
		}
		b.WriteString(mdEscaper.Replace(s[:i]))
		// A code span opens with a run of n backticks and closes with the
		// next run of exactly n (CommonMark), as internal/escape writes
		// them for names that hold backticks themselves.
		n := backticks(s[i:])
		end := -1
		for k := i + n; k < len(s); {
			if s[k] != '`' {
				k++
				continue
			}
			m := backticks(s[k:])
			if m == n {
				end = k
				break
			}
			k += m
		}
		if end < 0 {
			b.WriteString(strings.Repeat("\\`", n)) // no closing run: literal backticks
			s = s[i+n:]
			continue
		}
		// Inside, nothing is Markdown; a pipe would still split a table
		// cell, and "-->" would end gpugate's marker comment.
		body := strings.NewReplacer("|", `\|`, "-->", `--\>`).Replace(s[i+n : end])
		b.WriteString(s[i:i+n] + body + s[end:end+n])
		s = s[end+n:]
	}
}

// backticks is the length of the run of backticks s starts with.
func backticks(s string) int {
	n := 0
	for n < len(s) && s[n] == '`' {
		n++
	}
	return n
}

// mdURL renders an http(s) URL for GitHub to autolink, or "(no link)" for
// anything else (javascript:, a URL with spaces or brackets that could end
// the link early).
func mdURL(u string) string {
	if !(strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")) || strings.ContainsAny(u, " <>()\n\"'`") {
		return "(no link)"
	}
	return u
}
