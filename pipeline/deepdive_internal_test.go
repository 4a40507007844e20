package pipeline

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// Without an ncu that can profile, a deep_dive says why it was skipped:
// nothing is faked.
func TestDeepDiveNoteSkipped(t *testing.T) {
	note := deepDiveNote(context.Background(), filepath.Join(t.TempDir(), "no-ncu"))
	if !strings.HasPrefix(note, "deep-dive skipped: ") {
		t.Errorf("deepDiveNote without ncu = %q", note)
	}
}
