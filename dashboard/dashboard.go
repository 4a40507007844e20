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
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/runcond"
	"github.com/gpugate/gpugate/stats"
)

// Options tune the site.
type Options struct {
	// Change are the change-point options (stats.ChangePoints).
	Change stats.ChangeOptions
	// Metrics are the metrics charted, by name; nil means the gate's
	// default metrics (gate.DefaultGate).
	Metrics []string
	// Branch is the base branch, whose baseline runs are a workload's
	// health on the index; "" picks main, else master, else the branch
	// with the most baseline runs (MainBranch).
	Branch string
	// Host are the margins that say a run's host was busy (perf.yaml
	// host:); nil means gate.DefaultHostMargins.
	Host *gate.HostMargins
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
	// Latest is the newest run of any kind and branch.
	Latest *Run
	// Branch is the base branch (Options.Branch, MainBranch), and Main
	// its newest baseline run: the workload's health is Main's, not that
	// of whatever ran last (a pull request's candidate, a local run of a
	// feature branch). Nil when the branch has no baseline run.
	Branch string
	Main   *Run
	// Verdict is Main's against up to 5 baseline runs of the branch and
	// its fingerprint before it (gate.Compare), or "" when there are none.
	Verdict string
	// Changes counts the change points of the branch's baseline runs, by
	// metric, in chart order.
	Changes []MetricChanges
	// Others are the runs that are not the branch's baseline runs (pull
	// requests' candidates, other branches), newest first, at most
	// MaxOthers; OthersN counts them all.
	Others  []*Other
	OthersN int
	// Spark is the step-time trend of the branch's baseline runs on
	// Main's fingerprint.
	Spark *Chart
}

// MetricChanges is the number of change points of one metric.
type MetricChanges struct {
	Metric string
	N      int
}

// Other is a run apart from the base branch's health, with its verdict
// against the branch's baseline runs of its fingerprint before it.
type Other struct {
	*Run
	Verdict string
}

// MaxOthers bounds the runs the index lists apart from the main health.
const MaxOthers = 5

// Run is one stored run as the site shows it.
type Run struct {
	baseline.Run
	Doc *report.Analysis
	// Index is the run's position in its workload's history, from 0.
	Index int
	// Values are the run's value of each metric, by metric name, as a
	// verdict compares it (gate.JudgedValue): step time from the timing
	// runs stored with the run when it has them, every other metric (and
	// step time of a run without timing runs) its profiled run's mean
	// step, ranks combined as the gate combines them.
	Values map[string]float64
	// Timed counts, by metric name, the timing runs a value came from;
	// absent for a value from the profiled run.
	Timed map[string]int
	// TimingBusy says why the host of every timing run stored with the
	// run was busy (a comparison leaves them out of step time); "" when
	// one was quiet or the run has none.
	TimingBusy string
	File       string // "run-<id>.html"
	// HostBusy says why the host was busy while the run ran (a disturbed
	// run, left out of the time metrics of comparisons); "" when it was
	// not or nothing is known.
	HostBusy string
	// Step is the picture of the run's median step, when known.
	Step *StepPicture
	// Nodes are a Slurm run's ranks by node, each node's own work judged
	// against its baseline (gate.Nodes); nil for a run outside Slurm.
	Nodes *gate.Nodes
}

// slurmRun reports whether a run ran under Slurm: a profile knows its
// node.
func slurmRun(r *Run) bool {
	for _, p := range r.Doc.Profiles {
		if p.Node != "" {
			return true
		}
	}
	return false
}

// Cost is the run's cost as the job's runs, wall time and GPU-seconds
// (wall time × the machine's GPUs), as gpugate run recorded it: the
// profiled run and the timing runs stored with it (report.Job.TimingRuns),
// which together are what the check that stored the run spent on it; ""
// for a run stored without it.
func (r *Run) Cost() string {
	c := r.cost()
	if c == nil {
		return ""
	}
	return report.CostText(c)
}

