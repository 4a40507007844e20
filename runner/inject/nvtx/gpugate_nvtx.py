"""NVTX ranges for an unmodified PyTorch job, through ctypes.

A torch built without CUDA (Debian's python3-torch) has no NVTX binding, so
this module calls libnvToolsExt directly. Outside nsys every call is a
no-op. Ranges (domain "gpugate"):
  ProfilerStep#N          from the end of optimizer step N-1 to the end of step N
                          (the first from the first batch), as torch.profiler
                          draws them; the range opened after the last step
                          is closed at exit and is not a complete step
  DataLoader.__next__     each batch the training loop waits for
  sync:Tensor.item[dev]   host syncs: .item(), .tolist(), .cpu() of a tensor
It prints "gpugate-step N" (" rank R" appended in a ranked process) on
stderr after every optimizer step when GPUGATE_STEP_LOG=1, for gpugate's
progress display. nsys follows every process of the job; the first
optimizer step of each claims its rank and reports its versions
(gpugate_job), as under torch.profiler.
"""

import ctypes
import ctypes.util
import functools
import os
import sys

_lib = None
_domain = None


class _Attr(ctypes.Structure):
    # nvtxEventAttributes_t, version 2 (NVTX_VERSION 2/3 ABI).
    _fields_ = [
        ("version", ctypes.c_uint16), ("size", ctypes.c_uint16), ("category", ctypes.c_uint32),
        ("colorType", ctypes.c_int32), ("color", ctypes.c_uint32), ("payloadType", ctypes.c_int32),
        ("reserved0", ctypes.c_int32), ("payload", ctypes.c_uint64), ("messageType", ctypes.c_int32),
        ("message", ctypes.c_char_p),
    ]


def _load():
    for name in ("libnvToolsExt.so.1", ctypes.util.find_library("nvToolsExt") or ""):
        if not name:
            continue
        try:
            return ctypes.CDLL(name)
        except OSError:
            pass
    return None


def _make_domain():
    global _domain
    _lib.nvtxDomainCreateA.restype = ctypes.c_void_p
    _domain = ctypes.c_void_p(_lib.nvtxDomainCreateA(b"gpugate"))


def push(name, payload=None):
    if _lib is None:
        return
    a = _Attr()
    a.version, a.size = 2, ctypes.sizeof(_Attr)
    a.messageType, a.message = 1, name.encode()  # NVTX_MESSAGE_TYPE_ASCII
    if payload is not None:
        a.payloadType, a.payload = 1, payload  # NVTX_PAYLOAD_TYPE_UNSIGNED_INT64
    _lib.nvtxDomainRangePushEx(_domain, ctypes.byref(a))


def pop():
    if _lib is not None:
        _lib.nvtxDomainRangePop(_domain)


def install():
    global _lib
    _lib = _load()
    if _lib is None:
        print("[gpugate] libnvToolsExt.so.1 not found: no NVTX ranges", file=sys.stderr)
        return
    _make_domain()
    # nsys keeps NVTX domains per process: forked DataLoader workers need their own.
    os.register_at_fork(after_in_child=_make_domain)
    import importlib

    import torch

    pid = os.getpid()
    log = os.environ.get("GPUGATE_STEP_LOG") == "1"
    state = {"step": 0, "open": False}

    def open_step():
        if not state["open"] and os.getpid() == pid:
            push(f"ProfilerStep#{state['step']}", state["step"])
            state["open"] = True

    import gpugate_job

    def after_step():
        if os.getpid() != pid:
            return
        if state["open"]:
            pop()
            state["open"] = False
        claim = gpugate_job.claim()
        if log:
            gpugate_job.say(f"gpugate-step {state['step'] + 1}{gpugate_job.label(claim)}")
        state["step"] += 1
        open_step()

    dl = importlib.import_module("torch.utils.data.dataloader")
    orig_next = dl._BaseDataLoaderIter.__next__

    def next_(self):
        open_step()
        push("DataLoader.__next__")
        try:
            return orig_next(self)
        finally:
            pop()

    dl._BaseDataLoaderIter.__next__ = next_

    for meth in ("item", "tolist", "cpu"):
        orig = getattr(torch.Tensor, meth)

        def wrap(orig=orig, meth=meth):
            @functools.wraps(orig)
            def f(self, *args, **kwargs):
                push(f"sync:Tensor.{meth}[{self.device}]")
                try:
                    return orig(self, *args, **kwargs)
                finally:
                    pop()
            return f

        setattr(torch.Tensor, meth, wrap())

    import gpugate_stephook

    gpugate_stephook.around_optimizer_step(after_step, before=open_step, tag="_gpugate_nvtx")
