"""Where case 4's chain spends its wall time (RandomResizedCrop(224) + flip + RandAugment(2, 9) +
ToDtype + Normalize on 256 uint8 500x375 images, bench_augment's first row), in alternate rounds:

- full:   the chain as bench_augment times it (the draws, then the crop, then the policy);
- given:  the same chain with its parameters drawn once beforehand (params=): the crop, the order
          and the resident kernel only, so full - given is what the draws cost the critical path;
- graph:  the full chain captured once in a CUDA graph and replayed (no launch gaps, no host);
- host:   the host's time to issue one call of the full chain (50 calls without waiting).

Then each kernel's time a call (CUPTI) of the full chain.

    python3 scripts/chain_parts.py [--rounds 4] [--json out.json]
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torchaug.transforms as T  # noqa: E402
from bench_augment import torchaug_chain  # noqa: E402  (bench_augment's first row: the same chain)
from harness import environment, kernel_us, time_cuda  # noqa: E402


def host_ms(fn, calls=50, repeats=5):
    """The host's ms to issue one call of fn (calls issued back to back without waiting, best of
    repeats; the GPU drained between repeats)."""
    best = float("inf")
    for r in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(calls):
            fn(i)
        best = min(best, (time.perf_counter() - t0) / calls * 1e3)
    torch.cuda.synchronize()
    return best


def graphed(fn, photos):
    """fn's calls on photos[0..3] captured in a CUDA graph each: a replay function, or the error."""
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for i in range(3):
                fn(i)
        torch.cuda.current_stream().wait_stream(side)
        graphs = []
        for i in range(4):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                fn(i)
            graphs.append(g)
        return lambda i: graphs[i % 4].replay()
    except Exception as e:  # noqa: BLE001 (reported, the row left out)
        return f"{type(e).__name__}: {e}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--iters", type=int, default=40)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--json")
    a = p.parse_args()
    env = environment()
    print(f"# chain_parts · {env['device']} · commit {env['commit']}", flush=True)
    torch.manual_seed(0)
    photos = [torch.randint(0, 256, (a.batch, 3, 375, 500), dtype=torch.uint8, device="cuda") for _ in range(4)]
    chain = torchaug_chain(T.RandAugment(2, 9))
    params = [chain(x, return_params=True)[1] for x in photos]
    fns = {
        "full": lambda i: chain(photos[i % 4]),
        "given": lambda i: chain(photos[i % 4], params=params[i % 4]),
    }
    g = graphed(lambda i: chain(photos[i % 4]), photos)
    if callable(g):
        fns["graph"] = g
    else:
        print(f"graph: not captured ({g})", flush=True)
    ms = {k: [] for k in fns}
    host = {k: [] for k in ("full", "given")}
    for _ in range(a.rounds):
        for k, fn in fns.items():
            ms[k].append(time_cuda(fn, a.iters)["ms"])
        for k in host:
            host[k].append(host_ms(fns[k]))
    for k in fns:
        best = min(ms[k])
        print(f"{k:>6}: ms a batch " + " ".join(f"{x:.4f}" for x in ms[k]) + f" (best {best:.4f}, {a.batch / best * 1e3:,.0f} img/s)",
              flush=True)
    for k in host:
        print(f"host {k}: ms a call issued " + " ".join(f"{x:.4f}" for x in host[k]), flush=True)
    kernels = {k: kernel_us(fns[k], 20) for k in ("full", "given")}
    for k, ks in kernels.items():
        print(f"kernels {k} (us a call, sum {sum(ks.values()):.1f}): "
              + ", ".join(f"{n} {t:.1f}" for n, t in sorted(ks.items(), key=lambda kv: -kv[1])), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"environment": env, "chain_ms": ms, "host_ms": host, "kernels_us": kernels}, f, indent=1)


if __name__ == "__main__":
    main()
