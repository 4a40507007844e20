package trace

import (
	"math"
	"strconv"
	"strings"
)

// FLOPOp is a host operator whose floating-point work is counted: a matrix
// multiplication or a convolution, as torch.profiler records it with
// record_shapes (Kineto cpu_op events with "Input Dims" and "Concrete
// Inputs") or with_flops (a "flops" arg). Readers keep only the operators
// FLOPKindOf knows, so that memory stays bounded by the number of such
// calls, not by the trace's size.
type FLOPOp struct {
	Start, End int64
	Thread     int64 // the same thread key as the Ranges'
	Kind       FLOPKind
	// FLOPs is the operator's count of floating-point operations (a
	// multiply-add is two); NaN when the trace recorded neither a flops
	// arg nor shapes that FLOPsFromShapes understands.
	FLOPs float64
	// FromTrace: FLOPs is the trace's own "flops" arg, not computed from
	// shapes.
	FromTrace bool
}

// FLOPKind is the kind of operator a FLOPOp is.
type FLOPKind uint8

// The operators whose FLOPs are counted: those that dominate training
// steps. Elementwise operators (aten::add, aten::mul, which torch's own
// profiler also counts) are left out.
const (
	FLOPNone FLOPKind = iota
	FLOPMM
	FLOPAddmm
	FLOPBmm
	FLOPBaddbmm
	FLOPLinear
	FLOPConv          // aten::conv1d/2d/3d: input, weight, bias, stride, padding, dilation, groups
	FLOPConvolution   // aten::convolution and aten::_convolution: ..., dilation, transposed, output_padding, groups
	FLOPConvTranspose // aten::conv_transpose1d/2d/3d
	FLOPConvBackward  // aten::convolution_backward
	// FLOPUncountable are convolution backward operators of PyTorch 1.x
	// (aten::cudnn_convolution_backward and the like) whose arguments give
	// no formula here: they are kept so that a step that ran one is known
	// to lack a count, instead of summing without it.
	FLOPUncountable
)

// String names the kind as torch names its operators.
func (k FLOPKind) String() string {
	switch k {
	case FLOPMM:
		return "aten::mm"
	case FLOPAddmm:
		return "aten::addmm"
	case FLOPBmm:
		return "aten::bmm"
	case FLOPBaddbmm:
		return "aten::baddbmm"
	case FLOPLinear:
		return "aten::linear"
	case FLOPConv:
		return "aten::conv1d/2d/3d"
	case FLOPConvolution:
		return "aten::convolution"
	case FLOPConvTranspose:
		return "aten::conv_transpose1d/2d/3d"
	case FLOPConvBackward:
		return "aten::convolution_backward"
	case FLOPUncountable:
		return "convolution backward (uncounted)"
	}
	return "other"
}

var flopKinds = map[string]FLOPKind{
	"aten::mm": FLOPMM, "aten::addmm": FLOPAddmm, "aten::bmm": FLOPBmm, "aten::baddbmm": FLOPBaddbmm,
	"aten::linear": FLOPLinear,
	"aten::conv1d": FLOPConv, "aten::conv2d": FLOPConv, "aten::conv3d": FLOPConv,
	"aten::convolution": FLOPConvolution, "aten::_convolution": FLOPConvolution,
	"aten::conv_transpose1d": FLOPConvTranspose, "aten::conv_transpose2d": FLOPConvTranspose, "aten::conv_transpose3d": FLOPConvTranspose,
	"aten::convolution_backward":       FLOPConvBackward,
	"aten::cudnn_convolution_backward": FLOPUncountable, "aten::mkldnn_convolution_backward": FLOPUncountable,
	"aten::miopen_convolution_backward": FLOPUncountable, "aten::thnn_conv2d_backward": FLOPUncountable,
	"aten::slow_conv2d_backward": FLOPUncountable, "aten::cudnn_convolution_transpose_backward": FLOPUncountable,
}

// FLOPKindOf returns the kind of the operator named name, FLOPNone for
// operators whose FLOPs are not counted.
func FLOPKindOf(name string) FLOPKind { return flopKinds[name] }

