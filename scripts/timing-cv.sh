#!/usr/bin/env bash
# timing-cv.sh: run-to-run noise of the demo's step time, timing runs
# (no profiler, steps timed by the job's own log: step_log) against
# profiled runs (torch.profiler, steps from the trace), side by side.
#
#   scripts/timing-cv.sh [RUNS]      # RUNS of each kind, default 10 (at least 10)
#
# The two kinds alternate (T P T P ...), so that both meet the same minutes
# of the machine. A run's value is its mean step over the same 18 steps
# (the steps a profiled run analyzes: 5..22 of 30, the gate's unit of
# noise); CV is the standard deviation of the run values over their mean.
# A third column is the profiled runs' step times as the job logged them
# under the profiler: the profiler's cost and noise, measured the timing
# runs' way. Each run's host conditions (other processes' CPU, CPU
# pressure) are printed with it: quote the figures with them ("loaded
# machine" when other_cpu is not near 0).
set -euo pipefail
runs=${1:-10}
if [ "$runs" -lt 10 ]; then
	echo "timing-cv.sh: want at least 10 runs of each kind" >&2
	exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH=$PATH:/usr/local/go/bin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/gpugate" ./cmd/gpugate)
cp "$root/examples/demo/train.py" "$work/"
for kind in timing profiled; do
	profiler=none
	[ "$kind" = profiled ] && profiler=torch
	cat > "$work/$kind.yaml" <<YAML
version: 1
workloads:
  - name: demo
    command: ["/usr/bin/python3", "train.py", "--steps", "30", "--log-every", "1"]
    env:
      GLIBC_TUNABLES: glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=134217728
    timeout: 5m
    profiler: $profiler
    warmup_steps: 3
    measure_steps: 20
YAML
	# Timing runs need step_log; profiled runs leave it out, so that
	# gpugate run makes no unprofiled overhead pass after them.
	[ "$kind" = timing ] && echo "    step_log: 'time_ms=([0-9.]+)'" >> "$work/$kind.yaml"
done
cd "$work"
for i in $(seq 1 "$runs"); do
	for kind in timing profiled; do
		out="$work/$kind-$i"
		if ! ./gpugate run -config "$kind.yaml" -db "$work/b.db" -out "$out" > "$out.out" 2> "$out.err"; then
			echo "timing-cv.sh: $kind run $i failed:" >&2
			tail -5 "$out.err" >&2
			exit 2
		fi
		echo "$kind run $i done" >&2
	done
done
python3 - "$work" "$runs" <<'PY'
import json, os, re, statistics, sys

work, runs = sys.argv[1], int(sys.argv[2])
FIRST, LAST = 5, 22  # steps 5..22 of 30: what a profiled run analyzes (wait 1, warm-up 3, active 20, first and last trimmed)

def logged(path):
    """The job's own step times (ms) of steps FIRST..LAST from its log."""
    steps = {}
    for line in open(path, errors="replace"):
        m = re.search(r"step (\d+) time_ms=([0-9.]+)", line)
        if m:
            steps[int(m.group(1))] = float(m.group(2))
    xs = [steps[s] for s in range(FIRST, LAST + 1) if s in steps]
    if len(xs) != LAST - FIRST + 1:
        sys.exit(f"timing-cv.sh: {path}: {len(xs)} of the steps {FIRST}..{LAST} logged")
    return xs

def host(d):
    try:
        h = json.load(open(os.path.join(d, "conditions.json"))).get("host") or {}
    except OSError:
        return "host not sampled"
    return "other_cpu %.2f of %s, pressure %.0f%%" % (h.get("other_cpu", float("nan")), h.get("cpus", "?"), 100 * h.get("cpu_pressure", float("nan")))

cols = {"timing (no profiler, job's log)": [], "profiled (trace step_time)": [], "profiled (job's log)": []}
print("run  timing ms  profiled ms  profiled-log ms   host (timing run | profiled run)")
for i in range(1, runs + 1):
    t = os.path.join(work, f"timing-{i}")
    p = os.path.join(work, f"profiled-{i}")
    tv = statistics.fmean(logged(os.path.join(t, "job.log")))
    doc = json.load(open(os.path.join(p, "analysis.json")))
    pv = doc["profiles"][0]["summary"]["step_time_ms"]["mean"]
    plv = statistics.fmean(logged(os.path.join(p, "job.log")))
    for k, v in zip(cols, (tv, pv, plv)):
        cols[k].append(v)
    print(f"{i:3d}  {tv:9.2f}  {pv:11.2f}  {plv:15.2f}   {host(t)} | {host(p)}")
print()
print(f"{'kind':34s} {'runs':>4s} {'mean ms':>9s} {'sd ms':>8s} {'CV':>7s}")
for k, xs in cols.items():
    m, sd = statistics.fmean(xs), statistics.stdev(xs)
    print(f"{k:34s} {len(xs):4d} {m:9.2f} {sd:8.2f} {100 * sd / m:6.1f}%")
PY
