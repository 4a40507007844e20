package load

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/trace"
)

// TestLimits checks that Options' limits reach the Kineto reader and that
// the error names the flag and the field that raise them.
func TestLimits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	doc := `{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "` + strings.Repeat("k", 100) + `", "ts": 1, "dur": 1}]}`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := File(context.Background(), path, Options{}); err != nil {
		t.Fatalf("default limits: %v", err)
	}
	for _, c := range []struct {
		opt         Options
		flag, field string
	}{
		{Options{MaxString: 50}, "max-string", "load.Options.MaxString"},
		{Options{MaxEvents: 0, MaxBytes: 20}, "max-trace-bytes", "load.Options.MaxBytes"},
	} {
		_, err := File(context.Background(), path, c.opt)
		var le *trace.LimitError
		if !errors.As(err, &le) || le.Flag != c.flag || le.Field != c.field {
			t.Errorf("File(%+v) = %v, want a limit error for -%s (%s)", c.opt, err, c.flag, c.field)
		}
	}
}
