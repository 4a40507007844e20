#!/usr/bin/env bash
# contention-margin.sh: how much of a CPU-bound PyTorch loop's slowdown
# beside CPU hogs its own measured run-queue wait explains, and how much
# it leaves unexplained (shared caches, memory bandwidth, a busy SMT
# sibling): the margin of docs/verdicts.md §5c's contention rule.
#
#   bash scripts/contention-margin.sh            # 13 rounds: 104 runs
#   ROUNDS=3 bash scripts/contention-margin.sh   # a quick look
#
# A run is a window of STEPS optimizer steps of the demo's model (a small
# CNN, batch 32, CPU) with its data loading, measured by the step hook's own
# reader (runner/inject/common/gpugate_sched.py): the wall time of the
# window, and the CPU time and run-queue wait that every thread of the job
# (the loop and its DataLoader workers) accumulated over it. Two loaders:
# workers=0 (one thread does everything: its wait is on the critical path)
# and workers=2 (three processes: their waits add up to more than the loop
# lost). Each round runs every loader beside 0, 1, 2 and 4 hogs
# (`sh -c 'while :; do :; done'`), interleaved, so that the machine's
# own drift hits every level alike.
#
# Per run: unexplained = (wall - wait) / ref - 1, ref being the median of
# (wall - wait) over the same loader's runs beside no hog: the share by
# which the step stayed longer than the quiet step once the measured wait is
# taken off; "of the wait" is the same excess over the quiet step as a
# share of the run's wait. The table gives, per loader and hog count, the medians of the
# wall time, the wait and the CPU time (ms a step), the slowdown against
# the 0-hog median, and the median and largest unexplained share. The load
# of the machine (1-minute load average, and the CPU other processes used,
# from /proc/stat less the job's CPU time) is printed per level: other
# work beside the hogs is part of the measurement.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-/usr/bin/python3}
export ROUNDS=${ROUNDS:-13} STEPS=${STEPS:-30}
export PYTHONPATH=runner/inject/common${PYTHONPATH:+:$PYTHONPATH}
exec "$py" - <<'EOF'
import os, statistics, subprocess, sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from gpugate_sched import JobSched

ROUNDS, STEPS, WARM = int(os.environ["ROUNDS"]), int(os.environ["STEPS"]), 3
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
        if i + 1 == WARM:
            marks.append((time.perf_counter(), js.totals(), proc_busy(), os.getloadavg()[0]))
        if i + 1 == WARM + STEPS:
            marks.append((time.perf_counter(), js.totals(), proc_busy(), os.getloadavg()[0]))
            break
    del loader
    (t0, (c0, w0), b0, _), (t1, (c1, w1), b1, load) = marks
    wall = t1 - t0
    cpu, wait = (c1 - c0) / 1e9, (w1 - w0) / 1e9
    other = max(b1 - b0 - cpu, 0) / wall
    return {"wall": wall / STEPS * 1e3, "cpu": cpu / STEPS * 1e3, "wait": wait / STEPS * 1e3, "load": load, "other": other}

rows = []
levels, loaders = (0, 1, 2, 4), (0, 2)
one(0)  # warm the allocator
for r in range(ROUNDS):
    for workers in loaders:
        for hogs in levels:
            # Each hog is started through a shell that exits at once, so that
            # it is not below this process: it is other work, not the job's.
            ps = [int(subprocess.run(["sh", "-c", "sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 & echo $!"],
                                     capture_output=True, text=True, check=True).stdout) for _ in range(hogs)]
            try:
                time.sleep(0.2)
                m = one(workers)
            finally:
                for p in ps:
                    os.kill(p, 9)
            m.update(hogs=hogs, workers=workers, round=r)
            rows.append(m)
            print(f"run {len(rows)}: workers={workers} hogs={hogs} wall={m['wall']:.1f} cpu={m['cpu']:.1f} "
                  f"wait={m['wait']:.1f} ms/step load={m['load']:.1f} other={m['other']:.2f} CPUs", file=sys.stderr, flush=True)

med = statistics.median
print(f"{len(rows)} runs of {STEPS} steps, {ROUNDS} rounds, {os.cpu_count()} CPUs, torch {torch.__version__}, threads {torch.get_num_threads()}")
print("| loader | hogs | runs | wall ms/step | wait ms/step | cpu ms/step | slowdown | unexplained median | unexplained max | of the wait, max | load avg | other CPUs (hogs incl.) |")
print("|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
worst = -1
for workers in loaders:
    rs = [x for x in rows if x["workers"] == workers]
    ref = med([x["wall"] - x["wait"] for x in rs if x["hogs"] == 0])
    wall0 = med([x["wall"] for x in rs if x["hogs"] == 0])
    for hogs in levels:
        h = [x for x in rs if x["hogs"] == hogs]
        un = [(x["wall"] - x["wait"]) / ref - 1 for x in h]
        ofw = max(((x["wall"] - x["wait"]) - ref) / x["wait"] for x in h) if hogs else 0
        if hogs > 0:
            worst = max(worst, max(un))
        print(f"| workers={workers} | {hogs} | {len(h)} | {med([x['wall'] for x in h]):.1f} | {med([x['wait'] for x in h]):.1f} | "
              f"{med([x['cpu'] for x in h]):.1f} | {med([x['wall'] for x in h]) / wall0 - 1:+.0%} | {med(un):+.1%} | {max(un):+.1%} | {ofw:+.1%} | "
              f"{med([x['load'] for x in h]):.1f} | {med([x['other'] for x in h]):.2f} |")
print(f"largest unexplained share beside hogs: {worst:+.1%}")
EOF
