package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/escape"
)

// Throughput and FLOPs are derived from step time and operator shapes:
// they are shown beside step time, never as gate rows of their own.

// workRows are the per-step work series analyze's text table shows after
// step_time_ms, with their labels and scale.
var workRows = []struct {
	series, label string
	scale         float64
}{
	{"samples_per_s", "samples_per_s", 1},
	{"tokens_per_s", "tokens_per_s", 1},
	{"flops", "gflop_per_step", 1e-9},
	{"tflops", "tflops", 1},
	{"mfu", "mfu_%", 100},
}

// writeWorkSummaryRows writes the work rows of analyze's summary table.
func writeWorkSummaryRows(w io.Writer, wr *analysis.WorkResult) {
	for _, row := range workRows {
		xs := wr.WorkSeries(row.series)
		if len(xs) == 0 {
			continue
		}
		s := analysis.Summarize(xs)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t\n", row.label, num(s.Median*row.scale), num(s.Mean*row.scale), num(s.P90*row.scale), num(s.Min*row.scale), num(s.Max*row.scale))
	}
}

// workNote says where analyze's FLOPs come from and why MFU is absent.
func workNote(wr *analysis.WorkResult) string {
	if wr == nil {
		return ""
	}
	var parts []string
	switch wr.FLOPsSource {
	case "trace":
		parts = append(parts, fmt.Sprintf("FLOPs: the trace's flops args of %d top-level matmul/conv operators", wr.FLOPOps))
	case "shapes":
		parts = append(parts, fmt.Sprintf("FLOPs: computed from the recorded shapes of %d top-level matmul/conv operators", wr.FLOPOps))
	case "trace+shapes":
		parts = append(parts, fmt.Sprintf("FLOPs: %d top-level matmul/conv operators, their flops args where the trace has them, else their shapes", wr.FLOPOps))
	}
	if wr.Uncounted > 0 {
		parts = append(parts, fmt.Sprintf("%d of them without a count (shapes missing or not understood)", wr.Uncounted))
	}
	if wr.PeakTFLOPS != nil {
		parts = append(parts, fmt.Sprintf("MFU against the %s datasheet peak of %s, %g TFLOP/s dense", wr.Dtype, wr.Device, *wr.PeakTFLOPS))
	} else if wr.MFUAbsent != "" {
		parts = append(parts, "no MFU: "+wr.MFUAbsent)
	}
	return strings.Join(parts, "; ")
}

func workValue(v *float64, unit string) string {
	if v == nil {
		return "-"
	}
	switch unit {
	case "ratio":
		return fmt.Sprintf("%.1f%%", 100**v)
	case "FLOP":
		return num(*v/1e9) + " GFLOP"
	case "1/s":
		return num(*v) + "/s"
	case "TFLOP/s":
		return num(*v) + " TFLOP/s"
	}
	// Not a unit gate.WorkComparison gives: a report read back from JSON
	// (the fork flow's artifact) can hold any; the number alone is shown.
	return num(*v)
}

// workName is a row's name as gpugate writes it ("samples_per_s", ...):
// anything else, from a report read back from JSON, is kept to the
// characters of an identifier.
func workName(s string) string { return cut(ident(s), maxCell) }

func workDelta(d *float64) string {
	if d == nil || math.IsNaN(*d) || math.IsInf(*d, 0) {
		return ""
	}
	return fmt.Sprintf("%+.1f%%", *d)
}

// writeWorkText writes the throughput and FLOPs lines of a comparison.
func writeWorkText(w io.Writer, wc *gate.WorkComparison) {
	if wc == nil || len(wc.Rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\nthroughput and FLOPs (derived from step time and operator shapes; not gated):")
	for _, r := range wc.Rows {
		fmt.Fprintf(w, "  %-17s %16s → %-16s %s\n", workName(r.Name), workValue(r.Baseline, r.Unit), workValue(r.Candidate, r.Unit), workDelta(r.DeltaPct))
	}
	for _, m := range wc.MFUAbsent {
		fmt.Fprintf(w, "  %s\n", escape.Terminal(m))
	}
}

// writeWorkMarkdown writes them for a comment.
func writeWorkMarkdown(w io.Writer, wc *gate.WorkComparison) {
	if wc == nil || len(wc.Rows) == 0 {
		return
	}
	fmt.Fprint(w, "\n| throughput and FLOPs (not gated) | baseline | candidate | Δ |\n|:--|--:|--:|--:|\n")
	for _, r := range wc.Rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", workName(r.Name), workValue(r.Baseline, r.Unit), workValue(r.Candidate, r.Unit), workDelta(r.DeltaPct))
	}
	if len(wc.MFUAbsent) > 0 {
		var t []string
		for _, m := range wc.MFUAbsent {
			t = append(t, text(m))
		}
		fmt.Fprintf(w, "\n%s.\n", strings.Join(t, "; "))
	}
}
