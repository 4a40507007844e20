package kineto

import (
	"strings"
	"testing"
)

// TestReadKey covers the fast paths of readKey: names of up to 7 bytes
// compared as one word, escapes, white space before the colon and names
// that only share a prefix with a listed one.
func TestReadKey(t *testing.T) {
	ks := newKeySet("ph", "cat", "name", "ts", "dur", "pid", "tid", "args", "correlation")
	for _, c := range []struct {
		in   string
		want int
		rest string
	}{
		{`"ph": 1`, 0, ` 1`},
		{`"cat":"x"`, 1, `"x"`},
		{`"args" : {}`, 7, ` {}`},
		{`"p\"h": 1`, -1, ` 1`},
		{`"p\u0068": 1`, 0, ` 1`}, // an escaped "ph" is still "ph"
		{`"phx": 1`, -1, ` 1`},
		{`"p": 1`, -1, ` 1`},
		{`"": 1`, -1, ` 1`},
		{`"tidtidt": 1`, -1, ` 1`},
		{`"tidtidti": 1`, -1, ` 1`},
		{`"correlation": 1`, 8, ` 1`},
		{`"correlatio": 1`, -1, ` 1`},
		{"   \n  \"dur\": 1", 4, ` 1`},
	} {
		for _, pad := range []string{"", strings.Repeat(" ", 64)} {
			s := newScanner(strings.NewReader(c.in + pad))
			got, err := s.readKey(new([]byte), ks)
			rest := string(s.buf[s.pos:s.end])
			if err != nil || got != c.want || strings.TrimRight(rest, " ") != strings.TrimRight(c.rest, " ") {
				t.Errorf("readKey(%q) = %d, %v, rest %q; want %d, rest %q", c.in+pad, got, err, rest, c.want, c.rest)
			}
		}
	}
}
