package baseline

import (
	"encoding/json"
	"fmt"
)

// derived holds the rows a run's analysis document yields. The store reads
// only the few fields it needs from the document (gpugate analyze JSON, see
// docs/json.md), so it depends on no other gpugate package.
type derived struct {
	samples []struct {
		rank, step int
		metric     string
		value      float64
	}
	kernels []struct {
		rank        int
		name        string
		count, time int64
	}
	findings []struct {
		rank                  int
		id, severity, summary string
		share                 float64
	}
}

// stepMetrics are the per-step fields stored as samples, by JSON name.
var stepMetrics = []string{"step_time_ns", "kernels", "gpu_busy_ns", "gpu_util", "cpu_wait_ns", "data_wait_ns",
	"sync_calls", "sync_time_ns", "comm_time_ns", "exposed_comm_ns", "exposed_copy_ns", "launch_overhead_ns", "short_kernels"}

func derive(analysis []byte) (derived, error) {
	var doc struct {
		Profiles []struct {
			Steps       []map[string]any `json:"steps"`
			KernelStats []struct {
				Name  string `json:"name"`
				Count int64  `json:"count"`
				Time  int64  `json:"time_ns"`
			} `json:"kernel_stats"`
			Findings []struct {
				ID       string  `json:"id"`
				Severity string  `json:"severity"`
				Summary  string  `json:"summary"`
				Share    float64 `json:"share"`
			} `json:"findings"`
		} `json:"profiles"`
	}
	var d derived
	if err := json.Unmarshal(analysis, &doc); err != nil {
		return d, fmt.Errorf("run analysis is not gpugate analyze JSON: %w", err)
	}
	for rank, p := range doc.Profiles {
		for step, st := range p.Steps {
			for _, m := range stepMetrics {
				v, ok := st[m].(float64) // null (absent) GPU metrics are skipped
				if !ok {
					continue
				}
				d.samples = append(d.samples, struct {
					rank, step int
					metric     string
					value      float64
				}{rank, step, m, v})
			}
		}
		for _, k := range p.KernelStats {
			d.kernels = append(d.kernels, struct {
				rank        int
				name        string
				count, time int64
			}{rank, k.Name, k.Count, k.Time})
		}
		for _, f := range p.Findings {
			d.findings = append(d.findings, struct {
				rank                  int
				id, severity, summary string
				share                 float64
			}{rank, f.ID, f.Severity, f.Summary, f.Share})
		}
	}
	return d, nil
}
