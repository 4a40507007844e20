package kineto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// scanner is a small pull tokenizer for the subset of JSON work a chrome
// trace needs: read strings and numbers into caller-owned scratch buffers and
// skip everything else. It refills a fixed buffer from the reader, so memory
// does not depend on the document size.
//
// Rejected designs, measured in BenchmarkDecoders: encoding/json's Decoder
// (Token plus Decode into a struct per event) allocates per event and runs
// at a small fraction of this scanner's speed; decoding the whole document
// into []any needs memory proportional to the file.
type scanner struct {
	r    io.Reader
	buf  []byte
	pos  int
	end  int
	off  int64 // stream offset of buf[0]
	rerr error
	// maxStr bounds the strings and numbers read into caller buffers.
	maxStr int
	num    []byte // scratch for number
}

var errEOF = errors.New("unexpected end of input")

func newScanner(r io.Reader) *scanner {
	return &scanner{r: r, buf: make([]byte, 256<<10), maxStr: DefaultMaxString}
}

func (s *scanner) offset() int64 { return s.off + int64(s.pos) }

// more reads more input while keeping buf[pos:end]. It reports whether any
// new bytes arrived.
func (s *scanner) more() bool {
	if s.rerr != nil {
		return false
	}
	if s.pos > 0 {
		n := copy(s.buf, s.buf[s.pos:s.end])
		s.off += int64(s.pos)
		s.pos, s.end = 0, n
	}
	if s.end == len(s.buf) {
		nb := make([]byte, 2*len(s.buf))
		copy(nb, s.buf[:s.end])
		s.buf = nb
	}
	for {
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		if err != nil {
			s.rerr = err
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
}

// err returns the error for input that ended too early.
func (s *scanner) err() error {
	if s.rerr == nil || s.rerr == io.EOF {
		return errEOF
	}
	return s.rerr
}

// ensure makes n bytes available after pos if the input has them.
func (s *scanner) ensure(n int) bool {
	for s.end-s.pos < n {
		if !s.more() {
			return false
		}
	}
	return true
}

// peek skips white space and returns the next byte without consuming it.
func (s *scanner) peek() (byte, error) {
	if p := s.pos; p+1 < s.end {
		if c := s.buf[p]; c > ' ' {
			return c, nil
		} else if c == ' ' && s.buf[p+1] > ' ' { // ": x" and ", x"
			s.pos = p + 1
			return s.buf[p+1], nil
		}
	}
	return s.peekSlow()
}

func (s *scanner) peekSlow() (byte, error) {
	for {
		// Locals, not fields, in the loop: this is the hottest loop of the parser.
		buf, pos := s.buf[:s.end], s.pos
		// Pretty-printed traces indent with runs of spaces: skip 8 at a time.
		for pos+8 <= len(buf) && binary.LittleEndian.Uint64(buf[pos:]) == 0x2020202020202020 {
			pos += 8
		}
		for ; pos < len(buf); pos++ {
			if c := buf[pos]; c > ' ' {
				s.pos = pos
				return c, nil
			}
		}
		s.pos = pos
		if !s.more() {
			return 0, s.err()
		}
	}
}

// atEOF skips white space and reports whether the input is exhausted.
func (s *scanner) atEOF() bool {
	_, err := s.peek()
	return err != nil
}

func (s *scanner) expect(c byte) error {
	got, err := s.peek()
	if err != nil {
		return err
	}
	if got != c {
		return s.unexpected(got, string(c))
	}
	s.pos++
	return nil
}

type unexpectedError struct {
	got  byte
	want string
}

func (e *unexpectedError) Error() string {
	// The character itself is not quoted: errors never quote what a file
	// holds (a trace the job replaced may be a secret's copy).
	return "unexpected character, want " + e.want
}

func (s *scanner) unexpected(got byte, want string) error {
	return &unexpectedError{got, want}
}

// readString reads a JSON string, appending its unescaped value to dst.
func (s *scanner) readString(dst []byte) ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return dst, err
	}
	for {
		rest := s.buf[s.pos:s.end]
		q := bytes.IndexByte(rest, '"')
		lim := rest
		if q >= 0 {
			lim = rest[:q]
		}
		if b := bytes.IndexByte(lim, '\\'); b >= 0 {
			if len(dst)+b > s.maxStr {
				return dst, s.tooLong()
			}
			dst = append(dst, rest[:b]...)
			s.pos += b
			var err error
			if dst, err = s.unescape(dst); err != nil {
				return dst, err
			}
			continue
		}
		if q >= 0 {
			if len(dst)+q > s.maxStr {
				return dst, s.tooLong()
			}
			dst = append(dst, rest[:q]...)
			s.pos += q + 1
			return dst, nil
		}
		if len(dst)+len(rest) > s.maxStr {
			return dst, s.tooLong()
		}
		dst = append(dst, rest...)
		s.pos = s.end
		if !s.more() {
			return dst, s.err()
		}
	}
}

