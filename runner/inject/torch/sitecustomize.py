# gpugate's torch.profiler injection. gpugate puts this folder first on
# PYTHONPATH, so Python imports this file at start-up, before the user's
# script: the script itself is never modified. It does nothing unless
# GPUGATE_TORCH_PROFILE=1, and it chains to the sitecustomize it shadows.
import importlib.util
import os
import sys

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

if os.environ.get("GPUGATE_TORCH_PROFILE") == "1":
    sys.path.insert(0, _here)
    import gpugate_torchprof

    gpugate_torchprof.install()
