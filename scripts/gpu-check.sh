#!/usr/bin/env bash
# gpu-check.sh OUTDIR: a one-shot check of gpugate against real CUDA
# processes, for a machine with an NVIDIA GPU, PyTorch 2.x and Nsight Compute
# (no nsys, no network needed). In under 8 minutes it
#   1. takes the carried binaries bin/gpugate and bin/gpugate-deepdive, or
#      builds them with Go;
#   2. runs the demo (examples/demo/train.py --device cuda) under the
#      injected torch.profiler: baseline (recorded), rerun, slow-loader,
#      host-sync and leak, each with `gpugate run` (the leak's per-step peaks
#      from the trace checked against the step hook's own);
#   3. runs `gpugate analyze` on each CUDA trace and checks kernels per step
#      > 0, GPU utilization and cpu_wait;
#   4. runs the ncu deep-dive through `gpugate run` with perf.yaml
#      deep_dive: a baseline at batch 32 recorded with its kernels' ncu data,
#      then batch 128, which must regress, with one line per kernel that
#      compares the two;
# and writes traces, reports, logs and summary.txt into OUTDIR (plus
# all.tar.gz of everything). Every step has a timeout and its failure is
# recorded in the summary without stopping the others.
#
# Without a GPU (CI, a laptop) it builds the binaries, checks that the
# deep-dive is skipped with a note, says which GPU parts it skipped, and
# exits 0. Exit status: 0 when nothing failed, 1 when a step failed, 2 on
# bad usage.
#
# On a machine without Go or network (the lent GPU machine), build the
# binaries here and carry them: CGO_ENABLED=0 go build -o bin/gpugate
# ./cmd/gpugate && CGO_ENABLED=0 go build -o bin/gpugate-deepdive
# ./internal/cmd/deepdive (bin/ is git-ignored).
#
# Environment: GPUGATE_PYTHON (default python3), GPUGATE_NCU (default ncu on
# PATH, then /opt/nvidia/nsight-compute/*/ncu, then scripts/setup-ncu.sh's),
# GPUGATE_CHECK_BIN (a folder holding gpugate and gpugate-deepdive, instead
# of bin/), GPUGATE_CHECK_BUDGET (seconds in all, default 450), and
# GPUGATE_CHECK_DEVICE=cpu, a rehearsal of the GPU path's plumbing on a
# machine without one (its GPU checks then fail, as they must).
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: scripts/gpu-check.sh OUTDIR" >&2
	exit 2
fi
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUDGET=${GPUGATE_CHECK_BUDGET:-450}
START=$SECONDS
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
FAILED=0

note() { printf '%s\n' "$*" >>"$SUMMARY"; printf 'gpu-check: %s\n' "$*" >&2; }
# result NAME STATUS DETAIL: one line of the summary.
result() {
	printf '%-18s %-7s %s\n' "$1" "$2" "$3" >>"$SUMMARY"
	printf 'gpu-check: %-18s %-7s %s\n' "$1" "$2" "$3" >&2
	case $2 in FAIL | TIMEOUT) FAILED=1 ;; esac
}
left() { echo $((BUDGET - (SECONDS - START))); }

# step NAME LIMIT CMD...: runs CMD with a timeout (never past the budget),
# its output in OUTDIR/NAME.log, and records the outcome. Exit statuses in
# $OK (default "0") count as success. It returns CMD's status and never
# stops the script.
step() {
	local name=$1 limit=$2 l rc=0
	shift 2
	l=$(left)
	if [ "$l" -lt 20 ]; then
		result "$name" SKIP "no time left of the ${BUDGET}s budget"
		return 124
	fi
	if [ "$limit" -gt $((l - 10)) ]; then limit=$((l - 10)); fi
	local t0=$SECONDS
	timeout -k 10 "$limit" "$@" >"$OUT/$name.log" 2>&1 || rc=$?
	local took=$((SECONDS - t0))
	if [[ " ${OK:-0} " == *" $rc "* ]]; then
		result "$name" ok "exit $rc, ${took}s"
	elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		result "$name" TIMEOUT "after ${limit}s (see $name.log)"
	else
		result "$name" FAIL "exit $rc after ${took}s: $(tail -n 1 "$OUT/$name.log" | tr -d '\000-\010\013-\037' | cut -c1-200)"
	fi
	return "$rc"
}