// FLOPsFromShapes computes an operator's FLOPs from its input shapes
// (Kineto's "Input Dims", one entry per argument, nil for an argument
// without a shape) and its scalar arguments ("Concrete Inputs", "" for a
// tensor), with the formulas of torch's own counter,
// torch/utils/flop_counter.py (PyTorch 2.x; a multiply-add counts two):
//
//	mm       [M,K]·[K,N]                    2·M·K·N
//	addmm    bias + [M,K]·[K,N]             2·M·K·N (the bias add is not counted)
//	bmm      [B,M,K]·[B,K,N]                2·B·M·K·N
//	baddbmm  bias + [B,M,K]·[B,K,N]         2·B·M·K·N
//	linear   x[...,K]·weight[N,K]ᵀ          2·prod(x[:-1])·K·N (what it runs: addmm or matmul)
//	conv     x[N,Cin,...], w[Cout,Cin/g,k...]  2·N·prod(w)·prod(out spatial)
//	         = 2·prod(out)·(Cin/groups)·prod(kernel); transposed: input spatial
//	conv backward, per output_mask:
//	         grad input   as the forward conv (2·N·prod(w)·prod(grad_out spatial))
//	         grad weight  2·Cin·prod(grad_out)·prod(kernel) (transposed: 2·Cout_grad·prod(x)·prod(kernel))
//
// The forward convolution's output size is computed as PyTorch does:
// floor((in + 2·padding − dilation·(k−1) − 1) / stride) + 1. ok is false
// when the shapes are missing or not what the operator takes.
func FLOPsFromShapes(k FLOPKind, dims [][]int64, concrete []string) (flops float64, ok bool) {
	dim := func(i, n int) []int64 { // argument i, when it has rank n (n < 0: any rank >= 1)
		if i >= len(dims) || dims[i] == nil || (n >= 0 && len(dims[i]) != n) || (n < 0 && len(dims[i]) == 0) {
			return nil
		}
		for _, d := range dims[i] {
			if d < 0 {
				return nil
			}
		}
		return dims[i]
	}
	switch k {
	case FLOPMM, FLOPAddmm:
		off := 0
		if k == FLOPAddmm {
			off = 1
		}
		a, b := dim(off, 2), dim(off+1, 2)
		if a == nil || b == nil || a[1] != b[0] {
			return 0, false
		}
		return 2 * f(a[0]) * f(a[1]) * f(b[1]), true
	case FLOPBmm, FLOPBaddbmm:
		off := 0
		if k == FLOPBaddbmm {
			off = 1
		}
		a, b := dim(off, 3), dim(off+1, 3)
		if a == nil || b == nil || a[0] != b[0] || a[2] != b[1] {
			return 0, false
		}
		return 2 * f(a[0]) * f(a[1]) * f(a[2]) * f(b[2]), true
	case FLOPLinear:
		x, w := dim(0, -1), dim(1, 2)
		if x == nil || w == nil || x[len(x)-1] != w[1] {
			return 0, false
		}
		return 2 * prod(x[:len(x)-1]) * f(w[1]) * f(w[0]), true
	case FLOPConv, FLOPConvolution, FLOPConvTranspose:
		x, w := dim(0, -1), dim(1, -1)
		if x == nil || w == nil || len(x) != len(w) || len(x) < 3 {
			return 0, false
		}
		transposed := k == FLOPConvTranspose
		// Scalar argument positions: stride, padding, dilation.
		si, pi, di := 3, 4, 5
		if k == FLOPConvTranspose {
			di = 7 // input, weight, bias, stride, padding, output_padding, groups, dilation
		}
		if k == FLOPConvolution {
			t, ok := boolArg(concrete, 6)
			if !ok {
				return 0, false
			}
			transposed = t
		}
		if transposed {
			return convFLOPs(x, w, nil, true), true
		}
		out, ok := convOut(x, w, concrete, si, pi, di)
		if !ok {
			return 0, false
		}
		return convFLOPs(x, w, out, false), true
	case FLOPConvBackward:
		// grad_output, input, weight, bias_sizes, stride, padding,
		// dilation, transposed, output_padding, groups, output_mask
		g, x, w := dim(0, -1), dim(1, -1), dim(2, -1)
		if g == nil || x == nil || w == nil || len(g) != len(x) || len(x) != len(w) || len(x) < 3 {
			return 0, false
		}
		transposed, ok := boolArg(concrete, 7)
		mask, ok2 := boolList(concrete, 10)
		if !ok || !ok2 || len(mask) < 2 {
			return 0, false
		}
		var total float64
		if mask[0] {
			// conv_flop_count(grad_out, w, grad_input = x, not transposed)
			total += convFLOPs(g, w, x, !transposed)
		}
		if mask[1] {
			t := func(s []int64) []int64 {
				c := append([]int64(nil), s...)
				c[0], c[1] = c[1], c[0]
				return c
			}
			if transposed {
				total += convFLOPs(t(g), t(x), t(w), false)
			} else {
				total += convFLOPs(t(x), t(g), t(w), false)
			}
		}
		return total, true
	}
	return 0, false
}

