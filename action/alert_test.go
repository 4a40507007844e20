package action

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/baseline"
	"github.com/gpugate/gpugate/dashboard"
	"github.com/gpugate/gpugate/internal/escape"
	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/internal/ghfake"
	"github.com/gpugate/gpugate/report"
	"github.com/gpugate/gpugate/stats"
	"github.com/gpugate/gpugate/trace/kineto"
)

func analyzeDoc(t *testing.T, rel string) []byte {
	t.Helper()
	p, err := kineto.ReadFile(fixtures.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := report.NewAnalysis([]*analysis.Result{analysis.Analyze(p, analysis.Options{})}).WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Refresh mode's alert against the GitHub stand-in: the nightly history
// of the V100 ResNet-50 job (5 runs with num_workers=4, then 4 with
// num_workers=0) opens one issue per shifted metric, step time among
// them, with the commit range, the shift and its interval and a Mermaid
// chart; the next night's refresh updates the same issues and opens
// none; the webhook gets the shift as Slack-compatible JSON.
func TestAlertShifts(t *testing.T) {
	const resnet = "kineto/kineto-tbplugin-resnet50-v100-legacy/"
	w4, w0 := analyzeDoc(t, resnet+"num_workers_4/worker0.1623213129365.pt.trace.json.gz"), analyzeDoc(t, resnet+"num_workers_0/worker0.1623143089861.pt.trace.json.gz")
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "perf.db")
	s, err := baseline.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-30 * 24 * time.Hour)
	record := func(i int, an []byte) {
		if _, err := s.Record(ctx, baseline.Run{Workload: "resnet", Branch: "main", Commit: strconv.Itoa(i+1) + "abcdef0", Created: start.Add(time.Duration(i) * 24 * time.Hour),
			Kind: "baseline", Profiler: "torch", FingerprintHash: "v100", Fingerprint: []byte(`{}`), Version: "test", Analysis: an}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 9 {
		an := w4
		if i >= 5 {
			an = w0
		}
		record(i, an)
	}
	gh := ghfake.New()
	defer gh.Close()
	gh.Repo = "o/r"
	var hooks []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("webhook content type %q", r.Header.Get("Content-Type"))
		}
		hooks = append(hooks, string(b))
	}))
	defer hook.Close()
	env := map[string]string{"GITHUB_API_URL": gh.URL, "GITHUB_REPOSITORY": "o/r"}
	getenv := func(k string) string { return env[k] }
	var out bytes.Buffer
	gha := New(getenv, &out)
	in := inputs{alert: "issue", webhook: hook.URL, token: "t", bot: BotLogin}

	alertShifts(ctx, gha, getenv, in, db, "resnet")
	if len(gh.Issues) == 0 {
		t.Fatalf("no issue opened; log:\n%s", out.String())
	}
	var step *ghfake.Issue
	metrics := map[string]bool{}
	for _, is := range gh.Issues {
		if len(is.Labels) != 1 || is.Labels[0].Name != ShiftLabel || is.State != "open" {
			t.Errorf("issue %d: labels %v, state %s", is.Number, is.Labels, is.State)
		}
		if metrics[is.Title] {
			t.Errorf("two issues titled %q", is.Title)
		}
		metrics[is.Title] = true
		if strings.HasPrefix(is.Body, issueMarker("resnet", "step_time")) {
			step = is
		}
	}
	if step == nil {
		t.Fatalf("no step_time issue among %d", len(gh.Issues))
	}
	// The series are each run's mean step, as the gate takes a run: the
	// kept steps (end − start) of gpugate analyze's document average
	// 121.025 ms for num_workers=4 and 177.905 ms for num_workers=0
	// (Python over the document's steps), +47.0%.
	for _, want := range []string{"### gpugate: sustained shift in `step_time` of `resnet`", "moved at run #6 of 9", "(+47.0%)", "95% interval [+", "`5abcdef0`", "`6abcdef0`",
		"```mermaid\nxychart-beta", "line [121, 121, 121, 121, 121, 177.9, 177.9, 177.9, 177.9]"} {
		if !strings.Contains(step.Body, want) {
			t.Errorf("issue body lacks %q:\n%s", want, step.Body)
		}
	}
	n := len(gh.Issues)
	if len(hooks) != n {
		t.Errorf("%d webhook posts for %d shifts", len(hooks), n)
	}
	var payload struct{ Text string }
	if err := json.Unmarshal([]byte(hooks[0]), &payload); err != nil || !strings.Contains(payload.Text, "gpugate: sustained shift in") {
		t.Errorf("webhook payload %s (%v)", hooks[0], err)
	}
	t.Logf("night 1: %d issue(s): %v", n, metrics)

	// The next night: one more run with num_workers=0. Same issues, edited.
	record(9, w0)
	alertShifts(ctx, gha, getenv, in, db, "resnet")
	if len(gh.Issues) != n {
		t.Errorf("night 2: %d issues, want the %d of night 1 updated", len(gh.Issues), n)
	}
	if !strings.Contains(step.Body, "moved at run #6 of 10") {
		t.Errorf("night 2: the step_time issue was not updated:\n%s", step.Body)
	}
	if !strings.Contains(out.String(), "updated issue #") {
		t.Errorf("no notice of the update:\n%s", out.String())
	}
	s.Close()

	// alert: none and no webhook: nothing is read or sent.
	before := len(gh.Requests)
	alertShifts(ctx, gha, getenv, inputs{alert: "none"}, db, "resnet")
	if len(gh.Requests) != before {
		t.Errorf("alert none made %d requests", len(gh.Requests)-before)
	}
}

// A hostile workload name reaches the webhook as text that cannot mention
// anyone or form a link, and the issue as a code span.
func TestAlertEscaping(t *testing.T) {
	name := "<!channel> & <https://evil|click> `x`\n@org/team"
	sh := Shift{Workload: name, Metric: "step_time", Unit: "ms"}
	sh.Series = &dashboard.Series{Fingerprint: "fp", Branch: "main", Points: []*dashboard.Point{{Value: 1}, {Value: 1}, {Value: 1}, {Value: 2}, {Value: 2}, {Value: 2}}}
	sh.Mark = &dashboard.ChangeMark{Before: &dashboard.Run{Run: baseline.Run{ID: 1, Commit: "a<b>\n@x"}}, Run: &dashboard.Run{Run: baseline.Run{ID: 2, Commit: "c"}},
		Change: stats.Change{Index: 3, Before: 1, After: 2}}
	text := sh.webhookText()
	if strings.ContainsAny(text, "<>\n") || !strings.Contains(text, "&lt;!channel&gt; &amp;") {
		t.Errorf("webhook text %q", text)
	}
	body := sh.issueBody(issueMarker("x", "step_time"), "o/r")
	if strings.Contains(body, "\n@") || !strings.Contains(body, escape.CodeSpan(name)) || !strings.Contains(body, escape.CodeSpan("a<b>\n@x")) {
		t.Errorf("issue body:\n%s", body)
	}
}
