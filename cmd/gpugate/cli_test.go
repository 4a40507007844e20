package main

import (
	"flag"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
)

func TestInterleave(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("format", "text", "")
	fs.Bool("runs", false, "")
	for _, c := range []struct{ in, want []string }{
		{[]string{"t.json", "-format", "json"}, []string{"-format", "json", "--", "t.json"}},
		{[]string{"-format=json", "a", "-runs", "b"}, []string{"-format=json", "-runs", "--", "a", "b"}},
		// A bool flag does not take the next argument.
		{[]string{"-runs", "a"}, []string{"-runs", "--", "a"}},
		// "--" ends the flags; "-" is standard input, an argument.
		{[]string{"a", "--", "-format", "b"}, []string{"--", "a", "-format", "b"}},
		{[]string{"-", "--format", "json"}, []string{"--format", "json", "--", "-"}},
		// An unknown flag stays for Parse to report.
		{[]string{"a", "-nope", "b"}, []string{"-nope", "--", "a", "b"}},
	} {
		if got := interleave(fs, c.in); !slices.Equal(got, c.want) {
			t.Errorf("interleave(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Flags after arguments, on every command that takes arguments; an unknown
// -format is an error with exit 2 everywhere.
func TestFlagsAfterArgumentsAndFormats(t *testing.T) {
	trace := fixtures.Path(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	code, out, errOut := run(t, "analyze", trace, "-format", "json")
	if code != 0 || !strings.HasPrefix(strings.TrimSpace(out), "{") {
		t.Errorf("analyze TRACE -format json: exit %d, stdout %.80q, stderr %q", code, out, errOut)
	}
	// The trace against itself, one run a side: inconclusive (exit 3),
	// with the flags given after the arguments taken.
	code, out, _ = run(t, "compare", trace, trace, "-format", "json", "-allowance", "cpu_wait=40%")
	if code != 3 || !strings.Contains(out, `"verdict": "inconclusive"`) || !strings.Contains(out, `"allowance_pct": 40`) {
		t.Errorf("compare A B -format json: exit %d, %.80q", code, out)
	}
	db := filepath.Join(t.TempDir(), "b.db")
	if code, _, e := run(t, "baseline", "record", trace, "-workload", "w", "-db", db); code != 0 {
		t.Errorf("baseline record TRACE -workload w -db: exit %d %s", code, e)
	}
	for _, args := range [][]string{
		{"analyze", "-format", "xml", trace},
		{"analyze", trace, "-format", "markdown"},
		{"compare", "-format", "html", trace, trace},
		{"run", "-format", "yaml"},
		{"baseline", "list", "-db", db, "-format", "csv"},
	} {
		code, out, errOut := run(t, args...)
		if code != 2 || out != "" || !strings.Contains(errOut, "-format") || !strings.Contains(errOut, "want ") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 naming -format", args, code, out, errOut)
		}
	}
}

func TestAnalyzeStdin(t *testing.T) {
	trace := fixtures.Path(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	f, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	defer func(r any) { stdin = os.Stdin }(nil)
	stdin = f
	code, out, errOut := run(t, "analyze", "-", "-format", "json")
	_, want, _ := run(t, "analyze", "-format", "json", trace)
	if code != 0 {
		t.Fatalf("analyze -: exit %d %s", code, errOut)
	}
	// The same analysis; only the path differs.
	if got := strings.ReplaceAll(out, `"stdin"`, `"`+trace+`"`); got != want {
		t.Errorf("analyze - differs from analyze FILE:\n%.400s\nwant\n%.400s", out, want)
	}
	stdin = strings.NewReader("not a trace")
	if code, _, e := run(t, "analyze", "-"); code != 2 || !strings.Contains(e, "stdin") {
		t.Errorf("bad stdin: exit %d, %q", code, e)
	}
	if code, _, e := run(t, "analyze", "-", "-"); code != 2 || !strings.Contains(e, "twice") {
		t.Errorf("stdin twice: exit %d, %q", code, e)
	}
}

// config check rejects what run would, with positions.
func TestConfigCheckRunnable(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "perf.yaml")
	os.WriteFile(cfg, []byte(`version: 1
workloads:
  - name: train
    command: python3 train.py
  - name: timing
    command: python3 train.py
    profiler: none
allowances:
  step_tme: 10%
gate:
  - step_time
  - gpu_utilisation
  - step_time
`), 0o644)
	code, _, errOut := run(t, "config", "check", cfg)
	for _, want := range []string{
		cfg + `:9:3: allowances: unknown metric "step_tme"`,
		cfg + `:12:5: gate: unknown metric "gpu_utilisation"`,
		cfg + `:13:5: gate: metric "step_time" listed twice`,
		cfg + `:5:5: workload "timing": profiler none needs step_log`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("config check: missing %q in\n%s", want, errOut)
		}
	}
	if code != 2 {
		t.Errorf("config check: exit %d, want 2", code)
	}
	if code, _, e := run(t, "run", "-config", cfg, "-workload", "train"); code != 2 || !strings.Contains(e, "step_tme") {
		t.Errorf("run: exit %d %q", code, e)
	}
	os.WriteFile(cfg, []byte("version: 1\nworkloads:\n  - command: x\ngate: [step_time, cpu_wait]\n"), 0o644)
	if code, out, e := run(t, "config", "check", cfg); code != 0 {
		t.Errorf("good gate list: exit %d %s %s", code, out, e)
	}
}

func TestBuildVersion(t *testing.T) {
	for _, c := range []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"}}, "v0.3.1"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}}, "devel 0123456789+dirty"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
	} {
		if got := buildVersion(&c.bi); got != c.want {
			t.Errorf("buildVersion(%+v) = %q, want %q", c.bi, got, c.want)
		}
	}
}
