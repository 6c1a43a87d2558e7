"""Where a chain call's host time goes: the RandomResizedCrop + flip + ToDtype + Normalize chain (or
CIFAR's RandomCrop(32, padding=4) chain) on a uint8 batch, its host time per call (benchmarks/harness.py
host_ms: the device idle at each call's start), then torch.profiler's CPU self
time per op over a few calls: for a call that is host-bound (small batches, small images), which
op, allocation or launch to look at. On CUDA when there is a GPU, else on the CPU.
    python3 scripts/profile/host_split.py [--chain rrc|cifar] [--batch 32] [--calls 50]
"""
import argparse
import os
import sys

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]
import torchaug.transforms as T  # noqa: E402
from harness import host_ms, sync_device  # noqa: E402

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def chain_and_input(name: str, batch: int, device: str):
    if name == "cifar":
        crop, size = T.RandomCrop(32, padding=4), (32, 32)
    else:
        crop, size = T.RandomResizedCrop(224), (375, 500)
    chain = T.Compose([crop, T.RandomHorizontalFlip(), T.ToDtype(torch.float32, scale=True), T.Normalize(MEAN, STD)])
    return chain, torch.randint(0, 256, (batch, 3) + size, dtype=torch.uint8, device=device)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chain", choices=("rrc", "cifar"), default="rrc")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--calls", type=int, default=50)
    args = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    chain, x = chain_and_input(args.chain, args.batch, device)
    print(f"{args.chain} chain, batch {args.batch} on {device}: host {1e3 * host_ms(chain, lambda i: x, args.calls):.1f} us a call")
    from torch.profiler import ProfilerActivity, profile, schedule
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    # the calls before the recorded ones take the profiler's start-up cost (else the first op's)
    with profile(activities=activities, schedule=schedule(wait=1, warmup=1, active=args.calls)) as prof:
        for _ in range(args.calls + 2):
            chain(x)
            prof.step()
        sync_device()
    print(f"per op over {args.calls} calls (CPU self time):")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20))


if __name__ == "__main__":
    main()
