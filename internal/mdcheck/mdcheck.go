// Package mdcheck renders Markdown the way GitHub does (CommonMark with
// GFM tables and strikethrough, raw HTML passed through) with goldmark, for
// tests that check what a comment gpugate writes turns into: which HTML
// tags, which code spans, which text.
package mdcheck

import (
	"bytes"
	"html"
	"regexp"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"
)

var md = goldmark.New(
	goldmark.WithExtensions(extension.Table, extension.Strikethrough),
	goldmark.WithRendererOptions(gmhtml.WithUnsafe()), // GitHub keeps safe raw HTML; show all of it
)

// HTML renders Markdown.
func HTML(src string) string {
	var b bytes.Buffer
	if err := md.Convert([]byte(src), &b); err != nil {
		panic(err)
	}
	return b.String()
}

var (
	tagRE  = regexp.MustCompile(`<(/?)([A-Za-z][A-Za-z0-9-]*)[^>]*>|<!--`)
	codeRE = regexp.MustCompile(`(?s)<code>(.*?)</code>`)
)

// Tags counts the HTML tags (and comment openings, as "!--") in rendered
// HTML, by name; closing tags count under "/name".
func Tags(h string) map[string]int {
	m := map[string]int{}
	for _, t := range tagRE.FindAllStringSubmatch(h, -1) {
		if t[0] == "<!--" {
			m["!--"]++
			continue
		}
		m[t[1]+strings.ToLower(t[2])]++
	}
	return m
}

// Codes returns the text of every code span and code block.
func Codes(h string) []string {
	var out []string
	for _, m := range codeRE.FindAllStringSubmatch(h, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

// Text returns the text outside code spans and blocks, tags removed and
// entities decoded: what GitHub scans for @mentions and #references.
func Text(h string) string {
	h = codeRE.ReplaceAllString(h, " ")
	h = tagRE.ReplaceAllString(h, " ")
	return html.UnescapeString(h)
}

// mentionRE and refRE are what GitHub links: @user or @org/team, and #123,
// after the start or a character that is not a word character.
var (
	mentionRE = regexp.MustCompile(`(?:^|[^\w])@[A-Za-z0-9]`)
	refRE     = regexp.MustCompile(`(?:^|[^\w])#[0-9]`)
)

// gitlabRE is what GitLab links besides @mentions and #123, in rendered
// text (GitLab's reference filters run on the HTML's text, after Markdown
// consumed any backslash): !123 merge requests, ~label and ~"label",
// %milestone, $123 snippets, &123 epics, ^alert#1, *iteration:1,
// [vulnerability:1] and [work_item:1]. A project path may come before
// most of them (group/project!12), so any character may precede.
var gitlabRE = regexp.MustCompile(`[!~%$&^][A-Za-z0-9"]|\*iteration:|\[(?:vulnerability|work_item):|@[A-Za-z0-9]|#[0-9]`)

// LiveGitLab returns the first reference GitLab would link in text, or "".
func LiveGitLab(text string) string {
	return gitlabRE.FindString(text)
}

// Live returns the first live @mention or #reference in text, or "".
func Live(text string) string {
	if m := mentionRE.FindString(text); m != "" {
		return m
	}
	return refRE.FindString(text)
}
