"""Fake kernel and autograd of the convert family (normalize)."""
import torch

from ._common import empty_image, image_memory_format, register_fake


@register_fake("torchaug::normalize")
def _normalize_fake(images, mean, std, out_dtype=None, memory_format=None):
    torch._check(images.dim() == 4, lambda: f"torchaug::normalize: images must be a 4-D (B, C, H, W) tensor, got {images.dim()}-D")
    dtype = torch.float32 if out_dtype is None else out_dtype
    torch._check(dtype.is_floating_point, lambda: f"torchaug::normalize: out_dtype must be floating, got {dtype}")
    fmt = image_memory_format(images) if memory_format is None else memory_format
    return empty_image(tuple(images.shape), dtype, images.device, fmt)


def _normalize_setup(ctx, inputs, output):
    images, mean, std, out_dtype, memory_format = inputs
    ctx.dtype = images.dtype
    ctx.memory_format = image_memory_format(images)
    ctx.save_for_backward(std)


def _normalize_backward(ctx, grad):
    # d/dx (x - mean) / std = 1 / std (floating inputs are not rescaled); an elementwise product,
    # left to ATen.
    (std,) = ctx.saved_tensors
    b, c = std.shape
    gi = (grad / std.view(b, c, 1, 1).to(grad.dtype)).to(ctx.dtype).contiguous(memory_format=ctx.memory_format)
    return gi, None, None, None, None


torch.library.register_autograd("torchaug::normalize", _normalize_backward, setup_context=_normalize_setup)
