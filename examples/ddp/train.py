"""A 2-rank DDP training loop on CPU over gloo, for gpugate's multi-process tests.

Started by torchrun, by launch.py (a plain launcher that sets the
torch.distributed environment contract: RANK, LOCAL_RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT), or with --spawn by torch.multiprocessing.spawn
(the rank is an argument there, not in the environment). It knows nothing
about profilers: gpugate profiles each rank from the outside.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def train(rank, world, args):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(64, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(rank)
    for step in range(args.steps):
        t0 = time.perf_counter()
        x = torch.randn(args.batch, 64, generator=g)
        y = torch.randint(0, 10, (args.batch,), generator=g)
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        if rank == 0 and args.extra_forward:
            # A straggler: rank 0 alone evaluates the batch again each
            # step and logs the loss with .item() (a host sync), as a
            # debugging or metrics change might; rank 1 waits for it at
            # the next all-reduce.
            with torch.no_grad():
                for _ in range(args.extra_forward):
                    loss_fn(model.module(x), y).item()
        if rank == 0 and args.log_every and step % args.log_every == 0:
            print(f"rank {rank} step {step} time_ms={(time.perf_counter() - t0) * 1000:.3f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


def spawned(rank, world, args):
    train(rank, world, args)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--log-every", type=int, default=0)
    ap.add_argument("--hidden", type=int, default=256, help="width of the hidden layer")
    ap.add_argument("--extra-forward", type=int, default=0, help="extra forward passes per step on rank 0 only (a straggler), each ending in .item()")
    ap.add_argument("--spawn", type=int, default=0, help="start this many ranks with torch.multiprocessing.spawn")
    args = ap.parse_args()
    torch.set_num_threads(1)  # two ranks on a 2-core runner
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29531")
        import torch.multiprocessing as mp

        mp.spawn(spawned, args=(args.spawn, args), nprocs=args.spawn, join=True)
        return
    train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)


if __name__ == "__main__":
    main()
