package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/gpugate/gpugate/trace"
	"github.com/gpugate/gpugate/trace/ncu"
)

// isNCUFile reports whether path is an Nsight Compute result: a report
// (.ncu-rep, or the "NVR" magic) or a CSV page ncu exported.
func isNCUFile(path string) bool {
	if strings.EqualFold(filepath.Ext(path), ".ncu-rep") {
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	br := bufio.NewReader(f)
	if b, _ := br.Peek(4); string(b) == "NVR\x00" {
		return true
	}
	for range 64 { // ncu's "==PROF==" lines may come first
		line, err := br.ReadSlice('\n')
		if bytes.HasPrefix(line, []byte("==")) && err == nil {
			continue
		}
		return ncu.IsCSVHeader(bytes.TrimPrefix(line, []byte("\ufeff")))
	}
	return false
}

// ncuDoc is the JSON document of `gpugate analyze` on Nsight Compute
// results (docs/json.md).
type ncuDoc struct {
	NCU []*ncu.Report `json:"ncu"`
}

// analyzeNCU reads Nsight Compute results and prints one row per launch.
func analyzeNCU(ctx context.Context, stdout io.Writer, paths []string, format, cliFlag string) error {
	var reps []*ncu.Report
	cli := ""
	for _, path := range paths {
		var rep *ncu.Report
		var err error
		if isReport(path) {
			if cli == "" {
				cli, err = ncu.FindCLI(cliFlag)
				if err != nil {
					return &trace.SyntaxError{File: path, Msg: "an Nsight Compute report is read with the ncu CLI, but " + err.Error()}
				}
			}
			rep, err = ncu.ReadReport(ctx, cli, path)
		} else {
			rep, err = ncu.ReadCSVFile(path)
		}
		if err != nil {
			return fmt.Errorf("read ncu result %w", trace.WithPath(err, path))
		}
		reps = append(reps, rep)
	}
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(ncuDoc{NCU: reps})
	}
	for i, rep := range reps {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		writeNCUText(stdout, rep)
	}
	return nil
}

func isReport(path string) bool {
	if strings.EqualFold(filepath.Ext(path), ".ncu-rep") {
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [4]byte
	n, _ := io.ReadFull(f, b[:])
	return n == 4 && string(b[:]) == "NVR\x00"
}

func writeNCUText(w io.Writer, rep *ncu.Report) {
	head := []string{printable(rep.Path), sourceWords[rep.Source]}
	if rep.Writer != "" {
		head = append(head, "written by Nsight Compute "+printable(rep.Writer))
	}
	launches := "launches"
	if len(rep.Launches) == 1 {
		launches = "launch"
	}
	head = append(head, fmt.Sprintf("%d %s", len(rep.Launches), launches))
	fmt.Fprintln(w, strings.Join(head, " · "))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "id\tkernel\tgrid\tblock\tregs\tduration µs\tSM MHz\tSM %\tmem %\toccupancy %\ttheor. %\tlimiter")
	for _, l := range rep.Launches {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.ID, shorten(printable(ncu.FunctionName(l.Name)), 40),
			dim(l.Grid, l.GridSize), dim(l.Block, l.BlockSize), intOr(l.RegistersPerThread),
			floatOr(l.Duration, 1e-3, "%.2f"), floatOr(l.SMFrequency, 1e-6, "%.0f"),
			floatOr(l.SMThroughput, 1, "%.1f"), floatOr(l.MemoryThroughput, 1, "%.1f"),
			floatOr(l.AchievedOccupancy, 1, "%.1f"), floatOr(l.TheoreticalOccupancy, 1, "%.0f"), orDash(l.Limiter()))
	}
	tw.Flush()
	// The warnings of ncu's rules, the first of each rule per launch, one
	// line each and at most maxRuleLines; JSON has all of them.
	const maxRuleLines = 12
	shown, left := 0, 0
	for _, l := range rep.Launches {
		seen := map[string]bool{}
		for _, r := range l.Rules {
			if r.Type == "INF" || r.Type == "" || seen[r.Name] {
				continue
			}
			seen[r.Name] = true
			if shown == maxRuleLines {
				left++
				continue
			}
			shown++
			fmt.Fprintf(w, "%d %s: %s %s: %s\n", l.ID, shorten(printable(ncu.FunctionName(l.Name)), 40), printable(r.Type), printable(r.Name), shorten(printable(r.Message), 200))
		}
	}
	if left > 0 {
		fmt.Fprintf(w, "… %d more rule warnings (-format json lists them all)\n", left)
	}
	for _, msg := range rep.Warnings {
		fmt.Fprintf(w, "warning: %s\n", printable(msg))
	}
}

var sourceWords = map[string]string{"ncu-rep": "Nsight Compute report", "details-csv": "ncu details CSV", "raw-csv": "ncu raw CSV"}

func dim(d *ncu.Dim3, size *int64) string {
	switch {
	case d != nil && d.Y == 1 && d.Z == 1:
		return fmt.Sprint(d.X)
	case d != nil:
		return fmt.Sprintf("%d×%d×%d", d.X, d.Y, d.Z)
	case size != nil:
		return fmt.Sprint(*size)
	}
	return "-"
}

func intOr(v *int64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(*v)
}

func floatOr(v *float64, scale float64, format string) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(format, *v*scale)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// printable escapes what a terminal would act on: control characters
// (newlines, tabs that would break the table, ANSI escapes) and invalid
// UTF-8. Kernel names come from user code.
func printable(s string) string {
	ok := true
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsControl(r):
			if r < 0x100 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
