package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/gpugate/gpugate/ci"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/runner"
	"github.com/gpugate/gpugate/stats"
)

// signals are what stops gpugate: Ctrl-C, and SIGTERM and SIGHUP, which a
// CI runner sends on cancel, and SIGPIPE, when what reads gpugate's output
// has gone (`gpugate ab … | head -2`; without Notify, Go's runtime would
// end gpugate at that write, before any clean-up). Each cancels the job
// (its process group and what it left behind are killed, ab's worktrees
// removed) and gpugate exits 2.
var signals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE}

// stopGrace bounds the time from a signal to the exit: the job's kill
// grace and the clean-up after it.
const stopGrace = 20 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), signals...)
	go func() {
		<-ctx.Done()
		time.Sleep(stopGrace)
		fmt.Fprintln(os.Stderr, "gpugate: stopped by a signal; gave up waiting for the clean-up")
		os.Exit(exitTrouble)
	}()
	var stdout, stderr io.Writer = os.Stdout, os.Stderr
	if ci.Detect(os.Getenv).CI == ci.GitHub {
		// No line gpugate prints can start a workflow command, whatever
		// names it holds; gpugate's own commands go to escape.Raw.
		aout, aerr := escape.NewActionsWriter(os.Stdout), escape.NewActionsWriter(os.Stderr)
		stdout, stderr = aout, aerr
	}
	code := gpugate(ctx, os.Args[1:], stdout, stderr)
	if ctx.Err() != nil && code == exitOK {
		code = exitTrouble
	}
	stop()
	if a, ok := stdout.(*escape.ActionsWriter); ok {
		a.Flush()
		stderr.(*escape.ActionsWriter).Flush()
	}
	os.Exit(code)
}

// Exit codes follow diff(1).
const (
	exitOK         = 0
	exitRegression = 1
	exitTrouble    = 2
	// exitInconclusive: the data could not decide (issue 19); before, it
	// shared 2 with trouble.
	exitInconclusive = 3
)

// exitStatusHelp is what every command's help says about its exit status.
const exitStatusHelp = "Exit status: 0 pass, improvement, accepted, or no baseline; 1 regression; " +
	"2 trouble (bad input or config, the job failed, a fingerprint mismatch); 3 inconclusive (the runs could not decide)."

// verdictError maps a verdict to a command's result, through
// gate.ExitCode, the one mapping: nil for exit 0, an exitError for a
// regression, one with a message for exit 3, an error saying why for
// exit 2.
func verdictError(v stats.Verdict, noBaselineFails bool) error {
	switch gate.ExitCode(v, noBaselineFails) {
	case exitOK:
		return nil
	case exitRegression:
		return &exitError{code: exitRegression}
	case exitInconclusive:
		return &exitError{code: exitInconclusive, msg: "inconclusive: a gate metric could not be judged; the report says what would settle it"}
	}
	switch v {
	case stats.NoBaseline:
		return errors.New("no baseline to compare with, and a missing baseline is configured to fail")
	}
	return fmt.Errorf("verdict %q", v)
}

// command is one entry of the command table.
type command struct {
	usage string // "analyze [-format text|json] TRACE..."; the name is the words before the first flag
	short string // one line for `gpugate help`
	long  string // full help, in sentences
	flags func(fs *flag.FlagSet) func(ctx context.Context, stdout, stderr io.Writer, args []string) error
}

func (c *command) name() string {
	var words []string
	for _, w := range strings.Fields(c.usage) {
		if strings.HasPrefix(w, "[") || strings.HasPrefix(w, "-") || strings.ToUpper(w) == w {
			break
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

var commands []*command

func init() {
	commands = []*command{analyzeCmd, compareCmd, runCmd, configCheckCmd, versionCmd, actionCmd,
		baselineRefreshCmd, baselineRecordCmd, baselineListCmd, baselineShowCmd, baselineExportCmd, baselineImportCmd, baselinePruneCmd, cacheKeyCmd, abCmd, ciCmd,
		dashboardCmd}
}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// exitError carries an exit code, and a message to print when it has
// one (inconclusive); a regression has none.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return fmt.Sprintf("exit %d", e.code)
}

// gpugate runs one command line and returns the exit code.
func gpugate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		// No command: the usage goes to stderr and the exit is 2, as for
		// go(1) alone; only help asked for is a success.
		help(nil, stderr, stderr)
		return exitTrouble
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		return help(args, stdout, stderr)
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = []string{"version"}
	}
	cmd, rest := lookup(args)
	if cmd == nil {
		return unknownCommand(args, stdout, stderr) // cli.go
	}
	fs := flag.NewFlagSet("gpugate "+cmd.name(), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	run := cmd.flags(fs)
	dbFile := dbFileFlag(fs)
	if err := fs.Parse(interleave(fs, rest)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(stdout, cmd, fs)
			return exitOK
		}
		fmt.Fprintf(stderr, "gpugate %s: %v%s\nusage: gpugate %s\n", cmd.name(), escape.Terminal(err.Error()), flagHint(fs, err), cmd.usage)
		return exitTrouble
	}
	err := applyDBFile(fs, dbFile)
	df := ""
	if dbFile != nil {
		df = *dbFile
	}
	runner.SetHidden(credentialFiles(df, os.Getenv))
	// A store location from -db-file or $GPUGATE_DB is not to be named
	// where the job can read it (runner.SetStoreSecret).
	runner.SetStoreSecret(df != "" || os.Getenv("GPUGATE_DB") != "")
	if err == nil {
		err = run(ctx, stdout, stderr, fs.Args())
	}
	var ee *exitError
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintf(stderr, "gpugate: %s\n", escape.Terminal(oneLine(ee.msg)))
		}
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "gpugate %s: %v\nusage: gpugate %s\n", cmd.name(), escape.Terminal(err.Error()), cmd.usage)
		return exitTrouble
	}
	fmt.Fprintf(stderr, "gpugate: %v\n", escape.Terminal(oneLine(err.Error())))
	return exitTrouble
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.ReplaceAll(s, "\n", "; ")
}

