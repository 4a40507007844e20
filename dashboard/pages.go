package dashboard

import (
	"encoding/json"
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/runcond"
)

// runPage is the data of a run's page.
type runPage struct {
	W *Workload
	R *Run
}

// Breakdown is a profile's median step, split into where its time went.
type Breakdown struct {
	Profile string
	Rows    []BreakdownRow
	// Bar is the step as a stacked bar: GPU busy, then idle split into its
	// host-side causes where the trace shows them.
	Bar []BarPart
}

// BreakdownRow is one metric over the kept steps of one profile: its
// mean (what the run's value is made of), median and p90.
type BreakdownRow struct {
	Name, Unit string
	Mean       string
	Median     string
	P90        string
}

// BarPart is a part of the step bar, as a fraction of the step.
type BarPart struct {
	Label string
	X, W  float64 // in percent of the bar
	Color string
}

func (p runPage) Breakdowns() []Breakdown {
	var out []Breakdown
	for i, prof := range p.R.Doc.Profiles {
		b := Breakdown{Profile: fmt.Sprintf("profile %d", i+1)}
		if prof.Rank != nil {
			b.Profile = fmt.Sprintf("rank %d", *prof.Rank)
		}
		for _, m := range analysis.Metrics {
			s, ok := prof.Summary[m.Key()]
			if !ok || s.N == 0 {
				continue
			}
			b.Rows = append(b.Rows, BreakdownRow{m.Name, m.Unit, num(s.Mean), num(s.Median), num(s.P90)})
		}
		med := func(name string) float64 { return prof.Summary[name].Median }
		step := med("step_time_ms")
		if step > 0 {
			busy := min(med("gpu_busy_ms"), step)
			data := min(med("data_wait_ms"), step-busy)
			sync := min(med("sync_time_ms"), step-busy-data)
			rest := step - busy - data - sync
			x := 0.0
			// Without GPU activity the step is the host's: what is not
			// data-loader wait or sync calls is other host time, not "GPU
			// idle" (a CPU run's bar said "other GPU idle 100%").
			other := "other GPU idle"
			if !prof.HasGPU {
				other = "other host time"
			}
			for _, part := range []struct {
				label string
				v     float64
				color string
			}{{"GPU busy", busy, "#2ca02c"}, {"data-loader wait", data, "#d62728"}, {"sync calls", sync, "#ff7f0e"}, {other, rest, "#bbbbbb"}} {
				if part.v <= 0 {
					continue
				}
				w := 100 * part.v / step
				b.Bar = append(b.Bar, BarPart{fmt.Sprintf("%s %s ms (%.0f%%)", part.label, num(part.v), w), x, w, part.color})
				x += w
			}
		}
		out = append(out, b)
	}
	return out
}

// Findings are the findings of every profile of the run.
func (p runPage) Findings() []analysis.Finding {
	var out []analysis.Finding
	for _, prof := range p.R.Doc.Profiles {
		out = append(out, prof.Findings...)
	}
	return out
}

// Kernels are the largest kernels by total time, of every profile.
func (p runPage) Kernels() []analysis.KernelStat {
	var out []analysis.KernelStat
	for _, prof := range p.R.Doc.Profiles {
		out = append(out, prof.KernelStats[:min(10, len(prof.KernelStats))]...)
	}
	return out
}

// Conditions are the run conditions, as the text reports print them.
func (p runPage) Conditions() []string {
	if len(p.R.Conditions) == 0 {
		return []string{"not recorded (stored before gpugate sampled run conditions, or by baseline record)"}
	}
	c := new(runcond.Conditions)
	if err := json.Unmarshal(p.R.Conditions, c); err != nil {
		return []string{"unreadable: " + err.Error()}
	}
	out := report.ConditionsText([]*runcond.Conditions{c})
	if h := report.HostText(c.Host); h != "" {
		out = append(out, h)
	}
	if p.R.HostBusy != "" {
		out = append(out, "DISTURBED, left out of the time metrics of comparisons: "+p.R.HostBusy)
	}
	return out
}