# yamlstr quotes a value as a single-quoted YAML scalar.
yamlstr() { local s=${1//\'/\'\'}; printf "'%s'" "$s"; }

note "gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm), budget ${BUDGET}s"

# --- binaries -----------------------------------------------------------
BIN=${GPUGATE_CHECK_BIN:-$ROOT/bin}
GPUGATE=$BIN/gpugate
DEEPDIVE=$BIN/gpugate-deepdive
if [ -x "$GPUGATE" ] && [ -x "$DEEPDIVE" ] && "$GPUGATE" version >/dev/null 2>&1; then
	result build ok "carried binaries in $BIN"
else
	GO=$(command -v go || echo /usr/local/go/bin/go)
	if [ -x "$GO" ]; then
		mkdir -p "$OUT/bin"
		GPUGATE=$OUT/bin/gpugate
		DEEPDIVE=$OUT/bin/gpugate-deepdive
		step build 300 env CGO_ENABLED=0 sh -c '"$0" build -o "$1" ./cmd/gpugate && "$0" build -o "$2" ./internal/cmd/deepdive' "$GO" "$GPUGATE" "$DEEPDIVE" || true
	else
		result build FAIL "no carried $BIN/gpugate and $BIN/gpugate-deepdive, and no Go to build them"
	fi
fi
if ! [ -x "$GPUGATE" ]; then
	note "no gpugate binary: nothing else can run"
	note "result: failed"
	exit 1
fi
note "gpugate version: $("$GPUGATE" version 2>&1 | head -n 1)"

# --- what this machine has ---------------------------------------------
PY=${GPUGATE_PYTHON:-python3}
NCU=${GPUGATE_NCU:-}
if [ -z "$NCU" ]; then
	NCU=$(command -v ncu || true)
fi
if [ -z "$NCU" ]; then
	for c in /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu /opt/gpugate/nsight-compute/usr/lib/nsight-compute/ncu; do
		if [ -x "$c" ]; then NCU=$c && break; fi
	done
fi
if [ -n "$NCU" ]; then
	note "ncu: $NCU ($(timeout 30 "$NCU" --version 2>/dev/null | grep -o 'Version [0-9.]*' || echo 'version unknown'))"
else
	note "ncu: not found"
fi

DEVICE=${GPUGATE_CHECK_DEVICE:-cuda}
GPU=0
if [ "$DEVICE" = cpu ]; then
	note "rehearsal: the GPU path on the CPU (GPUGATE_CHECK_DEVICE=cpu); its GPU checks fail"
	GPU=1
elif command -v nvidia-smi >/dev/null 2>&1 && timeout 30 nvidia-smi -L >"$OUT/nvidia-smi.txt" 2>&1 && grep -q '^GPU ' "$OUT/nvidia-smi.txt"; then
	note "nvidia-smi: $(head -n 1 "$OUT/nvidia-smi.txt")"
	if timeout 120 "$PY" -c 'import sys, torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device"); sys.exit(0 if torch.cuda.is_available() else 1)' >"$OUT/torch.txt" 2>&1; then
		GPU=1
	fi
	note "python: $PY: $(tail -n 1 "$OUT/torch.txt")"
else
	note "nvidia-smi: no NVIDIA GPU here"
fi

# The deep-dive's own check runs everywhere: without a GPU it must skip
# with its note.
if [ -n "$NCU" ] && [ -x "$DEEPDIVE" ]; then
	OK="0 3" step probe 120 "$DEEPDIVE" -ncu "$NCU" -probe || true
	note "deep-dive probe: $(head -n 1 "$OUT/probe.log")"
fi

if [ "$GPU" != 1 ]; then
	for s in demo-baseline demo-rerun demo-slow-loader demo-host-sync demo-leak analyze demo-flops deepdive; do
		result "$s" SKIP "no CUDA GPU here (nvidia-smi and torch.cuda): GPU part skipped"
	done
	note "no GPU: the GPU parts were skipped; result: $([ $FAILED = 0 ] && echo ok || echo failed)"
	exit $FAILED
fi

# --- the demo on CUDA under torch.profiler ------------------------------
CFG=$OUT/perf.yaml
cat >"$CFG" <<EOF
# Written by scripts/gpu-check.sh: the demo on CUDA under torch.profiler.
version: 1
workloads:
  - name: demo-cuda
    command: [$(yamlstr "$PY"), $(yamlstr "$ROOT/examples/demo/train.py"), "--steps", "30", "--log-every", "1", "--device", "$DEVICE"]
    workdir: $(yamlstr "$ROOT/examples/demo")
    timeout: 3m
    profiler: torch
    warmup_steps: 3
    measure_steps: 20
    repeat: 1
    step_log: 'time_ms=([0-9.]+)'
allowances:
  step_time: 40%
baseline:
  db: $(yamlstr "$OUT/baseline.db")
  branch: main
  runs: 5
EOF

# run NAME VARIANT OK-CODES [flags]: one gpugate run of the demo.
run_demo() {
	local name=$1 variant=$2 ok=$3
	shift 3
	OK=$ok step "demo-$name" 150 env GPUGATE_BRANCH=main GPUGATE_DEMO="$variant" \
		"$GPUGATE" run -config "$CFG" -db "$OUT/baseline.db" -out "$OUT/runs/$name" -format text "$@" || true
}
run_demo baseline "" "0" -record-baseline
run_demo rerun "" "0 1"
# The timing run (no profiler, docs/verdicts.md §5d): on a GPU its steps
# are timed by CUDA events; compared with the host's clock of the same
# boundaries and with the profiled run's trace step (the profiler's cost).
OK=0 step "timing-baseline" 30 "$PY" - "$OUT/runs/baseline" <<'PY' || true
import json, os, statistics, sys
d = sys.argv[1]
t = json.load(open(os.path.join(d, "timing", "timing-0.json")))
p = json.load(open(os.path.join(d, "analysis.json")))["profiles"][0]
ev, host = statistics.fmean(t["step_ms"]), statistics.fmean(t["host_step_ms"])
prof = p["summary"]["step_time_ms"]["mean"]
print(f"timing run: clock {t['clock']}, {len(t['step_ms'])} steps from step {t['first_step']}, mean {ev:.3f} ms by the events, {host:.3f} ms by the host; profiled run's trace {prof:.3f} ms (x{prof / ev:.3f})")
sys.exit(0 if t["clock"] == "cuda-events" and abs(ev - host) < 0.1 * host else 1)
PY
note "  $(head -n 1 "$OUT/timing-baseline.log" 2>/dev/null)"
# The slow loader and the host syncs must fail the gate (exit 1).
run_demo slow-loader slow-loader "1"
run_demo host-sync host-sync "1"
# The leak must fail on peak memory with memory-growth, from the trace's
# own allocator events on the CUDA device (profile_memory); its per-step
# peaks are checked against the step hook's torch.cuda.max_memory_allocated
# of the same steps (ProfilerStep#k holds optimizer step k+1), a second
# measurement of the same thing.
run_demo leak leak "1"
for name in baseline leak; do
	OK=0 step "memory-$name" 30 "$PY" - "$OUT/runs/$name" <<'PY' || true
import json, os, sys
d = sys.argv[1]
p = json.load(open(os.path.join(d, "analysis.json")))["profiles"][0]
hook = {}
for line in open(os.path.join(d, "steps-0.jsonl")):
    s = json.loads(line)
    hook[s["step"]] = s
worst, n = 0.0, 0
for st in p["steps"]:
    m = st["memory"]
    if not m or m["source"] != "trace" or m["device"] < 0:
        sys.exit(f"{st['name']}: memory from {m and m['source']} on device {m and m['device']}: want the CUDA allocator's peaks from the trace")
    k = int(st["name"].split("#")[1])
    h = hook.get(k + 1, {}).get("cuda_max_allocated_bytes")
    if h:
        worst, n = max(worst, abs(m["peak_memory_bytes"] - h) / h), n + 1
print(f"peak_memory_MiB={p['summary']['peak_memory_MiB']['median']:.1f} trace vs hook max_memory_allocated over {n} steps: worst {100*worst:.2f}%")
print("findings:", ", ".join(f["id"] for f in p["findings"]) or "none")
sys.exit(0 if n > 0 and worst < 0.01 else 1)
PY
	note "  memory $name: $(head -n 2 "$OUT/memory-$name.log" | tr '\n' ' ')"
done
grep -q 'memory-growth' "$OUT/demo-leak.log" && grep -Eq '\*peak_memory .* regression' "$OUT/demo-leak.log" \
	&& result leak-verdict ok "peak_memory regression with memory-growth" \
	|| result leak-verdict FAIL "the leak did not fail on peak_memory with memory-growth (see demo-leak.log)"

# --- analyze the CUDA traces --------------------------------------------
for name in baseline rerun slow-loader host-sync; do
	trace=$(find "$OUT/runs/$name" -maxdepth 1 -type f \( -name 'trace*.json' -o -name 'trace*.json.gz' \) 2>/dev/null | sort | head -n 1)
	if [ -z "$trace" ]; then
		result "analyze-$name" FAIL "no trace under runs/$name"
		continue
	fi
	if step "analyze-$name" 90 sh -c '"$0" analyze -format json "$1" >"$2"' "$GPUGATE" "$trace" "$OUT/analyze-$name.json"; then
		# kernels per step > 0, GPU utilization and cpu_wait, from the JSON.
		OK=0 step "check-$name" 30 "$PY" - "$OUT/analyze-$name.json" <<'PY' || true
import json, sys
doc = json.load(open(sys.argv[1]))
p = doc["profiles"][0]
s = p["summary"]
def med(k):
    return s[k]["median"] if k in s and s[k] is not None else None
k, u, w, t = med("kernels"), med("gpu_util"), med("cpu_wait_ms"), med("step_time_ms")
print(f"steps={len(p['steps'])} step_time_ms={t} kernels/step={k} gpu_util={u} cpu_wait_ms={w} has_gpu={p['has_gpu']}")
print("findings:", ", ".join(f["id"] for f in p["findings"]) or "none")
sys.exit(0 if p["has_gpu"] and k and k > 0 and u is not None and w is not None else 1)
PY
		note "  $name: $(head -n 2 "$OUT/check-$name.log" | tr '\n' ' ')"
	fi
done

# --- FLOPs, MFU and run conditions ---------------------------------------
# The demo with perf.yaml flops: true: FLOPs per step must be the hand count
# of trace/kineto/shapes_test.go (287,047,680; the same layers on CUDA),
# from the trace's flops args where torch wrote them and from shapes
# elsewhere; MFU against the GPU's dense FP32 datasheet peak (the demo
# trains in FP32); and the run conditions nvidia-smi saw.
CFGF=$OUT/perf-flops.yaml
sed 's/^    repeat: 1$/    repeat: 1\n    flops: true\n    samples_per_step: 32\n    mfu_dtype: fp32/' "$CFG" >"$CFGF"
OK=0 step demo-flops 150 env GPUGATE_BRANCH=main "$GPUGATE" run -config "$CFGF" -db "$OUT/flops.db" -out "$OUT/runs/flops" -format text -record-baseline || true
if [ -f "$OUT/runs/flops/analysis.json" ]; then
	OK=0 step check-flops 30 "$PY" - "$OUT/runs/flops/analysis.json" "$OUT/runs/flops/conditions.json" <<'PY' || true
import json, statistics, sys
p = json.load(open(sys.argv[1]))["profiles"][0]
w = p.get("work") or {}
st = w.get("steps") or []
med = lambda k: statistics.median([s[k] for s in st if s.get(k) is not None] or [float("nan")])
flops = sorted({s["flops"] for s in st})
print(f"FLOPs/step {flops} (hand count 287047680) source={w.get('flops_source')} ops={w.get('flop_ops')} uncounted={w.get('uncounted_ops')}")
print(f"TFLOP/s {med('tflops'):.4g} MFU {med('mfu'):.3%} of {w.get('device')} {w.get('mfu_dtype')} peak {w.get('peak_tflops')} {w.get('mfu_absent', '')} samples/s {med('samples_per_s'):.0f}")
try:
    c = json.load(open(sys.argv[2]))
    g = (c.get("gpus") or [{}])[0]
    print(f"run conditions: sampled={c.get('sampled')} {c.get('not_sampled', '')} fields={c.get('reason_fields')} SM {g.get('sm_clock_median_mhz')} MHz of {g.get('sm_clock_max_mhz')}, {g.get('samples')} samples ({g.get('busy_samples')} busy), reasons {g.get('reason_share')}, job seen {g.get('job_seen')}, others {len(g.get('other_processes') or [])}")
except OSError as e:
    print("run conditions: no conditions.json:", e)
sys.exit(0 if flops == [287047680] else 1)
PY
	note "  flops: $(head -n 3 "$OUT/check-flops.log" | tr '\n' ' ')"
fi

# --- the ncu deep-dive, driven by gpugate run ---------------------------
# A second baseline of the same workload is recorded with deep_dive set, so
# that the store holds its busiest kernels' ncu data; then the demo at
# batch 128 must regress against batch 32, and gpugate run profiles the
# kernels whose time per step grew most on the candidate and takes the
# baseline's side from the store: one line per kernel in the report.
if [ -z "$NCU" ]; then
	result deepdive FAIL "no ncu found (set GPUGATE_NCU)"
else
	dd_config() { # dd_config FILE BATCH
		sed -e "s/\"--device\", \"$DEVICE\"\]/\"--device\", \"$DEVICE\", \"--batch-size\", \"$2\"]/" \
			-e 's/^    repeat: 1$/    repeat: 1\n    deep_dive: {kernels: 2, clock_control: none}/' "$CFG" >"$1"
	}
	dd_config "$OUT/perf-dd32.yaml" 32
	dd_config "$OUT/perf-dd128.yaml" 128
	# The deep-dive runs: GPUGATE_NCU is what gpugate run's deep-dive uses.
	OK=0 step deepdive-record 240 env GPUGATE_BRANCH=main GPUGATE_NCU="$NCU" \
		"$GPUGATE" run -config "$OUT/perf-dd32.yaml" -db "$OUT/baseline.db" -out "$OUT/runs/dd32" -format text -record-baseline || true
	note "  deep-dive with the baseline: $(grep -m1 -e 'deep-dive of .* stored with' -e 'deep-dive skipped' "$OUT/deepdive-record.log" 2>/dev/null | cut -c1-200 || echo 'nothing stored')"
	OK=1 step deepdive-run 300 env GPUGATE_BRANCH=main GPUGATE_NCU="$NCU" \
		"$GPUGATE" run -config "$OUT/perf-dd128.yaml" -db "$OUT/baseline.db" -out "$OUT/runs/dd128" -format text || true
	if grep -q '^Nsight Compute deep-dive:' "$OUT/deepdive-run.log" 2>/dev/null; then
		sed -n '/^Nsight Compute deep-dive:/,/^$/p' "$OUT/deepdive-run.log" | grep -v '^$' | head -n 12 >"$OUT/deepdive-lines.txt"
		while IFS= read -r l; do note "  $l"; done <"$OUT/deepdive-lines.txt"
		if grep -q '→' "$OUT/deepdive-lines.txt" && ! grep -q 'deep-dive skipped' "$OUT/deepdive-lines.txt"; then
			result deepdive-lines ok "a kernel line compares baseline and candidate"
		else
			result deepdive-lines FAIL "no kernel line with both sides (see deepdive-lines.txt)"
		fi
		for rep in "$OUT"/runs/dd128/deepdive/head/k*/ncu-1.ncu-rep; do
			[ -f "$rep" ] || continue
			OK=0 step analyze-ncu 60 sh -c '"$0" analyze -ncu "$1" "$2"' "$GPUGATE" "$NCU" "$rep" || true
			break
		done
	else
		result deepdive-lines FAIL "gpugate run printed no deep-dive (see deepdive-run.log)"
	fi
fi

tar -czf "$OUT/all.tar.gz" -C "$OUT" --exclude all.tar.gz . 2>/dev/null || true
note "took $((SECONDS - START))s; result: $([ $FAILED = 0 ] && echo ok || echo failed)"
exit $FAILED
