package kineto

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
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

// TestSkipValue covers skipping: brackets and braces inside strings,
// escaped quotes and backslashes at every alignment, nesting, and input
// that arrives a byte at a time (every refill boundary) or all at once.
func TestSkipValue(t *testing.T) {
	values := []string{
		`{}`, `[]`, `"x"`, `12.5`, `true`,
		`{"a": "}]", "b": [1, {"c": "{["}], "d\"}": "\\"}`,
		`{"Input Dims": [[4096], [], [9, 4096]], "Input type": ["float", "", "Scalar"]}`,
		`["\\\\", "\"", "\\\"]", "a\u005d\u007d"]`,
		`{"k": "` + strings.Repeat(`ab\"{}[]`, 40) + `"}`,
	}
	for _, v := range values {
		for pad := range 9 {
			in := strings.Repeat(" ", pad) + v + `,"next"`
			for _, one := range []bool{false, true} {
				var r io.Reader = strings.NewReader(in)
				if one {
					r = iotest.OneByteReader(r)
				}
				s := newScanner(r)
				if err := s.skipValue(); err != nil {
					t.Fatalf("skipValue(%q): %v", in, err)
				}
				if got := s.offset(); got != int64(pad+len(v)) {
					t.Errorf("skipValue(%q, one byte at a time %v) stopped at %d, want %d", in, one, got, pad+len(v))
				}
			}
		}
		s := newScanner(strings.NewReader(v[:len(v)-1]))
		if v[0] == '{' || v[0] == '[' || v[0] == '"' {
			if err := s.skipValue(); err == nil {
				t.Errorf("skipValue(%q) of a truncated value: no error", v[:len(v)-1])
			}
		}
	}
}

// TestNextMember covers nextMember's one-word path and its fallbacks.
func TestNextMember(t *testing.T) {
	ks := newKeySet("ph", "cat", "name", "ts", "dur", "pid", "tid", "args", "correlation")
	for _, c := range []struct {
		in   string
		want int
		more bool
		rest string
	}{
		{`, "ph": 1`, 0, true, ` 1`},
		{`, "tid":1`, 6, true, `1`},
		{`,"cat": 1`, 1, true, ` 1`},
		{",\n    \"ts\": 1", 3, true, ` 1`},
		{`, "p\"h": 1`, -1, true, ` 1`},
		{`, "p\u0068": 1`, 0, true, ` 1`},
		{`, "correlation": 1`, 8, true, ` 1`},
		{`, "": 1`, -1, true, ` 1`},
		{`, "tidtidt": 1`, -1, true, ` 1`},
		{`, "ph" : 1`, 0, true, ` 1`},
		{`}, {`, -1, false, `, {`},
		{` } `, -1, false, ` `},
		{",\n      \"dur\": 1", 4, true, ` 1`},
		{",\t\r\n \"name\":1", 2, true, `1`},
		{"," + strings.Repeat(" ", 40) + `"ph": 1`, 0, true, ` 1`},
	} {
		for _, pad := range []string{"", strings.Repeat(" ", 64)} {
			s := newScanner(strings.NewReader(c.in + pad))
			got, more, err := s.nextMember(new([]byte), ks)
			rest := string(s.buf[s.pos:s.end])
			if err != nil || got != c.want || more != c.more || strings.TrimRight(rest, " ") != strings.TrimRight(c.rest, " ") {
				t.Errorf("nextMember(%q) = %d, %v, %v, rest %q; want %d, %v, rest %q", c.in+pad, got, more, err, rest, c.want, c.more, c.rest)
			}
		}
	}
	if _, _, err := newScanner(strings.NewReader(`; "ph": 1`)).nextMember(new([]byte), ks); err == nil {
		t.Error("nextMember accepted ';' as a separator")
	}
}

// TestFirstMember covers the opening of an object with firstMember.
func TestFirstMember(t *testing.T) {
	ks := newKeySet("ph", "cat")
	for _, c := range []struct {
		in   string
		want int
		more bool
		rest string
	}{
		{"{\n    \"ph\": \"X\"", 0, true, ` "X"`},
		{`{"cat":1`, 1, true, `1`},
		{`{"categ": 1`, -1, true, ` 1`},
		{`{"c\"at": 1`, -1, true, ` 1`},
		{`{ }, 1`, -1, false, `, 1`},
		{`{}`, -1, false, ``},
	} {
		for _, pad := range []string{"", strings.Repeat(" ", 64)} {
			s := newScanner(strings.NewReader(c.in + pad))
			got, more, err := s.firstMember(new([]byte), ks)
			rest := string(s.buf[s.pos:s.end])
			if err != nil || got != c.want || more != c.more || strings.TrimRight(rest, " ") != strings.TrimRight(c.rest, " ") {
				t.Errorf("firstMember(%q) = %d, %v, %v, rest %q; want %d, %v, rest %q", c.in+pad, got, more, err, rest, c.want, c.more, c.rest)
			}
		}
	}
}
