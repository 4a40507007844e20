package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/gpugate/gpugate/internal/fixtures"
)

// Issue 26: hostile exports are refused by gpugate baseline import with
// exit 2, one clear line, and nothing imported: a negative step time,
// 2^63-1 in every step, a workload name that is not a slug, a duplicate
// "workload" key (encoding/json keeps the last), cpus 1.5 where the
// fingerprint holds an integer, a median step box naming name 2^40, a
// median step 10^18 ns long.
func TestHostileImports(t *testing.T) {
	trace := fixtures.Path(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	dir := t.TempDir()
	cfg := fakeJobConfig(t, dir, trace)
	t.Setenv("GPUGATE_BRANCH", "main")
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := gpugate(context.Background(), args, &out, &errb)
		return code, out.String(), errb.String()
	}
	db := filepath.Join(dir, "b.db")
	if code, _, stderr := run("run", "-config", cfg, "-db", db, "-record-baseline", "-out", filepath.Join(dir, "r1")); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, stderr)
	}
	_, export, _ := run("baseline", "export", "-db", db)
	re := func(s string) *regexp.Regexp { return regexp.MustCompile(s) }
	stepTime, cpus, workload := re(`"step_time_ns":[0-9]+`), re(`"cpus":[0-9]+`), re(`"workload":"resnet"`)
	boxName, span := re(`("median_step":\{.*?"n":)[0-9]+`), re(`"span_ns":[0-9]+`)
	for _, r := range []*regexp.Regexp{stepTime, cpus, workload, boxName, span} {
		if !r.MatchString(export) {
			t.Fatalf("the export has no match for %s: %.300s", r, export)
		}
	}
	first := func(r *regexp.Regexp, repl string) string {
		done := false
		return r.ReplaceAllStringFunc(export, func(m string) string {
			if done {
				return m
			}
			done = true
			return r.ReplaceAllString(m, repl)
		})
	}
	// A genuine export imports.
	fresh := filepath.Join(dir, "fresh.db")
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(export), 0o600)
	if code, stdout, stderr := run("baseline", "import", "-db", fresh, good); code != 0 || !strings.Contains(stdout, "imported 1 of 1") {
		t.Fatalf("genuine import: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, c := range []struct{ name, json, want string }{
		{"negative step_time_ns", first(stepTime, `"step_time_ns":-5`), "step_time_ns: -5 is not a duration"},
		{"2^63-1 in every step", stepTime.ReplaceAllString(export, `"step_time_ns":9223372036854775807`), "step_time_ns: 9223372036854775807 is not a duration"},
		{"workload a b/../../c", workload.ReplaceAllString(export, `"workload":"a b/../../c"`), `workload name "a b/../../c"`},
		{"duplicate workload key", workload.ReplaceAllString(export, `"workload":"x y","workload":"resnet"`), `the key "workload" twice`},
		{"cpus 1.5", cpus.ReplaceAllString(export, `"cpus":1.5`), "fingerprint: json: cannot unmarshal number 1.5"},
		{"median_step name index 2^40", boxName.ReplaceAllString(export, `${1}1099511627776`), "a box names name 1099511627776"},
		{"span_ns 1e18", span.ReplaceAllString(export, `"span_ns":1000000000000000000`), "span_ns: 1000000000000000000 is not a duration"},
		// A timing run (docs/verdicts.md §5d) whose step time is not one:
		// step time would be judged on it.
		{"timing run of -5 ms", strings.Replace(export, `"analysis":{`, `"analysis":{"timing_runs":[{"step_ms":[10,-5],"ranks":1,"clock":"host"}],`, 1), "timing_runs[0]: step 2: -5 ms is not a step time"},
	} {
		f := filepath.Join(dir, "hostile.json")
		os.WriteFile(f, []byte(c.json), 0o600)
		code, stdout, stderr := run("baseline", "import", "-db", fresh, f)
		if code != 2 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "nothing imported") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("import %s: exit %d, want 2 and one line naming %q and 'nothing imported'\n%s%s", c.name, code, c.want, stdout, stderr)
		}
	}
	if code, stdout, _ := run("baseline", "list", "-db", fresh); code != 0 || strings.Count(stdout, "resnet") != 1 {
		t.Errorf("after the refused imports: want the 1 run imported first\n%s", stdout)
	}
}

// Issue 26: gpugate baseline import holds one run at a time, not the
// export. An export of 600 runs (a recorded run under 600 commits) is
// imported with the heap in use staying below a quarter of the file,
// where reading the export whole needs more than the file. The heap is
// sampled with the collector at GOGC=10, so that what is in use follows
// what is live. No timing is asserted.
func TestImportMemoryBounded(t *testing.T) {
	trace := fixtures.Path(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	dir := t.TempDir()
	cfg := fakeJobConfig(t, dir, trace)
	t.Setenv("GPUGATE_BRANCH", "main")
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := gpugate(context.Background(), args, &out, &errb)
		return code, out.String(), errb.String()
	}
	db := filepath.Join(dir, "b.db")
	if code, _, stderr := run("run", "-config", cfg, "-db", db, "-record-baseline", "-out", filepath.Join(dir, "r1")); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, stderr)
	}
	_, export, _ := run("baseline", "export", "-db", db)
	i, j := strings.Index(export, `"runs":[`)+len(`"runs":[`), strings.LastIndex(export, "]")
	one := export[i:j]
	const runs = 600
	var b strings.Builder
	b.WriteString(export[:i])
	for k := range runs {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strings.Replace(one, `"commit":"`, fmt.Sprintf(`"commit":"c%d-`, k), 1))
	}
	b.WriteString(export[j:])
	f := filepath.Join(dir, "big.json")
	os.WriteFile(f, []byte(b.String()), 0o600)
	size := b.Len()
	b.Reset()
	export, one = "", ""

	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
		}
	}()
	code, stdout, stderr := run("baseline", "import", "-db", filepath.Join(dir, "fresh.db"), f)
	close(done)
	<-sampled
	if code != 0 || !strings.Contains(stdout, fmt.Sprintf("imported %d of %d", runs, runs)) {
		t.Fatalf("import: exit %d\n%s%s", code, stdout, stderr)
	}
	used := peak - base
	t.Logf("export of %d runs, %.1f MB (a run %.0f kB): heap in use at the peak %.1f MB above the start", runs, float64(size)/1e6, float64(size)/runs/1e3, float64(used)/1e6)
	if used > uint64(size)/4 {
		t.Errorf("importing a %.1f MB export of %d runs used %.1f MB of heap at its peak, more than a quarter of the file: not one run at a time", float64(size)/1e6, runs, float64(used)/1e6)
	}
}
