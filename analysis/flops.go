package analysis

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/gpugate/gpugate/trace"
)

// Work configures what a step is worth besides its time: throughput from
// perf.yaml's samples_per_step and tokens_per_step, and the FLOPs the trace
// records or lets compute (perf.yaml flops: true records the shapes).
type Work struct {
	// SamplesPerStep and TokensPerStep are what one step of one process
	// (rank) consumes; 0 when not configured.
	SamplesPerStep, TokensPerStep float64
	// MFUDtype picks the datasheet peak MFU is measured against: one of
	// MFUDtypes; "" means bf16.
	MFUDtype string
	// Device names the GPU model when the trace does not (the run's
	// fingerprint); "" or "none" for none.
	Device string
}

// WorkResult is a profile's throughput and FLOPs per step, aligned with
// Result.Steps. Values that cannot be known are nil, never 0.
type WorkResult struct {
	SamplesPerStep float64 `json:"samples_per_step,omitempty"`
	TokensPerStep  float64 `json:"tokens_per_step,omitempty"`
	// FLOPsSource is "trace" (the ops' own flops args), "shapes"
	// (computed from their recorded input shapes, trace.FLOPsFromShapes),
	// "trace+shapes" (each op's flops arg where torch wrote one, its
	// shapes elsewhere) or "" when no operator could be counted.
	FLOPsSource string `json:"flops_source"`
	// FLOPOps counts the top-level counted operators in the steps;
	// Uncounted those among them whose FLOPs could not be computed (their
	// shapes were not recorded or not understood): a step with one has no
	// FLOPs, rather than a sum that leaves it out.
	FLOPOps   int `json:"flop_ops"`
	Uncounted int `json:"uncounted_ops"`
	// Device is the GPU model MFU is measured on; PeakTFLOPS its dense
	// datasheet peak for Dtype. MFUAbsent says why there is no MFU.
	Device     string     `json:"device,omitempty"`
	Dtype      string     `json:"mfu_dtype"`
	PeakTFLOPS *float64   `json:"peak_tflops"`
	MFUAbsent  string     `json:"mfu_absent,omitempty"`
	Steps      []StepWork `json:"steps"`
	// Ops are the counted top-level operators of the steps by kind, with
	// their calls and FLOPs per step (FLOPs of the counted ones only),
	// most FLOPs first: what a comparison names when the work per step
	// grew (package gate's more-work finding). Absent from documents
	// written before gpugate kept them.
	Ops []OpWork `json:"ops,omitempty"`
}

// OpWork is one kind of counted operator's work per step.
type OpWork struct {
	Name  string  `json:"name"`           // the operator, as torch names it (aten::linear)
	Calls float64 `json:"calls_per_step"` // top-level calls per step
	FLOPs float64 `json:"flops_per_step"` // their FLOPs per step, where counted
}

// StepWork is one step's throughput and FLOPs.
type StepWork struct {
	SamplesPerSec *float64 `json:"samples_per_s"`
	TokensPerSec  *float64 `json:"tokens_per_s"`
	// FLOPs of the counted operators that started in the step's host
	// window [h0, h1); TFLOPS is FLOPs over the step time; MFU is TFLOPS
	// over the datasheet peak.
	FLOPs  *float64 `json:"flops"`
	TFLOPS *float64 `json:"tflops"`
	MFU    *float64 `json:"mfu"`
}

// MFUDtypes are the dtypes the peak table knows.
var MFUDtypes = []string{"fp32", "tf32", "bf16", "fp16", "fp8"}

// gpuPeak is one GPU model's dense datasheet peaks in TFLOP/s, by dtype
// (tensor-core figures for tf32, bf16, fp16 and fp8; the FP32 figure is
// the non-tensor one). A dtype the model does not support is missing.
// Where a datasheet lists "with sparsity" figures only, the dense figure is
// half of it, as its footnote says.
type gpuPeak struct {
	model string
	match *regexp.Regexp
	peak  map[string]float64
}

