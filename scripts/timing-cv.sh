#!/usr/bin/env bash
# timing-cv.sh: run-to-run noise of the demo's step time in gpugate's
# timing runs (no profiler, steps timed by gpugate's step hook at the
# optimizer step) against its profiled runs (torch.profiler, steps from the
# trace), side by side, as gpugate run makes them.
#
#   scripts/timing-cv.sh [RUNS]      # RUNS gpugate runs, default 10 (at least 10)
#
# Each gpugate run (repeat: 1) makes one profiled run and then one timing
# run of the demo, so the two kinds alternate (P T P T ...) and meet the
# same minutes of the machine. A run's value is its mean step (the gate's
# unit of noise): the timing run's from the hook's own file
# (timing/timing-0.json), the profiled run's from analysis.json; CV is the
# standard deviation of the run values over their mean. A third column is
# the job's own log of its steps (step_log, time_ms=) in the timing run:
# the same steps timed a second way. Each run's host conditions are printed
# with it: quote the figures with them ("loaded machine" when other_cpu is
# not near 0).
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
cat > "$work/perf.yaml" <<YAML
version: 1
workloads:
  - name: demo
    command: ["/usr/bin/python3", "train.py", "--steps", "30", "--log-every", "1"]
    env:
      GLIBC_TUNABLES: glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=134217728
    timeout: 5m
    profiler: torch
    warmup_steps: 3
    measure_steps: 20
YAML
cd "$work"
for i in $(seq 1 "$runs"); do
	out="$work/run-$i"
	if ! ./gpugate run -config perf.yaml -db "$work/b.db" -out "$out" > "$out.out" 2> "$out.err"; then
		# exit 1 or 3 is a verdict against the runs stored before: fine
		rc=$?
		if [ "$rc" != 1 ] && [ "$rc" != 3 ]; then
			echo "timing-cv.sh: run $i failed (exit $rc):" >&2
			tail -5 "$out.err" >&2
			exit 2
		fi
	fi
	echo "run $i done" >&2
done
python3 - "$work" "$runs" <<'PY'
import json, os, re, statistics, sys

work, runs = sys.argv[1], int(sys.argv[2])

def host(d):
    try:
        h = json.load(open(os.path.join(d, "conditions.json"))).get("host") or {}
    except OSError:
        return "host not sampled"
    return "other_cpu %.2f of %s, pressure %.0f%%" % (h.get("other_cpu", float("nan")), h.get("cpus", "?"), 100 * h.get("cpu_pressure", float("nan")))

def logged(path, first, n):
    """The job's own step times (ms) of steps first..first+n-1 from its log."""
    steps = {}
    for line in open(path, errors="replace"):
        m = re.search(r"step (\d+) time_ms=([0-9.]+)", line)
        if m:
            steps[int(m.group(1))] = float(m.group(2))
    xs = [steps[s] for s in range(first, first + n) if s in steps]
    if len(xs) != n:
        sys.exit(f"timing-cv.sh: {path}: {len(xs)} of the steps {first}..{first + n - 1} logged")
    return xs

cols = {"timing runs (gpugate's step hook)": [], "profiled runs (trace step_time)": [], "timing runs (the job's own log)": []}
print("run  timing ms  profiled ms  timing-log ms   host (profiled run | timing run)")
for i in range(1, runs + 1):
    d = os.path.join(work, f"run-{i}")
    t = json.load(open(os.path.join(d, "timing", "timing-0.json")))
    tv = statistics.fmean(t["step_ms"])
    doc = json.load(open(os.path.join(d, "analysis.json")))
    pv = doc["profiles"][0]["summary"]["step_time_ms"]["mean"]
    lv = statistics.fmean(logged(os.path.join(d, "timing", "job.log"), t["first_step"], len(t["step_ms"])))
    for k, v in zip(cols, (tv, pv, lv)):
        cols[k].append(v)
    print(f"{i:3d}  {tv:9.2f}  {pv:11.2f}  {lv:13.2f}   {host(d)} | {host(os.path.join(d, 'timing'))}")
print()
print(f"{'kind':36s} {'runs':>4s} {'mean ms':>9s} {'sd ms':>8s} {'CV':>7s}")
for k, xs in cols.items():
    m, sd = statistics.fmean(xs), statistics.stdev(xs)
    print(f"{k:36s} {len(xs):4d} {m:9.2f} {sd:8.2f} {100 * sd / m:6.1f}%")
PY
