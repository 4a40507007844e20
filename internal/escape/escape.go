// Package escape makes hostile strings (trace names, device names, job
// output, workload names, file names) safe for each output gpugate writes,
// with one function per output:
//
//   - Terminal: text for a terminal or a log file; control characters,
//     ESC, invalid UTF-8 and invisible format characters are shown as
//     escapes (\n, \x1b, \u202e), so that a name stays on its line and
//     cannot move the cursor, recolour or rewrite what came before.
//   - CodeSpan and TableCode: a name as a Markdown code span that the name
//     cannot end: the fence is one backtick longer than the longest run of
//     backticks in the name, and newlines are shown as \n. Inside a code
//     span GitHub renders no HTML, links no @mention and no #123.
//   - Markdown: free text (a warning, a branch, a machine description) as
//     Markdown inline text: every ASCII punctuation character is
//     backslash-escaped (no HTML, no emphasis, no links, no "-->"), and a
//     word joiner follows every @ and every # before a digit, so that
//     GitHub links no mention and no issue.
//   - ActionsLine and NewActionsWriter: no line gpugate prints can start a
//     workflow command ("::cmd::", or "##[cmd]" anywhere in a line, which
//     the runner also parses); StopCommands pauses command processing
//     around echoed job output.
//   - FileCommand: a "name<<DELIMITER" entry for GITHUB_OUTPUT (and
//     GITHUB_ENV, GITHUB_STATE) with a random delimiter per value.
//
// Escapes are for people: they need not be reversible.
package escape

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// invisible reports whether r must be shown as an escape: C0 and C1
// controls, DEL, and the Unicode format characters that reorder or hide
// text (bidi overrides, zero-width characters, line and paragraph
// separators, the BOM).
func invisible(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// Terminal returns s with every control character, invalid byte and
// invisible format character written as a Go-style escape: newline as \n,
// ESC as \x1b, U+202E as \u202e.
func Terminal(s string) string {
	clean := true
	for i := 0; i < len(s) && clean; {
		r, n := utf8.DecodeRuneInString(s[i:])
		clean = !(r == utf8.RuneError && n == 1) && !invisible(r)
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && invisible(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case invisible(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// CodeSpan returns s as a Markdown code span that s cannot break, for
// running text. An empty s gives a span holding one space.
func CodeSpan(s string) string { return codeSpan(s, false) }

// TableCode is CodeSpan for a GitHub table cell: a | in s is escaped as
// \|, which the table splitter reads as part of the cell (even inside a
// code span) and drops the backslash of.
func TableCode(s string) string { return codeSpan(s, true) }

func codeSpan(s string, table bool) string {
	s = Terminal(s)
	// A code span shows "-->" as it is, but gpugate's comment marker is an
	// HTML comment: keep the terminator out of the body altogether.
	s = strings.ReplaceAll(s, "-->", `--\>`)
	if table {
		s = strings.ReplaceAll(s, "|", `\|`)
	}
	run, longest := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	// CommonMark strips one space from each end when both ends have one;
	// pad when s starts or ends with a backtick (it would join the fence)
	// or a space (it would be stripped).
	if s == "" || s[0] == '`' || s[len(s)-1] == '`' || s[0] == ' ' || s[len(s)-1] == ' ' {
		s = " " + s + " "
	}
	return fence + s + fence
}

// wordJoiner (U+2060) is invisible and not whitespace: after an @ or a #
// it stops GitHub's mention and reference autolinks without changing what
// a reader sees.
const wordJoiner = "\u2060"

// Markdown returns s as Markdown inline text that renders as s (with
// control characters shown as escapes) and nothing else: no HTML or
// entities, no emphasis, strikethrough, math, code, links or images, no
// table cell break, no "-->", no live @mention and no #123 reference, nor
// any of GitLab's references (!123, ~label, %milestone, $123, &123, ...). The
// characters that mean something inline are backslash-escaped, $ (math)
// is written as the reference &#36;; an @ or a #
// before a letter or digit gets a word joiner after it, and so do GitLab's
// reference prefixes ! ~ % $ & * [ ^ before a letter, digit or quote. s must not start a
// line (block syntax such as "- " is not escaped).
func Markdown(s string) string {
	s = Terminal(s)
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case (c == '@' || c == '#') && i+1 < len(s) && isAlnum(s[i+1]):
			b.WriteByte(c)
			b.WriteString(wordJoiner)
		case c == '$':
			// Math: GitHub renders $…$, $$…$$ and $`…`$ as math, and a
			// backslash does not always stop it (its docs advise
			// <span>$</span>). A character reference puts no $ in the
			// source at all, so no math delimiter can come from s, and it
			// renders as $.
			b.WriteString("&#36;")
		case strings.IndexByte("\\`*_[]<>&|~", c) >= 0:
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '!' || c == '%' || c == '^':
			b.WriteByte(c)
		default:
			b.WriteByte(c)
			continue
		}
		// GitLab links references in the rendered text, after Markdown
		// has consumed the backslashes: !123 (merge request), ~label and
		// ~"a label", %milestone, $123 (snippet), &123 (epic),
		// *iteration:1, [vulnerability:1], ^alert#1, besides @user and
		// #123. A word joiner between the prefix and what follows breaks
		// every one of them, as it does GitHub's; gitlab.md lists them.
		if i+1 < len(s) && (isAlnum(s[i+1]) || s[i+1] == '"') && strings.IndexByte("!~%$&*[^", c) >= 0 {
			b.WriteString(wordJoiner)
		}
	}
	return b.String()
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// ActionsLine returns a line of output that the Actions runner will not
// read as a workflow command: a leading "::" (after spaces, which the
// runner trims) and any "##[" get a word joiner inside them. The line must
// not hold a newline (pass it through Terminal first).
func ActionsLine(line string) string {
	t := strings.TrimLeftFunc(line, blank)
	if strings.HasPrefix(t, "::") {
		lead := len(line) - len(t)
		line = line[:lead] + ":" + wordJoiner + line[lead+1:]
	}
	if strings.Contains(line, "##[") {
		line = strings.ReplaceAll(line, "##[", "##"+wordJoiner+"[")
	}
	return line
}

// blank is what the runner may trim before looking for "::" (.NET's
// String.TrimStart trims white space), taken wide: white space, control
// and format characters.
func blank(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}

// Token returns a random hexadecimal string of 2n characters.
func Token(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand: Read panics instead)
	return hex.EncodeToString(b)
}

// FileCommand returns the entry that sets name to value in a GitHub
// Actions environment file (GITHUB_OUTPUT, GITHUB_ENV, GITHUB_STATE):
// "name<<DELIM\nvalue\nDELIM", with a random delimiter that value does not
// contain. go-githubactions v1.3.2 uses the fixed delimiter
// "_GitHubActionsFileCommandDelimeter_", so a value holding that line can
// add entries of its own. The name must be a non-empty single line
// without "<<" or "=".
func FileCommand(name, value string) (string, error) {
	if name == "" || strings.ContainsAny(name, "\r\n=") || strings.Contains(name, "<<") {
		return "", fmt.Errorf("file command name %q: want a single line without = or <<", name)
	}
	for range 4 {
		delim := "ghadelimiter_" + Token(16)
		if !strings.Contains(value, delim) && !strings.Contains(name, delim) {
			return name + "<<" + delim + "\n" + value + "\n" + delim, nil
		}
	}
	return "", errors.New("file command: no delimiter absent from the value")
}
