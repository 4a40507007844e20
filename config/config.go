// Package config reads perf.yaml, the description of the workloads gpugate
// runs and gates. Decoding is strict: an unknown key, a value of the wrong
// type or a missing command is an error that names file:line:column.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Version is the perf.yaml version this gpugate reads.
const Version = 1

// Config is a perf.yaml file.
type Config struct {
	Version    int                `yaml:"version"`
	Workloads  []Workload         `yaml:"workloads"`
	Allowances map[string]Percent `yaml:"allowances"`
	Baseline   Baseline           `yaml:"baseline"`
	// Gate lists the metrics whose regression fails the gate; the others
	// explain it. Empty: step_time, kernels, cpu_wait, sync_calls. The
	// names are checked against the metrics gpugate computes by the
	// command that uses them (config knows no metrics).
	Gate []string `yaml:"gate"`

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
	Repeat      int    `yaml:"repeat"`
	// StepLog is a regular expression with one group, the step time in
	// ms, matched against the job's output in an unprofiled timing pass
	// (profiler: none).
	StepLog string `yaml:"step_log"`
	Nsys    Nsys   `yaml:"nsys"`

	line, col int // where the workload starts, for errors
}

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

// UnmarshalYAML parses "15%" or a plain fraction.
func (p *Percent) UnmarshalYAML(n *yaml.Node) error {
	s := strings.TrimSpace(n.Value)
	scale := 1.0
	if strings.HasSuffix(s, "%") {
		s, scale = strings.TrimSuffix(s, "%"), 0.01
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q is not a percentage such as 15%%", n.Line, n.Value)}}
	}
	*p = Percent(v * scale)
	return nil
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
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c Config
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlErrors(name, err, &root)
	}
	c.File = name
	c.root = &root
	// Lines of the workloads, for validation messages.
	doc := root.Content[0]
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == "workloads" && doc.Content[i+1].Kind == yaml.SequenceNode {
			for j, w := range doc.Content[i+1].Content {
				if j < len(c.Workloads) {
					c.Workloads[j].line, c.Workloads[j].col = w.Line, w.Column
				}
			}
		}
	}
	if errs := c.validate(); len(errs) > 0 {
		return nil, errs
	}
	return &c, nil
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
		if w.Timeout == 0 {
			w.Timeout = Duration(10 * time.Minute)
		}
		if w.WarmupSteps == 0 {
			w.WarmupSteps = 3
		}
		if w.MeasureSteps == 0 {
			w.MeasureSteps = 20
		}
		if w.WarmupSteps < 0 || w.MeasureSteps < 2 {
			bad(w, "workload %q: warmup_steps must be >= 0 and measure_steps >= 2", w.Name)
		}
		if w.Repeat == 0 {
			w.Repeat = 1
		}
		if w.Repeat < 0 {
			bad(w, "workload %q: repeat must be >= 1", w.Name)
		}
		for _, p := range []struct{ key, re string }{{"step_pattern", w.StepPattern}, {"data_pattern", w.DataPattern}, {"step_log", w.StepLog}} {
			if p.re == "" {
				continue
			}
			if _, err := regexp.Compile(p.re); err != nil {
				bad(w, "workload %q: %s: %v", w.Name, p.key, err)
			}
		}
		if w.Nsys.Trace == "" {
			w.Nsys.Trace = "cuda,nvtx,osrt"
		}
	}
	if c.Baseline.DB == "" {
		c.Baseline.DB = ".gpugate/baseline.db"
	}
	if c.Baseline.Branch == "" {
		c.Baseline.Branch = "main"
	}
	if c.Baseline.Runs == 0 {
		c.Baseline.Runs = 5
	}
	return errs
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
	return nil, fmt.Errorf("%s: no workload %q", c.File, name)
}
