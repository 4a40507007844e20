#!/bin/sh
# bench-kineto-vs-jsonload.sh: the Kineto side-by-side of issue 14. Runs
# `gpugate analyze` (all metrics) and Python's json.load on the same trace,
# interleaved, N times, and prints for each run the wall time, CPU time
# (user + system) and peak RSS of both (/usr/bin/time), and the ratios;
# then the range of the wall-time ratio over the N runs.
#
#   scripts/bench-kineto-vs-jsonload.sh [TRACE] [N] [PYTHON]
#
# TRACE defaults to the benchmark trace that analysis's BenchmarkKinetoLarge
# generates in $TMPDIR/gpugate-bench (run it once first). GOMAXPROCS is
# passed through, so GOMAXPROCS=1 measures the single-core path. The wall
# ratio is the goal's measure; the CPU ratio is less disturbed by other
# work on the machine (json.load uses one core, gpugate all it is given).
set -eu
trace=${1:-${TMPDIR:-/tmp}/gpugate-bench/kineto-a100-x20.json}
n=${2:-5}
py=${3:-python3}
# The interpreter itself, not a launcher such as a pyenv shim, whose own
# start-up would count as json.load's time.
py=$("$py" -c 'import sys; print(sys.executable)')
bin=${GPUGATE:-$(mktemp -d)/gpugate}
[ -x "$bin" ] || go build -o "$bin" ./cmd/gpugate
echo "trace $trace ($(wc -c <"$trace") bytes), $py ($($py --version 2>&1)), GOMAXPROCS=${GOMAXPROCS:-default}, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
fmt='%e %U %S %M'
ratios=$(mktemp)
for i in $(seq "$n"); do
	g=$( { /usr/bin/time -f "$fmt" "$bin" analyze -format json "$trace" >/dev/null; } 2>&1 | tail -1)
	p=$( { /usr/bin/time -f "$fmt" "$py" -c 'import json, sys; json.load(open(sys.argv[1]))' "$trace"; } 2>&1 | tail -1)
	echo "$g $p" | awk -v i="$i" -v out="$ratios" '{
		gc = $2 + $3; pc = $6 + $7
		printf "run %d: gpugate %.2f s wall %.2f s cpu %d MB, json.load %.2f s wall %.2f s cpu %d MB: %.1fx faster (cpu %.1fx), %.1f%% of the memory\n",
			i, $1, gc, $4/1024, $5, pc, $8/1024, $5/$1, pc/gc, 100*$4/$8
		printf "%f %f\n", $5/$1, 100*$4/$8 >> out }'
done
awk '{ if (NR == 1 || $1 < lo) lo = $1; if (NR == 1 || $1 > hi) hi = $1; if ($2 > mem) mem = $2 }
	END { printf "over %d runs: %.1fx to %.1fx faster, at most %.1f%% of the memory\n", NR, lo, hi, mem }' "$ratios"
rm -f "$ratios"
