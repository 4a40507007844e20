package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// The command line follows the usual conventions: a command group alone
// lists its subcommands, --version works, and a typo gets a suggestion.
func TestCLIConventions(t *testing.T) {
	demo := filepath.Join(repoRoot(t), "examples", "demo", "perf.yaml")
	for _, tc := range []struct {
		args          []string
		code          int
		stdout, stder string
	}{
		// An incomplete command line is trouble (exit 2, usage on stderr),
		// as for go(1) alone; help asked for is not.
		{nil, 2, "", "Usage:"},
		{[]string{"baseline"}, 2, "", "baseline list "},
		{[]string{"config"}, 2, "", "config check "},
		{[]string{"baseline", "-format", "json"}, 2, "", "baseline list "},
		{[]string{"help"}, 0, "Usage:", ""},
		{[]string{"-h"}, 0, "Usage:", ""},
		{[]string{"baseline", "-h"}, 0, "baseline list ", ""},
		{[]string{"baseline", "--help"}, 0, "baseline list ", ""},
		{[]string{"help", "baseline"}, 0, "baseline refresh ", ""},
		{[]string{"--version"}, 0, "gpugate ", ""},
		{[]string{"-version"}, 0, "gpugate ", ""},
		{[]string{"baselin"}, 2, "", `unknown command "baselin" (did you mean baseline?)`},
		{[]string{"baseline", "lst"}, 2, "", `unknown command "baseline lst" (did you mean baseline list?)`},
		{[]string{"compar", "a", "b"}, 2, "", "(did you mean compare?)"},
		{[]string{"run", "-confg", "perf.yaml"}, 2, "", "flag provided but not defined: -confg (did you mean -config?)"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"; run 'gpugate help'`},
		{[]string{"config", "check", "-config", demo}, 0, "ok, 1 workload(s)", ""},
		{[]string{"config", "check", demo}, 0, "ok, 1 workload(s)", ""},
	} {
		var out, errb bytes.Buffer
		code := gpugate(context.Background(), tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errb.String(), tc.stder) {
			t.Errorf("gpugate %q: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
				tc.args, code, out.String(), errb.String(), tc.code, tc.stdout, tc.stder)
		}
	}
}

func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct{ s, want string }{
		{"conifg", " (did you mean -config?)"},
		{"x", ""},
		{"record", " (did you mean -record-baseline?)"}, // a prefix
		{"zzzzzzzz", ""},
	} {
		if got := didYouMean(tc.s, []string{"config", "record-baseline", "db", "out"}, "-"); got != tc.want {
			t.Errorf("didYouMean(%q) = %q, want %q", tc.s, got, tc.want)
		}
	}
}