// lookup finds the longest command name that prefixes args.
func lookup(args []string) (*command, []string) {
	var best *command
	bestN := 0
	for _, c := range commands {
		words := strings.Fields(c.name())
		if len(words) > len(args) || len(words) <= bestN {
			continue
		}
		match := true
		for i, w := range words {
			if args[i] != w {
				match = false
				break
			}
		}
		if match {
			best, bestN = c, len(words)
		}
	}
	if best == nil {
		return nil, nil
	}
	return best, args[bestN:]
}

func help(args []string, stdout, stderr io.Writer) int {
	if len(args) > 1 {
		cmd, _ := lookup(args[1:])
		if cs, ok := groups()[args[1]]; cmd == nil && ok && len(args) == 2 {
			printGroup(stdout, args[1], cs)
			return exitOK
		}
		if cmd == nil {
			fmt.Fprintf(stderr, "gpugate help: unknown command %q%s\n", strings.Join(args[1:], " "), didYouMean(strings.Join(args[1:], " "), commandNames(), ""))
			return exitTrouble
		}
		fs := flag.NewFlagSet(cmd.name(), flag.ContinueOnError)
		cmd.flags(fs)
		dbFileFlag(fs)
		printHelp(stdout, cmd, fs)
		return exitOK
	}
	fmt.Fprint(stdout, "gpugate is a performance regression gate for GPU training jobs.\n\nUsage:\n\n\tgpugate <command> [arguments]\n\nCommands:\n\n")
	cs := append([]*command(nil), commands...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].name() < cs[j].name() })
	for _, c := range cs {
		fmt.Fprintf(stdout, "\t%-18s %s\n", c.name(), c.short)
	}
	fmt.Fprint(stdout, "\nFlags may come before or after the arguments; -- ends the flags.\n"+exitStatusHelp+"\nRun 'gpugate help <command>' for details.\n")
	return exitOK
}

func printHelp(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: gpugate %s\n\n%s\n", c.usage, strings.TrimSpace(c.long))
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprint(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
}

// interleave moves the flags of args in front of the other arguments, so
// that flags may follow file arguments (gpugate analyze t.json -format json)
// as they may in most tools; the standard flag package stops at the first
// argument that is not a flag. "--" ends the flags: everything after it is
// an argument. "-" alone is an argument (standard input). A flag that takes
// a value takes the next argument with it unless written -name=value;
// boolean flags never take the next argument. Unknown flags stay in place
// for fs.Parse to report.
func interleave(fs *flag.FlagSet, args []string) []string {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			rest = append(rest, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	return append(append(flags, "--"), rest...)
}

// formatValue is a -format flag that accepts only the formats its command
// writes, so that a typo is an error (exit 2) on every command instead of
// a silent fallback to text.
type formatValue struct {
	v       string
	allowed []string
}

func (f *formatValue) String() string { return f.v }
func (f *formatValue) Set(v string) error {
	for _, a := range f.allowed {
		if v == a {
			f.v = v
			return nil
		}
	}
	return fmt.Errorf("want %s, not %q", orList(f.allowed), v)
}

func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// formatFlag defines -format with the allowed values, the first being the
// default.
func formatFlag(fs *flag.FlagSet, allowed ...string) *string {
	f := &formatValue{v: allowed[0], allowed: allowed}
	fs.Var(f, "format", "output `format`: "+orList(allowed))
	return &f.v
}

// Version is set at build time by scripts/release.sh with
// -ldflags "-X main.Version=v1.2.3"; it wins over the build information.
var Version = ""

// version is the release this binary was built from: the -ldflags value,
// else the main module's version that the go command records — the
// version given to go install …@v0.x.y, or, since Go 1.24, the tag of a
// clean checkout that go build or go install ./cmd/gpugate ran in (a
// pseudo-version with +dirty for modified trees) — else "devel" with the
// commit when the build recorded one.
func version() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return buildVersion(bi)
}

func buildVersion(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "devel"
	}
	v := "devel " + short(rev)
	if modified == "true" {
		v += "+dirty"
	}
	return v
}

var versionCmd = &command{
	usage: "version",
	short: "print gpugate's version",
	long:  "Version prints the version of this gpugate binary.",
	flags: func(fs *flag.FlagSet) func(context.Context, io.Writer, io.Writer, []string) error {
		return func(_ context.Context, stdout, _ io.Writer, args []string) error {
			fmt.Fprintf(stdout, "gpugate %s\n", version())
			return nil
		}
	},
}
