package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/escape"
)

// CommentInfo is what a PR comment says besides the comparison.
type CommentInfo struct {
	Marker      string // hidden first line that finds the comment again
	Workload    string
	Baseline    string // what was compared with: branch@commits, runs, date
	Fingerprint string // the machine, in words
	SummaryURL  string // where the full report is, when the comment is cut
}

// MaxComment is GitHub's limit on a comment body.
const MaxComment = 65536

// WriteComment writes the PR comment: the Markdown report, a chart of step
// time per step (baseline vs PR, a Mermaid xychart that GitHub renders),
// the baseline and the fingerprint. It stays under MaxComment.
func WriteComment(w io.Writer, r *gate.Report, base, cand []gate.Run, info CommentInfo) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n", info.Marker)
	if info.Workload != "" {
		fmt.Fprintf(&b, "<sub>workload %s</sub>\n\n", escape.CodeSpan(cut(info.Workload, maxCell)))
	}
	WriteCompareMarkdown(&b, r)
	if chart := stepChart(base, cand); chart != "" {
		b.WriteString("\n<details><summary>Step time per step</summary>\n\n" + chart + "\n</details>\n")
	}
	fmt.Fprintf(&b, "\n<sub>Baseline: %s. Machine: %s.</sub>\n", text(info.Baseline), text(info.Fingerprint))
	out := b.Bytes()
	if len(out) > MaxComment {
		cut := bytes.LastIndexByte(out[:MaxComment-400], '\n')
		note := "\n\n… the report is longer than a comment may be; the full report is in the job summary"
		if info.SummaryURL != "" {
			note += ": " + info.SummaryURL
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

// stepChart draws the step times of the first baseline run and the first
// candidate run, step by step.
func stepChart(base, cand []gate.Run) string {
	m, _ := analysis.MetricByName("step_time")
	series := func(runs []gate.Run) []float64 {
		if len(runs) == 0 || len(runs[0]) == 0 {
			return nil
		}
		xs := runs[0][0].Samples(m)
		if len(xs) > 200 {
			xs = xs[:200]
		}
		return xs
	}
	b, c := series(base), series(cand)
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
	return fmt.Sprintf("```mermaid\nxychart-beta\n    title \"step time (ms): baseline first line, PR second\"\n    x-axis \"step\" [%s]\n    y-axis \"ms\"\n    line %s\n    line %s\n```\n",
		strings.Join(xs, ", "), line(b), line(c))
}
