package analysis

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/trace"
	"github.com/gpugate/gpugate/trace/kineto"
)

// TestMemoryFixtureModern checks per-step peaks on the real modern-format
// trace with profile_memory on against numbers computed independently of
// gpugate: analysis/testdata/memory_peaks.py reads the raw events with
// Python's json module and prints, per ProfilerStep#N window [ts, ts+dur)
// and device, the largest Total Allocated / Total Reserved among the
// window's [memory] events and the last one before it:
//
//	python3 analysis/testdata/memory_peaks.py \
//	  ../shared/fixtures/kineto/hta-df-index-resolver-v100-2rank/df_index_resolver.json.gz
//	ProfilerStep#3 cuda:1 peak_alloc_bytes=6629508096 peak_reserved_bytes=12782141440 events=5354
//	ProfilerStep#3 host peak_alloc_bytes=8 peak_reserved_bytes=0 events=248
//	(the same for #2..#6; #2 and #6 are the edge steps the analysis leaves out)
func TestMemoryFixtureModern(t *testing.T) {
	r := analyzeFixture(t, "kineto/hta-df-index-resolver-v100-2rank/df_index_resolver.json.gz")
	// The reader keeps every [memory] event: 26770 of CUDA device 1 and
	// 1240 of the host allocator (Device Type 0, Device Id -1), counted
	// with Python's json module.
	cuda, host := 0, 0
	for _, e := range r.Profile.Memory {
		switch {
		case e.Flags&trace.MemCUDA != 0 && e.Device == 1 && e.Flags&trace.MemTotals != 0 && e.Flags&trace.MemReserved != 0:
			cuda++
		case e.Flags&trace.MemCUDA == 0 && e.Device == -1 && e.Flags&trace.MemTotals != 0:
			host++
		}
	}
	if cuda != 26770 || host != 1240 || len(r.Profile.Memory) != 28010 {
		t.Errorf("memory events: %d CUDA, %d host of %d; want 26770 and 1240 of 28010", cuda, host, len(r.Profile.Memory))
	}
	if len(r.Steps) != 3 || len(r.MemDevices) != 3 {
		t.Fatalf("%d steps, %d memory rows; want 3 (ProfilerStep#3..#5)", len(r.Steps), len(r.MemDevices))
	}
	for i, s := range r.Steps {
		devs := r.MemDevices[i]
		if len(devs) != 2 {
			t.Fatalf("%s: devices %+v, want cuda:1 and host", s.Name, devs)
		}
		cuda, host := devs[0], devs[1]
		if !cuda.CUDA || cuda.Device != 1 || cuda.Relative || *cuda.PeakAlloc != 6629508096 || *cuda.PeakReserved != 12782141440 || cuda.Events != 5354 {
			t.Errorf("%s cuda = %+v (alloc %d reserved %d), want device 1 alloc 6629508096 reserved 12782141440, 5354 events", s.Name, cuda, *cuda.PeakAlloc, *cuda.PeakReserved)
		}
		if host.CUDA || host.Device != -1 || *host.PeakAlloc != 8 || host.PeakReserved != nil || host.Events != 248 {
			t.Errorf("%s host = %+v, want device -1 alloc 8, no reserved, 248 events", s.Name, host)
		}
		if s.Memory.Source != MemFromTrace || s.Memory.Device != 1 || s.Memory.Peak != 6629508096 || s.Memory.Reserved != 12782141440 {
			t.Errorf("%s gated memory = %+v, want the CUDA device's", s.Name, s.Memory)
		}
	}
	sum := r.Summaries()
	if got, want := sum["peak_memory_MiB"].Median, 6629508096.0/(1<<20); math.Abs(got-want) > 1e-9 {
		t.Errorf("peak_memory_MiB median = %v, want %v", got, want)
	}
	if _, ok := sum["alloc_growth_MiB"]; ok {
		t.Errorf("alloc_growth present on a trace with totals")
	}
	if _, ok := sum["rss_MiB"]; ok {
		t.Errorf("rss present without hook samples")
	}
}

