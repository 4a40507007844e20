#!/usr/bin/env python3
"""Independent check of a step's parts and of op conservation
(docs/metrics.md, "Every GPU op is counted once" and "The parts of a step
lie within it").

Reads a Kineto trace with ProfilerStep#N ranges with plain json (decimal
timestamps, no gpugate code) and prints, per step and for the profile:

  window        [s0, s1): s0 = max(h0, previous s1), s1 = max(h1, end of the
                last op launched in [h0, h1))
  ops           kernels, memcpy, memset of the step: launched in [h0, h1)
                (API call with the same args.correlation), or, without a
                launch call in the trace and not launched before the
                capture, starting in [s0, s1)
  gpu_busy      union of the step's own ops clipped to [s0, s1)
  comm, exposed_comm
                union of its kernels whose name contains "nccl" (any case),
                and the part of it no other kernel or memset of the step
                overlaps, clipped
  sync          count of blocking calls (cuda{Device,Stream,Event}Synchronize,
                synchronous cudaMemcpy*) starting in [h0, h1); sync_time the
                union of their intervals clipped to [s0, s1)
  pre_capture   ops whose correlation id has no API call and lies below the
                smallest API correlation id
  outside       every other op in no step
  left_out      with 5 or more steps the first and last, with 4 the last

usage: stepparts.py TRACE.json[.gz]
"""
import gzip
import json
import re
import sys
from decimal import Decimal

GPU = {"kernel": "kernel", "Kernel": "kernel", "gpu_memcpy": "memcpy", "Memcpy": "memcpy",
       "gpu_memset": "memset", "Memset": "memset"}
API = {"cuda_runtime", "cuda_driver", "Runtime", "Driver"}
SYNC = re.compile(r"^(cuda|cu)(DeviceSynchronize|StreamSynchronize|EventSynchronize|CtxSynchronize|ThreadSynchronize|Memcpy(?!.*Async).*)$")


def ns(v):
    return int((Decimal(str(v)) * 1000).to_integral_value())


def base(name):
    name = re.sub(r"_v\d+$", "", name)
    return re.sub(r"_(ptsz|ptds)$", "", name)


def union(spans):
    out = []
    for lo, hi in sorted(spans):
        if hi <= lo:
            continue
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return out


def subtract(a, b):
    out = []
    for lo, hi in a:
        cur = lo
        for blo, bhi in b:
            if bhi <= cur or blo >= hi:
                continue
            if blo > cur:
                out.append([cur, blo])
            cur = max(cur, bhi)
        if cur < hi:
            out.append([cur, hi])
    return out


def clip(spans, lo, hi):
    return sum(max(0, min(h, hi) - max(l, lo)) for l, h in spans)


def main(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        doc = json.load(f, parse_float=Decimal)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    ranges = [e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")]
    steps = []
    for e in sorted(ranges, key=lambda e: ns(e["ts"])):
        lo, hi = ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])
        if steps and hi <= steps[-1][1]:
            continue
        if steps:
            lo = max(lo, steps[-1][1])
        steps.append((lo, hi, e["name"]))
    launch, apis, ops = {}, [], []
    for e in events:
        if e.get("ph") != "X":
            continue
        cat, args = e.get("cat"), e.get("args") or {}
        if cat in API:
            s = ns(e["ts"])
            apis.append((s, s + ns(e["dur"]), base(e["name"])))
            if args.get("correlation") is not None:
                launch[int(args["correlation"])] = s
        elif cat in GPU:
            s = ns(e["ts"])
            ops.append(dict(lo=s, hi=s + ns(e["dur"]), kind=GPU[cat], name=e["name"], corr=int(args.get("correlation", 0) or 0)))
    first_corr = min((c for c in launch if c > 0), default=None)

    def host_step(t):
        for i, (lo, hi, _) in enumerate(steps):
            if lo <= t < hi:
                return i
        return -1

    own = [[] for _ in steps]
    pre, rest = [], []
    for o in ops:
        l = launch.get(o["corr"])
        if l is not None and o["corr"] > 0:
            i = host_step(l)
            if i >= 0:
                own[i].append(o)
            else:
                rest.append(o)
        elif first_corr is not None and 0 < o["corr"] < first_corr:
            pre.append(o)
        else:
            rest.append(o)
    win, prev = [], None
    for i, (h0, h1, _) in enumerate(steps):
        s0 = h0 if prev is None else max(h0, prev)
        s1 = max([h1] + [o["hi"] for o in own[i]])
        s1 = max(s1, s0)
        win.append((s0, s1))
        prev = s1
    outside = []
    for o in rest:
        i = next((k for k, (s0, s1) in enumerate(win) if s0 <= o["lo"] < s1), -1)
        (own[i] if i >= 0 else outside).append(o)

    def count(lst):
        return {k: sum(1 for o in lst if o["kind"] == k) for k in ("kernel", "memcpy", "memset")}

    n = len(steps)
    lo_k, hi_k = (1, n - 1) if n >= 5 else ((0, 3) if n == 4 else (0, n))
    tot = count(ops)
    print(f"profile: {tot}, pre_capture {count(pre)}, outside {count(outside)}")
    acc = {k: len([o for o in pre + outside if o["kind"] == k]) for k in tot}
    for i, (h0, h1, name) in enumerate(steps):
        s0, s1 = win[i]
        mine = own[i]
        c = count(mine)
        for k in acc:
            acc[k] += c[k]
        busy = clip(union([(o["lo"], o["hi"]) for o in mine]), s0, s1)
        comm = union([(o["lo"], o["hi"]) for o in mine if o["kind"] == "kernel" and "nccl" in o["name"].lower()])
        compute = union([(o["lo"], o["hi"]) for o in mine if o["kind"] == "memset" or (o["kind"] == "kernel" and "nccl" not in o["name"].lower())])
        syncs = [(a, b) for a, b, nm in apis if SYNC.match(nm) and h0 <= a < h1]
        tag = "kept" if lo_k <= i < hi_k else "left out"
        print(f"{name} ({tag}): window [{s0}, {s1}) step_time {s1 - s0} ops {c} gpu_busy {busy} "
              f"comm {clip(comm, s0, s1)} exposed_comm {clip(subtract(comm, compute), s0, s1)} "
              f"sync_calls {len(syncs)} sync_time {clip(union(syncs), s0, s1)} (unclipped sum {sum(b - a for a, b in syncs)})")
    print(f"conservation: steps + pre + outside = {acc}, profile {tot}: {'holds' if acc == tot else 'BROKEN'}")


if __name__ == "__main__":
    main(sys.argv[1])
