"""gpugate's built-in demo: a small, real PyTorch training job that runs on
any machine (CPU, or a GPU when one is there), on synthetic data.

It knows nothing about profilers: gpugate profiles it from the outside.

GPUGATE_DEMO selects a variant that reproduces a classic slowdown:
  (unset)       healthy baseline: 2 DataLoader workers, light augmentation
  slow-loader   num_workers=0 and heavy augmentation in __getitem__
  host-sync     a per-step loss.item() and a full-tensor .cpu() copy
  leak          a "feature cache" that is never cleared: every step's
                conv layers' inputs and outputs are kept as float64 copies
                (conv1 0.75 + 4 MiB, conv2 1 + 2 MiB at batch 32), so host
                memory (GPU memory on CUDA) grows 7.75 MiB a step
"""

import argparse
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class SyntheticImages(Dataset):
    """Random 3x32x32 images whose __getitem__ does real CPU augmentation
    work: random crops, flips and a blur, repeated `rounds` times."""

    def __init__(self, n, rounds, seed=0):
        self.n = n
        self.rounds = rounds
        g = torch.Generator().manual_seed(seed)
        self.images = torch.randn(n, 3, 36, 36, generator=g)
        self.labels = torch.randint(0, 10, (n,), generator=g)
        self.kernel = torch.ones(3, 1, 3, 3) / 9.0

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        img = self.images[i]
        out = None
        for r in range(self.rounds):
            y, x = (i + r) % 5, (i * 7 + r) % 5
            crop = img[:, y:y + 32, x:x + 32]
            if (i + r) % 2:
                crop = torch.flip(crop, dims=[2])
            crop = F.conv2d(crop.unsqueeze(0), self.kernel, padding=1, groups=3).squeeze(0)
            crop = (crop - crop.mean()) / (crop.std() + 1e-5)
            out = crop if out is None else 0.5 * (out + crop)
        return out, self.labels[i]


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 8 * 8, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--log-every", type=int, default=1)
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                    help="auto (the default): CUDA when torch sees a GPU, else the CPU; "
                         "cuda fails when there is none")
    args = ap.parse_args()

    variant = os.environ.get("GPUGATE_DEMO", "")
    if variant not in ("", "slow-loader", "host-sync", "leak"):
        sys.exit(f"train.py: unknown GPUGATE_DEMO={variant!r} (want slow-loader, host-sync, leak or unset)")
    workers, rounds = (0, 16) if variant == "slow-loader" else (2, 1)

    torch.manual_seed(0)
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("train.py: --device cuda, but torch sees no CUDA device "
                 f"(torch {torch.__version__}, built for CUDA {torch.version.cuda})")
    if args.device == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        device = torch.device(args.device)
    data = SyntheticImages(n=args.steps * args.batch_size + args.batch_size, rounds=rounds)
    extra = {"persistent_workers": True, "prefetch_factor": 4} if workers else {}
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=True, num_workers=workers,
                        pin_memory=device.type == "cuda", drop_last=True, **extra)
    model = SmallCNN().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    kept = []
    if variant == "leak":
        # The activations are detached but never freed: a debugging cache
        # (upcast for offline analysis) forgotten in the loop.
        for layer in (model.conv1, model.conv2):
            layer.register_forward_hook(lambda mod, inp, out: kept.append((inp[0].detach().double(), out.detach().double())))
    print(f"demo: variant={variant or 'baseline'} device={device} workers={workers} "
          f"augment_rounds={rounds} steps={args.steps} torch={torch.__version__}", flush=True)

    step = 0
    last = time.perf_counter()
    for x, y in loader:
        if step >= args.steps:
            break
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if variant == "host-sync":
            value = loss.item()                       # a device-to-host sync every step
            snapshot = model.fc.weight.detach().cpu()  # and a full-tensor copy to the host
            del snapshot
        else:
            value = None
        step += 1
        now = time.perf_counter()
        if step % args.log_every == 0:
            shown = f" loss={value:.4f}" if value is not None else ""
            print(f"step {step} time_ms={(now - last) * 1e3:.2f}{shown}", flush=True)
        last = now
    print(f"demo: done, {step} steps", flush=True)


if __name__ == "__main__":
    main()
