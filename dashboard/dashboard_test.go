package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/trace/kineto"
)

const resnet = "kineto/kineto-tbplugin-resnet50-v100-legacy/"

var (
	docsMu sync.Mutex
	docs   = map[string][]byte{}
)

// doc is the gpugate analyze document of a fixture trace, as gpugate
// run stores it.
func doc(t *testing.T, rel string) []byte {
	t.Helper()
	docsMu.Lock()
	defer docsMu.Unlock()
	if b, ok := docs[rel]; ok {
		return b
	}
	p, err := kineto.ReadFile(fixtures.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := report.NewStoredAnalysis([]*analysis.Result{analysis.Analyze(p, analysis.Options{})}).WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	docs[rel] = buf.Bytes()
	return buf.Bytes()
}

// resnetStore is the history: 5 baseline runs of the V100
// ResNet-50 num_workers=4 capture, then 4 of the num_workers=0 one, in a
// SQLite store; it returns the store's runs, oldest first.
func resnetStore(t *testing.T) []baseline.Run {
	t.Helper()
	ctx := context.Background()
	s, err := baseline.Open(ctx, filepath.Join(t.TempDir(), "perf.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w4, w0 := doc(t, resnet+"num_workers_4/worker0.1623213129365.pt.trace.json.gz"), doc(t, resnet+"num_workers_0/worker0.1623143089861.pt.trace.json.gz")
	start := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	for i := range 9 {
		an := w4
		if i >= 5 {
			an = w0
		}
		if _, err := s.Record(ctx, baseline.Run{Workload: "resnet50", Branch: "main", Commit: "c0mmit" + strconv.Itoa(i+1), Created: start.Add(time.Duration(i) * 24 * time.Hour),
			Kind: "baseline", Profiler: "torch", FingerprintHash: "v100fp", Fingerprint: []byte(`{"gpu":"Tesla V100-DGXS-32GB"}`), Version: "test", Analysis: an}); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := s.Runs(ctx, baseline.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

var (
	dataRun   = regexp.MustCompile(`<(circle|rect) class="pt (baseline|candidate)" data-run="(\d+)"`)
	changeRun = regexp.MustCompile(`data-change-run="(\d+)"`)
)

// chartOf is the SVG of one chart on a page.
func chartOf(t *testing.T, page, id string) string {
	t.Helper()
	i := strings.Index(page, `<svg id="`+id+`"`)
	if i < 0 {
		t.Fatalf("no chart %s on the page", id)
	}
	j := strings.Index(page[i:], "</svg>")
	return page[i : i+j]
}

// TestResNetHistory is the done-when without a browser: the
// workload page's step-time chart has 9 run points and a change point at
// the 6th run, of about +46%. Independent figures (Python, plain json):
// the median ProfilerStep# duration of the kept steps is 122.5 ms for
// num_workers=4 and 176.7 ms for num_workers=0, +44%; gpugate's step
// windows (which end when the step's GPU work does) give 121.1 ms for
// num_workers=4 (gate.TestSameStepsEverywhere).
func TestResNetHistory(t *testing.T) {
	runs := resnetStore(t)
	dir := t.TempDir()
	site, err := Write(dir, runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(site.Workloads) != 1 || len(site.Pages) != 1+1+9 {
		t.Fatalf("%d workloads, pages %v", len(site.Workloads), site.Pages)
	}
	w := site.Workloads[0]
	page := read(t, dir, w.File)
	chart := chartOf(t, page, "chart-step_time")
	pts := dataRun.FindAllStringSubmatch(chart, -1)
	if len(pts) != 9 {
		t.Fatalf("step-time chart has %d data-run points, want 9", len(pts))
	}
	for i, p := range pts {
		if p[3] != strconv.FormatInt(runs[i].ID, 10) || p[2] != "baseline" {
			t.Errorf("point %d: %v, want baseline run %d", i, p[1:], runs[i].ID)
		}
	}
	cps := changeRun.FindAllStringSubmatch(chart, -1)
	if len(cps) != 1 || cps[0][1] != strconv.FormatInt(runs[5].ID, 10) {
		t.Fatalf("change points %v, want one at the 6th run (id %d)", cps, runs[5].ID)
	}
	var c *Chart
	for _, x := range w.Charts {
		if x.Metric.Name == "step_time" {
			c = x
		}
	}
	ch := c.Changes[0].Change
	if ch.Before < 120 || ch.Before > 123 || ch.Relative() < 0.43 || ch.Relative() > 0.50 {
		t.Errorf("shift %.2f → %.2f ms (%+.1f%%), want from about 121 ms by about +46%%", ch.Before, ch.After, 100*ch.Relative())
	}
	t.Logf("change point at run #%d: %.2f → %.2f ms (%+.1f%%), p=%.3f", ch.Index+1, ch.Before, ch.After, 100*ch.Relative(), ch.P)
	for _, want := range []string{"change point", "commit range <code>c0mmit5</code>..<code>c0mmit6</code>", "(run " + strconv.FormatInt(runs[4].ID, 10) + ", #5)"} {
		if !strings.Contains(page, want) {
			t.Errorf("workload page lacks %q", want)
		}
	}
	// No network references: nothing on any page names another host or
	// loads anything from elsewhere.
	for _, name := range site.Pages {
		p := read(t, dir, name)
		for _, bad := range []string{"http://", "https://", "//cdn", "@import", "<link", "src="} {
			if strings.Contains(p, bad) {
				t.Errorf("%s holds %q", name, bad)
			}
		}
	}
	// The run page of a num_workers=0 run shows its breakdown and the
	// data-loader finding that the gate tests expect of it.
	runPage := read(t, dir, "run-"+strconv.FormatInt(runs[6].ID, 10)+".html")
	for _, want := range []string{"Step time breakdown", "data-loader wait", "data-loader-bound", "Tesla V100-DGXS-32GB", "not recorded"} {
		if !strings.Contains(runPage, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	index := read(t, dir, "index.html")
	if !strings.Contains(index, `href="`+w.File+`"`) || !strings.Contains(index, "<polyline") || w.Verdict == "" || !strings.Contains(index, `class="`+w.Verdict+`"`) {
		t.Errorf("index lacks the workload link, its trend or the newest run's verdict (%q)", w.Verdict)
	}
	// A candidate run of num_workers=0 after the 5 of num_workers=4: the
	// index says it regressed, apart from main's health, which it does
	// not touch (the newest baseline run against the 4 before it).
	cand := runs[5]
	cand.Kind, cand.Branch = "candidate", "pr"
	site, err = Write(t.TempDir(), append(runs[:5:5], cand), Options{})
	if err != nil {
		t.Fatal(err)
	}
	w = site.Workloads[0]
	if len(w.Others) != 1 || w.Others[0].ID != cand.ID || w.Others[0].Verdict != "regression" {
		t.Errorf("num_workers=0 candidate against 5 baseline runs of num_workers=4: others %+v, want it with verdict regression", w.Others)
	}
	if w.Main == nil || w.Main.ID != runs[4].ID || w.Verdict == "regression" || w.Verdict == "" {
		t.Errorf("main's health: newest baseline run %v, verdict %q; want run %d, judged against the 4 before it (the same capture: no regression)", w.Main, w.Verdict, runs[4].ID)
	}
}

// TestSplitByFingerprint: two machines' runs are two lines, and candidate
// runs are points apart from either.
func TestSplitByFingerprint(t *testing.T) {
	an := doc(t, resnet+"num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	var runs []baseline.Run
	start := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	for i := range 8 {
		r := baseline.Run{ID: int64(i + 1), Workload: "w", Branch: "main", Commit: "c" + strconv.Itoa(i), Created: start.Add(time.Duration(i) * time.Hour),
			Kind: "baseline", FingerprintHash: "fpA", Analysis: an}
		if i%2 == 1 {
			r.FingerprintHash = "fpB"
		}
		if i == 7 {
			r.Kind, r.Branch = "candidate", "pr-branch"
		}
		runs = append(runs, r)
	}
	dir := t.TempDir()
	site, err := Write(dir, runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	chart := chartOf(t, read(t, dir, site.Workloads[0].File), "chart-step_time")
	if n := strings.Count(chart, "<polyline"); n != 2 {
		t.Errorf("%d lines, want 2 (one per fingerprint)", n)
	}
	if n := len(dataRun.FindAllString(chart, -1)); n != 8 {
		t.Errorf("%d points, want 8", n)
	}
	if n := strings.Count(chart, `class="pt candidate" data-run="8"`); n != 1 {
		t.Errorf("the candidate run is not drawn as a candidate")
	}
}

// hostile are the escaping fuzzers' seeds: names that try to break out
// of Markdown, HTML, workflow commands and terminals.
func hostile(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, dir := range []string{"../internal/escape/testdata/fuzz/FuzzEscape", "../report/testdata/fuzz/FuzzComment"} {
		files, err := filepath.Glob(filepath.Join(dir, "*"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no fuzz corpus in %s", dir)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(line, "string(") {
					if s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(line, "string("), ")")); err == nil && s != "" {
						out = append(out, s)
					}
				}
			}
		}
	}
	return append(out, `<script>alert(1)</script>`, `"><svg onload=alert(1)>`, `../../etc/passwd`, "javascript:alert(1)")
}

// hostileRun is a run whose every name is s: workload, branch, commit,
// device, kernel and finding.
func hostileRun(t *testing.T, id int64, s string) baseline.Run {
	var d map[string]any
	if err := json.Unmarshal(doc(t, resnet+"num_workers_0/worker0.1623143089861.pt.trace.json.gz"), &d); err != nil {
		t.Fatal(err)
	}
	p := d["profiles"].([]any)[0].(map[string]any)
	p["devices"] = []any{map[string]any{"id": 0, "name": s}}
	p["kernel_stats"] = []any{map[string]any{"name": s, "count": 1, "time_ns": 1000}}
	p["findings"] = []any{map[string]any{"id": s, "severity": "high", "summary": s, "evidence": s, "suggestion": s, "share": 0.5}}
	// A stored step picture forged to match: hostile title, names and
	// kind, a box far outside its step, a name index that is not one.
	d["median_step"] = map[string]any{"title": s, "span_ns": 1_000_000, "names": []any{s},
		"lanes": []any{map[string]any{"name": s, "boxes": []any{
			map[string]any{"s": 0, "e": 500_000, "k": s, "n": 0},
			map[string]any{"s": 0, "e": 400_000, "k": "compute", "n": 0},
			map[string]any{"s": -5, "e": int64(1e18), "k": "data", "n": 99},
		}}},
		"idle": []any{map[string]any{"s": 500_000, "e": 900_000, "k": "idle", "n": 0}}}
	an, _ := json.Marshal(d)
	return baseline.Run{ID: id, Workload: s, Branch: s, Commit: s, Created: time.Unix(1_700_000_000+id, 0), Kind: "baseline",
		Profiler: s, FingerprintHash: s, Analysis: an, Version: s}
}

// TestHostileNames: every hostile name appears on the pages as text
// (escaped as html/template escapes text), never as markup, and never in
// a file name.
func TestHostileNames(t *testing.T) {
	names := hostile(t)
	var runs []baseline.Run
	for i, s := range names {
		runs = append(runs, hostileRun(t, int64(i+1), s))
	}
	dir := t.TempDir()
	site, err := Write(dir, runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := os.ReadDir(dir)
	if len(files) != len(site.Pages) {
		t.Errorf("%d files in the site folder, %d pages", len(files), len(site.Pages))
	}
	fileName := regexp.MustCompile(`^(index|w-[0-9a-f]{12}|run-\d+)\.html$`)
	for _, f := range files {
		if !fileName.MatchString(f.Name()) {
			t.Errorf("file %q", f.Name())
		}
	}
	for i, w := range site.Workloads {
		page := read(t, dir, w.File)
		s := w.Name
		if !strings.Contains(page, "<h1>"+esc(s)+"</h1>") {
			t.Errorf("workload %d %q: its page's heading does not hold it as escaped text", i, s)
		}
		run := read(t, dir, w.Runs[0].File)
		// Names inside the analysis document went through JSON, which
		// turns invalid UTF-8 into U+FFFD.
		var inDoc string
		b, _ := json.Marshal(s)
		json.Unmarshal(b, &inDoc)
		if !strings.Contains(run, `<tr class="finding"><td><code>`+esc(inDoc)+`</code></td>`) {
			t.Errorf("workload %d %q: the finding is not on its run page as escaped text", i, s)
		}
		if !strings.Contains(run, `<td><code>`+esc(inDoc)+`</code></td><td>1</td>`) {
			t.Errorf("workload %d %q: the kernel is not on its run page as escaped text", i, s)
		}
		// Of the forged boxes, the one of an unknown kind is not drawn and
		// the one far past its step is clamped to it: 2 boxes, none wider
		// than the 810 px axis.
		if boxes := stepBoxes(run); len(boxes) != 2 || boxes[0] > 810 || boxes[1] > 810 {
			t.Errorf("workload %d %q: its forged step picture's boxes have widths %v, want 2 within 810 px", i, s, boxes)
		}
		for _, p := range []string{page, run} {
			if strings.Contains(s, "<") && strings.Contains(p, s) {
				t.Errorf("workload %d %q appears unescaped", i, s)
			}
		}
	}
	// The markup of every page is ours alone: the hostile names add no tag.
	tag := regexp.MustCompile(`<([a-zA-Z][a-zA-Z0-9]*)`)
	allowed := map[string]bool{"html": true, "head": true, "meta": true, "title": true, "style": true, "body": true, "div": true, "h1": true, "h2": true, "h3": true,
		"p": true, "a": true, "table": true, "tr": true, "th": true, "td": true, "code": true, "span": true, "svg": true, "polyline": true, "line": true, "text": true,
		"g": true, "circle": true, "rect": true, "ul": true, "li": true, "script": true}
	for _, name := range site.Pages {
		for _, m := range tag.FindAllStringSubmatch(read(t, dir, name), -1) {
			if !allowed[m[1]] {
				t.Errorf("%s: element <%s>", name, m[1])
			}
		}
	}
}

// esc is s as html/template writes it in text.
func esc(s string) string {
	var b strings.Builder
	template.Must(template.New("").Parse("{{.}}")).Execute(&b, s)
	return b.String()
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var boxRect = regexp.MustCompile(`<rect x="[-0-9.]+" y="[-0-9.]+" width="([-0-9.]+)" height="[-0-9.]+" fill="([^"]*)"`)

// stepBoxes are the widths of the boxes drawn in a page's step picture.
func stepBoxes(page string) []float64 {
	i := strings.Index(page, `<svg class="step"`)
	if i < 0 {
		return nil
	}
	svg := page[i:]
	if j := strings.Index(svg, `<g class="legend"`); j >= 0 {
		svg = svg[:j]
	}
	var ws []float64
	for _, m := range boxRect.FindAllStringSubmatch(svg, -1) {
		if m[2] == "none" { // a lane's frame
			continue
		}
		w, _ := strconv.ParseFloat(m[1], 64)
		ws = append(ws, w)
	}
	return ws
}

// TestAxis: a value axis has round ticks at one step of 1, 2 or 5 × 10^k
// covering every value, about five of them; a count axis starts at 0,
// also when every run has the same count (it started at −0.08).
func TestAxis(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		zero   bool
		want   string
	}{
		{2.814, 89.88, false, "0 20 40 60 80 100"},
		{121.1, 177.9, false, "120 130 140 150 160 170 180"},
		{0, 0, true, "0 0.2 0.4 0.6 0.8 1.0"},
		{1, 1, true, "0 0.2 0.4 0.6 0.8 1.0"},
		{44, 96, true, "0 20 40 60 80 100"},
		{0.00031, 0.00047, false, "0.00030 0.00035 0.00040 0.00045 0.00050"},
		{-3, 7, false, "-4 -2 0 2 4 6 8"},
	} {
		lo, hi, ticks := axis(c.lo, c.hi, c.zero)
		var got []string
		for _, tk := range ticks {
			got = append(got, tk.Label)
		}
		if strings.Join(got, " ") != c.want || math.Abs(lo-ticks[0].Value) > 1e-12 || math.Abs(hi-ticks[len(ticks)-1].Value) > 1e-12 {
			t.Errorf("axis(%v, %v, %v) = [%v, %v] %q, want %s", c.lo, c.hi, c.zero, lo, hi, got, c.want)
		}
	}
	// Any range: the ticks cover it, 3 to 9 of them, at a 1-2-5 step.
	for i := range 2000 {
		a := math.Pow(10, float64(i%13-6)) * (1 + float64(i%7))
		b := a * (1 + math.Pow(10, float64(i%5-3))*(1+float64(i%3)/3))
		zero := i%2 == 0
		lo, hi, ticks := axis(a, b, zero)
		step := ticks[1].Value - ticks[0].Value
		if lo > a || hi < b || len(ticks) < 3 || len(ticks) > 9 || (zero && lo != 0) || !niceStepOK(step) {
			t.Fatalf("axis(%v, %v, %v) = [%v, %v] with %d ticks at %v", a, b, zero, lo, hi, len(ticks), step)
		}
	}
}

// TestRunCost: a run stored with its job's wall time shows its cost (and
// the GPU-minutes: wall time × the machine's GPUs) on its page and in the
// workload's runs; one stored without it says so.
func TestRunCost(t *testing.T) {
	var d map[string]any
	if err := json.Unmarshal(doc(t, resnet+"num_workers_4/worker0.1623213129365.pt.trace.json.gz"), &d); err != nil {
		t.Fatal(err)
	}
	d["job"] = map[string]any{"max_rss_bytes": 0, "wall_s": 90.4, "gpus": 8}
	withCost, _ := json.Marshal(d)
	delete(d, "job")
	without, _ := json.Marshal(d)
	start := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	runs := []baseline.Run{
		{ID: 1, Workload: "w", Branch: "main", Commit: "c1", Created: start, Kind: "baseline", FingerprintHash: "fp", Analysis: without},
		{ID: 2, Workload: "w", Branch: "main", Commit: "c2", Created: start.Add(time.Hour), Kind: "baseline", FingerprintHash: "fp", Analysis: withCost},
		{ID: 3, Workload: "w", Branch: "main", Commit: "c3", Created: start.Add(2 * time.Hour), Kind: "baseline", FingerprintHash: "fp", Analysis: withCost},
	}
	dir := t.TempDir()
	site, err := Write(dir, runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 90.4 s × 8 GPUs = 723.2 GPU-s = 12.05 GPU-minutes; two runs: 24.1.
	if p := read(t, dir, "run-2.html"); !strings.Contains(p, `<td class="cost">1 run of the job, 1m30s of wall time, 8 GPUs: 12.1 GPU-minutes</td>`) {
		t.Errorf("run page lacks its cost:\n%s", p)
	}
	if p := read(t, dir, "run-1.html"); !strings.Contains(p, `<td class="cost">not recorded</td>`) {
		t.Error("a run stored without its wall time does not say so")
	}
	if p := read(t, dir, site.Workloads[0].File); !strings.Contains(p, `<p class="cost">Cost: 2 runs of the job, 3m1s of wall time, 24.1 GPU-minutes.</p>`) {
		t.Errorf("workload page lacks the runs' cost:\n%s", p)
	}
}

// A run stored with a busy host is marked disturbed in the runs table and
// on its page; a quiet one and one stored before host sampling are not.
func TestDisturbedRuns(t *testing.T) {
	an := doc(t, resnet+"num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	start := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	cond := func(other float64) []byte {
		return fmt.Appendf(nil, `{"sampled":false,"not_sampled":"no nvidia-smi","job_gpus_known":false,"host":{"wall_sec":9,"cpus":2,"cpu_pressure":0.97,"steal":0,"other_cpu":%g}}`, other)
	}
	var runs []baseline.Run
	for i, c := range [][]byte{cond(0.02), cond(1.8), nil} {
		runs = append(runs, baseline.Run{ID: int64(i + 1), Workload: "w", Branch: "main", Commit: "c" + strconv.Itoa(i), Created: start.Add(time.Duration(i) * time.Hour),
			Kind: "baseline", FingerprintHash: "fpA", Analysis: an, Conditions: c})
	}
	dir := t.TempDir()
	site, err := Write(dir, runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	page := read(t, dir, site.Workloads[0].File)
	if n := strings.Count(page, `busy: left out of time metrics`); n != 1 {
		t.Errorf("runs table marks %d runs busy, want 1 (run 2)", n)
	}
	want := "DISTURBED, left out of the time metrics of comparisons: the host was busy: other processes used 1.8 of 2 CPUs, CPU pressure 97% during the run"
	if p := read(t, dir, "run-2.html"); !strings.Contains(p, want) || !strings.Contains(p, "host: other processes used 1.8 of 2 CPUs, CPU pressure 97%, steal 0% (over 9.0s)") {
		t.Errorf("run-2.html does not say %q and its host line", want)
	}
	for _, f := range []string{"run-1.html", "run-3.html"} {
		if strings.Contains(read(t, dir, f), "DISTURBED") {
			t.Errorf("%s marked disturbed", f)
		}
	}
	// Margins of 100% turn the test off.
	off := gate.HostMargins{OtherCPU: 1, CPUPressure: 1, PressureOther: 1, Steal: 1, Throttled: 1}
	dir = t.TempDir()
	if site, err = Write(dir, runs, Options{Host: &off}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(read(t, dir, site.Workloads[0].File), "busy: left out") {
		t.Errorf("margins of 100%%: a run is still marked busy")
	}
}
