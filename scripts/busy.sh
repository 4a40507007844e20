#!/usr/bin/env bash
# busy.sh: run a command on a busy machine. Two CPU-bound processes (a
# shell loop each, at normal priority) run beside the command, as other
# jobs do on a shared CI host or a laptop, and are stopped when the command
# ends, fails or is interrupted. The exit status is the command's.
#
#   bash scripts/busy.sh bash scripts/test.sh
#   BUSY_HOGS=4 bash scripts/busy.sh go test ./cmd/gpugate -run TestScript/run_demo_nsys
#
# Tests whose outcome rests on timing must pass under it (STYLE.md §8):
# a same-commit comparison is pass or inconclusive, a slowdown regression
# or inconclusive with an interval that holds the slowdown (reaching past
# the allowance), or no time verdict with its reason; a recording whose
# every run was disturbed exits 3.
set -uo pipefail
if [ $# -eq 0 ]; then
	echo "usage: bash scripts/busy.sh COMMAND [ARG...]" >&2
	exit 2
fi
n=${BUSY_HOGS:-2}
case $n in '' | *[!0-9]*) echo "busy.sh: BUSY_HOGS must be a number, not '$n'" >&2; exit 2 ;; esac
hogs=()
stop() {
	local p
	for p in "${hogs[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${hogs[@]}"; do
		wait "$p" 2>/dev/null
	done
	hogs=()
}
trap stop EXIT
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
for ((i = 0; i < n; i++)); do
	# A busy loop in its own process, not a child of the command: the
	# command cannot wait for it, and killing it stops it.
	bash -c 'while :; do :; done' &
	hogs+=($!)
done
echo "busy.sh: $n CPU-bound process(es) running (pids ${hogs[*]}) beside: $*" >&2
# In the foreground: Ctrl-C reaches the command (a background job of a
# script would ignore SIGINT), and the traps then stop the hogs.
"$@"
rc=$?
stop
echo "busy.sh: the command exited $rc; CPU-bound processes stopped" >&2
exit $rc
