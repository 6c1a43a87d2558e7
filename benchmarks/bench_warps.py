"""torchvision v2's warps (RandomRotation, RandomAffine, RandomPerspective, ElasticTransform) and
JPEG on a batch of 256 uint8 224x224 images on the GPU, side by side:

- torchaug's transform on the batch (per-sample parameters drawn on the GPU, one launch per op);
- torchvision v2's transform in a per-sample loop on the same GPU (the per-sample semantics), and on
  the whole batch where it takes one (one draw for the batch);
- kornia's augmentation (float32 input, per-sample parameters) when the kornia wheel was carried to
  the device.

    python benchmarks/bench_warps.py [--json out.json] [--markdown out.md] [--quick]
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torchaug.transforms as T  # noqa: E402
from harness import Results, family_args, time_cuda  # noqa: E402

B, H, W = 256, 224, 224


def main():
    args = family_args("bench_warps")
    if args is None:
        return
    from torchvision.transforms import v2 as TV

    iters = 3 if args.quick else 10
    loop_iters = 1 if args.quick else 3
    gen = torch.Generator(device="cuda").manual_seed(0)
    xs = [torch.randint(0, 256, (B, 3, H, W), dtype=torch.uint8, device="cuda", generator=gen) for _ in range(4)]
    xf = [x.float() / 255 for x in xs]
    try:
        import kornia.augmentation as K
    except Exception as e:  # optional: carried to the device as a wheel
        K = None
        print(f"kornia: not measured ({type(e).__name__}: {e})", flush=True)

    bilinear = TV.InterpolationMode.BILINEAR
    cases = [
        ("RandomRotation(30) bilinear u8 224x224", T.RandomRotation(30, interpolation="bilinear"),
         TV.RandomRotation(30, interpolation=bilinear), (lambda: K.RandomRotation(30.0, p=1.0)) if K else None),
        ("RandomAffine(30, (0.1, 0.1), (0.8, 1.2), 10) bilinear u8 224x224",
         T.RandomAffine(30, (0.1, 0.1), (0.8, 1.2), 10, interpolation="bilinear"),
         TV.RandomAffine(30, (0.1, 0.1), (0.8, 1.2), 10, interpolation=bilinear),
         (lambda: K.RandomAffine(30.0, (0.1, 0.1), (0.8, 1.2), 10.0, p=1.0)) if K else None),
        ("RandomPerspective(0.5, p=1) u8 224x224", T.RandomPerspective(0.5, p=1.0), TV.RandomPerspective(0.5, p=1.0),
         (lambda: K.RandomPerspective(0.5, p=1.0)) if K else None),
        ("ElasticTransform(alpha=50, sigma=5) u8 224x224", T.ElasticTransform(50.0, 5.0), TV.ElasticTransform(50.0, 5.0),
         (lambda: K.RandomElasticTransform(kernel_size=(31, 31), sigma=(5.0, 5.0), alpha=(50.0 / 224, 50.0 / 224), p=1.0))
         if K else None),
        ("JPEG(quality=(50, 90)) u8 224x224", T.JPEG((50, 90)), TV.JPEG((50, 90)), None),
    ]
    res = Results("torchvision v2's warps and JPEG on the GPU: torchaug per sample against torchvision and kornia")
    for case, ours, theirs, kornia_op in cases:
        res.add(case, "torchaug (batch, per-sample parameters)", B, time_cuda(lambda i: ours(xs[i % 4]), iters))
        try:
            res.add(case, "torchvision v2, per-sample loop (GPU tensors)", B,
                    time_cuda(lambda i: [theirs(img) for img in xs[i % 4]], loop_iters, warmup=1, repeats=3))
        except Exception as e:  # torchvision's JPEG takes CPU tensors only
            print(f"{case}: torchvision's loop on GPU tensors not measured ({type(e).__name__}: {e})", flush=True)
            res.add(case, "torchvision v2, per-sample loop on CPU tensors (copies to and from the GPU included)", B,
                    time_cuda(lambda i: [theirs(img.cpu()).to("cuda", non_blocking=True) for img in xs[i % 4]], loop_iters,
                              warmup=1, repeats=3), note="its JPEG refuses CUDA tensors")
        try:
            res.add(case, "torchvision v2, whole batch (one draw for the batch)", B,
                    time_cuda(lambda i: theirs(xs[i % 4]), iters, warmup=2, repeats=3))
        except Exception as e:
            print(f"{case}: torchvision on the batch not measured ({type(e).__name__}: {e})", flush=True)
        if kornia_op is not None:
            k = kornia_op()
            res.add(case, "kornia (float32 input, per-sample parameters)", B, time_cuda(lambda i: k(xf[i % 4]), iters))
    res.save(args.json, args.markdown)
    print(res.markdown())


if __name__ == "__main__":
    main()
