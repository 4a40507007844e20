// Package dashboard writes a static web site of a store's history: an
// index of workloads with their latest verdicts and small trends, a page
// per workload with one chart per gated metric over its runs, change
// points marked, and a page per run with its step-time breakdown, findings
// and run conditions.
//
// The site is self-contained: every page is one HTML file with its CSS and
// SVG inline, and it makes no network request (no CDN, no web fonts, no
// script from elsewhere), so that it opens from a CI artifact, GitHub
// Pages or a file:// URL alike. Charts are SVG rendered here, in Go.
//
// It takes runs, not a store: the command reads them through the baseline
// package's API (SQLite or PostgreSQL alike) and hands them over.
//
// Every name on a page (workload, branch, commit, kernel, finding,
// device) comes from a trace or a job and is hostile: pages are rendered
// with html/template, which escapes each value for the context it lands
// in (text, attribute, URL). STYLE.md's "never html/template" is about
// the Markdown PR comment, which GitHub sanitizes differently; for HTML
// that we serve ourselves, contextual escaping is the right tool. File
// names never come from a name: a workload's page is named by a hash of
// its name, a run's by its numeric id.
package dashboard

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/stats"
)

// Options tune the site.
type Options struct {
	// Change are the change-point options (stats.ChangePoints).
	Change stats.ChangeOptions
	// Metrics are the metrics charted, by name; nil means the gate's
	// default metrics (gate.DefaultGate).
	Metrics []string
}

// Site is what Write wrote, for the command's message and for tests.
type Site struct {
	Workloads []*Workload
	Pages     []string // paths relative to the site's folder
}

// Workload is one workload's history.
type Workload struct {
	Name string
	File string // its page, "w-<hash>.html"
	Runs []*Run // oldest first
	// Charts are one per metric with values, in Options.Metrics order.
	Charts []*Chart
	// Verdict is the newest run's against the baseline runs before it of
	// its fingerprint (gate.Compare), or "" when there are none.
	Verdict string
	Latest  *Run
	// Spark is the step-time trend of the newest run's fingerprint.
	Spark *Chart
}

// Run is one stored run as the site shows it.
type Run struct {
	baseline.Run
	Doc *report.Analysis
	// Index is the run's position in its workload's history, from 0.
	Index int
	// Values are the run's value of each metric (its median step, the
	// mean over ranks for a multi-rank run), by metric name.
	Values map[string]float64
	File   string // "run-<id>.html"
	// Step is the picture of the run's median step, when known.
	Step *StepPicture
}

// Short is the run's commit, shortened.
func (r *Run) Short() string {
	if len(r.Commit) > 12 {
		return r.Commit[:12]
	}
	return r.Commit
}

// WorkloadFile is the page name of workload name: a hash, never the
// name itself, which may hold "../" or anything else.
func WorkloadFile(name string) string {
	h := sha256.Sum256([]byte(name))
	return "w-" + hex.EncodeToString(h[:6]) + ".html"
}

// Write builds the site from runs into dir, which it creates. Pages of
// an older site in dir are overwritten; nothing else there is touched.
func Write(dir string, runs []baseline.Run, o Options) (*Site, error) {
	site, err := Load(runs, o)
	if err != nil {
		return nil, err
	}
	return site, site.write(dir)
}

