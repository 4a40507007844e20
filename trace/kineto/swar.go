package kineto

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// Byte searches eight bytes at a time in a little-endian word ("SIMD within
// a register"). zeroBytes flags, in the high bit of each byte, the bytes
// of x that are zero; a borrow can also flag a byte just above a zero one,
// so only the lowest flag is exact, and that is the only one the callers
// use (bits.TrailingZeros64(m) / 8 is its index).

const (
	lsbs = 0x0101010101010101
	msbs = 0x8080808080808080
)

func zeroBytes(x uint64) uint64 { return (x - lsbs) &^ x & msbs }

// quoteOrBackslash flags the bytes of w that are '"' or '\\'.
func quoteOrBackslash(w uint64) uint64 {
	return zeroBytes(w^(lsbs*'"')) | zeroBytes(w^(lsbs*'\\'))
}

// structural flags the bytes of w that are '"', '{', '}', '[' or ']'.
// Setting bit 5 maps '[' (0x5B) onto '{' (0x7B) and ']' (0x5D) onto '}'
// (0x7D), and no other byte onto either.
func structural(w uint64) uint64 {
	y := w | lsbs*0x20
	return zeroBytes(w^(lsbs*'"')) | zeroBytes(y^(lsbs*'{')) | zeroBytes(y^(lsbs*'}'))
}

// eqBytes flags, exactly, the bytes of w equal to c: no borrow crosses
// bytes, so every flag can be counted.
func eqBytes(w uint64, c byte) uint64 {
	const lows = 0x7f7f7f7f7f7f7f7f
	x := w ^ (lsbs * uint64(c))
	return ^((x&lows + lows) | x | lows)
}

// flatEnd returns the length of b's prefix up to and including the first
// '}' when that '}' closes an object whose rest is b: no '{', '[', ']' or
// backslash before it, and an even number of quotes (every string closed).
// It returns -1 when that cannot be decided so simply.
func flatEnd(b []byte) int {
	end := bytes.IndexByte(b, '}')
	if end < 0 {
		return -1
	}
	quotes := 0
	i := 0
	for ; i+8 <= end; i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		y := w | lsbs*0x20 // '[' becomes '{', ']' becomes '}'
		if eqBytes(y, '{')|eqBytes(y, '}')|eqBytes(w, '\\') != 0 {
			return -1
		}
		quotes += bits.OnesCount64(eqBytes(w, '"'))
	}
	for ; i < end; i++ {
		switch b[i] {
		case '{', '[', ']', '\\':
			return -1
		case '"':
			quotes++
		}
	}
	if quotes%2 != 0 {
		return -1
	}
	return end + 1
}
