package action

// Judging a result again: what the post step (pr mode) and the fork
// flow's comment job post is never what the artifact says it is. Both
// judge every metric from the per-run samples gpugate-result.json carries,
// by the rule and with the settings of the trusted perf.yaml (the one the
// run step read, checked by its digest, in pr mode; the base branch's,
// which the comment workflow checks out, in comment mode): the gate list,
// the allowances, the smallest changes, the level and max_runs. The
// artifact's gate flags, allowance_pct, α and sampling are ignored; a
// result whose metric list is not one a comparison yields is refused.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/internal/safefile"
	"github.com/gpugate/gpugate/pipeline"
	"github.com/gpugate/gpugate/stats"
)

// judgeOptions are the comparison's settings for workload w of the
// trusted perf.yaml c, as pipeline.Compare takes them, and the most
// candidate runs a run of w makes under repeat: auto (0: a fixed repeat,
// judged once at the default level).
func judgeOptions(c *config.Config, w *config.Workload) (gate.Options, int, error) {
	allow, err := pipeline.Allowances(c)
	if err != nil {
		return gate.Options{}, 0, err
	}
	opt := gate.Options{Allowances: allow, Gate: c.Gate, MinAbs: pipeline.MinAbs(c)}
	if w.Repeat != config.RepeatAuto {
		return opt, 0, nil
	}
	opt.Thresholds = stats.Thresholds{Alpha: pipeline.AutoAlpha / float64(w.MaxRuns), AutoAlpha: pipeline.AutoAlpha, AutoMaxRuns: w.MaxRuns}
	return opt, w.MaxRuns, nil
}

// judge judges the result r again from its samples with the settings of
// workload w of the trusted perf.yaml c, and re-derives its verdict
// (rederive). It refuses a result whose metric list differs from its
// samples' or is not one a comparison yields (gate.CheckMetricList), one
// with more candidate runs than w's max_runs under repeat: auto, and one
// without a baseline where c's baseline.on_missing is fail.
func judge(r *Result, c *config.Config, w *config.Workload) error {
	opt, maxRuns, err := judgeOptions(c, w)
	if err != nil {
		return err
	}
	rep := r.Report
	var sampled, reported []string
	noBase := true
	for name, s := range r.Samples {
		// Values import would refuse (negative, non-finite, beyond a
		// duration's bound) are refused here too: −1e7 ms in one
		// candidate run would otherwise pass a regression.
		if err := checkSamples(name, s); err != nil {
			return err
		}
		sampled = append(sampled, name)
		if len(s.Baseline) > 0 {
			noBase = false
		}
		if maxRuns > 0 && len(s.Candidate) > maxRuns {
			return fmt.Errorf("metric %s has %d candidate runs, more than max_runs %d of workload %s in %s (repeat: auto)", name, len(s.Candidate), maxRuns, w.Name, c.File)
		}
	}
	for _, m := range rep.Metrics {
		reported = append(reported, m.Name)
	}
	sort.Strings(sampled)
	sort.Strings(reported)
	if len(sampled) == 0 {
		return fmt.Errorf("the result carries no samples: there is nothing to judge it by")
	}
	if len(reported) > 0 && !slices.Equal(sampled, reported) {
		return fmt.Errorf("the result's metric list (%s) differs from the metrics it carries samples of (%s)", strings.Join(reported, ", "), strings.Join(sampled, ", "))
	}
	absent, err := gate.CheckMetricList(sampled, opt)
	if err != nil {
		return err
	}
	if len(reported) == 0 {
		// No baseline: the candidate was measured (its samples are
		// complete, checked above) and nothing compared.
		if !noBase {
			return fmt.Errorf("the result compares no metric but carries baseline samples of %s", strings.Join(sampled, ", "))
		}
		if c.Baseline.OnMissing == "fail" {
			return fmt.Errorf("the result has no baseline, and %s says baseline.on_missing: fail", c.File)
		}
		rederive(rep) // no-baseline (or inconclusive: baseline.lenient's fingerprint mismatch)
		return nil
	}
	for i, m := range rep.Metrics {
		s := r.Samples[m.Name]
		if am, _ := analysis.MetricByName(m.Name); gate.IsTime(am) && (len(s.Baseline) == 0 || len(s.Candidate) == 0) {
			// The run step leaves out a side's samples of a time metric
			// when that side had no quiet run (gate.JudgedSamples): no
			// time verdict, whatever host_busy flags the result carries.
			rep.Metrics[i] = noQuietSide(m, am, s, opt)
			continue
		}
		if len(s.Baseline) == 0 || len(s.Candidate) == 0 {
			return fmt.Errorf("metric %s is compared but the result carries no samples of its %s", m.Name, map[bool]string{true: "baseline", false: "candidate"}[len(s.Baseline) == 0])
		}
		if rep.Metrics[i], err = gate.Rejudge(m, s.Baseline, s.Candidate, opt); err != nil {
			return err
		}
		if m.Name == "step_time" { // the chart shows the numbers judged
			r.BaseSteps, r.CandSteps = firstRun(s.Baseline), firstRun(s.Candidate)
		}
	}
	// What the comment states is the level judged at, not the artifact's.
	rep.Alpha = stats.DefaultThresholds.Alpha
	if opt.Thresholds.Alpha != 0 {
		rep.Alpha = opt.Thresholds.Alpha
	}
	if s := rep.Sampling; s != nil && s.Unit == stats.UnitRun {
		s.MaxRuns, s.LookAlpha = maxRuns, rep.Alpha
	}
	if len(absent) > 0 {
		rep.Warnings = append(rep.Warnings, gate.AbsentGateWarnings(rep, gate.Gates(opt))...)
	}
	// Time metrics with disturbed runs get their note, or no verdict, as
	// the run gave them (gate.Compare; the samples are the quiet runs').
	rep.ReapplyHost()
	rederive(rep)
	return nil
}

