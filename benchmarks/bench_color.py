"""The color family on a batch of 256 uint8 images of 3x224x224 on the GPU, side by side:

- every single color op of torchaug with a parameter per sample (target 2,000,000 img/s each);
- ColorJitter(0.4, 0.4, 0.4, 0.1): torchaug (per-sample factors and per-sample order, one color
  program; also replayed from a CUDA graph) vs torchvision v2 batch-wide (one factor set and one order for the whole batch: what
  its transform does to a batch) and the per-sample loop (the correct per-sample semantics);
  target 2,000,000 img/s (issue 57);
- equalize and autocontrast likewise (torchvision batch-wide computes statistics per image, so it
  is per-sample correct);
- the memory floor: a device-to-device copy of the batch (one read and one write).

    python benchmarks/bench_color.py [--json out.json] [--markdown out.md] [--quick]
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torchaug  # noqa: E402
import torchaug.functional as F  # noqa: E402
import torchaug.transforms as T  # noqa: E402
from harness import Results, family_args, time_cuda  # noqa: E402

SINGLE_TARGET = 2_000_000
JITTER_TARGET = 2_000_000


def main():
    args = family_args("bench_color")
    if args is None:
        return
    from torchvision.transforms import v2 as TV
    from torchvision.transforms.v2 import functional as TF

    B, dev = 256, "cuda"
    iters = 5 if args.quick else 40
    res = Results("Color ops and ColorJitter, 256 x 3 x 224 x 224 uint8")
    batches = [torch.randint(0, 256, (B, 3, 224, 224), dtype=torch.uint8, device=dev) for _ in range(4)]
    x = lambda i: batches[i % 4]  # noqa: E731
    g = torch.Generator(device=dev).manual_seed(0)
    f = 0.5 + torch.rand(B, device=dev, generator=g)
    hue = torch.rand(B, device=dev, generator=g) - 0.5
    bits = torch.randint(1, 8, (B,), device=dev, generator=g).float()
    thr = 255 * torch.rand(B, device=dev, generator=g)

    out = torch.empty_like(batches[0])
    res.add("memory floor (copy)", "torch copy_ (read + write)", B, time_cuda(lambda i: out.copy_(x(i)), iters))

    singles = {
        "adjust_brightness": lambda i: F.adjust_brightness(x(i), f, validate=False),
        "adjust_contrast": lambda i: F.adjust_contrast(x(i), f, validate=False),
        "adjust_saturation": lambda i: F.adjust_saturation(x(i), f, validate=False),
        "adjust_hue": lambda i: F.adjust_hue(x(i), hue, validate=False),
        "adjust_gamma": lambda i: F.adjust_gamma(x(i), f, 1.0, validate=False),
        "rgb_to_grayscale": lambda i: F.rgb_to_grayscale(x(i), 3),
        "invert": lambda i: F.invert(x(i)),
        "posterize": lambda i: F.posterize(x(i), bits, validate=False),
        "solarize": lambda i: F.solarize(x(i), thr, validate=False),
        "solarize_add": lambda i: F.solarize_add(x(i), f * 50, validate=False),
        "autocontrast": lambda i: F.autocontrast(x(i)),
        "equalize": lambda i: F.equalize(x(i)),
    }
    tv_batch = {
        "adjust_brightness": lambda i: TF.adjust_brightness(x(i), 1.2),
        "adjust_contrast": lambda i: TF.adjust_contrast(x(i), 1.2),
        "adjust_hue": lambda i: TF.adjust_hue(x(i), 0.1),
        "autocontrast": lambda i: TF.autocontrast(x(i)),
        "equalize": lambda i: TF.equalize(x(i)),
    }
    for name, fn in singles.items():
        res.add(name, "torchaug (parameter per sample)", B, time_cuda(fn, iters), target=SINGLE_TARGET)
        if name in tv_batch:
            res.add(name, "torchvision v2 batch-wide (one parameter)", B, time_cuda(tv_batch[name], iters))
    for name in ("autocontrast", "equalize"):
        fn = getattr(TF, name)
        loop = lambda i, fn=fn: [fn(img) for img in x(i)[:32]]  # noqa: E731
        res.add(name, "torchvision v2 per-sample loop", 32, time_cuda(loop, max(2, iters // 8), warmup=2))

    case = "ColorJitter(0.4,0.4,0.4,0.1)"
    cj = T.ColorJitter(0.4, 0.4, 0.4, 0.1)
    res.add(case, "torchaug transform (per-sample factors + order)", B, time_cuda(lambda i: cj(x(i)), iters), target=JITTER_TARGET)
    graphs = [torchaug.graphed(cj, b) for b in batches]
    res.add(case, "torchaug transform replayed from a CUDA graph", B, time_cuda(lambda i: graphs[i % len(graphs)].replay(), iters),
            target=JITTER_TARGET, note="captured once per input batch, fresh draws each replay")
    del graphs
    params = cj.make_params(batches[0])
    res.add(case, "torchaug color_program (params drawn)", B,
            time_cuda(lambda i: F.color_program(x(i), params["ops"], params["params"]), iters))
    tvcj = TV.ColorJitter(0.4, 0.4, 0.4, 0.1)
    res.add(case, "torchvision v2 batch-wide (one draw per batch)", B, time_cuda(lambda i: tvcj(x(i)), iters))
    loop = lambda i: [tvcj(img) for img in x(i)[:32]]  # noqa: E731
    res.add(case, "torchvision v2 per-sample loop", 32, time_cuda(loop, max(2, iters // 8), warmup=2))
    try:
        import kornia.augmentation as K

        kcj = K.ColorJitter(0.4, 0.4, 0.4, 0.1, p=1.0)
        xf = [b.float() / 255 for b in batches]
        res.add(case, "kornia (float32 input, per-sample factors)", B, time_cuda(lambda i: kcj(xf[i % 4]), iters))
    except ImportError:
        print("  kornia not importable: not measured")
    res.save(args.json, args.markdown)
    print()
    print(res.markdown())


if __name__ == "__main__":
    main()
