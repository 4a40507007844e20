package analysis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/trace"
	"github.com/gpugate/gpugate/trace/kineto"
	"github.com/gpugate/gpugate/trace/nsys"
)

// The invariants of docs/metrics.md ("Every GPU op is counted once", "The
// parts of a step lie within it"), checked on every fixture and on
// generated captures.

// opTotals counts the profile's GPU ops by kind, straight from the events.
func opTotals(p *trace.Profile) OpCounts {
	var c OpCounts
	for i := range p.GPU {
		switch p.GPU[i].Kind {
		case trace.Kernel:
			c.Kernels++
		case trace.Memcpy:
			c.Memcpy++
		case trace.Memset:
			c.Memset++
		}
	}
	return c
}

var (
	periodWarnRE = regexp.MustCompile(`repeats every (\d+) ops \(\d+% of ops repeat at that period; the steps hold (\d+)(?:–(\d+))? GPU ops each\)`)
	outsideRE    = regexp.MustCompile(`(\d+) GPU ops \((\d+) kernels, (\d+) copies, (\d+) memsets\) are in no step: (\d+) before the first step, (\d+) between steps, (\d+) after the last`)
)

// checkInvariants analyses p twice (trimmed, and with every step kept) and
// reports every broken invariant. It returns the trimmed result.
func checkInvariants(t *testing.T, name string, p *trace.Profile, opt Options) *Result {
	t.Helper()
	errorf := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s: %s", name, fmt.Sprintf(format, args...))
	}
	r := Analyze(p, opt)

	// Conservation: steps + left-out steps + pre-capture + outside = all.
	want := opTotals(p)
	var got OpCounts
	for i := range r.Steps {
		got = got.Plus(r.Steps[i].Ops())
	}
	for _, l := range r.LeftOut {
		got = got.Plus(l.OpCounts)
	}
	got = got.Plus(r.PreCapture).Plus(r.OutsideSteps)
	if got != want {
		errorf("steps %+v + left out + pre-capture %+v + outside %+v = %+v, want the profile's %+v", sumSteps(r.Steps), r.PreCapture, r.OutsideSteps, got, want)
	}
	if r.OutsideWhere[0]+r.OutsideWhere[1]+r.OutsideWhere[2] != r.OutsideSteps.Total() {
		errorf("outside ops by place %v do not add up to %d", r.OutsideWhere, r.OutsideSteps.Total())
	}
	var warned []string
	for _, w := range r.Warnings {
		if m := outsideRE.FindStringSubmatch(w); m != nil {
			warned = m[1:]
		}
	}
	o := r.OutsideSteps
	switch {
	case o.Total() == 0 && warned != nil:
		errorf("an outside-steps warning %q without ops outside the steps", warned)
	case o.Total() > 0 && warned == nil:
		errorf("%+v GPU ops outside the steps and no warning: %q", o, r.Warnings)
	case o.Total() > 0:
		wantW := []string{strconv.Itoa(o.Total()), strconv.Itoa(o.Kernels), strconv.Itoa(o.Memcpy), strconv.Itoa(o.Memset),
			strconv.Itoa(r.OutsideWhere[0]), strconv.Itoa(r.OutsideWhere[1]), strconv.Itoa(r.OutsideWhere[2])}
		if strings.Join(warned, " ") != strings.Join(wantW, " ") {
			errorf("outside warning numbers %v, want %v", warned, wantW)
		}
	}

	// Every step's parts lie within it: on all steps, the left-out ones too.
	all := opt
	all.KeepEdges, all.FirstStep, all.MaxSteps = true, 0, 0
	ra := Analyze(p, all)
	for i := range ra.Steps {
		checkParts(t, name, ra.HasGPU, &ra.Steps[i])
	}

	// The period the warning states is the steps' own op count.
	if ra.StepMethod == StepsKernelPeriod && !ra.WholeProfile {
		var m []string
		for _, w := range ra.Warnings {
			if m = periodWarnRE.FindStringSubmatch(w); m != nil {
				break
			}
		}
		if m == nil && !strings.HasPrefix(ra.Steps[0].Name, "phase") {
			errorf("kernel-period steps without a period warning: %q", ra.Warnings)
		}
		if m != nil {
			lo, hi := stepOpsRange(ra.Steps)
			wlo, _ := strconv.Atoi(m[2])
			whi := wlo
			if m[3] != "" {
				whi, _ = strconv.Atoi(m[3])
			}
			if lo != wlo || hi != whi {
				errorf("warning says the steps hold %d–%d GPU ops, they hold %d–%d", wlo, whi, lo, hi)
			}
		}
	}
	if ra.WholeProfile && ra.StepConfidence != 0 {
		errorf("whole profile with confidence %v", ra.StepConfidence)
	}
	return r
}

