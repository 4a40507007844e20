package baseline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/baseline"
)

// bigExport is an export of runs runs of steps steps each, built from
// doc's first step.
func bigExport(t *testing.T, runs, steps int) []byte {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(doc(t), &d); err != nil {
		t.Fatal(err)
	}
	p := d["profiles"].([]any)[0].(map[string]any)
	step, _ := json.Marshal(p["steps"].([]any)[0])
	p["steps"] = []any{}
	head, _ := json.Marshal(d)
	i := bytes.Index(head, []byte(`"steps":[]`)) + len(`"steps":[`)
	var b bytes.Buffer
	b.WriteString(`{"gpugate_baseline_export":1,"runs":[`)
	for r := range runs {
		if r > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"workload":"w","branch":"main","commit":"c%d","created_at":%d,"kind":"baseline","profiler":"nsys","fingerprint_hash":"abc","fingerprint":{"gpu":"A100"},"gpugate_version":"test","analysis":`,
			r+1, r, 1700000000+r)
		b.Write(head[:i])
		for k := range steps {
			if k > 0 {
				b.WriteByte(',')
			}
			b.Write(step)
		}
		b.Write(head[i:])
		b.WriteByte('}')
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// A run past MaxRunBytes or MaxSteps is refused while it is read, before
// it is held whole.
func TestImportCaps(t *testing.T) {
	s := openSQLite(t, filepath.Join(t.TempDir(), "b.db"))
	b := bigExport(t, 1, baseline.MaxSteps+1)
	_, _, err := s.ImportFrom(context.Background(), bytes.NewReader(b), int64(len(b)), nil)
	if err == nil || !(strings.Contains(err.Error(), "more than 100000 elements") || strings.Contains(err.Error(), "larger than 64 MiB")) {
		t.Errorf("a run of %d steps: %v, want a refusal", baseline.MaxSteps+1, err)
	}
}

func openSQLite(t *testing.T, path string) *baseline.Store {
	t.Helper()
	s, err := baseline.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
