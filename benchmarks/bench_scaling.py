"""Where torchaug's cost goes as images shrink or grow and batches get small: the main chains on
uint8 device batches, timed with CUDA events (so host-bound calls show as the gaps between them).

- image size: S x S for S in 32, 64, 128, 224, 512, 1024 at batch 256; RandomResizedCrop(S) + flip +
  normalize, and the same with RandAugment(2, 9) between (up to 128x128 also replayed from a CUDA graph). Target: the cost per pixel within +-20% of
  its median over 64..1024 (the rows' targets: img/s at least the median's per-pixel cost allows,
  less 20%);
- batch size: 8, 32, 128, 256, 1024 at 224x224 from 500x375, and up to 128 the chain captured in a
  CUDA graph and replayed (its draws are made on the GPU, so each replay draws anew). Target: at
  batch 32 the cost per image at most twice that at 256 (B=32's target: half of B=256's img/s).
Each row's note gives ns per output pixel and the host time a call takes (its Python and launches).

    python benchmarks/bench_scaling.py [--json out.json] [--markdown out.md] [--quick]
"""
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torchaug  # noqa: E402
import torchaug.transforms as T  # noqa: E402
from harness import Results, family_args, host_ms, time_cuda  # noqa: E402

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
SIZES = (32, 64, 128, 224, 512, 1024)
BATCHES = (8, 32, 128, 256, 1024)


def chain(size, randaugment):
    middle = [T.RandAugment(2, 9)] if randaugment else []
    return T.Compose([T.RandomResizedCrop(size), T.RandomHorizontalFlip(), *middle,
                      T.ToDtype(torch.float32, scale=True), T.Normalize(MEAN, STD)])


def measure(f, xs, iters):
    return time_cuda(lambda i: f(xs[i % len(xs)]), iters)


def main():
    args = family_args("bench_scaling")
    if args is None:
        return
    res = Results("Scaling with image size and batch size")
    print(f"# {res.title}\n# {res.env}", flush=True)
    torch.manual_seed(0)
    iters = 5 if args.quick else 30
    for randaugment in (False, True):
        name = "RRC+flip+" + ("RandAugment(2,9)+" if randaugment else "") + "normalize"
        rows, small = [], {}
        for s in SIZES:
            xs = [torch.randint(0, 256, (256, 3, s, s), dtype=torch.uint8, device="cuda") for _ in range(2)]
            f = chain(s, randaugment)
            t = measure(f, xs, iters)
            rows.append((s, t, host_ms(f, lambda i, x=xs[0]: x)))
            if s <= 128:  # where a call's host time exceeds the GPU's: the chain replayed from a graph
                graphs = [torchaug.graphed(f, x) for x in xs]
                small[s] = time_cuda(lambda i: graphs[i % len(graphs)].replay(), iters)
                del graphs
            del xs
            torch.cuda.empty_cache()
        per_px = {s: t["ms"] * 1e6 / (256 * s * s) for s, t, _ in rows}
        median = statistics.median(per_px[s] for s in SIZES if s >= 64)
        for s, t, h in rows:
            target = 1e9 / (1.2 * median * s * s) if s >= 64 else None  # img/s at 1.2x the median ns/pixel
            res.add(f"size: {name}, 256 x {s}x{s} -> {s}x{s}", "torchaug transforms", 256, t, target=target,
                    note=f"{per_px[s]:.3f} ns/pixel ({per_px[s] / median - 1:+.0%} vs the median over 64..1024); host {h:.2f} ms/call")
            if s in small:
                px = small[s]["ms"] * 1e6 / (256 * s * s)
                res.add(f"size: {name}, 256 x {s}x{s} -> {s}x{s}", "torchaug transforms in a CUDA graph", 256, small[s],
                        target=target, note=f"{px:.3f} ns/pixel ({px / median - 1:+.0%} vs the eager median); fresh draws each replay")
        by_b, replayed = {}, {}
        for b in BATCHES:
            xs = [torch.randint(0, 256, (b, 3, 375, 500), dtype=torch.uint8, device="cuda") for _ in range(2)]
            f = chain(224, randaugment)
            n = iters if b <= 256 else max(3, iters // 3)
            by_b[b] = (measure(f, xs, n), host_ms(f, lambda i, x=xs[0]: x))
            if b <= 128:  # the chain captured once per input and replayed: no Python, one graph launch
                graphs = [torchaug.graphed(f, x) for x in xs]
                replayed[b] = time_cuda(lambda i: graphs[i % len(graphs)].replay(), n)
                del graphs
            del xs
            torch.cuda.empty_cache()
        per_img_256 = by_b[256][0]["ms"] / 256
        case = f"batch: {name}, 224x224 from 500x375"
        for b, (t, h) in by_b.items():
            res.add(case, f"torchaug transforms, batch {b}", b, t, target=256 / by_b[256][0]["ms"] * 1e3 / 2 if b == 32 else None,
                    note=f"{1e3 * t['ms'] / b:.2f} us/image ({t['ms'] / b / per_img_256:.2f}x batch 256's); host {h:.2f} ms/call")
        for b, t in replayed.items():
            res.add(case, f"torchaug transforms in a CUDA graph, batch {b}", b, t,
                    target=256 / by_b[256][0]["ms"] * 1e3 / 2 if b == 32 else None,
                    note=f"{1e3 * t['ms'] / b:.2f} us/image ({t['ms'] / b / per_img_256:.2f}x batch 256's eager); "
                    "captured once, fresh draws each replay")
    res.save(args.json, args.markdown)
    print()
    print(res.markdown())


if __name__ == "__main__":
    main()
