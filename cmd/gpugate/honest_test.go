package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// honestReport is what the honest command reads of a JSON report (gpugate
// run, ab or compare -format json).
type honestReport struct {
	Verdict string         `json:"verdict"`
	Noise   string         `json:"noise"`
	Metrics []honestMetric `json:"metrics"`
}

type honestMetric struct {
	Name         string      `json:"name"`
	Direction    string      `json:"direction"`
	Verdict      string      `json:"verdict"`
	Gate         bool        `json:"gate"`
	DeltaPct     *float64    `json:"delta_pct"`
	CIPct        [2]*float64 `json:"ci_pct"`
	AllowancePct float64     `json:"allowance_pct"`
	Reason       string      `json:"reason"`
}

// textRow is a metric's row of the text report:
//
//	*step_time   101 ms   151 ms   +47.4% [+2.2, +112.5]   ±15%  regression (p=0.045 n=3+1)
var textRow = regexp.MustCompile(`^(\*?)([a-z0-9_]+)\s.*\s([+-]?[0-9.]+)% \[([^,\]]+), ([^\]]+)\]\s+±([0-9.]+)%.*\s(regression|improvement|pass|inconclusive) \(`)

// textReport reads the verdict and the metric rows of a text report (gpugate
// run or compare, -format text). Direction is not in the text: lower is
// better is assumed, as for every time metric.
func textReport(t string) (honestReport, error) {
	var rep honestReport
	for _, line := range strings.Split(t, "\n") {
		if v, ok := strings.CutPrefix(line, "gpugate: "); ok && rep.Verdict == "" {
			if w, _, ok := strings.Cut(v, " "); ok && strings.ToUpper(w) == w {
				rep.Verdict = strings.ToLower(w)
			}
		}
		if n, ok := strings.CutPrefix(line, "noise: "); ok {
			rep.Noise = n
		}
		// The explanation under the table: "  step_time inconclusive: why".
		if name, why, ok := strings.Cut(strings.TrimPrefix(line, "  "), " inconclusive: "); ok && strings.HasPrefix(line, "  ") && !strings.Contains(name, " ") {
			for i := range rep.Metrics {
				if rep.Metrics[i].Name == name && rep.Metrics[i].Reason == "" {
					rep.Metrics[i].Reason = why
				}
			}
		}
		m := textRow.FindStringSubmatch(strings.NewReplacer("−", "-", "∞", "Inf").Replace(line))
		if m == nil {
			continue
		}
		num := func(s string) *float64 {
			v, err := strconv.ParseFloat(strings.TrimPrefix(s, "+"), 64)
			if err != nil {
				return nil // ±Inf: unbounded, as JSON's null
			}
			return &v
		}
		r := honestMetric{Name: m[2], Direction: "lower", Verdict: m[7], Gate: m[1] == "*", DeltaPct: num(m[3]), CIPct: [2]*float64{num(m[4]), num(m[5])}}
		r.AllowancePct, _ = strconv.ParseFloat(m[6], 64)
		rep.Metrics = append(rep.Metrics, r)
	}
	if rep.Verdict == "" || len(rep.Metrics) == 0 {
		return rep, fmt.Errorf("neither a JSON report nor a text report with a verdict and metric rows")
	}
	return rep, nil
}

func pctOr(p *float64, inf float64) float64 {
	if p == nil {
		return inf
	}
	return *p
}

