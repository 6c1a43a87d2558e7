"""Fake kernels of torchaug::augment and _policy_program. augment's autograd is in
csrc/autograd.cpp: its programs mix ops without a gradient (posterize, equalize, solarize,
nearest sampling), so asking for one raises."""
import torch

from ._common import empty_image, image_memory_format, register_fake
from .color import _fake_like


@register_fake("torchaug::augment")
def _augment_fake(images, ops, magnitudes, interpolation=0, fill=None, mean=None, std=None, out_dtype=None,
                  memory_format=None):
    torch._check(ops.dim() == 2 and ops.shape[0] == images.shape[0],
                 lambda: f"torchaug::augment: ops must have shape (B, n) with B={images.shape[0]}, got {tuple(ops.shape)}")
    torch._check(magnitudes.shape == ops.shape,
                 lambda: f"torchaug::augment: magnitudes must have shape (B, n) like ops {tuple(ops.shape)}, got {tuple(magnitudes.shape)}")
    out = _fake_like("augment", images)
    if mean is None and std is None:
        return out
    torch._check(mean is not None and std is not None, lambda: "torchaug::augment: mean and std come together (the fused normalize)")
    dtype = torch.float32 if out_dtype is None else out_dtype
    torch._check(dtype.is_floating_point, lambda: f"torchaug::augment: out_dtype must be floating, got {dtype}")
    fmt = image_memory_format(images) if memory_format is None else memory_format
    return empty_image(tuple(images.shape), dtype, images.device, fmt)


@register_fake("torchaug::_policy_program")
def _policy_program_fake(rand, ids, mags, signed, kind, num_ops, magnitude, sub_idx=None, sub_prob=None, sub_bins=None, batch=-1,
                        generator=None):
    torch._check(kind in (0, 1, 2), lambda: f"torchaug::_policy_program: kind must be 0, 1 or 2, got {kind}")
    n = num_ops if kind == 0 else (1 if kind == 1 else 2)
    if rand is None:
        torch._check(batch >= 0, lambda: f"torchaug::_policy_program: batch must be the number of samples to draw for (a non-negative integer), got {batch}")
    b = rand.shape[0] if rand is not None else batch
    like = rand if rand is not None else ids
    return (like.new_empty((b, n), dtype=torch.int64), like.new_empty((b, n), dtype=torch.int64),
            like.new_empty((b, n), dtype=torch.float32))

