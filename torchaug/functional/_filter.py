"""Functional filter, noise and erase ops: torchvision.transforms.v2.functional names and
signatures (DALI's for laplacian and salt_and_pepper), every parameter optionally per sample (a
(B,) tensor on the images' device). Random ops take a per-sample `seed` (B,) int64 tensor; without
one they draw seeds from torch's generator on the images' device (or `generator`)."""
import numbers
from typing import List, Optional, Sequence

import torch

from .. import _ops  # noqa: F401  (registers torch.ops.torchaug)
from ._color import _max_value, _param
from ._utils import as_batch, draw_device, generator_device, per_sample, per_sample_rows, unbatch

_ops_ns = torch.ops.torchaug


def draw_seeds(batch: int, device, generator: Optional[torch.Generator] = None) -> torch.Tensor:
    """(B,) int64 seeds on `device` from `generator` (or torch's default generator there)."""
    return seeds_on(batch, torch.device(device), generator, generator_device(generator))


def seeds_on(batch: int, device: torch.device, generator: Optional[torch.Generator], gen_device: str) -> torch.Tensor:
    """draw_seeds with the generator's device given (TorchScript-compatible: the scripted transforms
    draw their seeds with it); seeds in [0, 2 ** 62)."""
    g = draw_device(device, gen_device)
    return torch.randint(0, 4611686018427387904, [batch], dtype=torch.int64, device=g, generator=generator).to(device, non_blocking=True)


def _seed(seed, x: torch.Tensor, op: str, generator=None) -> torch.Tensor:
    if seed is None:
        return draw_seeds(x.shape[0], x.device, generator)
    if isinstance(seed, bool) or not isinstance(seed, (numbers.Integral, torch.Tensor)):
        raise TypeError(f"torchaug.{op}: seed must be an int or a (B,) int64 tensor, got {type(seed).__name__}")
    if isinstance(seed, torch.Tensor) and (seed.dtype.is_floating_point or seed.dtype == torch.bool):
        raise TypeError(f"torchaug.{op}: seed must be an integer tensor, got {seed.dtype}")
    return per_sample(seed, x.shape[0], x.device, torch.int64, "seed", op)


# The largest window side of the filter ops (csrc/kernels/filter.h: kFilterMaxWindow); torchvision
# has no such bound, torchaug's kernels keep a window's weights in registers and shared memory.
MAX_WINDOW = 65


def _odd_pair(value, name: str, op: str, lo: int = 1) -> List[int]:
    v = [value, value] if isinstance(value, numbers.Integral) else list(value) if isinstance(value, Sequence) else None
    if v is not None and len(v) == 1:
        v = v * 2
    if v is None or len(v) != 2 or not all(isinstance(k, numbers.Integral) and not isinstance(k, bool) and lo <= k <= MAX_WINDOW
                                           and k % 2 == 1 for k in v):
        raise ValueError(f"torchaug.{op}: {name} must be an odd integer in [{lo}, {MAX_WINDOW}] or a sequence of 2 of them, got {value!r}")
    return [int(k) for k in v]


def adjust_sharpness(images, sharpness_factor, validate: bool = True) -> torch.Tensor:
    """torchvision's adjust_sharpness (1 or 3 channels) with a factor per sample."""
    x, single = as_batch(images, "adjust_sharpness")
    f = _param(sharpness_factor, x, "sharpness_factor", "adjust_sharpness", lo=0.0, validate=validate)
    return unbatch(_ops_ns.adjust_sharpness(x, f), single)


def gaussian_blur(images, kernel_size, sigma=None, validate: bool = True) -> torch.Tensor:
    """torchvision's gaussian_blur: kernel_size [width, height] (odd), sigma a number, a pair
    [sigma_x, sigma_y], or a per-sample (B,) or (B, 2) tensor; None: 0.15 * k + 0.35 per axis, as
    torchvision."""
    op = "gaussian_blur"
    x, single = as_batch(images, op)
    ks = _odd_pair(kernel_size, "kernel_size", op)
    if sigma is None:
        sigma = [k * 0.15 + 0.35 for k in ks]
    if isinstance(sigma, torch.Tensor) and sigma.dim() <= 1:
        s = per_sample(sigma, x.shape[0], x.device, torch.float32, "sigma", op).unsqueeze(1).expand(-1, 2)
    else:
        s = per_sample_rows(sigma, x.shape[0], 2, x.device, torch.float32, "sigma", op)
    if validate and s.numel() and bool((~(s > 0)).any()):
        raise ValueError(f"torchaug.{op}: sigma must be positive, got {s[(~(s > 0)).any(1)][0].tolist()}")
    return unbatch(_ops_ns.gaussian_blur(x, ks, s), single)