// honest is the testscript command
//
//	honest same FILE
//	honest slower METRIC FILE
//
// for tests whose outcome rests on timing noise (STYLE.md §8). They accept
// exactly the honest outcomes, and log the numbers that show why: the same
// code is pass or inconclusive, never a regression, and an inconclusive
// gate metric's interval reaches past its allowance (else it would have
// passed), unless the metric has no time verdict because every run of a
// side ran on a busy host (docs/verdicts.md §5c); a slowdown of METRIC is
// a regression; or inconclusive with an interval that includes the true
// change, which the test asserts is beyond the allowance, so an interval
// whose high end reaches past the allowance (however low its low end: a
// baseline that spreads CV 55% honestly gives +107.7% [−70.4, +1357.1],
// issue 37; a check may not demand an interval narrower than the
// baseline's spread allows); or "no time verdict" with its reason (every
// run of a side on a busy host); never a pass, never an interval that
// excludes every change beyond the allowance.
func honest(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: honest same FILE | honest slower METRIC FILE")
	}
	data, err := os.ReadFile(ts.MkAbs(args[len(args)-1]))
	ts.Check(err)
	logs, err := honestCheck(data, args[:len(args)-1])
	for _, l := range logs {
		ts.Logf("%s", l)
	}
	if err != nil {
		ts.Fatalf("%s: %v", args[len(args)-1], err)
	}
}

// honestCheck is honest's judgement of a JSON report: what to log, and
// an error when the outcome is not an honest one. how is ["same"] or
// ["slower", METRIC].
func honestCheck(data []byte, how []string) (logs []string, err error) {
	metric := ""
	switch {
	case len(how) == 1 && how[0] == "same":
	case len(how) == 2 && how[0] == "slower":
		metric = how[1]
	default:
		return nil, fmt.Errorf("usage: honest same FILE | honest slower METRIC FILE")
	}
	var rep honestReport
	if t := strings.TrimSpace(string(data)); strings.HasPrefix(t, "{") {
		if err := json.Unmarshal(data, &rep); err != nil {
			return nil, fmt.Errorf("not a JSON report: %v", err)
		}
	} else if rep, err = textReport(t); err != nil {
		return nil, err
	}
	// On the worse-is-positive scale: the change and its interval.
	worse := func(i int) (d, lo, hi float64) {
		m := rep.Metrics[i]
		d, lo, hi = pctOr(m.DeltaPct, math.NaN()), pctOr(m.CIPct[0], math.Inf(-1)), pctOr(m.CIPct[1], math.Inf(1))
		if m.Direction == "higher" {
			d, lo, hi = -d, -hi, -lo
		}
		return d, lo, hi
	}
	line := func(i int) string {
		m := rep.Metrics[i]
		d, lo, hi := worse(i)
		return fmt.Sprintf("%s %s: %+.1f%% [%+.1f, %+.1f] worse, allowance %g%%", m.Name, m.Verdict, d, lo, hi, m.AllowancePct)
	}
	logs = append(logs, fmt.Sprintf("honest %s: verdict %s; %s", how[0], rep.Verdict, rep.Noise))
	found := false
	for i, m := range rep.Metrics {
		if m.Gate || m.Name == metric {
			logs = append(logs, "  "+line(i))
		}
		_, lo, hi := worse(i)
		switch {
		case metric == "" && m.Gate && m.Verdict == "regression":
			return logs, fmt.Errorf("the same code, yet %s", line(i))
		case metric == "" && m.Gate && m.Verdict == "inconclusive" && hi <= m.AllowancePct && lo >= -m.AllowancePct && !strings.HasPrefix(m.Reason, "no time verdict: "):
			// (A time metric whose every run on a side ran on a busy
			// host has no verdict whatever its interval: docs/verdicts.md
			// §5c. That is honest.)
			return logs, fmt.Errorf("inconclusive, yet the interval lies within the allowance: %s (%s)", line(i), m.Reason)
		case m.Name == metric:
			found = true
			switch {
			case m.Verdict == "regression":
			case m.Verdict == "inconclusive" && strings.HasPrefix(m.Reason, "no time verdict: "):
				logs = append(logs, fmt.Sprintf("  inconclusive, honestly: %s", m.Reason))
			case m.Verdict == "inconclusive" && hi > m.AllowancePct:
				logs = append(logs, fmt.Sprintf("  inconclusive, honestly: the interval reaches past the ±%g%% allowance (high end %+.1f%%), so it includes the slowdown: %s", m.AllowancePct, hi, m.Reason))
			default:
				return logs, fmt.Errorf("a slowdown of %s, yet %s: want regression, inconclusive with an interval reaching past the allowance (that includes the true change), or no time verdict", metric, line(i))
			}
		}
	}
	switch {
	case metric != "" && !found:
		return logs, fmt.Errorf("no metric %s", metric)
	case metric == "" && rep.Verdict != "pass" && rep.Verdict != "inconclusive":
		return logs, fmt.Errorf("the same code, yet the verdict is %q: want pass or inconclusive", rep.Verdict)
	case metric != "" && rep.Verdict != "regression" && rep.Verdict != "inconclusive":
		return logs, fmt.Errorf("a slowdown, yet the verdict is %q: want regression or inconclusive", rep.Verdict)
	}
	return logs, nil
}

