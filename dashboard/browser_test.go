package dashboard

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/trace/kineto"
)

// browser starts Debian's chromium headless (scripts/setup-chromium.sh)
// with a fresh profile and nothing that calls home, and returns a
// context for chromedp. Without chromium the test skips, except under
// CI=true, where that is a failure.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium not found: scripts/setup-chromium.sh installs it")
		}
		t.Skip("chromium not found: scripts/setup-chromium.sh installs it")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-default-browser-check", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	// The first call starts the browser, which lives as long as its
	// context: no timeout on it (chromedp.Run's documentation).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// visit is what a page did when it loaded.
type visit struct {
	errors   []string // console errors, exceptions, log errors (CSP violations)
	requests []string // every URL it requested
	dialogs  []string // alert() and friends: hostile markup that ran
}

// load opens url in a new tab of the browser, waits for it to load and
// evaluates each expression (JavaScript) into the matching result.
func load(t *testing.T, bctx context.Context, url string, evals map[string]any) *visit {
	t.Helper()
	ctx, cancel := chromedp.NewContext(bctx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, time.Minute)
	defer cancelT()
	v := &visit{}
	var mu sync.Mutex
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning || e.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value))
				}
				v.errors = append(v.errors, fmt.Sprintf("console.%s %s", e.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			v.errors = append(v.errors, fmt.Sprintf("exception: %s", e.ExceptionDetails.Text))
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning {
				v.errors = append(v.errors, fmt.Sprintf("log %s: %s %s", e.Entry.Level, e.Entry.Text, e.Entry.URL))
			}
		case *network.EventRequestWillBeSent:
			v.requests = append(v.requests, e.Request.URL)
		case *page.EventJavascriptDialogOpening:
			v.dialogs = append(v.dialogs, e.Message)
			// Listen's function may not send commands: close the dialog
			// from another goroutine.
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	for expr, out := range evals {
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](expr))
		if err != nil {
			t.Fatalf("%s: %s: %v", url, expr, err)
		}
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: %s: %v", url, expr, err)
		}
	}
	// Late events (a failed image, a CSP report) arrive after load.
	chromedp.Do(ctx, chromedp.Sleep(100*time.Millisecond))
	mu.Lock()
	defer mu.Unlock()
	return v
}

// local reports the requests that went anywhere but the site itself:
// file:// URLs under dir, or the local server at host.
func (v *visit) remote(dir, host string) []string {
	var out []string
	for _, u := range v.requests {
		switch {
		case strings.HasPrefix(u, "file://"+dir+"/"):
		case host != "" && strings.HasPrefix(u, "http://"+host+"/"):
		default:
			out = append(out, u)
		}
	}
	return out
}