// TestMemoryFixtureLegacy: the 2021 form carries only Bytes. Expected
// values from analysis/testdata/memory_peaks.py (running sum of Bytes from
// each ProfilerStep window's start, its maximum, and the window's events),
// the same for every kept step of a file:
//
//	worker0.1623143089861  cuda:0 alloc_growth_bytes=2791636480 events=1370  host 38535420 events=769
//	worker0.1623143566756  cuda:0 alloc_growth_bytes=2791636480 events=1370  host 38535420 events=769
//	worker0.1623213129365  cuda:0 alloc_growth_bytes=2791505408 events=1380  host 19267836 events=449
func TestMemoryFixtureLegacy(t *testing.T) {
	for _, c := range []struct {
		file                   string
		cuda, host             int64
		cudaEvents, hostEvents int
	}{
		{"num_workers_0/worker0.1623143089861.pt.trace.json.gz", 2791636480, 38535420, 1370, 769},
		{"num_workers_0/worker0.1623143566756.pt.trace.json.gz", 2791636480, 38535420, 1370, 769},
		{"num_workers_4/worker0.1623213129365.pt.trace.json.gz", 2791505408, 19267836, 1380, 449},
	} {
		r := analyzeFixture(t, resnet+c.file)
		if len(r.Steps) != 4 {
			t.Fatalf("%s: %d steps, want 4", c.file, len(r.Steps))
		}
		for i, s := range r.Steps {
			devs := r.MemDevices[i]
			if len(devs) != 2 || !devs[0].CUDA || devs[0].Device != 0 || devs[1].CUDA {
				t.Fatalf("%s %s: devices %+v", c.file, s.Name, devs)
			}
			for _, d := range devs {
				if !d.Relative || d.PeakAlloc != nil || d.AllocGrowth == nil {
					t.Fatalf("%s %s: device %+v not relative", c.file, s.Name, d)
				}
			}
			if g, n := *devs[0].AllocGrowth, devs[0].Events; g != c.cuda || n != c.cudaEvents {
				t.Errorf("%s %s cuda:0 alloc_growth = %d over %d events, want %d over %d", c.file, s.Name, g, n, c.cuda, c.cudaEvents)
			}
			if g, n := *devs[1].AllocGrowth, devs[1].Events; g != c.host || n != c.hostEvents {
				t.Errorf("%s %s host alloc_growth = %d over %d events, want %d over %d", c.file, s.Name, g, n, c.host, c.hostEvents)
			}
			if s.Memory.Source != MemFromRelative || s.Memory.Growth != c.cuda || !s.Memory.HasGrowth {
				t.Errorf("%s %s memory = %+v, want relative growth of cuda:0", c.file, s.Name, s.Memory)
			}
		}
		sum := r.Summaries()
		if _, ok := sum["peak_memory_MiB"]; ok {
			t.Errorf("%s: peak_memory present on a relative trace: %v", c.file, sum["peak_memory_MiB"])
		}
		if got, want := sum["alloc_growth_MiB"].Median, float64(c.cuda)/(1<<20); got != want {
			t.Errorf("%s: alloc_growth_MiB median = %v, want %v", c.file, got, want)
		}
	}
}

// TestMemoryAbsent: a trace without [memory] events has no memory metrics
// at all: not 0.
func TestMemoryAbsent(t *testing.T) {
	for _, rel := range []string{"kineto/hta-negative-queue-length-a100-16rank/rank0.json.gz", resnet + "num_workers_0_nometa/worker0.pt.trace.json.gz"} {
		testMemoryAbsent(t, rel)
	}
}

func testMemoryAbsent(t *testing.T, rel string) {
	r := analyzeFixture(t, rel)
	if len(r.Profile.Memory) != 0 {
		t.Fatalf("%d memory events in a trace without profile_memory", len(r.Profile.Memory))
	}
	for _, name := range []string{"peak_memory", "peak_reserved", "alloc_growth", "rss"} {
		m, _ := MetricByName(name)
		if xs := r.Samples(m); xs != nil {
			t.Errorf("%s samples = %v, want absent", name, xs)
		}
	}
	for k := range r.Summaries() {
		switch k {
		case "peak_memory_MiB", "peak_reserved_MiB", "alloc_growth_MiB", "rss_MiB":
			t.Errorf("summary has %s", k)
		}
	}
}

