package dashboard

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
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
	var tmpl map[string]any
	if err := json.Unmarshal(doc(t, resnet+"num_workers_4/worker0.1623213129365.pt.trace.json.gz"), &tmpl); err != nil {
		t.Fatal(err)
	}
	// A fixed, deterministic wobble of about 2%.
	wobble := []float64{0.012, -0.021, 0.004, 0.018, -0.009, -0.015, 0.022, 0.001, -0.004, 0.013}
	var runs []baseline.Run
	for i := range 60 {
		level := 100.0
		if i >= 20 && i < 40 {
			level = 110
		}
		p := tmpl["profiles"].([]any)[0].(map[string]any)
		p["summary"].(map[string]any)["step_time_ms"].(map[string]any)["median"] = level * (1 + wobble[i%len(wobble)])
		an, _ := json.Marshal(tmpl)
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