def laplacian(images, window_size=3, smoothing_size=None, scale=1.0, normalized_kernel: bool = False,
              validate: bool = True) -> torch.Tensor:
    """DALI's fn.laplacian: window_size and smoothing_size odd, one value or [height, width] (DALI's
    axis order), smoothing_size None: the window size; scale a number or per sample (B,). uint8
    results are rounded and saturated; floating results are not clamped."""
    op = "laplacian"
    x, single = as_batch(images, op)
    ws = _odd_pair(window_size, "window_size", op, lo=3)
    ss = ws if smoothing_size is None else _odd_pair(smoothing_size, "smoothing_size", op)
    s = _param(scale, x, "scale", op, validate=validate)
    return unbatch(_ops_ns.laplacian(x, ws, ss, s, bool(normalized_kernel)), single)


def gaussian_noise(images, mean=0.0, sigma=0.1, clip: bool = True, seed=None,
                   generator: Optional[torch.Generator] = None, validate: bool = True) -> torch.Tensor:
    """torchvision's gaussian_noise (mean and sigma in [0, 1] units for every dtype) with mean and
    sigma per sample; the noise of sample b is a function of seed[b]."""
    op = "gaussian_noise"
    x, single = as_batch(images, op)
    m = _param(mean, x, "mean", op, validate=validate)
    s = _param(sigma, x, "sigma", op, lo=0.0, validate=validate)
    return unbatch(_ops_ns.gaussian_noise(x, m, s, _seed(seed, x, op, generator), bool(clip)), single)


def salt_and_pepper(images, prob=0.05, salt_vs_pepper=0.5, per_channel: bool = False, salt_value=None,
                    pepper_value=None, seed=None, generator: Optional[torch.Generator] = None,
                    validate: bool = True) -> torch.Tensor:
    """DALI's noise.salt_and_pepper: each pixel (each element when per_channel) is replaced with
    probability prob, by salt_value (the dtype's maximum by default) with probability salt_vs_pepper,
    else by pepper_value (0 by default)."""
    op = "salt_and_pepper"
    x, single = as_batch(images, op)
    top = _max_value(x.dtype)
    p = _param(prob, x, "prob", op, lo=0.0, hi=1.0, validate=validate)
    q = _param(salt_vs_pepper, x, "salt_vs_pepper", op, lo=0.0, hi=1.0, validate=validate)
    salt = None if salt_value is None else _param(salt_value, x, "salt_value", op, lo=0.0, hi=top, validate=validate)
    pepper = None if pepper_value is None else _param(pepper_value, x, "pepper_value", op, lo=0.0, hi=top, validate=validate)
    out = _ops_ns.salt_and_pepper(x, p, q, _seed(seed, x, op, generator), bool(per_channel), salt, pepper)
    return unbatch(out, single)


def erase(images, i, j, h, w, v=0.0, inplace: bool = False, seed=None) -> torch.Tensor:
    """torchvision's erase with a rectangle per sample: i, j, h, w (top, left, height, width) ints or
    (B,) tensors; v a number, a per-channel sequence or (C,) tensor, a (B, C) tensor, or "random"
    (floating images: standard normal values as RandomErasing(value="random"); uint8: uniform in
    [0, 255]), drawn from seed (B,) or torch's generator. Rectangles are clipped to the image.
    inplace=True writes the result into images."""
    op = "erase"
    x, single = as_batch(images, op)
    b, c = x.shape[0], x.shape[1]
    boxes = torch.stack([per_sample(t, b, x.device, torch.int64, n, op) for t, n in ((i, "i"), (j, "j"), (h, "h"), (w, "w"))], dim=1)
    if isinstance(v, str):
        if v != "random":
            raise ValueError(f"torchaug.{op}: v must be a number, a sequence, a tensor or 'random', got {v!r}")
        out = _ops_ns.erase(x, boxes, None, _seed(seed, x, op))
    else:
        if isinstance(v, torch.Tensor) and v.dim() > 2:
            raise ValueError(f"torchaug.{op}: v must be a number, a (C,) or a (B, C) tensor (per-pixel fills are not supported), got shape {tuple(v.shape)}")
        if isinstance(v, torch.Tensor) and v.dim() == 2 and v.shape[1] == 1:
            value = v.to(device=x.device, dtype=torch.float32)
        else:
            value = per_sample_rows(v, b, c, x.device, torch.float32, "v", op)
        out = _ops_ns.erase(x, boxes, value, None)
    if inplace:
        x.copy_(out)
        return images
    return unbatch(out, single)
