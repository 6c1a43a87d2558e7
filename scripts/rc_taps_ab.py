"""A/B of resized_crop's uint8 tap modes (TORCHAUG_RC_TAPS, csrc/cuda/geometry.cu) in one process:
benchmark case 1 (RandomResizedCrop(224) + flip + ToDtype + Normalize, batch 256 of 3x375x500
uint8), the op with its parameters drawn beforehand and the fused transform, the modes interleaved
round by round so that clock or neighbour drift hits them alike; torchvision v2 batch-wide on the
same inputs as the peer. Prints the median img/s of each over the rounds.

    python3 scripts/rc_taps_ab.py [--rounds 5]
"""
import argparse
import os
import statistics
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import torchaug.functional as F  # noqa: E402
from bench_geometry import MEAN, STD, torchaug_pipeline, torchvision_pipeline  # noqa: E402
from harness import environment, saved_env, time_cuda  # noqa: E402

MODES = ["exponent", "scaled"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=40)
    args = ap.parse_args()
    env = environment()
    print(f"# rc_taps_ab · {env['device']} · torch {env['torch']} · commit {env['commit']}", flush=True)
    B, n_rot = 256, 4
    torch.manual_seed(0)
    inputs = [torch.randint(0, 256, (B, 3, 375, 500), dtype=torch.uint8, device="cuda") for _ in range(n_rot)]
    fused = torchaug_pipeline()
    params = [fused.transforms[0].make_params(x)["boxes"] for x in inputs]
    flips = [fused.transforms[1].make_params(x)["flip"] for x in inputs]
    rows = {}

    def op(i):
        return F.resized_crop_boxes(inputs[i % n_rot], params[i % n_rot], [224, 224], flip=flips[i % n_rot], mean=MEAN,
                                    std=STD, validate=False)

    with saved_env("TORCHAUG_RC_TAPS"):  # the caller's setting comes back afterwards
        ref = None
        for mode in MODES:  # the modes agree bitwise on this case too
            os.environ["TORCHAUG_RC_TAPS"] = mode
            out = op(0)
            ref = out if ref is None else ref
            print(f"  {mode:<9} bitwise equal to exponent: {torch.equal(out, ref)}", flush=True)
        for r in range(args.rounds):
            for mode in MODES:
                os.environ["TORCHAUG_RC_TAPS"] = mode
                rows.setdefault(("op, params drawn beforehand", mode), []).append(time_cuda(op, args.iters, repeats=3)["ms"])
                rows.setdefault(("transform, params on GPU", mode), []).append(
                    time_cuda(lambda i: fused(inputs[i % n_rot]), args.iters, repeats=3)["ms"])
    try:
        tv = torchvision_pipeline()
        rows[("torchvision v2 batch-wide (peer)", "-")] = [time_cuda(lambda i: tv(inputs[i % n_rot]), args.iters)["ms"]]
    except ImportError:
        pass
    print(f"\n| what | tap mode | ms / batch (median of {args.rounds} rounds) | min | max | img/s |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for (what, mode), ms in rows.items():
        med = statistics.median(ms)
        print(f"| {what} | {mode} | {med:.4f} | {min(ms):.4f} | {max(ms):.4f} | {B / med * 1e3:,.0f} |")


if __name__ == "__main__":
    main()