// TestBrowser is the done-when in headless Chromium: the
// workload page of the V100 ResNet-50 history (5 runs of num_workers=4,
// then 4 of num_workers=0) shows a step-time chart with 9 points carrying
// data-run and a change point at the 6th run, and no page of the site
// logs an error or requests anything from the network, opened from disk
// or from a local server (as -serve serves it).
func TestBrowser(t *testing.T) {
	bctx := browser(t)
	runs := resnetStore(t)
	dir := t.TempDir()
	site, err := Write(dir, runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	w := site.Workloads[0]
	for _, base := range []string{"file://" + dir, srv.URL} {
		var points, cps []string
		var stepPoints int
		v := load(t, bctx, base+"/"+w.File, map[string]any{
			`document.querySelectorAll("[data-run]").length`:                                           &stepPoints,
			`Array.from(document.querySelectorAll("#chart-step_time [data-run]"), e => e.dataset.run)`: &points,
			`Array.from(document.querySelectorAll("#chart-step_time .cp"), e => e.dataset.changeRun)`:  &cps,
		})
		if len(points) != len(runs) {
			t.Errorf("%s: step-time chart has %d data-run points, want %d (the runs in the store)", base, len(points), len(runs))
		}
		if len(cps) != 1 || cps[0] != strconv.FormatInt(runs[5].ID, 10) {
			t.Errorf("%s: change points at runs %v, want one at the 6th run (id %d)", base, cps, runs[5].ID)
		}
		if len(v.errors) > 0 || len(v.remote(dir, host)) > 0 || len(v.dialogs) > 0 {
			t.Errorf("%s: errors %q, network requests %q, dialogs %q", base, v.errors, v.remote(dir, host), v.dialogs)
		}
		t.Logf("%s: %d points on the page, step-time chart runs %v, change point at run %v; %d request(s), all local", base, stepPoints, points, cps, len(v.requests))
	}
	for _, p := range site.Pages {
		v := load(t, bctx, "file://"+dir+"/"+p, nil)
		if len(v.errors) > 0 || len(v.remote(dir, "")) > 0 || len(v.dialogs) > 0 {
			t.Errorf("%s: errors %q, network requests %q, dialogs %q", p, v.errors, v.remote(dir, ""), v.dialogs)
		}
	}
}

// TestBrowserChangePoints: on a synthetic history (step time 100 ms at CV
// 2% for 20 runs, 110 ms for 20, back to 100 ms for 20) the chart shows
// the change points where the series has them.
func TestBrowserChangePoints(t *testing.T) {
	bctx := browser(t)
	base := doc(t, resnet+"num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	// A fixed, deterministic wobble of about 2%.
	wobble := []float64{0.012, -0.021, 0.004, 0.018, -0.009, -0.015, 0.022, 0.001, -0.004, 0.013}
	var runs []baseline.Run
	for i := range 60 {
		level := 100.0
		if i >= 20 && i < 40 {
			level = 110
		}
		// The chart plots each run's mean step (of its stored steps):
		// every step of the template is stretched to the level (the
		// template's steps stay apart from each other: each keeps its
		// start). Re-read the template each time: it is scaled in place.
		var d map[string]any
		json.Unmarshal(base, &d)
		p := d["profiles"].([]any)[0].(map[string]any)
		for _, s := range p["steps"].([]any) {
			st := s.(map[string]any)
			start, end := st["start_ns"].(float64), st["end_ns"].(float64)
			st["end_ns"] = start + (end-start)*level/100*(1+wobble[i%len(wobble)])
		}
		an, _ := json.Marshal(d)
		runs = append(runs, baseline.Run{ID: int64(100 + i), Workload: "synthetic", Branch: "main", Commit: fmt.Sprintf("%040x", i),
			Created: time.Unix(1_750_000_000+int64(i)*86400, 0), Kind: "baseline", FingerprintHash: "fp", Analysis: an})
	}
	dir := t.TempDir()
	site, err := Write(dir, runs, Options{Metrics: []string{"step_time"}})
	if err != nil {
		t.Fatal(err)
	}
	var cps []string
	var points int
	v := load(t, bctx, "file://"+dir+"/"+site.Workloads[0].File, map[string]any{
		`Array.from(document.querySelectorAll("#chart-step_time .cp"), e => e.dataset.changeRun)`: &cps,
		`document.querySelectorAll("#chart-step_time [data-run]").length`:                         &points,
	})
	if points != 60 || strings.Join(cps, ",") != "120,140" {
		t.Errorf("%d points, change points at runs %v; want 60 points, change points at runs 120 and 140 (the 21st and 41st)", points, cps)
	}
	if len(v.errors) > 0 || len(v.remote(dir, "")) > 0 {
		t.Errorf("errors %q, network requests %q", v.errors, v.remote(dir, ""))
	}
}

// TestBrowserHostile: pages of runs named by the fuzzers' hostile seeds
// run no script but ours, open no dialog, and show each name as text:
// the index lists every workload, and the pages of the names that hold
// markup characters are opened one by one.
func TestBrowserHostile(t *testing.T) {
	bctx := browser(t)
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
	// The text the HTML parser makes of a name: it turns CR LF and CR
	// into LF, NUL and invalid UTF-8 into U+FFFD.
	text := func(s string) string {
		s = strings.ToValidUTF8(s, "\uFFFD")
		s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
		return strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	check := func(p string, evals map[string]any) {
		var scripts, handlers int
		evals[`document.scripts.length`] = &scripts
		// No element carries an event handler attribute.
		evals[`Array.from(document.querySelectorAll("*")).filter(e => Array.from(e.attributes).some(a => a.name.startsWith("on"))).length`] = &handlers
		v := load(t, bctx, "file://"+dir+"/"+p, evals)
		if scripts != 1 || handlers != 0 || len(v.dialogs) > 0 || len(v.errors) > 0 || len(v.remote(dir, "")) > 0 {
			t.Errorf("%s: %d scripts, %d elements with handlers, dialogs %q, errors %q, requests %q", p, scripts, handlers, v.dialogs, v.errors, v.remote(dir, ""))
		}
	}
	var links []string
	check("index.html", map[string]any{`Array.from(document.querySelectorAll("td > a[href^='w-']"), a => a.textContent)`: &links})
	if len(links) != len(site.Workloads) {
		t.Fatalf("index lists %d workloads, want %d", len(links), len(site.Workloads))
	}
	for i, w := range site.Workloads {
		if links[i] != text(w.Name) {
			t.Errorf("index: workload %q shows as %q", w.Name, links[i])
		}
		if !strings.ContainsAny(w.Name, "<>\"'&") {
			continue
		}
		var h1, finding string
		check(w.File, map[string]any{`document.querySelector("h1").textContent`: &h1})
		check(w.Runs[0].File, map[string]any{`document.querySelector("tr.finding td").textContent`: &finding})
		if h1 != text(w.Name) || finding != text(w.Name) {
			t.Errorf("%q: heading %q, finding %q", w.Name, h1, finding)
		}
	}
}

// TestBrowserStepPicture: a run page draws its stored median step with one
// lane per GPU stream that ran in that step (counted here from the trace's
// own GPU operations) besides the host thread; the num_workers=0 run's GPU
// waits on the data loader, and the picture says so.
func TestBrowserStepPicture(t *testing.T) {
	bctx := browser(t)
	runs := resnetStore(t)
	dir := t.TempDir()
	if _, err := Write(dir, runs, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		run  baseline.Run
		file string
	}{{runs[0], resnet + "num_workers_4/worker0.1623213129365.pt.trace.json.gz"}, {runs[5], resnet + "num_workers_0/worker0.1623143089861.pt.trace.json.gz"}} {
		p, err := kineto.ReadFile(fixtures.Path(t, c.file))
		if err != nil {
			t.Fatal(err)
		}
		r := analysis.Analyze(p, analysis.Options{})
		st := r.Steps[report.MedianStep(r)]
		want := []string{"host thread"}
		seen := map[[2]int32]bool{}
		var keys [][2]int32
		for _, op := range p.GPU {
			if k := [2]int32{op.Device, op.Stream}; op.End > st.Start && op.Start < st.End && !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
		slices.SortFunc(keys, func(a, b [2]int32) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
		for _, k := range keys {
			want = append(want, fmt.Sprintf("GPU %d stream %d", k[0], k[1]))
		}
		var lanes, idle []string
		var boxes int
		v := load(t, bctx, fmt.Sprintf("file://%s/run-%d.html", dir, c.run.ID), map[string]any{
			`Array.from(document.querySelectorAll("svg.step g.lane"), e => e.dataset.lane)`:      &lanes,
			`Array.from(document.querySelectorAll("svg.step g.idle title"), e => e.textContent)`: &idle,
			`document.querySelectorAll("svg.step g.lane rect[fill]:not([fill=none])").length`:    &boxes,
		})
		if !slices.Equal(lanes, want) {
			t.Errorf("run %d: lanes %q, want %q (the streams of its median step %s)", c.run.ID, lanes, want, st.Name)
		}
		if boxes == 0 {
			t.Errorf("run %d: no box drawn", c.run.ID)
		}
		dataIdle := slices.ContainsFunc(idle, func(s string) bool { return strings.HasSuffix(s, ": data loader") })
		if c.run.ID == runs[5].ID && !dataIdle {
			t.Errorf("run %d (num_workers=0): no GPU idle gap put down to the data loader: %q", c.run.ID, idle)
		}
		if len(v.errors) > 0 || len(v.remote(dir, "")) > 0 {
			t.Errorf("run %d: errors %q, network requests %q", c.run.ID, v.errors, v.remote(dir, ""))
		}
		t.Logf("run %d (%s): lanes %q, %d boxes, idle gaps %q", c.run.ID, st.Name, lanes, boxes, idle)
	}
}

// niceStep reports whether step is 1, 2 or 5 × 10^k.
func niceStepOK(step float64) bool {
	p := math.Pow(10, math.Floor(math.Log10(step)+1e-9))
	f := step / p
	for _, n := range []float64{1, 2, 5, 10} {
		if math.Abs(f-n) < 1e-6 {
			return true
		}
	}
	return false
}

// checkAxis: the y ticks of a chart as the browser shows them are round
// numbers at one step of 1, 2 or 5 × 10^k, their labels the numbers
// (no 2.814, 46.35, 89.88); a count axis starts at 0; every point of the
// chart lies between the lowest and highest tick.
func checkAxis(t *testing.T, chart string, labels []string, values []float64, ys []float64, pointYs []float64, count bool) {
	t.Helper()
	if len(values) < 3 || len(values) != len(labels) {
		t.Errorf("%s: ticks %q: want 3 or more, each with its value", chart, labels)
		return
	}
	step := values[1] - values[0]
	if !niceStepOK(step) {
		t.Errorf("%s: tick step %v (ticks %q) is not 1, 2 or 5 × 10^k", chart, step, labels)
	}
	for i, v := range values {
		if want := values[0] + float64(i)*step; math.Abs(v-want) > step*1e-6 {
			t.Errorf("%s: ticks %q are not evenly spaced", chart, labels)
			break
		}
		if got, err := strconv.ParseFloat(labels[i], 64); err != nil || math.Abs(got-v) > step*1e-6 {
			t.Errorf("%s: tick label %q is not its value %v", chart, labels[i], v)
		}
		if r := math.Round(v / step); math.Abs(v-r*step) > step*1e-6 {
			t.Errorf("%s: tick %q is not a multiple of the step %v", chart, labels[i], step)
		}
	}
	if count && values[0] != 0 {
		t.Errorf("%s: a count axis starts at %q, want 0", chart, labels[0])
	}
	// SVG y grows downwards: the lowest tick is the largest y.
	lo, hi := ys[0], ys[len(ys)-1]
	for _, y := range pointYs {
		if y > lo+0.5 || y < hi-0.5 {
			t.Errorf("%s: a point at y=%v lies outside the axis [%v, %v]", chart, y, hi, lo)
			break
		}
	}
}

// TestBrowserAxes: every chart of the ResNet-50 history has round ticks,
// the count charts (kernels, sync_calls) an axis from 0 (sync_calls,
// the same in every run, started at −0.08), the charts plot each run's
// mean step and say so, and the value a point shows is the mean of that
// run's kept steps, computed here from the stored steps.
func TestBrowserAxes(t *testing.T) {
	bctx := browser(t)
	runs := resnetStore(t)
	dir := t.TempDir()
	site, err := Write(dir, runs, Options{Metrics: []string{"step_time", "kernels", "cpu_wait", "sync_calls", "gpu_util"}})
	if err != nil {
		t.Fatal(err)
	}
	w := site.Workloads[0]
	type axisData struct {
		Labels  []string  `json:"labels"`
		Values  []float64 `json:"values"`
		Ys      []float64 `json:"ys"`
		Points  []float64 `json:"points"`
		Title   string    `json:"title"`
		Label0  string    `json:"label0"`
		NPoints int       `json:"n"`
	}
	var charts map[string]axisData
	v := load(t, bctx, "file://"+dir+"/"+w.File, map[string]any{
		`Object.fromEntries(Array.from(document.querySelectorAll("svg.chart"), s => [s.id, {
			labels: Array.from(s.querySelectorAll("text.ytick"), e => e.textContent),
			values: Array.from(s.querySelectorAll("text.ytick"), e => parseFloat(e.dataset.value)),
			ys: Array.from(s.querySelectorAll("text.ytick"), e => parseFloat(e.getAttribute("y"))),
			points: Array.from(s.querySelectorAll(".pt"), e => e.tagName == "circle" ? parseFloat(e.getAttribute("cy")) : parseFloat(e.getAttribute("y"))),
			title: s.querySelector("text.title").textContent,
			label0: s.querySelector(".pt").dataset.label,
			n: s.querySelectorAll(".pt").length}]))`: &charts,
	})
	if len(v.errors) > 0 {
		t.Errorf("errors %q", v.errors)
	}
	if len(charts) != 5 {
		t.Fatalf("%d charts, want 5: %v", len(charts), charts)
	}
	for id, c := range charts {
		metric := strings.TrimPrefix(id, "chart-")
		count := metric == "kernels" || metric == "sync_calls" || metric == "gpu_util"
		checkAxis(t, id, c.Labels, c.Values, c.Ys, c.Points, count)
		if !strings.HasSuffix(c.Title, ", mean") || c.NPoints != len(runs) {
			t.Errorf("%s: title %q, %d points; want it to say mean, and %d points", id, c.Title, c.NPoints, len(runs))
		}
		t.Logf("%s: ticks %q", id, c.Labels)
	}
	// The first run's step time as the point shows it, against the mean
	// of its kept steps (end − start of each stored step), read here from
	// the stored document without gpugate's code.
	var stored struct {
		Profiles []struct {
			Steps []struct {
				Start int64 `json:"start_ns"`
				End   int64 `json:"end_ns"`
			} `json:"steps"`
		} `json:"profiles"`
	}
	if err := json.Unmarshal(runs[0].Analysis, &stored); err != nil || len(stored.Profiles) != 1 || len(stored.Profiles[0].Steps) == 0 {
		t.Fatalf("stored document: %v", err)
	}
	var sum float64
	for _, s := range stored.Profiles[0].Steps {
		sum += float64(s.End-s.Start) / 1e6
	}
	mean := sum / float64(len(stored.Profiles[0].Steps))
	label := charts["chart-step_time"].Label0
	i := strings.LastIndex(label, ": ")
	shown, err := strconv.ParseFloat(strings.TrimSuffix(label[i+2:], " ms"), 64)
	if err != nil || math.Abs(shown-mean) > 0.05 {
		t.Errorf("first point %q shows %v ms, want the mean of its %d kept steps, %.2f ms", label, shown, len(stored.Profiles[0].Steps), mean)
	}
}

// TestBrowserIndexHealth: the index shows each workload's base-branch
// health — its newest baseline run and that run's verdict — and the
// newer runs of a pull request and of a local feature branch apart,
// each with its own verdict against main's baseline runs; a regressed
// pull request does not make main look regressed.
func TestBrowserIndexHealth(t *testing.T) {
	bctx := browser(t)
	runs := resnetStore(t)[:5] // 5 baseline runs of num_workers=4 on main
	slow := resnetStore(t)[5]  // a num_workers=0 run
	pr, feature := slow, runs[2]
	pr.ID, pr.Kind, pr.Branch, pr.Created = 100, "candidate", "pr-7", runs[4].Created.Add(time.Hour)
	feature.ID, feature.Kind, feature.Branch, feature.Created = 101, "candidate", "my-feature", runs[4].Created.Add(2*time.Hour)
	dir := t.TempDir()
	if _, err := Write(dir, append(runs, pr, feature), Options{}); err != nil {
		t.Fatal(err)
	}
	type row struct {
		Run     string `json:"run"`
		Branch  string `json:"branch"`
		Verdict string `json:"verdict"`
	}
	var health, others []row
	v := load(t, bctx, "file://"+dir+"/index.html", map[string]any{
		`Array.from(document.querySelectorAll("tr.health"), e => ({run: e.dataset.mainRun, branch: e.dataset.branch, verdict: e.dataset.verdict}))`: &health,
		`Array.from(document.querySelectorAll("tr.other"), e => ({run: e.dataset.otherRun, branch: e.dataset.branch, verdict: e.dataset.verdict}))`: &others,
	})
	if len(v.errors) > 0 {
		t.Errorf("errors %q", v.errors)
	}
	main := strconv.FormatInt(runs[4].ID, 10)
	if len(health) != 1 || health[0].Run != main || health[0].Branch != "main" || health[0].Verdict == "" || health[0].Verdict == "regression" {
		t.Errorf("health rows %+v, want one: main's newest baseline run %s, judged (not a regression)", health, main)
	}
	want := []row{{"101", "my-feature", ""}, {"100", "pr-7", "regression"}}
	if len(others) != 2 || others[0].Run != want[0].Run || others[0].Branch != want[0].Branch || others[1] != want[1] || others[0].Verdict == "regression" || others[0].Verdict == "" {
		t.Errorf("other runs %+v, want the feature branch's run 101 (the baseline's own capture: no regression) and then the pull request's run 100, a regression", others)
	}
}

// TestBrowserCPUBreakdown: the run page of a run without GPU activity
// (a gloo rank) splits its step into host parts; nothing on it says GPU
// idle.
func TestBrowserCPUBreakdown(t *testing.T) {
	bctx := browser(t)
	an := doc(t, "kineto/hta-cpu-only-edge/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
	r := baseline.Run{ID: 7, Workload: "gloo", Branch: "main", Commit: "c1", Created: time.Unix(1_750_000_000, 0), Kind: "baseline", FingerprintHash: "cpu", Analysis: an}
	dir := t.TempDir()
	if _, err := Write(dir, []baseline.Run{r}, Options{}); err != nil {
		t.Fatal(err)
	}
	var bar []string
	var body string
	load(t, bctx, "file://"+dir+"/run-7.html", map[string]any{
		`Array.from(document.querySelectorAll(".bar div"), e => e.dataset.label)`: &bar,
		`document.body.innerText`: &body,
	})
	if len(bar) == 0 || !strings.HasPrefix(bar[len(bar)-1], "other host time ") {
		t.Errorf("step bar %q: want it to end with other host time", bar)
	}
	if strings.Contains(body, "GPU idle") {
		t.Errorf("a CPU run's page says GPU idle:\n%s", body)
	}
}