// convFLOPs is flop_counter.py's conv_flop_count: 2·batch·prod(w)·prod of
// the output's spatial dims (the input's when transposed).
func convFLOPs(x, w, out []int64, transposed bool) float64 {
	spatial := out
	if transposed {
		spatial = x
	}
	return 2 * f(x[0]) * prod(w) * prod(spatial[2:])
}

// maxConvArg bounds a convolution's stride, padding and dilation, and
// maxConvSize its input's and kernel's spatial sizes, for convOut.
const maxConvArg, maxConvSize = 1 << 20, 1 << 40

// convOut is a forward convolution's output shape [N, Cout, spatial...].
func convOut(x, w []int64, concrete []string, si, pi, di int) ([]int64, bool) {
	n := len(x) - 2
	stride, ok1 := intList(concrete, si, n, 1)
	dil, ok3 := intList(concrete, di, n, 1)
	if !ok1 || !ok3 {
		return nil, false
	}
	out := []int64{x[0], w[0]}
	pad, ok2 := intList(concrete, pi, n, 0)
	if !ok2 {
		switch strings.Trim(arg(concrete, pi), `"'`) {
		case "same":
			return append(out, x[2:]...), true // stride 1 only, as PyTorch requires
		case "valid":
			pad = make([]int64, n)
		default:
			return nil, false
		}
	}
	for i := 0; i < n; i++ {
		// PyTorch's ranges (stride and dilation >= 1, padding >= 0), and
		// bounds far above any real convolution's that keep the int64
		// arithmetic below from overflowing.
		if stride[i] < 1 || stride[i] > maxConvArg || dil[i] < 1 || dil[i] > maxConvArg || pad[i] < 0 || pad[i] > maxConvArg ||
			x[2+i] > maxConvSize || w[2+i] > maxConvSize {
			return nil, false
		}
		o := (x[2+i]+2*pad[i]-dil[i]*(w[2+i]-1)-1)/stride[i] + 1
		if o < 0 {
			return nil, false
		}
		out = append(out, o)
	}
	return out, true
}

func arg(concrete []string, i int) string {
	if i < len(concrete) {
		return strings.TrimSpace(concrete[i])
	}
	return ""
}

func boolArg(concrete []string, i int) (bool, bool) {
	switch arg(concrete, i) {
	case "True", "true", "1":
		return true, true
	case "False", "false", "0":
		return false, true
	}
	return false, false
}

// boolList reads "[False, True, True]".
func boolList(concrete []string, i int) ([]bool, bool) {
	s := arg(concrete, i)
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return nil, false
	}
	var out []bool
	for _, p := range strings.Split(s[1:len(s)-1], ",") {
		b, ok := boolArg([]string{p}, 0)
		if !ok {
			return nil, false
		}
		out = append(out, b)
	}
	return out, true
}

// intList reads "[1, 1]" (or a single "2", which PyTorch expands to every
// spatial dim) as n ints; "" (not recorded) gives def for each.
func intList(concrete []string, i, n int, def int64) ([]int64, bool) {
	s := arg(concrete, i)
	out := make([]int64, n)
	if s == "" && i < len(concrete) {
		for k := range out {
			out[k] = def
		}
		return out, true
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	parts := strings.Split(s, ",")
	if len(parts) == 1 {
		for len(parts) < n {
			parts = append(parts, parts[0])
		}
	}
	if len(parts) != n {
		return nil, false
	}
	for k, p := range parts {
		v, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return nil, false
		}
		out[k] = v
	}
	return out, true
}

func f(v int64) float64 { return float64(v) }

func prod(s []int64) float64 {
	p := 1.0
	for _, v := range s {
		p *= float64(v)
	}
	return p
}

// NoFLOPs marks a FLOPOp whose FLOPs are unknown.
var NoFLOPs = math.NaN()
