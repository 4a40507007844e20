package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/config"
	"github.com/gpugate/gpugate/internal/fixtures"
)

func TestStoreTarget(t *testing.T) {
	c := &config.Config{Baseline: config.Baseline{DB: defaultDB}}
	custom := &config.Config{Baseline: config.Baseline{DB: "perf.db"}}
	for _, tc := range []struct {
		flag, env, actions, toolCache string
		c                             *config.Config
		want                          string
	}{
		{want: defaultDB, c: c},
		{flag: "x.db", env: "y.db", c: custom, want: "x.db"},
		{env: "postgres://u@h/db", c: custom, want: "postgres://u@h/db"},
		{c: custom, actions: "true", want: "perf.db"},
		{c: c, actions: "true", toolCache: "/opt/tc", want: "/opt/tc/gpugate/baseline.db"},
		{c: nil, actions: "true", toolCache: "/opt/tc", want: "/opt/tc/gpugate/baseline.db"},
	} {
		t.Setenv("GPUGATE_DB", tc.env)
		t.Setenv("GITHUB_ACTIONS", tc.actions)
		t.Setenv("RUNNER_TOOL_CACHE", tc.toolCache)
		if got := storeTarget(tc.flag, tc.c); got != tc.want {
			t.Errorf("storeTarget(%q, env %q, actions %q) = %q, want %q", tc.flag, tc.env, tc.actions, got, tc.want)
		}
	}
}

// The cache key names the workload and the fingerprint hash that run
// stores with its runs, and is one name=value per line.
func TestCacheKey(t *testing.T) {
	trace := fixtures.Path(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	dir := t.TempDir()
	cfg := fakeJobConfig(t, dir, trace)
	db := filepath.Join(dir, "b.db")
	t.Setenv("GPUGATE_BRANCH", "main")
	t.Setenv("GITHUB_RUN_ID", "77\n::error::x")
	t.Setenv("GITHUB_RUN_ATTEMPT", "2")
	ctx := context.Background()
	var out, errb bytes.Buffer
	if code := gpugate(ctx, []string{"baseline", "cache-key", "-config", cfg, "-db", db}, &out, &errb); code != 0 {
		t.Fatalf("cache-key: exit %d: %s", code, errb.String())
	}
	m := regexp.MustCompile(`^path=(.*)\nkey=(gpugate-baseline-v1-resnet-([0-9a-f]{16})-)77-error-x-2\nrestore-key=(.*)\n$`).FindStringSubmatch(out.String())
	if m == nil || m[1] != db || m[4] != m[2] {
		t.Fatalf("cache-key printed %q", out.String())
	}
	out.Reset()
	if code := gpugate(ctx, []string{"run", "-config", cfg, "-db", db, "-record-baseline", "-out", filepath.Join(dir, "r")}, &out, &errb); code != 0 {
		t.Fatalf("run: %s", errb.String())
	}
	out.Reset()
	gpugate(ctx, []string{"baseline", "list", "-db", db, "-format", "json"}, &out, &errb)
	var rows []struct {
		FP string `json:"fingerprint_hash"`
	}
	json.Unmarshal(out.Bytes(), &rows)
	if len(rows) != 1 || rows[0].FP != m[3] {
		t.Errorf("stored fingerprint %+v, cache key's %s", rows, m[3])
	}
	if strings.Count(m[0], "\n") != 3 {
		t.Errorf("not three lines: %q", m[0])
	}
}
