"""Starts torch.profiler inside an unmodified training script.

Environment (set by gpugate run):
  GPUGATE_TORCH_PROFILE=1        enable
  GPUGATE_TRACE_OUT=path.json    where to write the chrome trace; "{rank}" is
                                 replaced by the process's rank (default 0)
  GPUGATE_JOB_OUT=path.json      the rank's claim and versions (gpugate_job)
  GPUGATE_SCHEDULE=w,u,a         profiler schedule: wait, warmup, active steps
  GPUGATE_STEP_LOG=1             print "gpugate-step N" (" rank R" appended in a
                                 ranked process) after every optimizer step
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
    import gpugate_job

    gpugate_job.say(f"[gpugate pid={os.getpid()}] {msg}")


def install():
    # Every Python process of the job gets here (a launcher, its workers,
    # DataLoader workers started with spawn); the profiler starts in a
    # process only at its first optimizer step, so that it runs in every
    # process that trains, as its rank, and never in a launcher
    # (gpugate_job).
    t0 = time.perf_counter()
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    import gpugate_job
    import gpugate_stephook

    wait, warmup, active = (int(x) for x in os.environ.get("GPUGATE_SCHEDULE", "1,2,20").split(","))
    template = os.environ.get("GPUGATE_TRACE_OUT", "gpugate-trace-{rank}.json")
    acts = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        acts.append(ProfilerActivity.CUDA)
    state = {"steps": 0, "written": False, "prof": None, "label": "", "off": False}
    pid = os.getpid()
    log_steps = os.environ.get("GPUGATE_STEP_LOG") == "1"

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

    def start():
        # Before the process's first optimizer step: that step is the
        # schedule's wait step, as when the profiler started at import.
        if state["prof"] is not None or state["off"] or os.getpid() != pid:
            return
        claim = gpugate_job.claim(template)
        if not claim:
            state["off"] = True
            return
        out = template.replace("{rank}", str(claim["rank"] or 0))
        state["label"] = gpugate_job.label(claim)

        def ready(prof):
            prof.export_chrome_trace(out)
            state["written"] = True
            _log(f"trace written: {out} ({os.path.getsize(out)} bytes) after {state['steps']} steps")

        t1 = time.perf_counter()
        prof = profile(activities=acts, schedule=schedule(wait=wait, warmup=warmup, active=active, repeat=1),
                       on_trace_ready=ready, **extra)
        prof.start()
        state["prof"] = prof
        world = claim["world_size"]
        who = "no rank" if claim["rank"] is None else f"rank {claim['rank']} of {world if world else '?'}"
        _log(f"{who}: profiler started at the first optimizer step ({time.perf_counter() - t1:.2f}s), "
             f"torch {claim.get('torch')}, python {claim.get('python')}")

    def after_step(*_args, **_kwargs):
        if os.getpid() != pid:  # a forked DataLoader worker
            return
        if state["prof"] is None:
            start()  # torch < 2 without a pre-hook path would get here first
            if state["prof"] is None:
                return
        state["steps"] += 1
        state["prof"].step()
        if log_steps:
            gpugate_job.say(f"gpugate-step {state['steps']}{state['label']}")

    how = gpugate_stephook.around_optimizer_step(after_step, before=start)

    def stop():
        if os.getpid() != pid or state["prof"] is None:
            return  # a launcher or a DataLoader worker: it never trained
        try:
            state["prof"].stop()  # flushes a window that the job ended inside
        except Exception as e:
            _log(f"profiler stop failed: {e}")
        if not state["written"]:
            _log(f"no trace written{state['label']}: the process ran {state['steps']} optimizer steps, "
                 f"fewer than wait+warmup ({wait}+{warmup}) of the schedule")

    atexit.register(stop)
    _log(f"torch {torch.__version__}: injected, schedule wait={wait} warmup={warmup} active={active}, "
         f"profile_memory={mem}, step hook: {how}, install {time.perf_counter() - t0:.2f}s; "
         f"the profiler starts at this process's first optimizer step")
