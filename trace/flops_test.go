package trace

import "testing"

// TestConvArgsOutOfRange: PyTorch takes padding >= 0, dilation >= 1 and
// stride >= 1, and sizes far below 2^62; shapes or scalar arguments
// outside that (a hostile or corrupt trace) give no count, not a number
// made of int64 overflow or a negative dilation.
func TestConvArgsOutOfRange(t *testing.T) {
	dims := [][]int64{{1, 1, 8, 8}, {1, 1, 3, 3}, {1}}
	conc := func(stride, pad, dil string) []string { return []string{"", "", "", stride, pad, dil, "1"} }
	if v, ok := FLOPsFromShapes(FLOPConv, dims, conc("[1, 1]", "[0, 0]", "[1, 1]")); !ok || v != 2*9*36 {
		t.Fatalf("plain conv: %v, %v, want %d", v, ok, 2*9*36)
	}
	for _, c := range [][]string{
		conc("[1, 1]", "[-1, 0]", "[1, 1]"),
		conc("[1, 1]", "[0, 0]", "[-1, 1]"),
		conc("[1, 1]", "[0, 0]", "[0, 1]"),
		conc("[1, 1]", "[4611686018427387903, 0]", "[1, 1]"),
		conc("[1, 1]", "[0, 0]", "[4611686018427387903, 1]"),
	} {
		if v, ok := FLOPsFromShapes(FLOPConv, dims, c); ok {
			t.Errorf("conv with %q: %v FLOPs, want no count", c[3:6], v)
		}
	}
	huge := [][]int64{{1, 1, 1 << 62, 8}, {1, 1, 3, 3}, {1}}
	if v, ok := FLOPsFromShapes(FLOPConv, huge, conc("[1, 1]", "[1, 1]", "[1, 1]")); ok {
		t.Errorf("conv of a 2^62 input: %v FLOPs, want no count", v)
	}
}
