"""resized_crop's CUDA tile kernel before and after a change, as two libraries in two processes:
`dump` writes the op's outputs for a fixed set of cases (every interpolation, antialias on and off,
exact 2x upscales whose sums are ties, steep downscales past the tap tables, boxes outside the
image, 1 / 3 / 5 channels, channels_last in and out, uint8 / float16 / float32 / normalized
outputs, float inputs, a ragged batch) and times case 4's crop (RandomResizedCrop boxes, uint8 out),
case 1's (float32 normalized) and uniform 100x130 boxes (a tile's fixed cost); `compare` says
whether two dumps are bitwise equal, case by case.

    PYTHONPATH=<tree with library A> python3 scripts/crop_ab.py dump a.pt
    PYTHONPATH=<tree with library B> python3 scripts/crop_ab.py dump b.pt
    python3 scripts/crop_ab.py compare a.pt b.pt
"""
import os
import sys

import torch


def cases():
    import torchaug.functional as F
    import torchaug.transforms as T

    g = torch.Generator().manual_seed(5)
    dev = os.environ.get("CROP_AB_DEVICE", "cuda")  # cpu: a smoke test of the script itself
    out = {}

    def rand_boxes(b, h, w, outside=False):
        rows = []
        for _ in range(b):
            bh, bw = int(torch.randint(1, h + 1, (1,), generator=g)), int(torch.randint(1, w + 1, (1,), generator=g))
            if outside:
                top = int(torch.randint(-bh // 2, h - bh // 2 + 1, (1,), generator=g))
                left = int(torch.randint(-bw // 2, w - bw // 2 + 1, (1,), generator=g))
            else:
                top, left = int(torch.randint(0, h - bh + 1, (1,), generator=g)), int(torch.randint(0, w - bw + 1, (1,), generator=g))
            rows.append([top, left, bh, bw])
        return torch.tensor(rows, dtype=torch.int64, device=dev)

    x = torch.randint(0, 256, (64, 3, 375, 500), dtype=torch.uint8, generator=g).to(dev)
    rrc = T.RandomResizedCrop(224, generator=torch.Generator().manual_seed(1)).make_params(x)["boxes"]
    flip = (torch.rand(64, generator=g) < 0.5).to(dev)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    for mode in ("nearest", "bilinear", "bicubic"):
        for aa in (True, False):
            out[f"rrc u8 {mode} aa={aa}"] = F.resized_crop_boxes(x, rrc, [224, 224], mode, aa, flip=flip, validate=False)
    out["rrc normalize f32"] = F.resized_crop_boxes(x, rrc, [224, 224], flip=flip, mean=mean, std=std, validate=False)
    out["rrc normalize f16"] = F.resized_crop_boxes(x, rrc, [224, 224], mean=mean, std=std, out_dtype=torch.float16,
                                                    validate=False)
    out["rrc f32 no normalize"] = F.resized_crop_boxes(x, rrc, [224, 224], out_dtype=torch.float32, validate=False)
    out["rrc u8 channels_last out"] = F.resized_crop_boxes(x, rrc, [224, 224], memory_format=torch.channels_last,
                                                           validate=False)
    xl = x.contiguous(memory_format=torch.channels_last)
    out["rrc u8 channels_last in"] = F.resized_crop_boxes(xl, rrc, [224, 224], validate=False)
    out["rrc normalize channels_last in"] = F.resized_crop_boxes(xl, rrc, [224, 224], mean=mean, std=std, validate=False)
    outside = rand_boxes(64, 375, 500, outside=True)
    out["outside u8"] = F.resized_crop_boxes(x, outside, [224, 224], validate=False)
    out["outside f32"] = F.resized_crop_boxes(x, outside, [200, 150], mean=mean, std=std, validate=False)
    # exact 2x upscales: bilinear weights 1/4, 3/4, sums of x.5 (ties) in both axes
    ramp = (torch.arange(64 * 3 * 56 * 56) % 256).to(torch.uint8).reshape(64, 3, 56, 56).to(dev)
    whole = torch.tensor([[0, 0, 56, 56]], device=dev).expand(64, 4).contiguous()
    for aa in (True, False):
        out[f"2x upscale ties aa={aa}"] = F.resized_crop_boxes(ramp, whole, [112, 112], "bilinear", aa, validate=False)
    # steep downscales: 8, 16 and more taps a row (the last past the tables: the per-pixel path)
    for size in ([60, 60], [30, 30], [12, 12], [5, 7]):
        out[f"downscale to {size}"] = F.resized_crop_boxes(x, rrc, size, validate=False)
    for c in (1, 5):
        xc = torch.randint(0, 256, (16, c, 201, 157), dtype=torch.uint8, generator=g).to(dev)
        bc = rand_boxes(16, 201, 157)
        out[f"{c} channels u8"] = F.resized_crop_boxes(xc, bc, [96, 80], validate=False)
        out[f"{c} channels normalize"] = F.resized_crop_boxes(xc, bc, [96, 80], mean=[0.5] * c, std=[0.25] * c,
                                                              validate=False)
    xf = torch.rand(16, 3, 120, 170, generator=g).to(dev)
    bf = rand_boxes(16, 120, 170)
    out["float32 in"] = F.resized_crop_boxes(xf, bf, [64, 64], validate=False)
    out["float64 in"] = F.resized_crop_boxes(xf.double(), bf, [64, 64], validate=False)
    ragged = [torch.randint(0, 256, (3, int(h), int(w)), dtype=torch.uint8, generator=g).to(dev)
              for h, w in zip(torch.randint(100, 400, (16,), generator=g), torch.randint(100, 500, (16,), generator=g))]
    rb = torch.stack([torch.tensor([0, 0, im.shape[1], im.shape[2]]) for im in ragged]).to(dev)
    out["ragged u8"] = F.resized_crop_boxes(ragged, rb, [224, 224], validate=False)
    return {k: v.cpu() for k, v in out.items()}


def timings():
    import torchaug.functional as F
    import torchaug.transforms as T
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
    from harness import time_cuda

    x = torch.randint(0, 256, (256, 3, 375, 500), dtype=torch.uint8, device="cuda")
    rrc = T.RandomResizedCrop(224, generator=torch.Generator().manual_seed(0)).make_params(x)["boxes"]
    small = torch.tensor([[50, 100, 100, 130]], device="cuda").expand(256, 4).contiguous()
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    rows = {
        "RRC boxes, uint8 out (case 4's crop)": lambda i: F.resized_crop_boxes(x, rrc, [224, 224], validate=False),
        "RRC boxes, float32 normalized (case 1)": lambda i: F.resized_crop_boxes(x, rrc, [224, 224], mean=mean, std=std,
                                                                                 validate=False),
        "100x130 boxes, uint8 out": lambda i: F.resized_crop_boxes(x, small, [224, 224], validate=False),
    }
    return {k: time_cuda(f, 40)["ms"] for k, f in rows.items()}


def main():
    if sys.argv[1] == "dump":
        torch.save(cases(), sys.argv[2])
        for k, ms in timings().items():
            print(f"  {k:<40} {ms * 1000:8.1f} us", flush=True)
    elif sys.argv[1] == "compare":
        a, b = torch.load(sys.argv[2]), torch.load(sys.argv[3])
        bad = 0
        for k in a:
            same = a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and a[k].stride() == b[k].stride() and torch.equal(a[k], b[k])
            if not same:
                bad += 1
                d = (a[k].double() - b[k].double()).abs()
                print(f"  DIFFERENT {k}: max |a - b| {d.max().item():.3g}, {(d > 0).sum().item()} elements")
        print(f"compare: {len(a) - bad} of {len(a)} cases bitwise equal")
        sys.exit(1 if bad else 0)
    else:
        raise SystemExit("usage: crop_ab.py dump FILE | compare A B")


if __name__ == "__main__":
    main()
