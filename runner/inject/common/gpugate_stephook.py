"""Calls functions around every optimizer step of an unmodified PyTorch job.

Shared by gpugate's torch.profiler and NVTX injections. On torch >= 2.0 it
uses the public global optimizer step hooks; on 1.13, which has none, it
wraps each optimizer class's step once, from Optimizer._hook_for_profile (the
hook torch 1.13 itself uses), outside torch's own record_function wrapper so
that a step range closes after Optimizer.step, not inside it.
"""

import functools
import importlib


def around_optimizer_step(after, before=None, tag="_gpugate"):
    """Calls before() and after() around each optimizer step; returns how."""
    import torch

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
