"""A plain launcher: starts N copies of a training script with the
torch.distributed environment contract that torchrun follows (RANK,
LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), and
waits for them. It never trains itself: gpugate must profile the workers,
not this process.

  python launch.py --nproc 2 train.py --steps 12
"""

import os
import subprocess
import sys


def main():
    argv = sys.argv[1:]
    n = 2
    if argv[:1] == ["--nproc"]:
        n, argv = int(argv[1]), argv[2:]
    procs = []
    for rank in range(n):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(n),
                   LOCAL_WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=os.environ.get("MASTER_PORT", "29532"))
        procs.append(subprocess.Popen([sys.executable] + argv, env=env))
    rc = 0
    for p in procs:
        rc = p.wait() or rc
    sys.exit(rc)


if __name__ == "__main__":
    main()
