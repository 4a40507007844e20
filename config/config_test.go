package config

import (
	"math"
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
		{"version: 1\nworkloads:\n  - command: [x]\n    comm_pattern: \"nccl|(\"\n", "comm_pattern"},
		// One allowance language: 15 is not 15% nor 1500%.
		{"version: 1\nworkloads:\n  - command: [x]\nallowances:\n  step_time: 15\n", "perf.yaml:5:3: \"15\" is a bare number above 1: write 15% for 15 percent, or a fraction such as 0.15"},
		{"version: 1\nworkloads:\n  - command: [x]\nallowances:\n  step_time: .nan\n", "perf.yaml:5:3: \".nan\" is not a percentage"},
		{"version: 1\nworkloads:\n  - command: [x]\nallowances:\n  step_time: -5%\n", "cannot be negative"},
		{"version: 1\nworkloads:\n  - command: [x]\nallowances:\n  step_time: Inf%\n", "is not a percentage"},
		{"version: 1\nworkloads:\n  - command: [x]\nallowances:\n  kernels: 1%\n  step_tme: 10%\n", "perf.yaml:6:3: allowances: unknown metric \"step_tme\""},
		{"version: 1\nworkloads:\n  - command: [x]\n    repeat: 0\n", "repeat must be >= 1"},
		{"version: 1\nworkloads:\n  - command: [x]\n    step_log: 'time_ms=[0-9.]+'\n", "perf.yaml:3:5: workload \"workload1\": step_log \"time_ms=[0-9.]+\" has no capture group"},
		{"version: 1\nworkloads:\n  - command: [x]\nbaseline:\n  runs: 0\n", "baseline.runs must be >= 1"},
		// Issue 23: limits a typo cannot pass, reported where they are written.
		{"version: 1\nworkloads:\n  - name: a\n    command: [x]\n    repeat: 1e9\n", "perf.yaml:5:5: workload \"a\": repeat must be at most 100"},
		{"version: 1\nworkloads:\n  - name: a\n    command: [x]\n    repeat: 101\n", "perf.yaml:5:5: workload \"a\": repeat must be at most 100"},
		{"version: 1\nworkloads:\n  - name: a\n    command: [x]\n  - name: b\n    command: [x]\n    timeout: 0s\n", "perf.yaml:7:5: workload \"b\": timeout must be above 0s"},
		{"version: 1\nworkloads:\n  - command: [x]\nbaseline:\n  runs: 1000000000\n", "perf.yaml:5:3: baseline.runs must be at most 100"},
		{"version: 1\nworkloads:\n  - command: [x]\nab:\n  pairs: 1e9\n", "perf.yaml:5:3: ab.pairs must be at most 100"},
		// repeat: auto and its bounds.
		{"version: 1\nworkloads:\n  - name: a\n    command: [x]\n    repeat: often\n", "perf.yaml:5:5: repeat is a number of runs or auto, not \"often\""},
		{"version: 1\nworkloads:\n  - name: a\n    command: [x]\n    repeat: 3\n    max_runs: 5\n", "perf.yaml:6:5: workload \"a\": max_runs applies to repeat: auto only (repeat is 3)"},
		{"version: 1\nworkloads:\n  - name: a\n    command: [x]\n    budget: 5m\n", "perf.yaml:5:5: workload \"a\": budget applies to repeat: auto only (repeat is 1)"},
		{"version: 1\nworkloads:\n  - name: a\n    command: [x]\n    repeat: auto\n    max_runs: 1\n", "perf.yaml:6:5: workload \"a\": max_runs must be from 2 to 100"},
		{"version: 1\nworkloads:\n  - name: a\n    command: [x]\n    repeat: auto\n    budget: 0s\n", "perf.yaml:6:5: workload \"a\": budget must be a positive duration"},
		{"version: 1\nworkloads:\n  - name: a\n    command: [x]\n    repeat: -1\n", "repeat must be >= 1 or auto"},
		{"version: 1\nworkloads:\n  - name: a\n    command: [x]\n    repeat: -2147483648\n", "repeat must be >= 1 or auto"},
		// host: margins are shares, and only the known ones.
		{"version: 1\nworkloads:\n  - command: [x]\nhost:\n  other_cpu: busy\n", "perf.yaml:5:3: \"busy\" is not a percentage"},
		{"version: 1\nworkloads:\n  - command: [x]\nhost:\n  cpu_pressure: 30\n", "perf.yaml:5:3: \"30\" is a bare number above 1"},
		{"version: 1\nworkloads:\n  - command: [x]\nhost:\n  load: 3\n", "perf.yaml:5:3: field load not found"},
	} {
		_, err := Parse([]byte(c.in), "perf.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) error = %v, want it to contain %q", c.in, err, c.want)
		}
	}
}

