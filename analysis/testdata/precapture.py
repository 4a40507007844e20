#!/usr/bin/env python3
"""Independent check of gpugate's launch attribution (analysis/analyze.go).

Reads a Kineto trace with plain json, no gpugate code, and prints per
ProfilerStep#N (CPU user_annotation range [ts, ts+dur)):
  own_kernels   kernels whose launching API call (cuda_runtime/cuda_driver,
                legacy Runtime/Driver, same args.correlation) starts in the
                step's host range
  own_copies    the same for gpu_memcpy/Memcpy, own_memsets for memsets
and for the whole trace:
  pre_capture   GPU ops whose correlation id has no API call in the trace
                and is below the smallest correlation id of any API call
                (launched before the profiler started), by kind.
  first_start   how many of those start inside the first step's host range
                or before it (what attribution by start time gave the first
                step).
Times are compared as ns integers (round(ts*1000)).

usage: precapture.py TRACE.json[.gz]
"""
import gzip
import json
import sys

GPU = {"kernel": "kernel", "Kernel": "kernel", "gpu_memcpy": "memcpy", "Memcpy": "memcpy",
       "gpu_memset": "memset", "Memset": "memset"}
API = {"cuda_runtime", "cuda_driver", "Runtime", "Driver"}


def ns(us):
    return round(float(us) * 1000)


def main(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    steps = sorted(
        (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"])
        for e in events
        if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
    )
    launch = {}
    ops = []
    for e in events:
        if e.get("ph") != "X":
            continue
        cat, args = e.get("cat"), e.get("args") or {}
        corr = args.get("correlation")
        if cat in API and corr is not None and int(corr) > 0:
            launch[int(corr)] = ns(e["ts"])
        elif cat in GPU:
            ops.append((GPU[cat], int(corr or 0), ns(e["ts"])))
    first = min(launch) if launch else 0
    pre = {"kernel": 0, "memcpy": 0, "memset": 0}
    pre_in_first = 0
    for kind, corr, ts in ops:
        if corr > 0 and corr not in launch and corr < first:
            pre[kind] += 1
            if steps and ts < steps[0][1]:
                pre_in_first += 1
    for h0, h1, name in steps:
        own = {"kernel": 0, "memcpy": 0, "memset": 0}
        for kind, corr, ts in ops:
            t = launch.get(corr)
            if t is not None and h0 <= t < h1:
                own[kind] += 1
        print(f"{name} own_kernels={own['kernel']} own_copies={own['memcpy']} own_memsets={own['memset']}")
    print(f"pre_capture kernels={pre['kernel']} copies={pre['memcpy']} memsets={pre['memset']} first_start={pre_in_first}")


if __name__ == "__main__":
    main(sys.argv[1])