// cost is Cost's numbers; nil for a run stored without them.
func (r *Run) cost() *gate.Cost {
	j := r.Doc.Job
	if j == nil || !(j.WallSeconds > 0) || j.WallSeconds > 1e9 || j.TimingRuns < 0 || j.TimingRuns > gate.MaxTimingRuns || !(j.TimingWallSeconds >= 0 && j.TimingWallSeconds <= 1e9) {
		return nil
	}
	wall := j.WallSeconds + j.TimingWallSeconds
	return &gate.Cost{Runs: 1 + j.TimingRuns, WallSeconds: wall, GPUs: max(j.GPUs, 0), GPUSeconds: wall * float64(max(j.GPUs, 0))}
}

// Cost is what the workload's runs that recorded it cost together.
func (w *Workload) Cost() string {
	var c gate.Cost
	for _, r := range w.Runs {
		if rc := r.cost(); rc != nil {
			c.Runs += rc.Runs
			c.WallSeconds += rc.WallSeconds
			c.GPUSeconds += rc.GPUSeconds
			c.GPUs = max(c.GPUs, rc.GPUs)
		}
	}
	if c.Runs == 0 {
		return ""
	}
	s := report.CostText(&c)
	if c.GPUs > 0 {
		// Machines may differ: the GPU-minutes are the runs' own sum.
		s = fmt.Sprintf("%d runs of the job, %s of wall time, %.1f GPU-minutes", c.Runs, time.Duration(c.WallSeconds*float64(time.Second)).Round(time.Second), c.GPUSeconds/60)
	}
	return s
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
		if err := gate.CheckTimingRuns(doc.TimingRuns); err != nil {
			return nil, fmt.Errorf("dashboard: run %d: %w", br.ID, err)
		}
		w := byName[br.Workload]
		if w == nil {
			w = &Workload{Name: br.Workload, File: WorkloadFile(br.Workload)}
			byName[br.Workload] = w
			site.Workloads = append(site.Workloads, w)
		}
		r := &Run{Run: br, Doc: doc, Index: len(w.Runs), File: fmt.Sprintf("run-%d.html", br.ID)}
		r.Values, r.Timed, r.TimingBusy = values(gate.Run(doc.Results()), doc.TimingRuns, metrics, *cmp.Or(o.Host, &gate.DefaultHostMargins))
		r.Step = stepFromDoc(doc)
		r.HostBusy = hostBusy(br, o.Host)
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
		w.Branch = cmp.Or(o.Branch, MainBranch(w.Runs))
		health(w, *cmp.Or(o.Host, &gate.DefaultHostMargins))
	}
	return site, nil
}

// MainBranch is the base branch of a history: main or master when it
// has baseline runs, else the branch with the most (the newest on a tie).
func MainBranch(runs []*Run) string {
	n := map[string]int{}
	best := ""
	for _, r := range runs { // oldest first: a tie goes to the newer
		if r.Kind != "baseline" {
			continue
		}
		n[r.Branch]++
		if best == "" || n[r.Branch] >= n[best] {
			best = r.Branch
		}
	}
	for _, b := range []string{"main", "master"} {
		if n[b] > 0 {
			return b
		}
	}
	return best
}

