package kineto

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
