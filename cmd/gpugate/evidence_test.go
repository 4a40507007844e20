package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/action"
	"github.com/gpugate/gpugate/internal/fixtures"
)

// Issue 23 item 2: the job under test runs as gpugate's user and knows
// where the evidence goes. What it plants there — a report.md symlink to
// a victim file, symlinks and files among the traces, files in its own
// run folder, the artifacts folder itself replaced by a symlink — neither
// redirects a write nor reaches the folder that is uploaded.
func TestEvidenceTheJobCannotTouch(t *testing.T) {
	f := newActionFixture(t)
	trace := fixtures.Path(t, "kineto/kineto-tbplugin-resnet50-v100-legacy/num_workers_4/worker0.1623213129365.pt.trace.json.gz")
	dir := t.TempDir()
	secret, victim, elsewhere := filepath.Join(dir, "secret"), filepath.Join(dir, "victim"), filepath.Join(dir, "elsewhere")
	os.WriteFile(secret, []byte("TOP-SECRET-42"), 0o600)
	os.WriteFile(victim, []byte("VICTIM-ORIGINAL"), 0o600)
	os.Mkdir(elsewhere, 0o700)

	for _, tc := range []struct {
		name  string
		plant func(art, parent string) string // shell commands the job runs
	}{
		{"planted in the artifacts folder", func(art, parent string) string {
			return `mkdir -p ` + art + `/traces ` + art + `/logs; ln -s ` + victim + ` ` + art + `/report.md; ln -s ` + victim + ` ` + art + `/gpugate-result.json; ` +
				`ln -s ` + secret + ` ` + art + `/traces/secret.nsys-rep; echo TOP-SECRET-42 > ` + art + `/planted.txt; ln -s ` + elsewhere + ` ` + art + `/logs/run1`
		}},
		{"the artifacts folder's parent a symlink", func(art, parent string) string {
			return `rm -rf ` + parent + `; ln -s ` + elsewhere + ` ` + parent
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, outFile, _ := f.env(t, 5, f.passCfg, nil)
			_, art := action.Folders(m.get, "resnet")
			cfg := filepath.Join(t.TempDir(), "perf.yaml")
			// The job copies its trace, then plants in its own run folder
			// (a symlink and files with trace and log names) and around
			// the evidence folder.
			os.WriteFile(cfg, []byte(`version: 1
workloads:
  - name: resnet
    command: 'echo training; t="$(echo "$GPUGATE_TRACE_OUT" | sed "s/{rank}/0/")"; cp `+trace+` "$t"; d="$(dirname "$t")"; ln -s `+secret+` "$d/evil.nsys-rep"; echo TOP-SECRET-42 > "$d/planted.json"; mkdir -p "$d/sub"; echo TOP-SECRET-42 > "$d/sub/job.log"; `+tc.plant(art, filepath.Dir(art))+`'
    profiler: torch
    # The job replays a capture: there is no training loop to time, so
    # step time comes from the trace (docs/verdicts.md §5d).
    profiler_timing: true
allowances:
  cpu_wait: 40%
`), 0o644)
			m["GPUGATE_CONFIG"] = cfg
			if err, _, stderr := runEnv(m); exitCode(err) != 0 {
				t.Fatalf("exit %d (%v)\n%s", exitCode(err), err, stderr)
			}
			if b, _ := os.ReadFile(victim); string(b) != "VICTIM-ORIGINAL" {
				t.Errorf("the victim file was written: %q", b)
			}
			if es, _ := os.ReadDir(elsewhere); len(es) != 0 {
				t.Errorf("gpugate wrote where the job's symlink pointed: %v", es)
			}
			outs, _ := os.ReadFile(outFile)
			if !strings.Contains(string(outs), "artifacts-path<<") || !strings.Contains(string(outs), art+"\n") {
				t.Fatalf("artifacts-path is not %s:\n%s", art, outs)
			}
			for _, p := range []string{filepath.Dir(art), art} {
				fi, err := os.Lstat(p)
				if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
					t.Errorf("%s: %v, %v; want a real folder with mode 0700", p, fi.Mode(), err)
				}
			}
			var files []string
			filepath.WalkDir(art, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					t.Error(err)
					return nil
				}
				rel, _ := filepath.Rel(art, p)
				if d.Type()&fs.ModeSymlink != 0 || (!d.IsDir() && !d.Type().IsRegular()) {
					t.Errorf("the upload holds %s, not a regular file (%v)", rel, d.Type())
				}
				if d.Type().IsRegular() {
					files = append(files, rel)
					if b, _ := os.ReadFile(p); strings.Contains(string(b), "TOP-SECRET-42") {
						t.Errorf("the upload's %s holds the planted secret", rel)
					}
				}
				return nil
			})
			got := strings.Join(files, " ")
			for _, want := range []string{"report.md", "report.json", "gpugate-result.json", "logs/job.log", "logs/analysis.json", "traces/trace-0.json.gz"} {
				if !strings.Contains(got, want) {
					t.Errorf("the upload lacks %s: %s", want, got)
				}
			}
			for _, planted := range []string{"planted", "evil", "secret", "sub/"} {
				if strings.Contains(got, planted) {
					t.Errorf("a planted file reached the upload: %s", got)
				}
			}
		})
	}
}
