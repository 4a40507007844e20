"""Starts torch.profiler inside an unmodified training script.

Environment (set by gpugate run):
  GPUGATE_TORCH_PROFILE=1        enable
  GPUGATE_TRACE_OUT=path.json    where to write the chrome trace; "{rank}" is
                                 replaced by the process's RANK (default 0)
  GPUGATE_SCHEDULE=w,u,a         profiler schedule: wait, warmup, active steps
  GPUGATE_STEP_LOG=1             print "gpugate-step N" after every optimizer step
  GPUGATE_PROFILE_MEMORY=0|1     profile_memory (default 1 on torch >= 2, 0 on 1.13)

A step is one optimizer step: the public global optimizer step hook on
torch >= 2.0; on 1.13 a class-level wrap of Optimizer.step installed from
Optimizer._hook_for_profile, the hook torch 1.13 itself uses.
"""

import atexit
import os
import sys
import time


def _log(msg):
    print(f"[gpugate pid={os.getpid()}] {msg}", file=sys.stderr, flush=True)


def install():
    # Only the first Python process of the job profiles: spawned children
    # (DataLoader workers with the spawn start method) inherit the variable.
    owner = os.environ.get("GPUGATE_TORCH_PROFILE_OWNER")
    if owner and owner != str(os.getpid()):
        return
    os.environ["GPUGATE_TORCH_PROFILE_OWNER"] = str(os.getpid())
    t0 = time.perf_counter()
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    wait, warmup, active = (int(x) for x in os.environ.get("GPUGATE_SCHEDULE", "1,2,20").split(","))
    rank = os.environ.get("RANK", "0")
    out = os.environ.get("GPUGATE_TRACE_OUT", "gpugate-trace-{rank}.json").replace("{rank}", rank)
    acts = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        acts.append(ProfilerActivity.CUDA)
    state = {"steps": 0, "written": False}
    pid = os.getpid()
    log_steps = os.environ.get("GPUGATE_STEP_LOG") == "1"

    def ready(prof):
        prof.export_chrome_trace(out)
        state["written"] = True
        _log(f"trace written: {out} ({os.path.getsize(out)} bytes) after {state['steps']} steps")

    # perf.yaml flops: true records the input shapes of every operator (and
    # asks for torch's own flops where it computes them), so that gpugate
    # can count FLOPs; it costs profiler overhead, so it is opt-in.
    flops = os.environ.get("GPUGATE_FLOPS") == "1"
    extra = {"record_shapes": True, "with_flops": True} if flops else {}
    # profile_memory records every allocation and free with the allocator's
    # totals ([memory] events): per-step peak memory from the trace itself.
    # On by default from torch 2 (Kineto); GPUGATE_PROFILE_MEMORY=0 turns it
    # off. torch 1.13's CPU build has no Kineto: its memory comes from the
    # step hook's samples (GPUGATE_STEP_SAMPLES).
    major = int(torch.__version__.split(".")[0])
    mem = os.environ.get("GPUGATE_PROFILE_MEMORY", "1" if major >= 2 else "0") == "1"
    extra["profile_memory"] = mem
    prof = profile(activities=acts, schedule=schedule(wait=wait, warmup=warmup, active=active, repeat=1),
                   on_trace_ready=ready, **extra)
    prof.start()

    def after_step(*_args, **_kwargs):
        if os.getpid() != pid:  # a forked DataLoader worker
            return
        state["steps"] += 1
        prof.step()
        if log_steps:
            print(f"gpugate-step {state['steps']}", file=sys.stderr, flush=True)

    import gpugate_stephook

    how = gpugate_stephook.around_optimizer_step(after_step)

    def stop():
        if os.getpid() != pid:
            return
        try:
            prof.stop()  # flushes a window that the job ended inside
        except Exception as e:
            _log(f"profiler stop failed: {e}")
        if not state["written"]:
            _log(f"no trace written: the job ran {state['steps']} optimizer steps, "
                 f"fewer than wait+warmup ({wait}+{warmup}) of the schedule")

    atexit.register(stop)
    _log(f"torch {torch.__version__}: profiler started, schedule wait={wait} warmup={warmup} active={active}, "
         f"profile_memory={mem}, "
         f"step hook: {how}, install {time.perf_counter() - t0:.2f}s")
