package analysis

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/trace/kineto"
)

const resnet = "kineto/kineto-tbplugin-resnet50-v100-legacy/"

func analyzeFixture(t *testing.T, rel string) *Result {
	t.Helper()
	p, err := kineto.ReadFile(fixtures.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return Analyze(p, Options{})
}

func TestResNetKernelsPerStep(t *testing.T) {
	for rel, want := range map[string]int{
		resnet + "num_workers_0/worker0.1623143089861.pt.trace.json.gz": 1462,
		resnet + "num_workers_0/worker0.1623143566756.pt.trace.json.gz": 1462,
		resnet + "num_workers_4/worker0.1623213129365.pt.trace.json.gz": 1478,
	} {
		r := analyzeFixture(t, rel)
		if len(r.Steps) != 4 || len(r.LeftOut) != 2 || !strings.HasPrefix(r.LeftOut[0].Reason, "first") || !strings.HasPrefix(r.LeftOut[1].Reason, "last") {
			t.Errorf("%s: %d steps, left out %v; want 4, and the first and last of the 6 left out", rel, len(r.Steps), r.LeftOut)
		}
		for _, s := range r.Steps {
			if s.Kernels != want {
				t.Errorf("%s %s: %d kernels, want %d", rel, s.Name, s.Kernels, want)
			}
		}
	}
}

func TestCPUOnlyTrace(t *testing.T) {
	r := analyzeFixture(t, "kineto/hta-cpu-only-edge/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
	if r.HasGPU || len(r.Steps) != 3 || len(r.LeftOut) != 2 {
		t.Fatalf("HasGPU %v, %d steps, %d left out; want false, 3, 2", r.HasGPU, len(r.Steps), len(r.LeftOut))
	}
	if !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "no GPU activity") }) {
		t.Errorf("warnings %q lack the no-GPU warning", r.Warnings)
	}
	sum := r.Summaries()
	for _, k := range []string{"kernels", "gpu_util", "cpu_wait_ms"} {
		if _, ok := sum[k]; ok {
			t.Errorf("summary has GPU metric %s for a trace without GPU activity", k)
		}
	}
	for _, s := range r.Steps {
		if s.StepTime() != s.HostEnd-s.HostStart && s.Start == s.HostStart {
			t.Errorf("%s: step time %d is not the host step %d", s.Name, s.StepTime(), s.HostEnd-s.HostStart)
		}
	}
}

func TestNoStepMarkers(t *testing.T) {
	r := analyzeFixture(t, "kineto/hta-alexnet-a100/benchmark_result_2869224_1695835535_trace.json.gz")
	if !r.WholeProfile || len(r.Steps) != 1 || r.Steps[0].Kernels != 79 {
		t.Errorf("whole profile %v, %d steps; want one window with all 79 kernels", r.WholeProfile, len(r.Steps))
	}
	if !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "no step markers") }) {
		t.Errorf("warnings %q lack the no-steps warning", r.Warnings)
	}
	// The same file with a pattern that names its iterations.
	p, _ := kineto.ReadFile(fixtures.Path(t, "kineto/hta-alexnet-a100/benchmark_result_2869224_1695835535_trace.json.gz"))
	r = Analyze(p, Options{StepPattern: regexp.MustCompile(`^aten::conv2d$`)})
	if r.WholeProfile || len(r.Steps) == 0 {
		t.Errorf("-step-pattern ignored: whole %v, %d steps", r.WholeProfile, len(r.Steps))
	}
}

// rawEvent is how the second method reads events: encoding/json into plain
// structs, no shared code with trace/kineto.
type rawEvent struct {
	Ph   string  `json:"ph"`
	Cat  string  `json:"cat"`
	Name string  `json:"name"`
	Ts   float64 `json:"ts"`
	Dur  float64 `json:"dur"`
	Args struct {
		Correlation int64 `json:"correlation"`
	} `json:"args"`
}

