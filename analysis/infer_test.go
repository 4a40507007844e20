package analysis

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/trace"
	"github.com/gpugate/gpugate/trace/kineto"
	"github.com/gpugate/gpugate/trace/nsys"
)

// hide returns a copy of p without the ranges whose names match any of res.
func hide(p *trace.Profile, res ...*regexp.Regexp) *trace.Profile {
	q := *p
	q.Ranges = nil
	var drop []bool
	for _, re := range res {
		m := p.Names.Match(re)
		if drop == nil {
			drop = m
			continue
		}
		for i := range m {
			drop[i] = drop[i] || m[i]
		}
	}
	for _, rg := range p.Ranges {
		if !drop[rg.Name] {
			q.Ranges = append(q.Ranges, rg)
		}
	}
	return &q
}

// boundaryError compares inferred steps with marked ones: the distance of
// the first step's start, and the largest distance between any other pair
// of corresponding window boundaries (s0 and s1), as fractions of the
// median marked step time. The first start is apart because nothing
// before the first recorded event can place it. The kernel period leaves
// out a partial first repetition, so the inferred steps may begin at the
// second marked one: both pairings are tried and the better one counts.
func boundaryError(marked, inferred []Step) (first, rest float64) {
	f0, r0 := boundaryErrorAt(marked, inferred)
	if len(marked) > 1 && len(inferred) < len(marked) {
		if f1, r1 := boundaryErrorAt(marked[1:], inferred); r1 < r0 {
			return f1, r1
		}
	}
	return f0, r0
}

func boundaryErrorAt(marked, inferred []Step) (first, rest float64) {
	d := make([]int64, len(marked))
	for i := range marked {
		d[i] = marked[i].StepTime()
	}
	slices.Sort(d)
	med := float64(d[len(d)/2])
	abs := func(x int64) float64 { return float64(max(x, -x)) }
	for i := range min(len(marked), len(inferred)) {
		m, f := &marked[i], &inferred[i]
		if i == 0 {
			first = abs(m.Start-f.Start) / med
		} else {
			rest = max(rest, abs(m.Start-f.Start)/med)
		}
		rest = max(rest, abs(m.End-f.End)/med)
	}
	return first, rest
}

