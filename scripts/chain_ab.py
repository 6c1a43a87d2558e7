"""Case 4's chain (RandomResizedCrop(224) + flip + RandAugment(2, 9) + ToDtype + Normalize on 256
uint8 500x375 images, bench_augment's first row) under values of one environment variable that the
library reads at each call, the values in alternate rounds (clock or neighbour drift hits them
alike): ms a batch by CUDA events, then each kernel's time a call (CUPTI) under each value.

    python3 scripts/chain_ab.py --env TORCHAUG_RC_L2 --values normal,evict_first [--rounds 4] [--json out.json]
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torchaug.transforms as T  # noqa: E402
from bench_augment import torchaug_chain  # noqa: E402  (bench_augment's first row: the same chain)
from harness import environment, kernel_us, saved_env, time_cuda  # noqa: E402


def chain_ab(env_name, values, rounds, iters=40, batch=256):
    """Case 4's chain timed with env_name at each of values ("unset": left out) in alternate rounds:
    ({value: [ms a batch, a round each]}, {value: {kernel: us a call}}). The variable's setting
    before comes back afterwards."""
    torch.manual_seed(0)
    photos = [torch.randint(0, 256, (batch, 3, 375, 500), dtype=torch.uint8, device="cuda") for _ in range(4)]
    chain = torchaug_chain(T.RandAugment(2, 9))

    def use(value):
        if value == "unset":
            os.environ.pop(env_name, None)
        else:
            os.environ[env_name] = value

    ms = {v: [] for v in values}
    kernels = {}
    with saved_env(env_name):
        for _ in range(rounds):
            for v in values:
                use(v)
                ms[v].append(time_cuda(lambda i: chain(photos[i % 4]), iters)["ms"])
        for v in values:
            use(v)
            kernels[v] = kernel_us(lambda i: chain(photos[i % 4]), 20)
    return ms, kernels


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--env", required=True)
    p.add_argument("--values", required=True, help="comma-separated; 'unset' leaves the variable out")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--iters", type=int, default=40)
    p.add_argument("--json")
    a = p.parse_args()
    values = a.values.split(",")
    env = environment()
    print(f"# chain_ab {a.env} in {values} · {env['device']} · commit {env['commit']}", flush=True)
    ms, kernels = chain_ab(a.env, values, a.rounds, a.iters)
    for v in values:
        best = min(ms[v])
        print(f"{a.env}={v}: ms a batch " + " ".join(f"{x:.4f}" for x in ms[v]) + f" (best {best:.4f}, {256 / best * 1e3:,.0f} img/s)",
              flush=True)
        print("  kernels (us a call): " + ", ".join(f"{k} {t:.1f}" for k, t in sorted(kernels[v].items(), key=lambda kv: -kv[1])),
              flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"environment": env, "env": a.env, "chain_ms": ms, "kernels_us": kernels}, f, indent=1)


if __name__ == "__main__":
    main()
