"""Fake kernel of the convert family (normalize); its autograd kernel is in csrc/autograd.cpp."""
import torch

from ._common import empty_image, image_memory_format, register_fake


@register_fake("torchaug::normalize")
def _normalize_fake(images, mean, std, out_dtype=None, memory_format=None):
    torch._check(images.dim() == 4, lambda: f"torchaug::normalize: images must be a 4-D (B, C, H, W) tensor, got {images.dim()}-D")
    dtype = torch.float32 if out_dtype is None else out_dtype
    torch._check(dtype.is_floating_point, lambda: f"torchaug::normalize: out_dtype must be floating, got {dtype}")
    fmt = image_memory_format(images) if memory_format is None else memory_format
    return empty_image(tuple(images.shape), dtype, images.device, fmt)