func memProfile(steps int, stepNs int64, ev []trace.MemEvent) *trace.Profile {
	p := trace.New("mem.json", trace.FormatKineto)
	step := p.Names.InternString("ProfilerStep#0")
	for i := range steps {
		p.Ranges = append(p.Ranges, trace.Range{Start: int64(i) * stepNs, End: int64(i+1) * stepNs, Thread: 1, Name: step})
	}
	p.Memory = ev
	p.SortMemory()
	return p
}

// TestMemoryWindows: the level a step starts at counts (a step whose
// events only free memory peaked at its start), events exactly at a
// window's end belong to the next step, and reserved is the CUDA
// allocator's.
func TestMemoryWindows(t *testing.T) {
	tot := trace.MemCUDA | trace.MemTotals | trace.MemReserved
	p := memProfile(3, 100, []trace.MemEvent{
		{Time: 10, Allocated: 500, Reserved: 1000, Bytes: 500, Device: 0, Flags: tot},
		{Time: 50, Allocated: 700, Reserved: 1000, Bytes: 200, Device: 0, Flags: tot},
		{Time: 100, Allocated: 600, Reserved: 1200, Bytes: -100, Device: 0, Flags: tot}, // step 1
		{Time: 150, Allocated: 100, Reserved: 1200, Bytes: -500, Device: 0, Flags: tot},
		// step 2: no events; level 100 all along
	})
	r := Analyze(p, Options{KeepEdges: true})
	want := []int64{700, 700, 100} // step 1 starts at the level 700 of t=50
	wantRes := []int64{1000, 1200, 1200}
	for i, s := range r.Steps {
		if s.Memory.Peak != want[i] || s.Memory.Reserved != wantRes[i] {
			t.Errorf("step %d memory = %+v, want peak %d reserved %d", i, s.Memory, want[i], wantRes[i])
		}
	}
	// Relative: running sum from the window's start.
	p = memProfile(2, 100, []trace.MemEvent{
		{Time: 10, Bytes: 300, Device: -1}, {Time: 20, Bytes: -200, Device: -1}, {Time: 30, Bytes: 50, Device: -1},
		{Time: 110, Bytes: -400, Device: -1}, {Time: 120, Bytes: 100, Device: -1},
	})
	r = Analyze(p, Options{KeepEdges: true})
	if g0, g1 := r.Steps[0].Memory.Growth, r.Steps[1].Memory.Growth; g0 != 300 || g1 != 0 {
		t.Errorf("growth = %d, %d; want 300, 0", g0, g1)
	}
}

// TestMemoryHook: hook samples give peak_memory where the trace has none,
// and never replace the trace's own totals.
func TestMemoryHook(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	r := Analyze(memProfile(2, 100, nil), Options{KeepEdges: true})
	n := r.SetHookMemory([]*HookSample{
		{RSS: 300 << 20, MaxRSS: i64(320 << 20), PrevMaxRSS: i64(310 << 20)}, // peak rose in the step: exact
		{RSS: 305 << 20, MaxRSS: i64(320 << 20), PrevMaxRSS: i64(320 << 20)}, // did not: end-of-step RSS
	})
	if n != 2 || r.Steps[0].Memory.Peak != 320<<20 || r.Steps[1].Memory.Peak != 305<<20 || r.Steps[0].Memory.Source != MemFromHookRSS {
		t.Errorf("hook RSS: %d samples, memory %+v %+v", n, r.Steps[0].Memory, r.Steps[1].Memory)
	}
	dev := 0
	r = Analyze(memProfile(1, 100, nil), Options{KeepEdges: true})
	r.SetHookMemory([]*HookSample{{RSS: 1, CUDADevice: &dev, CUDAMaxAllocated: i64(7 << 20), CUDAMaxReserved: i64(9 << 20)}})
	if m := r.Steps[0].Memory; m.Source != MemFromHookCUDA || m.Peak != 7<<20 || m.Reserved != 9<<20 || m.RSS != 1 {
		t.Errorf("hook CUDA: %+v", m)
	}
	tot := trace.MemCUDA | trace.MemTotals
	r = Analyze(memProfile(1, 100, []trace.MemEvent{{Time: 5, Allocated: 42, Bytes: 42, Flags: tot}}), Options{KeepEdges: true})
	r.SetHookMemory([]*HookSample{{RSS: 1, CUDADevice: &dev, CUDAMaxAllocated: i64(7), CUDAMaxReserved: i64(9)}})
	if m := r.Steps[0].Memory; m.Source != MemFromTrace || m.Peak != 42 || m.RSS != 1 {
		t.Errorf("trace totals with hook: %+v, want the trace's peak and the hook's RSS", m)
	}
}