func TestHonestCheck(t *testing.T) {
	rep := func(verdict string, metrics ...string) []byte {
		return []byte(`{"verdict": "` + verdict + `", "noise": "n", "metrics": [` + strings.Join(metrics, ",") + `]}`)
	}
	m := func(name, dir, verdict string, gate bool, d, lo, hi string) string {
		return fmt.Sprintf(`{"name": %q, "direction": %q, "verdict": %q, "gate": %v, "delta_pct": %s, "ci_pct": [%s, %s], "allowance_pct": 15, "reason": "r"}`, name, dir, verdict, gate, d, lo, hi)
	}
	for _, c := range []struct {
		name string
		how  []string
		data []byte
		want string // "" when honest
	}{
		{"same: pass", []string{"same"}, rep("pass", m("step_time", "lower", "pass", true, "1", "-5", "7")), ""},
		{"same: inconclusive, wide", []string{"same"}, rep("inconclusive", m("step_time", "lower", "inconclusive", true, "6", "-40", "80")), ""},
		{"same: inconclusive, unbounded", []string{"same"}, rep("inconclusive", m("step_time", "lower", "inconclusive", true, "6", "null", "null")), ""},
		{"same: a reported regression that does not gate", []string{"same"}, rep("pass", m("gpu_idle", "lower", "regression", false, "40", "20", "60")), ""},
		{"same: regression", []string{"same"}, rep("regression", m("step_time", "lower", "regression", true, "40", "20", "60")), "the same code, yet step_time regression"},
		{"same: inconclusive within the allowance", []string{"same"}, rep("inconclusive", m("step_time", "lower", "inconclusive", true, "1", "-5", "7")), "interval lies within the allowance"},
		{"same: no-baseline", []string{"same"}, rep("no-baseline"), `the verdict is "no-baseline"`},
		{"same: no time verdict on a busy host", []string{"same"}, rep("inconclusive", strings.Replace(m("step_time", "lower", "inconclusive", true, "1", "-5", "7"), `"reason": "r"`, `"reason": "no time verdict: every candidate run was disturbed (run 1: the host was busy)"`, 1)), ""},
		{"slower: regression", []string{"slower", "step_time"}, rep("regression", m("step_time", "lower", "regression", true, "40", "20", "60")), ""},
		{"slower: inconclusive above 0", []string{"slower", "step_time"}, rep("inconclusive", m("step_time", "lower", "inconclusive", true, "30", "2", "70")), ""},
		{"slower: inconclusive across 0", []string{"slower", "step_time"}, rep("inconclusive", m("step_time", "lower", "inconclusive", true, "30", "-2", "70")), ""},
		// issue 37's run_demo_nsys: five baseline runs spread CV 55%.
		{"slower: inconclusive, as wide as the baseline's spread", []string{"slower", "step_time"}, rep("inconclusive", m("step_time", "lower", "inconclusive", true, "107.7", "-70.4", "1357.1")), ""},
		{"slower: inconclusive, interval short of the allowance", []string{"slower", "step_time"}, rep("inconclusive", m("step_time", "lower", "inconclusive", true, "8", "2", "14")), "want regression, inconclusive with an interval reaching past the allowance"},
		{"slower: inconclusive, interval all better", []string{"slower", "step_time"}, rep("inconclusive", m("step_time", "lower", "inconclusive", true, "-30", "-70", "-2")), "want regression, inconclusive with an interval reaching past the allowance"},
		{"slower: no time verdict on a busy host", []string{"slower", "step_time"}, rep("inconclusive", strings.Replace(m("step_time", "lower", "inconclusive", true, "8", "2", "14"), `"reason": "r"`, `"reason": "no time verdict: every candidate run was disturbed (run 1: the host was busy)"`, 1)), ""},
		{"slower: pass", []string{"slower", "step_time"}, rep("pass", m("step_time", "lower", "pass", true, "3", "-2", "9")), "want regression, inconclusive"},
		{"slower, higher is better: worse", []string{"slower", "throughput"}, rep("inconclusive", m("throughput", "higher", "inconclusive", false, "-30", "-70", "-2")), ""},
		{"slower, higher is better: across 0", []string{"slower", "throughput"}, rep("inconclusive", m("throughput", "higher", "inconclusive", false, "-30", "-70", "2")), ""},
		{"slower, higher is better: interval all better", []string{"slower", "throughput"}, rep("inconclusive", m("throughput", "higher", "inconclusive", false, "30", "2", "70")), "interval reaching past the allowance"},
		{"slower: no such metric", []string{"slower", "kernels"}, rep("regression", m("step_time", "lower", "regression", true, "40", "20", "60")), "no metric kernels"},
	} {
		_, err := honestCheck(c.data, c.how)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want honest", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// The text report, as gpugate compare writes it, read by honest: a
// slowdown that regressed, and one run against one (no spread: unbounded).
func TestHonestCheckText(t *testing.T) {
	dir := t.TempDir()
	var base []string
	for i, ms := range []float64{100, 110, 95} {
		base = append(base, "-base", analyzeDoc(t, dir, fmt.Sprintf("b%d.json", i), 1e9, flat(20, ms), []int{0}))
	}
	head := analyzeDoc(t, dir, "h.json", 1e9, flat(20, 150), []int{0})
	_, out, _ := run(t, append(append([]string{"compare", "-runs"}, base...), "-head", head)...)
	if _, err := honestCheck([]byte(out), []string{"slower", "step_time"}); err != nil {
		t.Errorf("slower: %v\n%s", err, out)
	}
	if _, err := honestCheck([]byte(out), []string{"same"}); err == nil || !strings.Contains(err.Error(), "the same code, yet step_time regression: +47.7% [+2.1, +113.6] worse") {
		t.Errorf("same: %v, want the regression named with its numbers\n%s", err, out)
	}
	_, out, _ = run(t, "compare", base[1], head)
	logs, err := honestCheck([]byte(out), []string{"same"})
	if err != nil || !strings.Contains(strings.Join(logs, "\n"), "step_time inconclusive: +49.9% [-Inf, +Inf] worse, allowance 15%") {
		t.Errorf("1 vs 1: %v %q\n%s", err, logs, out)
	}
	// The reason under the table is read: a time metric without a verdict
	// because the host was busy is honest, whatever its interval.
	busy := "gpugate: INCONCLUSIVE — 0 regression(s)\n*step_time                 10.00 ms       10.82 ms     +8.2% [-15.0, +37.7]    ±50%  inconclusive (p=0.500 n=5+1)\n" +
		"  step_time inconclusive: no time verdict: every candidate run was disturbed (run 1: the host was busy: other processes used 1.9 of 2 CPUs during the run)\n"
	if _, err := honestCheck([]byte(busy), []string{"same"}); err != nil {
		t.Errorf("no time verdict on a busy host: %v", err)
	}
	if _, err := honestCheck([]byte(strings.Replace(busy, "no time verdict: every candidate run was disturbed", "Δ +8.2% within", 1)), []string{"same"}); err == nil {
		t.Error("inconclusive within the allowance for another reason: honest, want dishonest")
	}
	if _, err := honestCheck([]byte("gpugate: nothing here\n"), []string{"same"}); err == nil {
		t.Errorf("a text without metric rows was read")
	}
}
