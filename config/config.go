// Package config reads perf.yaml, the description of the workloads gpugate
// runs and gates. Decoding is strict: an unknown key, a value of the wrong
// type or a missing command is an error that names file:line:column.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gpugate/gpugate/analysis"
)

// Version is the perf.yaml version this gpugate reads.
const Version = 1

// Config is a perf.yaml file.
type Config struct {
	Version    int                `yaml:"version"`
	Workloads  []Workload         `yaml:"workloads"`
	Allowances map[string]Percent `yaml:"allowances"`
	Baseline   Baseline           `yaml:"baseline"`
	AB         AB                 `yaml:"ab"`
	// Gate lists the metrics whose regression fails the gate; the others
	// explain it. Empty: step_time, kernels, cpu_wait, sync_calls, peak_memory. The
	// names are checked against the metrics gpugate computes by the
	// command that uses them (config knows no metrics).
	Gate []string `yaml:"gate"`
	// MemoryMinChange is the smallest change of a memory metric
	// (peak_memory, peak_reserved, rss, alloc_growth) that counts, beside
	// its relative allowance: "64MiB" (the default), "1GiB", "512MB" or
	// bytes.
	MemoryMinChange *Bytes `yaml:"memory_min_change"`
	// Host bounds how busy the host may be during a run before the run is
	// disturbed and left out of the time metrics (docs/verdicts.md).
	Host Host `yaml:"host"`

	root *yaml.Node // the document, for Position

	// File is where the config was read from; relative paths in it are
	// relative to its folder.
	File string `yaml:"-"`
}

// Workload is one training job to profile.
type Workload struct {
	Name string `yaml:"name"`
	// Command is an argv list, or a string run by /bin/sh -c.
	Command Command           `yaml:"command"`
	Workdir string            `yaml:"workdir"`
	Env     map[string]string `yaml:"env"`
	Timeout Duration          `yaml:"timeout"`
	// Profiler is nsys, torch, none or auto (nsys when it is installed and
	// a GPU is present, else torch).
	Profiler     string `yaml:"profiler"`
	WarmupSteps  int    `yaml:"warmup_steps"`
	MeasureSteps int    `yaml:"measure_steps"`
	StepPattern  string `yaml:"step_pattern"`
	// DataPattern names data-loader ranges (NVTX or Kineto).
	DataPattern string `yaml:"data_pattern"`
	// CommPattern names communication kernels; it replaces the default
	// table (docs/metrics.md).
	CommPattern string `yaml:"comm_pattern"`
	// Repeat is how many candidate runs gpugate run makes, or RepeatAuto
	// (repeat: auto): runs one at a time until the verdict is decided,
	// within MaxRuns and Budget.
	Repeat Repeat `yaml:"repeat"`
	// MaxRuns bounds repeat: auto (default DefaultMaxRuns).
	MaxRuns int `yaml:"max_runs"`
	// Budget bounds the wall time of repeat: auto (default 10m).
	Budget Duration `yaml:"budget"`
	// StepLog is a regular expression with one group, the step time in
	// ms, matched against the job's output in an unprofiled timing pass
	// (profiler: none).
	StepLog string `yaml:"step_log"`
	// ProfilerTiming judges step time on the profiled runs, as gpugate
	// did before timing runs (docs/verdicts.md §5d): no timing runs are
	// made. Off by default: step time comes from timing runs, the same
	// job without a profiler, its steps timed by gpugate's step hook.
	ProfilerTiming bool `yaml:"profiler_timing"`
	Nsys           Nsys `yaml:"nsys"`
	// DeepDive, when set, reruns the job under Nsight Compute on the
	// kernels that regressed (opt-in).
	DeepDive *DeepDive `yaml:"deep_dive"`
	// SamplesPerStep and TokensPerStep, when set, are what one step of one
	// process consumes: samples/s and tokens/s per step are reported beside
	// step time (derived from it, so they do not gate).
	SamplesPerStep float64 `yaml:"samples_per_step"`
	TokensPerStep  float64 `yaml:"tokens_per_step"`
	// FLOPs makes torch.profiler record operator shapes (and flops), so
	// that FLOPs, TFLOP/s and MFU per step are reported; opt-in, as
	// recording shapes costs profiler overhead.
	FLOPs bool `yaml:"flops"`
	// MFUDtype is the dtype whose datasheet peak MFU is measured against:
	// fp32, tf32, bf16 (the default), fp16 or fp8.
	MFUDtype string `yaml:"mfu_dtype"`
	// Slurm, when set, runs the command as the tasks of one Slurm job
	// step across nodes (docs/slurm.md).
	Slurm *Slurm `yaml:"slurm"`
	// Network is host (the default: the machine's network) or none: a
	// network namespace of the job's own, loopback only, with the
	// machine's Unix sockets covered (docs/security.md).
	Network string `yaml:"network"`

	line, col         int             // where the workload starts, for errors
	nameLine, nameCol int             // where its name is
	set               map[string]bool // keys present in the file
}