func sumSteps(steps []Step) OpCounts {
	var c OpCounts
	for i := range steps {
		c = c.Plus(steps[i].Ops())
	}
	return c
}

func stepOpsRange(steps []Step) (lo, hi int) {
	lo = -1
	for i := range steps {
		n := steps[i].Ops().Total()
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	return lo, hi
}

// checkParts checks one step's time parts against its step time.
func checkParts(t *testing.T, name string, hasGPU bool, s *Step) {
	t.Helper()
	st := s.StepTime()
	bad := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s %s [%d, %d): %s", name, s.Name, s.Start, s.End, fmt.Sprintf(format, args...))
	}
	if st < 0 {
		bad("step time %d < 0", st)
	}
	parts := []struct {
		what string
		v    int64
	}{{"sync_time", s.SyncTime}, {"data_wait", s.DataWait}}
	if hasGPU {
		parts = append(parts, []struct {
			what string
			v    int64
		}{{"gpu_busy", s.GPUBusy}, {"cpu_wait", s.CPUWait}, {"comm_time", s.CommTime}, {"exposed_comm", s.ExposedComm},
			{"exposed_copy", s.ExposedCopy}, {"compute", s.Compute}, {"gpu_idle", s.GPUIdle()}}...)
	}
	for _, p := range parts {
		if p.v < 0 || p.v > st {
			bad("%s = %d ns, outside [0, step_time %d]", p.what, p.v, st)
		}
	}
	if !hasGPU {
		return
	}
	switch {
	case s.CPUWait > s.GPUIdle():
		bad("cpu_wait %d > gpu_idle %d", s.CPUWait, s.GPUIdle())
	case s.DataWait > s.CPUWait:
		bad("data_wait %d > cpu_wait %d", s.DataWait, s.CPUWait)
	case s.ExposedComm > s.CommTime:
		bad("exposed_comm %d > comm_time %d", s.ExposedComm, s.CommTime)
	case s.Compute+s.ExposedComm+s.ExposedCopy != s.GPUBusy:
		bad("compute %d + exposed_comm %d + exposed_copy %d != gpu_busy %d", s.Compute, s.ExposedComm, s.ExposedCopy, s.GPUBusy)
	}
}

// TestInvariantsFixtures checks the invariants on every Kineto and nsys
// SQLite fixture (the .nsys-rep fixture needs nsys 2025.5 to export).
func TestInvariantsFixtures(t *testing.T) {
	var files []string
	for _, pat := range []string{"kineto/*/*.json.gz", "kineto/*/*/*.json.gz", "nsys-sqlite/*/*.sqlite"} {
		files = append(files, fixtures.Glob(t, pat)...)
	}
	if len(files) < 25 {
		t.Fatalf("found %d fixtures, want the 25 Kineto and 3 nsys SQLite files of PROVENANCE.md", len(files))
	}
	dir := fixtures.Dir(t)
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)
		var ps []*trace.Profile
		if strings.HasSuffix(f, ".sqlite") {
			var err error
			if ps, err = nsys.ReadFile(context.Background(), f); err != nil {
				t.Fatalf("%s: %v", rel, err)
			}
		} else {
			p, err := kineto.ReadFile(f)
			if err != nil {
				t.Fatalf("%s: %v", rel, err)
			}
			ps = []*trace.Profile{p}
		}
		for _, p := range ps {
			name := fmt.Sprintf("%s pid %d", rel, p.Process)
			r := checkInvariants(t, name, p, Options{})
			t.Logf("%s: %s, %d steps (+%d left out), ops %+v, pre-capture %+v, outside %+v %v",
				name, r.StepMethod, len(r.Steps), len(r.LeftOut), opTotals(p), r.PreCapture, r.OutsideSteps, r.OutsideWhere)
		}
	}
}

