"""The demo pipeline: RandomResizedCrop(224) + RandomHorizontalFlip + ToDtype + Normalize over the
photos the package ships (torchaug/assets/images, public domain / CC0), on the GPU when there is
one, else the CPU. Writes a PNG grid of inputs and outputs and prints the throughput.

    python -m torchaug.demo [--batch 256] [--iters 50] [--device cuda|cpu] [--out out/demo_grid.png]
"""
import argparse
import glob
import os
import time

import numpy as np
import torch
from PIL import Image

import torchaug.transforms as T

ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assets", "images")
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def load_images(device):
    paths = sorted(glob.glob(os.path.join(ASSETS, "*.jpg")))
    if not paths:
        raise SystemExit(f"torchaug.demo: no images found in {ASSETS}")
    images = [torch.from_numpy(np.array(Image.open(p).convert("RGB"))).permute(2, 0, 1).contiguous() for p in paths]
    return [im.to(device) for im in images], [os.path.basename(p) for p in paths]


def pipeline(generator=None):
    return T.Compose([
        T.RandomResizedCrop(224, generator=generator),
        T.RandomHorizontalFlip(generator=generator),
        T.ToDtype(torch.float32, scale=True),
        T.Normalize(MEAN, STD),
    ])


def to_uint8_hwc(normalized: torch.Tensor) -> np.ndarray:
    mean = torch.tensor(MEAN, device=normalized.device).view(3, 1, 1)
    std = torch.tensor(STD, device=normalized.device).view(3, 1, 1)
    img = (normalized * std + mean).clamp(0, 1).mul(255).round().to(torch.uint8)
    return img.permute(1, 2, 0).cpu().numpy()


def write_grid(inputs, outputs, path, per_input=6):
    """Row i: input i (fitted into 224x224), then `per_input` augmented versions of it."""
    tile, pad = 224, 4
    rows, cols = len(inputs), per_input + 1
    canvas = Image.new("RGB", (cols * (tile + pad) + pad, rows * (tile + pad) + pad), (255, 255, 255))
    for r, img in enumerate(inputs):
        thumb = Image.fromarray(img.permute(1, 2, 0).cpu().numpy())
        thumb.thumbnail((tile, tile))
        canvas.paste(thumb, (pad, pad + r * (tile + pad)))
        for c in range(per_input):
            out = Image.fromarray(to_uint8_hwc(outputs[c][r]))
            canvas.paste(out, (pad + (c + 1) * (tile + pad), pad + r * (tile + pad)))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    canvas.save(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch", type=int, default=None, help="images per batch (default: 256 on GPU, 32 on CPU)")
    parser.add_argument("--iters", type=int, default=None, help="timed batches (default: 100 on GPU, 5 on CPU)")
    parser.add_argument("--out", default=os.path.join("out", "demo_grid.png"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    batch = args.batch or (256 if cuda else 32)
    iters = args.iters or (100 if cuda else 5)

    images, names = load_images(device)
    gen = torch.Generator().manual_seed(args.seed)
    aug = pipeline(gen)

    # the grid: every shipped photo, augmented six times (a ragged batch of different sizes each time)
    outputs = [aug(images) for _ in range(6)]
    write_grid(images, outputs, args.out)
    print(f"torchaug demo: {len(images)} photos ({', '.join(names)}) -> {args.out}")

    # throughput: a ragged batch of `batch` photos of different sizes -> (batch, 3, 224, 224) float32
    ragged = [images[i % len(images)] for i in range(batch)]
    dense = torch.stack([torch.nn.functional.interpolate(images[0][None].float(), size=(375, 500)).round().to(torch.uint8)[0]] * batch)
    for name, inp in (("ragged list of the photos", ragged), (f"dense uint8 batch {tuple(dense.shape)}", dense)):
        for _ in range(3):
            out = aug(inp)
        if cuda:
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        for _ in range(iters):
            out = aug(inp)
        if cuda:
            torch.cuda.synchronize(device)
        dt = time.perf_counter() - t0
        print(f"  {name}: {batch * iters / dt:,.0f} img/s on {device} "
              f"(batch {batch}, {iters} batches, output {tuple(out.shape)} {out.dtype})")


if __name__ == "__main__":
    main()