// DeepDive configures the Nsight Compute deep-dive after a regression:
//
//	deep_dive: {tool: ncu, kernels: 3, sections: [SpeedOfLight, LaunchStats, Occupancy]}
type DeepDive struct {
	Tool string `yaml:"tool"` // ncu, the only one
	// Kernels is how many of the most regressed kernels to profile, one
	// ncu run each; default 3, at most MaxDeepDiveKernels.
	Kernels int `yaml:"kernels"`
	// Sections are ncu section identifiers; empty means ncu.DefaultSections.
	Sections []string `yaml:"sections"`
	// ClockControl is ncu's --clock-control: base (ncu's default) or none.
	ClockControl string `yaml:"clock_control"`

	line, col int
}

// MaxDeepDiveKernels bounds deep_dive.kernels: each kernel is one more run
// of the job under ncu.
const MaxDeepDiveKernels = 10

var sectionRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// Nsys configures the Nsight Systems backend.
type Nsys struct {
	Trace     string   `yaml:"trace"`      // --trace, default cuda,nvtx,osrt
	ExtraArgs []string `yaml:"extra_args"` // added to nsys profile
}

// Baseline configures the baseline store.
type Baseline struct {
	DB     string   `yaml:"db"`      // default .gpugate/baseline.db
	Branch string   `yaml:"branch"`  // base branch, default main
	Runs   int      `yaml:"runs"`    // baseline runs pooled, default 5
	MaxAge Duration `yaml:"max_age"` // older baselines are flagged as stale
	// Lenient makes a fingerprint that matches no baseline "inconclusive"
	// (exit 2 all the same, but with a report) instead of an error.
	Lenient bool `yaml:"lenient"`
	// OnMissing is what a run with no baseline to compare with does:
	// "pass" (the default: verdict no-baseline, exit 0, with a warning)
	// or "fail" (exit 2).
	OnMissing string `yaml:"on_missing"`
	// WaitQuiet is how long a recording (baseline refresh, run
	// -record-baseline) whose every run was disturbed may wait for a
	// quiet host and run again, counted from its first run's start; 0:
	// it records the disturbed runs at once (exit 3).
	WaitQuiet Duration `yaml:"wait_quiet"`

	set map[string]bool // keys present in the file
}

// AB configures gpugate ab, which runs the base and the head commit
// interleaved on one machine.
type AB struct {
	// Pairs, when set, is a fixed number of base/head pairs, judged once;
	// unset, ab samples until decided within MaxPairs and Budget.
	Pairs int `yaml:"pairs"`
	// MaxPairs bounds sequential sampling (default 10).
	MaxPairs int `yaml:"max_pairs"`
	// Budget bounds its wall time (default 10m).
	Budget Duration `yaml:"budget"`
	// Warmup runs one more pair first and discards it.
	Warmup bool `yaml:"warmup"`
	// Setup runs once on each side before its first run, in that side's
	// checkout (e.g. pip install -e .).
	Setup struct {
		Base Command `yaml:"base"`
		Head Command `yaml:"head"`
	} `yaml:"setup"`
}