// gen builds a capture: ops launched by one thread in order, each launch
// call 2 µs long, the device running them in order (a launch that finds the
// device busy queues behind the previous op), optional step ranges.
type gen struct {
	p    *trace.Profile
	corr int64
	t    int64 // host clock: end of the last launch call
	dev  int64 // device clock: end of the last op
	// side puts the next ops on a second stream, which starts them 1 µs
	// after their launch whatever the first stream runs.
	side bool
}

func newGen(name string) *gen {
	return &gen{p: trace.New(name, trace.FormatKineto), t: 1000}
}

// op launches one op after a host gap; dur is its GPU time.
func (g *gen) op(kind trace.Kind, name string, gap, dur int64) {
	p := g.p
	api := map[trace.Kind]string{trace.Kernel: "cudaLaunchKernel", trace.Memcpy: "cudaMemcpyAsync", trace.Memset: "cudaMemsetAsync"}[kind]
	g.corr++
	start := g.t + gap
	p.API = append(p.API, trace.APICall{Start: start, End: start + 2000, Corr: g.corr, Thread: 1, Name: p.Names.InternString(api)})
	g.t = start + 2000
	s := max(start+1000, g.dev)
	if g.side {
		s = start + 1000
	}
	op := trace.GPUOp{Start: s, End: s + dur, Corr: g.corr, Name: p.Names.InternString(name), Kind: kind}
	switch name {
	case "H2D":
		op.Copy, op.Src, op.Dst, op.Bytes = trace.HtoD, trace.Pageable, trace.DeviceMem, 4096
	case "D2H":
		op.Copy, op.Src, op.Dst, op.Bytes = trace.DtoH, trace.DeviceMem, trace.Pageable, 4096
	}
	p.GPU = append(p.GPU, op)
	g.dev = max(g.dev, s+dur)
}

// sync is a cudaStreamSynchronize that returns when the device is idle.
func (g *gen) sync(gap int64) {
	p := g.p
	g.corr++
	start := g.t + gap
	end := max(start+1000, g.dev+500)
	p.API = append(p.API, trace.APICall{Start: start, End: end, Corr: g.corr, Thread: 1, Name: p.Names.InternString("cudaStreamSynchronize")})
	g.t = end
}

func (g *gen) rng(name string, thread, lo, hi int64) {
	g.p.Ranges = append(g.p.Ranges, trace.Range{Start: lo, End: hi, Thread: thread, Name: g.p.Names.InternString(name)})
}

func (g *gen) done() *trace.Profile { g.p.Sort(); return g.p }

