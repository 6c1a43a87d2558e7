"""resized_crop's outputs over its modes, saved so that two builds of the library can be compared bit
for bit: a kernel change that claims the same results (scripts/profile/ab_builds.sh runs this for every
build it is given, on the GPU machine). The cases: RandomResizedCrop's boxes, boxes reaching outside
the image and an upscale; bilinear, bicubic and nearest, with and without antialias; three output
sizes; normalized float32, uint8, scaled float32; channels_last, float, half and double inputs;
1, 4 and 5 channels; a ragged batch; a strong downscale (the CUDA per-pixel path), a large output;
the RandomResizedCrop and CIFAR chains.
    python scripts/profile/ab_outputs.py OUT.pt [--device cuda] [--quick]
    python scripts/profile/ab_outputs.py --compare A.pt B.pt      (exit status 1 where any case differs)
--quick: small images (a smoke run, tests/test_tools.py)."""
import argparse
import os
import sys

import torch

# the repository's torchaug (in ab_builds.sh, each build's copy of the tree)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _bits(t):
    """A tensor's bytes, so that equal means the same bits (NaN payloads and -0 included)."""
    return t.contiguous().view(torch.uint8) if t.dtype != torch.uint8 else t


def compare(a_path, b_path):
    a, b = torch.load(a_path), torch.load(b_path)
    bad = 0
    for k in a:
        x, y = a[k], b.get(k)
        same = y is not None and x.shape == y.shape and x.dtype == y.dtype and torch.equal(_bits(x), _bits(y))
        if not same:
            bad += 1
            detail = "missing" if y is None else f"max |diff| {(x.double() - y.double()).abs().max().item()}" \
                if x.shape == y.shape else f"shape {tuple(x.shape)} vs {tuple(y.shape)}"
            print("DIFF", k, detail)
    print(f"compared {len(a)} cases, {bad} differ bitwise")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"))
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.compare:
        sys.exit(compare(*args.compare))
    if not args.out:
        ap.error("an output file or --compare A B")
    out = cases(args.device, args.quick)
    torch.save(out, args.out)
    print(f"saved {len(out)} cases to {args.out}")


def cases(dev, quick):
    import torchaug.functional as F
    import torchaug.transforms as T

    g = torch.Generator().manual_seed(0)
    out = {}
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    # batch, image size, output sizes (quick: small enough for a CPU smoke run)
    B, H, W = (4, 75, 100) if quick else (48, 375, 500)
    sizes = ([24, 24], [9, 13], [60, 40]) if quick else ([224, 224], [63, 97], [480, 300])
    S = sizes[0]
    rrc = T.RandomResizedCrop(S[0], generator=torch.Generator().manual_seed(1))

    def boxes_for(kind, n):
        if kind == "rrc":
            return rrc.make_params(torch.empty(n, 3, H, W))["boxes"].to(dev)
        if kind == "outside":  # reaching outside the image (zero padding)
            t, l = torch.randint(-H // 8, H // 2, (n, 1), generator=g), torch.randint(-W // 8, W // 2, (n, 1), generator=g)
            h, w = torch.randint(H // 20 + 1, H, (n, 1), generator=g), torch.randint(W // 20 + 1, W, (n, 1), generator=g)
            return torch.cat([t, l, h, w], 1).to(dev)
        return torch.tensor([[H // 8, W // 5, H // 6, W // 5]]).expand(n, 4).contiguous().to(dev)  # an upscale

    def crop(x, bx, size, *a, **k):
        return F.resized_crop_boxes(x, bx, size, *a, validate=False, **k).cpu()

    x8 = torch.randint(0, 256, (B, 3, H, W), generator=g, dtype=torch.uint8).to(dev)
    flip = (torch.rand(B, generator=g) < 0.5).to(dev)
    for bk in ("rrc", "outside", "small"):
        bx = boxes_for(bk, B)
        for interp in (F.InterpolationMode.BILINEAR, F.InterpolationMode.BICUBIC, F.InterpolationMode.NEAREST):
            for aa in (True, False):
                for sz in sizes:
                    key = f"{bk}-{interp.value}-{aa}-{sz}"
                    out[key + "-norm"] = crop(x8, bx, sz, interp, aa, flip=flip, mean=mean, std=std)
                    out[key + "-u8"] = crop(x8, bx, sz, interp, aa, flip=flip)
        out[bk + "-f32scaled"] = crop(x8, bx, S, flip=flip, out_dtype=torch.float32)
        out[bk + "-cl"] = crop(x8.contiguous(memory_format=torch.channels_last), bx, S, flip=flip, mean=mean, std=std)
        out[bk + "-float"] = crop(x8.float() / 255, bx, S, flip=flip, mean=mean, std=std)
        out[bk + "-half"] = crop(x8.half() / 255, bx, S, flip=flip)
        out[bk + "-double"] = crop(x8[:2].double() / 255, bx[:2], S, flip=flip[:2])
        for c in (1, 4, 5):
            xc = torch.randint(0, 256, (B, c, H, W), generator=g, dtype=torch.uint8).to(dev)
            out[f"{bk}-c{c}"] = crop(xc, bx, S, flip=flip, mean=[0.5] * c, std=[0.25] * c)
            out[f"{bk}-c{c}-u8"] = crop(xc, bx, S, flip=flip)
    # a ragged batch (images of different sizes in one launch)
    shapes = [(H, W), (W, H), (H * 8 // 9, W), (H * 4 // 3, W * 4 // 3)]
    rag = [torch.randint(0, 256, (3, *shapes[i % 4]), generator=g, dtype=torch.uint8).to(dev) for i in range(B)]
    bx = torch.cat([rrc.make_params(r)["boxes"] for r in rag]).to(dev)
    out["ragged-norm"] = crop(rag, bx, S, flip=flip, mean=mean, std=std)
    out["ragged-u8"] = crop(rag, bx, S)
    # strong downscales (more taps than the CUDA tables hold: its per-pixel path) and a large output
    xl = torch.randint(0, 256, (2, 3, 4 * H, 4 * W), generator=g, dtype=torch.uint8).to(dev)
    full = torch.tensor([[0, 0, 4 * H, 4 * W]] * 2).to(dev)
    out["down-small"] = crop(xl, full, [H // 12, H // 12], mean=mean, std=std)
    out["down"] = crop(xl, full, [H // 2, H // 2])
    out["up-large"] = crop(x8[:2], boxes_for("rrc", 2), [4 * S[0], 4 * S[0]], mean=mean, std=std)
    # the chains, drawn from a seed
    torch.manual_seed(5)
    chain = T.Compose([T.RandomResizedCrop(S[0]), T.RandomHorizontalFlip(), T.ToDtype(torch.float32, scale=True),
                       T.Normalize(mean, std)])
    out["rrc-chain"] = chain(x8).cpu()
    torch.manual_seed(6)
    cifar = T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToDtype(torch.float32, scale=True),
                       T.Normalize(mean, std)])
    out["cifar-chain"] = cifar(torch.randint(0, 256, (B, 3, 32, 32), generator=g, dtype=torch.uint8).to(dev)).cpu()
    return out


if __name__ == "__main__":
    main()
