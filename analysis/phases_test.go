package analysis

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/trace"
	"github.com/gpugate/gpugate/trace/kineto"
)

// loop appends iters iterations to p: each launches the kernels names (on
// the devices devs, one pass of names per device) every gap ns from start,
// one iteration every period ns, each kernel running dur ns. It returns the
// time after the loop.
func loop(p *trace.Profile, start, period, gap, dur int64, iters int, devs []int32, names ...string) int64 {
	launch := p.Names.InternString("cudaLaunchKernel")
	corr := int64(len(p.API))
	t := start
	for range iters {
		k := int64(0)
		for _, d := range devs {
			for _, n := range names {
				t0 := t + k*gap
				corr++
				p.API = append(p.API, trace.APICall{Start: t0, End: t0 + 2, Corr: corr, Thread: 1, Name: launch})
				p.GPU = append(p.GPU, trace.GPUOp{Start: t0 + 5, End: t0 + 5 + dur, Corr: corr, Name: p.Names.InternString(n), Kind: trace.Kernel, Device: d})
				k++
			}
		}
		t += period
	}
	return t
}

func kernelNames(prefix string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// TestInferTwoLoops: synthetic captures that concatenate two loops. The
// kernel period must not mix them into one set of steps at full
// confidence.
func TestInferTwoLoops(t *testing.T) {
	dev0 := []int32{0}
	t.Run("different kernels", func(t *testing.T) {
		// 8 iterations of 20 kernels, then 8 of 12 other kernels: no single
		// period (the old inference gave the whole profile).
		p := trace.New("two-loops", trace.FormatKineto)
		end := loop(p, 10000, 3500, 100, 90, 8, dev0, kernelNames("a", 20)...)
		loop(p, end, 700, 30, 25, 8, dev0, kernelNames("b", 12)...)
		p.Sort()
		r := Analyze(p, Options{KeepEdges: true})
		var ph1, ph2 int
		for _, s := range r.Steps {
			switch {
			case strings.HasPrefix(s.Name, "phase 1 ") && s.Kernels == 20:
				ph1++
			case strings.HasPrefix(s.Name, "phase 2 ") && s.Kernels == 12:
				ph2++
			default:
				t.Errorf("step %q with %d kernels", s.Name, s.Kernels)
			}
		}
		if r.StepMethod != StepsKernelPeriod || ph1 != 8 || ph2 != 8 {
			t.Errorf("%s: %d phase-1 and %d phase-2 steps, want kernel-period 8 and 8", r.StepMethod, ph1, ph2)
		}
		if r.StepConfidence > 0.45 {
			t.Errorf("confidence %.2f for two loops, want at most 0.45", r.StepConfidence)
		}
		if !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "two phases") }) {
			t.Errorf("warnings %q do not say there are two phases", r.Warnings)
		}
	})
	t.Run("same kernels, two sizes", func(t *testing.T) {
		// The MPI Jacobi case: one kernel sequence, iterations of 3.5 µs
		// and then 0.7 µs. The period is the same: the step times differ.
		p := trace.New("jacobi", trace.FormatKineto)
		names := kernelNames("k", 20)
		end := loop(p, 10000, 3500, 100, 90, 8, dev0, names...)
		loop(p, end, 700, 30, 25, 8, dev0, names...)
		p.Sort()
		// The edges left out as usual: the first inferred step starts with
		// the profile and is partial.
		r := Analyze(p, Options{})
		if r.StepMethod != StepsKernelPeriod || len(r.Steps) != 14 {
			t.Fatalf("%s with %d steps, want kernel-period steps", r.StepMethod, len(r.Steps))
		}
		if !strings.HasPrefix(r.Steps[0].Name, "phase 1 ") || !strings.HasPrefix(r.Steps[len(r.Steps)-1].Name, "phase 2 ") {
			t.Errorf("steps named %q … %q, want phase 1 … phase 2", r.Steps[0].Name, r.Steps[len(r.Steps)-1].Name)
		}
		if r.StepConfidence > 0.45 {
			t.Errorf("confidence %.2f for two loops of different step times, want at most 0.45 (it was 0.90)", r.StepConfidence)
		}
		if !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "two phases") && strings.Contains(w, "--step-pattern") }) {
			t.Errorf("warnings %q do not say there are two phases", r.Warnings)
		}
	})
	t.Run("one loop", func(t *testing.T) {
		// The control: one loop keeps its confidence and plain names.
		p := trace.New("one-loop", trace.FormatKineto)
		loop(p, 10000, 3500, 100, 90, 8, dev0, kernelNames("k", 20)...)
		p.Sort()
		r := Analyze(p, Options{KeepEdges: true})
		if r.StepMethod != StepsKernelPeriod || len(r.Steps) != 8 || r.StepConfidence < 0.89 || strings.HasPrefix(r.Steps[0].Name, "phase") {
			t.Errorf("%s, %d steps, confidence %.2f, first %q; want 8 kernel-period steps at 0.9", r.StepMethod, len(r.Steps), r.StepConfidence, r.Steps[0].Name)
		}
	})
}

// TestInferTwoGPUsOneProcess: one process drives two GPUs and launches the
// same 10 kernels on each in every iteration. By names alone the period is
// half an iteration (each iteration split in two "steps" at 0.90); by name
// and device it is the iteration.
func TestInferTwoGPUsOneProcess(t *testing.T) {
	p := trace.New("two-gpus", trace.FormatNsys)
	loop(p, 10000, 3000, 100, 90, 6, []int32{0, 1}, kernelNames("k", 10)...)
	p.Sort()
	r := Analyze(p, Options{KeepEdges: true})
	if r.StepMethod != StepsKernelPeriod || len(r.Steps) != 6 {
		t.Fatalf("%s with %d steps, want kernel-period with the 6 iterations", r.StepMethod, len(r.Steps))
	}
	for _, s := range r.Steps {
		if s.Kernels != 20 {
			t.Errorf("%s: %d kernels, want 20 (10 on each GPU)", s.Name, s.Kernels)
		}
	}
}

// TestInferAnnotationB200: the B200 prefill capture has no step markers
// and no optimizer; its 768 kernels repeat with the period of one
// transformer layer (48 ops), all inside one top-level user annotation,
// execute_context_1(…)_generation_0(0), which holds all 768 kernel
// launches (plain json: 768 kernel events, one user_annotation of that
// name on the launching thread). The annotation is the unit: one step, at
// a single step's confidence (0.9 × 0.5).
func TestInferAnnotationB200(t *testing.T) {
	p, err := kineto.ReadFile(fixtures.Path(t, "kineto/tracelens-b200-eager-nosteps/eager_trace.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	r := Analyze(p, Options{})
	if r.StepMethod != StepsAnnotation || len(r.Steps) != 1 || !strings.HasPrefix(r.Steps[0].Name, "execute_context_1(") {
		t.Fatalf("%s with %d steps (%v), want one annotation step", r.StepMethod, len(r.Steps), r.Steps)
	}
	if r.Steps[0].Kernels != 768 || r.StepConfidence != 0.45 {
		t.Errorf("%d kernels, confidence %.2f; want 768, 0.45", r.Steps[0].Kernels, r.StepConfidence)
	}
}