// TestFiveIdenticalGEMMs is the case: five back-to-back launches of
// one GEMM, no step markers, the device falling behind. Before, the period
// was 2 (tolerance ±3 positions), the steps held 3 and 1 kernels, and the
// fifth kernel was in no step but counted in step 1's busy time.
func TestFiveIdenticalGEMMs(t *testing.T) {
	g := newGen("gemm5")
	for range 5 {
		g.op(trace.Kernel, "ampere_sgemm_128x64_nn", 500, 40_000)
	}
	p := g.done()
	r := checkInvariants(t, "five GEMMs", p, Options{KeepEdges: true})
	if r.StepMethod != StepsKernelPeriod && !r.WholeProfile {
		t.Fatalf("method %s, want kernel-period or the whole profile", r.StepMethod)
	}
	var kernels int
	for _, s := range r.Steps {
		kernels += s.Kernels
		if !r.WholeProfile && s.Kernels != 1 {
			t.Errorf("%s: %d kernels, want 1 (period 1)", s.Name, s.Kernels)
		}
	}
	if kernels != 5 || r.OutsideSteps.Total() != 0 {
		t.Errorf("steps hold %d kernels, %+v outside; want all 5 in steps", kernels, r.OutsideSteps)
	}
	if !r.WholeProfile && !strings.Contains(strings.Join(r.Warnings, "\n"), "repeats every 1 ops") {
		t.Errorf("warnings %q do not give period 1", r.Warnings)
	}
	// Random launch gaps and kernel times. Before, these gave 3+1, 2+1+1,
	// 1+2+1, 1+1+1+1 (a kernel lost), 4+1, 2+2+1 kernels per step.
	rnd := rand.New(rand.NewPCG(5, 5))
	for range 500 {
		g := newGen("gemm5")
		dur := int64(1000 + rnd.IntN(60_000))
		for range 5 {
			g.op(trace.Kernel, "gemm", int64(rnd.IntN(20_000)), dur)
		}
		r := checkInvariants(t, "five GEMMs, random gaps", g.done(), Options{KeepEdges: true})
		var per []int
		for _, s := range r.Steps {
			per = append(per, s.Kernels)
		}
		if r.WholeProfile && per[0] != 5 || !r.WholeProfile && fmt.Sprint(per) != "[1 1 1 1 1]" {
			t.Errorf("five GEMMs (%d ns each): %s steps of %v kernels, want 5 of 1 or one window", dur, r.StepMethod, per)
		}
	}
}

// TestOneShotNotPeriodic: H2D, H2D, kernel, D2H once does not repeat; it is
// one window with confidence 0. Before, it was "100% repeating" at period 2.
func TestOneShotNotPeriodic(t *testing.T) {
	g := newGen("oneshot")
	g.op(trace.Memcpy, "H2D", 500, 3000)
	g.op(trace.Memcpy, "H2D", 500, 3000)
	g.op(trace.Kernel, "gemm", 500, 20_000)
	g.op(trace.Memcpy, "D2H", 500, 3000)
	r := checkInvariants(t, "one-shot", g.done(), Options{})
	if !r.WholeProfile || r.StepConfidence != 0 || len(r.Steps) != 1 || r.Steps[0].Ops() != (OpCounts{1, 3, 0}) {
		t.Errorf("whole %v, confidence %v, %d steps (first %+v); want one window holding 1 kernel and 3 copies", r.WholeProfile, r.StepConfidence, len(r.Steps), r.Steps[0].Ops())
	}
}

// TestPartialRepetitionOutside: a, b, a, b, a — two steps of period 2 and
// a last partial repetition, which is in no step: counted in
// outside_steps, and not in the last step's kernels or busy time although
// it runs in that step's window (on a second stream, while the step's last
// kernel runs).
func TestPartialRepetitionOutside(t *testing.T) {
	g := newGen("partial")
	for _, n := range []string{"a", "b", "a", "b"} {
		g.op(trace.Kernel, n, 500, 10_000)
	}
	g.side = true
	g.op(trace.Kernel, "a", 500, 3_000)
	p := g.done()
	r := checkInvariants(t, "partial", p, Options{KeepEdges: true})
	if r.StepMethod != StepsKernelPeriod || len(r.Steps) != 2 {
		t.Fatalf("%s with %d steps, want 2 kernel-period steps", r.StepMethod, len(r.Steps))
	}
	if r.OutsideSteps != (OpCounts{Kernels: 1}) || r.OutsideWhere != [3]int{0, 0, 1} {
		t.Errorf("outside %+v at %v, want 1 kernel, launched after the last step", r.OutsideSteps, r.OutsideWhere)
	}
	// Each step's busy time is its own two kernels: 20 µs.
	for _, s := range r.Steps {
		if s.Kernels != 2 || s.GPUBusy != 20_000 {
			t.Errorf("%s: %d kernels, busy %d; want 2, 20000", s.Name, s.Kernels, s.GPUBusy)
		}
	}
}

