"""Which process of a job trains, as which rank, on which versions.

A job may be many Python processes: a launcher (torchrun's agent, a user's
launcher script, torch.multiprocessing.spawn's parent), its workers, and the
DataLoader workers of each. Every one of them loads gpugate's sitecustomize.
gpugate profiles a process only once it calls optimizer.step(): a launcher
never does, a DataLoader worker never does, and every rank of a DDP job
does. The first optimizer step of a process calls claim(), which

  - resolves the process's rank: torch.distributed's own once the job has
    initialized it (torch.multiprocessing.spawn hands the rank to the worker
    as an argument, not in the environment), else the launcher contract
    (RANK and WORLD_SIZE, which torchrun and plain launchers set), else none:
    a single-process job, recorded as rank 0;
  - claims the rank by creating GPUGATE_JOB_OUT ("{rank}" replaced) with
    O_EXCL: one process per rank, so that two processes never write one
    trace (two unrelated trainings without ranks: the second is not
    profiled, and says so);
  - writes into it, as JSON, the rank, the world size, the pid and the
    versions the training process itself runs on (Python, torch, CUDA,
    cuDNN, NCCL): gpugate's fingerprint, whatever the command line was.
"""

import json
import os
import sys

_claims = {}  # pid -> the claim (dict), or False when another process has the rank


def say(line):
    """Writes one line to stderr in one write: the ranks of a job share
    gpugate's pipe, and a line that print() writes in pieces interleaves
    with another rank's (a step line cut in two is lost)."""
    try:
        sys.stderr.flush()
    except Exception:
        pass
    os.write(2, (line + "\n").encode("utf-8", "replace"))


def rank():
    """(rank, world size) of this process; (None, None) when it has none."""
    t = sys.modules.get("torch")
    if t is not None:
        try:
            d = t.distributed
            if d.is_available() and d.is_initialized():
                return d.get_rank(), d.get_world_size()
        except Exception:
            pass
    try:
        r = int(os.environ["RANK"])
    except (KeyError, ValueError):
        return None, None
    try:
        w = int(os.environ["WORLD_SIZE"])
    except (KeyError, ValueError):
        w = None
    return r, w


def versions():
    """The versions this process trains on; "" for what torch was built without."""
    import torch

    v = {"python": sys.version.split()[0], "torch": torch.__version__, "cuda": torch.version.cuda or "none",
         "cudnn": "", "nccl": ""}
    try:
        c = torch.backends.cudnn.version()  # None without cuDNN
        v["cudnn"] = str(c) if c else ""
    except Exception:
        pass
    try:
        n = torch.cuda.nccl.version()  # a tuple from torch 1.x late, an int before
        v["nccl"] = ".".join(str(x) for x in n) if isinstance(n, tuple) else str(n)
    except Exception:  # a build without CUDA has no NCCL
        pass
    return v


def label(claim):
    """" rank R" for a ranked process, "" otherwise: what its log lines carry."""
    return "" if not claim or claim["rank"] is None else f" rank {claim['rank']}"


def current():
    """This process's claim: a dict, False when refused, None when not yet made."""
    return _claims.get(os.getpid())


def claim(trace=""):
    """Claims this process's rank at its first optimizer step (see the module doc)."""
    pid = os.getpid()
    if pid in _claims:
        return _claims[pid]
    r, w = rank()
    info = {"rank": r, "world_size": w, "pid": pid, "trace": trace.replace("{rank}", str(r or 0))}
    if os.environ.get("GPUGATE_SLURM") == "1":
        # The Slurm node this task runs on (docs/slurm.md).
        info["node"] = os.environ.get("SLURMD_NODENAME", "")
    try:
        info.update(versions())
    except Exception as e:
        info["error"] = repr(e)
    path = os.environ.get("GPUGATE_JOB_OUT", "")
    if path:
        path = path.replace("{rank}", str(r or 0))
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            _claims[pid] = False
            say(f"[gpugate pid={pid}] rank {r or 0} is already profiled by another process of the job: "
                f"this one (pid {pid}) is not")
            return False
        except OSError as e:  # still profile: only the versions are lost
            say(f"[gpugate pid={pid}] cannot write {path}: {e}")
            fd = None
        if fd is not None:
            with os.fdopen(fd, "w") as f:
                json.dump(info, f)
    _claims[pid] = info
    return info
