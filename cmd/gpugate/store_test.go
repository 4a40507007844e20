package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/gpugate/gpugate/action"
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
		flag, env, actions, home string
		c                        *config.Config
		workload                 string
		want                     string
	}{
		{want: defaultDB, c: c},
		{flag: "x.db", env: "y.db", c: custom, want: "x.db"},
		{env: "postgres://u@h/db", c: custom, want: "postgres://u@h/db"},
		{c: custom, want: "perf.db"},
		// Under Actions a relative path is in the workspace that
		// actions/checkout cleans: the store is the Action's, per workload.
		{c: custom, actions: "true", home: "/home/r", workload: "w", want: "/home/r/.cache/gpugate/w/baseline.db"},
		{c: c, actions: "true", home: "/home/r", workload: "w", want: "/home/r/.cache/gpugate/w/baseline.db"},
	} {
		t.Setenv("GPUGATE_DB", tc.env)
		t.Setenv("GITHUB_ACTIONS", tc.actions)
		t.Setenv("HOME", tc.home)
		t.Setenv("XDG_CACHE_HOME", "")
		t.Setenv("GPUGATE_STORE_DIR", "")
		got, err := storeTarget(tc.flag, tc.c, tc.workload)
		if err != nil || got != tc.want {
			t.Errorf("storeTarget(%q, env %q, actions %q) = %q, %v, want %q", tc.flag, tc.env, tc.actions, got, err, tc.want)
		}
	}
	// A command without a workload under Actions cannot guess which store.
	t.Setenv("GITHUB_ACTIONS", "true")
	if _, err := storeTarget("", nil, ""); err == nil || !strings.Contains(err.Error(), "pass -workload or -db") {
		t.Errorf("no workload under Actions: %v", err)
	}
}

// The CLI under GitHub Actions and the Action find one store, not two.
func TestStoreCLIAndActionAgree(t *testing.T) {
	env := map[string]string{"GITHUB_ACTIONS": "true", "HOME": "/home/r", "RUNNER_TEMP": "/rt", "RUNNER_TOOL_CACHE": "/opt/tc", "XDG_CACHE_HOME": "", "GPUGATE_DB": "", "GPUGATE_STORE_DIR": ""}
	for k, v := range env {
		t.Setenv(k, v)
	}
	for _, db := range []string{defaultDB, "perf.db", "/abs/b.db", "postgres://h/db"} {
		c := &config.Config{Baseline: config.Baseline{DB: db}}
		w := &config.Workload{Name: "train-gpt"}
		cli, err := storeTarget("", c, w.Name)
		act := action.StoreFor(func(k string) string { return env[k] }, "", c, w)
		if err != nil || cli != act {
			t.Errorf("perf.yaml db %q: CLI %q (%v), Action %q", db, cli, err, act)
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

	// Under GitLab CI: one key, the same on every pipeline (a GitLab
	// cache entry is replaced under its key), holding no "/" (which
	// GitLab refuses in cache:key), with the same fingerprint.
	t.Setenv("GITLAB_CI", "true")
	t.Setenv("CI_PIPELINE_ID", "991")
	out.Reset()
	if code := gpugate(ctx, []string{"baseline", "cache-key", "-config", cfg, "-db", db}, &out, &errb); code != 0 {
		t.Fatalf("cache-key on GitLab: exit %d: %s", code, errb.String())
	}
	want := "path=" + db + "\nkey=gpugate-baseline-v1-resnet-" + m[3] + "\n"
	if out.String() != want {
		t.Errorf("cache-key on GitLab printed %q, want %q", out.String(), want)
	}
}