func (s *scanner) tooLong() error {
	return &errLimit{name: limitString, what: "string length (bytes)", limit: int64(s.maxStr)}
}

// unescape decodes the escape sequence at pos.
func (s *scanner) unescape(dst []byte) ([]byte, error) {
	if !s.ensure(2) {
		return dst, s.err()
	}
	c := s.buf[s.pos+1]
	switch c {
	case '"', '\\', '/':
		dst = append(dst, c)
	case 'b':
		dst = append(dst, '\b')
	case 'f':
		dst = append(dst, '\f')
	case 'n':
		dst = append(dst, '\n')
	case 'r':
		dst = append(dst, '\r')
	case 't':
		dst = append(dst, '\t')
	case 'u':
		r, n, err := s.hexRune()
		if err != nil {
			return dst, err
		}
		s.pos += n
		return utf8.AppendRune(dst, r), nil
	default:
		return dst, s.unexpected(c, "escape character")
	}
	s.pos += 2
	return dst, nil
}

// hexRune decodes \uXXXX (and a following low surrogate) at pos.
func (s *scanner) hexRune() (rune, int, error) {
	if !s.ensure(6) {
		return 0, 0, s.err()
	}
	r1, ok := hex4(s.buf[s.pos+2 : s.pos+6])
	if !ok {
		return 0, 0, s.unexpected(s.buf[s.pos+2], "hex digits")
	}
	if r1 >= 0xD800 && r1 < 0xDC00 && s.ensure(12) && s.buf[s.pos+6] == '\\' && s.buf[s.pos+7] == 'u' {
		if r2, ok := hex4(s.buf[s.pos+8 : s.pos+12]); ok && r2 >= 0xDC00 && r2 < 0xE000 {
			return (r1-0xD800)<<10 | (r2 - 0xDC00) + 0x10000, 12, nil
		}
	}
	if r1 >= 0xD800 && r1 < 0xE000 {
		r1 = utf8.RuneError
	}
	return r1, 6, nil
}

