"""Fake kernels and autograd of the filter (adjust_sharpness, gaussian_blur, laplacian) and noise
(gaussian_noise, salt_and_pepper, erase) families.

Backward formulas: the filters on floating images are linear maps followed by torchvision's clamp
(adjust_sharpness); their gradient is the vector-Jacobian product of the same computation written
with ATen ops (reflect padding and a grouped conv2d), so the border folding of reflect padding is
exact. The noise ops pass the gradient where an element keeps its value (plus noise) and block it
where it is replaced or clamped; which elements those are comes from the op itself, run with the
same seeds on a constant image."""
import math

import torch
import torch.nn.functional as nnf

from ._common import draws_rows, empty_image, image_memory_format, register_fake


def _fake(op, images, channels13=False):
    torch._check(images.dim() == 4, lambda: f"torchaug::{op}: images must be a 4-D (B, C, H, W) tensor, got {images.dim()}-D")
    if channels13:
        torch._check(images.shape[1] in (1, 3), lambda: f"torchaug::{op}: images must have 1 or 3 channels, got {images.shape[1]}")
    return empty_image(tuple(images.shape), images.dtype, images.device, image_memory_format(images))


register_fake("torchaug::adjust_sharpness")(lambda images, factor: _fake("adjust_sharpness", images, True))
register_fake("torchaug::gaussian_blur")(lambda images, kernel_size, sigma: _fake("gaussian_blur", images))
register_fake("torchaug::laplacian")(
    lambda images, window_size, smoothing_size, scale, normalized_kernel=False: _fake("laplacian", images))
register_fake("torchaug::gaussian_noise")(
    lambda images, mean, sigma, seed, clip=True: _fake("gaussian_noise", images))
register_fake("torchaug::salt_and_pepper")(
    lambda images, prob, salt_vs_pepper, seed, per_channel=False, salt_value=None, pepper_value=None:
    _fake("salt_and_pepper", images))
register_fake("torchaug::erase")(lambda images, boxes, value=None, seed=None: _fake("erase", images))


@register_fake("torchaug::_erasing_boxes")
def _erasing_boxes_fake(rand, height, width, p, scale_min, scale_max, log_ratio_min, log_ratio_max, batch=-1, like=None,
                        generator=None):
    b, on = draws_rows("torchaug::_erasing_boxes", rand, 41, batch, like)
    return on.new_empty((b, 4), dtype=torch.int64)


# ---- windows as tensors (the backward's reference computation) -------------------------------

def gaussian_windows(kernel_size, sigma: torch.Tensor, dtype) -> torch.Tensor:
    """(B|1, ky, kx) windows of gaussian_blur, as csrc/ops/filter.cpp builds them (torchvision's
    _get_gaussian_kernel1d per sample and axis)."""
    sg = sigma.to(dtype)
    if sg.dim() == 1:
        sg = sg.unsqueeze(1).expand(-1, 2)

    def k1d(k, s):
        lim = (k - 1) / (2.0 * math.sqrt(2.0))
        x = torch.linspace(-lim, lim, k, dtype=dtype, device=s.device).view(1, -1)
        return torch.softmax(x.div(s.view(-1, 1)).pow(2).neg(), dim=1)

    return k1d(kernel_size[1], sg[:, 1]).unsqueeze(2) * k1d(kernel_size[0], sg[:, 0]).unsqueeze(1)


def laplacian_window(window_size, smoothing_size, normalized: bool, dtype, device) -> torch.Tensor:
    """(1, wy, wx) window of DALI's laplacian (csrc/kernels/filter.h: laplacian_weights)."""
    def smooth(n):
        return [float(math.comb(n - 1, i)) for i in range(n)]

    def deriv(n):
        s = smooth(n - 2)
        w = [0.0] * n
        for i, v in enumerate(s):
            w[i] += v
            w[i + 1] -= 2 * v
            w[i + 2] += v
        return w

    (dy, dx), (sy, sx) = window_size, smoothing_size
    wy, wx = max(dy, sy), max(dx, sx)
    out = torch.zeros(wy, wx, dtype=torch.float64)
    nx = 2.0 ** (4 - dx - sy) if normalized else 1.0
    ny = 2.0 ** (4 - dy - sx) if normalized else 1.0
    oy, ox = (wy - sy) // 2, (wx - dx) // 2
    out[oy:oy + sy, ox:ox + dx] += nx * torch.tensor(smooth(sy)).view(-1, 1) * torch.tensor(deriv(dx)).view(1, -1)
    oy, ox = (wy - dy) // 2, (wx - sx) // 2
    out[oy:oy + dy, ox:ox + sx] += ny * torch.tensor(deriv(dy)).view(-1, 1) * torch.tensor(smooth(sx)).view(1, -1)
    return out.to(dtype=dtype, device=device).unsqueeze(0)


