package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
)

// TestActionOnInconclusive: a baseline of one run judges nothing
// (inconclusive); on-inconclusive decides the check run's conclusion and
// whether the step fails (exit 3), neutral by default.
func TestActionOnInconclusive(t *testing.T) {
	f := newActionFixture(t)
	nw4 := fixtures.Path(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	dir := t.TempDir()
	one := filepath.Join(dir, "one.db")
	var o, e bytes.Buffer
	if code := gpugate(context.Background(), []string{"run", "-config", fakeJobConfig(t, dir, nw4), "-db", one, "-out", filepath.Join(dir, "rec"), "-record-baseline"}, &o, &e); code != 0 {
		t.Fatalf("record: exit %d %s", code, e.String())
	}
	for _, c := range []struct {
		mode, conclusion string
		exit             int
	}{{"", "neutral", 0}, {"neutral", "neutral", 0}, {"fail", "failure", 3}, {"pass", "success", 0}} {
		m, _, _ := f.env(t, 5, f.passCfg, nil, "GPUGATE_BASELINE_DB", one, "GPUGATE_ON_INCONCLUSIVE", c.mode, "GPUGATE_COMMENT", "never")
		before := len(f.gh.Checks)
		err, stdout, _ := runEnv(m)
		if code := exitCode(err); code != c.exit {
			t.Errorf("on-inconclusive %q: exit %d (%v), want %d\n%s", c.mode, code, err, c.exit, stdout)
		}
		if len(f.gh.Checks) != before+1 || f.gh.Checks[before]["conclusion"] != c.conclusion {
			t.Errorf("on-inconclusive %q: check runs %v, want one with conclusion %s", c.mode, f.gh.Checks[before:], c.conclusion)
		}
	}
	m, _, _ := f.env(t, 5, f.passCfg, nil, "GPUGATE_ON_INCONCLUSIVE", "maybe")
	if err, _, _ := runEnv(m); err == nil || exitCode(err) != 2 {
		t.Errorf("on-inconclusive maybe: %v, want an input error", err)
	}
}
