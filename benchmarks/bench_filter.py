"""Filter, noise, erasing and rotation on a batch of 256 x 3 x 224 x 224 on the GPU, side
by side with torchvision v2: torchaug with a parameter per sample vs torchvision batch-wide (one
parameter for the whole batch: what its transform does to a batch) and its per-sample loop (the
per-sample semantics torchaug gives), plus the memory floor (a copy of the batch).

    python benchmarks/bench_filter.py [--json out.json] [--markdown out.md] [--quick]
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torchaug.functional as F  # noqa: E402
import torchaug.transforms as T  # noqa: E402
from harness import Results, family_args, time_cuda  # noqa: E402


def main():
    args = family_args("bench_filter")
    if args is None:
        return
    from torchvision.transforms import v2 as TV
    from torchvision.transforms.v2 import functional as TF

    B, dev = 256, "cuda"
    iters = 5 if args.quick else 30
    loop_iters = max(2, iters // 8)
    res = Results("Filter, noise, erasing and rotation, 256 x 3 x 224 x 224")
    u8 = [torch.randint(0, 256, (B, 3, 224, 224), dtype=torch.uint8, device=dev) for _ in range(4)]
    f32 = [b.float() / 255 for b in u8]
    x = lambda i: u8[i % 4]  # noqa: E731
    xf = lambda i: f32[i % 4]  # noqa: E731
    g = torch.Generator(device=dev).manual_seed(0)
    factor = 2 * torch.rand(B, device=dev, generator=g)
    sigma = 0.1 + 1.9 * torch.rand(B, device=dev, generator=g)
    angle = 60 * torch.rand(B, device=dev, generator=g) - 30
    seed = torch.randint(0, 2**62, (B,), device=dev, generator=g)

    out = torch.empty_like(u8[0])
    res.add("memory floor (copy, uint8)", "torch copy_ (read + write)", B, time_cuda(lambda i: out.copy_(x(i)), iters))

    def trio(case, ours, tv_batch, tv_one, n_loop=32):
        res.add(case, "torchaug (parameter per sample)", B, time_cuda(ours, iters))
        res.add(case, "torchvision v2 batch-wide (one parameter)", B, time_cuda(tv_batch, iters))
        res.add(case, "torchvision v2 per-sample loop", n_loop,
                time_cuda(lambda i: [tv_one(k, img) for k, img in enumerate(x(i)[:n_loop])], loop_iters, warmup=2))

    trio("adjust_sharpness uint8", lambda i: F.adjust_sharpness(x(i), factor, validate=False),
         lambda i: TF.adjust_sharpness(x(i), 1.5), lambda k, img: TF.adjust_sharpness(img, float(factor[k])))
    trio("gaussian_blur 23x23 uint8", lambda i: F.gaussian_blur(x(i), 23, sigma, validate=False),
         lambda i: TF.gaussian_blur(x(i), [23, 23], [1.0, 1.0]), lambda k, img: TF.gaussian_blur(img, [23, 23], float(sigma[k])))
    trio("rotate bilinear uint8", lambda i: F.rotate(x(i), angle, "bilinear"),
         lambda i: TF.rotate(x(i), 17.0, TV.InterpolationMode.BILINEAR),
         lambda k, img: TF.rotate(img, float(angle[k]), TV.InterpolationMode.BILINEAR))
    res.add("laplacian 3x3 uint8", "torchaug (scale per sample)", B,
            time_cuda(lambda i: F.laplacian(x(i), 3, scale=factor, validate=False), iters))
    res.add("gaussian_noise float32", "torchaug (seed per sample)", B,
            time_cuda(lambda i: F.gaussian_noise(xf(i), 0.0, 0.1, seed=seed, validate=False), iters))
    res.add("gaussian_noise float32", "torchvision v2 batch-wide", B, time_cuda(lambda i: TF.gaussian_noise(xf(i), 0.0, 0.1), iters))
    res.add("salt_and_pepper uint8", "torchaug (seed per sample)", B,
            time_cuda(lambda i: F.salt_and_pepper(x(i), 0.05, seed=seed, validate=False), iters))
    er = T.RandomErasing(p=1.0, value="random")
    tver = TV.RandomErasing(p=1.0, value="random")
    res.add("RandomErasing(value='random') float32", "torchaug transform (rectangle per sample)", B, time_cuda(lambda i: er(xf(i)), iters))
    res.add("RandomErasing(value='random') float32", "torchvision v2 batch-wide (one rectangle)", B, time_cuda(lambda i: tver(xf(i)), iters))
    res.add("RandomErasing(value='random') float32", "torchvision v2 per-sample loop", 32,
            time_cuda(lambda i: [tver(img) for img in xf(i)[:32]], loop_iters, warmup=2))
    res.save(args.json, args.markdown)
    print()
    print(res.markdown())


if __name__ == "__main__":
    main()
