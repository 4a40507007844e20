"""Times the optimizer steps of an unmodified PyTorch job, without a profiler.

gpugate's timing runs (docs/verdicts.md, "Timing runs and explaining runs")
judge step time on runs that carry no profiler: this module only marks the
step boundaries. Environment (set by gpugate):
  GPUGATE_TIMING=1               enable
  GPUGATE_TIMING_OUT=path.json   where each rank writes its step times;
                                 "{rank}" is replaced by the process's rank
  GPUGATE_JOB_OUT=path.json      the rank's claim and versions (gpugate_job)
  GPUGATE_SCHEDULE=w,u,a         the profiled runs' schedule: the timed steps
                                 are the ones a profiled run measures
  GPUGATE_STEP_LOG=1             print "gpugate-step N" after every step

A step is what a profiled run's ProfilerStep is: from the end of one
optimizer step to the end of the next (the same hook, gpugate_stephook).
Boundary k is the end of the process's k-th optimizer step; with schedule
w,u,a (w is 1: the profiler starts at the first step) the profiled run
measures the a steps from boundary w+u to boundary w+u+a, and so does this.

On CUDA a boundary records a torch.cuda.Event on the current stream: its
time is when the GPU gets there, so a GPU-bound step is timed by the GPU
and a host-bound one by the host, and recording adds no synchronisation.
The events are read once, after the last timed step (one wait for that
event, after the window), or at exit. Without CUDA a boundary reads
time.perf_counter_ns(). The file (JSON):
  {"rank":R,"pid":P,"clock":"cuda-events"|"host","first_step":N,
   "complete":true|false,"step_ms":[...],"host_step_ms":[...]
   [,"wait_ms":[...],"cpu_ms":[...]]}
step_ms are the timed steps in order (first_step is the optimizer step
that ends the first of them); host_step_ms the same steps by the host's
clock (on CUDA they tell the host's view from the GPU's). wait_ms and
cpu_ms are, per timed step, how long the threads of this process and of
every process below it (its DataLoader workers) waited in a CPU run queue
and ran on a CPU (gpugate_sched: /proc/PID/task/TID/schedstat, read at
each boundary); absent where the kernel has no schedstat. On a busy host
the wait is what other work took from the step (docs/verdicts.md §5c). Timing never
raises into the job: on the first error it logs once and stops.
"""

import atexit
import json
import os
import time


def install():
    import gpugate_job
    import gpugate_sched
    import gpugate_stephook

    wait, warmup, active = (int(x) for x in os.environ.get("GPUGATE_SCHEDULE", "1,2,20").split(","))
    first = max(wait, 1) + warmup  # the boundary that opens the first timed step
    last = first + active  # the boundary that closes the last
    template = os.environ.get("GPUGATE_TIMING_OUT", "gpugate-timing-{rank}.json")
    log_steps = os.environ.get("GPUGATE_STEP_LOG") == "1"
    pid = os.getpid()
    st = {"n": 0, "events": [], "host": [], "sched": [], "cuda": None, "claim": None, "off": False, "written": False,
          "label": ""}
    sched = gpugate_sched.JobSched()

    def write(complete):
        if st["written"] or st["off"] or len(st["host"]) < 2:
            return
        st["written"] = True
        host = [(b - a) / 1e6 for a, b in zip(st["host"], st["host"][1:])]
        doc = {"rank": st["claim"]["rank"] or 0, "pid": pid, "clock": "host", "first_step": first + 1,
               "complete": complete, "step_ms": host, "host_step_ms": host}
        ss = st["sched"]
        if len(ss) == len(st["host"]) and all(x is not None for x in ss):
            doc["wait_ms"] = [(b[1] - a[1]) / 1e6 for a, b in zip(ss, ss[1:])]
            doc["cpu_ms"] = [(b[0] - a[0]) / 1e6 for a, b in zip(ss, ss[1:])]
        evs = st["events"]
        if st["cuda"] is not None and len(evs) == len(st["host"]):
            evs[-1].synchronize()  # after the last timed step: the window is over
            doc["clock"] = "cuda-events"
            doc["step_ms"] = [a.elapsed_time(b) for a, b in zip(evs, evs[1:])]
        out = template.replace("{rank}", str(doc["rank"]))
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f)
        gpugate_job.say(f"[gpugate pid={pid}] step times written{st['label']}: {len(doc['step_ms'])} steps "
                        f"by {doc['clock']}")

    def after_step(*_args, **_kwargs):
        if st["off"] or os.getpid() != pid:  # a forked DataLoader worker
            return
        try:
            st["n"] += 1
            n = st["n"]
            if st["claim"] is None:
                claim = gpugate_job.claim()
                if not claim:  # another process of the job has this rank
                    st["off"] = True
                    return
                st["claim"], st["label"] = claim, gpugate_job.label(claim)
                torch = __import__("sys").modules.get("torch")
                if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
                    st["cuda"] = torch.cuda
            if first <= n <= last:
                # The schedstat walk first: its own cost then falls in the
                # step that ends here, as the clock's reading after it does.
                st["sched"].append(sched.totals())
                st["host"].append(time.perf_counter_ns())
                if st["cuda"] is not None:
                    ev = st["cuda"].Event(enable_timing=True)
                    ev.record()
                    st["events"].append(ev)
                if n == last:
                    write(True)
            if log_steps:
                gpugate_job.say(f"gpugate-step {n}{st['label']}")
        except Exception as e:  # never break the user's job over timing
            st["off"] = True
            gpugate_job.say(f"[gpugate pid={pid}] step timing stopped at step {st['n']}: {e!r}")

    def at_exit():
        if os.getpid() != pid or st["claim"] is None:
            return
        try:
            write(False)
        except Exception as e:
            gpugate_job.say(f"[gpugate pid={pid}] step times not written: {e!r}")

    how = gpugate_stephook.around_optimizer_step(after_step)
    atexit.register(at_exit)
    gpugate_job.say(f"[gpugate pid={pid}] timing run: steps {first + 1} to {last} timed at the optimizer step, "
                    f"no profiler; step hook: {how}")
