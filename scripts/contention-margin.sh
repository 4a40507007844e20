#!/usr/bin/env bash
# contention-margin.sh: how much of a CPU-bound PyTorch loop's slowdown
# beside CPU hogs its own measured run-queue wait explains, and how much
# it leaves unexplained (shared caches, memory bandwidth, a busy SMT
# sibling): the margin of docs/verdicts.md §5c's contention rule.
#
#   bash scripts/contention-margin.sh                 # 13 rounds: 104 runs
#   ROUNDS=3 bash scripts/contention-margin.sh        # a quick look
#   bash scripts/contention-margin.sh 2> runs.log     # keep the run lines;
#   LOG=runs.log bash scripts/contention-margin.sh    # their table again
#
# A run is a window of STEPS optimizer steps of the demo's model (a small
# CNN, batch 32, CPU) with its data loading, measured by the step hook's own
# reader (runner/inject/common/gpugate_sched.py): the wall time of the
# window, and the CPU time and run-queue wait that every thread of the job
# (the loop and its DataLoader workers) accumulated over it. Two loaders:
# workers=0 (one thread does everything: its wait is on the critical path)
# and workers=2 (three processes: their waits add up to more than the loop
# lost). Each round runs every loader beside 0, 1, 2 and 4 hogs
# (`sh -c 'while :; do :; done'`, started so that they are not below the
# job), interleaved, so that the machine's own drift hits every level alike.
#
# The rule takes a disturbed run's step less its measured wait as at most
# 1 + margin times the quiet step. Per run, "wall − wait" is that figure
# (ms a step), and "unexplained" is max(wall − wait, 0) / q - 1, q being the
# fastest run of the same loader beside no hog (other work only lengthens
# a step, so q is at least the quiet step, and a truly quiet reference
# would give larger shares: on a busy machine these are lower bounds).
# "floor 0" counts the runs whose wait exceeded their wall time (threads
# that waited at once, each counted): the rule can decide nothing by them.
# The load of the machine (1-minute load average, and the CPU other
# processes used, from /proc/stat less the job's CPU time) is printed per
# level: other work beside the hogs is part of the measurement.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-/usr/bin/python3}
export ROUNDS=${ROUNDS:-13} STEPS=${STEPS:-30}
export PYTHONPATH=runner/inject/common${PYTHONPATH:+:$PYTHONPATH}
exec "$py" - <<'EOF'
import os, re, statistics, subprocess, sys, time

ROUNDS, STEPS, WARM = int(os.environ["ROUNDS"]), int(os.environ["STEPS"]), 3
levels, loaders = (0, 1, 2, 4), (0, 2)
rows = []
line_re = re.compile(r"run \d+: workers=(\d+) hogs=(\d+) wall=([\d.]+) cpu=([\d.]+) wait=([\d.]+) ms/step load=([\d.]+) other=([\d.]+)")

if os.environ.get("LOG"):  # an earlier measurement's run lines: its table again
    for line in open(os.environ["LOG"]):
        m = line_re.match(line)
        if m:
            rows.append({"workers": int(m[1]), "hogs": int(m[2]), "wall": float(m[3]), "cpu": float(m[4]),
                         "wait": float(m[5]), "load": float(m[6]), "other": float(m[7])})
    ROUNDS = len(rows) // (len(levels) * len(loaders))
    version = "?"
else:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, Dataset
    from gpugate_sched import JobSched

    version = torch.__version__
    torch.manual_seed(0)

    class Images(Dataset):
        def __init__(self, n):
            self.x, self.y = torch.randn(n, 3, 32, 32), torch.randint(0, 10, (n,))
            self.k = torch.ones(3, 1, 3, 3) / 9.0
        def __len__(self): return len(self.x)
        def __getitem__(self, i):
            c = F.conv2d(self.x[i].unsqueeze(0), self.k, padding=1, groups=3).squeeze(0)
            return (c - c.mean()) / (c.std() + 1e-5), self.y[i]

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2, self.fc = nn.Conv2d(3, 16, 3, padding=1), nn.Conv2d(16, 32, 3, padding=1), nn.Linear(2048, 10)
        def forward(self, x):
            x = F.max_pool2d(F.relu(self.c1(x)), 2)
            return self.fc(F.max_pool2d(F.relu(self.c2(x)), 2).flatten(1))

    data = Images((STEPS + WARM + 2) * 32)
    model = CNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def proc_busy():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return (v[0] + v[1] + v[2] + v[5] + v[6]) / 100.0

    def one(workers):
        loader = DataLoader(data, batch_size=32, shuffle=True, num_workers=workers, drop_last=True)
        js = JobSched()
        marks = []
        for i, (x, y) in enumerate(loader):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
            if i + 1 in (WARM, WARM + STEPS):
                marks.append((time.perf_counter(), js.totals(), proc_busy(), os.getloadavg()[0]))
                if i + 1 == WARM + STEPS:
                    break
        del loader
        (t0, (c0, w0), b0, _), (t1, (c1, w1), b1, load) = marks
        wall = t1 - t0
        cpu, wait = (c1 - c0) / 1e9, (w1 - w0) / 1e9
        other = max(b1 - b0 - cpu, 0) / wall
        return {"wall": wall / STEPS * 1e3, "cpu": cpu / STEPS * 1e3, "wait": wait / STEPS * 1e3, "load": load, "other": other}

    one(0)  # warm the allocator
    for r in range(ROUNDS):
        for workers in loaders:
            for hogs in levels:
                # Each hog is started through a shell that exits at once, so
                # that it is not below this process: other work, not the job's.
                ps = [int(subprocess.run(["sh", "-c", "sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 & echo $!"],
                                         capture_output=True, text=True, check=True).stdout) for _ in range(hogs)]
                try:
                    time.sleep(0.2)
                    m = one(workers)
                finally:
                    for p in ps:
                        os.kill(p, 9)
                m.update(hogs=hogs, workers=workers)
                rows.append(m)
                print(f"run {len(rows)}: workers={workers} hogs={hogs} wall={m['wall']:.1f} cpu={m['cpu']:.1f} "
                      f"wait={m['wait']:.1f} ms/step load={m['load']:.1f} other={m['other']:.2f} CPUs", file=sys.stderr, flush=True)

med = statistics.median
print(f"{len(rows)} runs of {STEPS} steps, {ROUNDS} rounds, {os.cpu_count()} CPUs, torch {version}")
print("| loader | hogs | runs | wall ms/step | wait ms/step | cpu ms/step | slowdown | wall − wait, median | wall − wait, max "
      "| unexplained, median | unexplained, max | floor 0 | load avg | other CPUs (hogs incl.) |")
print("|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
for workers in loaders:
    rs = [x for x in rows if x["workers"] == workers]
    if not rs:
        continue
    q = min(x["wall"] for x in rs if x["hogs"] == 0)
    wall0 = med([x["wall"] for x in rs if x["hogs"] == 0])
    worst = -1
    for hogs in levels:
        h = [x for x in rs if x["hogs"] == hogs]
        left = [x["wall"] - x["wait"] for x in h]
        un = [max(v, 0) / q - 1 for v in left]
        worst = max(worst, max(un))
        print(f"| workers={workers} | {hogs} | {len(h)} | {med([x['wall'] for x in h]):.1f} | {med([x['wait'] for x in h]):.1f} | "
              f"{med([x['cpu'] for x in h]):.1f} | {med([x['wall'] for x in h]) / wall0 - 1:+.0%} | {med(left):.1f} | {max(left):.1f} | "
              f"{med(un):+.1%} | {max(un):+.1%} | {sum(v <= 0 for v in left)} | {med([x['load'] for x in h]):.1f} | "
              f"{med([x['other'] for x in h]):.2f} |")
    print(f"workers={workers}: quiet step {q:.1f} ms (the fastest run beside no hog); largest unexplained share {worst:+.1%}",
          file=sys.stdout)
c = [x["cpu"] for x in rows if x["workers"] == 0]
if c:
    m = max(x["wall"] - x["wait"] for x in rows if x["workers"] == 0)
    print(f"workers=0: least CPU time a step {min(c):.1f} ms; largest wall − wait {m:.1f} ms, {m / min(c) - 1:+.1%} above it")
EOF
