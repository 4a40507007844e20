package ncu

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gpugate/gpugate/internal/bounded"
)

// DefaultSections are what a deep-dive collects: the Speed Of Light
// throughputs and duration, the launch configuration and occupancy (ncu's
// "default" set: a few passes per kernel, about 45 metrics).
var DefaultSections = []string{"SpeedOfLight", "LaunchStats", "Occupancy"}

// DeepDive describes ncu runs of a job on the kernels that regressed.
type DeepDive struct {
	// NCU is the ncu binary.
	NCU string
	// Sections are ncu section identifiers; DefaultSections when empty.
	Sections []string
	// ClockControl is ncu's --clock-control: "" keeps ncu's default
	// (clocks locked to base, comparable between runs), "none" leaves
	// them alone (where locking them is not allowed).
	ClockControl string
	// OutDir receives the reports, named by position (ncu-1.ncu-rep, …),
	// never by kernel name.
	OutDir string
	// Command is the job's command line; Command[0] must not start with
	// "-" (ncu takes no "--" before the application).
	Command []string
}

// Target is one kernel to profile.
type Target struct {
	// Name is the kernel's name as the trace has it (demangled, with
	// parameters and templates, or a plain cuBLAS name).
	Name string
	// Skip is how many launches of this kernel to skip before profiling
	// one: the warm-up steps times its launches per step.
	Skip int
}

// Invocation is one ncu command line of a deep-dive.
type Invocation struct {
	Kernel   string   // the Target's name
	Function string   // the function name ncu matches (--kernel-name-base function)
	Args     []string // argv, Args[0] is the ncu binary
	Report   string   // the .ncu-rep file it writes
}

var sectionRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// Invocations returns one ncu command line per target. Each profiles one
// launch (--launch-count 1) of one kernel after skipping its warm-up
// launches (--launch-skip). The targets get one run each because ncu counts
// --launch-skip and --launch-count over all launches that match the filter,
// not per kernel: one run with all names in one regex would profile
// whichever matched first.
//
// ncu matches on the kernel's function name (--kernel-name-base function:
// no namespace, template arguments or parameters), because demangled names
// are spelled differently by each tool ("(anonymous namespace)" in
// Kineto, "<unnamed>" in ncu; "4" against "(int)4"). The name is
// regex-quoted and anchored, so a kernel named "a.b" matches only itself;
// instantiations of one template share a function name and are not told
// apart.
func (d *DeepDive) Invocations(targets []Target) ([]Invocation, error) {
	if d.NCU == "" {
		return nil, errors.New("deep-dive: no ncu binary")
	}
	if d.OutDir == "" {
		return nil, errors.New("deep-dive: no output folder")
	}
	if len(d.Command) == 0 || d.Command[0] == "" {
		return nil, errors.New("deep-dive: no job command")
	}
	if strings.HasPrefix(d.Command[0], "-") {
		return nil, fmt.Errorf("deep-dive: job command %q starts with '-', which ncu would take for an option", d.Command[0])
	}
	sections := d.Sections
	if len(sections) == 0 {
		sections = DefaultSections
	}
	for _, s := range sections {
		if !sectionRE.MatchString(s) {
			return nil, fmt.Errorf("deep-dive: section %q is not an ncu section identifier (letters, digits, _)", s)
		}
	}
	if d.ClockControl != "" && d.ClockControl != "base" && d.ClockControl != "none" {
		return nil, fmt.Errorf("deep-dive: clock control %q: want base or none", d.ClockControl)
	}
	var out []Invocation
	for i, t := range targets {
		fn := FunctionName(t.Name)
		if fn == "" {
			return nil, fmt.Errorf("deep-dive: kernel %q has no function name", t.Name)
		}
		if t.Skip < 0 {
			return nil, fmt.Errorf("deep-dive: kernel %q: launch skip %d < 0", t.Name, t.Skip)
		}
		base := filepath.Join(d.OutDir, fmt.Sprintf("ncu-%d", i+1))
		args := []string{d.NCU,
			"--target-processes", "all",
			"--kernel-name-base", "function",
			"--kernel-name", "regex:^" + regexp.QuoteMeta(fn) + "$",
			"--launch-skip", strconv.Itoa(t.Skip),
			"--launch-count", "1",
		}
		for _, s := range sections {
			args = append(args, "--section", s)
		}
		if d.ClockControl != "" {
			args = append(args, "--clock-control", d.ClockControl)
		}
		args = append(args, "--export", base, "--force-overwrite")
		args = append(args, d.Command...)
		out = append(out, Invocation{Kernel: t.Name, Function: fn, Args: args, Report: base + ".ncu-rep"})
	}
	return out, nil
}