func TestParseHost(t *testing.T) {
	c, err := Parse([]byte("version: 1\nworkloads:\n  - command: [x]\nhost:\n  other_cpu: 40%\n  steal: 0.05\n"), "perf.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Host.OtherCPU == nil || *c.Host.OtherCPU != 0.4 || c.Host.Steal == nil || *c.Host.Steal != 0.05 || c.Host.CPUPressure != nil || c.Host.Throttled != nil {
		t.Errorf("host = %+v, want other_cpu 0.4, steal 0.05, the rest unset", c.Host)
	}
}

func TestParsePercent(t *testing.T) {
	for in, want := range map[string]float64{"15%": 0.15, "0.15": 0.15, " 15 % ": 0.15, "0": 0, "1": 1, "200%": 2, "0%": 0, "2.5%": 0.025} {
		got, err := ParsePercent(in)
		if err != nil || math.Abs(got-want) > 1e-15 {
			t.Errorf("ParsePercent(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"15", "1.5", "NaN", "nan%", "+Inf", "-0.1", "-3%", "", "%", "abc", "0x10"} {
		if got, err := ParsePercent(in); err == nil {
			t.Errorf("ParsePercent(%q) = %v, want an error", in, got)
		}
	}
}

// Explicit zeros are kept; only absent keys take defaults.
func TestExplicitZero(t *testing.T) {
	c, err := Parse([]byte("version: 1\nworkloads:\n  - command: [x]\n    warmup_steps: 0\n  - command: [y]\n"), "perf.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Workloads[0].WarmupSteps != 0 || c.Workloads[1].WarmupSteps != 3 {
		t.Errorf("warmup_steps %d (explicit 0), %d (absent); want 0, 3", c.Workloads[0].WarmupSteps, c.Workloads[1].WarmupSteps)
	}
}

// TestWorkloadNames: the name becomes a folder, step outputs and the PR
// comment's marker. The reproductions: "../" wrote artifacts
// outside .gpugate/runs (and a README.md outside the workspace in action
// mode), "/" made the action fail, a newline added GITHUB_OUTPUT entries,
// "-->" closed the comment marker early.
func TestWorkloadNames(t *testing.T) {
	for _, name := range []string{"demo", "resnet50-bs256", "a.b_c", "A1", strings.Repeat("x", MaxName)} {
		if err := CheckName(name); err != nil {
			t.Errorf("CheckName(%q) = %v, want nil", name, err)
		}
	}
	for _, name := range []string{"", "../../../tmp/x", "..", ".", ".hidden", "a/b", "/abs", "a\nverdict=pass", "x-->", "<!--", "a b",
		"-flag", "ä", "a\\b", strings.Repeat("x", MaxName+1), "a\x00b", "a`b", "@org"} {
		if err := CheckName(name); err == nil {
			t.Errorf("CheckName(%q) = nil, want an error", name)
		}
	}
	// In a perf.yaml: the error points at the name and suggests a slug.
	_, err := Parse([]byte("version: 1\nworkloads:\n  - command: [x]\n    name: \"../../etc\"\n"), "perf.yaml")
	if err == nil || !strings.Contains(err.Error(), "perf.yaml:4:11: workload name \"../../etc\"") || !strings.Contains(err.Error(), `e.g. "etc"`) {
		t.Errorf("Parse with name ../../etc: error %v", err)
	}
	_, err = Parse([]byte("version: 1\nworkloads:\n  - name: \"a\\nverdict=pass\"\n    command: [x]\n"), "perf.yaml")
	if err == nil || !strings.Contains(err.Error(), `perf.yaml:3:11: workload name "a\nverdict=pass"`) {
		t.Errorf("Parse with a newline in the name: error %v", err)
	}
	c, err := Parse([]byte("version: 1\nworkloads:\n  - name: ok\n    command: [x]\n"), "perf.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Workload("../ok"); err == nil || !strings.Contains(err.Error(), "workload name") {
		t.Errorf(`Workload("../ok") error %v, want the name rule`, err)
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

func TestWorkFields(t *testing.T) {
	c, err := Parse([]byte("version: 1\nworkloads:\n  - command: [x]\n    samples_per_step: 32\n    tokens_per_step: 65536\n    flops: true\n    mfu_dtype: fp16\n  - command: [y]\n"), "perf.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w, d := c.Workloads[0], c.Workloads[1]
	if w.SamplesPerStep != 32 || w.TokensPerStep != 65536 || !w.FLOPs || w.MFUDtype != "fp16" {
		t.Errorf("workload 1: %+v", w)
	}
	if d.SamplesPerStep != 0 || d.FLOPs || d.MFUDtype != "bf16" {
		t.Errorf("defaults: samples %v flops %v mfu_dtype %q, want 0 false bf16", d.SamplesPerStep, d.FLOPs, d.MFUDtype)
	}
	for _, tc := range []struct{ in, want string }{
		{"samples_per_step: 0", "perf.yaml:3:5: workload \"workload1\": samples_per_step must be a positive number (up to 1e15), not 0"},
		{"tokens_per_step: -5", "tokens_per_step must be a positive number"},
		{"samples_per_step: .nan", "samples_per_step must be a positive number (up to 1e15), not NaN"},
		{"samples_per_step: .inf", "samples_per_step must be a positive number"},
		{"mfu_dtype: int8", `mfu_dtype "int8": want one of fp32, tf32, bf16, fp16, fp8`},
		{"flops: maybe", "cannot unmarshal !!str `maybe` into bool"},
	} {
		_, err := Parse([]byte("version: 1\nworkloads:\n  - command: [x]\n    "+tc.in+"\n"), "perf.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.in, err, tc.want)
		}
	}
}
func TestMemoryMinChange(t *testing.T) {
	for in, want := range map[string]int64{"64MiB": 64 << 20, "1GiB": 1 << 30, "500MB": 500e6, "4096": 4096, "10 B": 10} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"-1MiB", "NaN", "lots", "1e30GiB", ""} {
		if got, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", in, got)
		}
	}
}

func TestMemoryMinChangeYAML(t *testing.T) {
	src := "version: 1\nworkloads:\n  - name: w\n    command: [\"python3\", \"t.py\"]\nmemory_min_change: 128MiB\n"
	c, err := Parse([]byte(src), "perf.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.MemoryMinChange == nil || *c.MemoryMinChange != 128<<20 {
		t.Errorf("memory_min_change = %v, want 128 MiB", c.MemoryMinChange)
	}
	if _, err := Parse([]byte(strings.Replace(src, "128MiB", "lots", 1)), "perf.yaml"); err == nil || !strings.Contains(err.Error(), "not a size") {
		t.Errorf("memory_min_change: lots: err = %v, want one naming the size", err)
	}
}

// repeat: auto parses with its defaults (5 runs, 10 minutes) or its own.
func TestRepeatAuto(t *testing.T) {
	c, err := Parse([]byte("version: 1\nworkloads:\n  - name: a\n    command: [x]\n    repeat: auto\n  - name: b\n    command: [x]\n    repeat: auto\n    max_runs: 8\n    budget: 20m\n  - name: c\n    command: [x]\n    repeat: 4\n"), "perf.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a, b, d := c.Workloads[0], c.Workloads[1], c.Workloads[2]
	if !a.Repeat.Auto() || a.MaxRuns != DefaultMaxRuns || time.Duration(a.Budget) != 10*time.Minute {
		t.Errorf("a: repeat %d max_runs %d budget %s, want auto, %d, 10m", a.Repeat, a.MaxRuns, time.Duration(a.Budget), DefaultMaxRuns)
	}
	if !b.Repeat.Auto() || b.MaxRuns != 8 || time.Duration(b.Budget) != 20*time.Minute {
		t.Errorf("b: repeat %d max_runs %d budget %s, want auto, 8, 20m", b.Repeat, b.MaxRuns, time.Duration(b.Budget))
	}
	if d.Repeat.Auto() || d.Repeat != 4 || d.MaxRuns != 0 {
		t.Errorf("c: repeat %d max_runs %d, want 4, 0", d.Repeat, d.MaxRuns)
	}
}

// TestNetwork: network is host by default, none or host when set, and
// anything else (or none with slurm) is refused where it is written.
func TestNetwork(t *testing.T) {
	c, err := Parse([]byte("version: 1\nworkloads:\n  - command: [x]\n    network: none\n  - command: [y]\n"), "perf.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Workloads[0].Network != "none" || c.Workloads[1].Network != "host" {
		t.Errorf("network %q %q, want none and the default host", c.Workloads[0].Network, c.Workloads[1].Network)
	}
	for _, bad := range []struct{ yaml, want string }{
		{"    network: off\n", `perf.yaml:3:5: workload "workload1": network "off": want none or host`},
		{"    network: none\n    slurm: {nodes: 1}\n", `network: none is not available with slurm`},
	} {
		_, err := Parse([]byte("version: 1\nworkloads:\n  - command: [x]\n"+bad.yaml), "perf.yaml")
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.yaml, err, bad.want)
		}
	}
}