// TestInferStepsGroundTruth hides the ProfilerStep markers of every Kineto
// fixture that has them, infers the steps and compares them with the
// marked ones. A second pass hides the optimizer and FSDP ranges as well,
// so that only the GPU op period is left. Where the boundaries are off by
// more than 1% of the step time, maxErr says by how much and the comment
// says why; the count must always be exact unless wantN says otherwise.
// Steps are compared before Analyze leaves out the edges (KeepEdges): the
// boundaries of every inferred step are checked.
func TestInferStepsGroundTruth(t *testing.T) {
	hideSteps := DefaultStepPattern
	hideAll := []*regexp.Regexp{hideSteps, optimizerRE, fusedOptimizerRE, fsdpForwardRE}
	type want struct {
		method string
		n      int     // -1: the marked count
		maxErr float64 // window boundaries, fraction of the median step time
	}
	for _, c := range []struct {
		rel       string
		opt, bare want
	}{
		// Optimizer.step ends 0.2 ms before ProfilerStep's boundary; the
		// op sequence repeats exactly (4,458 GPU ops per step).
		{"kineto/hta-df-index-resolver-v100-2rank/df_index_resolver.json.gz", want{StepsOptimizer, -1, 0.01}, want{StepsKernelPeriod, -1, 0.01}},
		// A 25 ms metrics update (RecMetricModule:update) runs after the
		// optimizer in each iteration: it falls into the next inferred step.
		// Without the optimizer the period (1,375 ops) is found once the 872
		// ops launched before the capture are left out of the sequence, and
		// the boundaries are exact.
		{"kineto/hta-negative-queue-length-a100-16rank/rank0.json.gz", want{StepsOptimizer, -1, 0.02}, want{StepsKernelPeriod, -1, 0.01}},
		{"kineto/hta-ns-resolution-v100-resnet/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", want{StepsOptimizer, -1, 0.01}, want{StepsKernelPeriod, -1, 0.01}},
		// Without the optimizer the longest launch gap lies 10 ms before
		// the end of an iteration: the first, partial repetition is
		// dropped and each boundary is 2% early.
		{"kineto/hta-trace-diff/control.json.gz", want{StepsOptimizer, -1, 0.01}, want{StepsKernelPeriod, 5, 0.03}},
		{"kineto/hta-trace-diff/test.json.gz", want{StepsOptimizer, -1, 0.01}, want{StepsKernelPeriod, 5, 0.03}},
		// Upstream-sampled traces (HTA removed most events): 2% boundary
		// error; two repetitions of a thinned sequence do not repeat.
		{"kineto/hta-sampled-128rank/sampled_rank-0.json.gz", want{StepsOptimizer, -1, 0.02}, want{StepsWhole, 1, 1}},
		{"kineto/hta-sampled-128rank/sampled_rank-1.json.gz", want{StepsOptimizer, -1, 0.02}, want{StepsWhole, 1, 1}},
		// One optimizer step; the second marked step is a 49 µs stub after it.
		{"kineto/hta-amd-mi250-rocm/mi250_minitoy_train_ROCm6_2_kineto.json.gz", want{StepsOptimizer, 1, 0.01}, want{StepsWhole, 1, 1}},
		// CPU only: 4-6 ms of host work after Adagrad.step in each step.
		// Without GPU ops there is no sequence to repeat.
		{"kineto/hta-cpu-only-edge/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", want{StepsOptimizer, -1, 0.03}, want{StepsWhole, 1, 10}},
		// Legacy 2021 format: exact without the optimizer too (the period's
		// tie-break on exact recurrence finds the iteration's phase).
		{resnet + "num_workers_0/worker0.1623143089861.pt.trace.json.gz", want{StepsOptimizer, -1, 0.01}, want{StepsKernelPeriod, -1, 0.01}},
		{resnet + "num_workers_0/worker0.1623143566756.pt.trace.json.gz", want{StepsOptimizer, -1, 0.01}, want{StepsKernelPeriod, -1, 0.01}},
		{resnet + "num_workers_0_nometa/worker0.pt.trace.json.gz", want{StepsOptimizer, -1, 0.01}, want{StepsKernelPeriod, -1, 0.01}},
		// The last marked step runs 85 ms past its optimizer step (the
		// profiler's last step waits for the 4 loader workers' next batch):
		// the last inferred step ends at the optimizer.
		{resnet + "num_workers_4/worker0.1623213129365.pt.trace.json.gz", want{StepsOptimizer, -1, 0.70}, want{StepsKernelPeriod, -1, 0.70}},
		// One step per rank: nothing repeats without the optimizer.
		{"kineto/param-dlrm-8rank-v100/worker0_step_12.1694128201545.pt.trace.json.gz", want{StepsOptimizer, -1, 0.01}, want{StepsWhole, 1, 1}},
	} {
		p, err := kineto.ReadFile(fixtures.Path(t, c.rel))
		if err != nil {
			t.Fatal(err)
		}
		marked := Analyze(p, Options{KeepEdges: true})
		if marked.StepMethod != StepsMarked || marked.StepConfidence != 1 {
			t.Errorf("%s: marked steps report method %q confidence %v", c.rel, marked.StepMethod, marked.StepConfidence)
		}
		for _, mode := range []struct {
			name string
			res  []*regexp.Regexp
			want want
		}{{"markers hidden", []*regexp.Regexp{hideSteps}, c.opt}, {"markers and optimizer hidden", hideAll, c.bare}} {
			r := Analyze(hide(p, mode.res...), Options{KeepEdges: true})
			wantN := mode.want.n
			if wantN < 0 {
				wantN = len(marked.Steps)
			}
			first, we := boundaryError(marked.Steps, r.Steps)
			if r.StepMethod == StepsWhole {
				we = 0 // one window: boundaries are not comparable
			}
			t.Logf("%s, %s: %s %d steps (marked %d), confidence %.2f, boundary error %.2f%% (first start %.2f%%)",
				c.rel, mode.name, r.StepMethod, len(r.Steps), len(marked.Steps), r.StepConfidence, 100*we, 100*first)
			if r.StepMethod != mode.want.method || len(r.Steps) != wantN {
				t.Errorf("%s, %s: %s with %d steps, want %s with %d", c.rel, mode.name, r.StepMethod, len(r.Steps), mode.want.method, wantN)
				continue
			}
			if we > mode.want.maxErr {
				t.Errorf("%s, %s: boundaries off by %.2f%% of the step time, want <= %.2f%%", c.rel, mode.name, 100*we, 100*mode.want.maxErr)
			}
			if r.StepMethod != StepsWhole && !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "inferred from") }) {
				t.Errorf("%s, %s: warnings %q do not say how the steps were found", c.rel, mode.name, r.Warnings)
			}
		}
	}
}

