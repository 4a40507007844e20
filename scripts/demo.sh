#!/usr/bin/env bash
# demo.sh: set up a fresh Debian 12 machine and run gpugate on its built-in
# demo, a real PyTorch training job (examples/demo/train.py) on the CPU.
#
# It profiles the healthy demo and its slow-loader and host-sync variants
# with torch.profiler, injected from outside (runner/inject/torch: the
# training script is not modified), and analyzes each trace.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup-profilers.sh
export PATH=$PATH:/usr/local/go/bin
go build -o bin/gpugate ./cmd/gpugate

out=.gpugate/demo
mkdir -p "$out"
# The same allocator settings for every run: unpinned glibc malloc
# thresholds made unprofiled CPU runs 24% slower than profiled ones.
export GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=134217728
for variant in baseline slow-loader host-sync; do
	demo=$variant
	[ "$variant" = baseline ] && demo=
	echo "== $variant: profiling examples/demo/train.py with torch.profiler"
	GPUGATE_DEMO=$demo PYTHONPATH=runner/inject/torch GPUGATE_TORCH_PROFILE=1 \
		GPUGATE_TRACE_OUT="$out/$variant.json" GPUGATE_SCHEDULE=1,2,20 \
		/usr/bin/python3 examples/demo/train.py --steps 30 --log-every 10
	echo "== $variant: gpugate analyze"
	bin/gpugate analyze "$out/$variant.json"
	echo
done
echo "== the gate: baseline vs each variant (exit 1 = regression)"
for variant in slow-loader host-sync; do
	status=0
	bin/gpugate compare "$out/baseline.json" "$out/$variant.json" || status=$?
	echo "gpugate compare baseline -> $variant: exit $status"
	echo
done