// TestTheilSen checks Sen's slope and interval on series worked out by
// hand: n = 6 gives N = 15 pair slopes, var(S) = 6·5·17/18 = 28.33,
// C = 1.96·5.32 = 10.43, ranks round((15−10.43)/2) = 2 and
// round((15+10.43)/2)+1 = 14.
func TestTheilSen(t *testing.T) {
	slope, lo, hi := TheilSen([]float64{0, 2, 4, 6, 8, 10}, 0.95)
	if slope != 2 || lo != 2 || hi != 2 {
		t.Errorf("line: %v [%v, %v], want 2 [2, 2]", slope, lo, hi)
	}
	// 0 1 0 1 0 1: slopes sorted: -1 ×3 (pairs (1,2),(3,4)... ), ...
	ys := []float64{0, 1, 0, 1, 0, 1}
	slope, lo, hi = TheilSen(ys, 0.95)
	if slope != 0 || !(lo < 0) || !(hi > 0) {
		t.Errorf("alternating: %v [%v, %v], want 0 inside an interval around 0", slope, lo, hi)
	}
	// A leak with one spike: 10, 11, 12, 40, 14, 15, 16, 17.
	slope, lo, _ = TheilSen([]float64{10, 11, 12, 40, 14, 15, 16, 17}, 0.95)
	if slope != 1 || !(lo > 0) {
		t.Errorf("leak with a spike: slope %v lo %v, want 1 and lo > 0", slope, lo)
	}
}