// checkSamples refuses samples of metric name that import would refuse
// (baseline.CheckSample).
func checkSamples(name string, s MetricSamples) error {
	m, ok := analysis.MetricByName(name)
	if !ok || m.Name != name {
		return fmt.Errorf("metric %q is not one gpugate computes", name)
	}
	for _, side := range []struct {
		what string
		runs [][]float64
	}{{"baseline", s.Baseline}, {"candidate", s.Candidate}} {
		for i, run := range side.runs {
			for j, v := range run {
				if err := baseline.CheckSample(m.Unit, v); err != nil {
					return fmt.Errorf("metric %s, %s run %d, step %d: %w", name, side.what, i+1, j+1, err)
				}
			}
		}
	}
	return nil
}

// noQuietSide is a time metric judged on a result that carries no samples
// of one side: no time verdict, as Compare gives one whose side had no
// quiet run.
func noQuietSide(old stats.Result, m analysis.Metric, s MetricSamples, opt gate.Options) stats.Result {
	r := stats.Result{Name: old.Name, Unit: m.Unit, Direction: old.Direction, SampleUnit: old.SampleUnit,
		Verdict: stats.Inconclusive, Gate: gate.Gates(opt)[m.Name]}
	var sides []string
	if len(s.Baseline) == 0 {
		r.NeedBaseRuns = 1
		sides = append(sides, "baseline")
	}
	if len(s.Candidate) == 0 {
		r.NeedRuns = 1
		sides = append(sides, "candidate")
	}
	r.Reason = fmt.Sprintf("no time verdict: no quiet %s run (every one was disturbed); rerun when the machine is quiet, or on a runner of its own (perf.yaml host: sets how busy a host may be)", strings.Join(sides, " or "))
	return r
}

// fileDigest is the sha256 of a file's bytes, hex.
func fileDigest(path string) (string, error) {
	b, err := safefile.ReadFile(path, maxResult)
	if err != nil {
		return "", err
	}
	return digest(b), nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