// Devices are the run's GPUs, by name.
func (p runPage) Devices() string {
	var names []string
	for _, prof := range p.R.Doc.Profiles {
		for _, d := range prof.Devices {
			names = append(names, d.Name)
		}
	}
	return strings.Join(names, ", ")
}

var funcs = template.FuncMap{
	"num":  num,
	"add1": func(i int) int { return i + 1 },
	"date": func(r *Run) string { return r.Created.UTC().Format("2006-01-02 15:04:05") },
	"ms":   func(ns int64) string { return num(float64(ns) / 1e6) },
	"pct":  func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"ms1": func(ms float64) string {
		if !(ms >= 0 && ms < 1e12) {
			return "an unknown time"
		}
		return time.Duration(ms * float64(time.Millisecond)).Round(time.Millisecond).String()
	},
}

// style is the site's CSS, inline in every page.
const style = `<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em auto;max-width:960px;color:#222;padding:0 1em}
table{border-collapse:collapse;margin:.5em 0}td,th{border-bottom:1px solid #ddd;padding:.2em .6em;text-align:left;vertical-align:top}
code{font:12px ui-monospace,monospace;background:#f4f4f4;padding:0 .2em;word-break:break-all}
svg text{font:11px system-ui,sans-serif;fill:#444}
.axis{stroke:#999;stroke-width:1}.grid{stroke:#eee;stroke-width:1}
.cp line{stroke:#d62728;stroke-width:1.5;stroke-dasharray:4 3}.cp text{fill:#d62728;font-weight:bold}
.pt{cursor:pointer}.pt:hover{stroke:#000;stroke-width:2}
.regression{color:#b00;font-weight:bold}.pass{color:#070}.improvement{color:#070;font-weight:bold}.inconclusive{color:#a60}
.legend span{display:inline-block;margin-right:1.2em}
.bar{display:flex;height:22px;width:100%;border:1px solid #999}.bar div{height:100%}
#tip{position:fixed;pointer-events:none;background:#fff;border:1px solid #999;padding:.2em .4em;display:none;font-size:12px}
</style>`

// script shows a point's label beside the pointer (the <title> of each
// point shows it too, without script).
const script = `<script>
(function(){var tip=document.getElementById("tip");
document.querySelectorAll("[data-label]").forEach(function(el){
el.addEventListener("mousemove",function(e){tip.textContent=el.getAttribute("data-label");tip.style.display="block";tip.style.left=(e.clientX+12)+"px";tip.style.top=(e.clientY+12)+"px";});
el.addEventListener("mouseleave",function(){tip.style.display="none";});});})();
</script>`