// TestSyncTimeWithinStep: a marked step whose first call synchronizes with
// the previous step's GPU work: the call starts at h0 but the window starts
// at s0 > h0, when that work ends. sync_time is the call's time inside the
// window. Before, it was the whole call, longer than the step.
func TestSyncTimeWithinStep(t *testing.T) {
	g := newGen("sync")
	// Step 1: [1000, 5000) host; a 100 µs kernel launched at 2000.
	g.t = 1000
	g.op(trace.Kernel, "long", 1000, 100_000) // API [2000, 4000), GPU [3000, 103000)
	g.rng("ProfilerStep#1", 1, 1000, 5000)
	// Step 2 starts at 5000: a sync that waits for the long kernel, a short
	// kernel, and the step ends at 110000.
	g.t = 5000
	g.sync(0) // [5000, 103500)
	g.op(trace.Kernel, "short", 500, 1000)
	g.rng("ProfilerStep#2", 1, 5000, 110_000)
	p := g.done()
	r := checkInvariants(t, "sync", p, Options{KeepEdges: true})
	if len(r.Steps) != 2 {
		t.Fatalf("%d steps", len(r.Steps))
	}
	s := r.Steps[1]
	// s0 = max(h0 = 5000, previous s1 = 103000) = 103000; the call ends at
	// 103500: 500 ns of it lie in the window.
	if s.Start != 103_000 || s.SyncCalls != 1 || s.SyncTime != 500 {
		t.Errorf("step 2: start %d, %d syncs, sync time %d; want 103000, 1, 500", s.Start, s.SyncCalls, s.SyncTime)
	}
}

