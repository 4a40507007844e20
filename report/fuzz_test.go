package report

import (
	"bytes"
	"strings"
	"testing"
	"unicode"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/internal/mdcheck"
	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/stats"
	"github.com/gpugate/gpugate/trace/ncu"
)

// hostile are the names of issue 10's injection reproductions (an NVTX or
// data-loader range with a newline, a kernel with a backtick, the nsys
// version and a device name with ANSI escapes, a workload with "-->"), the
// seeds of the fuzzers here (testdata/fuzz holds more).
var hostile = []string{
	"DataLoader\n</details>\n\n@org/team fixes #123 <img src=x onerror=alert(1)>",
	"step\n::error::boom\n::add-mask::x\n::set-output name=verdict::pass",
	"void gemm<`T`>(float*)",
	"``k``",
	"`",
	"2022.4.2.1-\x1b[31mred\x1b[0m\x1b]0;title\x07",
	"NVIDIA A100\r\n::warning::fake",
	"demo -->",
	"<!-- x",
	"a|b\\|c",
	"_GitHubActionsFileCommandDelimeter_",
	"$x$ ~~s~~ **b** [l](https://evil.example) ![i](x)",
	"\u202eevil\u200b",
	"##[add-mask]secret",
	"",
	"<details><summary>x</summary>",
	"</sub></details></table>",
}

var twelve, sixty, thirty = 12.0, 60.0, 30.0

// hostileReport puts name everywhere a trace, a job or a config can put
// a string into a report.
func hostileReport(name string) (*gate.Report, CommentInfo) {
	q := analysis.Quote(name)
	r := &gate.Report{
		Verdict:   stats.Regression,
		Baseline:  gate.Side{Runs: 1, Steps: 10, Paths: []string{"/runs/" + name + ".json"}},
		Candidate: gate.Side{Runs: 1, Steps: 10, Paths: []string{name}},
		Noise:     "one run on each side " + name,
		Metrics: []stats.Result{{Name: "step_time", Unit: "ms", Gate: true, Verdict: stats.Regression, Significant: true, DeltaPct: 12,
			Baseline: stats.Summary{Median: 10, N: 10}, Candidate: stats.Summary{Median: 11.2, N: 10}}},
		Kernels: gate.KernelDiff{Added: []gate.KernelChange{{Name: name, CandidateCount: 1}}, Changed: []gate.KernelChange{{Name: name + name, BaselineCount: 1, CandidateCount: 2}}},
		Findings: []gate.Finding{
			{Finding: analysis.Finding{ID: "host-sync", Severity: "high", Summary: "1 blocking host sync(s) per step",
				Evidence: "issued from " + q + " (×3)", Suggestion: "drop .item()"}, New: true},
			// Long evidence is cut: never inside a code span.
			{Finding: analysis.Finding{ID: "low-utilization", Severity: "medium", Summary: "the GPU is busy only 12% of each step",
				Evidence: "largest gaps: " + strings.Repeat("0.25 ms host wait (host in "+q+"); ", 30), Suggestion: "look"}, Worse: true},
		},
		Warnings: []string{name + ": no step markers", "nsys " + name},
		// The deep-dive: the kernel's name, ncu's strings and the notes
		// are the name; the launch's bound and limiters too (a report
		// read back from JSON can hold anything).
		DeepDive: &ncu.DeepDiveReport{Note: "reports in /runs/" + name, Kernels: []ncu.KernelResult{
			{Kernel: name, Function: name, DeltaMs: 1, ChangePct: &twelve, Base: &ncu.Launch{Name: name, Bound: "memory", AchievedOccupancy: &sixty},
				Head: &ncu.Launch{Name: name, Bound: name, OccupancyLimiters: []string{name, "registers"}, AchievedOccupancy: &thirty}, BaseFrom: name},
			{Kernel: "void " + name + "<int>(float*)", Function: name, Note: "candidate: ncu run failed: " + name},
		}},
		// Throughput and FLOPs, and the run conditions: a report read
		// back from JSON (the fork flow's artifact) can hold any row name,
		// unit, GPU or process name.
		Work: &gate.WorkComparison{Rows: []gate.WorkRow{{Name: name, Unit: name, Baseline: &twelve, Candidate: &sixty}},
			MFUAbsent: []string{"baseline: no MFU: GPU model " + name}},
		Conditions: &gate.RunConditions{
			Baseline: []*runcond.Conditions{{Sampled: true, GPUs: []runcond.GPUConditions{{Index: 0, Name: name, Samples: 3, Busy: 3,
				Others: []runcond.ComputeProcess{{PID: 5, Name: name}}}}, Warnings: []string{name}}},
			Candidate: []*runcond.Conditions{{NotSampled: name}},
			Void:      []string{name}, BaselineWorse: []string{name}, Voided: true,
		},
	}
	return r, CommentInfo{Marker: "<!-- gpugate:demo -->", Workload: name, Baseline: "main@" + name + ", 1 run(s)", Fingerprint: "1× " + name}
}