func hex4(b []byte) (rune, bool) {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// skipString consumes a JSON string without keeping it.
func (s *scanner) skipString() error {
	s.pos++ // the opening quote, checked by the caller
	// Most skipped strings are short member names and values: look at
	// 8 bytes at a time for a quote or a backslash (swar.go) before
	// paying for two IndexByte calls.
	buf, pos := s.buf[:s.end], s.pos
	for pos+8 <= len(buf) {
		m := quoteOrBackslash(binary.LittleEndian.Uint64(buf[pos:]))
		if m == 0 {
			pos += 8
			continue
		}
		pos += bits.TrailingZeros64(m) / 8
		if buf[pos] == '"' {
			s.pos = pos + 1
			return nil
		}
		if pos+2 > len(buf) {
			break
		}
		pos += 2 // a backslash and the byte it escapes
	}
	s.pos = pos
	for {
		rest := s.buf[s.pos:s.end]
		q := bytes.IndexByte(rest, '"')
		lim := rest
		if q >= 0 {
			lim = rest[:q]
		}
		if b := bytes.IndexByte(lim, '\\'); b >= 0 {
			s.pos += b
			if !s.ensure(2) {
				return s.err()
			}
			s.pos += 2
			continue
		}
		if q >= 0 {
			s.pos += q + 1
			return nil
		}
		s.pos = s.end
		if !s.more() {
			return s.err()
		}
	}
}

// number returns the bytes of a JSON number (or literal). They may alias
// the scanner's buffer, so they are valid only until the next call.
func (s *scanner) number() ([]byte, error) {
	// Callers have peeked: pos is at the value. Fast path: the whole
	// number lies in the buffer.
	buf := s.buf[:s.end]
	for i := s.pos; i < len(buf); i++ {
		if c := buf[i]; (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E' || (c >= 'a' && c <= 'z') {
			continue
		}
		if i == s.pos || i-s.pos > s.maxStr {
			break // no number at all, or too long: readNumber says so
		}
		b := buf[s.pos:i]
		s.pos = i
		return b, nil
	}
	var err error
	s.num, err = s.readNumber(s.num[:0])
	return s.num, err
}

// readNumber appends the bytes of a JSON number (or literal) to dst.
func (s *scanner) readNumber(dst []byte) ([]byte, error) {
	if _, err := s.peek(); err != nil {
		return dst, err
	}
	start := len(dst)
	// Fast path: the whole number lies in the buffer.
	for i := s.pos; i < s.end; i++ {
		c := s.buf[i]
		if (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E' || (c >= 'a' && c <= 'z') {
			continue
		}
		if i == s.pos {
			return dst, s.unexpected(c, "a value")
		}
		dst = append(dst, s.buf[s.pos:i]...)
		s.pos = i
		return dst, nil
	}
	for {
		for s.pos < s.end {
			c := s.buf[s.pos]
			if (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E' || (c >= 'a' && c <= 'z') {
				if len(dst)-start >= s.maxStr {
					return dst, s.tooLong()
				}
				dst = append(dst, c)
				s.pos++
				continue
			}
			if len(dst) == start {
				return dst, s.unexpected(c, "a value")
			}
			return dst, nil
		}
		if !s.more() {
			return dst, s.err()
		}
	}
}

// skipValue consumes one JSON value of any kind.
func (s *scanner) skipValue() error {
	c, err := s.peek()
	if err != nil {
		return err
	}
	switch c {
	case '"':
		return s.skipString()
	case '{', '[':
	default:
		for {
			for s.pos < s.end {
				c := s.buf[s.pos]
				if c == ',' || c == '}' || c == ']' || c <= ' ' {
					return nil
				}
				s.pos++
			}
			if !s.more() {
				return s.err()
			}
		}
	}
	s.pos++ // the opening brace or bracket
	return s.skipRest()
}

// skipRest skips the remaining members of the object being read and its
// closing brace.
func (s *scanner) skipRest() error {
	// Flow events and most args hold no nested object: find the end at
	// once (swar.go).
	if n := flatEnd(s.buf[s.pos:s.end]); n >= 0 {
		s.pos += n
		return nil
	}
	depth := 1
	for {
		buf, pos := s.buf[:s.end], s.pos
		// 8 bytes at a time to the next quote, brace or bracket.
		for pos+8 <= len(buf) {
			m := structural(binary.LittleEndian.Uint64(buf[pos:]))
			if m == 0 {
				pos += 8
				continue
			}
			pos += bits.TrailingZeros64(m) / 8
			switch buf[pos] {
			case '"':
				s.pos = pos
				if err := s.skipString(); err != nil {
					return err
				}
				buf, pos = s.buf[:s.end], s.pos
				continue
			case '{', '[':
				depth++
			default: // '}', ']'
				depth--
				if depth == 0 {
					s.pos = pos + 1
					return nil
				}
			}
			pos++
		}
		for pos < len(buf) {
			switch buf[pos] {
			case '"':
				s.pos = pos
				if err := s.skipString(); err != nil {
					return err
				}
				buf, pos = s.buf[:s.end], s.pos
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.pos = pos + 1
					return nil
				}
			}
			pos++
		}
		s.pos = pos
		if !s.more() {
			return s.err()
		}
	}
}

// comma consumes the separator after a member or element. It reports
// whether the container continues (true) or has just been closed (false).
func (s *scanner) comma(close byte) (bool, error) {
	c, err := s.peek()
	if err != nil {
		return false, err
	}
	switch c {
	case ',':
		s.pos++
		return true, nil
	case close:
		s.pos++
		return false, nil
	}
	return false, s.unexpected(c, "',' or '"+string(close)+"'")
}

