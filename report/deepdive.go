package report

import (
	"cmp"
	"fmt"
	"io"

	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/trace/ncu"
)

// The Nsight Compute deep-dive (gate.Report.DeepDive): one line per kernel,
//
//	`flash_fwd_kernel` +18%: achieved occupancy 62% → 31% (registers/thread 128 → 168), SM throughput 71% → 54%: register-limited
//
// The line is made from the launches' numbers (ncu.KernelResult.Summary),
// never from a string of the report, so that a report read back from JSON
// written by untrusted code (the fork flow) renders only what gpugate
// writes. Kernel names are code spans; notes are escaped text.

// maxDeepDiveKernels bounds the lines rendered, whatever the JSON holds
// (perf.yaml allows 10 kernels).
const maxDeepDiveKernels = 10

// deepDiveName is the name a kernel's line shows: the function ncu
// matched, or the trace's name when it has none.
func deepDiveName(k *ncu.KernelResult) string {
	return cmp.Or(ncu.FunctionName(k.Kernel), k.Kernel)
}

// deepDiveLine is a kernel's explanation after its name, and the note
// that says what a side lacks.
func deepDiveLine(k *ncu.KernelResult) (summary, note string) {
	summary = k.Summary()
	if summary == "" {
		summary = "not profiled"
		if k.ChangePct != nil {
			summary = fmt.Sprintf("%+.0f%%: not profiled", *k.ChangePct)
		}
	}
	return summary, k.Note
}

// writeDeepDiveMarkdown writes the deep-dive section of a comparison.
func writeDeepDiveMarkdown(w io.Writer, r *gate.Report) {
	d := r.DeepDive
	if d == nil {
		return
	}
	fmt.Fprint(w, "\n#### Nsight Compute deep-dive\n\n")
	for i := range d.Kernels[:min(len(d.Kernels), maxDeepDiveKernels)] {
		k := &d.Kernels[i]
		summary, note := deepDiveLine(k)
		fmt.Fprintf(w, "- %s %s", escape.CodeSpan(cut(deepDiveName(k), maxCell)), text(summary))
		if note != "" {
			fmt.Fprintf(w, " <sub>(%s)</sub>", text(note))
		}
		fmt.Fprintln(w)
	}
	if d.Note != "" {
		if len(d.Kernels) > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "<sub>%s</sub>\n", text(d.Note))
	}
}

// writeDeepDiveText writes the deep-dive for a terminal.
func writeDeepDiveText(w io.Writer, r *gate.Report) {
	d := r.DeepDive
	if d == nil {
		return
	}
	fmt.Fprintln(w, "\nNsight Compute deep-dive:")
	for i := range d.Kernels[:min(len(d.Kernels), maxDeepDiveKernels)] {
		k := &d.Kernels[i]
		summary, note := deepDiveLine(k)
		fmt.Fprintf(w, "  %s %s\n", escape.Terminal(cut(deepDiveName(k), maxText)), escape.Terminal(summary))
		if note != "" {
			fmt.Fprintf(w, "    (%s)\n", escape.Terminal(note))
		}
	}
	if d.Note != "" {
		fmt.Fprintf(w, "  %s\n", escape.Terminal(d.Note))
	}
}
