#!/usr/bin/env python3
"""Independent check of gpugate's per-step memory metrics (analysis/memory.go).

Reads a Kineto trace with plain json, no gpugate code, and prints per
ProfilerStep#N (CPU user_annotation range [ts, ts+dur)) and per device:
  modern form (Total Allocated present):
    peak_alloc_bytes    = max(Total Allocated of the last event before the
                          window (the level the step starts at), Total
                          Allocated of every event in the window)
    peak_reserved_bytes = the same for Total Reserved
  legacy form (only Bytes deltas):
    alloc_growth_bytes  = max over the window's events of the running sum of
                          Bytes from the window's start (0 when nothing rises)
Times: ts in µs as in the file, compared as ns integers (round(ts*1000)).
Device: "cuda:N" for Device Type 1, "host" for Device Type 0.

usage: memory_peaks.py TRACE.json[.gz]
"""
import gzip
import json
import sys


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
    mem = {}
    for e in events:
        if e.get("ph") not in ("i", "I") or e.get("name") != "[memory]":
            continue
        a = e["args"]
        dev = "cuda:%d" % a["Device Id"] if a.get("Device Type") == 1 else "host"
        mem.setdefault(dev, []).append((ns(e["ts"]), a))
    for dev in sorted(mem):
        evs = sorted(mem[dev], key=lambda x: x[0])  # stable: file order within one ts
        modern = "Total Allocated" in evs[0][1]
        for h0, h1, name in steps:
            if modern:
                before = [a for t, a in evs if t < h0]
                inside = [a for t, a in evs if h0 <= t < h1]
                cand = ([before[-1]] if before else []) + inside
                if not cand:
                    continue
                pa = max(a["Total Allocated"] for a in cand)
                pr = max(a["Total Reserved"] for a in cand)
                print(f"{name} {dev} peak_alloc_bytes={pa} peak_reserved_bytes={pr} events={len(inside)}")
            else:
                run, peak, n = 0, 0, 0
                for t, a in evs:
                    if h0 <= t < h1:
                        run += a["Bytes"]
                        peak = max(peak, run)
                        n += 1
                print(f"{name} {dev} alloc_growth_bytes={peak} net_bytes={run} events={n}")


if __name__ == "__main__":
    main(sys.argv[1])
