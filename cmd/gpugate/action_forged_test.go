package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpugate/gpugate/action"
	"github.com/gpugate/gpugate/analysis"
	"github.com/gpugate/gpugate/gate"
)

// Issue 26: nothing the job can write decides a verdict. A genuine
// regression's gpugate-result.json, forged the ways a job (or a process
// it left behind) could forge it — every gate flag false, allowances of
// 5000%, the regressed metrics deleted, repeat: auto's max_runs 100 (α
// 0.0002), every metric deleted — makes the fork flow's comment job post
// the regression its samples show, or refuse the artifact in the pull
// request's comment with exit 2; never a pass, never "no baseline". The
// same for the post step in pr mode, which judges the file again with
// perf.yaml's settings (and refuses it outright when it is not the file
// the run step wrote).
func TestForgedResultNeverPasses(t *testing.T) {
	f := newActionFixture(t)
	m, _, _ := f.env(t, 12, f.regressCfg, nil, "GPUGATE_COMMENT", "never", "GPUGATE_FAIL_ON_REGRESSION", "false")
	if err, _, stderr := runEnv(m); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	_, art := action.Folders(m.get, "resnet")
	genuine, err := os.ReadFile(filepath.Join(art, "gpugate-result.json"))
	if err != nil {
		t.Fatal(err)
	}
	head := strings.Repeat("a", 40)
	f.gh.AddPR(12, "fork/train", "feature", head)

	metrics := func(d map[string]any) []any { return d["report"].(map[string]any)["metrics"].([]any) }
	each := func(d map[string]any, edit func(m map[string]any)) {
		for _, x := range metrics(d) {
			edit(x.(map[string]any))
		}
	}
	var regressed []string
	var doc map[string]any
	json.Unmarshal(genuine, &doc)
	each(doc, func(m map[string]any) {
		if m["verdict"] == "regression" {
			regressed = append(regressed, m["name"].(string))
		}
	})
	if len(regressed) == 0 {
		t.Fatal("the genuine result shows no regression: the test proves nothing")
	}
	deleteMetrics := func(d map[string]any, names ...string) {
		r := d["report"].(map[string]any)
		var keep []any
		for _, x := range metrics(d) {
			if !contains(names, x.(map[string]any)["name"].(string)) {
				keep = append(keep, x)
			}
		}
		r["metrics"] = keep
		for _, n := range names {
			delete(d["samples"].(map[string]any), n)
		}
	}
	passAll := func(d map[string]any) {
		d["report"].(map[string]any)["verdict"] = "pass"
		each(d, func(m map[string]any) { m["verdict"] = "pass" })
	}
	// Issue 34. The time metrics, whose runs on a busy host have no verdict.
	var timeMetrics []string
	for name := range doc["samples"].(map[string]any) {
		if am, ok := analysis.MetricByName(name); ok && gate.IsTime(am) {
			timeMetrics = append(timeMetrics, name)
		}
	}
	if len(timeMetrics) == 0 {
		t.Fatal("the genuine result has no time metric: the test proves nothing")
	}
	t.Logf("regressed: %v; time metrics: %v", regressed, timeMetrics)
	eachTime := func(d map[string]any, edit func(s map[string]any)) {
		for _, n := range timeMetrics {
			edit(d["samples"].(map[string]any)[n].(map[string]any))
		}
	}
	forgeries := []struct {
		name  string
		forge func(d map[string]any)
		// busy: the honest answer may also be no verdict (inconclusive),
		// for a result whose baseline had no quiet run.
		busy bool
	}{
		// The result of a run whose every baseline run was on a busy host,
		// as the run step writes it (no time samples of the baseline:
		// gate.JudgedSamples), with its host_busy flags deleted and every
		// verdict set to pass.
		{"busy baseline, host_busy deleted", func(d map[string]any) {
			passAll(d)
			eachTime(d, func(s map[string]any) { s["baseline"] = []any{} })
			delete(d["report"].(map[string]any), "host_busy")
		}, true},
		// One candidate value of each time metric set to −1e7: refused, as
		// import and compare refuse a negative time.
		{"a candidate value of -1e7 per time metric", func(d map[string]any) {
			passAll(d)
			eachTime(d, func(s map[string]any) { s["candidate"].([]any)[0].([]any)[0] = -1e7 })
		}, false},
		{"gate=false", func(d map[string]any) { passAll(d); each(d, func(m map[string]any) { m["gate"] = false }) }, false},
		{"allowance_pct=5000", func(d map[string]any) { passAll(d); each(d, func(m map[string]any) { m["allowance_pct"] = 5000 }) }, false},
		{"regressed metrics deleted", func(d map[string]any) { passAll(d); deleteMetrics(d, regressed...) }, false},
		{"max_runs 100", func(d map[string]any) {
			passAll(d)
			r := d["report"].(map[string]any)
			r["alpha"] = 0.0002
			r["sampling"] = map[string]any{"unit": "run", "runs": 1, "max_runs": 100, "look_alpha": 0.0002}
		}, false},
		{"every metric deleted", func(d map[string]any) {
			r := d["report"].(map[string]any)
			r["verdict"] = "no-baseline"
			r["metrics"] = []any{}
			d["samples"] = map[string]any{}
		}, false},
		{"every metric deleted from the report only", func(d map[string]any) {
			r := d["report"].(map[string]any)
			r["verdict"] = "no-baseline"
			r["metrics"] = []any{}
		}, false},
		{"all at once", func(d map[string]any) {
			passAll(d)
			each(d, func(m map[string]any) { m["gate"], m["allowance_pct"] = false, 5000 })
			d["report"].(map[string]any)["alpha"] = 0.0002
			deleteMetrics(d, regressed[1:]...)
		}, false},
	}
	write := func(forge func(map[string]any)) string {
		var d map[string]any
		json.Unmarshal(genuine, &d)
		forge(d)
		b, _ := json.Marshal(d)
		p := filepath.Join(t.TempDir(), "gpugate-result.json")
		os.WriteFile(p, b, 0o644)
		return p
	}
	// verdictOf is what the comment on #12 says: regression, refused,
	// or what it wrongly says.
	verdictOf := func(body string) string {
		switch {
		case strings.Contains(body, "❌ **regression**"):
			return "regression"
		case strings.Contains(body, "result refused"):
			return "refused"
		case strings.Contains(body, "✅"):
			return "pass"
		case strings.Contains(strings.ToLower(body), "inconclusive"):
			return "inconclusive"
		}
		return "other: " + body[:min(len(body), 400)]
	}

	for _, c := range forgeries {
		t.Run("comment/"+c.name, func(t *testing.T) {
			dir := t.TempDir()
			event, sum := filepath.Join(dir, "event.json"), filepath.Join(dir, "summary")
			ev, _ := json.Marshal(map[string]any{"action": "completed", "workflow_run": map[string]any{"id": 991, "conclusion": "success", "event": "pull_request",
				"head_sha": head, "head_branch": "feature", "head_repository": map[string]any{"full_name": "fork/train"}}})
			os.WriteFile(event, ev, 0o644)
			os.WriteFile(sum, nil, 0o644)
			env := actionEnv{"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": sum, "GITHUB_EVENT_NAME": "workflow_run", "GITHUB_EVENT_PATH": event,
				"GITHUB_API_URL": f.gh.URL, "GITHUB_REPOSITORY": "acme/train", "GITHUB_SERVER_URL": "https://github.example",
				"GPUGATE_MODE": "comment", "GPUGATE_RESULT": write(c.forge), "GPUGATE_GITHUB_TOKEN": "token-abcdefghijkl",
				"GPUGATE_CONFIG": f.regressCfg}
			err, _, _ := runEnv(env)
			cs, _ := f.gh.Snapshot(12)
			if len(cs) != 1 {
				t.Fatalf("%d comments on #12 (%v), want the one comment, edited", len(cs), err)
			}
			got := verdictOf(cs[0].Body)
			switch {
			case got == "regression" && err == nil, got == "refused" && exitCode(err) == 2:
			case c.busy && got == "inconclusive":
				t.Logf("posted no time verdict (inconclusive), exit %d: the regressed metrics are all time metrics", exitCode(err))
			default:
				t.Errorf("posted %s with exit %d (%v); want the regression, or a refusal with exit 2", got, exitCode(err), err)
			}
		})
	}

	for _, c := range forgeries {
		t.Run("post/"+c.name, func(t *testing.T) {
			m, _, _ := f.env(t, 12, f.regressCfg, nil, "GPUGATE_PHASE", "post", "GPUGATE_RESULT", write(c.forge), "GPUGATE_WORKLOAD", "resnet")
			err, _, _ := runEnv(m)
			cs, _ := f.gh.Snapshot(12)
			got := verdictOf(cs[0].Body)
			switch {
			case got == "regression" && exitCode(err) == 1, got == "refused" && exitCode(err) == 2:
			case c.busy && got == "inconclusive":
				t.Logf("posted no time verdict (inconclusive), exit %d: the regressed metrics are all time metrics", exitCode(err))
			default:
				t.Errorf("post step: posted %s with exit %d (%v); want the regression (exit 1), or a refusal (exit 2)", got, exitCode(err), err)
			}
		})
	}
	// The post step with the digest the run step stated: any edit is
	// refused outright.
	m, _, _ = f.env(t, 12, f.regressCfg, nil, "GPUGATE_PHASE", "post", "GPUGATE_RESULT", write(func(map[string]any) {}), "GPUGATE_WORKLOAD", "resnet",
		"GPUGATE_RESULT_DIGEST", strings.Repeat("0", 64))
	if err, _, _ := runEnv(m); exitCode(err) != 2 || !strings.Contains(err.Error(), "not the file the run step wrote") {
		t.Errorf("edited result with the run step's digest: exit %d (%v), want 2", exitCode(err), err)
	}

	// Issue 34: perf.yaml replaced by the job, after the run step took its
	// digest, with a link to a file of secrets that is no YAML, or with a
	// FIFO. The post step refuses it with exit 2, at once, and neither its
	// error nor the comment quotes the secret. Before, the link was parsed
	// and the parse error posted, and the FIFO held the post step.
	cfgBytes, _ := os.ReadFile(f.regressCfg)
	sum := sha256.Sum256(cfgBytes)
	canary := fmt.Sprintf("canary-%d", time.Now().UnixNano())
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("workloads: [\n*:*:*:writer:"+canary+"\n"), 0o600)
	for _, plant := range []string{"link", "fifo"} {
		cfg := filepath.Join(t.TempDir(), "perf.yaml")
		if plant == "link" {
			os.Symlink(secret, cfg)
		} else if err := syscall.Mkfifo(cfg, 0o644); err != nil {
			t.Fatal(err)
		}
		m, _, _ = f.env(t, 12, cfg, nil, "GPUGATE_PHASE", "post", "GPUGATE_RESULT", write(func(map[string]any) {}), "GPUGATE_WORKLOAD", "resnet",
			"GPUGATE_CONFIG_DIGEST", hex.EncodeToString(sum[:]))
		done := make(chan struct{})
		var err error
		var stdout, stderr string
		go func() { err, stdout, stderr = runEnv(m); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("post step with perf.yaml a %s: still running after 20s", plant)
		}
		cs, _ := f.gh.Snapshot(12)
		if exitCode(err) != 2 {
			t.Errorf("post step with perf.yaml a %s: exit %d (%v), want 2", plant, exitCode(err), err)
		}
		if strings.Contains(fmt.Sprint(err)+stdout+stderr+cs[0].Body, canary) {
			t.Errorf("post step with perf.yaml a %s quotes the file it leads to:\n%v\n%s\n%s", plant, err, stderr, cs[0].Body)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