// FunctionName returns the function name of a demangled kernel name, as
// ncu's --kernel-name-base function has it: without return type,
// namespaces, template arguments and parameters.
//
//	void at::native::(anonymous namespace)::vectorized_elementwise_kernel<4, F>(int, F) → vectorized_elementwise_kernel
//	ampere_sgemm_128x64_nn → ampere_sgemm_128x64_nn
func FunctionName(name string) string {
	s := strings.TrimSpace(name)
	// Parameters, then template arguments, both balanced from the end.
	if strings.HasSuffix(s, ")") {
		if i := openingAt(s, '(', ')'); i > 0 {
			s = strings.TrimSpace(s[:i])
		}
	}
	if strings.HasSuffix(s, ">") {
		if i := openingAt(s, '<', '>'); i > 0 {
			s = strings.TrimSpace(s[:i])
		}
	}
	// The last top-level word is the qualified name; its last top-level
	// "::" part is the function.
	depth := 0
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '<', '[':
			depth++
		case ')', '>', ']':
			if depth > 0 {
				depth--
			}
		case ' ':
			if depth == 0 {
				start = i + 1
			}
		case ':':
			if depth == 0 && i+1 < len(s) && s[i+1] == ':' {
				start = i + 2
				i++
			}
		}
	}
	return s[start:]
}

// openingAt returns the index of the bracket that opens the group closing
// at the end of s, or -1.
func openingAt(s string, open, close byte) int {
	depth := 0
	for i := len(s) - 1; i >= 0; i-- {
		switch s[i] {
		case close:
			depth++
		case open:
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// Availability says whether ncu can profile on this machine.
type Availability struct {
	OK   bool
	NCU  string // the binary, when found
	Note string // why not, for the report: "no GPU here (ncu: Driver could not be loaded)"
}

// Probe checks whether ncu can profile here: it finds the CLI (explicit,
// PATH, KnownPaths) and asks it for the device's metrics (ncu
// --query-metrics), which needs the NVIDIA driver and a supported GPU.
// That is necessary, not sufficient: a sandbox can refuse the counters at
// profile time, which the deep-dive then reports as a failed run.
func Probe(ctx context.Context, explicit string) Availability {
	ncu, err := FindCLI(explicit)
	if err != nil {
		return Availability{Note: "deep-dive skipped: " + err.Error()}
	}
	// ncu prints its errors on stdout: keep the head of both. A list of
	// metrics longer than the cap is a working ncu (bounded stops it).
	res, err := bounded.Run(ctx, bounded.Options{Limit: 2 * time.Minute, MaxOutput: 16 << 10, Stderr: true}, ncu, "--query-metrics")
	if err != nil && !errors.Is(err, bounded.ErrTruncated) {
		msg := lastMessage(string(res.Out))
		if strings.Contains(msg, "Driver could not be loaded") || strings.Contains(msg, "No supported devices") || strings.Contains(msg, "no device") {
			return Availability{NCU: ncu, Note: "deep-dive skipped: no NVIDIA GPU or driver here (ncu --query-metrics: " + msg + ")"}
		}
		return Availability{NCU: ncu, Note: fmt.Sprintf("deep-dive skipped: ncu cannot profile here (ncu --query-metrics: %v: %s)", err, msg)}
	}
	return Availability{OK: true, NCU: ncu}
}
