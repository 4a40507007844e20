package pipeline

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/newfile"
	"github.com/gpugate/gpugate/runcond"
)

// notRecordedWhy is what the report says of a run whose conditions were
// never recorded.
const notRecordedWhy = "not recorded: the run was stored before gpugate sampled run conditions"

// applyConditions adds the run-conditions section to rep and voids what
// the conditions leave unproven (gate.ApplyConditions, with the default
// margins: throttling in 10% of busy samples, SW power cap 10 points more
// often than the baseline, median SM clocks 5% apart).
func applyConditions(rep *gate.Report, base, cand []*runcond.Conditions) {
	gate.ApplyConditions(rep, base, cand, gate.DefaultConditionMargins, notRecordedWhy)
}

// applyIsolation says in the report how the job was isolated, and warns
// where no namespace could be made (runner.Result.IsolationWarnings).
func applyIsolation(rep *gate.Report, ex *Execution) {
	rep.Isolation = ex.Isolation
	rep.Warnings = append(rep.Warnings, ex.IsolationWarnings...)
}

// conditionsJSON is a run's conditions as the store keeps them; nil for a
// run without (profiler none, a run from before).
func conditionsJSON(c *runcond.Conditions) []byte {
	if c == nil {
		return nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil
	}
	return b
}

// storedConditions reads a stored run's conditions; nil when it has none.
func storedConditions(r baseline.Run) (*runcond.Conditions, error) {
	if len(r.Conditions) == 0 {
		return nil, nil
	}
	var c runcond.Conditions
	if err := json.Unmarshal(r.Conditions, &c); err != nil {
		return nil, fmt.Errorf("run conditions: %v", err)
	}
	return &c, nil
}

// writeConditions keeps a run's conditions in its artifacts folder
// (conditions.json), beside analysis.json; best effort, as that file is.
func writeConditions(out string, c *runcond.Conditions) {
	if b := conditionsJSON(c); b != nil {
		newfile.Replace(filepath.Join(out, "conditions.json"), b) // the job's folder: never through what it left there
	}
}

// HostMargins are perf.yaml's host: bounds over gpugate's defaults
// (gate.DefaultHostMargins).
func HostMargins(c *config.Config) gate.HostMargins {
	m := gate.DefaultHostMargins
	if c == nil {
		return m
	}
	for _, f := range []struct {
		v   *config.Percent
		dst *float64
	}{{c.Host.OtherCPU, &m.OtherCPU}, {c.Host.CPUPressure, &m.CPUPressure}, {c.Host.PressureOther, &m.PressureOther}, {c.Host.Steal, &m.Steal}, {c.Host.Throttled, &m.Throttled}, {c.Host.ContentionMargin, &m.Contention}} {
		if f.v != nil {
			*f.dst = float64(*f.v)
		}
	}
	return m
}

// disturbed says which runs of each side ran on a busy host, under c's
// margins.
func disturbed(c *config.Config, base, cand []*runcond.Conditions) gate.Disturbed {
	m := HostMargins(c)
	return gate.Disturbed{Base: gate.Disturbances(base, m), Cand: gate.Disturbances(cand, m)}
}
