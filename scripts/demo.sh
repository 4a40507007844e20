#!/usr/bin/env bash
# demo.sh: set up a fresh Debian 12 machine and run gpugate's main job on
# the built-in demo, a real PyTorch training job (examples/demo/train.py):
# record a baseline, then run the slow-loader, host-sync and leak variants and
# show the gate failing with the reason. The training script is never
# modified: the profiler is injected from outside.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup-profilers.sh
export PATH=$PATH:/usr/local/go/bin
export GPUGATE_NSYS=${GPUGATE_NSYS:-/opt/gpugate/nsight-systems/usr/lib/nsight-systems/bin/nsys}
go build -o bin/gpugate ./cmd/gpugate

db=.gpugate/demo-baseline.db
rm -f "$db" "$db-wal" "$db-shm"
cfg=examples/demo/perf.yaml

echo "== 1. record a baseline of the healthy demo (on main): 5 runs, whose"
echo "   spread is what one candidate run is judged against"
GPUGATE_BRANCH=main bin/gpugate run -config $cfg -db $db -record-baseline
GPUGATE_BRANCH=main bin/gpugate baseline refresh -config $cfg -db $db -runs 4

echo
echo "== 2. the same code again: the gate passes (on a noisy machine the"
echo "   prediction interval of one run against 5 may reach past the allowance:"
echo "   then it says inconclusive, exit 3, and how many runs would settle it;"
echo "   never a regression)"
status=0
bin/gpugate run -config $cfg -db $db || status=$?
echo "gpugate run (again): exit $status"
case $status in
0 | 3) ;;
1) echo "demo: a healthy rerun was called a regression" >&2; exit 1 ;;
*) echo "demo: the healthy rerun failed (exit $status)" >&2; exit 1 ;;
esac

for variant in slow-loader host-sync leak; do
	echo
	echo "== the $variant variant: the gate fails and says why"
	status=0
	GPUGATE_DEMO=$variant bin/gpugate run -config $cfg -db $db || status=$?
	echo "gpugate run ($variant): exit $status"
	# A slowdown is a regression (1), or, on a machine too busy to tell it
	# from noise, inconclusive (3); a pass (0) or trouble (2) is wrong.
	case $status in
	1 | 3) ;;
	*) echo "demo: the $variant variant exited $status: want 1 (regression) or 3 (inconclusive)" >&2; exit 1 ;;
	esac
done