// Host bounds how busy the host may be during a run (shares written as
// "25%" or 0.25; nil: gpugate's default; 100% turns a test off).
type Host struct {
	// OtherCPU: the share of the host's CPUs that processes outside the
	// job used (default 25%).
	OtherCPU *Percent `yaml:"other_cpu"`
	// CPUPressure: the share of the run during which runnable tasks
	// waited for a CPU (PSI some), counted while other processes used at
	// least PressureOther of the CPUs (defaults 20% and 10%).
	CPUPressure   *Percent `yaml:"cpu_pressure"`
	PressureOther *Percent `yaml:"pressure_other_cpu"`
	// Steal: the share of CPU time the hypervisor took (default 10%).
	Steal *Percent `yaml:"steal"`
	// Throttled: the share of the cgroup's quota periods throttled
	// (default 10%).
	Throttled *Percent `yaml:"cpu_throttled"`
	// ContentionMargin: the slowdown beside other work that the job's
	// measured run-queue wait leaves unexplained, a share of the quiet
	// step (default 60%, measured on the development VM; more on hosts
	// with SMT siblings); the contention rule judges disturbed candidate
	// runs with it (docs/verdicts.md §5c).
	ContentionMargin *Percent `yaml:"contention_margin"`
}

// Command is an argv, or a shell string.
type Command struct {
	Argv  []string
	Shell string
}

// Args returns the argv to run.
func (c Command) Args() []string {
	if c.Shell != "" {
		return []string{"/bin/sh", "-c", c.Shell}
	}
	return c.Argv
}

func (c Command) String() string {
	if c.Shell != "" {
		return c.Shell
	}
	return strings.Join(c.Argv, " ")
}

// UnmarshalYAML accepts a string or a list of strings.
func (c *Command) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		c.Shell = n.Value
		return nil
	case yaml.SequenceNode:
		return n.Decode(&c.Argv)
	}
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: command must be a string or a list of strings", n.Line)}}
}

// Repeat is a number of runs, or RepeatAuto.
type Repeat int

// RepeatAuto is repeat: auto (a value no count written in perf.yaml
// becomes: see UnmarshalYAML).
const RepeatAuto Repeat = math.MinInt32

// DefaultMaxRuns is the most runs repeat: auto makes.
const DefaultMaxRuns = 5

// UnmarshalYAML parses a count or "auto".
func (r *Repeat) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Value == "auto" {
		*r = RepeatAuto
		return nil
	}
	var v int
	if err := n.Decode(&v); err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: repeat is a number of runs or auto, not %q", n.Line, n.Value)}}
	}
	if v <= int(RepeatAuto) {
		v = 0 // out of range, not auto: refused as below 1
	}
	*r = Repeat(v)
	return nil
}

// Auto reports repeat: auto.
func (r Repeat) Auto() bool { return r == RepeatAuto }

// Duration is a time.Duration written as "90s" or "10m".
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q is not a duration such as 90s or 10m", n.Line, n.Value)}}
	}
	*d = Duration(v)
	return nil
}

// Percent is a fraction written as "15%" or 0.15.
type Percent float64

// UnmarshalYAML parses "15%" or a plain fraction (ParsePercent).
func (p *Percent) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParsePercent(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %v", n.Line, err)}}
	}
	*p = Percent(v)
	return nil
}

