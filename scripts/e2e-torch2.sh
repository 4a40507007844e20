#!/usr/bin/env bash
# e2e-torch2.sh: gpugate's main job on the built-in demo under PyTorch 2.x
# (Debian 13's python3-torch 2.6, built with Kineto, in the chroot that
# scripts/setup-torch2.sh makes), as every user runs it: the modern trace
# format and the injection's torch >= 2.0 path (public optimizer step
# hooks). The demo's own perf.yaml is used with its python replaced by the
# wrapper: record a baseline, no regression on a rerun, fail slow-loader and
# host-sync for their reasons, and leak on peak memory with memory-growth. cmd/gpugate's script tests do the same under
# Debian 12's torch 1.13.
#
# Without the wrapper it skips, except in CI (CI=true), where it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export PATH=$PATH:/usr/local/go/bin

PY=${GPUGATE_TORCH2_BIN:-/opt/gpugate/bin/python3-torch2}
log() { printf 'e2e-torch2: %s\n' "$*" >&2; }
if [ ! -x "$PY" ]; then
	if [ "${CI:-}" = true ]; then
		log "FAIL: $PY missing: scripts/setup-torch2.sh did not run"; exit 1
	fi
	log "skipped: $PY missing (scripts/setup-torch2.sh makes it)"; exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/gpugate" ./cmd/gpugate
cp examples/demo/train.py "$work/"
sed "s#\"/usr/bin/python3\"#\"$PY\"#" examples/demo/perf.yaml >"$work/perf.yaml"
grep -q "\"$PY\"" "$work/perf.yaml" || { log "FAIL: examples/demo/perf.yaml has no \"/usr/bin/python3\" command to replace"; exit 1; }
cd "$work"
export GPUGATE_BRANCH=main

