package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/gate"
	"github.com/gpugate/gpugate/stats"
)

// TestHeadlineGatedOnly: "PASS — 1 regression(s)" when a metric that does
// not gate moved read as a contradiction (issue 19); the headline counts
// gated metrics, and names no other (issue 28: "not gated: sync_time
// +1238%" in the headline): those are in their own section.
func TestHeadlineGatedOnly(t *testing.T) {
	r := &gate.Report{Verdict: stats.Pass, Alpha: 0.05, SampleUnit: stats.UnitRun, Metrics: []stats.Result{
		{Name: "step_time", Unit: "ms", Gate: true, Verdict: stats.Pass, DeltaPct: 1.2},
		{Name: "data_wait", Unit: "ms", Gate: false, Verdict: stats.Regression, DeltaPct: 32},
	}, Findings: []gate.Finding{{Finding: analysis.Finding{ID: "data-loader-bound", Summary: "s", Evidence: "e", Suggestion: "x"}, New: true}}}
	var md, txt bytes.Buffer
	WriteCompareMarkdown(&md, r)
	WriteCompareText(&txt, r)
	for _, c := range []struct{ what, got, want string }{
		{"markdown", md.String(), "0 regression(s) · 0 improvement(s) · 0 inconclusive among gated metrics"},
		{"markdown", md.String(), "#### Not gated: what else moved"},
		{"text", txt.String(), "gpugate: PASS — 0 regression(s), 0 improvement(s), 0 inconclusive among gated metrics"},
		{"text", txt.String(), "not gated (explains the verdict, does not decide it):\n data_wait"},
	} {
		if !strings.Contains(c.got, c.want) {
			t.Errorf("%s lacks %q:\n%s", c.what, c.want, c.got)
		}
	}
	for what, out := range map[string]string{"markdown": md.String(), "text": txt.String()} {
		out = strings.ToLower(out)
		head, rest, _ := strings.Cut(out, "not gated")
		head = strings.SplitN(head, "\n\n", 2)[0]
		if strings.Contains(head, "data") || !strings.Contains(rest, "data") {
			t.Errorf("%s: the ungated data_wait is in the headline, or not in its own section:\n%s", what, out)
		}
		// The gated table holds step_time and not data_wait.
		gated, _, _ := strings.Cut(out, "not gated")
		if strings.Contains(gated, "data_wait") || strings.Contains(gated, "data\\_wait") || !strings.Contains(gated, "step_time") {
			t.Errorf("%s: gated table wrong:\n%s", what, gated)
		}
	}
	// A pass names no cause, even with a new finding.
	if strings.Contains(md.String(), "**Why:**") || strings.Contains(txt.String(), "why:") {
		t.Errorf("a pass headlines a why:\n%s\n%s", md.String(), txt.String())
	}
	// A regression names the gate's cause, not the first finding.
	r.Verdict, r.Metrics[0].Verdict, r.Cause = stats.Regression, stats.Regression, "data-loader-bound"
	r.Findings = append([]gate.Finding{{Finding: analysis.Finding{ID: "memory-growth", Summary: "rss"}, New: true}}, r.Findings...)
	md.Reset()
	txt.Reset()
	WriteCompareMarkdown(&md, r)
	WriteCompareText(&txt, r)
	if !strings.Contains(md.String(), "**Why:** `data-loader-bound`") || !strings.Contains(txt.String(), "why: data-loader-bound") {
		t.Errorf("regression headline does not name the cause:\n%s\n%s", md.String(), txt.String())
	}
	if !strings.Contains(md.String(), "1 regression(s)") {
		t.Errorf("gated regression not counted:\n%s", md.String())
	}
}

func TestOverheadText(t *testing.T) {
	for _, c := range []struct {
		o    gate.Overhead
		want string
	}{
		{gate.Overhead{ProfiledMs: 93, UnprofiledMs: 100, Ratio: 0.93, Passes: 1, WithinNoise: true, ProfiledP10: 80, ProfiledP90: 110, UnprofiledP10: 85, UnprofiledP90: 120}, "within noise (median step 93.00 ms profiled, 100.00 ms unprofiled; the steps' p10–p90 overlap"},
		{gate.Overhead{ProfiledMs: 110, UnprofiledMs: 100, Ratio: 1.1, Passes: 1}, "×1.10 (median step 110.00 ms profiled, 100.00 ms unprofiled; one profiled pass)"},
		{gate.Overhead{ProfiledMs: 110, UnprofiledMs: 100, Ratio: 1.1, Passes: 3, Lo: 1.05, Hi: 1.2}, "×1.10 [×1.05, ×1.20 over 3 profiled passes]"},
	} {
		if got := OverheadText(&c.o); !strings.HasPrefix(got, c.want) {
			t.Errorf("OverheadText(%+v) = %q, want prefix %q", c.o, got, c.want)
		}
	}
}

// TestFindingsContext: a finding as strong in the baseline is context,
// listed below the causes and never among them (issue 28: the same
// host-sync of AdamW's .item() on every run, baseline included, read as a
// cause); the ranks line names the rank whose work changed.
func TestFindingsContext(t *testing.T) {
	pct := 100.0
	zero := 0.0
	r := &gate.Report{Verdict: stats.Regression, Alpha: 0.05, SampleUnit: stats.UnitRun, Cause: "more-work",
		Metrics: []stats.Result{{Name: "step_time", Unit: "ms", Gate: true, Verdict: stats.Regression, DeltaPct: 100}},
		Findings: []gate.Finding{
			{Finding: analysis.Finding{ID: "more-work", Summary: "more FLOPs", Evidence: "e", Suggestion: "x", Share: 0.5}, New: true, AccountsMs: 20},
			{Finding: analysis.Finding{ID: "host-sync", Summary: "2 blocking host sync(s) per step", Evidence: "adamw", Suggestion: "y", Share: 0.01}, BaselineShare: 0.01},
		},
		Ranks: []gate.RankChange{{Rank: 1, Known: true, DeltaMs: 19, FLOPsDeltaPct: &zero}, {Rank: 0, Known: true, DeltaMs: 20, FLOPsDeltaPct: &pct}}}
	var md, txt bytes.Buffer
	WriteCompareMarkdown(&md, r)
	WriteCompareText(&txt, r)
	m := md.String()
	causes, ctx, ok := strings.Cut(m, "#### Context: as in the baseline")
	if !ok || !strings.Contains(causes, "`more-work` (") || strings.Contains(causes, "`host-sync` (") || !strings.Contains(ctx, "`host-sync` (") {
		t.Errorf("markdown: host-sync is not context below the causes:\n%s", m)
	}
	if !strings.Contains(m, "**Ranks** (each rank's own mean step; the job's step is its slowest rank's): rank 0 slowed by 20.0 ms (FLOPs per step +100%), rank 1 by 19.0 ms (FLOPs per step +0%).") {
		t.Errorf("markdown: no ranks line:\n%s", m)
	}
	tc, tctx, ok := strings.Cut(txt.String(), "context (as in the baseline")
	if !ok || !strings.Contains(tc, "more-work (") || strings.Contains(tc, "host-sync (") || !strings.Contains(tctx, "host-sync (") {
		t.Errorf("text: host-sync is not context:\n%s", txt.String())
	}
}