// ParsePercent reads an allowance the one way gpugate reads them
// everywhere (perf.yaml, -allowance, action inputs): "15%" and "0.15" both
// mean 15%. A bare number above 1 is an error, since 15 could mean 15% or
// 1500%; NaN, infinities and negative values are errors.
func ParsePercent(s string) (float64, error) {
	s = strings.TrimSpace(s)
	num, pct := strings.CutSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	switch {
	case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
		return 0, fmt.Errorf("%q is not a percentage such as 15%% or 0.15", s)
	case v < 0:
		return 0, fmt.Errorf("%q: an allowance cannot be negative", s)
	case pct:
		return v / 100, nil
	case v > 1:
		return 0, fmt.Errorf("%q is a bare number above 1: write %s%% for %s percent, or a fraction such as 0.15 for 15%%", s, num, num)
	}
	return v, nil
}

// Error is a config error at a position.
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Errors is every problem found in a file.
type Errors []*Error

func (es Errors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

var lineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// Load reads and validates the config at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// Parse decodes and validates a config; name is used in errors.
func Parse(data []byte, name string) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlErrors(name, err, nil)
	}
	if len(root.Content) == 0 {
		return nil, &Error{File: name, Msg: "empty config: want version: 1 and a workloads list"}
	}
	doc := root.Content[0]
	keyErrs := allowanceKeys(name, doc)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c Config
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		if len(keyErrs) > 0 {
			return nil, append(keyErrs, yamlErrors(name, err, &root).(Errors)...)
		}
		return nil, yamlErrors(name, err, &root)
	}
	c.File = name
	c.root = &root
	// Lines of the workloads, for validation messages, and which keys are
	// present: an explicit 0 (warmup_steps: 0) is kept, only an absent key
	// takes the default.
	errs := keyErrs
	for i := 0; i+1 < len(doc.Content); i += 2 {
		key, val := doc.Content[i], doc.Content[i+1]
		switch {
		case key.Value == "workloads" && val.Kind == yaml.SequenceNode:
			for j, w := range val.Content {
				if j < len(c.Workloads) {
					c.Workloads[j].line, c.Workloads[j].col = w.Line, w.Column
					c.Workloads[j].set = keysOf(w)
					if dd := c.Workloads[j].DeepDive; dd != nil {
						dd.line, dd.col = w.Line, w.Column
					}
					for k := 0; k+1 < len(w.Content); k += 2 {
						switch w.Content[k].Value {
						case "name":
							c.Workloads[j].nameLine, c.Workloads[j].nameCol = w.Content[k+1].Line, w.Content[k+1].Column
						case "deep_dive":
							if dd := c.Workloads[j].DeepDive; dd != nil {
								dd.line, dd.col = w.Content[k].Line, w.Content[k].Column
							}
						case "slurm":
							if sl := c.Workloads[j].Slurm; sl != nil {
								sl.line, sl.col = w.Content[k].Line, w.Content[k].Column
								sl.set = keysOf(w.Content[k+1])
							}
						}
					}
				}
			}
		case key.Value == "baseline":
			c.Baseline.set = keysOf(val)
		}
	}
	if errs = append(errs, c.validate()...); len(errs) > 0 {
		return nil, errs
	}
	return &c, nil
}

// allowanceKeys checks the metric names under allowances and gate: a typo
// must fail config check, not the gate after the job ran.
func allowanceKeys(name string, doc *yaml.Node) Errors {
	var errs Errors
	for i := 0; i+1 < len(doc.Content); i += 2 {
		key, val := doc.Content[i], doc.Content[i+1]
		if key.Value == "gate" && val.Kind == yaml.SequenceNode {
			seen := map[string]bool{}
			for _, n := range val.Content {
				m, ok := analysis.MetricByName(n.Value)
				switch {
				case !ok:
					errs = append(errs, &Error{File: name, Line: n.Line, Col: n.Column, Msg: fmt.Sprintf("gate: unknown metric %q (known: %s)", n.Value, strings.Join(metricNames(), ", "))})
				case seen[m.Name]:
					errs = append(errs, &Error{File: name, Line: n.Line, Col: n.Column, Msg: fmt.Sprintf("gate: metric %q listed twice", n.Value)})
				}
				seen[m.Name] = true
			}
			continue
		}
		if key.Value != "allowances" || val.Kind != yaml.MappingNode {
			continue
		}
		for k := 0; k+1 < len(val.Content); k += 2 {
			if kn := val.Content[k]; !knownMetric(kn.Value) {
				errs = append(errs, &Error{File: name, Line: kn.Line, Col: kn.Column,
					Msg: fmt.Sprintf("allowances: unknown metric %q (known: %s)", kn.Value, strings.Join(metricNames(), ", "))})
			}
		}
	}
	return errs
}

