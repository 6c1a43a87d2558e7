"""Color transforms with torchvision.transforms.v2 names and signatures. Each draws a color
program per sample (which op, if any, and its parameters) and runs it with one color_program
call: a different decision, factor and (for ColorJitter) order for every image of the batch."""
import math
import numbers
from typing import Any, Dict, Optional, Sequence, Tuple

import torch

from .. import functional as F
from ..functional._color import COLOR_OPS
from ..functional._utils import _constant_row
from . import _draws as D
from . import _script as S
from ._transform import BatchInfo, Transform, check_probability


def _jitter_range(value, name: str, center: float = 1.0, bound: Tuple[float, float] = (0.0, float("inf")),
                  clip_first_on_zero: bool = True, where: str = "ColorJitter") -> Optional[Tuple[float, float]]:
    """torchvision's ColorJitter._check_input (None: the adjustment is not made)."""
    if value is None:
        return None
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"torchaug.transforms.{where}: if {name} is a single number, it must be non negative, got {value}")
        lo, hi = center - float(value), center + float(value)
        if clip_first_on_zero:
            lo = max(lo, 0.0)
    elif isinstance(value, Sequence) and len(value) == 2 and all(isinstance(v, numbers.Number) for v in value):
        lo, hi = float(value[0]), float(value[1])
    else:
        raise TypeError(f"torchaug.transforms.{where}: {name} should be a single number or a sequence of length 2, got {value!r}")
    if not bound[0] <= lo <= hi <= bound[1]:
        raise ValueError(f"torchaug.transforms.{where}: {name} values should be between {bound}, but got {[lo, hi]}")
    return None if lo == hi == center else (lo, hi)


class _ColorProgram(Transform):
    """A transform whose parameters are a color program: {"ops": (B, n) int64, "params": (B, n, 2)
    float32}; transform() is one color_program call."""

    def transform(self, images, params: Dict[str, Any]):
        return F.color_program(images, params["ops"], params["params"])


