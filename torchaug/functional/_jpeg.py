"""JPEG compression artefacts at a quality per sample, as torch ops on the images' device: the lossy
part of a baseline JPEG encoder and decoder as libjpeg-turbo runs them with its defaults (what
torchvision's JPEG transform calls through encode_jpeg / decode_jpeg, and PIL), without the entropy
coding, which loses nothing: JFIF YCbCr, 4:2:0 chroma (2x2 averages), 8x8 blocks with the edges
replicated, the orthonormal DCT, the IJG quantization tables scaled by quality, and on the way back
the triangular ("fancy") chroma upsampling. libjpeg works in fixed point (its integer DCT and
rounding), so pixels differ from its by a few levels, and where a coefficient sits on a
quantization step, by one step of that coefficient; the artefacts are the same (tests/test_jpeg.py
compares the error against the original with libjpeg-turbo's, quality by quality)."""
import math
from typing import Tuple

import torch

from ._utils import as_batch, per_sample, unbatch

# ITU T.81 Annex K tables (row-major 8x8)
_LUMA = [16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87,
         80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92,
         95, 98, 112, 100, 103, 99]
_CHROMA = [17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99, 99, 99, 47, 66, 99, 99, 99,
           99, 99, 99] + [99] * 32


def _dct_matrix(device, dtype) -> torch.Tensor:
    k = torch.arange(8, dtype=torch.float64).view(8, 1)
    n = torch.arange(8, dtype=torch.float64).view(1, 8)
    d = torch.cos((2 * n + 1) * k * math.pi / 16) * math.sqrt(2 / 8)
    d[0] = math.sqrt(1 / 8)
    return d.to(device=device, dtype=dtype)


def quantization_tables(quality: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """(B, 8, 8) luma and chroma tables for qualities (B,) in [1, 100], as libjpeg's
    jpeg_set_quality scales them (baseline: entries in [1, 255])."""
    q = quality.to(torch.float64).clamp(1, 100)
    scale = torch.where(q < 50, 5000 / q, 200 - 2 * q).view(-1, 1, 1)
    out = []
    for base in (_LUMA, _CHROMA):
        t = torch.tensor(base, dtype=torch.float64, device=quality.device).view(1, 8, 8)
        out.append(torch.floor((t * scale + 50) / 100).clamp(1, 255).to(torch.float32))
    return out[0], out[1]


def _blocks(plane: torch.Tensor) -> torch.Tensor:
    """(B, H, W) with H, W multiples of 8 -> (B, H/8, W/8, 8, 8)."""
    b, h, w = plane.shape
    return plane.view(b, h // 8, 8, w // 8, 8).permute(0, 1, 3, 2, 4)


def _unblocks(blocks: torch.Tensor) -> torch.Tensor:
    b, bh, bw = blocks.shape[:3]
    return blocks.permute(0, 1, 3, 2, 4).reshape(b, bh * 8, bw * 8)


def _lossy(plane: torch.Tensor, table: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    """A (B, H, W) plane of levels (H, W multiples of 8) through DCT, quantization with table
    (B, 8, 8), dequantization and the inverse DCT."""
    x = _blocks(plane - 128.0)
    coeffs = d @ x @ d.T
    t = table.view(-1, 1, 1, 8, 8)
    coeffs = torch.round(coeffs / t) * t
    return _unblocks(d.T @ coeffs @ d) + 128.0


def _fancy_upsample(c: torch.Tensor) -> torch.Tensor:
    """libjpeg's h2v2 triangular upsampling: each output sample 3/4 of its nearer input and 1/4 of
    the next one, in both directions (edges replicated). (B, h, w) -> (B, 2h, 2w)."""
    def one_axis(x: torch.Tensor, dim: int) -> torch.Tensor:
        n = x.shape[dim]
        prev = torch.cat([x.narrow(dim, 0, 1), x.narrow(dim, 0, n - 1)], dim)
        nxt = torch.cat([x.narrow(dim, 1, n - 1), x.narrow(dim, n - 1, 1)], dim)
        even, odd = 0.75 * x + 0.25 * prev, 0.75 * x + 0.25 * nxt
        return torch.stack([even, odd], dim + 1).flatten(dim, dim + 1)
    return one_axis(one_axis(c, 1), 2)


def jpeg(images, quality) -> torch.Tensor:
    """torchvision.transforms.v2.functional.jpeg with a quality per sample: uint8 (B, C, H, W) or
    (C, H, W) images (1 or 3 channels) compressed and decompressed at quality (a number or (B,)
    tensor, 1-100)."""
    op = "jpeg"
    x, single = as_batch(images, op)
    if x.dtype != torch.uint8:
        raise TypeError(f"torchaug.{op}: images must be uint8 (JPEG holds 8-bit samples), got {x.dtype}")
    b, c, h, w = x.shape
    if c not in (1, 3):
        raise ValueError(f"torchaug.{op}: images must have 1 or 3 channels, got {c}")
    q = per_sample(quality, b, x.device, torch.float32, "quality", op)
    if x.device.type == "cpu" and not bool(((q >= 1) & (q <= 100)).all()):
        raise ValueError(f"torchaug.{op}: quality must be in [1, 100], got {q.tolist()}")
    luma_t, chroma_t = quantization_tables(q)
    d = _dct_matrix(x.device, torch.float32)
    f = x.to(torch.float32)
    # the MCU: 16x16 with chroma subsampled, 8x8 for gray; edges replicated
    m = 16 if c == 3 else 8
    ph, pw = -h % m, -w % m
    if ph or pw:
        f = torch.nn.functional.pad(f, [0, pw, 0, ph], mode="replicate")
    if c == 1:
        y = torch.round(_lossy(f[:, 0], luma_t, d))
        out = y.unsqueeze(1)
    else:
        r, g, bl = f.unbind(1)
        y = torch.round(0.299 * r + 0.587 * g + 0.114 * bl)
        cb = torch.round(-0.168735892 * r - 0.331264108 * g + 0.5 * bl + 128)
        cr = torch.round(0.5 * r - 0.418687589 * g - 0.081312411 * bl + 128)
        # 4:2:0: 2x2 averages (libjpeg's bias alternates 1 and 2 across a row)
        half_w = cb.shape[2] // 2
        bias = torch.tensor([1.0, 2.0], device=x.device).repeat((half_w + 1) // 2)[:half_w].view(1, 1, -1)
        sub = [torch.floor((p.view(b, p.shape[1] // 2, 2, p.shape[2] // 2, 2).sum((2, 4)) + bias) / 4) for p in (cb, cr)]
        y = _lossy(y, luma_t, d).clamp(0, 255).round()
        cb, cr = (_fancy_upsample(_lossy(p, chroma_t, d).clamp(0, 255).round()) for p in sub)
        out = torch.stack([y + 1.402 * (cr - 128), y - 0.344136286 * (cb - 128) - 0.714136286 * (cr - 128),
                           y + 1.772 * (cb - 128)], 1)
    out = out[..., :h, :w].round().clamp(0, 255).to(torch.uint8)
    if c > 1 and x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous():
        out = out.contiguous(memory_format=torch.channels_last)
    return unbatch(out, single)
