package baseline

import (
	"encoding/json"
	"fmt"
	"strings"
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

// stepMetrics are the per-step fields stored as samples, by JSON name:
// every per-step metric gpugate analyze reports. Copies are stored as
// memcpy_DIR_count, memcpy_DIR_bytes and memcpy_DIR_time_ns, and
// memcpy_pageable is their pageable count over all directions.
var stepMetrics = []string{"step_time_ns", "kernels", "gpu_busy_ns", "gpu_util", "gpu_idle_ns", "cpu_wait_ns", "data_wait_ns",
	"sync_calls", "sync_time_ns", "comm_time_ns", "exposed_comm_ns", "exposed_copy_ns", "launch_overhead_ns", "short_kernels"}

// memoryFields are the step's memory numbers stored as samples (bytes),
// by their JSON names in the step's "memory" object; null ones (absent)
// are not stored.
var memoryFields = []string{"peak_memory_bytes", "peak_reserved_bytes", "alloc_growth_bytes", "rss_bytes"}

// SampleName is the name under which a metric's per-step samples are
// stored, and the factor from the stored value to the metric's unit
// (stored times are ns, bytes are bytes): "step_time" in ms is
// step_time_ns / 1e6.
func SampleName(metric, unit string) (string, float64) {
	switch unit {
	case "ms":
		return metric + "_ns", 1e6
	case "us":
		return metric + "_ns", 1e3
	case "MB":
		return metric, 1e6
	case "MiB": // memory: stored in bytes, from the step's "memory" object
		return metric + "_bytes", 1 << 20
	}
	if strings.HasPrefix(metric, "memcpy_") && strings.HasSuffix(metric, "_time") {
		return metric + "_ns", 1
	}
	return metric, 1
}

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
			add := func(m string, v float64) {
				d.samples = append(d.samples, struct {
					rank, step int
					metric     string
					value      float64
				}{rank, step, m, v})
			}
			for _, m := range stepMetrics {
				if v, ok := st[m].(float64); ok { // null (absent) GPU metrics are skipped
					add(m, v)
				}
			}
			if mem, ok := st["memory"].(map[string]any); ok { // null: memory not measured
				for _, k := range memoryFields {
					if v, ok := mem[k].(float64); ok {
						add(k, v)
					}
				}
			}
			if cp, ok := st["memcpy"].(map[string]any); ok {
				pageable, seen := 0.0, false
				for _, dir := range []string{"h2d", "d2h", "d2d"} {
					c, ok := cp[dir].(map[string]any)
					if !ok {
						continue
					}
					for _, f := range []struct{ key, name string }{{"count", "count"}, {"bytes", "bytes"}, {"time_ns", "time_ns"}} {
						if v, ok := c[f.key].(float64); ok {
							add("memcpy_"+dir+"_"+f.name, v)
						}
					}
					if v, ok := c["pageable"].(float64); ok {
						pageable, seen = pageable+v, true
					}
				}
				if seen {
					add("memcpy_pageable", pageable)
				}
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