// keysOf returns the keys of a mapping node.
func keysOf(n *yaml.Node) map[string]bool {
	out := map[string]bool{}
	if n.Kind != yaml.MappingNode {
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		out[n.Content[i].Value] = true
	}
	return out
}

func knownMetric(name string) bool {
	_, ok := analysis.MetricByName(name)
	return ok
}

func metricNames() []string {
	var out []string
	for _, m := range analysis.Metrics {
		out = append(out, m.Name)
	}
	return out
}

var fieldRE = regexp.MustCompile(`^field (\S+) not found`)

// column finds the column of the node on line whose value is key: yaml.v3
// reports lines only.
func column(n *yaml.Node, line int, key string) int {
	if n == nil {
		return 1
	}
	if n.Line == line && (key == "" || n.Value == key) && n.Kind == yaml.ScalarNode {
		return n.Column
	}
	for _, c := range n.Content {
		if col := column(c, line, key); col > 1 {
			return col
		}
	}
	return 1
}

// yamlErrors turns yaml.v3's "line N: msg" errors into file:line:col ones.
func yamlErrors(name string, err error, root *yaml.Node) error {
	var te *yaml.TypeError
	var msgs []string
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	var out Errors
	for _, m := range msgs {
		if g := lineRE.FindStringSubmatch(m); g != nil {
			line, _ := strconv.Atoi(g[1])
			key := ""
			if f := fieldRE.FindStringSubmatch(g[2]); f != nil {
				key = f[1]
			}
			out = append(out, &Error{File: name, Line: line, Col: column(root, line, key), Msg: g[2]})
			continue
		}
		out = append(out, &Error{File: name, Msg: strings.TrimPrefix(m, "yaml: ")})
	}
	return out
}

// Position returns the line and column of the item at a path of mapping
// keys and sequence indexes: ("gate", "2") is the third entry of gate:,
// ("allowances", "step_time") that key. A path that goes further than the
// document gives the position of its deepest existing part; 0, 0 when not
// even the first part exists.
func (c *Config) Position(path ...string) (line, col int) {
	if c.root == nil || len(c.root.Content) == 0 {
		return 0, 0
	}
	n := c.root.Content[0]
	for i, k := range path {
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for j := 0; j+1 < len(n.Content); j += 2 {
				if n.Content[j].Value == k {
					next = n.Content[j+1]
					if i == len(path)-1 {
						next = n.Content[j] // the key itself
					}
				}
			}
		case yaml.SequenceNode:
			if j, err := strconv.Atoi(k); err == nil && j >= 0 && j < len(n.Content) {
				next = n.Content[j]
			}
		}
		if next == nil {
			break
		}
		n, line, col = next, next.Line, next.Column
	}
	return line, col
}

// Profilers are the accepted profiler values.
var Profilers = []string{"auto", "nsys", "torch", "none"}

