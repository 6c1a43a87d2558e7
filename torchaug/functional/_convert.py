"""Functional dtype conversion and normalization."""
from typing import Optional

import torch

from .. import _ops  # noqa: F401
from ._utils import as_batch, per_sample_rows, unbatch

_ops_ns = torch.ops.torchaug


def normalize(
    images,
    mean,
    std,
    *,
    out_dtype: Optional[torch.dtype] = None,
    memory_format: Optional[torch.memory_format] = None,
) -> torch.Tensor:
    """(x - mean) / std per channel, in one pass. Differences from torchvision's normalize: a uint8
    input is first scaled to [0, 1] (as ToDtype(torch.float32, scale=True) would); mean and std may be
    per sample ((B, C)); out_dtype (default: the input's floating dtype, float32 for uint8) and
    memory_format (default: the input's) are applied in the same pass."""
    op = "normalize"
    x, single = as_batch(images, op)
    b, c = x.shape[0], x.shape[1]
    mean = per_sample_rows(mean, b, c, x.device, torch.float32, "mean", op)
    std = per_sample_rows(std, b, c, x.device, torch.float32, "std", op)
    if out_dtype is None:
        out_dtype = x.dtype if x.dtype.is_floating_point else torch.float32
    return unbatch(_ops_ns.normalize(x, mean, std, out_dtype, memory_format), single)


_INTEGER_BITS = {torch.uint8: 8, torch.uint16: 16}


def to_dtype(images, dtype: torch.dtype = torch.float32, scale: bool = False) -> torch.Tensor:
    """torchvision.transforms.v2.functional.to_dtype for images: uint8, uint16 and floating, with
    torchvision's arithmetic (integer to float divides by the maximum, float to integer multiplies
    by max + 1 - 1e-3 and truncates, integer to integer shifts by the bit widths)."""
    if not isinstance(images, torch.Tensor):
        raise TypeError(f"torchaug.to_dtype: images must be a torch.Tensor, got {type(images).__name__}")
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"torchaug.to_dtype: dtype must be a torch.dtype, got {dtype!r}")
    if images.dtype == dtype:
        return images
    if not scale:
        return images.to(dtype)
    for d, name in ((images.dtype, "images"), (dtype, "dtype")):
        if not (d.is_floating_point or d in _INTEGER_BITS):
            raise ValueError(f"torchaug.to_dtype: {name} must be uint8, uint16 or floating, got {d}")
    if images.dtype.is_floating_point:
        if dtype.is_floating_point:
            return images.to(dtype)
        top = (1 << _INTEGER_BITS[dtype]) - 1
        return images.mul(top + 1.0 - 1e-3).to(dtype)  # torchvision: max + 1 - eps, truncated
    if not dtype.is_floating_point:  # integer to integer: torchvision's shifts, in int32 (torch has
        shift = _INTEGER_BITS[images.dtype] - _INTEGER_BITS[dtype]  # few uint16 kernels)
        wide = images.to(torch.int32)
        return (wide >> shift if shift > 0 else wide << -shift).to(dtype)
    if images.dtype != torch.uint8:
        return images.to(dtype).mul_(1.0 / ((1 << _INTEGER_BITS[images.dtype]) - 1))
    x, single = as_batch(images, "to_dtype")
    c = x.shape[1]
    zeros = torch.zeros(1, c, dtype=torch.float32, device=x.device).expand(x.shape[0], c)
    ones = torch.ones(1, c, dtype=torch.float32, device=x.device).expand(x.shape[0], c)
    return unbatch(_ops_ns.normalize(x, zeros.contiguous(), ones.contiguous(), dtype, None), single)