class _RandomColorOp(_ColorProgram):
    """One op, applied to each sample with probability p; _params gives its (p0, p1) parameters."""

    op = "identity"

    def __init__(self, p: float = 0.5, generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.p = check_probability(p, type(self).__name__)

    def _params(self) -> Tuple[float, float]:
        return 0.0, 0.0

    def make_params(self, images) -> Dict[str, Any]:
        info = BatchInfo(images)
        p0, p1 = self._params()
        return D.random_color_op_params(info.batch, COLOR_OPS[self.op], self.p, p0, p1, torch.device(info.device),
                                        *self._gen())

    def _scriptable(self):
        return S.ScriptColorOp(COLOR_OPS[self.op], self.p, *self._params(), self.generator)


class RandomGrayscale(_RandomColorOp):
    """torchvision.transforms.v2.RandomGrayscale (the output keeps the input's channels), decided per sample."""

    op = "grayscale"

    def __init__(self, p: float = 0.1, generator: Optional[torch.Generator] = None):
        super().__init__(p, generator)


class RandomInvert(_RandomColorOp):
    """torchvision.transforms.v2.RandomInvert, decided per sample."""

    op = "invert"


class RandomAutocontrast(_RandomColorOp):
    """torchvision.transforms.v2.RandomAutocontrast, decided per sample."""

    op = "autocontrast"


class RandomEqualize(_RandomColorOp):
    """torchvision.transforms.v2.RandomEqualize, decided per sample."""

    op = "equalize"


class RandomPosterize(_RandomColorOp):
    """torchvision.transforms.v2.RandomPosterize(bits, p), decided per sample."""

    op = "posterize"

    def __init__(self, bits: int, p: float = 0.5, generator: Optional[torch.Generator] = None):
        super().__init__(p, generator)
        if isinstance(bits, bool) or not isinstance(bits, numbers.Integral) or not 0 <= bits <= 8:
            raise ValueError(f"torchaug.transforms.RandomPosterize: bits must be an integer in [0, 8], got {bits!r}")
        self.bits = int(bits)

    def _params(self):
        return float(self.bits), 0.0


class RandomSolarize(_RandomColorOp):
    """torchvision.transforms.v2.RandomSolarize(threshold, p), decided per sample."""

    op = "solarize"

    def __init__(self, threshold: float, p: float = 0.5, generator: Optional[torch.Generator] = None):
        super().__init__(p, generator)
        if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
            raise TypeError(f"torchaug.transforms.RandomSolarize: threshold must be a number, got {threshold!r}")
        self.threshold = float(threshold)

    def make_params(self, images) -> Dict[str, Any]:
        if isinstance(images, torch.Tensor):
            top = F._color._max_value(images.dtype)
            if self.threshold > top:
                raise TypeError(f"torchaug.transforms.RandomSolarize: threshold should be less or equal the maximum value of the dtype ({top:g}), got {self.threshold:g}")
        return super().make_params(images)

    def _params(self):
        return self.threshold, 0.0


class ColorJitter(_ColorProgram):
    """torchvision.transforms.v2.ColorJitter with a factor per sample and, as torchvision draws a
    new order per call, a new order of brightness / contrast / saturation / hue per sample. The
    four adjustments run as one color program, drawn for the batch in one launch
    (_color_jitter_program) and applied in one more on uint8 images small enough for a block's
    shared memory on CUDA (224x224 on an H100), else in one pass over the batch plus a statistics
    pass for contrast."""

    def __init__(self, brightness=None, contrast=None, saturation=None, hue=None,
                 generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.brightness = _jitter_range(brightness, "brightness")
        self.contrast = _jitter_range(contrast, "contrast")
        self.saturation = _jitter_range(saturation, "saturation")
        self.hue = _jitter_range(hue, "hue", center=0.0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    def make_params(self, images) -> Dict[str, Any]:
        info = BatchInfo(images)
        rand = D.compiled_draws(info.batch, D.JITTER_DRAWS, info.device, self.generator)
        return D.jitter_program(info.batch, list(self._const()), info.like, self.generator, rand)

    def _const(self) -> Tuple[float, ...]:
        return _jitter_const([self.brightness, self.contrast, self.saturation, self.hue])

    def _scriptable(self):
        return S.ScriptColorJitter(list(self._const()), self.generator)


def _jitter_const(ranges) -> Tuple[float, ...]:
    """[lo (4), span (4), op codes (4)] of brightness, contrast, saturation, hue (code 0, the
    identity, for an adjustment not made)."""
    codes = [float(COLOR_OPS[n]) if r is not None else 0.0 for n, r in zip(("brightness", "contrast", "saturation", "hue"), ranges)]
    lo = [r[0] if r is not None else 0.0 for r in ranges]
    span = [r[1] - r[0] if r is not None else 0.0 for r in ranges]
    return tuple(lo + span + codes)


class RandomChannelPermutation(Transform):
    """torchvision.transforms.v2.RandomChannelPermutation with a uniformly random permutation of the
    channels per sample (one gather over the batch)."""

    _TAKES_LIST = True

    def make_params(self, images) -> Dict[str, Any]:
        info = BatchInfo(images)
        return D.channel_permutation(self._rand((info.batch, info.channels), info.device))

    def transform(self, images, params: Dict[str, Any]):
        return _permuted(images, params["permutation"])

    def _scriptable(self):
        return S.ScriptPhotometricDistort(list(_jitter_const([None] * 4)), 1.0, self.generator, permute_only=True)


def _permuted(images, permutation: torch.Tensor):
    """images (a tensor, or a list of (C, H_i, W_i) images) with their channels permuted per sample."""
    if isinstance(images, (list, tuple)):
        return [F.permute_channels(img, permutation[i], validate=False) for i, img in enumerate(images)]
    return F.permute_channels(images, permutation, validate=False)


class RandomPhotometricDistort(_ColorProgram):
    """torchvision.transforms.v2.RandomPhotometricDistort (SSD's distortion), per sample: each of
    brightness, contrast, saturation and hue applied with probability p with its own factor, contrast
    before saturation and hue or after them (even odds), then the channels permuted with
    probability p; every decision and factor drawn for each image. The four adjustments run as one
    color program (5 slots: brightness, contrast, saturation, hue, contrast), the permutation as one
    gather."""

    def __init__(self, brightness: Tuple[float, float] = (0.875, 1.125), contrast: Tuple[float, float] = (0.5, 1.5),
                 saturation: Tuple[float, float] = (0.5, 1.5), hue: Tuple[float, float] = (-0.05, 0.05), p: float = 0.5,
                 generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        name = "RandomPhotometricDistort"
        self.brightness = _jitter_range(brightness, "brightness", where=name)
        self.contrast = _jitter_range(contrast, "contrast", where=name)
        self.saturation = _jitter_range(saturation, "saturation", where=name)
        self.hue = _jitter_range(hue, "hue", center=0.0, bound=(-0.5, 0.5), clip_first_on_zero=False, where=name)
        self.p = check_probability(p, name)

    def make_params(self, images) -> Dict[str, Any]:
        info = BatchInfo(images)
        dev = torch.device(info.device)
        u = self._rand((info.batch, 10 + info.channels), dev, torch.float64)
        const = _constant_row(_jitter_const([self.brightness, self.contrast, self.saturation, self.hue]), dev, torch.float64)
        return D.photometric_distort_params(const, self.p, u)

    def transform(self, images, params: Dict[str, Any]):
        out = super().transform(images, params)
        return _permuted(out, params["permutation"]) if self.p > 0 else out

    def _scriptable(self):
        const = _jitter_const([self.brightness, self.contrast, self.saturation, self.hue])
        return S.ScriptPhotometricDistort(list(const), self.p, self.generator)


class Grayscale(_ColorProgram):
    """torchvision.transforms.v2.Grayscale(num_output_channels)."""

    def __init__(self, num_output_channels: int = 1):
        super().__init__()
        if num_output_channels not in (1, 3):
            raise ValueError(f"torchaug.transforms.Grayscale: num_output_channels must be 1 or 3, got {num_output_channels!r}")
        self.num_output_channels = num_output_channels

    def transform(self, images, params):
        return F.rgb_to_grayscale(images, self.num_output_channels)

    def _scriptable(self):
        return S.ScriptGrayscale(int(self.num_output_channels))


def _value_range(value, name: str, where: str, lo: float = -math.inf, hi: float = math.inf) -> Tuple[float, float]:
    """A number (a range of one value) or a (min, max) pair within [lo, hi]."""
    pair = (value, value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else value
    if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2 \
            or not all(isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v) for v in pair):
        raise TypeError(f"torchaug.transforms.{where}: {name} must be a finite number or a (min, max) pair, got {value!r}")
    a, b = float(pair[0]), float(pair[1])
    if not lo <= a <= b <= hi:
        raise ValueError(f"torchaug.transforms.{where}: {name} must be a (min, max) pair with {lo:g} <= min <= max <= {hi:g}, "
                         f"got {[a, b]}")
    return a, b


class _RandomColorRange(_ColorProgram):
    """One color op applied to each sample with probability p, its two parameters drawn uniformly
    from ranges per sample: {"ops" (B, 1), "params" (B, 1, 2)}, one color_program call."""

    op = "identity"

    def __init__(self, p: float, generator: Optional[torch.Generator]):
        super().__init__(generator)
        self.p = check_probability(p, type(self).__name__)

    def _const(self, floating: bool) -> Tuple[float, float, float, float]:
        """[lo0, span0, lo1, span1] for uint8 (floating False) or floating images."""
        raise NotImplementedError

    def make_params(self, images) -> Dict[str, Any]:
        info = BatchInfo(images)
        dev = torch.device(info.device)
        first = images if isinstance(images, torch.Tensor) else images[0]
        u = self._rand((info.batch, 3), dev, torch.float64)
        return D.random_color_range_params(COLOR_OPS[self.op], self.p, _constant_row(self._const(first.is_floating_point()), dev,
                                                                                     torch.float64), u)

    def _scriptable(self):
        return S.ScriptColorRange(COLOR_OPS[self.op], self.p, list(self._const(False)), list(self._const(True)), self.generator)


class RandomGamma(_RandomColorRange):
    """Kornia's RandomGamma(gamma, gain, p): torchvision's adjust_gamma (gain * x ** gamma) with gamma
    and gain drawn uniformly per sample from their (min, max) ranges, applied with probability p."""

    op = "gamma"

    def __init__(self, gamma=(1.0, 1.0), gain=(1.0, 1.0), p: float = 1.0, generator: Optional[torch.Generator] = None):
        super().__init__(p, generator)
        self.gamma = _value_range(gamma, "gamma", "RandomGamma", lo=0.0)
        self.gain = _value_range(gain, "gain", "RandomGamma")

    def _const(self, floating: bool):
        return (self.gamma[0], self.gamma[1] - self.gamma[0], self.gain[0], self.gain[1] - self.gain[0])


class RandomSolarizeAdd(_RandomColorRange):
    """DALI auto_aug's solarize_add as a transform: pixels below threshold get shift added
    (saturating), with shift drawn uniformly per sample from its (min, max) range (uint8 images add
    its integer part) and applied with probability p. shift and threshold are in the images' value
    scale; threshold None is 128 for uint8 and 128 / 255 for floating images (F.solarize_add's)."""

    op = "solarize_add"

    def __init__(self, shift, threshold: Optional[float] = None, p: float = 0.5, generator: Optional[torch.Generator] = None):
        super().__init__(p, generator)
        self.shift = _value_range(shift, "shift", "RandomSolarizeAdd", lo=-255.0, hi=255.0)
        self.threshold = None if threshold is None else _value_range(threshold, "threshold", "RandomSolarizeAdd")[0]

    def _const(self, floating: bool):
        threshold = self.threshold if self.threshold is not None else (128.0 / 255.0 if floating else 128.0)
        return (self.shift[0], self.shift[1] - self.shift[0], threshold, 0.0)

    def make_params(self, images) -> Dict[str, Any]:
        first = images if isinstance(images, torch.Tensor) else images[0]
        top = 1.0 if first.is_floating_point() else 255.0
        if max(abs(self.shift[0]), abs(self.shift[1])) > top:
            raise ValueError(f"torchaug.transforms.RandomSolarizeAdd: shift must lie within [-{top:g}, {top:g}] for "
                             f"{first.dtype} images, got {list(self.shift)}")
        return super().make_params(images)


class RandomSaltAndPepper(Transform):
    """Kornia's RandomSaltAndPepperNoise(amount, salt_vs_pepper, p) on torchaug's salt_and_pepper op:
    applied to each sample with probability p, each pixel (each element with per_channel) replaced
    with probability amount (drawn per sample from its range) by salt (the dtype's maximum) with
    probability salt_vs_pepper (drawn per sample), else by pepper (0); noise from a seed per sample."""

    _TAKES_LIST = True

    def __init__(self, amount=(0.01, 0.06), salt_vs_pepper=(0.4, 0.6), p: float = 0.5, per_channel: bool = False,
                 generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        name = "RandomSaltAndPepper"
        self.amount = _value_range(amount, "amount", name, 0.0, 1.0)
        self.salt_vs_pepper = _value_range(salt_vs_pepper, "salt_vs_pepper", name, 0.0, 1.0)
        self.p = check_probability(p, name)
        self.per_channel = bool(per_channel)

    def make_params(self, images) -> Dict[str, Any]:
        info = BatchInfo(images)
        dev = torch.device(info.device)
        u = self._rand((info.batch, 3), dev, torch.float64)
        seed = F.draw_seeds(info.batch, dev, self.generator)
        return D.salt_and_pepper_params(self.p, list(self.amount), list(self.salt_vs_pepper), u, seed)

    def transform(self, images, params):
        def one(x, i):
            return F.salt_and_pepper(x, params["amount"][i], params["salt_vs_pepper"][i], self.per_channel,
                                     seed=params["seed"][i], validate=False)
        if isinstance(images, (list, tuple)):
            return [one(img, slice(i, i + 1)) for i, img in enumerate(images)]
        return F.salt_and_pepper(images, params["amount"], params["salt_vs_pepper"], self.per_channel, seed=params["seed"],
                                 validate=False)

    def _scriptable(self):
        return S.ScriptSaltAndPepper(self.p, list(self.amount), list(self.salt_vs_pepper), self.per_channel, self.generator)


class JPEG(Transform):
    """torchvision.transforms.v2.JPEG(quality): JPEG compression artefacts, a quality drawn per
    sample from [min, max] (an int: that quality); functional.jpeg runs the lossy part of libjpeg's
    encoder and decoder as torch ops on the images' device, the batch at once. uint8 images."""

    def __init__(self, quality, generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        if isinstance(quality, numbers.Integral) and not isinstance(quality, bool):
            quality = (int(quality), int(quality))
        if not (isinstance(quality, Sequence) and len(quality) == 2 and all(isinstance(v, numbers.Integral) for v in quality)
                and 1 <= quality[0] <= quality[1] <= 100):
            raise ValueError(f"torchaug.transforms.JPEG: quality must be an int or (min, max) ints with 1 <= min <= max <= 100, "
                             f"got {quality!r}")
        self.quality = (int(quality[0]), int(quality[1]))

    def make_params(self, images) -> Dict[str, Any]:
        info = BatchInfo(images)
        lo, hi = self.quality
        return {"quality": lo + self._randint(hi - lo + 1, (info.batch,), info.device)}

    def transform(self, images, params):
        return F.jpeg(images, params["quality"])
