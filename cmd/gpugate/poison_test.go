package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/internal/pgtest"
)

// Issue 23: an export with a forged id of 2^63-1, and one with a step
// time of 1e308, are both refused (exit 2, nothing imported), and the
// PostgreSQL store still records and gates. A run that holds 1e308
// anyway (written before imports were checked) is reported and skipped:
// the next gate passes against the readable runs.
func TestImportCannotPoisonPostgres(t *testing.T) {
	url := pgtest.DB(t)
	// The URL holds a password: from a file, never on argv.
	urlFile := filepath.Join(t.TempDir(), "store-url")
	os.WriteFile(urlFile, []byte(url+"\n"), 0o600)
	trace := fixtures.Path(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	dir := t.TempDir()
	cfg := fakeJobConfig(t, dir, trace)
	t.Setenv("GPUGATE_BRANCH", "main")
	ctx := context.Background()
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := gpugate(ctx, args, &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, _, stderr := run("run", "-config", cfg, "-db-file", urlFile, "-record-baseline", "-out", filepath.Join(dir, "r1")); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, stderr)
	}
	_, export, _ := run("baseline", "export", "-db-file", urlFile)
	stepTime := regexp.MustCompile(`"step_time_ns":[0-9]+`)
	if !strings.Contains(export, `"id":1,`) || !stepTime.MatchString(export) {
		t.Fatalf("export lacks the id or a step time: %.300s", export)
	}
	for name, hostile := range map[string]string{
		"id 2^63-1":          strings.Replace(export, `"id":1,`, `"id":9223372036854775807,`, 1),
		"step_time_ns 1e308": stepTime.ReplaceAllLiteralString(export, `"step_time_ns":1e308`),
	} {
		f := filepath.Join(dir, "hostile.json")
		os.WriteFile(f, []byte(hostile), 0o600)
		code, stdout, stderr := run("baseline", "import", "-db-file", urlFile, f)
		if code != 2 || !strings.Contains(stderr, "nothing imported") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("import %s: exit %d, want 2 and one line 'nothing imported'\n%s%s", name, code, stdout, stderr)
		}
	}
	if code, stdout, _ := run("baseline", "list", "-db-file", urlFile); code != 0 || strings.Count(stdout, "resnet") != 1 {
		t.Fatalf("after the refused imports: want the 1 recorded run\n%s", stdout)
	}
	if code, _, stderr := run("run", "-config", cfg, "-db-file", urlFile, "-record-baseline", "-out", filepath.Join(dir, "r2")); code != 0 {
		t.Fatalf("record after the refused imports: exit %d\n%s", code, stderr)
	}

	// A run written before the fix: a copy of run 1, newer, with 1e308.
	db := pgtest.Super(t, pgtest.Name(url))
	if _, err := db.Exec(`INSERT INTO gpugate.runs (workload, branch, commit_sha, created_at, kind, profiler, fingerprint_hash, fingerprint, gpugate_version, analysis, conditions)
		SELECT workload, branch, 'poisoned', created_at + 3600, kind, profiler, fingerprint_hash, fingerprint, gpugate_version,
			regexp_replace(analysis, '"step_time_ns":[0-9]+', '"step_time_ns":1e308'), conditions FROM gpugate.runs WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run("run", "-config", cfg, "-db-file", urlFile, "-out", filepath.Join(dir, "r3"))
	if code != 0 || !strings.Contains(stdout, "PASS") || !strings.Contains(stderr, "cannot be read, skipped") ||
		!strings.Contains(stderr, "commit poisoned") || !strings.Contains(stderr, "gpugate: baseline: main, 2 run(s)") {
		t.Errorf("gate with an unreadable stored run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, _, stderr := run("run", "-config", cfg, "-db-file", urlFile, "-record-baseline", "-out", filepath.Join(dir, "r4")); code != 0 {
		t.Errorf("record with an unreadable stored run: exit %d\n%s", code, stderr)
	}
}
