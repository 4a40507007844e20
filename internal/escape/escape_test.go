package escape

import (
	"bytes"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/gpugate/gpugate/internal/mdcheck"
)

// injections are the hostile names of issue 10's reproductions, and the
// seeds of every fuzzer here.
var injections = []string{
	"DataLoader\n</details>\n\n@org/team fixes #123 <img src=x onerror=alert(1)>",
	"step\n::error::boom\n::add-mask::x\n::set-output name=verdict::pass",
	"void k<`a`>(float)",
	"``k``",
	"`",
	" ` ",
	"\x1b[31mred\x1b[0m\x1b]0;title\x07",
	"demo -->",
	"<!-- x",
	"a|b\\|c",
	"_GitHubActionsFileCommandDelimeter_",
	"x\n_GitHubActionsFileCommandDelimeter_\nverdict<<EOF\npass\nEOF",
	"$x^2$ ~~strike~~ **bold** [link](https://evil.example) ![i](x)",
	"\u202eevil\u200b",
	"##[add-mask]secret",
	"  ::warning::indented",
	"\xff\xfe invalid",
	"",
	"\r\n",
	"&lt;img&gt; &#64;org",
	"user@example.com @@x #1 #x",
}

func seed(f *testing.F) {
	for _, s := range injections {
		f.Add(s)
	}
}

// checkTerminal fails when s holds something a terminal acts on.
func checkTerminal(t *testing.T, in, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("Terminal(%q) = %q: invalid UTF-8", in, s)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Cf, r) || r == 0x2028 || r == 0x2029 {
			t.Fatalf("Terminal(%q) = %q: holds %U", in, s, r)
		}
	}
}

