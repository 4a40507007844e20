package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// groups are the first words of multi-word commands (baseline, config):
// "gpugate baseline" alone lists what follows.
func groups() map[string][]*command {
	g := map[string][]*command{}
	for _, c := range commands {
		if words := strings.Fields(c.name()); len(words) > 1 {
			g[words[0]] = append(g[words[0]], c)
		}
	}
	return g
}

// printGroup lists a command group's subcommands.
func printGroup(w io.Writer, name string, cs []*command) {
	cs = append([]*command(nil), cs...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].name() < cs[j].name() })
	fmt.Fprintf(w, "usage: gpugate %s <command> [arguments]\n\nCommands:\n\n", name)
	for _, c := range cs {
		fmt.Fprintf(w, "\t%-19s %s\n", c.name(), c.short)
	}
	fmt.Fprintf(w, "\nRun 'gpugate help %s <command>' for details.\n", name)
}

// unknownCommand reports a command line that names no command: a group
// asked for help (gpugate baseline -h) lists its subcommands on stdout and
// exits 0; a group alone (gpugate baseline) or with other flags is an
// incomplete command line: the list goes to stderr and the exit is 2, as
// for a bare gpugate; else the nearest command names are suggested. It
// returns the exit code.
func unknownCommand(args []string, stdout, stderr io.Writer) int {
	g := groups()
	if cs, ok := g[args[0]]; ok {
		if len(args) > 1 && isHelpFlag(args[1]) {
			printGroup(stdout, args[0], cs)
			return exitOK
		}
		if len(args) == 1 || strings.HasPrefix(args[1], "-") {
			printGroup(stderr, args[0], cs)
			return exitTrouble
		}
		name := args[0] + " " + args[1]
		fmt.Fprintf(stderr, "gpugate: unknown command %q%s\n\n", name, didYouMean(name, commandNames(), ""))
		printGroup(stderr, args[0], cs)
		return exitTrouble
	}
	var names []string
	for _, n := range commandNames() {
		names = append(names, strings.Fields(n)[0])
	}
	fmt.Fprintf(stderr, "gpugate: unknown command %q%s; run 'gpugate help'\n", args[0], didYouMean(args[0], names, ""))
	return exitTrouble
}

func isHelpFlag(s string) bool {
	return s == "-h" || s == "-help" || s == "--help" || s == "--h"
}

func commandNames() []string {
	var out []string
	for _, c := range commands {
		out = append(out, c.name())
	}
	return out
}

// flagHint adds a suggestion to the flag package's "flag provided but not
// defined: -confg" error.
func flagHint(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	bad, ok := strings.CutPrefix(msg, "flag provided but not defined: ")
	if !ok {
		return ""
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return didYouMean(strings.TrimLeft(bad, "-"), names, "-")
}

// didYouMean is " (did you mean X?)" for the candidates nearest to s (edit
// distance at most a third of its length, at least 1, or a prefix), or "".
func didYouMean(s string, candidates []string, prefix string) string {
	best, bestD := []string(nil), 1<<30
	seen := map[string]bool{}
	for _, c := range candidates {
		if seen[c] || c == s {
			continue
		}
		seen[c] = true
		d := editDistance(s, c)
		if len(s) >= 3 && strings.HasPrefix(c, s) {
			d = min(d, 1)
		}
		if d > max(1, len(s)/3) {
			continue
		}
		if d < bestD {
			best, bestD = nil, d
		}
		if d == bestD {
			best = append(best, prefix+c)
		}
	}
	if len(best) == 0 {
		return ""
	}
	sort.Strings(best)
	return " (did you mean " + orList(best) + "?)"
}

// editDistance is the Levenshtein distance of a and b, in bytes (command
// and flag names are ASCII). Hand-written: a dozen lines, no dependency.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
