# gpugate's injection into an unmodified Python training job. gpugate puts
# this folder first on the job's PYTHONPATH (through nsys -e for nsys runs),
# so Python imports this file at start-up, before the user's script, which is
# never modified. It chains to the sitecustomize it shadows, then loads
#   gpugate_torchprof (torch.profiler) when GPUGATE_TORCH_PROFILE=1,
#   gpugate_nvtx (NVTX ranges for nsys) when GPUGATE_NVTX=1,
#   gpugate_timing (step times, no profiler: a timing run) when GPUGATE_TIMING=1,
# and does nothing otherwise. Under Slurm (GPUGATE_SLURM=1) it first gives
# the task the launcher contract from Slurm's own variables: RANK from
# SLURM_PROCID, WORLD_SIZE from SLURM_NTASKS, LOCAL_RANK from SLURM_LOCALID,
# where the job has not set them (docs/slurm.md).
import importlib.util
import os
import sys

if os.environ.get("GPUGATE_SLURM") == "1" and "SLURM_PROCID" in os.environ:
    for _k, _s in (("RANK", "SLURM_PROCID"), ("WORLD_SIZE", "SLURM_NTASKS"), ("LOCAL_RANK", "SLURM_LOCALID")):
        if _k not in os.environ and _s in os.environ:
            os.environ[_k] = os.environ[_s]

_here = os.path.dirname(os.path.abspath(__file__))
for _d in sys.path:
    if not _d or os.path.abspath(_d) == _here:
        continue
    _cand = os.path.join(_d, "sitecustomize.py")
    if os.path.isfile(_cand):
        try:
            _spec = importlib.util.spec_from_file_location("_gpugate_chained_sitecustomize", _cand)
            _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
        except Exception as _e:  # never break the user's job over another hook
            print(f"[gpugate] chained sitecustomize {_cand} failed: {_e}", file=sys.stderr)
        break

if "1" in (os.environ.get("GPUGATE_TORCH_PROFILE"), os.environ.get("GPUGATE_NVTX"), os.environ.get("GPUGATE_TIMING")):
    sys.path.insert(0, _here)
    if os.environ.get("GPUGATE_TORCH_PROFILE") == "1":
        import gpugate_torchprof

        gpugate_torchprof.install()
    if os.environ.get("GPUGATE_NVTX") == "1":
        import gpugate_nvtx

        gpugate_nvtx.install()
    if os.environ.get("GPUGATE_TIMING") == "1":
        import gpugate_timing

        gpugate_timing.install()
