"""Calls functions around every optimizer step of an unmodified PyTorch job.

Shared by gpugate's torch.profiler and NVTX injections. On torch >= 2.0 it
uses the public global optimizer step hooks; on 1.13, which has none, it
wraps each optimizer class's step once, from Optimizer._hook_for_profile (the
hook torch 1.13 itself uses), outside torch's own record_function wrapper so
that a step range closes after Optimizer.step, not inside it.

With GPUGATE_STEP_SAMPLES=path ("{rank}" is replaced by the rank that
gpugate_job.claim resolves at the process's first step, default 0) it
also appends one JSON line per optimizer step to that file, right after the
step returns and before the step boundary of the profiler:
  {"step":N,"t_ns":..,"pid":..,"rss_bytes":..,"maxrss_bytes":..
   [,"cuda_device":D,"cuda_max_allocated_bytes":..,"cuda_max_reserved_bytes":..,
     "cuda_allocated_bytes":..]}
step is the process's Nth optimizer step (1-based, the N of the
"gpugate-step N" log line); t_ns is time.time_ns(); rss_bytes the resident
memory now (/proc/self/statm); maxrss_bytes the process's peak so far
(getrusage). On CUDA, once the job has initialized it, the peaks of the
caching allocator on the current device since the previous step
(torch.cuda.max_memory_allocated / max_memory_reserved, read from one
memory_stats call), after which the peaks are reset, and the bytes still
allocated at the end of the step (what a leak grows). The reset is seen by
the job: a job that logs torch.cuda.max_memory_allocated() itself reports
the peak of the last step under gpugate, not the peak since it started.
Sampling never raises into the job: on the first error it logs once and
stops.
"""

import functools
import importlib
import os
import sys
import time

_sampler = None


class _StepSamples:
    """Appends a memory sample per optimizer step (see the module doc)."""

    def __init__(self, path):
        self.path = path  # "{rank}" resolved at the first step
        self.pid = os.getpid()
        self.fd = None
        self.statm = None
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.step = 0
        self.broken = False
        self.torch = None
        try:
            import resource

            self.getrusage = resource.getrusage
            self.self_ = resource.RUSAGE_SELF
        except ImportError:
            self.getrusage = None

    def __call__(self):
        if self.broken or os.getpid() != self.pid:  # a forked DataLoader worker
            return
        try:
            self.step += 1
            if self.fd is None:  # opened at the first step: no empty files
                import gpugate_job

                claim = gpugate_job.claim()
                if not claim:  # another process of the job has this rank
                    self.broken = True
                    return
                self.path = self.path.replace("{rank}", str(claim["rank"] or 0))
                self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                self.statm = os.open("/proc/self/statm", os.O_RDONLY)
                self.torch = sys.modules.get("torch")
            rss = int(os.pread(self.statm, 128, 0).split()[1]) * self.page
            line = '{"step":%d,"t_ns":%d,"pid":%d,"rss_bytes":%d' % (self.step, time.time_ns(), self.pid, rss)
            if self.getrusage is not None:
                line += ',"maxrss_bytes":%d' % (self.getrusage(self.self_).ru_maxrss * 1024)
            cuda = self.torch.cuda if self.torch is not None else None
            if cuda is not None and cuda.is_initialized():
                dev = cuda.current_device()
                st = cuda.memory_stats(dev)
                line += (',"cuda_device":%d,"cuda_max_allocated_bytes":%d,"cuda_max_reserved_bytes":%d'
                         ',"cuda_allocated_bytes":%d') % (
                    dev, st.get("allocated_bytes.all.peak", 0), st.get("reserved_bytes.all.peak", 0),
                    st.get("allocated_bytes.all.current", 0))
                cuda.reset_peak_memory_stats(dev)
            os.write(self.fd, (line + "}\n").encode())
        except Exception as e:  # never break the user's job over a sample
            self.broken = True
            print(f"[gpugate pid={os.getpid()}] step memory samples stopped at step {self.step}: {e!r}",
                  file=sys.stderr, flush=True)


def _step_samples():
    """The process's step sampler, or None without GPUGATE_STEP_SAMPLES."""
    global _sampler
    path = os.environ.get("GPUGATE_STEP_SAMPLES")
    if not path:
        return None
    if _sampler is None or _sampler.pid != os.getpid():
        try:
            _sampler = _StepSamples(path)
        except Exception as e:  # no samples, but the profiler still runs
            print(f"[gpugate pid={os.getpid()}] no step memory samples: {e!r}", file=sys.stderr, flush=True)
            return None
    return _sampler


def around_optimizer_step(after, before=None, tag="_gpugate"):
    """Calls before() and after() around each optimizer step; returns how."""
    import torch

    sample = _step_samples()
    # Both injections may install hooks in one process: sample once a step.
    if sample is not None and not getattr(sample, "installed", False):
        sample.installed = True
        inner_after = after

        def after(*args, **kwargs):
            sample()
            return inner_after(*args, **kwargs)

    # torch.optim deletes its submodule names, so import the module itself.
    optim_mod = importlib.import_module("torch.optim.optimizer")
    post = getattr(optim_mod, "register_optimizer_step_post_hook", None)
    if post is not None:
        pre = getattr(optim_mod, "register_optimizer_step_pre_hook", None)
        if before is not None and pre is not None:
            pre(lambda opt, args, kwargs: before())
        post(lambda opt, args, kwargs: after())
        return "register_optimizer_step_post_hook (torch>=2.0)"

    Opt = torch.optim.Optimizer
    orig = Opt._hook_for_profile

    def hook_for_profile(self):
        orig(self)
        cls = self.__class__
        if getattr(cls.step, tag, False):
            return
        inner = cls.step

        @functools.wraps(inner)
        def step(*args, **kwargs):
            if before is not None:
                before()
            result = inner(*args, **kwargs)
            after()
            return result

        setattr(step, tag, True)
        cls.step = step

    Opt._hook_for_profile = hook_for_profile
    return "patched Optimizer._hook_for_profile (torch<2.0)"
