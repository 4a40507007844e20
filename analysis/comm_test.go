package analysis

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpugate/gpugate/internal/fixtures"
	"github.com/gpugate/gpugate/trace"
	"github.com/gpugate/gpugate/trace/kineto"
)

// TestDefaultCommPattern checks the default pattern on kernel names read
// from real traces and from the libraries' sources (comm.go cites them),
// and on compute kernels whose names hold words like reduce, dispatch or
// gemm that a loose pattern would catch.
func TestDefaultCommPattern(t *testing.T) {
	for _, name := range []string{
		"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
		"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
		"ncclDevKernel_Generic_1",
		"mscclKernel_Sum_hip_bfloat16_Simple_false",
		"void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long, unsigned int**, unsigned long, unsigned long)",
		"void c10d::symmetric_memory::one_shot_all_reduce_kernel<float, 16, 8>(float**, float*, unsigned long, unsigned long, unsigned int**, unsigned long, unsigned long)",
		"void c10d::symmetric_memory::two_shot_all_reduce_kernel<c10::BFloat16, 16, 8>(…)",
		"void tensorrt_llm::kernels::oneShotAllReduceKernel<__nv_bfloat16, 8>(tensorrt_llm::kernels::AllReduceParams)",
		"void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)",
		"aiter::cross_device_reduce_2stage<bf16,8,false>",
		"void deep_ep::internode::dispatch<false, 2, 1, 4, 32, 3, 2>(int4*, float*, …)",
		"void deep_ep::intranode::combine<__nv_bfloat16, 8, 768>(…)",
		"void deep_ep::internode_ll::dispatch<false, 3, 7168>(…)",
		"void ep::internode::combine<…>(…)",
		"nvshmemi_barrier_all_kernel",
		"void allreduce7<(Op)0, __half>(__half*, __half*, __half*, mscclpp::DeviceHandle<mscclpp::MemoryChannel>*, unsigned long, unsigned long, int, int, int, unsigned long, unsigned int*, unsigned int)",
		"void tensorrt_llm::kernels::ar_fusion::allreduce_fusion_kernel_oneshot_lamport<…>(…)",
	} {
		if !DefaultCommPattern.MatchString(name) {
			t.Errorf("communication kernel %q not recognized", name)
		}
	}
	for _, name := range []string{
		"void cub::DeviceReduceByKeyKernel<cub::DispatchReduceByKey<long*, long*, cub::ConstantInputIterator<int, int>, int*, int*, cub::Equality, cub::Sum, int>::PtxReduceByKeyPolicy>",
		"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4>)",
		"void deep_gemm::fp8_gemm_kernel<128u, 128u, 128u>(…)",
		"moe_align_block_size_kernel",
		"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float*, int)",
		"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
		"Memset (Device)",
	} {
		if DefaultCommPattern.MatchString(name) {
			t.Errorf("compute kernel %q taken for communication", name)
		}
	}
}

// TestDefaultCommPatternOnFixtures reads every kernel name of the Kineto
// fixtures: the default pattern takes exactly the NCCL kernels and the 73
// multimem all-reduces of the B200 capture, no compute kernel.
func TestDefaultCommPatternOnFixtures(t *testing.T) {
	root := fixtures.Path(t, "kineto")
	var paths []string
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			switch p := dir + "/" + e.Name(); {
			case e.IsDir():
				walk(p)
			case strings.HasSuffix(p, ".json.gz") || strings.HasSuffix(p, ".json"):
				paths = append(paths, p)
			}
		}
	}
	walk(root)
	multimem := 0
	for _, path := range paths {
		p, err := kineto.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		match := p.Names.Match(DefaultCommPattern)
		for _, op := range p.GPU {
			if op.Kind != trace.Kernel {
				continue
			}
			name := p.Names.String(op.Name)
			want := strings.Contains(strings.ToLower(name), "nccl") || strings.Contains(name, "multimem_all_reduce_kernel")
			if match[op.Name] != want {
				t.Errorf("%s: kernel %q: communication %v, want %v", path, name, match[op.Name], want)
			}
			if strings.Contains(name, "multimem_") {
				multimem++
			}
		}
	}
	if multimem != 73 {
		t.Errorf("%d multimem kernels in the fixtures, want the B200 capture's 73", multimem)
	}
}

// TestCommB200 checks that the B200 capture's NVLink SHARP all-reduces
// count as communication. The union of its 74 communication kernels (73
// multimem_all_reduce_kernel, 1 ncclDevKernel_AllGather) over the whole
// capture is 2,141,501 ns (plain json, ts and dur rounded to ns); the one
// step (the execute_context_1 annotation, infer.go) holds all of them.
func TestCommB200(t *testing.T) {
	p, err := kineto.ReadFile(fixtures.Path(t, "kineto/tracelens-b200-eager-nosteps/eager_trace.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	r := Analyze(p, Options{KeepEdges: true})
	var comm int64
	for _, s := range r.Steps {
		comm += s.CommTime
	}
	if comm != 2141501 {
		t.Errorf("comm_time over the steps %d ns, want 2141501", comm)
	}
	if slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "comm_pattern") }) {
		t.Errorf("warns about the communication pattern although kernels match: %q", r.Warnings)
	}
	// With a pattern that matches nothing, the world size of 8 makes it
	// warn and name the option.
	r = Analyze(p, Options{CommPattern: regexpNever})
	if !slices.ContainsFunc(r.Warnings, func(w string) bool {
		return strings.Contains(w, "world size 8") && strings.Contains(w, "comm_pattern") && strings.Contains(w, "-comm-pattern")
	}) {
		t.Errorf("no warning naming comm_pattern for a world-size-8 trace without communication: %q", r.Warnings)
	}
}

// TestCommTableDocumented keeps docs/metrics.md's table in step with
// CommKernels.
func TestCommTableDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range CommKernels {
		// Table cells escape the pattern's | as \|.
		if !strings.Contains(string(doc), "`"+strings.ReplaceAll(k.Pattern, "|", `\|`)+"`") {
			t.Errorf("docs/metrics.md does not list %s's pattern `%s`", k.Library, k.Pattern)
		}
	}
}

var regexpNever = regexp.MustCompile(`a\bb`) // matches no string