// openObject consumes '{' and reports whether the object has members.
func (s *scanner) openObject() (bool, error) { return s.open('{', '}') }

// openArray consumes '[' and reports whether the array has elements.
func (s *scanner) openArray() (bool, error) { return s.open('[', ']') }

func (s *scanner) open(open, close byte) (bool, error) {
	if err := s.expect(open); err != nil {
		return false, err
	}
	c, err := s.peek()
	if err != nil {
		return false, err
	}
	if c == close {
		s.pos++
		return false, nil
	}
	return true, nil
}

// keySet is a list of member names looked up by index. Names of up to 8
// bytes, all the names of a trace event, are compared as one integer.
type keySet struct {
	names  []string
	packed []uint64 // little-endian bytes of names[i] when len <= 8
}

func newKeySet(names ...string) *keySet {
	ks := &keySet{names: names, packed: make([]uint64, len(names))}
	for i, n := range names {
		if len(n) <= 8 {
			ks.packed[i] = pack(n)
		}
	}
	return ks
}

func pack[S string | []byte](b S) uint64 {
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// quoteIndex returns the index of the first '"' byte in the little-endian
// word w, or -1.
func quoteIndex(w uint64) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	x := w ^ (ones * '"')
	if t := (x - ones) &^ x & highs; t != 0 {
		return bits.TrailingZeros64(t) / 8
	}
	return -1
}

// backslashMask returns all ones when one of the first k bytes of w is a
// backslash (an escaped name takes the slow path), else 0.
func backslashMask(w uint64, k int) uint64 {
	for i := range k {
		if byte(w>>(8*i)) == '\\' {
			return ^uint64(0)
		}
	}
	return 0
}

// lookupPacked returns the index of the name of length n whose packed bytes
// are v, or -1.
func (ks *keySet) lookupPacked(v uint64, n int) int {
	if n == 0 {
		return -1
	}
	for i, p := range ks.packed {
		if p == v && len(ks.names[i]) == n {
			return i
		}
	}
	return -1
}

// lookup returns the index of b in the set, or -1.
func (ks *keySet) lookup(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	if len(b) <= 8 {
		v := pack(b)
		for i, p := range ks.packed {
			if p == v && len(ks.names[i]) == len(b) {
				return i
			}
		}
		return -1
	}
	for i, n := range ks.names {
		if len(n) == len(b) && string(b) == n {
			return i
		}
	}
	return -1
}

// readKey reads an object member name and the colon after it, and returns
// the name's index in ks, or -1 for a name not listed.
func (s *scanner) readKey(scratch *[]byte, ks *keySet) (int, error) {
	// Keys follow white space (", \"cat\"" or a new line and an indent):
	// skip it first, or the fast path would never apply.
	if _, err := s.peek(); err != nil {
		return -1, err
	}
	// Fastest path: a name of at most 7 bytes, all of it and its closing
	// quote among the 8 bytes after the opening quote, compared as one
	// integer. Every member of a trace event but "External id" and
	// "correlation" is such a name.
	if p := s.pos; p+10 <= s.end && s.buf[p] == '"' {
		w := binary.LittleEndian.Uint64(s.buf[p+1:])
		if k := quoteIndex(w); k >= 0 && s.buf[p+1+k+1] == ':' {
			if v := w & (1<<(8*k) - 1); v&backslashMask(w, k) == 0 {
				s.pos = p + k + 3
				return ks.lookupPacked(v, k), nil
			}
		}
	}
	// Fast path: a short name without escapes, already in the buffer.
	if s.pos+1 < s.end && s.buf[s.pos] == '"' {
		buf := s.buf[:s.end]
		for i := s.pos + 1; i < len(buf) && i < s.pos+40; i++ {
			c := buf[i]
			if c == '\\' {
				break
			}
			if c == '"' {
				k := ks.lookup(buf[s.pos+1 : i])
				s.pos = i + 1
				if s.pos < len(buf) && buf[s.pos] == ':' {
					s.pos++
					return k, nil
				}
				return k, s.expect(':')
			}
		}
	}
	var err error
	*scratch, err = s.readString((*scratch)[:0])
	if err != nil {
		return -1, err
	}
	return ks.lookup(*scratch), s.expect(':')
}

