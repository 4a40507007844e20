package kineto

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/gpugate/gpugate/trace"
)

// TestFLOPOpsTorch26 reads a real torch 2.6 CPU trace of one training step
// of the demo's SmallCNN (testdata/torch26-smallcnn/README.md) and checks
// every counted operator's FLOPs against values worked out by hand from
// the model's shapes (batch N=32, 3×32×32 images), with torch's own
// formulas (torch/utils/flop_counter.py; a multiply-add is 2 FLOPs):
//
//	conv1  3→16, 3×3, padding 1: output 32×16×32×32 = 524,288 values,
//	       each 3·3·3 = 27 multiply-adds:      2·524,288·27      =  28,311,552
//	conv2  16→32, 3×3, padding 1 on 16×16: output 32×32×16×16 = 262,144,
//	       each 16·9 = 144 multiply-adds:      2·262,144·144     =  75,497,472
//	fc     Linear 2048→10 (addmm [32,2048]·[2048,10]): 2·32·2048·10 = 1,310,720
//	forward                                                       105,119,744
//	fc backward: two mm, grad input [32,10]·[10,2048] and grad weight
//	       [10,32]·[32,2048]: 2·(2·32·10·2048)                  =   2,621,440
//	conv2 backward, output_mask [True, True, True]: grad input and grad
//	       weight, each as the forward:        2·75,497,472      = 150,994,944
//	conv1 backward, output_mask [False, True, True] (the images need no
//	       gradient): grad weight only:                            28,311,552
//	backward                                                      181,927,936
//	step                                                          287,047,680
func TestFLOPOpsTorch26(t *testing.T) {
	p, err := ReadFile(filepath.Join("testdata", "torch26-smallcnn", "trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Every counted operator the trace holds, nested ones included: the
	// analysis counts only the outermost (aten::conv2d, not the
	// aten::convolution inside it).
	byKind := map[trace.FLOPKind][]float64{}
	for _, op := range p.FLOPOps {
		if op.FromTrace {
			t.Errorf("op %+v: torch 2.6 on the CPU writes no flops args", op)
		}
		byKind[op.Kind] = append(byKind[op.Kind], op.FLOPs)
	}
	want := map[trace.FLOPKind][]float64{
		trace.FLOPConv:         {28311552, 75497472},
		trace.FLOPConvolution:  {28311552, 28311552, 75497472, 75497472}, // aten::convolution and aten::_convolution under each conv2d
		trace.FLOPLinear:       {1310720},
		trace.FLOPAddmm:        {1310720},
		trace.FLOPMM:           {1310720, 1310720},
		trace.FLOPConvBackward: {150994944, 28311552},
	}
	for k, w := range want {
		got := byKind[k]
		if len(got) != len(w) {
			t.Errorf("kind %d: %v, want %v", k, got, w)
			continue
		}
		sum := func(xs []float64) (s float64) {
			for _, x := range xs {
				s += x
			}
			return
		}
		if sum(got) != sum(w) {
			t.Errorf("kind %d: FLOPs %v, want %v", k, got, w)
		}
	}
	for _, op := range p.FLOPOps {
		if math.IsNaN(op.FLOPs) {
			t.Errorf("op %+v has no count", op)
		}
	}
}

func TestFLOPsFromShapes(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind trace.FLOPKind
		dims [][]int64
		conc []string
		want float64
		ok   bool
	}{
		{"mm", trace.FLOPMM, [][]int64{{4, 5}, {5, 6}}, nil, 2 * 4 * 5 * 6, true},
		{"mm mismatch", trace.FLOPMM, [][]int64{{4, 5}, {7, 6}}, nil, 0, false},
		{"bmm", trace.FLOPBmm, [][]int64{{3, 4, 5}, {3, 5, 6}}, nil, 2 * 3 * 4 * 5 * 6, true},
		{"baddbmm", trace.FLOPBaddbmm, [][]int64{{3, 4, 6}, {3, 4, 5}, {3, 5, 6}}, nil, 2 * 3 * 4 * 5 * 6, true},
		{"linear 3-D", trace.FLOPLinear, [][]int64{{2, 7, 5}, {6, 5}, {6}}, nil, 2 * 14 * 5 * 6, true},
		{"strided conv", trace.FLOPConv, [][]int64{{1, 3, 224, 224}, {64, 3, 7, 7}, {64}, nil, nil, nil, nil},
			[]string{"", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "1"}, 2 * 64 * 112 * 112 * 3 * 49, true},
		{"grouped conv", trace.FLOPConv, [][]int64{{1, 8, 10, 10}, {8, 2, 3, 3}, nil, nil, nil, nil, nil},
			[]string{"", "", "", "[1, 1]", "[0, 0]", "[1, 1]", "4"}, 2 * 8 * 8 * 8 * 2 * 9, true},
		{"padding same", trace.FLOPConv, [][]int64{{1, 3, 9, 9}, {4, 3, 3, 3}, nil, nil, nil, nil, nil},
			[]string{"", "", "", "[1, 1]", "same", "[1, 1]", "1"}, 2 * 4 * 81 * 27, true},
		{"transposed", trace.FLOPConvolution, [][]int64{{1, 4, 5, 5}, {4, 2, 3, 3}, nil, nil, nil, nil, nil, nil, nil},
			[]string{"", "", "", "[2, 2]", "[0, 0]", "[1, 1]", "True", "[0, 0]", "1"}, 2 * 1 * 72 * 25, true},
		{"conv without strides (2021 traces)", trace.FLOPConv, [][]int64{{1, 3, 8, 8}, {4, 3, 3, 3}}, nil, 0, false},
		{"legacy backward", trace.FLOPUncountable, [][]int64{{1}}, nil, 0, false},
		{"negative dim", trace.FLOPMM, [][]int64{{-1, 5}, {5, 6}}, nil, 0, false},
	} {
		got, ok := trace.FLOPsFromShapes(tc.kind, tc.dims, tc.conc)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: FLOPsFromShapes = %v, %v, want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