// health fills in the workload's main-branch health, and its other runs
// apart.
func health(w *Workload, margins gate.HostMargins) {
	onBranch := func(r *Run) bool { return r.Kind == "baseline" && r.Branch == w.Branch }
	for i := len(w.Runs) - 1; i >= 0; i-- {
		r := w.Runs[i]
		if onBranch(r) {
			if w.Main == nil {
				w.Main = r
			}
			continue
		}
		w.OthersN++
		if len(w.Others) < MaxOthers {
			w.Others = append(w.Others, &Other{Run: r})
		}
	}
	// The verdicts, against the branch's baseline runs before each.
	compare := func(r *Run) *gate.Report {
		var base []gate.Run
		// Runs whose host was busy are left out of the time metrics, as
		// the gate leaves them out; step time is judged on the timing
		// runs when both sides have them, as gpugate run judges it.
		busy := gate.Disturbed{Cand: []string{r.HostBusy}}
		timing := &gate.TimingRuns{Cand: r.Doc.TimingRuns, Margins: margins}
		for i := r.Index - 1; i >= 0 && len(base) < 5; i-- {
			b := w.Runs[i]
			if onBranch(b) && b.FingerprintHash == r.FingerprintHash {
				base = append(base, gate.Run(b.Doc.Results()))
				busy.Base = append(busy.Base, b.HostBusy)
				timing.Base = append(timing.Base, b.Doc.TimingRuns...)
			}
		}
		if len(base) == 0 {
			return nil
		}
		o := gate.Options{Disturbed: busy}
		if len(timing.Base) > 0 && len(timing.Cand) > 0 {
			o.Timing = timing
		}
		return gate.Compare(base, []gate.Run{gate.Run(r.Doc.Results())}, o)
	}
	judge := func(r *Run) string {
		if rep := compare(r); rep != nil {
			return string(rep.Verdict)
		}
		return ""
	}
	// A Slurm run's page shows its nodes, each node's own work judged
	// against the same node's in the baseline runs before it (the
	// straggler), as gpugate run's report does.
	for _, r := range w.Runs {
		if !slurmRun(r) {
			continue
		}
		if rep := compare(r); rep != nil && rep.Nodes != nil {
			r.Nodes = rep.Nodes
		} else {
			r.Nodes = gate.NoBaseline([]gate.Run{gate.Run(r.Doc.Results())}, "").Nodes
		}
	}
	if w.Main != nil {
		w.Verdict = judge(w.Main)
	}
	for _, o := range w.Others {
		o.Verdict = judge(o.Run)
	}
	for _, c := range w.Charts {
		n := 0
		for _, m := range c.Changes {
			if m.Branch == w.Branch {
				n++
			}
		}
		if n > 0 {
			w.Changes = append(w.Changes, MetricChanges{c.Metric.Name, n})
		}
	}
	if w.Main == nil {
		return
	}
	for _, c := range w.Charts {
		if c.Metric.Name != "step_time" {
			continue
		}
		for _, s := range c.Series {
			if s.Kind == "baseline" && s.Branch == w.Branch && s.Fingerprint == w.Main.FingerprintHash {
				w.Spark = sparkChart(s)
			}
		}
	}
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

// values are a run's per-metric numbers as a verdict compares them
// (gate.JudgedValue: step time from the run's quiet timing runs when it
// has them; otherwise per step the ranks combined — the slowest rank's
// time, the job's count, the mean ratio — then the mean over the kept
// steps), and the timing runs each came from: the dashboard's one source
// of a per-run value. The charts, the change points and the sparkline
// read it.
func values(run gate.Run, timing []gate.TimingRun, metrics []analysis.Metric, margins gate.HostMargins) (map[string]float64, map[string]int, string) {
	out, timed := map[string]float64{}, map[string]int{}
	busy := ""
	for _, m := range metrics {
		if j, ok := gate.JudgedValue(run, timing, m, margins); ok {
			out[m.Name] = j.Value
			if j.Timing > 0 {
				timed[m.Name] = j.Timing
			}
			busy = cmp.Or(busy, j.TimingBusy)
		}
	}
	return out, timed, busy
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

// hostBusy is gate.HostBusy of a stored run's conditions under m (nil:
// the defaults); "" for a run without them.
func hostBusy(r baseline.Run, m *gate.HostMargins) string {
	if len(r.Conditions) == 0 {
		return ""
	}
	var c runcond.Conditions
	if json.Unmarshal(r.Conditions, &c) != nil {
		return ""
	}
	return gate.HostBusy(&c, *cmp.Or(m, &gate.DefaultHostMargins))
}
