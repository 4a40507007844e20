#!/bin/sh
# check-nsys-output.sh: the output-identity check of issue 21's nsys speed
# work. Builds `gpugate` at BASE (a git ref, default HEAD~1) and from the
# working tree, runs `gpugate analyze` with -format json and -format text on
# every nsys export it can find, and compares the outputs byte for byte:
#
#   - every *.sqlite under ../shared/fixtures/nsys-sqlite,
#   - every *.nsys-rep under ../shared/fixtures/nsys-rep that the installed
#     nsys can read (both builds export it the same way; a report too new
#     for it is an error for both, and the errors are compared),
#   - the hand-made exports trace/nsys/testdata/*.sql (built with the
#     sqlite3 CLI when it is installed),
#   - the 1 M-kernel benchmark export, when it exists (BENCH_EXPORT, default
#     $TMPDIR/gpugate-bench/nsys-h100-x250.sqlite; scripts/bench-nsys-vs-stats.sh
#     makes it).
#
#   scripts/check-nsys-output.sh [BASE]
#
# Exit status 0 when every output is identical, 1 when one differs (the
# diff is printed), 2 on trouble.
set -eu
base=${1:-HEAD~1}
root=$(git rev-parse --show-toplevel)
cd "$root"
fixtures=${FIXTURES:-$root/../shared/fixtures}
bench=${BENCH_EXPORT:-${TMPDIR:-/tmp}/gpugate-bench/nsys-h100-x250.sqlite}
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

git worktree add --detach "$tmp/base" "$base" >/dev/null 2>&1 || { echo "cannot check out $base" >&2; exit 2; }
(cd "$tmp/base" && go build -o "$tmp/gpugate-base" ./cmd/gpugate) || exit 2
go build -o "$tmp/gpugate-new" ./cmd/gpugate || exit 2

set --
for f in "$fixtures"/nsys-sqlite/*/*.sqlite "$fixtures"/nsys-rep/*/*.nsys-rep; do
	[ -f "$f" ] && set -- "$@" "$f"
done
if command -v sqlite3 >/dev/null; then
	for s in trace/nsys/testdata/*.sql; do
		db="$tmp/$(basename "$s" .sql).sqlite"
		sqlite3 "$db" <"$s" || exit 2
		set -- "$@" "$db"
	done
else
	echo "sqlite3 not installed: trace/nsys/testdata/*.sql left out"
fi
[ -f "$bench" ] && set -- "$@" "$bench"
[ $# -gt 0 ] || { echo "no nsys exports found (FIXTURES=$fixtures)" >&2; exit 2; }

status=0
for f in "$@"; do
	for fmt in json text; do
		# Output and exit status; the file's path is the same for both.
		"$tmp/gpugate-base" analyze -format "$fmt" "$f" >"$tmp/base.out" 2>&1 && rb=0 || rb=$?
		"$tmp/gpugate-new" analyze -format "$fmt" "$f" >"$tmp/new.out" 2>&1 && rn=0 || rn=$?
		if [ "$rb" = "$rn" ] && cmp -s "$tmp/base.out" "$tmp/new.out"; then
			echo "same  $fmt exit $rn $(sha256sum <"$tmp/new.out" | cut -c1-16) $f"
		else
			echo "DIFF  $fmt exit $rb -> $rn $f"
			diff "$tmp/base.out" "$tmp/new.out" | head -40
			status=1
		fi
	done
done
exit $status
