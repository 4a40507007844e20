package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/internal/pgtest"
)

// The done-when through the command, on both backends: 5 runs of
// the V100 ResNet-50 num_workers=4 capture, then 4 of num_workers=0,
// recorded with gpugate baseline record; gpugate dashboard writes a site
// whose workload page has a step-time chart with 9 run points and one
// change point, at the 6th run. (The browser opens it in
// dashboard.TestBrowser.)
func TestDashboardCommand(t *testing.T) {
	const resnet = "kineto/kineto-tbplugin-resnet50-v100-legacy/"
	w4 := fixtures.Path(t, resnet+"num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	w0 := fixtures.Path(t, resnet+"num_workers_0/worker0.1623143089861.pt.trace.json.gz")
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "perf.db")
			dbFlag := []string{"-db", db}
			if backend == "postgres" {
				db = pgtest.DB(t)
				// A URL with a password never goes on argv (-db refuses it).
				f := filepath.Join(t.TempDir(), "store-url")
				os.WriteFile(f, []byte(db+"\n"), 0o600)
				dbFlag = []string{"-db-file", f}
			}
			for i := range 9 {
				trace := w4
				if i >= 5 {
					trace = w0
				}
				if code, _, e := run(t, append([]string{"baseline", "record", trace, "-workload", "resnet50", "-commit", "commit" + string(rune('1'+i))}, dbFlag...)...); code != 0 {
					t.Fatalf("record: %d %s", code, e)
				}
			}
			out := filepath.Join(t.TempDir(), "site")
			code, stdout, stderr := run(t, append([]string{"dashboard", "-out", out}, dbFlag...)...)
			if code != 0 || !strings.Contains(stdout, "wrote 11 page(s) for 1 workload(s) and 9 run(s)") {
				t.Fatalf("dashboard: exit %d\n%s%s", code, stdout, stderr)
			}
			pages, _ := filepath.Glob(filepath.Join(out, "w-*.html"))
			if len(pages) != 1 {
				t.Fatalf("workload pages %v", pages)
			}
			b, _ := os.ReadFile(pages[0])
			page := string(b)
			i := strings.Index(page, `<svg id="chart-step_time"`)
			chart := page[i : i+strings.Index(page[i:], "</svg>")]
			if n := len(regexp.MustCompile(`data-run="\d+"`).FindAllString(chart, -1)); n != 9 {
				t.Errorf("step-time chart: %d run points, want 9", n)
			}
			cps := regexp.MustCompile(`data-change-run="(\d+)"`).FindAllStringSubmatch(chart, -1)
			if len(cps) != 1 || !strings.Contains(page, "commit range <code>commit5</code>..<code>commit6</code>") {
				t.Errorf("change points %v, want one between commit5 and commit6", cps)
			}
		})
	}
	if code, _, stderr := run(t, "dashboard", "-db", filepath.Join(t.TempDir(), "missing.db"), "-out", t.TempDir()); code != 2 || !strings.Contains(stderr, "missing.db") {
		t.Errorf("missing store: exit %d %s", code, stderr)
	}
	if code, _, stderr := run(t, "dashboard", "-db", "x.db"); code != 2 || !strings.Contains(stderr, "-out") {
		t.Errorf("no -out: exit %d %s", code, stderr)
	}
}

// syncBuf is a buffer that a test reads while a command writes it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// dashboard -serve serves the site it wrote until interrupted, then exits 0.
func TestDashboardServe(t *testing.T) {
	trace := fixtures.Path(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	db := filepath.Join(t.TempDir(), "perf.db")
	if code, _, e := run(t, "baseline", "record", trace, "-workload", "w", "-db", db); code != 0 {
		t.Fatalf("record: %d %s", code, e)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuf
	done := make(chan int)
	go func() {
		done <- gpugate(ctx, []string{"dashboard", "-db", db, "-out", filepath.Join(t.TempDir(), "site"), "-serve", "127.0.0.1:0"}, &out, &errb)
	}()
	addr := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/)`)
	var url string
	for i := 0; i < 200 && url == ""; i++ {
		if m := addr.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
		}
		time.Sleep(50 * time.Millisecond)
	}
	if url == "" {
		t.Fatalf("not serving:\n%s%s", out.String(), errb.String())
	}
	resp, err := http.Get(url + "index.html")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "gpugate: workloads") {
		t.Errorf("GET index.html: %s\n%.200s", resp.Status, body)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("after interrupt: exit %d %s", code, errb.String())
	}
}