var pages = template.Must(template.New("").Funcs(funcs).Parse(`
{{define "head"}}<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>{{.}} · gpugate</title>` + style + `</head><body><div id="tip"></div>{{end}}

{{define "foot"}}` + script + `</body></html>{{end}}

{{define "spark"}}<svg class="spark" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" role="img">{{range .Series}}<polyline fill="none" stroke="{{.Color}}" stroke-width="1.5" points="{{.Line}}"/>{{end}}</svg>{{end}}

{{define "verdict"}}{{if .}}<span class="{{.}}">{{.}}</span>{{else}}–{{end}}{{end}}

{{define "index"}}{{template "head" "workloads"}}
<h1>gpugate: workloads</h1>
<h2>Health of the base branch</h2>
<table id="health"><tr><th>workload</th><th>branch</th><th>newest baseline run</th><th>its verdict</th><th>step time (mean, baseline runs)</th><th>change points</th><th>pull requests and other branches</th></tr>
{{range .Workloads}}<tr class="health" data-workload="{{.Name}}" data-branch="{{.Branch}}"{{with .Main}} data-main-run="{{.ID}}"{{end}} data-verdict="{{.Verdict}}"><td><a href="{{.File}}">{{.Name}}</a></td><td><code>{{.Branch}}</code></td>
<td>{{with .Main}}<a href="{{.File}}">run {{.ID}}</a>, <code>{{.Short}}</code>, {{date .}}{{else}}no baseline run{{end}}</td>
<td>{{template "verdict" .Verdict}}</td><td>{{with .Spark}}{{template "spark" .}}{{end}}</td>
<td>{{range .Changes}}{{.Metric}}: {{.N}} {{else}}none{{end}}</td>
<td>{{if .Others}}{{.OthersN}} run(s), newest: <a href="#others-{{.File}}">below</a>{{else}}none{{end}}</td></tr>
{{end}}</table>
<p>A workload's health is its base branch's: the newest baseline run of that branch, judged against up to 5 baseline runs of the branch on the same machine (fingerprint) before it, and the change points of the branch's history. Runs of pull requests and other branches are listed apart below; none of them counts toward the health.</p>
<h2>Pull requests and other branches</h2>
{{range .Workloads}}{{if .Others}}<h3 id="others-{{.File}}"><a href="{{.File}}">{{.Name}}</a>: {{.OthersN}} run(s) apart from <code>{{.Branch}}</code>'s baseline</h3>
<table class="others"><tr><th>run</th><th>kind</th><th>branch</th><th>commit</th><th>created (UTC)</th><th>verdict against <code>{{.Branch}}</code></th></tr>
{{range .Others}}<tr class="other" data-other-run="{{.ID}}" data-branch="{{.Branch}}" data-verdict="{{.Verdict}}"><td><a href="{{.File}}">run {{.ID}}</a></td><td>{{.Kind}}</td><td><code>{{.Branch}}</code></td><td><code>{{.Short}}</code></td><td>{{date .Run}}</td><td>{{template "verdict" .Verdict}}</td></tr>
{{end}}</table>{{end}}{{else}}<p>None.</p>{{end}}
<p>Generated by gpugate dashboard.</p>
{{template "foot"}}{{end}}

{{define "chart"}}<svg id="{{.ID}}" class="chart" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" role="img" aria-label="{{.Metric.Name}} over runs">
{{range .YTicks}}<line class="grid" x1="{{$.Left}}" x2="{{$.Right}}" y1="{{.Pos}}" y2="{{.Pos}}"/><text class="ytick" data-value="{{.Value}}" x="{{$.Left}}" dx="-4" y="{{.Pos}}" dy="4" text-anchor="end">{{.Label}}</text>{{end}}
<line class="axis" x1="{{.Left}}" x2="{{.Right}}" y1="{{.Bottom}}" y2="{{.Bottom}}"/><line class="axis" x1="{{.Left}}" x2="{{.Left}}" y1="{{.Top}}" y2="{{.Bottom}}"/>
{{range .XTicks}}<text x="{{.Pos}}" y="{{$.Bottom}}" dy="14" text-anchor="middle">{{.Label}}</text>{{end}}
<text class="title" x="{{.Left}}" y="12">{{.Metric.Name}} ({{.Metric.Unit}}), mean</text>
{{range .Changes}}<g class="cp" data-change-run="{{.Run.ID}}" data-label="{{.Label}}"><line x1="{{.X}}" x2="{{.X}}" y1="{{$.Top}}" y2="{{$.Bottom}}"/><text x="{{.X}}" dx="3" y="{{$.Top}}" dy="10">change point</text><title>{{.Label}}</title></g>{{end}}
{{range .Series}}{{if .Line}}<polyline fill="none" stroke="{{.Color}}" stroke-width="1.5" points="{{.Line}}"/>{{end}}{{end}}
{{range .Series}}{{$s := .}}{{range .Points}}<a href="{{.Run.File}}">{{if eq $s.Kind "baseline"}}<circle class="pt baseline" data-run="{{.Run.ID}}" data-value="{{.Value}}" data-fingerprint="{{$s.Fingerprint}}" data-label="{{.Label}}" cx="{{.X}}" cy="{{.Y}}" r="4" fill="{{$s.Color}}"><title>{{.Label}}</title></circle>{{else}}<rect class="pt candidate" data-run="{{.Run.ID}}" data-value="{{.Value}}" data-fingerprint="{{$s.Fingerprint}}" data-label="{{.Label}}" x="{{.X}}" y="{{.Y}}" transform="translate(-4 -4)" width="8" height="8" fill="#fff" stroke="{{$s.Color}}" stroke-width="2"><title>{{.Label}}</title></rect>{{end}}</a>{{end}}{{end}}
</svg>{{end}}

{{define "workload"}}{{template "head" .Name}}
<p><a href="index.html">workloads</a></p>
<h1>{{.Name}}</h1>
<p>{{len .Runs}} runs. Newest of <code>{{.Branch}}</code>'s baseline: {{with .Main}}<a href="{{.File}}">run {{.ID}}</a>{{else}}none{{end}}, verdict {{template "verdict" .Verdict}}; {{.OthersN}} run(s) of pull requests and other branches.
Each point is a run's value as the verdict compares it: step time from the timing runs stored with the run (the job without the profiler) when it has them, their geometric mean when there are several; every other metric, and step time of a run without timing runs, is the profiled run's mean step (per step its ranks combined as the gate combines them: the slowest rank's time, the job's counts). Each point's label says which runs it came from.
Filled circles are baseline runs, joined per machine (fingerprint) and branch; open squares are candidate (pull request) runs.
Change points are found in each machine's baseline runs (E-divisive, permutation test).</p>
{{range .Charts}}<h2>{{.Metric.Name}}</h2>
<div class="legend">{{range .Series}}<span style="color:{{.Color}}">{{if eq .Kind "baseline"}}●{{else}}□{{end}} {{.Kind}} on <code>{{.Branch}}</code>, fingerprint <code>{{.Fingerprint}}</code> ({{len .Points}} runs)</span>{{end}}</div>
{{template "chart" .}}
{{if .Changes}}<ul>{{range .Changes}}<li class="change">{{.Label}}; commit range <code>{{.Before.Commit}}</code>..<code>{{.Run.Commit}}</code></li>{{end}}</ul>{{else}}<p>No change point.</p>{{end}}
{{end}}
<h2>Runs</h2>
{{with .Cost}}<p class="cost">Cost: {{.}}.</p>{{end}}
<table><tr><th>#</th><th>run</th><th>kind</th><th>branch</th><th>commit</th><th>created (UTC)</th><th>fingerprint</th><th>cost</th><th>host</th></tr>
{{range .Runs}}<tr><td>{{add1 .Index}}</td><td><a href="{{.File}}">{{.ID}}</a></td><td>{{.Kind}}</td><td><code>{{.Branch}}</code></td><td><code>{{.Short}}</code></td><td>{{date .}}</td><td><code>{{.FingerprintHash}}</code></td><td>{{.Cost}}</td><td>{{with .HostBusy}}<span class="disturbed" title="{{.}}">busy: left out of time metrics</span>{{end}}{{with .TimingBusy}} <span class="disturbed" title="{{.}}">timing runs busy: left out of step time</span>{{end}}</td></tr>
{{end}}</table>
{{template "foot"}}{{end}}

{{define "run"}}{{template "head" (printf "run %d" .R.ID)}}
<p><a href="index.html">workloads</a> › <a href="{{.W.File}}">{{.W.Name}}</a></p>
<h1>Run {{.R.ID}} of {{.W.Name}}</h1>
<table><tr><th>kind</th><td>{{.R.Kind}}</td></tr><tr><th>branch</th><td><code>{{.R.Branch}}</code></td></tr>
<tr><th>commit</th><td><code>{{.R.Commit}}</code></td></tr><tr><th>created (UTC)</th><td>{{date .R}}</td></tr>
<tr><th>profiler</th><td><code>{{.R.Profiler}}</code></td></tr><tr><th>GPUs</th><td>{{.Devices}}</td></tr>
<tr><th>fingerprint</th><td><code>{{.R.FingerprintHash}}</code></td></tr><tr><th>gpugate</th><td><code>{{.R.Version}}</code></td></tr>
<tr><th>cost</th><td class="cost">{{with .R.Cost}}{{.}}{{else}}not recorded{{end}}</td></tr></table>
{{with .R.Nodes}}<h2>Nodes</h2>
{{with $.R.Doc.Job}}{{with .Slurm}}<p class="slurm">Slurm job <code>{{.JobID}}</code> on {{range $i, $n := .Nodes}}{{if $i}}, {{end}}<code>{{$n}}</code>{{end}}; it waited {{ms1 .QueueWaitMs}} in the queue and ran {{ms1 .RunMs}}.</p>{{end}}{{end}}
<table id="nodes"><tr><th>node</th><th>ranks</th><th>baseline step (ms)</th><th>step (ms)</th><th>own work (ms)</th><th>own work against the node's baseline</th></tr>
{{range .PerNode}}<tr class="node" data-node="{{.Node}}"><td><code>{{.Node}}</code></td><td>{{.Ranks}}</td><td>{{with .BaselineStepMs}}{{num .}}{{else}}—{{end}}</td><td>{{num .StepMs}}</td><td>{{with .OwnMs}}{{num .}}{{else}}—{{end}}</td><td>{{with .VsBaseline}}{{printf "%+.2f" .Delta}} ms ({{printf "%+.2f" .DeltaLo}} to {{printf "%+.2f" .DeltaHi}} ms), <span class="{{.Verdict}}">{{.Verdict}}</span>{{else}}not judged (no baseline run of the node before it, or its own work unknown){{end}}</td></tr>
{{end}}</table>
<p class="straggler">{{if .StragglerText}}Straggler: {{.StragglerText}}.{{else}}No node's own work regressed against its baseline.{{end}} Slowest node <code>{{.SlowestNode}}</code>{{with .SlowestRank}} (rank {{.}}){{end}}: {{.How}}.</p>
<p>The host's CPUs while the run ran are under Run conditions below.</p>{{end}}
<h2>Step time breakdown</h2>
{{range .Breakdowns}}<h3>{{.Profile}}</h3>
{{if .Bar}}<div class="bar" role="img" aria-label="median step">{{range .Bar}}<div style="width:{{pct .W}}%;background:{{.Color}}" title="{{.Label}}" data-label="{{.Label}}"></div>{{end}}</div>
<p>{{range .Bar}}<span style="color:{{.Color}}">■</span> {{.Label}} {{end}}</p>{{end}}
<table><tr><th>metric</th><th>mean</th><th>median</th><th>p90</th><th>unit</th></tr>{{range .Rows}}<tr><td>{{.Name}}</td><td>{{.Mean}}</td><td>{{.Median}}</td><td>{{.P90}}</td><td>{{.Unit}}</td></tr>{{end}}</table>
{{end}}
<h2>The median step</h2>
{{with .R.Step}}{{.SVG}}{{else}}<p>No picture of this run's step: it was stored without its step's timeline (by a gpugate before v0.2.0, <code>baseline record</code> of an analysis document, or from a trace without steps).</p>{{end}}
<h2>Findings</h2>
{{with .Findings}}<table><tr><th>finding</th><th>severity</th><th>summary</th><th>evidence</th><th>suggestion</th></tr>
{{range .}}<tr class="finding"><td><code>{{.ID}}</code></td><td>{{.Severity}}</td><td>{{.Summary}}</td><td>{{.Evidence}}</td><td>{{.Suggestion}}</td></tr>{{end}}</table>{{else}}<p>None.</p>{{end}}
<h2>Largest kernels</h2>
{{with .Kernels}}<table><tr><th>kernel</th><th>count</th><th>total time (ms)</th></tr>
{{range .}}<tr><td><code>{{.Name}}</code></td><td>{{.Count}}</td><td>{{ms .Time}}</td></tr>{{end}}</table>{{else}}<p>None recorded.</p>{{end}}
<h2>Run conditions</h2>
<ul>{{range .Conditions}}<li>{{.}}</li>{{end}}</ul>
{{template "foot"}}{{end}}
`))