// TestInvariantsGenerated checks the invariants on generated captures:
// every sequence of 1–6 ops over a few names, one-shot copy and kernel
// sequences, period-1 loops, and random step layouts with marked steps
// that leave ops between them.
func TestInvariantsGenerated(t *testing.T) {
	kinds := []struct {
		kind trace.Kind
		name string
	}{{trace.Kernel, "gemm"}, {trace.Kernel, "relu"}, {trace.Memcpy, "H2D"}, {trace.Memcpy, "D2H"}, {trace.Memset, "memset"}}
	rnd := rand.New(rand.NewPCG(30, 1))
	n := 0
	// Every sequence of length 1–4 over the 5 op kinds, and random ones
	// of 5 and 6, with random host gaps and durations.
	var seqs [][]int
	var walk func(seq []int, k int)
	walk = func(seq []int, k int) {
		if len(seq) == k {
			seqs = append(seqs, append([]int(nil), seq...))
			return
		}
		for i := range kinds {
			walk(append(seq, i), k)
		}
	}
	for k := 1; k <= 4; k++ {
		walk(nil, k)
	}
	for range 400 {
		seq := make([]int, 5+rnd.IntN(2))
		for i := range seq {
			seq[i] = rnd.IntN(len(kinds))
		}
		seqs = append(seqs, seq)
	}
	for _, seq := range seqs {
		g := newGen("seq")
		var names []string
		for _, k := range seq {
			g.op(kinds[k].kind, kinds[k].name, int64(rnd.IntN(20_000)), int64(1000+rnd.IntN(30_000)))
			names = append(names, kinds[k].name)
		}
		if rnd.IntN(3) == 0 {
			g.sync(int64(rnd.IntN(5000)))
		}
		p := g.done()
		r := checkInvariants(t, strings.Join(names, ","), p, Options{KeepEdges: true})
		checkPeriod(t, strings.Join(names, ","), p, r, names)
		n++
	}
	// Period-1 loops of 1 to 12 launches, the device behind or ahead.
	for k := 1; k <= 12; k++ {
		for _, dur := range []int64{500, 40_000} {
			g := newGen("loop")
			for range k {
				g.op(trace.Kernel, "gemm", 1000, dur)
			}
			name := fmt.Sprintf("%d× gemm (%d ns)", k, dur)
			r := checkInvariants(t, name, g.done(), Options{KeepEdges: true})
			if !r.WholeProfile {
				for _, s := range r.Steps {
					if s.Kernels != 1 {
						t.Errorf("%s: %s holds %d kernels, want period 1", name, s.Name, s.Kernels)
					}
				}
			}
			n++
		}
	}
	// Random marked step layouts: 1–6 iterations of a random sequence,
	// each iteration wrapped in a ProfilerStep range that may start late
	// or end early (ops launched between steps), a data-loader range and a
	// sync in some, and warm-up/measured selections.
	for it := range 300 {
		g := newGen("marked")
		iters := 1 + rnd.IntN(6)
		body := make([]int, 1+rnd.IntN(5))
		for i := range body {
			body[i] = rnd.IntN(len(kinds))
		}
		for s := range iters {
			h0 := g.t + int64(rnd.IntN(3000))
			if rnd.IntN(2) == 0 {
				g.rng("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 1, h0, h0+int64(rnd.IntN(20_000)))
				g.t = h0 + 20_000
			}
			lateStart := rnd.IntN(4) == 0
			if !lateStart {
				g.t = max(g.t, h0)
			}
			for _, k := range body {
				g.op(kinds[k].kind, kinds[k].name, int64(rnd.IntN(10_000)), int64(1000+rnd.IntN(60_000)))
			}
			if rnd.IntN(2) == 0 {
				g.sync(int64(rnd.IntN(2000)))
			}
			h1 := g.t + int64(rnd.IntN(2000))
			lo := h0
			if lateStart {
				lo = g.t - 1500 // the range starts after the first launches
			}
			if rnd.IntN(5) == 0 {
				h1 = g.t - 1000 // the last launch call ends after the range
			}
			g.rng(fmt.Sprintf("ProfilerStep#%d", s+1), 1, min(lo, h1-1), h1)
			g.t = max(g.t, h1)
		}
		opt := Options{FirstStep: rnd.IntN(3), MaxSteps: rnd.IntN(4)}
		checkInvariants(t, fmt.Sprintf("marked layout %d (%d iterations of %v, %+v)", it, iters, body, opt), g.done(), opt)
		n++
	}
	t.Logf("%d generated captures", n)
}

// checkPeriod checks inferred steps on a generated sequence of op names:
// when the sequence repeats exactly with a smallest period P0 at least
// three times (twice: see below), the steps are kernel-period steps of P0
// ops; and kernel-period steps launch the same ops.
func checkPeriod(t *testing.T, name string, p *trace.Profile, r *Result, names []string) {
	t.Helper()
	m, p0 := len(names), 0
	for P := 1; 2*P <= m && m >= 4 && p0 == 0; P++ {
		exact := true
		for i := 0; i+P < m; i++ {
			exact = exact && names[i] == names[i+P]
		}
		if exact {
			p0 = P
		}
	}
	if p0 > 0 {
		// With two repetitions only, the step boundary (after the longest
		// launch gap) may cut one of them: one window is then right too.
		if r.StepMethod != StepsKernelPeriod && (m >= 3*p0 || !r.WholeProfile) {
			t.Errorf("%s: repeats with period %d, but %s", name, p0, r.StepMethod)
			return
		}
		for _, s := range r.Steps {
			if r.WholeProfile {
				break
			}
			if s.Ops().Total() != p0 {
				t.Errorf("%s: %s holds %d ops, want the period %d", name, s.Name, s.Ops().Total(), p0)
			}
		}
	}
	if r.StepMethod != StepsKernelPeriod {
		return
	}
	launch := map[int64]int64{}
	for _, a := range p.API {
		launch[a.Corr] = a.Start
	}
	bags := make([]map[string]int, len(r.Steps))
	for i := range p.GPU {
		l := launch[p.GPU[i].Corr]
		for k, s := range r.Steps {
			if l >= s.HostStart && l < s.HostEnd {
				if bags[k] == nil {
					bags[k] = map[string]int{}
				}
				bags[k][p.Names.String(p.GPU[i].Name)]++
			}
		}
	}
	for k := 1; k < len(bags); k++ {
		if fmt.Sprint(bags[k]) != fmt.Sprint(bags[0]) {
			t.Errorf("%s: step %d launches %v, step 1 %v: the period does not repeat", name, k+1, bags[k], bags[0])
		}
	}
}
