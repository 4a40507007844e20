package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/internal/pgtest"
)

// gpugate run -db postgres://… records a baseline and gates the next run
// against it; every baseline command works on it; the password is never
// printed; a server that goes away gives exit 2 with one line, and the
// store keeps no partial run.
func TestRunPostgres(t *testing.T) {
	url := pgtest.DB(t)
	trace := fixtures.Path(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	dir := t.TempDir()
	cfg := fakeJobConfig(t, dir, trace)
	t.Setenv("GPUGATE_BRANCH", "main")
	ctx := context.Background()
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := gpugate(ctx, args, &out, &errb)
		if strings.Contains(out.String()+errb.String(), "S3cret") {
			t.Errorf("gpugate %s printed the password", args[0])
		}
		return code, out.String(), errb.String()
	}
	// The URL holds a password: never on the command line (every process
	// on the machine reads /proc/PID/cmdline), but from a file or
	// $GPUGATE_DB.
	urlFile := filepath.Join(dir, "store-url")
	os.WriteFile(urlFile, []byte(url+"\n"), 0o600)
	if code, _, stderr := run("baseline", "list", "-db", url); code != 2 || !strings.Contains(stderr, "-db holds a password") || !strings.Contains(stderr, "-db-file") {
		t.Errorf("-db with a password: exit %d\n%s", code, stderr)
	}
	t.Setenv("GPUGATE_DB", url)
	if _, _, stderr := run("baseline", "list"); !strings.Contains(stderr, "no gpugate store in this database yet") {
		t.Errorf("$GPUGATE_DB was not the store: %s", stderr)
	}
	os.Unsetenv("GPUGATE_DB")
	start := time.Now()
	if code, _, stderr := run("run", "-config", cfg, "-db-file", urlFile, "-record-baseline", "-out", filepath.Join(dir, "r1")); code != 0 || !strings.Contains(stderr, "as baseline of branch main in postgres://gpugate_test:***@") {
		t.Fatalf("record: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := run("run", "-config", cfg, "-db-file", urlFile, "-out", filepath.Join(dir, "r2"))
	// One baseline run shows no run-to-run spread: inconclusive (exit 3),
	// saying to record more; the store's part is what is tested here.
	if code != 3 || !strings.Contains(stderr, "gpugate: baseline: main, 1 run(s)") || !strings.Contains(stdout, "record ≥ 3 baseline runs") {
		t.Fatalf("gate: exit %d\n%s\n%s", code, stdout, stderr)
	}
	t.Logf("record + gate against PostgreSQL: %v", time.Since(start).Round(time.Millisecond))
	if code, stdout, _ := run("baseline", "list", "-db-file", urlFile); code != 0 || strings.Count(stdout, "resnet") != 2 {
		t.Errorf("baseline list: exit %d\n%s", code, stdout)
	}
	if code, stdout, stderr := run("baseline", "show", "-db-file", urlFile, "-workload", "resnet", "-branch", "main"); code != 0 || !strings.Contains(stdout, "1 runs") {
		t.Errorf("baseline show: exit %d\n%s%s", code, stdout, stderr)
	}
	// Export from PostgreSQL, import into SQLite, export again: the same bytes.
	_, pgExport, _ := run("baseline", "export", "-db-file", urlFile)
	exp := filepath.Join(dir, "export.json")
	os.WriteFile(exp, []byte(pgExport), 0o644)
	lite := filepath.Join(dir, "lite.db")
	if code, stdout, stderr := run("baseline", "import", "-db", lite, exp); code != 0 || !strings.Contains(stdout, "imported 2 of 2") {
		t.Fatalf("import: %d %s %s", code, stdout, stderr)
	}
	if _, liteExport, _ := run("baseline", "export", "-db", lite); liteExport != pgExport || len(pgExport) < 1000 {
		t.Errorf("export PostgreSQL → import SQLite → export differs (%d vs %d bytes)", len(pgExport), len(liteExport))
	}
	if code, stdout, _ := run("baseline", "prune", "-db-file", urlFile, "-keep", "1"); code != 0 || !strings.Contains(stdout, "pruned 0") {
		t.Errorf("prune: exit %d %s", code, stdout)
	}

	// The server stops while the job runs: exit 2, one line, nothing stored.
	slow := filepath.Join(dir, "slow.yaml")
	b, _ := os.ReadFile(cfg)
	os.WriteFile(slow, bytes.Replace(b, []byte("echo training;"), []byte("echo training; sleep 4;"), 1), 0o644)
	done := make(chan [3]any)
	go func() {
		code, stdout, stderr := run("run", "-config", slow, "-db-file", urlFile, "-out", filepath.Join(dir, "r3"))
		done <- [3]any{code, stdout, stderr}
	}()
	time.Sleep(2 * time.Second)
	if err := pgtest.StopServer(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	code, stderr = r[0].(int), r[2].(string)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if code != 2 || !strings.HasPrefix(last, "gpugate: ") || !strings.Contains(last, "postgres://gpugate_test:***@") {
		t.Errorf("server gone: exit %d, last line %q", code, last)
	}
	t.Logf("server gone: %s", last)
	if err := pgtest.StartServer(); err != nil {
		t.Fatal(err)
	}
	if _, stdout, _ := run("baseline", "list", "-db-file", urlFile); strings.Count(stdout, "resnet") != 2 {
		t.Errorf("after the server came back: want the 2 runs of before, got\n%s", stdout)
	}
	// baseline record and refresh write to PostgreSQL too.
	if code, stdout, stderr := run("baseline", "record", "-config", cfg, "-workload", "resnet", "-db-file", urlFile, trace); code != 0 || !strings.Contains(stdout, "recorded run") {
		t.Errorf("baseline record: exit %d %s %s", code, stdout, stderr)
	}
	if code, _, stderr := run("baseline", "refresh", "-config", cfg, "-runs", "2", "-db-file", urlFile, "-out", filepath.Join(dir, "r4")); code != 0 {
		t.Errorf("baseline refresh: exit %d %s", code, stderr)
	}
	// The recorded trace names its V100 and this machine has none: the
	// recorded run has a fingerprint of its own, and show, which stays in
	// one fingerprint, leaves it out and says so.
	if code, stdout, _ := run("baseline", "show", "-db-file", urlFile, "-workload", "resnet"); code != 0 || !strings.Contains(stdout, "3 runs") || !strings.Contains(stdout, "1 baseline run(s) of other fingerprints left out") {
		t.Errorf("baseline show after record and refresh: exit %d\n%s", code, stdout)
	}
}