def correlate_reflect(x: torch.Tensor, windows: torch.Tensor) -> torch.Tensor:
    """Every plane of x (B, C, H, W) correlated with its sample's window (B|1, ky, kx), reflect
    padding: the filters' computation with ATen ops."""
    b, c, h, w = x.shape
    ky, kx = windows.shape[-2:]
    weight = windows.to(x.dtype).expand(b, ky, kx).repeat_interleave(c, dim=0).unsqueeze(1)
    padded = nnf.pad(x.reshape(1, b * c, h, w), [kx // 2, kx // 2, ky // 2, ky // 2], mode="reflect")
    return nnf.conv2d(padded, weight, groups=b * c).reshape(b, c, h, w)


def sharpness_reference(x: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    """torchvision's adjust_sharpness on floating images with a factor per sample."""
    h, w = x.shape[-2:]
    if h <= 2 or w <= 2:
        return x.clamp(0, 1)
    a, b = 1.0 / 13.0, 5.0 / 13.0
    win = torch.tensor([[a, a, a], [a, b, a], [a, a, a]], dtype=x.dtype, device=x.device).unsqueeze(0)
    blur = correlate_reflect(x, win)
    ratio = (1 - factor.to(x.dtype)).view(-1, 1, 1, 1)
    inner = x[..., 1:-1, 1:-1]
    mixed = inner + ratio * (blur[..., 1:-1, 1:-1] - inner)
    out = torch.cat([x[..., :1, 1:-1], mixed, x[..., -1:, 1:-1]], dim=-2)
    out = torch.cat([x[..., :, :1], out, x[..., :, -1:]], dim=-1)
    return out.clamp(0, 1)


def _vjp(fn, x, grad):
    with torch.enable_grad():
        xd = x.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(fn(xd), xd, grad)
    return g


def _setup_inputs(ctx, inputs, output):
    ctx.inputs = inputs


def _sharpness_backward(ctx, grad):
    x, factor = ctx.inputs
    return _vjp(lambda t: sharpness_reference(t, factor.expand(x.shape[0])), x, grad), None


def _blur_backward(ctx, grad):
    x, kernel_size, sigma = ctx.inputs
    acc = torch.float64 if x.dtype == torch.float64 else torch.float32
    win = gaussian_windows(kernel_size, sigma, x.dtype).to(acc)
    return _vjp(lambda t: correlate_reflect(t, win), x, grad), None, None


def _laplacian_backward(ctx, grad):
    x, window_size, smoothing_size, scale, normalized = ctx.inputs
    win = laplacian_window(window_size, smoothing_size, normalized, x.dtype, x.device)
    s = scale.to(x.dtype).view(-1, 1, 1, 1)
    return _vjp(lambda t: correlate_reflect(t, win) * s, x, grad), None, None, None, None


def _noise_backward(ctx, grad):
    x, mean, sigma, seed, clip = ctx.inputs
    if not clip:
        return grad, None, None, None, None
    noise = torch.ops.torchaug.gaussian_noise(torch.zeros_like(x), mean, sigma, seed, False)
    v = x + noise
    return grad * ((v >= 0) & (v <= 1)).to(grad.dtype), None, None, None, None


def _salt_pepper_backward(ctx, grad):
    x, prob, svp, seed, per_channel, salt, pepper = ctx.inputs
    zero = torch.zeros(1, dtype=torch.float32, device=x.device)
    kept = torch.ops.torchaug.salt_and_pepper(torch.ones_like(x), prob, svp, seed, per_channel, zero, zero)
    return grad * kept, None, None, None, None, None, None


def _erase_backward(ctx, grad):
    x, boxes, value, seed = ctx.inputs
    zero = torch.zeros(1, 1, dtype=torch.float32, device=x.device)
    kept = torch.ops.torchaug.erase(torch.ones_like(x), boxes, zero, None)
    return grad * kept, None, None, None


torch.library.register_autograd("torchaug::adjust_sharpness", _sharpness_backward, setup_context=_setup_inputs)
torch.library.register_autograd("torchaug::gaussian_blur", _blur_backward, setup_context=_setup_inputs)
torch.library.register_autograd("torchaug::laplacian", _laplacian_backward, setup_context=_setup_inputs)
torch.library.register_autograd("torchaug::gaussian_noise", _noise_backward, setup_context=_setup_inputs)
torch.library.register_autograd("torchaug::salt_and_pepper", _salt_pepper_backward, setup_context=_setup_inputs)
torch.library.register_autograd("torchaug::erase", _erase_backward, setup_context=_setup_inputs)
