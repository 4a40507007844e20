package main

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/config"
)

// checkRunnable finds what config.Load accepts but a run would reject,
// because it needs to know gpugate's metrics: unknown metric names in
// allowances and gate, and profiler none without step_log. config check
// and every command that runs a workload call it, so that config check
// says everything run would. Each error names file:line:col.
func checkRunnable(c *config.Config) error {
	var errs config.Errors
	bad := func(path []string, format string, args ...any) {
		line, col := c.Position(path...)
		errs = append(errs, &config.Error{File: c.File, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)})
	}
	for _, name := range sortedKeys(c.Allowances) {
		if _, ok := analysis.MetricByName(name); !ok {
			bad([]string{"allowances", name}, "allowances: unknown metric %q", name)
		}
	}
	seen := map[string]bool{}
	for i, name := range c.Gate {
		m, ok := analysis.MetricByName(name)
		switch {
		case !ok:
			bad([]string{"gate", strconv.Itoa(i)}, "gate: unknown metric %q", name)
		case seen[m.Name]:
			bad([]string{"gate", strconv.Itoa(i)}, "gate: metric %q listed twice", name)
		}
		seen[m.Name] = true
	}
	for i, w := range c.Workloads {
		if w.Profiler == "none" && w.StepLog == "" {
			bad([]string{"workloads", strconv.Itoa(i)}, "workload %q: profiler none needs step_log, a regular expression whose first group is the step time in ms in the job's output", w.Name)
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
