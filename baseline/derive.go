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
	profiles int // in the document
	samples  []struct {
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

// stepDoc is what derive reads of a step: typed, so that a run of 100,000
// steps decodes into fixed fields rather than a map per step. Absent and
// null numbers stay nil and are not stored (GPU metrics without a GPU).
type stepDoc struct {
	StepTime       *float64 `json:"step_time_ns"`
	Kernels        *float64 `json:"kernels"`
	GPUBusy        *float64 `json:"gpu_busy_ns"`
	GPUUtil        *float64 `json:"gpu_util"`
	GPUIdle        *float64 `json:"gpu_idle_ns"`
	CPUWait        *float64 `json:"cpu_wait_ns"`
	DataWait       *float64 `json:"data_wait_ns"`
	SyncCalls      *float64 `json:"sync_calls"`
	SyncTime       *float64 `json:"sync_time_ns"`
	CommTime       *float64 `json:"comm_time_ns"`
	ExposedComm    *float64 `json:"exposed_comm_ns"`
	ExposedCopy    *float64 `json:"exposed_copy_ns"`
	LaunchOverhead *float64 `json:"launch_overhead_ns"`
	ShortKernels   *float64 `json:"short_kernels"`
	Memory         *struct {
		Peak     *float64 `json:"peak_memory_bytes"`
		Reserved *float64 `json:"peak_reserved_bytes"`
		Growth   *float64 `json:"alloc_growth_bytes"`
		RSS      *float64 `json:"rss_bytes"`
	} `json:"memory"`
	Memcpy map[string]*struct {
		Count    *float64 `json:"count"`
		Bytes    *float64 `json:"bytes"`
		TimeNS   *float64 `json:"time_ns"`
		Pageable *float64 `json:"pageable"`
	} `json:"memcpy"`
}

// values are the step's numbers in stepMetrics' order.
func (st *stepDoc) values() [14]*float64 {
	return [...]*float64{st.StepTime, st.Kernels, st.GPUBusy, st.GPUUtil, st.GPUIdle, st.CPUWait, st.DataWait,
		st.SyncCalls, st.SyncTime, st.CommTime, st.ExposedComm, st.ExposedCopy, st.LaunchOverhead, st.ShortKernels}
}

func derive(analysis []byte) (derived, error) {
	var doc struct {
		Profiles []struct {
			Steps       []stepDoc `json:"steps"`
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
	d.profiles = len(doc.Profiles)
	steps := 0
	for _, p := range doc.Profiles {
		steps += len(p.Steps)
	}
	// At most every step metric, memory field and copy figure per step:
	// one allocation rather than a doubling slice of a million rows.
	d.samples = make([]struct {
		rank, step int
		metric     string
		value      float64
	}, 0, steps*(len(stepMetrics)+len(memoryFields)+10))
	for rank, p := range doc.Profiles {
		for step, st := range p.Steps {
			add := func(m string, v *float64) {
				if v == nil {
					return
				}
				d.samples = append(d.samples, struct {
					rank, step int
					metric     string
					value      float64
				}{rank, step, m, *v})
			}
			for i, v := range st.values() {
				add(stepMetrics[i], v)
			}
			if mem := st.Memory; mem != nil { // null: memory not measured
				for i, v := range []*float64{mem.Peak, mem.Reserved, mem.Growth, mem.RSS} {
					add(memoryFields[i], v)
				}
			}
			if st.Memcpy != nil {
				pageable, seen := 0.0, false
				for _, dir := range []string{"h2d", "d2h", "d2d"} {
					c := st.Memcpy[dir]
					if c == nil {
						continue
					}
					add("memcpy_"+dir+"_count", c.Count)
					add("memcpy_"+dir+"_bytes", c.Bytes)
					add("memcpy_"+dir+"_time_ns", c.TimeNS)
					if c.Pageable != nil {
						pageable, seen = pageable+*c.Pageable, true
					}
				}
				if seen {
					add("memcpy_pageable", &pageable)
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
