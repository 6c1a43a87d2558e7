"""A/B of the uint8 planar color apply kernel's pixels per thread (TORCHAUG_COLOR_APPLY_WIDTH=16
vs 4; by default csrc/cuda/color.cu picks 4 for programs that may hold hue) on 256x3x224x224 uint8: adjust_hue, adjust_saturation,
adjust_brightness, ColorJitter's program, and the copy floor; each setting in its own process.
    python3 scripts/color_ab.py"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, ROOT)
from harness import child_result, run_child, time_cuda  # noqa: E402


def child():
    import torch
    import torchaug.functional as F
    import torchaug.transforms as T

    B, dev = 256, "cuda"
    g = torch.Generator(device=dev).manual_seed(0)
    xs = [torch.randint(0, 256, (B, 3, 224, 224), dtype=torch.uint8, device=dev, generator=g) for _ in range(4)]
    f = torch.rand(B, device=dev, generator=g) * 2
    hue = torch.rand(B, device=dev, generator=g) - 0.5
    cj = T.ColorJitter(0.4, 0.4, 0.4, 0.1)
    cp = cj.make_params(xs[0])
    cases = {
        "copy floor": lambda i: xs[i % 4].clone(),
        "adjust_hue": lambda i: F.adjust_hue(xs[i % 4], hue, validate=False),
        "adjust_saturation": lambda i: F.adjust_saturation(xs[i % 4], f, validate=False),
        "adjust_brightness": lambda i: F.adjust_brightness(xs[i % 4], f, validate=False),
        "ColorJitter program": lambda i: cj(xs[i % 4], params=cp),
        "ColorJitter transform": lambda i: cj(xs[i % 4]),
    }
    out = {k: B * 1e3 / time_cuda(fn, iters=50, warmup=5, repeats=5)["ms"] for k, fn in cases.items()}
    child_result(out)


def main():
    for width in ("16", "4"):
        r, err = run_child(__file__, {"TORCHAUG_COLOR_APPLY_WIDTH": width})
        if r is None:
            print(f"width {width}: FAILED\n{err}")
            continue
        print(f"width {width:>2}: " + ", ".join(f"{k} {v:,.0f} img/s" for k, v in r.items()), flush=True)


if __name__ == "__main__":
    child() if "--child" in sys.argv else main()
