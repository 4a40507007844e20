package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

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
			if backend == "postgres" {
				db = pgtest.DB(t)
				t.Cleanup(pgtest.Stop)
			}
			for i := range 9 {
				trace := w4
				if i >= 5 {
					trace = w0
				}
				if code, _, e := run(t, "baseline", "record", trace, "-workload", "resnet50", "-commit", "commit"+string(rune('1'+i)), "-db", db); code != 0 {
					t.Fatalf("record: %d %s", code, e)
				}
			}
			out := filepath.Join(t.TempDir(), "site")
			code, stdout, stderr := run(t, "dashboard", "-db", db, "-out", out)
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
