package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseDefaults(t *testing.T) {
	c, err := Parse([]byte(`version: 1
workloads:
  - name: demo
    command: ["/usr/bin/python3", "train.py"]
    env: {GPUGATE_DEMO: slow-loader}
allowances:
  step_time: 12%
`), "perf.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w := c.Workloads[0]
	if w.Profiler != "auto" || time.Duration(w.Timeout) != 10*time.Minute || w.WarmupSteps != 3 || w.MeasureSteps != 20 || w.Repeat != 1 {
		t.Errorf("defaults: %+v", w)
	}
	if got := w.Command.Args(); len(got) != 2 || got[1] != "train.py" {
		t.Errorf("command %q", got)
	}
	if c.Allowances["step_time"] != 0.12 || c.Baseline.DB != ".gpugate/baseline.db" || c.Baseline.Branch != "main" {
		t.Errorf("allowances %v, baseline %+v", c.Allowances, c.Baseline)
	}
	c, err = Parse([]byte("version: 1\nworkloads:\n  - command: python3 train.py --steps 30\n    timeout: 90s\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Workloads[0].Command.Args(); got[0] != "/bin/sh" || got[2] != "python3 train.py --steps 30" || c.Workloads[0].Name != "workload1" {
		t.Errorf("shell command %q, name %q", got, c.Workloads[0].Name)
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"version: 1\nworkloads:\n  - name: a\n    comand: [x]\n", "perf.yaml:4:5: field comand not found"},
		{"version: 1\nworkloads:\n  - name: a\n    command: [x]\n    measure_steps: many\n", "perf.yaml:5:5: cannot unmarshal"},
		{"version: 1\nworkloads:\n  - name: a\n", "perf.yaml:3:5: workload \"a\" has no command"},
		{"version: 1\nworkloads:\n  - name: a\n    command: [x]\n    timeout: soon\n", "perf.yaml:5:5: \"soon\" is not a duration"},
		{"version: 1\nworkloads:\n  - name: a\n    command: [x]\n    profiler: perf\n", "perf.yaml:3:5: workload \"a\": profiler \"perf\""},
		{"version: 2\nworkloads:\n  - command: [x]\n", "version must be 1"},
		{"version: 1\nworkloads:\n  - command: [x]\nallowances:\n  step_time: lots\n", "perf.yaml:5:3: \"lots\" is not a percentage"},
		{"version: 1\nworkloads: [\n", "perf.yaml:"},
		{"", "empty config"},
		{"version: 1\nworkloads:\n  - command: [x]\n    step_pattern: \"(\"\n", "step_pattern"},
	} {
		_, err := Parse([]byte(c.in), "perf.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) error = %v, want it to contain %q", c.in, err, c.want)
		}
	}
}

func TestDeepDive(t *testing.T) {
	c, err := Parse([]byte(`version: 1
workloads:
  - name: a
    command: [x]
    deep_dive: {tool: ncu, sections: [SpeedOfLight, Occupancy]}
  - name: b
    command: [x]
`), "perf.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dd := c.Workloads[0].DeepDive
	if dd == nil || dd.Tool != "ncu" || dd.Kernels != 3 || len(dd.Sections) != 2 || dd.ClockControl != "" {
		t.Errorf("deep_dive = %+v", dd)
	}
	if c.Workloads[1].DeepDive != nil {
		t.Errorf("deep_dive is opt-in, got %+v", c.Workloads[1].DeepDive)
	}
	for _, c := range []struct{ in, want string }{
		{"    deep_dive: {tool: nsys}\n", `perf.yaml:5:5: workload "a": deep_dive: tool "nsys": want ncu`},
		{"    deep_dive: {kernels: 11}\n", `perf.yaml:5:5: workload "a": deep_dive: kernels must be 1 to 10`},
		{"    deep_dive: {kernels: -1}\n", "kernels must be 1 to 10"},
		{"    deep_dive: {sections: [\"regex:.*\"]}\n", `perf.yaml:5:5: workload "a": deep_dive: section "regex:.*" is not an ncu section identifier`},
		{"    deep_dive: {sections: [--set=full]}\n", "is not an ncu section identifier"},
		{"    deep_dive: {clock_control: max}\n", `clock_control "max": want base or none`},
		{"    deep_dive:\n      kernel: 3\n", "perf.yaml:6:7: field kernel not found"},
	} {
		_, err := Parse([]byte("version: 1\nworkloads:\n  - name: a\n    command: [x]\n"+c.in), "perf.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) error = %v, want it to contain %q", c.in, err, c.want)
		}
	}
}
