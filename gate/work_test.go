package gate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/trace"
)

// workRun is a run of n steps of stepMs each whose every step does flops
// FLOPs on 32 samples.
func workRun(n int, stepMs, flops float64) Run {
	p := trace.New("w.json", trace.FormatKineto)
	steps := make([]analysis.Step, n)
	w := &analysis.WorkResult{SamplesPerStep: 32, FLOPsSource: "shapes", Dtype: "bf16", MFUAbsent: "no GPU model known", Steps: make([]analysis.StepWork, n)}
	t := int64(0)
	for i := range steps {
		d := int64((stepMs + 0.01*float64(i%3)) * 1e6)
		steps[i] = analysis.Step{Name: fmt.Sprintf("ProfilerStep#%d", i), HostStart: t, HostEnd: t + d, Start: t, End: t + d}
		sec := float64(d) / 1e9
		sps, f, tf := 32/sec, flops, flops/sec/1e12
		w.Steps[i] = analysis.StepWork{SamplesPerSec: &sps, FLOPs: &f, TFLOPS: &tf}
		t += d
	}
	r := analysis.FromSteps(p, false, steps, nil)
	r.Work = w
	return Run{r}
}

func TestCompareWork(t *testing.T) {
	base := workRun(20, 100, 3e11)
	// 30% faster per step, but 40% fewer FLOPs per sample: called out.
	rep := Compare([]Run{base}, []Run{workRun(20, 70, 1.8e11)}, Options{})
	if rep.Work == nil {
		t.Fatal("no work comparison")
	}
	rows := map[string]WorkRow{}
	for _, r := range rep.Work.Rows {
		rows[r.Name] = r
	}
	if r := rows["samples_per_s"]; r.Baseline == nil || r.Candidate == nil || *r.DeltaPct < 40 || *r.DeltaPct > 45 {
		t.Errorf("samples_per_s row %+v: want about +43%% (100 → 70 ms)", r)
	}
	if r := rows["flops_per_sample"]; r.Baseline == nil || *r.Baseline != 3e11/32 || *r.Candidate != 1.8e11/32 {
		t.Errorf("flops_per_sample row %+v", r)
	}
	if _, ok := rows["mfu"]; ok {
		t.Errorf("mfu row without MFU on either side")
	}
	joined := strings.Join(rep.Warnings, "\n")
	if !strings.Contains(joined, "fewer FLOPs, not faster FLOPs") || !strings.Contains(joined, "40.0% fewer FLOPs per sample") {
		t.Errorf("warnings %q: want the faster-with-fewer-FLOPs call-out", rep.Warnings)
	}
	// Throughput never gates: no metric row of its own.
	for _, m := range rep.Metrics {
		if strings.Contains(m.Name, "samples") || strings.Contains(m.Name, "flops") {
			t.Errorf("metric %s: throughput and FLOPs must not be gate metrics", m.Name)
		}
	}
	// The same work, faster: no call-out.
	rep = Compare([]Run{base}, []Run{workRun(20, 70, 3e11)}, Options{})
	if strings.Contains(strings.Join(rep.Warnings, "\n"), "fewer FLOPs") {
		t.Errorf("same FLOPs, faster: warnings %q", rep.Warnings)
	}
	// Neither side has work: no section.
	if rep := Compare([]Run{{analysis.FromSteps(trace.New("a", trace.FormatKineto), false, base[0].Steps, nil)}}, []Run{{analysis.FromSteps(trace.New("b", trace.FormatKineto), false, base[0].Steps, nil)}}, Options{}); rep.Work != nil {
		t.Errorf("work comparison %+v without work", rep.Work)
	}
}
