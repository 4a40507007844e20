package kineto

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestSWAR checks the word searches against byte-by-byte ones: every byte
// value at every position, and random words dense in the searched bytes
// (where borrows make false flags above a true one).
func TestSWAR(t *testing.T) {
	first := func(w uint64, want func(byte) bool) int {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], w)
		for i, c := range b {
			if want(c) {
				return i
			}
		}
		return 8
	}
	isQB := func(c byte) bool { return c == '"' || c == '\\' }
	isStruct := func(c byte) bool { return c == '"' || c == '{' || c == '}' || c == '[' || c == ']' }
	check := func(w uint64) {
		if got, want := bits.TrailingZeros64(quoteOrBackslash(w))/8, first(w, isQB); got != want {
			t.Fatalf("quoteOrBackslash(%#x): first at %d, want %d", w, got, want)
		}
		if got, want := bits.TrailingZeros64(structural(w))/8, first(w, isStruct); got != want {
			t.Fatalf("structural(%#x): first at %d, want %d", w, got, want)
		}
	}
	for pos := range 8 {
		for c := range 256 {
			check(lsbs*'a'&^(0xff<<(8*pos)) | uint64(c)<<(8*pos))
			check(uint64(c) << (8 * pos))
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []byte{0, 1, '"', '#', '\\', ']', '[', '{', '}', '{' ^ 1, '}' ^ 1, '"' ^ 1, 0x5c ^ 1, 0x7f, 0xff, 'a'}
	for range 200_000 {
		var b [8]byte
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		check(binary.LittleEndian.Uint64(b[:]))
	}
}

// TestFlatEnd checks flatEnd against a byte-by-byte walk with skipRest's
// rules, on random bytes dense in quotes, escapes, braces and brackets:
// when it decides, it must find the same end.
func TestFlatEnd(t *testing.T) {
	walk := func(b []byte) int {
		depth, inStr := 1, false
		for i := 0; i < len(b); i++ {
			c := b[i]
			switch {
			case inStr && c == '\\':
				i++
			case inStr && c == '"':
				inStr = false
			case inStr:
			case c == '"':
				inStr = true
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	rng := rand.New(rand.NewPCG(7, 8))
	alphabet := []byte(`"\{}[]a ,:`)
	decided := 0
	for range 300_000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			if rng.IntN(3) == 0 {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				b[i] = 'a' + byte(rng.IntN(3))
			}
		}
		if got := flatEnd(b); got >= 0 {
			decided++
			if want := walk(b); got != want {
				t.Fatalf("flatEnd(%q) = %d, want %d", b, got, want)
			}
		}
	}
	if decided < 10_000 {
		t.Errorf("flatEnd decided only %d inputs", decided)
	}
	if got := flatEnd([]byte(`"id": 863350, "pid": 0, "tid": 7, "ts": 1683564902133354, "cat": "ac2g", "name": "ac2g", "bp": "e"},`)); got != 99 {
		t.Errorf("flatEnd of a flow event = %d, want 99", got)
	}
}
