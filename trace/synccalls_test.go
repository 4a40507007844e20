package trace_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/trace"
)

// TestSyncCallsDocumented keeps docs/metrics.md's list of sync calls
// ("Sync calls") identical to trace.SyncCalls, and checks that SyncAPI
// counts each of them, with and without suffixes.
func TestSyncCallsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "<!-- sync-calls -->")
	sec, _, ok2 := strings.Cut(sec, "<!-- /sync-calls -->")
	if !ok || !ok2 {
		t.Fatal("docs/metrics.md has no <!-- sync-calls --> list")
	}
	var listed []string
	for _, m := range regexp.MustCompile("`([A-Za-z_0-9]+)`").FindAllStringSubmatch(sec, -1) {
		listed = append(listed, m[1])
	}
	code := slices.Clone(trace.SyncCalls)
	slices.Sort(code)
	slices.Sort(listed)
	if !slices.Equal(code, listed) {
		t.Errorf("docs/metrics.md lists %v\nthe code counts %v", listed, code)
	}
	for _, n := range trace.SyncCalls {
		for _, v := range []string{n, n + "_v3020", n + "_ptsz", n + "_v2_ptsz"} {
			if !trace.SyncAPI(v) {
				t.Errorf("SyncAPI(%q) = false", v)
			}
		}
	}
	for name, want := range map[string]bool{
		"cudaMemcpy": true, "cudaMemcpy2D_v3020": true, "cuMemcpyDtoH_v2": true, "hipMemcpy": true,
		"cudaMemcpyAsync": false, "cuMemcpyHtoDAsync_v2": false, "cudaStreamQuery": false, "cudaEventRecord": false,
	} {
		if trace.SyncAPI(name) != want {
			t.Errorf("SyncAPI(%q) = %v, want %v", name, !want, want)
		}
	}
}