// TestInferStepsNsysH100 checks the H100 FSDP exports, which have op-level
// NVTX ranges but no step ranges, no optimizer and no root forward: the
// capture is shorter than one iteration.
func TestInferStepsNsysH100(t *testing.T) {
	for _, f := range []string{"mfu_2gpu_before.sqlite", "mfu_2gpu_after.sqlite"} {
		ps, err := nsys.ReadFile(context.Background(), fixtures.Path(t, "nsys-sqlite/nsysai-mfu-2gpu-h100/"+f))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			r := Analyze(p, Options{})
			var counts []int
			for _, s := range r.Steps {
				counts = append(counts, s.Kernels)
			}
			t.Logf("%s pid %d: %s, %d steps, confidence %.2f, kernels per step %v", f, p.Process, r.StepMethod, len(r.Steps), r.StepConfidence, counts)
			if r.StepMethod != StepsKernelPeriod || len(r.Steps) < 2 {
				t.Errorf("%s pid %d: %s with %d steps, want kernel-period steps", f, p.Process, r.StepMethod, len(r.Steps))
				continue
			}
			k := make([]int64, len(counts))
			for i, c := range counts {
				k[i] = int64(c)
			}
			if sh := share(k, 0.03); sh < 0.9 {
				t.Errorf("%s pid %d: kernel counts %v: only %.0f%% within 3%% of the median", f, p.Process, counts, 100*sh)
			}
			if !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "repeats every") }) {
				t.Errorf("%s pid %d: warnings %q do not say how the steps were found", f, p.Process, r.Warnings)
			}
		}
	}
}

// TestInferHandMade checks the FSDP and kernel-period methods on profiles
// built by hand, with the boundaries worked out on paper.
func TestInferHandMade(t *testing.T) {
	t.Run("fsdp", func(t *testing.T) {
		p := trace.New("fsdp", trace.FormatKineto)
		fwd := p.Names.InternString("FSDP::root_pre_forward")
		op := p.Names.InternString("aten::mm")
		for _, s := range []int64{100, 1100, 2100, 3100} {
			p.Ranges = append(p.Ranges, trace.Range{Start: s, End: s + 10, Thread: 1, Name: fwd},
				trace.Range{Start: s + 20, End: s + 900, Thread: 1, Name: op})
		}
		p.Sort()
		r := Analyze(p, Options{KeepEdges: true})
		want := [][2]int64{{100, 1100}, {1100, 2100}, {2100, 3100}, {3100, 4000}}
		if r.StepMethod != StepsFSDP || len(r.Steps) != len(want) {
			t.Fatalf("%s with %d steps, want %s with %d", r.StepMethod, len(r.Steps), StepsFSDP, len(want))
		}
		for i, w := range want {
			if s := r.Steps[i]; s.HostStart != w[0] || s.HostEnd != w[1] {
				t.Errorf("step %d: host [%d, %d), want [%d, %d)", i, s.HostStart, s.HostEnd, w[0], w[1])
			}
		}
	})
	t.Run("period", func(t *testing.T) {
		// Four iterations of kernels A B C D, launched 10 ns apart by
		// 2 ns calls, iterations 100 ns apart: the longest launch gap is
		// before A, so A starts each step.
		p := trace.New("period", trace.FormatKineto)
		launch := p.Names.InternString("cudaLaunchKernel")
		names := []trace.Name{p.Names.InternString("A"), p.Names.InternString("B"), p.Names.InternString("C"), p.Names.InternString("D")}
		corr := int64(0)
		for it := range int64(4) {
			for k, n := range names {
				t0 := 1000 + 100*it + 10*int64(k)
				corr++
				p.API = append(p.API, trace.APICall{Start: t0, End: t0 + 2, Corr: corr, Thread: 1, Name: launch})
				p.GPU = append(p.GPU, trace.GPUOp{Start: t0 + 5, End: t0 + 8, Corr: corr, Name: n, Kind: trace.Kernel})
			}
		}
		p.Sort()
		r := Analyze(p, Options{KeepEdges: true})
		// Step i's host window starts at the end of the previous iteration's
		// last launch (1000+100i-100+30+2), the first at the profile start.
		want := [][2]int64{{1000, 1032}, {1032, 1132}, {1132, 1232}, {1232, 1332}}
		if r.StepMethod != StepsKernelPeriod || len(r.Steps) != len(want) {
			t.Fatalf("%s with %d steps, want %s with %d", r.StepMethod, len(r.Steps), StepsKernelPeriod, len(want))
		}
		for i, w := range want {
			if s := r.Steps[i]; s.HostStart != w[0] || s.HostEnd != w[1] || s.Kernels != 4 {
				t.Errorf("step %d: host [%d, %d) with %d kernels, want [%d, %d) with 4", i, s.HostStart, s.HostEnd, s.Kernels, w[0], w[1])
			}
		}
		if r.StepConfidence < 0.89 {
			t.Errorf("confidence %.2f for an exact period, want 0.9", r.StepConfidence)
		}
	})
	t.Run("nothing repeats", func(t *testing.T) {
		p := trace.New("once", trace.FormatKineto)
		for i := range int64(8) {
			p.GPU = append(p.GPU, trace.GPUOp{Start: 10 * i, End: 10*i + 5, Name: p.Names.InternString(string(rune('a' + i))), Kind: trace.Kernel})
		}
		p.Sort()
		r := Analyze(p, Options{})
		if !r.WholeProfile || r.StepMethod != StepsWhole || r.StepConfidence != 0 {
			t.Errorf("whole %v, method %s, confidence %v; want the whole profile", r.WholeProfile, r.StepMethod, r.StepConfidence)
		}
	})
}
