"""Measures what torch.profiler keeps in resident memory per recorded op.

analysis.MemoryThresholds.ProfilerEventBytes rests on it:
    /usr/bin/python3 analysis/testdata/profiler_event_bytes.py 2000 [shapes]
    /opt/gpugate/bin/python3-torch2 analysis/testdata/profiler_event_bytes.py 2000 shapes
Seen (2026-12-03, this project's CPU machine): torch 1.13 539 B per op,
937 B with record_shapes; torch 2.6 2,408 B with record_shapes.
"""
import torch, resource, os, sys
from torch.profiler import profile, ProfilerActivity
def rss():
    with open('/proc/self/statm') as f: return int(f.read().split()[1])*4096
x = torch.randn(8,8)
def work(n):
    for _ in range(n):
        y = x + 1
        y = y * 2
        y = y.sum()
N=int(sys.argv[1])
prof = profile(activities=[ProfilerActivity.CPU], record_shapes=len(sys.argv)>2)
work(1000)
r0=rss()
prof.__enter__()
r1=rss()
steps=[]
for i in range(10):
    work(N)
    steps.append(rss())
prof.__exit__(None,None,None)
ops=N*3*10
print(torch.__version__, "ops", ops, "rss growth during recording per op: %.0f B" % ((steps[-1]-steps[0])/(N*3*9)), "per-step MiB %.2f"%((steps[-1]-steps[0])/9/2**20))