fail=0 slow_said=
# run NAME WANT_EXIT [GPUGATE_DEMO]: one gpugate run; its output in NAME.out/.err
run() {
	local name=$1 want=$2 variant=${3:-} t0 rc=0
	t0=$(date +%s.%N)
	GPUGATE_DEMO=$variant ./gpugate run -config perf.yaml -db b.db -out "$name" ${RECORD:+-record-baseline} \
		>"$name.out" 2>"$name.err" || rc=$?
	printf 'e2e-torch2: %-9s exit %d (want %s) in %.1f s; %s\n' "$name" "$rc" "$want" \
		"$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')" "$(grep -ho 'profiling overhead [^;]*' "$name.err" | head -1)" >&2
	if ! [[ "$rc" =~ ^($want)$ ]]; then
		log "FAIL: $name exited $rc, want $want"; tail -n 20 "$name.out" "$name.err" >&2; fail=1
	fi
}
# honest NAME same|slower: a timing outcome is one of the honest ones, and
# its step_time row (the numbers that show why) is logged. The same code:
# pass or inconclusive, never a regression. A slowdown: a regression, or
# inconclusive with an interval that reaches past the allowance (it holds
# the true slowdown, however wide the baseline's spread makes it), or with
# no time verdict because every run of a side ran on a busy host; never a
# pass, never an interval that excludes the slowdown.
honest() {
	local name=$1 how=$2 r
	r=$(grep -E '^\*step_time ' "$name.out" | head -n 1 || true)
	log "$name: $r"
	case $how in
	same)
		if ! [[ $r =~ \ (pass|inconclusive)\ \( ]]; then log "FAIL: $name: the same code, yet: $r"; fail=1; fi ;;
	slower)
		if [[ $r =~ \ regression\ \( ]]; then
			slow_said="a regression"
		elif [[ $r =~ \[[^,]*,\ ([^]]+)\][[:space:]]+±([0-9.]+)%.*\ inconclusive\ \( ]] &&
			awk -v hi="${BASH_REMATCH[1]}" -v a="${BASH_REMATCH[2]}" 'BEGIN { sub(/^\+/, "", hi); exit !(hi ~ /Inf|∞/ || hi + 0 > a + 0) }'; then
			log "$name: inconclusive, honestly: the interval reaches past the allowance, so it holds the slowdown"
			slow_said="inconclusive, its interval holding the slowdown"
		elif [[ $r =~ \ inconclusive\ \( ]] && grep -q '^  step_time inconclusive: no time verdict: every \(candidate\|baseline\) run was disturbed' "$name.out"; then
			# Beside other work (scripts/busy.sh) every run is disturbed:
			# no time verdict, by design (docs/verdicts.md §5c).
			log "$name: inconclusive, honestly: no time verdict, the host was busy: $(grep -o 'every candidate run was disturbed ([^;)]*' "$name.out" | head -n 1)"
			slow_said="without a time verdict (a busy host)"
		else
			log "FAIL: $name: a slowdown, yet: $r"; fail=1
		fi ;;
	esac
}
expect() { # expect NAME FILE REGEXP
	if ! grep -Eq -- "$3" "$1.$2"; then
		log "FAIL: $1.$2 lacks /$3/"; tail -n 20 "$1.$2" >&2; fail=1
	fi
}

# A recording on a busy host, where every run is disturbed, exits 3 and
# stores the run all the same (docs/verdicts.md §5c).
RECORD=1 run baseline '0|3'
expect baseline err 'recorded 1 run'
expect baseline out 'ProfilerStep'
# The modern (Kineto) trace format, not the legacy autograd array.
head -c 4096 baseline/trace-0.json | grep -q '"traceEvents"' || { log "FAIL: baseline/trace-0.json is not a Kineto trace"; fail=1; }
grep -q 'register_optimizer_step_post_hook' baseline/job.log || { log "FAIL: the injection did not take its torch >= 2.0 path"; fail=1; }

# Two more baseline runs: one run judges nothing (issue 19: the run is the
# unit, and one candidate run is judged by the baseline runs' spread).
RECORD=1 run baseline2 '0|3'
expect baseline2 err 'recorded 1 run'
RECORD=1 run baseline3 '0|3'
expect baseline3 err 'recorded 1 run'

# A healthy rerun is never a regression. Against 3 baseline runs of a busy
# minute the prediction interval can reach past the allowance: then the
# verdict is, honestly, inconclusive (exit 3); a regression is not.
run again '0|3'
expect again out '^gpugate: (PASS|INCONCLUSIVE)'
if grep -q '^gpugate: REGRESSION' again.out; then log "FAIL: a healthy rerun was called a regression"; fail=1; fi
honest again same

# The slow loader: a regression; on a busy machine whose 3 baseline runs
# spread too far, honestly inconclusive with an interval that holds it.
run slow '1|3' slow-loader
expect slow out '^gpugate: (REGRESSION|INCONCLUSIVE)'
honest slow slower
expect slow out 'data-loader-bound'

run sync 1 host-sync
expect sync out 'sync_calls'
expect sync out 'host-sync'

# The leak fails on peak memory with memory-growth, from the trace's own
# allocator events (profile_memory, on by default from torch 2): the
# baseline's and the leak's memory both come from the trace.
run leak 1 leak
expect leak out '\*peak_memory .* regression'
expect leak out 'memory-growth'
expect leak out 'allocator events'
grep -q '"source": "trace"' leak/analysis.json || { log "FAIL: leak/analysis.json: peak memory not from the trace's allocator events"; fail=1; }
grep -q '"max_rss_bytes"' leak/analysis.json || { log "FAIL: leak/analysis.json: no job peak RSS"; fail=1; }

# FLOPs (perf.yaml flops: true): torch 2.6 on the CPU records shapes but no
# flops args, so gpugate computes them from the shapes. Every measured step
# of the healthy demo runs the same layers at batch 32, worked out by hand
# in trace/kineto/shapes_test.go (TestFLOPOpsTorch26): forward 105,119,744
# + backward 181,927,936 = 287,047,680 FLOPs per step. samples_per_step 32
# gives samples/s beside step time.
sed 's/^    repeat: 1$/    repeat: 1\n    flops: true\n    samples_per_step: 32/' perf.yaml >perf-flops.yaml
grep -q '^    flops: true$' perf-flops.yaml || { log "FAIL: could not add flops: true to perf.yaml"; fail=1; }
rc=0
./gpugate run -config perf-flops.yaml -db flops.db -out flops -record-baseline >flops.out 2>flops.err || rc=$?
# A recording whose every run was disturbed (a busy machine: scripts/busy.sh)
# exits 3 and stores its runs all the same (docs/verdicts.md §5c); what is
# checked here is the FLOPs, which the host's load does not move.
log "flops   exit $rc (want 0|3); $(grep -ho 'profiling overhead [^;]*' flops.err | head -1)"
if [ "$rc" != 0 ] && [ "$rc" != 3 ]; then log "FAIL: the flops run exited $rc"; tail -n 20 flops.out flops.err >&2; fail=1; fi
python3 - flops/analysis.json <<'PY' || fail=1
import json, sys
p = json.load(open(sys.argv[1]))["profiles"][0]
w = p["work"] or {}
flops = [s["flops"] for s in w.get("steps", [])]
sps = [s["samples_per_s"] for s in w.get("steps", [])]
ok = len(flops) >= 10 and all(f == 287047680 for f in flops) and all(x and x > 0 for x in sps) and w.get("flops_source") == "shapes"
print(f"e2e-torch2: flops    {len(flops)} steps, FLOPs per step {sorted(set(flops))} (hand count 287047680), source {w.get('flops_source')}, "
      f"{w.get('flop_ops')} top-level ops, samples/s {min(sps or [0]):.0f}..{max(sps or [0]):.0f}", file=sys.stderr)
if not ok:
    print("e2e-torch2: FAIL: the demo's FLOPs per step are not the hand count", file=sys.stderr)
    sys.exit(1)
PY
expect flops out 'samples_per_s'
expect flops out 'gflop_per_step +0.287'

# Multi-process jobs: a 2-rank DDP loop started by torchrun, a plain
# launcher and torch.multiprocessing.spawn (its own script, same torch).
bash "$root/scripts/e2e-ddp.sh" "$PY" || { log "FAIL: scripts/e2e-ddp.sh"; fail=1; }

if [ "$fail" != 0 ]; then
	exit 1
fi
log "OK: torch $("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null) through gpugate: 3 baseline runs stored, rerun no regression, slow-loader $slow_said, host-sync and leak fail for their reasons, the demo's FLOPs per step are the hand count"