// peaks is the table of datasheet peaks (dense, not sparsity figures).
// Sources, one per row:
//   - V100 SXM2 and PCIe: NVIDIA Tesla V100 GPU datasheet (Jan 2020,
//     https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf):
//     SXM2 FP32 15.7, tensor (FP16) 125; PCIe FP32 14, tensor 112. No BF16,
//     TF32 or FP8.
//   - A100 SXM and PCIe: NVIDIA A100 Tensor Core GPU datasheet (2021,
//     https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf):
//     FP32 19.5, TF32 156, BF16 312, FP16 312 (both form factors; the
//     doubled figures are with sparsity). No FP8.
//   - H100 SXM and PCIe: NVIDIA H100 Tensor Core GPU datasheet
//     (https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet):
//     SXM FP32 67, TF32 989, BF16 1979, FP16 1979, FP8 3958; PCIe FP32 51,
//     TF32 756, BF16 1513, FP16 1513, FP8 3026 — all tensor figures "with
//     sparsity", halved here.
//   - H200 SXM: NVIDIA H200 Tensor Core GPU datasheet
//     (https://www.nvidia.com/en-us/data-center/h200/): FP32 67, TF32 989,
//     BF16 1979, FP16 1979, FP8 3958, with sparsity; halved.
//   - L4: NVIDIA L4 Tensor Core GPU datasheet
//     (https://resources.nvidia.com/en-us-data-center-overview/l4-gpu-datasheet):
//     FP32 30.3, TF32 120, BF16 242, FP16 242, FP8 485, with sparsity;
//     halved.
//   - A10: NVIDIA A10 Tensor Core GPU datasheet
//     (https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/pdf/datasheet-new/nvidia-a10-datasheet.pdf):
//     FP32 31.2, TF32 62.5, BF16 125, FP16 125 (dense; 125/250/250 with
//     sparsity). Not the A10G (a different part).
//   - T4: NVIDIA T4 Tensor Core GPU datasheet
//     (https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf):
//     FP32 8.1, mixed-precision FP16 65. No BF16 or TF32.
//
// Names are matched as nvidia-smi and torch report them ("Tesla
// V100-SXM2-32GB", "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3",
// "NVIDIA H100 PCIe", "NVIDIA H200"); a name no row matches has no MFU.
var peaks = []gpuPeak{
	{"V100 SXM2", regexp.MustCompile(`(?i)V100[- ]SXM`), map[string]float64{"fp32": 15.7, "fp16": 125}},
	{"V100 PCIe", regexp.MustCompile(`(?i)V100[- ]PCIE`), map[string]float64{"fp32": 14, "fp16": 112}},
	{"A100 SXM", regexp.MustCompile(`(?i)A100[- ]SXM`), map[string]float64{"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312}},
	{"A100 PCIe", regexp.MustCompile(`(?i)A100[- ](\d+GB )?PCIE`), map[string]float64{"fp32": 19.5, "tf32": 156, "bf16": 312, "fp16": 312}},
	{"H100 SXM", regexp.MustCompile(`(?i)H100[- ](SXM|80GB HBM3)`), map[string]float64{"fp32": 67, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5, "fp8": 1979}},
	{"H100 PCIe", regexp.MustCompile(`(?i)H100[- ]PCIE`), map[string]float64{"fp32": 51, "tf32": 378, "bf16": 756.5, "fp16": 756.5, "fp8": 1513}},
	{"H200 SXM", regexp.MustCompile(`(?i)H200( SXM| 141GB)?( HBM3e)?$`), map[string]float64{"fp32": 67, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5, "fp8": 1979}},
	{"L4", regexp.MustCompile(`(?i)^(NVIDIA )?L4$`), map[string]float64{"fp32": 30.3, "tf32": 60, "bf16": 121, "fp16": 121, "fp8": 242.5}},
	{"A10", regexp.MustCompile(`(?i)^(NVIDIA )?A10$`), map[string]float64{"fp32": 31.2, "tf32": 62.5, "bf16": 125, "fp16": 125}},
	{"T4", regexp.MustCompile(`(?i)^(Tesla |NVIDIA )?T4$`), map[string]float64{"fp32": 8.1, "fp16": 65}},
}

// PeakTFLOPS returns the dense datasheet peak of a GPU model (as
// nvidia-smi or torch name it) for dtype, and the table row it matched;
// why says what is missing when ok is false.
func PeakTFLOPS(device, dtype string) (peak float64, model string, why string, ok bool) {
	if dtype == "" {
		dtype = "bf16"
	}
	d := strings.TrimSpace(device)
	if d == "" || d == "none" {
		return 0, "", "no GPU model known (a CPU run, or a trace without device info)", false
	}
	for _, row := range peaks {
		if row.match.MatchString(d) {
			p, ok := row.peak[dtype]
			if !ok {
				return 0, row.model, fmt.Sprintf("the %s has no %s peak in its datasheet", row.model, dtype), false
			}
			return p, row.model, "", true
		}
	}
	return 0, "", fmt.Sprintf("GPU model %q is not in gpugate's peak table (analysis/flops.go)", d), false
}

// work computes the profile's WorkResult over its (trimmed) steps; nil
// when there is nothing to say: no throughput configured and no counted
// operator in the trace.
func (r *Result) work(w Work) *WorkResult {
	ops := topLevel(r.Profile.FLOPOps)
	if w.SamplesPerStep <= 0 && w.TokensPerStep <= 0 && len(ops) == 0 {
		return nil
	}
	wr := &WorkResult{SamplesPerStep: max(w.SamplesPerStep, 0), TokensPerStep: max(w.TokensPerStep, 0), Dtype: w.MFUDtype, Steps: make([]StepWork, len(r.Steps))}
	if wr.Dtype == "" {
		wr.Dtype = "bf16"
	}
	// FLOPs per step: the operators starting in the step's host window.
	perStep := make([]float64, len(r.Steps))
	counted := make([]int, len(r.Steps))
	missing := make([]int, len(r.Steps))
	fromTrace, fromShapes := false, false
	byKind := map[trace.FLOPKind]*OpWork{}
	for _, op := range ops {
		i, ok := slices.BinarySearchFunc(r.Steps, op.Start, func(s Step, t int64) int {
			switch {
			case s.HostEnd <= t:
				return -1
			case s.HostStart > t:
				return 1
			}
			return 0
		})
		if !ok || r.inLoader(op.Thread, op.Start) {
			// Outside the steps, or the data loader's own work (a
			// single-process DataLoader's transforms): not the model's.
			continue
		}
		wr.FLOPOps++
		ow := byKind[op.Kind]
		if ow == nil {
			ow = &OpWork{Name: op.Kind.String()}
			byKind[op.Kind] = ow
		}
		ow.Calls++
		if !math.IsNaN(op.FLOPs) && !math.IsInf(op.FLOPs, 0) && !math.IsInf(ow.FLOPs+op.FLOPs, 0) {
			ow.FLOPs += op.FLOPs
		}
		// An operator's own flops arg is its count where torch wrote one
		// (with_flops: mm, addmm, bmm, baddbmm, conv2d), else its shapes
		// give it (linear, convolution_backward, and everything on torch
		// 2.6's CPU profiler); both follow the same formulas.
		// NaN: unknown; ±Inf: a flops arg or shapes beyond float64 (a
		// hostile trace), as unknown: +Inf would fail encoding/json.
		if math.IsNaN(op.FLOPs) || math.IsInf(op.FLOPs, 0) {
			wr.Uncounted++
			missing[i]++
			continue
		}
		if op.FromTrace {
			fromTrace = true
		} else {
			fromShapes = true
		}
		perStep[i] += op.FLOPs
		counted[i]++
	}
	if n := float64(len(r.Steps)); n > 0 {
		for _, ow := range byKind {
			ow.Calls /= n
			ow.FLOPs /= n
			wr.Ops = append(wr.Ops, *ow)
		}
		slices.SortFunc(wr.Ops, func(a, b OpWork) int { return cmp.Or(cmp.Compare(b.FLOPs, a.FLOPs), strings.Compare(a.Name, b.Name)) })
	}
	switch {
	case fromTrace && fromShapes:
		wr.FLOPsSource = "trace+shapes"
	case fromTrace:
		wr.FLOPsSource = "trace"
	case fromShapes:
		wr.FLOPsSource = "shapes"
	}
	device := w.Device
	if len(r.Profile.Devices) > 0 && r.Profile.Devices[0].Name != "" {
		device = r.Profile.Devices[0].Name
	}
	if device != "none" {
		wr.Device = device
	}
	peak, _, why, ok := PeakTFLOPS(device, wr.Dtype)
	if ok {
		wr.PeakTFLOPS = &peak
	}
	switch {
	case wr.FLOPsSource == "":
		// The most basic reason first: without FLOPs there is no MFU
		// whatever the GPU (torch 1.13's CPU-only trace has empty args).
		wr.MFUAbsent = "no FLOPs: the trace records neither flops nor shapes of matmul/conv operators (perf.yaml flops: true records them; torch 1.13's CPU-only profiler writes none)"
	case !ok:
		wr.MFUAbsent = why
	}
	if wr.Uncounted > 0 && wr.MFUAbsent == "" {
		wr.MFUAbsent = fmt.Sprintf("%d of %d matmul/conv operators have no FLOP count (shapes or scalar arguments such as strides not recorded): steps with one have no FLOPs", wr.Uncounted, wr.FLOPOps)
	}
	for i, s := range r.Steps {
		sec := float64(s.StepTime()) / 1e9
		if sec <= 0 {
			continue
		}
		sw := &wr.Steps[i]
		if wr.SamplesPerStep > 0 {
			sw.SamplesPerSec = ptr(wr.SamplesPerStep / sec)
		}
		if wr.TokensPerStep > 0 {
			sw.TokensPerSec = ptr(wr.TokensPerStep / sec)
		}
		// A step with an operator whose FLOPs are unknown has no FLOPs:
		// a sum without it would pass a lower bound off as the count (the
		// 2021 ResNet-50 traces record shapes but no strides, so only
		// their fully connected layer could be counted).
		// A sum or rate beyond float64 (finite counts of a hostile
		// trace) is unknown too, never +Inf.
		if counted[i] > 0 && missing[i] == 0 && !math.IsInf(perStep[i], 0) {
			sw.FLOPs = ptr(perStep[i])
			if tf := perStep[i] / sec / 1e12; !math.IsInf(tf, 0) {
				sw.TFLOPS = ptr(tf)
				if wr.PeakTFLOPS != nil {
					sw.MFU = ptr(tf / *wr.PeakTFLOPS)
				}
			}
		}
	}
	return wr
}

func ptr(v float64) *float64 { return &v }

// topLevel returns the counted operators that no other counted operator on
// the same thread encloses: aten::linear runs aten::addmm (or matmul and
// mm), aten::conv2d runs aten::convolution, aten::_convolution and a
// backend's convolution; only the outermost is counted, so that nothing is
// counted twice. Nesting is read from the trace's times: an operator that
// starts and ends within another's span on its thread is inside it.
func topLevel(ops []trace.FLOPOp) []trace.FLOPOp {
	if len(ops) == 0 {
		return nil
	}
	s := slices.Clone(ops)
	slices.SortFunc(s, func(a, b trace.FLOPOp) int {
		switch {
		case a.Thread != b.Thread:
			return cmp.Compare(a.Thread, b.Thread)
		case a.Start != b.Start:
			return cmp.Compare(a.Start, b.Start)
		}
		return cmp.Compare(b.End, a.End) // the enclosing one first
	})
	out := s[:0:0]
	var open trace.FLOPOp
	has := false
	for _, op := range s {
		if has && op.Thread == open.Thread && op.Start >= open.Start && op.End <= open.End {
			continue // inside the open top-level operator
		}
		out = append(out, op)
		open, has = op, true
	}
	return out
}