func (c *Config) validate() Errors {
	var errs Errors
	bad := func(w *Workload, format string, args ...any) {
		e := &Error{File: c.File, Msg: fmt.Sprintf(format, args...)}
		if w != nil {
			e.Line, e.Col = w.line, w.col
		}
		errs = append(errs, e)
	}
	// atKey reports an error at a key of workload i (file:line:col of the
	// key), or at the workload when the key is not in the file.
	atKey := func(w *Workload, i int, key, format string, args ...any) {
		line, col := c.Position("workloads", strconv.Itoa(i), key)
		if !w.set[key] || line == 0 {
			line, col = w.line, w.col
		}
		errs = append(errs, &Error{File: c.File, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)})
	}
	if c.Version != Version {
		bad(nil, "version must be %d (got %d)", Version, c.Version)
	}
	if len(c.Workloads) == 0 {
		bad(nil, "no workloads")
	}
	names := map[string]bool{}
	for i := range c.Workloads {
		w := &c.Workloads[i]
		if w.Name == "" {
			w.Name = fmt.Sprintf("workload%d", i+1)
		}
		if err := CheckName(w.Name); err != nil {
			e := &Error{File: c.File, Line: w.nameLine, Col: w.nameCol, Msg: err.Error()}
			if e.Line == 0 {
				e.Line, e.Col = w.line, w.col
			}
			errs = append(errs, e)
		}
		if names[w.Name] {
			bad(w, "workload %q defined twice", w.Name)
		}
		names[w.Name] = true
		if len(w.Command.Args()) == 0 || w.Command.Args()[0] == "" {
			bad(w, "workload %q has no command", w.Name)
		}
		if w.Profiler == "" {
			w.Profiler = "auto"
		}
		if !contains(Profilers, w.Profiler) {
			bad(w, "workload %q: profiler %q: want one of %s", w.Name, w.Profiler, strings.Join(Profilers, ", "))
		}
		if w.Profiler == "none" && w.StepLog == "" {
			bad(w, "workload %q: profiler none needs step_log, a regular expression whose first group is the step time in ms in the job's output", w.Name)
		}
		if w.set["timeout"] && w.Timeout == 0 {
			// 0s used to mean the 10-minute default: a limit written as
			// zero is a mistake, not a request for the default.
			atKey(w, i, "timeout", "workload %q: timeout must be above 0s (leave it out for the default, 10m)", w.Name)
		}
		if w.Timeout == 0 {
			w.Timeout = Duration(10 * time.Minute)
		}
		if !w.set["warmup_steps"] {
			w.WarmupSteps = 3
		}
		if !w.set["measure_steps"] {
			w.MeasureSteps = 20
		}
		if w.WarmupSteps < 0 || w.MeasureSteps < 2 {
			bad(w, "workload %q: warmup_steps must be >= 0 and measure_steps >= 2", w.Name)
		}
		if !w.set["repeat"] {
			w.Repeat = 1
		}
		if w.Repeat.Auto() {
			if !w.set["max_runs"] {
				w.MaxRuns = DefaultMaxRuns
			}
			if !w.set["budget"] {
				w.Budget = Duration(10 * time.Minute)
			}
			if w.MaxRuns < 2 || w.MaxRuns > MaxRepeat {
				atKey(w, i, "max_runs", "workload %q: max_runs must be from 2 to %d (each is one more run of the whole job), not %d", w.Name, MaxRepeat, w.MaxRuns)
			}
			if w.Budget <= 0 {
				atKey(w, i, "budget", "workload %q: budget must be a positive duration such as 10m", w.Name)
			}
		} else {
			for _, k := range []string{"max_runs", "budget"} {
				if w.set[k] {
					atKey(w, i, k, "workload %q: %s applies to repeat: auto only (repeat is %d)", w.Name, k, w.Repeat)
				}
			}
			if w.Repeat < 1 {
				bad(w, "workload %q: repeat must be >= 1 or auto", w.Name)
			}
		}
		if w.Repeat > MaxRepeat {
			atKey(w, i, "repeat", "workload %q: repeat must be at most %d (each is one more run of the whole job), not %d", w.Name, MaxRepeat, w.Repeat)
		}
		for _, p := range []struct{ key, re string }{{"step_pattern", w.StepPattern}, {"data_pattern", w.DataPattern}, {"comm_pattern", w.CommPattern}, {"step_log", w.StepLog}} {
			if p.re == "" {
				continue
			}
			re, err := regexp.Compile(p.re)
			if err != nil {
				bad(w, "workload %q: %s: %v", w.Name, p.key, err)
			} else if p.key == "step_log" && re.NumSubexp() == 0 {
				// Its first group is the number read; without one every
				// matching line would be dropped, and the timing pass silently lost.
				bad(w, "workload %q: step_log %q has no capture group: its first group must match the step time in ms, e.g. 'time_ms=([0-9.]+)'", w.Name, p.re)
			}
		}
		if w.Nsys.Trace == "" {
			w.Nsys.Trace = "cuda,nvtx,osrt"
		}
		for _, t := range []struct {
			key string
			v   float64
		}{{"samples_per_step", w.SamplesPerStep}, {"tokens_per_step", w.TokensPerStep}} {
			if w.set[t.key] && !(t.v > 0 && t.v <= 1e15) {
				bad(w, "workload %q: %s must be a positive number (up to 1e15), not %v", w.Name, t.key, t.v)
			}
		}
		if w.Network == "" {
			w.Network = "host"
		}
		if w.Network != "host" && w.Network != "none" {
			bad(w, "workload %q: network %q: want none or host", w.Name, w.Network)
		}
		if w.Network == "none" && w.Slurm != nil {
			bad(w, "workload %q: network: none is not available with slurm: (the tasks run under Slurm's own isolation, docs/slurm.md)", w.Name)
		}
		if w.MFUDtype == "" {
			w.MFUDtype = "bf16"
		}
		if !contains(analysis.MFUDtypes, w.MFUDtype) {
			bad(w, "workload %q: mfu_dtype %q: want one of %s", w.Name, w.MFUDtype, strings.Join(analysis.MFUDtypes, ", "))
		}
		if dd := w.DeepDive; dd != nil {
			at := func(format string, args ...any) {
				errs = append(errs, &Error{File: c.File, Line: dd.line, Col: dd.col,
					Msg: fmt.Sprintf("workload %q: deep_dive: ", w.Name) + fmt.Sprintf(format, args...)})
			}
			if dd.Tool == "" {
				dd.Tool = "ncu"
			}
			if dd.Tool != "ncu" {
				at("tool %q: want ncu", dd.Tool)
			}
			if dd.Kernels == 0 {
				dd.Kernels = 3
			}
			if dd.Kernels < 1 || dd.Kernels > MaxDeepDiveKernels {
				at("kernels must be 1 to %d (one ncu run of the job each), not %d", MaxDeepDiveKernels, dd.Kernels)
			}
			for _, s := range dd.Sections {
				if !sectionRE.MatchString(s) {
					at("section %q is not an ncu section identifier (letters, digits, _; see ncu --list-sections)", s)
				}
			}
			if dd.ClockControl != "" && dd.ClockControl != "base" && dd.ClockControl != "none" {
				at("clock_control %q: want base or none", dd.ClockControl)
			}
		}
	}
	for i := range c.Workloads {
		errs = append(errs, c.validateSlurm(i)...)
	}
	if c.Baseline.DB == "" {
		c.Baseline.DB = ".gpugate/baseline.db"
	}
	if c.Baseline.Branch == "" {
		c.Baseline.Branch = "main"
	}
	if !c.Baseline.set["runs"] {
		c.Baseline.Runs = 5
	}
	if c.Baseline.Runs < 1 {
		bad(nil, "baseline.runs must be >= 1 (got %d)", c.Baseline.Runs)
	}
	if c.Baseline.Runs > MaxRepeat {
		line, col := c.Position("baseline", "runs")
		errs = append(errs, &Error{File: c.File, Line: line, Col: col, Msg: fmt.Sprintf("baseline.runs must be at most %d (each is one run of the whole job in baseline refresh), not %d", MaxRepeat, c.Baseline.Runs)})
	}
	switch c.Baseline.OnMissing {
	case "":
		c.Baseline.OnMissing = "pass"
	case "pass", "fail":
	default:
		bad(nil, "baseline.on_missing: %q: want pass or fail", c.Baseline.OnMissing)
	}
	if c.AB.Pairs < 0 {
		bad(nil, "ab.pairs must be >= 1")
	}
	if c.AB.Pairs > MaxRepeat {
		line, col := c.Position("ab", "pairs")
		errs = append(errs, &Error{File: c.File, Line: line, Col: col, Msg: fmt.Sprintf("ab.pairs must be at most %d (each pair is two runs of the whole job), not %d", MaxRepeat, c.AB.Pairs)})
	}
	if c.AB.MaxPairs < 0 || c.AB.MaxPairs == 1 {
		bad(nil, "ab.max_pairs must be >= 2")
	}
	return errs
}

