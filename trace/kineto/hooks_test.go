package kineto

import (
	"slices"
	"strings"
	"testing"
)

// TestArgsHook checks the args extension point: a hook sees every member
// but the core ones, by name (escapes decoded), reads the values it wants,
// and the core members are still read.
func TestArgsHook(t *testing.T) {
	in := `{"External id": 7, "correlation": 42, "Input Dims": [[4096], []], "Total\u0020Allocated": 1024, "device": 3, "flops": 9}`
	p := newParser(newScanner(strings.NewReader(in)), "x", Limits{}.withDefaults())
	var keys []string
	var total int64
	hook := func(p *parser, key []byte) error {
		keys = append(keys, string(key))
		if string(key) == "Total Allocated" {
			var err error
			total, err = p.intValue()
			return err
		}
		return p.s.skipValue()
	}
	if err := p.args(hook); err != nil {
		t.Fatal(err)
	}
	if want := []string{"External id", "Input Dims", "Total Allocated", "flops"}; !slices.Equal(keys, want) {
		t.Errorf("hook saw %q, want %q", keys, want)
	}
	if total != 1024 || p.ev.corr != 42 || !p.ev.hasDevice || p.ev.device != 3 {
		t.Errorf("total %d, corr %d, device %v %d; want 1024, 42, true 3", total, p.ev.corr, p.ev.hasDevice, p.ev.device)
	}
	if !p.s.atEOF() {
		t.Errorf("args left input unread at offset %d", p.s.offset())
	}
}