func TestTerminal(t *testing.T) {
	for in, want := range map[string]string{
		"plain kernel<float>": "plain kernel<float>",
		"a\nb\tc\r":           `a\nb\tc\r`,
		"\x1b[31m":            `\x1b[31m`,
		"\u202e\u200b":        `\u202e\u200b`,
		"\xff":                `\xff`,
		"\u009b":              `\u009b`,
		"日本 ✓ \ufffd":         "日本 ✓ \ufffd",
	} {
		if got := Terminal(in); got != want {
			t.Errorf("Terminal(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzEscape checks each Markdown escape through a CommonMark renderer:
// a code span renders as one <code> holding exactly the name (control
// characters as escapes), in running text and in a table cell; Markdown
// text renders as that text with no tag, no live mention or reference.
func FuzzEscape(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, s string) {
		shown := Terminal(s)
		checkTerminal(t, s, shown)
		want := strings.ReplaceAll(shown, "-->", `--\>`)

		span := CodeSpan(s)
		if strings.ContainsAny(span, "\r\n") || strings.Contains(span, "-->") {
			t.Fatalf("CodeSpan(%q) = %q: a line break or -->", s, span)
		}
		h := mdcheck.HTML("a " + span + " b\n")
		codes := mdcheck.Codes(h)
		if len(codes) != 1 || strings.TrimSpace(codes[0]) != strings.TrimSpace(want) && !(strings.TrimSpace(want) == "" && strings.TrimSpace(codes[0]) == "") {
			t.Fatalf("CodeSpan(%q) = %q renders as %q, want one code span holding %q", s, span, h, want)
		}
		if tags := mdcheck.Tags(h); len(tags) != 4 { // p, code and their ends
			t.Fatalf("CodeSpan(%q) renders tags %v: %q", s, tags, h)
		}

		cell := TableCode(s)
		h = mdcheck.HTML("| k | n |\n|:--|--:|\n| " + cell + " | 1 |\n")
		codes = mdcheck.Codes(h)
		tags := mdcheck.Tags(h)
		if len(codes) != 1 || strings.TrimSpace(codes[0]) != strings.TrimSpace(want) && strings.TrimSpace(want) != "" || tags["td"] != 2 || tags["code"] != 1 {
			t.Fatalf("TableCode(%q) = %q renders as %q (tags %v), want one code span holding %q in the first of two cells", s, cell, h, tags, want)
		}

		text := Markdown(s)
		if strings.ContainsAny(text, "\r\n") || strings.Contains(text, "-->") {
			t.Fatalf("Markdown(%q) = %q: a line break or -->", s, text)
		}
		h = mdcheck.HTML("x " + text + " y\n")
		if tags := mdcheck.Tags(h); len(tags) != 2 || tags["p"] != 1 {
			t.Fatalf("Markdown(%q) = %q renders tags %v: %q", s, text, tags, h)
		}
		got := strings.ReplaceAll(mdcheck.Text(h), wordJoiner, "")
		if !strings.Contains(strings.Join(strings.Fields(got), " "), strings.Join(strings.Fields(shown), " ")) {
			t.Fatalf("Markdown(%q) = %q renders as text %q, want it to show %q", s, text, got, shown)
		}
		if live := mdcheck.Live(mdcheck.Text(h)); live != "" {
			t.Fatalf("Markdown(%q) = %q: live %q in %q", s, text, live, h)
		}
		if live := mdcheck.LiveGitLab(mdcheck.Text(h)); live != "" {
			t.Fatalf("Markdown(%q) = %q: GitLab would link %q in %q", s, text, live, h)
		}
	})
}

// TestMarkdownGitLabReferences: a name from a trace or a config posted in
// a GitLab merge request note links no merge request, label, milestone,
// snippet, epic, alert, iteration or vulnerability, and still reads as
// written.
func TestMarkdownGitLabReferences(t *testing.T) {
	for _, s := range []string{"see !123", "group/project!12", "~bug", `~"needs review"`, "%v1.0", `%"Sprint 3"`, "$42", "&7",
		"^alert#3", "*iteration:5", "[vulnerability:9]", "[work_item:4]", "@root", "#1", "a&b", "x!y"} {
		text := Markdown(s)
		h := mdcheck.HTML("x " + text + " y\n")
		got := mdcheck.Text(h)
		if live := mdcheck.LiveGitLab(got); live != "" {
			t.Errorf("Markdown(%q) = %q renders %q: GitLab would link %q", s, text, got, live)
		}
		if shown := strings.ReplaceAll(got, wordJoiner, ""); !strings.Contains(shown, s) {
			t.Errorf("Markdown(%q) = %q renders %q, want it to show %q", s, text, shown, s)
		}
	}
}

// commandStart reports whether the runner would read line as a workflow
// command: "::" after leading white space (ActionCommand.TryParseV2), or
// "##[" anywhere (TryParse, the v1 syntax).
func commandStart(line string) bool {
	return strings.HasPrefix(strings.TrimLeftFunc(line, blank), "::") || strings.Contains(line, "##[")
}

// FuzzActionsWriter: nothing written through an ActionsWriter starts a
// workflow command, however it is split into writes; and what is not a
// command passes unchanged.
func FuzzActionsWriter(f *testing.F) {
	for _, s := range injections {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, chunk int) {
		chunk = max(1, chunk%64+1)
		var out bytes.Buffer
		w := NewActionsWriter(&out)
		for i := 0; i < len(s); i += chunk {
			w.Write([]byte(s[i:min(len(s), i+chunk)]))
		}
		w.Flush()
		for _, line := range strings.Split(out.String(), "\n") {
			if commandStart(line) {
				t.Fatalf("ActionsWriter(%q) wrote the line %q", s, line)
			}
		}
		if got := strings.ReplaceAll(out.String(), wordJoiner, ""); strings.TrimSuffix(got, "\n") != strings.TrimSuffix(strings.ReplaceAll(s, wordJoiner, ""), "\n") {
			t.Fatalf("ActionsWriter(%q) changed the text: %q", s, out.String())
		}
	})
}

// parseFileCommand reads one entry of GITHUB_OUTPUT the way the runner
// does (SetOutputFileCommand: "name<<delimiter", value lines, delimiter).
func parseFileCommand(t *testing.T, entry string) (name, value string, rest []string) {
	lines := strings.Split(entry, "\n")
	name, delim, ok := strings.Cut(lines[0], "<<")
	if !ok {
		t.Fatalf("entry %q: no heredoc", entry)
	}
	var v []string
	for i, l := range lines[1:] {
		if l == delim {
			return name, strings.Join(v, "\n"), lines[i+2:]
		}
		v = append(v, l)
	}
	t.Fatalf("entry %q: no closing delimiter", entry)
	return
}

// FuzzFileCommand: a GITHUB_OUTPUT entry gives back exactly its value and
// nothing else, whatever the value holds (a newline once added outputs
// through go-githubactions' fixed delimiter).
func FuzzFileCommand(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, v string) {
		v = strings.ReplaceAll(v, "\r", "") // the runner splits on \n and \r\n alike
		entry, err := FileCommand("verdict", v)
		if err != nil {
			t.Fatal(err)
		}
		name, got, rest := parseFileCommand(t, entry)
		if name != "verdict" || got != v || len(rest) != 0 {
			t.Fatalf("FileCommand(verdict, %q) = %q: reads back as %q=%q and %q", v, entry, name, got, rest)
		}
	})
}