// allowed are the HTML elements gpugate's comment is made of.
var allowed = map[string]bool{"p": true, "h3": true, "h4": true, "strong": true, "em": true, "code": true, "pre": true,
	"table": true, "thead": true, "tbody": true, "tr": true, "th": true, "td": true, "ul": true, "li": true,
	"details": true, "summary": true, "sub": true, "!--": true}

// FuzzComment renders the PR comment of a report full of a hostile name
// and checks what GitHub would make of it: only gpugate's own HTML, as
// many <details> closed as opened, one HTML comment (the marker) and one
// "-->", every name whole in its code span, no live @mention or #ref, no
// line that starts a workflow command.
func FuzzComment(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		rep, info := hostileReport(name)
		var b bytes.Buffer
		if err := WriteComment(&b, rep, info); err != nil {
			t.Fatal(err)
		}
		md := b.String()
		for _, line := range strings.Split(md, "\n") {
			if strings.HasPrefix(strings.TrimLeftFunc(line, unicode.IsSpace), "::") {
				t.Fatalf("name %q: the line %q starts a workflow command", name, line)
			}
		}
		if n := strings.Count(md, "-->"); n != 1 {
			t.Fatalf("name %q: %d comment terminators in\n%s", name, n, md)
		}
		h := mdcheck.HTML(md)
		tags := mdcheck.Tags(h)
		for tag, n := range tags {
			if !allowed[strings.TrimPrefix(tag, "/")] {
				t.Fatalf("name %q: tag <%s> (%d×) in the rendered comment:\n%s\n----\n%s", name, tag, n, md, h)
			}
		}
		if tags["details"] != 2 || tags["/details"] != 2 || tags["summary"] != 2 || tags["/summary"] != 2 || tags["!--"] != 1 || tags["sub"] != tags["/sub"] {
			t.Fatalf("name %q: unbalanced or extra sections %v:\n%s", name, tags, md)
		}
		shown := strings.ReplaceAll(escape.Terminal(cut(name, maxCell)), "-->", `--\>`)
		found := false
		for _, c := range mdcheck.Codes(h) {
			if strings.TrimSpace(c) == strings.TrimSpace(shown) {
				found = true
			}
		}
		if !found {
			t.Fatalf("name %q: no code span holds it whole (%q); spans %q\n%s", name, shown, mdcheck.Codes(h), md)
		}
		if live := mdcheck.Live(mdcheck.Text(h)); live != "" {
			t.Fatalf("name %q: live %q in the rendered comment:\n%s", name, live, md)
		}
	})
}

// FuzzText renders the terminal forms (compare's and analyze's) with a
// hostile name: no control character reaches the terminal, the name adds
// no line, and through the Actions writer no line starts a command.
func FuzzText(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	render := func(name string) string {
		rep, _ := hostileReport(name)
		var b bytes.Buffer
		WriteCompareText(&b, rep)
		util := 0.5
		kernels := 3
		var wait int64 = 1e6
		a := &Analysis{Profiles: []Profile{{Path: name, Variant: "nsys " + name, Devices: []Device{{Name: name}, {Name: name}},
			Steps:    []Step{{Name: name, StepTime: 1e6, Kernels: &kernels, GPUUtil: &util, CPUWait: &wait}, {Name: "2" + name, StepTime: 2e6}},
			Warnings: []string{name}}}}
		a.Profiles[0].Findings = append(a.Profiles[0].Findings, rep.Findings[0].Finding)
		a.WriteText(&b)
		return b.String()
	}
	lines := strings.Count(render("k"), "\n")
	f.Fuzz(func(t *testing.T, name string) {
		out := render(name)
		for _, r := range out {
			if r != '\n' && (r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || unicode.Is(unicode.Cf, r)) {
				t.Fatalf("name %q: %U in the text output:\n%s", name, r, out)
			}
		}
		if n := strings.Count(out, "\n"); n != lines {
			t.Fatalf("name %q: %d lines, want %d:\n%s", name, n, lines, out)
		}
		var ab bytes.Buffer
		w := escape.NewActionsWriter(&ab)
		w.Write([]byte(out))
		w.Flush()
		for _, line := range strings.Split(ab.String(), "\n") {
			if t2 := strings.TrimLeftFunc(line, unicode.IsSpace); strings.HasPrefix(t2, "::") || strings.Contains(line, "##[") {
				t.Fatalf("name %q: line %q starts a workflow command", name, line)
			}
		}
	})
}