// TestSecondMethod recomputes step windows, kernels, gpu_busy, cpu_wait and
// data_wait of the V100 ResNet-50 trace by brute force on a 1 µs grid (the
// legacy format has integer µs), from events decoded by encoding/json, and
// checks Analyze's results against it exactly.
func TestSecondMethod(t *testing.T) {
	rel := resnet + "num_workers_0/worker0.1623143089861.pt.trace.json.gz"
	f, err := os.Open(fixtures.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ TraceEvents []rawEvent }
	if err := json.NewDecoder(zr).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	type iv struct{ lo, hi int64 }
	launch := map[int64]int64{} // correlation -> launch start (µs)
	var ops []struct {
		iv
		corr int64
		kind string
	}
	var steps, loaders []iv
	for _, e := range doc.TraceEvents {
		if e.Ph != "X" {
			continue
		}
		lo, hi := int64(e.Ts), int64(e.Ts+e.Dur)
		if float64(lo) != e.Ts {
			t.Fatalf("non-integer µs timestamp %v: the brute force needs a 1 µs grid", e.Ts)
		}
		switch e.Cat {
		case "Runtime":
			launch[e.Args.Correlation] = lo
		case "Kernel", "Memcpy", "Memset":
			ops = append(ops, struct {
				iv
				corr int64
				kind string
			}{iv{lo, hi}, e.Args.Correlation, e.Cat})
		case "Operator":
			if strings.HasPrefix(e.Name, "ProfilerStep#") {
				steps = append(steps, iv{lo, hi})
			}
			if strings.Contains(e.Name, "DataLoader") && strings.HasSuffix(e.Name, "__next__") {
				loaders = append(loaders, iv{lo, hi})
			}
		}
	}
	slices.SortFunc(steps, func(a, b iv) int { return int(a.lo - b.lo) })
	// Step windows by the definition.
	win := make([]iv, len(steps))
	kernels := make([]int, len(steps))
	var prev int64
	for i, h := range steps {
		s1 := h.hi
		for _, op := range ops {
			if l, ok := launch[op.corr]; ok && l >= h.lo && l < h.hi {
				s1 = max(s1, op.hi)
				if op.kind == "Kernel" {
					kernels[i]++
				}
			}
		}
		s0 := h.lo
		if i > 0 {
			s0 = max(s0, prev)
		}
		win[i] = iv{s0, s1}
		prev = s1
	}
	t0, t1 := win[0].lo, win[len(win)-1].hi
	busy := make([]bool, t1-t0+1)
	startsAt := map[int64][]int64{} // op start -> launch starts (-1 unlinked)
	for _, op := range ops {
		for u := max(op.lo, t0); u < min(op.hi, t1); u++ {
			busy[u-t0] = true
		}
		l, ok := launch[op.corr]
		if !ok {
			l = -1
		}
		startsAt[op.lo] = append(startsAt[op.lo], l)
	}
	inLoader := make([]bool, t1-t0+1)
	for _, l := range loaders {
		for u := max(l.lo, t0); u < min(l.hi, t1); u++ {
			inLoader[u-t0] = true
		}
	}
	// Walk every idle µs: the gap it is in, the op that ends the gap.
	hostWait := make([]bool, t1-t0)
	for u := t0; u < t1; {
		if busy[u-t0] {
			u++
			continue
		}
		g0 := u
		for u < t1 && !busy[u-t0] {
			u++
		}
		g1 := u
		wait := true // nothing after it in the windows: nothing was queued
		if g1 < t1 {
			linked := false
			for _, l := range startsAt[g1] {
				if l >= 0 {
					linked = true
					wait = wait && l >= g0
				}
			}
			wait = wait && linked
		}
		for v := g0; v < g1; v++ {
			hostWait[v-t0] = wait
		}
	}
	p, err := kineto.ReadFile(fixtures.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	r := Analyze(p, Options{KeepEdges: true})
	// The default analysis keeps the same steps, less the first and last.
	if trimmed := analyzeFixture(t, rel); len(win) != 6 || !slices.Equal(trimmed.Steps, r.Steps[1:5]) || len(trimmed.LeftOut) != 2 {
		t.Errorf("trimmed analysis: %d steps, left out %v; want steps 2..5 of the 6", len(trimmed.Steps), trimmed.LeftOut)
	}
	for i, w := range win {
		var b, cw, dw int64
		for u := w.lo; u < w.hi; u++ {
			switch {
			case busy[u-t0]:
				b++
			case hostWait[u-t0]:
				cw++
				if inLoader[u-t0] {
					dw++
				}
			}
		}
		s := r.Steps[i]
		got := [6]int64{s.Start, s.End, int64(s.Kernels), s.GPUBusy, s.CPUWait, s.DataWait}
		want := [6]int64{w.lo * 1000, w.hi * 1000, int64(kernels[i]), b * 1000, cw * 1000, dw * 1000}
		if got != want {
			t.Errorf("%s: start, end, kernels, busy, cpu_wait, data_wait = %v, want %v", s.Name, got, want)
		}
	}
}

// TestLeftOutWindows: left-out steps carry their windows, so that the first
// kept step can be checked against them. On the V100 ResNet-50 capture the
// host windows are ProfilerStep#5 and #10 (ts and dur read from the JSON
// with Python's json: #5 lasts 176,078 µs, #10 164,261 µs and starts
// 885,056 µs after #5); the windows are those of the same steps analysed
// with every step kept, and the kept steps lie between them.
func TestLeftOutWindows(t *testing.T) {
	rel := resnet + "num_workers_0/worker0.1623143089861.pt.trace.json.gz"
	p, err := kineto.ReadFile(fixtures.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	r := Analyze(p, Options{})
	all := Analyze(p, Options{KeepEdges: true})
	if len(r.LeftOut) != 2 || len(all.Steps) != 6 {
		t.Fatalf("%d left out, %d steps in all; want 2 and 6", len(r.LeftOut), len(all.Steps))
	}
	a, b := r.LeftOut[0], r.LeftOut[1]
	if a.HostEnd-a.HostStart != 176_078_000 || b.HostEnd-b.HostStart != 164_261_000 || b.HostStart-a.HostStart != 885_056_000 {
		t.Errorf("left-out host windows [%d, %d) and [%d, %d), want ProfilerStep#5's and #10's", a.HostStart, a.HostEnd, b.HostStart, b.HostEnd)
	}
	for k, i := range []int{0, 5} {
		l, s := r.LeftOut[k], all.Steps[i]
		if l.Name != s.Name || l.Start != s.Start || l.End != s.End || l.HostStart != s.HostStart || l.HostEnd != s.HostEnd || l.StepTime != s.End-s.Start {
			t.Errorf("left out %+v, want the window of %s [%d, %d) host [%d, %d)", l, s.Name, s.Start, s.End, s.HostStart, s.HostEnd)
		}
	}
	if first, last := r.Steps[0], r.Steps[len(r.Steps)-1]; first.Start < a.End || b.Start < last.End {
		t.Errorf("kept steps [%d, %d) overlap the left-out windows [%d, %d) and [%d, %d)", first.Start, last.End, a.Start, a.End, b.Start, b.End)
	}
}