// MaxRepeat bounds a workload's repeat and baseline.runs: each is one
// more run of the whole job, and 1e9 (which YAML reads as an integer) ran
// forever.
const MaxRepeat = 100

// MaxName is the longest workload name.
const MaxName = 64

// CheckName reports whether name can name a workload: it becomes a folder
// name, a step output, the PR comment's marker and a check run's name, so
// it is a slug of letters, digits, '.', '_' and '-', starting with a letter
// or a digit, at most MaxName long. A name with "../", "/" or a newline
// would write outside the artifacts folder, fail the action or add step
// outputs.
func CheckName(name string) error {
	ok := name != "" && len(name) <= MaxName && isAlnum(name[0])
	for i := 0; ok && i < len(name); i++ {
		ok = isAlnum(name[i]) || name[i] == '.' || name[i] == '_' || name[i] == '-'
	}
	if !ok {
		return fmt.Errorf("workload name %s: want letters, digits, '.', '_' and '-', starting with a letter or digit, at most %d characters (it names the artifacts folder, the step outputs and the PR comment), e.g. %q",
			strconv.QuoteToASCII(name), MaxName, slug(name))
	}
	return nil
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// slug suggests a valid name close to name.
func slug(name string) string {
	var b []byte
	for i := 0; i < len(name) && len(b) < MaxName; i++ {
		c := name[i]
		switch {
		case isAlnum(c) || (len(b) > 0 && (c == '.' || c == '_' || c == '-')):
			b = append(b, c)
		case len(b) > 0 && b[len(b)-1] != '-':
			b = append(b, '-')
		}
	}
	if s := strings.Trim(string(b), "-._"); s != "" {
		return s
	}
	return "workload"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Workload returns the named workload, or the only one when name is "".
func (c *Config) Workload(name string) (*Workload, error) {
	if name == "" {
		if len(c.Workloads) == 1 {
			return &c.Workloads[0], nil
		}
		var names []string
		for _, w := range c.Workloads {
			names = append(names, w.Name)
		}
		return nil, fmt.Errorf("%s has %d workloads (%s): choose one with -workload", c.File, len(c.Workloads), strings.Join(names, ", "))
	}
	for i := range c.Workloads {
		if c.Workloads[i].Name == name {
			return &c.Workloads[i], nil
		}
	}
	if err := CheckName(name); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%s: no workload %q", c.File, name)
}

// Bytes is a size in bytes, written "64MiB", "1GiB", "500MB", "4096" or
// "4096B" (KiB/MiB/GiB are powers of 2, kB/MB/GB of 10).
type Bytes int64

// UnmarshalYAML reads a size.
func (b *Bytes) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseBytes(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %v", n.Line, err)}}
	}
	*b = Bytes(v)
	return nil
}

// ParseBytes reads a size such as "64MiB"; negative, fractional-byte and
// unitless non-integer sizes are errors.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	mult := 1.0
	for _, u := range units {
		if num, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(num), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v*mult > 1<<62 {
		return 0, fmt.Errorf("%q is not a size such as 64MiB, 1GiB or 500MB", s)
	}
	return int64(math.Round(v * mult)), nil
}
