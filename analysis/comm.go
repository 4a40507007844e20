package analysis

import (
	"regexp"
	"strings"
)

// CommKernel is one family of communication kernels that the default
// communication pattern recognizes: the library, the part of a kernel's
// name that identifies it, and a real kernel name with where it comes from.
// docs/metrics.md prints the same table (TestCommTableDocumented).
type CommKernel struct {
	Library string
	// Pattern is a regular expression matched anywhere in the kernel's
	// name as the trace records it (Kineto and nsys keep the demangled
	// name with its template and parameter types).
	Pattern string
	Example string // a kernel name the pattern matches
	Source  string // where the name was read
}

// CommKernels is the table behind DefaultCommPattern. A kernel counts as
// communication when it moves data between GPUs, whatever library launched
// it: matching "nccl" alone missed DeepEP's expert-parallel kernels and the
// NVLink SHARP all-reduce of vLLM and torch symmetric memory (73 kernels in
// the B200 fixture). Patterns are specific enough not to catch compute
// kernels: cub's DeviceReduceByKeyKernel<DispatchReduceByKey…> and
// softmax "reduce" kernels in the fixtures match none
// (TestDefaultCommPatternOnFixtures).
var CommKernels = []CommKernel{
	{"NCCL", `(?i)nccl`, "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "B200 fixture (kineto/tracelens-b200-eager-nosteps); older NCCL: ncclKernel_AllReduce_RING_LL_Sum_float"},
	{"RCCL (ROCm)", `(?i)rccl|msccl`, "mscclKernel_Sum_hip_bfloat16_Simple_false (RCCL's MSCCL executor)", "ROCm/rccl src/device/msccl_kernel.h (MSCCL_KERNEL_ENTRY_NAME); RCCL's own collectives keep NCCL's ncclDevKernel_ names"},
	{"NVSHMEM", `(?i)nvshmem`, "nvshmemi_… kernels and kernels taking nvshmem team/heap arguments", "NVSHMEM device API; DeepEP's internode kernels call nvshmemi_ibgda_put_nbi_warp"},
	{"DeepEP", `deep_ep::|(^|[^A-Za-z0-9_])ep::(internode|intranode)`, "void deep_ep::internode::dispatch<…>(…), deep_ep::intranode::combine<…>, deep_ep::internode_ll::dispatch<…>", "deepseek-ai/DeepEP csrc/kernels/internode.cu, intranode.cu, internode_ll.cu (namespace deep_ep::internode / intranode / internode_ll)"},
	{"NVLink SHARP / multimem (torch symmetric memory, vLLM)", `multimem_`, "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(…)", "73 in the B200 fixture; pytorch torch/csrc/distributed/c10d/symm_mem/CUDASymmetricMemoryOps.cu"},
	{"Symmetric-memory one/two-shot all-reduce (torch, TensorRT-LLM, FBGEMM)", `(?i)(one|two)_?shot_?all_?reduce`, "one_shot_all_reduce_kernel, two_shot_all_reduce_kernel; tensorrt_llm::kernels::oneShotAllReduceKernel<…>", "pytorch CUDASymmetricMemoryOps.cu; NVIDIA/TensorRT-LLM cpp/tensorrt_llm/kernels/customAllReduceKernels.cu"},
	{"vLLM custom all-reduce (and AMD aiter's port)", `cross_device_reduce`, "void vllm::cross_device_reduce_1stage<…>(…), aiter::cross_device_reduce_2stage<bf16,8,false>", "vllm-project/vllm csrc/custom_all_reduce.cuh"},
	{"TensorRT-LLM all-reduce fusion", `(?i)all_?reduce_?fusion`, "allreduce_fusion_kernel_oneshot_lamport<…>, allreduce_fusion_kernel_twoshot_sync<…>", "NVIDIA/TensorRT-LLM cpp/tensorrt_llm/kernels/communicationKernels/allReduceFusionKernels (also in FlashInfer's port)"},
	{"MSCCL++", `mscclpp`, "void allreduce7<(Op)0, __half>(__half*, …, mscclpp::DeviceHandle<mscclpp::MemoryChannel>*, …)", "microsoft/mscclpp apps/nccl/src/allreduce.hpp (kernel names are plain, the mscclpp:: parameter types identify them)"},
}

// commPattern joins the table's patterns into one expression.
func commPattern() *regexp.Regexp {
	parts := make([]string, len(CommKernels))
	for i, k := range CommKernels {
		parts[i] = "(?:" + k.Pattern + ")"
	}
	return regexp.MustCompile(strings.Join(parts, "|"))
}