// Load reads runs into workloads, their charts and change points, without
// writing anything (the Action's alert reads the change points).
func Load(runs []baseline.Run, o Options) (*Site, error) {
	if o.Metrics == nil {
		o.Metrics = gate.DefaultGate
	}
	var metrics []analysis.Metric
	for _, name := range o.Metrics {
		m, ok := analysis.MetricByName(name)
		if !ok {
			return nil, fmt.Errorf("dashboard: unknown metric %q", name)
		}
		metrics = append(metrics, m)
	}
	site := &Site{}
	byName := map[string]*Workload{}
	for _, br := range runs {
		doc := new(report.Analysis)
		if err := json.Unmarshal(br.Analysis, doc); err != nil || len(doc.Profiles) == 0 {
			return nil, fmt.Errorf("dashboard: run %d: analysis is not a gpugate analyze document with a profile", br.ID)
		}
		w := byName[br.Workload]
		if w == nil {
			w = &Workload{Name: br.Workload, File: WorkloadFile(br.Workload)}
			byName[br.Workload] = w
			site.Workloads = append(site.Workloads, w)
		}
		r := &Run{Run: br, Doc: doc, Index: len(w.Runs), Values: values(doc, metrics), File: fmt.Sprintf("run-%d.html", br.ID)}
		r.Step = stepFromDoc(doc)
		w.Runs = append(w.Runs, r)
	}
	slices.SortFunc(site.Workloads, func(a, b *Workload) int { return cmp.Compare(a.Name, b.Name) })
	for _, w := range site.Workloads {
		slices.SortStableFunc(w.Runs, func(a, b *Run) int {
			return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
		})
		for i, r := range w.Runs {
			r.Index = i
		}
		for _, m := range metrics {
			if c := newChart(w, m, o.Change); c != nil {
				w.Charts = append(w.Charts, c)
			}
		}
		w.Latest = w.Runs[len(w.Runs)-1]
		w.Verdict = verdict(w)
		w.Spark = spark(w)
	}
	return site, nil
}

func (site *Site) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	write := func(name string, tmpl string, data any) error {
		var b strings.Builder
		if err := pages.ExecuteTemplate(&b, tmpl, data); err != nil {
			return fmt.Errorf("dashboard: render %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			return fmt.Errorf("dashboard: %w", err)
		}
		site.Pages = append(site.Pages, name)
		return nil
	}
	if err := write("index.html", "index", site); err != nil {
		return err
	}
	for _, w := range site.Workloads {
		if err := write(w.File, "workload", w); err != nil {
			return err
		}
		for _, r := range w.Runs {
			if err := write(r.File, "run", runPage{W: w, R: r}); err != nil {
				return err
			}
		}
	}
	return nil
}

// values are a run's per-metric numbers: each profile's median step (the
// summaries leave the edge steps out, as the gate does), and for a
// multi-rank run the mean over its ranks.
func values(doc *report.Analysis, metrics []analysis.Metric) map[string]float64 {
	out := map[string]float64{}
	for _, m := range metrics {
		var sum float64
		n := 0
		for _, p := range doc.Profiles {
			if s, ok := p.Summary[m.Key()]; ok && s.N > 0 && !math.IsNaN(s.Median) && !math.IsInf(s.Median, 0) {
				sum += s.Median
				n++
			}
		}
		if n > 0 {
			out[m.Name] = sum / float64(n)
		}
	}
	return out
}

// verdict compares the newest run with up to 5 baseline runs of its
// fingerprint before it, as the gate would.
func verdict(w *Workload) string {
	last := w.Latest
	var base []gate.Run
	for i := len(w.Runs) - 2; i >= 0 && len(base) < 5; i-- {
		r := w.Runs[i]
		if r.Kind == "baseline" && r.FingerprintHash == last.FingerprintHash {
			base = append(base, gate.Run(r.Doc.Results()))
		}
	}
	if len(base) == 0 {
		return ""
	}
	rep := gate.Compare(base, []gate.Run{gate.Run(last.Doc.Results())}, gate.Options{})
	return string(rep.Verdict)
}

// spark is the step-time trend of the newest run's fingerprint's baseline
// runs, without axes.
func spark(w *Workload) *Chart {
	for _, c := range w.Charts {
		if c.Metric.Name != "step_time" {
			continue
		}
		for _, s := range c.Series {
			if s.Fingerprint == w.Latest.FingerprintHash && s.Kind == "baseline" {
				return sparkChart(s)
			}
		}
	}
	return nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
