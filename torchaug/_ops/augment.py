"""Fake kernel and autograd of torchaug::augment. Its programs mix ops without a gradient
(posterize, equalize, solarize, nearest sampling), so asking for one raises."""
import torch

from .color import _fake_like, _not_differentiable, _setup_images_p


@torch.library.register_fake("torchaug::augment")
def _augment_fake(images, ops, magnitudes, interpolation=0, fill=None):
    torch._check(ops.dim() == 2 and ops.shape[0] == images.shape[0],
                 lambda: f"torchaug::augment: ops must have shape (B, n) with B={images.shape[0]}, got {tuple(ops.shape)}")
    torch._check(magnitudes.shape == ops.shape,
                 lambda: f"torchaug::augment: magnitudes must have shape (B, n) like ops {tuple(ops.shape)}, got {tuple(magnitudes.shape)}")
    return _fake_like("augment", images)


torch.library.register_autograd("torchaug::augment", _not_differentiable("augment"), setup_context=_setup_images_p)
