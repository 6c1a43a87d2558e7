"""Functional color ops: torchvision.transforms.v2.functional names and signatures, every
parameter optionally per sample (a (B,) tensor on the images' device). uint8 results equal
torchvision's (they truncate where torchvision truncates); floating results agree to rounding."""
import numbers
from typing import Optional

import torch

from .. import _ops  # noqa: F401  (registers torch.ops.torchaug)
from ._utils import as_batch, check_tensor, per_sample, unbatch

_ops_ns = torch.ops.torchaug

# op ids of color_program (csrc/kernels/color.h: ColorOp)
COLOR_OPS = {
    "identity": 0,
    "brightness": 1,
    "contrast": 2,
    "saturation": 3,
    "hue": 4,
    "gamma": 5,
    "grayscale": 6,
    "invert": 7,
    "posterize": 8,
    "solarize": 9,
    "solarize_add": 10,
    "autocontrast": 11,
    "equalize": 12,
}


def _max_value(dtype: torch.dtype) -> float:
    return 255.0 if dtype == torch.uint8 else 65535.0 if dtype == torch.uint16 else 1.0


def _param(value, x: torch.Tensor, name: str, op: str, lo: Optional[float] = None, hi: Optional[float] = None,
           integral: bool = False, validate: bool = True) -> torch.Tensor:
    """(B,) float32 on the images' device from a number or a (B,)/(1,)/0-d tensor, with its range
    checked (for a tensor on the GPU the check synchronises; validate=False skips it)."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, torch.Tensor)):
        raise TypeError(f"torchaug.{op}: {name} must be a number or a tensor, got {type(value).__name__}")
    if isinstance(value, numbers.Real):
        v = float(value)
        bad = (lo is not None and v < lo) or (hi is not None and v > hi) or v != v or (integral and v != int(v))
        if bad:
            raise ValueError(f"torchaug.{op}: {name} must be {_range_doc(lo, hi, integral)}, got {value}")
        return per_sample(v, x.shape[0], x.device, torch.float32, name, op)
    t = per_sample(value, x.shape[0], x.device, torch.float32, name, op)
    if validate and t.numel():
        bad = torch.isnan(t)
        if lo is not None:
            bad |= t < lo
        if hi is not None:
            bad |= t > hi
        if integral:
            bad |= t != t.round()
        if bool(bad.any()):
            i = int(bad.nonzero()[0, 0])
            raise ValueError(f"torchaug.{op}: {name} must be {_range_doc(lo, hi, integral)}, got {t[i].item():g} for sample {i}")
    return t


def _range_doc(lo, hi, integral):
    kind = "an integer" if integral else "a number"
    if lo is not None and hi is not None:
        return f"{kind} in [{lo:g}, {hi:g}]"
    if lo is not None:
        return f"{kind} >= {lo:g}"
    if hi is not None:
        return f"{kind} <= {hi:g}"
    return kind


def adjust_brightness(images, brightness_factor, validate: bool = True) -> torch.Tensor:
    x, single = as_batch(images, "adjust_brightness")
    f = _param(brightness_factor, x, "brightness_factor", "adjust_brightness", lo=0.0, validate=validate)
    return unbatch(_ops_ns.adjust_brightness(x, f), single)


def adjust_contrast(images, contrast_factor, validate: bool = True) -> torch.Tensor:
    x, single = as_batch(images, "adjust_contrast")
    f = _param(contrast_factor, x, "contrast_factor", "adjust_contrast", lo=0.0, validate=validate)
    return unbatch(_ops_ns.adjust_contrast(x, f), single)


def adjust_saturation(images, saturation_factor, validate: bool = True) -> torch.Tensor:
    x, single = as_batch(images, "adjust_saturation")
    f = _param(saturation_factor, x, "saturation_factor", "adjust_saturation", lo=0.0, validate=validate)
    return unbatch(_ops_ns.adjust_saturation(x, f), single)


def adjust_hue(images, hue_factor, validate: bool = True) -> torch.Tensor:
    x, single = as_batch(images, "adjust_hue")
    f = _param(hue_factor, x, "hue_factor", "adjust_hue", lo=-0.5, hi=0.5, validate=validate)
    return unbatch(_ops_ns.adjust_hue(x, f), single)


def adjust_gamma(images, gamma, gain=1.0, validate: bool = True) -> torch.Tensor:
    x, single = as_batch(images, "adjust_gamma")
    g = _param(gamma, x, "gamma", "adjust_gamma", lo=0.0, validate=validate)
    k = _param(gain, x, "gain", "adjust_gamma", validate=validate)
    return unbatch(_ops_ns.adjust_gamma(x, g, k), single)


def rgb_to_grayscale(images, num_output_channels: int = 1) -> torch.Tensor:
    x, single = as_batch(images, "rgb_to_grayscale")
    if num_output_channels not in (1, 3):
        raise ValueError(f"torchaug.rgb_to_grayscale: num_output_channels must be 1 or 3, got {num_output_channels}")
    if x.shape[1] == 1 and num_output_channels == 3:
        return unbatch(x.repeat(1, 3, 1, 1), single)
    return unbatch(_ops_ns.rgb_to_grayscale(x, num_output_channels), single)


to_grayscale = rgb_to_grayscale


def grayscale_to_rgb(images) -> torch.Tensor:
    """torchvision's grayscale_to_rgb: a 1-channel image repeated to 3 channels; an image of 3 or
    more channels is returned as it is."""
    x, single = as_batch(images, "grayscale_to_rgb")
    if x.shape[1] == 2:
        raise ValueError(f"torchaug.grayscale_to_rgb: images must have 1 channel (or 3 or more, returned as they are), "
                         f"got {x.shape[1]}")
    return unbatch(x if x.shape[1] >= 3 else x.repeat(1, 3, 1, 1), single)


def invert(images) -> torch.Tensor:
    x, single = as_batch(images, "invert")
    return unbatch(_ops_ns.invert(x), single)


def posterize(images, bits, validate: bool = True) -> torch.Tensor:
    x, single = as_batch(images, "posterize")
    b = _param(bits, x, "bits", "posterize", lo=0, hi=8, integral=True, validate=validate)
    return unbatch(_ops_ns.posterize(x, b), single)


def solarize(images, threshold, validate: bool = True) -> torch.Tensor:
    x, single = as_batch(images, "solarize")
    t = _param(threshold, x, "threshold", "solarize", hi=_max_value(x.dtype), validate=validate)
    return unbatch(_ops_ns.solarize(x, t), single)


def solarize_add(images, shift, threshold=None, validate: bool = True) -> torch.Tensor:
    """DALI auto_aug's solarize_add: pixels below `threshold` (128 for uint8, 128/255 for floating
    images by default) get `shift` added (an integer for uint8 images: its fraction is dropped),
    saturating at the maximum value."""
    x, single = as_batch(images, "solarize_add")
    top = _max_value(x.dtype)
    s = _param(shift, x, "shift", "solarize_add", lo=-top, hi=top, validate=validate)
    if threshold is None:
        threshold = 128.0 if x.dtype == torch.uint8 else 128.0 / 255.0
    t = _param(threshold, x, "threshold", "solarize_add", validate=validate)
    return unbatch(_ops_ns.solarize_add(x, s, t), single)


def autocontrast(images) -> torch.Tensor:
    x, single = as_batch(images, "autocontrast")
    return unbatch(_ops_ns.autocontrast(x), single)


def equalize(images) -> torch.Tensor:
    """torchvision's equalize (PIL's lookup table) per image; a uint16 image is equalized as
    torchvision does it, through uint8 (to_dtype both ways)."""
    if isinstance(images, torch.Tensor) and images.dtype == torch.uint16:
        from ._convert import to_dtype
        return to_dtype(equalize(to_dtype(images, torch.uint8, scale=True)), torch.uint16, scale=True)
    x, single = as_batch(images, "equalize")
    return unbatch(_ops_ns.equalize(x), single)


def color_program(images, ops: torch.Tensor, params: torch.Tensor) -> torch.Tensor:
    """Applies to sample b the ops ops[b, 0], ops[b, 1], ... in order (int64 ids of COLOR_OPS),
    with parameters params[b, k] = (p0, p1): the factor (brightness, contrast, saturation), the
    hue shift, (gamma, gain), bits, threshold, or (shift, threshold) of solarize_add. Each op sees
    the result of the previous one, its statistics included (contrast mean, autocontrast min/max,
    equalize histograms). Parameters are not range-checked here: the transforms build valid ones."""
    x, single = as_batch(images, "color_program")
    b = x.shape[0]
    check_tensor(ops, "ops", "color_program")
    check_tensor(params, "params", "color_program")
    if ops.dim() == 1:  # one op per sample, or one program for a single image
        ops = ops.unsqueeze(1) if ops.shape[0] == b and not single else ops.unsqueeze(0)
    if params.dim() == 2:
        params = params.unsqueeze(1) if params.shape[0] == b and not single and ops.shape[1] == 1 else params.unsqueeze(0)
    if ops.dim() != 2 or ops.shape[0] not in (1, b):
        raise ValueError(f"torchaug.color_program: ops must have shape (B, n) with B={b}, got {tuple(ops.shape)}")
    if params.dim() != 3 or params.shape[0] not in (1, b) or params.shape[1:] != (ops.shape[1], 2):
        raise ValueError(f"torchaug.color_program: params must have shape (B, n, 2) with B={b}, n={ops.shape[1]}, "
                         f"got {tuple(params.shape)}")
    ops = ops.to(device=x.device, dtype=torch.int64).expand(x.shape[0], -1)
    params = params.to(device=x.device, dtype=torch.float32).expand(x.shape[0], -1, -1)
    return unbatch(_ops_ns.color_program(x, ops, params), single)


def _permute_channels(x: torch.Tensor, permutation: torch.Tensor) -> torch.Tensor:
    """Output channel c of sample b is input channel permutation[b, c]: one gather over the batch
    (x (B, C, H, W), permutation (B, C) int64 on x's device), in x's memory format. TorchScript-
    compatible: the scripted transforms call it too."""
    b, c = x.shape[0], x.shape[1]
    index = permutation.reshape(b, c, 1, 1).expand(x.shape)
    out = torch.empty_like(x)
    return torch.gather(x, 1, index, out=out)


def permute_channels(images, permutation, validate: bool = True) -> torch.Tensor:
    """torchvision's permute_channels with a permutation per sample: output channel c of sample b is
    input channel permutation[b][c]. permutation: C ints (every sample), or a (C,) or (B, C) integer
    tensor; each row a permutation of 0..C-1 (checked; a tensor on the GPU is checked with a
    synchronisation unless validate=False, which the transforms pass for the permutations they
    draw themselves)."""
    x, single = as_batch(images, "permute_channels")
    b, c = x.shape[0], x.shape[1]
    if not isinstance(permutation, torch.Tensor):
        if isinstance(permutation, (str, bytes)) or not isinstance(permutation, (list, tuple)) \
                or not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in permutation):
            raise TypeError(f"torchaug.permute_channels: permutation must be a sequence of ints or an integer tensor, "
                            f"got {permutation!r:.80}")
        permutation = torch.tensor(permutation, dtype=torch.int64)
    check_tensor(permutation, "permutation", "permute_channels", integer=True)
    if permutation.dim() == 1:
        permutation = permutation.unsqueeze(0)
    if permutation.dim() != 2 or permutation.shape[1] != c or permutation.shape[0] not in (1, b):
        raise ValueError(f"torchaug.permute_channels: permutation must have shape ({c},) or (B, {c}) with B={b} "
                         f"(one index per channel of the images), got {tuple(permutation.shape)}")
    permutation = permutation.to(device=x.device, dtype=torch.int64).expand(b, c)
    if validate and permutation.numel() and not torch.compiler.is_compiling():
        ok = torch.equal(permutation.sort(dim=1).values, torch.arange(c, device=x.device).expand(b, c))
        if not ok:
            rows = permutation.cpu()
            bad = next(i for i in range(b) if not torch.equal(rows[i].sort().values, torch.arange(c)))
            raise ValueError(f"torchaug.permute_channels: permutation must be a permutation of 0..{c - 1} in every row, "
                             f"got {rows[bad].tolist()} for sample {bad}")
    return unbatch(_permute_channels(x, permutation), single)
