"""Fake kernels and autograd of the color family. The backward formulas are elementwise tensor
expressions (left to ATen); ops whose math is not differentiable raise when a gradient is asked."""
import torch

from ._common import draws_rows, empty_image, image_memory_format, register_fake

_LUMA = (0.2989, 0.587, 0.114)


def _fake_like(op, images, channels=None):
    torch._check(images.dim() == 4, lambda: f"torchaug::{op}: images must be a 4-D (B, C, H, W) tensor, got {images.dim()}-D")
    torch._check(images.shape[1] in (1, 3), lambda: f"torchaug::{op}: images must have 1 or 3 channels, got {images.shape[1]}")
    c = images.shape[1] if channels is None else channels
    return empty_image((images.shape[0], c) + tuple(images.shape[2:]), images.dtype, images.device, image_memory_format(images))


_UNARY = ["invert", "autocontrast", "equalize"]
_ONE_PARAM = ["adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue", "posterize", "solarize"]
_TWO_PARAMS = ["adjust_gamma", "solarize_add"]

for _name in _UNARY:
    register_fake(f"torchaug::{_name}")(lambda images, _n=_name: _fake_like(_n, images))
for _name in _ONE_PARAM:
    register_fake(f"torchaug::{_name}")(lambda images, p, _n=_name: _fake_like(_n, images))
for _name in _TWO_PARAMS:
    register_fake(f"torchaug::{_name}")(lambda images, p, q, _n=_name: _fake_like(_n, images))


@register_fake("torchaug::rgb_to_grayscale")
def _rgb_to_grayscale_fake(images, num_output_channels=1):
    torch._check(num_output_channels in (1, images.shape[1]),
                 lambda: f"torchaug::rgb_to_grayscale: num_output_channels must be 1 or {images.shape[1]}, got {num_output_channels}")
    return _fake_like("rgb_to_grayscale", images, num_output_channels)


@register_fake("torchaug::color_program")
def _color_program_fake(images, ops, params):
    torch._check(ops.dim() == 2 and ops.shape[0] == images.shape[0],
                 lambda: f"torchaug::color_program: ops must have shape (B, n) with B={images.shape[0]}, got {tuple(ops.shape)}")
    return _fake_like("color_program", images)


@register_fake("torchaug::_color_jitter_program")
def _color_jitter_program_fake(rand, lo, span, codes, batch=-1, like=None, generator=None):
    op = "torchaug::_color_jitter_program"
    torch._check(len(lo) == 4 and len(span) == 4 and len(codes) == 4,
                 lambda: f"{op}: lo, span and codes must have 4 values each (brightness, contrast, saturation, hue), got "
                         f"{len(lo)}, {len(span)} and {len(codes)}")
    b, on = draws_rows(op, rand, 8, batch, like)
    return on.new_empty((b, 4), dtype=torch.int64), on.new_empty((b, 4, 2), dtype=torch.float32)


# ---- autograd -------------------------------------------------------------------------------

def _col(p, images):
    """A (B,) or (1,) parameter as (B|1, 1, 1, 1) in the images' dtype."""
    return p.to(images.dtype).reshape(-1, 1, 1, 1)


def _in_range(v, hi=1.0):
    # torch.clamp's gradient passes where lo <= v <= hi
    return ((v >= 0) & (v <= hi)).to(v.dtype)


def _luma_weights(images):
    if images.shape[1] == 1:
        return torch.ones(1, 1, 1, 1, dtype=images.dtype, device=images.device)
    return torch.tensor(_LUMA, dtype=images.dtype, device=images.device).reshape(1, 3, 1, 1)


def _gray(images):
    return (images * _luma_weights(images)).sum(1, keepdim=True)


def _setup_images_p(ctx, inputs, output):
    ctx.save_for_backward(*[t for t in inputs if isinstance(t, torch.Tensor)])


def _brightness_backward(ctx, grad):
    x, f = ctx.saved_tensors
    f = _col(f, x)
    return grad * f * _in_range(x * f), None


def _blend_backward(x, f, other, grad):
    # out = clamp(x * f + other * (1 - f)); returns (d/dx through x, the gradient reaching `other`)
    f = _col(f, x)
    g = grad * _in_range(x * f + other * (1 - f))
    return g * f, g * (1 - f)


def _contrast_backward(ctx, grad):
    x, f = ctx.saved_tensors
    mean = _gray(x).mean(dim=(1, 2, 3), keepdim=True)
    gx, g_other = _blend_backward(x, f, mean, grad)
    hw = x.shape[2] * x.shape[3]
    return gx + _luma_weights(x) * g_other.sum(dim=(1, 2, 3), keepdim=True) / hw, None


def _saturation_backward(ctx, grad):
    x, f = ctx.saved_tensors
    if x.shape[1] == 1:
        return grad, None
    gx, g_other = _blend_backward(x, f, _gray(x), grad)
    return gx + _luma_weights(x) * g_other.sum(dim=1, keepdim=True), None


def _gamma_backward(ctx, grad):
    x, gamma, gain = ctx.saved_tensors
    gamma, gain = _col(gamma, x), _col(gain, x)
    powed = x.pow(gamma)
    d = gamma * x.pow(gamma - 1) * gain
    clamped = torch.where(gain != 1, _in_range(powed * gain), torch.ones_like(powed))
    return grad * d * clamped, None, None


def _grayscale_setup(ctx, inputs, output):
    images, num_output_channels = inputs
    ctx.save_for_backward(images)


def _grayscale_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    if x.shape[1] == 1:
        return grad, None
    return _luma_weights(x) * grad.sum(dim=1, keepdim=True), None


def _invert_backward(ctx, grad):
    return -grad


def _solarize_backward(ctx, grad):
    x, t = ctx.saved_tensors
    return torch.where(x >= _col(t, x), -grad, grad), None


torch.library.register_autograd("torchaug::adjust_brightness", _brightness_backward, setup_context=_setup_images_p)
torch.library.register_autograd("torchaug::adjust_contrast", _contrast_backward, setup_context=_setup_images_p)
torch.library.register_autograd("torchaug::adjust_saturation", _saturation_backward, setup_context=_setup_images_p)
torch.library.register_autograd("torchaug::adjust_gamma", _gamma_backward, setup_context=_setup_images_p)
torch.library.register_autograd("torchaug::rgb_to_grayscale", _grayscale_backward, setup_context=_grayscale_setup)
torch.library.register_autograd("torchaug::invert", _invert_backward, setup_context=_setup_images_p)
torch.library.register_autograd("torchaug::solarize", _solarize_backward, setup_context=_setup_images_p)
# adjust_hue, posterize, solarize_add, autocontrast, equalize and color_program have no gradient: their
# autograd kernel (csrc/autograd.cpp) raises when one is asked for
