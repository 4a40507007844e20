#!/bin/sh
# bench-kineto-vs-jsonload.sh: the Kineto side-by-side of issue 14. Runs
# `gpugate analyze` (all metrics) and Python's json.load on the same trace,
# interleaved, N times, and prints wall time, peak RSS and the ratios.
#
#   scripts/bench-kineto-vs-jsonload.sh [TRACE] [N] [PYTHON]
#
# TRACE defaults to the benchmark trace that analysis's BenchmarkKinetoLarge
# generates in $TMPDIR/gpugate-bench (run it once first). GOMAXPROCS is
# passed through, so GOMAXPROCS=1 measures the single-core path.
set -eu
trace=${1:-${TMPDIR:-/tmp}/gpugate-bench/kineto-a100-x20.json}
n=${2:-5}
py=${3:-python3}
bin=${GPUGATE:-$(mktemp -d)/gpugate}
[ -x "$bin" ] || go build -o "$bin" ./cmd/gpugate
echo "trace $trace ($(wc -c <"$trace") bytes), $py ($($py --version 2>&1)), GOMAXPROCS=${GOMAXPROCS:-default}"
for i in $(seq "$n"); do
	g=$( { /usr/bin/time -f '%e %M' "$bin" analyze -format json "$trace" >/dev/null; } 2>&1 | tail -1)
	p=$( { /usr/bin/time -f '%e %M' "$py" -c 'import json, sys; json.load(open(sys.argv[1]))' "$trace"; } 2>&1 | tail -1)
	echo "$g $p" | awk -v i="$i" '{printf "run %d: gpugate %.2f s %d MB, json.load %.2f s %d MB: %.1fx faster, %.1f%% of the memory\n", i, $1, $2/1024, $3, $4/1024, $3/$1, 100*$2/$4}'
done