func TestFileCommandNames(t *testing.T) {
	for _, k := range []string{"", "a\nb", "a<<b", "a=b"} {
		if _, err := FileCommand(k, "v"); err == nil {
			t.Errorf("FileCommand(%q) accepted the name", k)
		}
	}
	a, _ := FileCommand("k", "v")
	b, _ := FileCommand("k", "v")
	if a == b {
		t.Errorf("the same delimiter twice: %q", a)
	}
}

func TestStopCommands(t *testing.T) {
	var out bytes.Buffer
	w := NewActionsWriter(&out)
	resume := StopCommands(w)
	w.Write([]byte("partial"))
	resume()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "::stop-commands::gpugate-") || lines[1] != "partial" || lines[2] != "::"+strings.TrimPrefix(lines[0], "::stop-commands::")+"::" {
		t.Errorf("stop-commands: %q", out.String())
	}
}

// TestActionsWriterLongLine: a line longer than what the writer keeps back
// is passed on in pieces; a "##[" across two pieces is still escaped.
func TestActionsWriterLongLine(t *testing.T) {
	for _, at := range []int{maxPending - 1, maxPending - 2, maxPending - 3} {
		line := strings.Repeat("x", at) + "##[add-mask]x"
		var out bytes.Buffer
		w := NewActionsWriter(&out)
		w.Write([]byte(line[:maxPending]))
		w.Write([]byte(line[maxPending:]))
		w.Write([]byte("\n"))
		if strings.Contains(out.String(), "##[") || strings.ReplaceAll(out.String(), wordJoiner, "") != line+"\n" {
			t.Errorf("##[ at %d: escaped wrongly", at)
		}
	}
}

// Issue 23: no $ of a name reaches the Markdown source, so no math span
// ($…$, $$…$$, $`…`$) can open; the text still shows the dollar.
func TestMarkdownMath(t *testing.T) {
	for _, s := range []string{"$x^2$", "$$\\int$$", "$`\\sqrt{3}`$", "cost $5 and $6"} {
		got := Markdown(s)
		if strings.Contains(got, "$") {
			t.Errorf("Markdown(%q) = %q: holds a $", s, got)
		}
		// The word joiners (GitLab's $123 snippet references) are invisible.
		if text := strings.ReplaceAll(mdcheck.Text(mdcheck.HTML("x "+got+" y\n")), wordJoiner, ""); !strings.Contains(text, s) {
			t.Errorf("Markdown(%q) = %q renders as %q", s, got, text)
		}
	}
}