func TestMemoryGrowthFinding(t *testing.T) {
	var ev []trace.MemEvent
	tot := trace.MemCUDA | trace.MemTotals
	for i := range 12 {
		level := int64(1<<30) + int64(i)*(6<<20)
		ev = append(ev, trace.MemEvent{Time: int64(i)*100 + 10, Allocated: level, Bytes: 6 << 20, Flags: tot})
	}
	p := memProfile(12, 100, ev)
	p.Devices = []trace.Device{{ID: 0, Name: "GPU", Memory: 2 << 30}}
	r := Analyze(p, Options{})
	var f *Finding
	for _, g := range r.Findings() {
		if g.ID == "memory-growth" {
			f = &g
		}
	}
	if f == nil {
		t.Fatalf("no memory-growth finding on a 6 MiB/step leak; findings %+v", r.Findings())
	}
	if want := "grows 6.0 MiB per step"; !contains(f.Summary, want) || !contains(f.Summary, "full in about") {
		t.Errorf("summary %q, want %q and the steps until full", f.Summary, want)
	}
	// Flat memory: no finding.
	for i := range ev {
		ev[i].Allocated = 1 << 30
	}
	r = Analyze(memProfile(12, 100, ev), Options{})
	for _, g := range r.Findings() {
		if g.ID == "memory-growth" {
			t.Errorf("memory-growth on flat memory: %+v", g)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestMemoryGrowthRSS: resident memory creeps in healthy jobs, so it fires
// only from MinSlopeRSS (2 MiB a step); allocator peaks from MinSlope.
func TestMemoryGrowthRSS(t *testing.T) {
	fires := func(perStep int64) bool {
		r := Analyze(memProfile(14, 100, nil), Options{})
		hs := make([]*HookSample, len(r.Steps))
		for i := range hs {
			hs[i] = &HookSample{RSS: 300<<20 + int64(i)*perStep}
		}
		r.SetHookMemory(hs)
		for _, f := range r.Findings() {
			if f.ID == "memory-growth" {
				return true
			}
		}
		return false
	}
	if fires(3 << 19) {
		t.Errorf("memory-growth on resident memory rising 1.5 MiB a step")
	}
	if !fires(3 << 20) {
		t.Errorf("no memory-growth on resident memory rising 3 MiB a step")
	}
}

// TestMemoryGrowthProfilerBuffer: resident memory holds the profiler's own
// event buffer, which grows with every recorded event, leak or not. The
// demo's slow loader (31,443 events a step, 4.1 MiB a step of resident
// growth under torch 1.13) headlined memory-growth (issue 19); growth
// within events × ProfilerEventBytes does not fire, a leak beyond it does.
func TestMemoryGrowthProfilerBuffer(t *testing.T) {
	const events = 2000 // per step: 2000 × 2.5 KiB = 4.88 MiB/step of the profiler's own
	fires := func(perStep int64) (bool, string) {
		p := memProfile(14, 1_000_000, nil)
		op := p.Names.InternString("aten::add")
		for i := range 14 {
			for j := range events {
				s := int64(i)*1_000_000 + int64(j)*400
				p.Ranges = append(p.Ranges, trace.Range{Start: s, End: s + 100, Thread: 1, Name: op})
			}
		}
		p.Sort()
		r := Analyze(p, Options{})
		if got := r.eventsPerStep(); got < events || got > events+1 {
			t.Fatalf("eventsPerStep = %v, want %d (+ the step range)", got, events)
		}
		hs := make([]*HookSample, len(r.Steps))
		for i := range hs {
			hs[i] = &HookSample{RSS: 300<<20 + int64(i)*perStep}
		}
		r.SetHookMemory(hs)
		for _, f := range r.Findings() {
			if f.ID == "memory-growth" {
				return true, f.Evidence
			}
		}
		return false, ""
	}
	if ok, _ := fires(4 << 20); ok {
		t.Errorf("memory-growth on 4 MiB a step, within the profiler's 4.9 MiB a step for %d events", events)
	}
	ok, ev := fires(8 << 20)
	if !ok {
		t.Fatalf("no memory-growth on 8 MiB a step, 3.1 beyond the profiler's buffer")
	}
	if !strings.Contains(ev, "beyond the profiler's own buffer of up to 4.89 MiB/step (2001 recorded events a step × 2.5 KiB)") {
		t.Errorf("evidence %q does not say what was set aside", ev)
	}
}

// TestMemoryHostOnlyGPUTrace: the MI300X DDP capture has GPU activity but
// only host allocator events (210 [memory] events, Device Type 0, Device
// Id -1, Total Allocated at most 8 bytes: plain json). It has no GPU memory
// figure: peak_memory is absent, and the 8-byte host peak is kept as host
// memory, never as the step's peak.
func TestMemoryHostOnlyGPUTrace(t *testing.T) {
	p, err := kineto.ReadFile(fixtures.Path(t, "kineto/tracelens-mi300x-ddp-resnet18-nosteps/train_resnet18.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	r := Analyze(p, Options{})
	if !r.HasGPU || len(r.Steps) == 0 {
		t.Fatalf("HasGPU %v, %d steps", r.HasGPU, len(r.Steps))
	}
	for _, s := range r.Steps {
		m := s.Memory
		if m.Source != MemFromTraceHost || m.Device != -1 || !m.HasHostPeak || m.HostPeak != 8 || m.Peak != 0 {
			t.Errorf("%s: memory %+v, want source %q, host peak 8, no peak", s.Name, m, MemFromTraceHost)
		}
	}
	for _, k := range []string{"peak_memory", "peak_reserved", "alloc_growth"} {
		if _, ok := r.Summaries()[k]; ok {
			t.Errorf("summary has %s from host-only allocator events of a GPU trace", k)
		}
	}
	if !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "no GPU memory figure") }) {
		t.Errorf("warnings %q do not say that there is no GPU memory figure", r.Warnings)
	}
}
