package nsys

import (
	"context"
	"database/sql"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/trace"
)

// postProcessed copies a real export to a temporary folder and runs the
// edits on the copy (the fixture itself stays read-only and out of the
// repository).
func postProcessed(t *testing.T, rel string, edits ...string) string {
	t.Helper()
	src, err := os.Open(fixtures.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(t.TempDir(), "post.sqlite")
	dst, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, e := range edits {
		if _, err := db.Exec(e); err != nil {
			t.Fatalf("%s: %v", e, err)
		}
	}
	return path
}

// TestPostProcessedExport: an export whose metadata table was dropped (a
// post-processed copy) but whose StringIds and CUPTI tables remain is read
// as the original is, with a warning that the version is unknown. Without
// the tables a profile is made of, or without StringIds, the error says
// exactly what is missing.
func TestPostProcessedExport(t *testing.T) {
	const rel = "nsys-sqlite/nsysai-mfu-2gpu-h100/mfu_2gpu_before.sqlite"
	orig, err := ReadFile(context.Background(), fixtures.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	post := postProcessed(t, rel, `DROP TABLE META_DATA_EXPORT`)
	got, err := ReadFile(context.Background(), post)
	if err != nil {
		t.Fatalf("export without META_DATA_EXPORT: %v", err)
	}
	if len(got) != len(orig) {
		t.Fatalf("%d profiles, want %d", len(got), len(orig))
	}
	count := func(p *trace.Profile) [4]int {
		var n [4]int
		for _, op := range p.GPU {
			n[op.Kind]++
		}
		n[0] = len(p.API)
		return n
	}
	for i := range got {
		if count(got[i]) != count(orig[i]) || len(got[i].Ranges) != len(orig[i].Ranges) {
			t.Errorf("profile %d: API/kernels/memcpy/memset %v, %d ranges; the original export gives %v, %d",
				i, count(got[i]), len(got[i].Ranges), count(orig[i]), len(orig[i].Ranges))
		}
		if !strings.Contains(got[i].Variant, "version unknown") {
			t.Errorf("profile %d: variant %q does not say the version is unknown", i, got[i].Variant)
		}
		if !slices.ContainsFunc(got[i].Warnings, func(w string) bool {
			return strings.Contains(w, "no META_DATA_EXPORT or EXPORT_META_DATA table") && strings.Contains(w, "CUPTI_ACTIVITY_KIND_KERNEL")
		}) {
			t.Errorf("profile %d: warnings %q do not say that version detection fell back", i, got[i].Warnings)
		}
	}
	if strings.Contains(orig[0].Variant, "unknown") {
		t.Errorf("the original export's variant %q", orig[0].Variant)
	}

	for _, c := range []struct {
		edits []string
		want  string
	}{
		{[]string{`DROP TABLE META_DATA_EXPORT`, `DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL`, `DROP TABLE CUPTI_ACTIVITY_KIND_MEMCPY`,
			`DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET`, `DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME`, `DROP TABLE IF EXISTS NVTX_EVENTS`},
			"has StringIds but no export metadata table (META_DATA_EXPORT or EXPORT_META_DATA) and none of the tables a profile is made of"},
		{[]string{`DROP TABLE StringIds`}, "has the nsys export metadata table META_DATA_EXPORT but no StringIds table"},
		{[]string{`DROP TABLE StringIds`, `DROP TABLE META_DATA_EXPORT`}, "neither an export metadata table (META_DATA_EXPORT or EXPORT_META_DATA) nor the StringIds table"},
	} {
		path := postProcessed(t, rel, c.edits...)
		_, err := ReadFile(context.Background(), path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), path) {
			t.Errorf("after %q: error %v, want one naming the file and saying %q", c.edits, err, c.want)
		}
	}
}
