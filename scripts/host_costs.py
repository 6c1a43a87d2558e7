"""The host's side of case 4's chain (RandomResizedCrop(224) + flip + RandAugment(2, 9) + ToDtype +
Normalize on 256 uint8 500x375 images): microseconds of host time for one call of the chain and of
its pieces, the GPU drained before each call, with the GPU idle and with a kernel still running
(torch.cuda._sleep), median of 200 calls. Where a call of the whole chain takes more host time than
its kernels take GPU time (~0.26-0.27 ms on an H100), the chain is host-bound on that machine.

    python3 scripts/host_costs.py [--json out.json]
"""
import argparse
import json
import os
import platform
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torchaug.transforms as T  # noqa: E402
from bench_augment import torchaug_chain  # noqa: E402  (bench_augment's first row: the same chain)
from harness import environment  # noqa: E402


def host_us(fn, busy: bool, calls: int = 200) -> float:
    """Median host microseconds of fn(), the GPU drained before each call (and given ~1 ms of work
    first when busy)."""
    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        if busy:
            torch.cuda._sleep(2_000_000)
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    times.sort()
    return times[len(times) // 2] * 1e6


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json")
    a = p.parse_args()
    env = environment()
    env["cpu"] = cpu_model()
    print(f"# host_costs · {env['device']} · {env['cpu']} · commit {env['commit']}", flush=True)
    torch.manual_seed(0)
    x = torch.randint(0, 256, (256, 3, 375, 500), dtype=torch.uint8, device="cuda")
    y = torch.randint(0, 256, (256, 3, 224, 224), dtype=torch.uint8, device="cuda")
    chain = torchaug_chain(T.RandAugment(2, 9))
    crop, flip, policy = chain.transforms[:3]
    u = torch.rand(256, 22, dtype=torch.float64, device="cuda")
    _, params = chain(x, return_params=True)
    rows = {
        "torch.empty (256, 22) float64": lambda: torch.empty(256, 22, dtype=torch.float64, device="cuda"),
        "torch.rand (256, 22) float64": lambda: torch.rand(256, 22, dtype=torch.float64, device="cuda"),
        "torch.empty(256, bool).bernoulli_": lambda: torch.empty(256, dtype=torch.bool, device="cuda").bernoulli_(0.5),
        "torchaug::_random_resized_crop_boxes": lambda: torch.ops.torchaug._random_resized_crop_boxes(u, None, 375, 500, 0.08, 1.0,
                                                                                                        0.75, 4 / 3),
        "RandomResizedCrop.make_params": lambda: crop.make_params(x),
        "RandomHorizontalFlip.make_params": lambda: flip.make_params(x),
        "RandAugment.make_params": lambda: policy.make_params(y),
        "chain, parameters given": lambda: chain(x, params=params),
        "chain": lambda: chain(x),
    }
    out = {}
    for name, fn in rows.items():
        fn()
        idle, busy = host_us(fn, False), host_us(fn, True)
        out[name] = {"idle_us": idle, "busy_us": busy}
        print(f"{name}: {idle:.1f} us with the GPU idle, {busy:.1f} us with a kernel running", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"environment": env, "host_us": out}, f, indent=1)


if __name__ == "__main__":
    main()
