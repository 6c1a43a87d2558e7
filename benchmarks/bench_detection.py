"""Detection operators on the GPU, side by side with torchvision.ops: nms and
batched_nms on 10,000 and 100,000 boxes, and roi_align (forward, and forward + backward) on a
Mask R-CNN-sized batch (2 images of 256 x 200 x 304 features, stride 4; 512 RoIs per image; 7 x 7
bins, sampling_ratio 2, aligned). The img/s column counts calls per second here (batch 1).

    python benchmarks/bench_detection.py [--json out.json] [--markdown out.md] [--quick]
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from torchaug import ops as tops  # noqa: E402
from harness import Results, family_args, time_cuda  # noqa: E402


def boxes_on_canvas(n, gen, canvas=1000.0, max_wh=100.0, dev="cuda"):
    xy = torch.rand(n, 2, generator=gen, device=dev) * canvas
    wh = torch.rand(n, 2, generator=gen, device=dev) * max_wh + 1
    return torch.cat([xy, xy + wh], 1)


def main():
    args = family_args("bench_detection")
    if args is None:
        return
    import torchvision

    dev = "cuda"
    iters = 3 if args.quick else 10
    res = Results("Detection operators: nms, batched_nms, roi_align (calls per second)")
    gen = torch.Generator(device=dev).manual_seed(0)
    for n in (10_000, 100_000):
        sets = [(boxes_on_canvas(n, gen), torch.rand(n, generator=gen, device=dev),
                 torch.randint(0, 80, (n,), generator=gen, device=dev)) for _ in range(3)]
        # agreement first: a benchmark of different answers is no comparison
        b, s, c = sets[0]
        same = torch.equal(tops.nms(b, s, 0.5), torchvision.ops.nms(b, s, 0.5))
        same_b = torch.equal(tops.batched_nms(b, s, c, 0.5), torchvision.ops.batched_nms(b, s, c, 0.5))
        kept = int(tops.nms(b, s, 0.5).numel())
        it = max(2, iters // (4 if n > 50_000 else 1))
        note = f"{kept} of {n} kept; same indices as torchvision: {same}"
        res.add(f"nms {n:,} boxes (IoU 0.5)", "torchaug.ops.nms", 1,
                time_cuda(lambda i: tops.nms(*sets[i % 3][:2], 0.5), it, warmup=2), note)
        res.add(f"nms {n:,} boxes (IoU 0.5)", "torchvision.ops.nms", 1,
                time_cuda(lambda i: torchvision.ops.nms(*sets[i % 3][:2], 0.5), it, warmup=2))
        note = f"80 classes; same indices as torchvision: {same_b}"
        res.add(f"batched_nms {n:,} boxes (IoU 0.5)", "torchaug.ops.batched_nms (one pass)", 1,
                time_cuda(lambda i: tops.batched_nms(*sets[i % 3], 0.5), it, warmup=2), note)
        res.add(f"batched_nms {n:,} boxes (IoU 0.5)", "torchvision.ops.batched_nms", 1,
                time_cuda(lambda i: torchvision.ops.batched_nms(*sets[i % 3], 0.5), it, warmup=2))

    for dtype in (torch.float32, torch.float16):  # torchvision's roi_align has no bfloat16 kernel
        feats = [torch.randn(2, 256, 200, 304, generator=gen, device=dev).to(dtype) for _ in range(2)]
        rois = []
        for _ in range(2):
            bx = boxes_on_canvas(1024, gen, canvas=1100.0, max_wh=300.0)
            idx = torch.arange(2, device=dev).repeat_interleave(512).float()
            rois.append(torch.cat([idx[:, None], bx], 1).to(dtype))
        args_ = ((7, 7), 0.25, 2, True)
        a = tops.roi_align(feats[0], rois[0], *args_)
        bref = torchvision.ops.roi_align(feats[0], rois[0], *args_)
        err = float((a.float() - bref.float()).abs().max())
        name = "float32" if dtype == torch.float32 else "float16"
        case = f"roi_align fwd {name} (2x256x200x304, 1024 RoIs)"
        res.add(case, "torchaug.ops.roi_align", 1,
                time_cuda(lambda i: tops.roi_align(feats[i % 2], rois[i % 2], *args_, validate=False), iters), f"max |diff| vs torchvision {err:.2e}")
        res.add(case, "torchvision.ops.roi_align", 1, time_cuda(lambda i: torchvision.ops.roi_align(feats[i % 2], rois[i % 2], *args_), iters))
        leaves = [f.clone().requires_grad_() for f in feats]
        g = torch.randn(1024, 256, 7, 7, device=dev).to(dtype)

        def fwd_bwd(fn, i):
            x = leaves[i % 2]
            return torch.autograd.grad(fn(x, rois[i % 2]), x, g)

        case = f"roi_align fwd+bwd {name}"
        res.add(case, "torchaug.ops.roi_align", 1,
                time_cuda(lambda i: fwd_bwd(lambda x, r: tops.roi_align(x, r, *args_, validate=False), i), iters))
        res.add(case, "torchvision.ops.roi_align", 1,
                time_cuda(lambda i: fwd_bwd(lambda x, r: torchvision.ops.roi_align(x, r, *args_), i), iters))
    res.save(args.json, args.markdown)
    print()
    print(res.markdown())


if __name__ == "__main__":
    main()