// usToNs converts a decimal count of microseconds, as chrome traces write
// ts and dur, into integer nanoseconds. It works on the digits, so
// 1712195495519695.8 becomes exactly 1712195495519695800: a float64 would
// drift by up to 128 ns at that magnitude. Digits beyond the nanosecond are
// rounded half up.
func usToNs(b []byte) (int64, bool) {
	i, neg := 0, false
	if len(b) > 0 && b[0] == '-' {
		neg, i = true, 1
	}
	var ip int64
	nd := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		ip = ip*10 + int64(b[i]-'0')
		nd++
	}
	var frac int64
	fd := 0
	up := false
	if i < len(b) && b[i] == '.' {
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			switch {
			case fd < 3:
				frac = frac*10 + int64(b[i]-'0')
			case fd == 3:
				up = b[i] >= '5'
			}
			fd++
		}
	}
	if i != len(b) || nd == 0 || nd > 16 || ip > (math.MaxInt64-1000)/1000 {
		f, err := strconv.ParseFloat(unsafeString(b), 64)
		if err != nil || math.IsNaN(f) || math.Abs(f) > 9e15 {
			return 0, false
		}
		return int64(math.Round(f * 1000)), true
	}
	for ; fd < 3; fd++ {
		frac *= 10
	}
	ns := ip*1000 + frac
	if up {
		ns++
	}
	if neg {
		ns = -ns
	}
	return ns, true
}

// parseInt parses an integer value; a float is truncated.
func parseInt(b []byte) (int64, bool) {
	if len(b) > 0 && len(b) < 19 {
		var n int64
		i := 0
		if b[0] == '-' {
			i = 1
		}
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			n = n*10 + int64(b[i]-'0')
		}
		if i == len(b) && (b[0] != '-' || len(b) > 1) {
			if b[0] == '-' {
				n = -n
			}
			return n, true
		}
	}
	n, err := strconv.ParseInt(unsafeString(b), 10, 64)
	if err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(unsafeString(b), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return int64(f), true
}

func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// nextMember consumes the separator after an object member and, when the
// object goes on, the next member's name and colon: it returns the name's
// index in ks (-1 when not listed) and true, or false when the object has
// just been closed. The common case, a comma, white space and a name of up
// to 7 bytes, is matched in one step, the name as one 8-byte word
// (packedKey).
func (s *scanner) nextMember(scratch *[]byte, ks *keySet) (int, bool, error) {
	if p := s.pos; p < s.end && s.buf[p] == ',' {
		if k, ok := s.packedKey(p+1, ks); ok {
			return k, true, nil
		}
	}
	more, err := s.comma('}')
	if !more || err != nil {
		return -1, more, err
	}
	k, err := s.readKey(scratch, ks)
	return k, true, err
}

// firstMember is nextMember for the opening brace and the first member.
func (s *scanner) firstMember(scratch *[]byte, ks *keySet) (int, bool, error) {
	if p := s.pos; p < s.end && s.buf[p] == '{' {
		if k, ok := s.packedKey(p+1, ks); ok {
			return k, true, nil
		}
	}
	more, err := s.openObject()
	if !more || err != nil {
		return -1, more, err
	}
	k, err := s.readKey(scratch, ks)
	return k, true, err
}

// packedKey matches, from q, a little white space (as peek skips it) and a
// member name of up to 7 bytes without escapes, its closing quote and the
// colon, within the buffer; then it moves past them and returns the
// name's index in ks (-1 when not listed).
func (s *scanner) packedKey(q int, ks *keySet) (int, bool) {
	buf := s.buf[:s.end]
	for lim := min(q+32, len(buf)); q < lim && buf[q] <= ' '; q++ {
	}
	if q+10 > len(buf) || buf[q] != '"' {
		return -1, false
	}
	w := binary.LittleEndian.Uint64(buf[q+1:])
	k := quoteIndex(w)
	if k < 0 || buf[q+k+2] != ':' {
		return -1, false
	}
	v := w & (1<<(8*k) - 1)
	if v&backslashMask(w, k) != 0 {
		return -1, false
	}
	s.pos = q + k + 3
	return ks.lookupPacked(v, k), true
}
