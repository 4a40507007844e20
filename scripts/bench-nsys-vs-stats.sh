#!/bin/sh
# bench-nsys-vs-stats.sh: the nsys side-by-side of issue 21. Runs
# `gpugate analyze` (all metrics) and `nsys stats` with three summaries
# (gpukernsum, cudaapisum, gpumemtimesum: what a user of nsys would run to
# see kernels, API calls and copies) on the same SQLite export, alternated,
# N times, each on a fresh copy of the export (nsys stats may add tables or
# indexes to the file it reads), and prints for each round the wall time,
# CPU time (user + system) and peak RSS of both (/usr/bin/time), and the
# ratios; then the range of each ratio over the N rounds.
#
#   scripts/bench-nsys-vs-stats.sh [EXPORT] [N] [NSYS]
#
# EXPORT defaults to the 1 M-kernel export that trace/nsys's
# BenchmarkNsysLargeLean makes in $TMPDIR/gpugate-bench (made here first
# when absent: about a minute). NSYS defaults to $GPUGATE_NSYS, then the
# nsys that scripts/setup-profilers.sh installs, then PATH. The goal
# (issue 21): wall ratio >= 1.5, CPU ratio <= 1.0 and memory ratio <= 2.0
# on every round, on a quiet machine.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export_=${1:-${TMPDIR:-/tmp}/gpugate-bench/nsys-h100-x250.sqlite}
n=${2:-5}
nsys=${3:-${GPUGATE_NSYS:-}}
if [ -z "$nsys" ]; then
	nsys=/opt/gpugate/nsight-systems/usr/lib/nsight-systems/bin/nsys
	[ -x "$nsys" ] || nsys=$(command -v nsys) || { echo "no nsys: give its path as the third argument" >&2; exit 2; }
fi
if [ ! -f "$export_" ]; then
	case "$export_" in
	*/gpugate-bench/nsys-h100-x*.sqlite) ;;
	*) echo "$export_ does not exist" >&2; exit 2 ;;
	esac
	copies=${export_##*-x}
	copies=${copies%.sqlite}
	echo "making $export_ ($copies copies of the H100 fixture)"
	TMPDIR=$(dirname "$(dirname "$export_")") GPUGATE_BENCH_COPIES=$copies \
		go test ./trace/nsys -run '^$' -bench BenchmarkNsysLargeLean -benchtime 1x -count 1 >/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=${GPUGATE:-$tmp/gpugate}
[ -x "$bin" ] || go build -o "$bin" ./cmd/gpugate
echo "export $export_ ($(wc -c <"$export_") bytes), $("$nsys" --version 2>&1 | tail -1), GOMAXPROCS=${GOMAXPROCS:-default}, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
fmt='%e %U %S %M'
ratios=$tmp/ratios
for i in $(seq "$n"); do
	# A fresh copy for each tool, read once beforehand so that both find it
	# in the page cache.
	cp "$export_" "$tmp/g.sqlite"
	cat "$tmp/g.sqlite" >/dev/null
	g=$( { /usr/bin/time -f "$fmt" "$bin" analyze -format json "$tmp/g.sqlite" >/dev/null; } 2>&1 | tail -1)
	rm -f "$tmp/g.sqlite"
	cp "$export_" "$tmp/s.sqlite"
	cat "$tmp/s.sqlite" >/dev/null
	s=$( { /usr/bin/time -f "$fmt" "$nsys" stats --report gpukernsum,cudaapisum,gpumemtimesum "$tmp/s.sqlite" >"$tmp/stats.out"; } 2>&1 | tail -1)
	grep -q . "$tmp/stats.out" || { echo "nsys stats printed nothing" >&2; exit 2; }
	rm -f "$tmp/s.sqlite"
	echo "$g $s" | awk -v i="$i" -v out="$ratios" '{
		gc = $2 + $3; sc = $6 + $7
		printf "round %d: gpugate %.2f s wall %.2f s cpu %d MB, nsys stats %.2f s wall %.2f s cpu %d MB: %.2fx the speed, %.2fx the cpu, %.2fx the memory\n",
			i, $1, gc, $4/1024, $5, sc, $8/1024, $5/$1, gc/sc, $4/$8
		printf "%f %f %f\n", $5/$1, gc/sc, $4/$8 >> out }'
done
awk '{ if (NR == 1 || $1 < wlo) wlo = $1; if ($1 > whi) whi = $1
	if (NR == 1 || $2 < clo) clo = $2; if ($2 > chi) chi = $2
	if (NR == 1 || $3 < mlo) mlo = $3; if ($3 > mhi) mhi = $3
	if ($1 < 1.5 || $2 > 1.0 || $3 > 2.0) miss++ }
	END { printf "over %d rounds: %.2fx to %.2fx the speed of nsys stats, %.2fx to %.2fx its cpu time, %.2fx to %.2fx its peak memory; goal (>= 1.5x speed, <= 1.0x cpu, <= 2.0x memory) %s\n",
		NR, wlo, whi, clo, chi, mlo, mhi, (miss ? "missed on " miss " rounds" : "met on every round") }' "$ratios"
