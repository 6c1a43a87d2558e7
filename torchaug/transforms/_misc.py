"""Normalize, ToDtype and the conversions and pass-throughs (ConvertImageDtype, Identity, Lambda,
RGB, ToPureTensor) with torchvision.transforms.v2 names and signatures."""
from typing import Any, Callable, Dict, Optional, Sequence

import torch

from .. import functional as F
from . import _script as S
from . import _targets
from ._transform import Transform


class Normalize(Transform):
    """torchvision.transforms.v2.Normalize; a uint8 input is scaled to [0, 1] first (torchvision
    raises instead). out_dtype / memory_format fuse the cast and the layout into the same pass."""

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False,
                 out_dtype: Optional[torch.dtype] = None, memory_format: Optional[torch.memory_format] = None):
        super().__init__()
        mean, std = list(mean), list(std)
        if len(mean) != len(std):
            raise ValueError(f"torchaug.transforms.Normalize: mean and std must have the same length, got {len(mean)} and {len(std)}")
        if any(s == 0 for s in std):
            raise ValueError(f"torchaug.transforms.Normalize: std evaluated to zero, leading to division by zero: {std}")
        self.mean, self.std = [float(m) for m in mean], [float(s) for s in std]
        self.inplace = inplace  # accepted for torchvision compatibility; the op always writes a new tensor
        self.out_dtype, self.memory_format = out_dtype, memory_format

    def transform(self, images, params):
        return F.normalize(images, self.mean, self.std, out_dtype=self.out_dtype, memory_format=self.memory_format)

    def _scriptable(self):
        return S.ScriptNormalize([float(v) for v in self.mean], [float(v) for v in self.std], self.out_dtype, self.memory_format)


class ToDtype(Transform):
    """torchvision.transforms.v2.ToDtype for images."""

    def __init__(self, dtype: torch.dtype, scale: bool = False):
        super().__init__()
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"torchaug.transforms.ToDtype: dtype must be a torch.dtype, got {dtype!r}")
        self.dtype, self.scale = dtype, scale

    def transform(self, images, params):
        return F.to_dtype(images, self.dtype, self.scale)

    def _scriptable(self):
        return S.ScriptToDtype(self.dtype, bool(self.scale), self.dtype.is_floating_point)


class ConvertImageDtype(ToDtype):
    """torchvision.transforms.v2.ConvertImageDtype: ToDtype(dtype, scale=True)."""

    def __init__(self, dtype: torch.dtype = torch.float32):
        super().__init__(dtype, scale=True)


class Identity(Transform):
    """torchvision.transforms.v2.Identity: returns its input (targets included) as it is."""

    def transform(self, images, params):
        return images

    def _scriptable(self):
        return S.ScriptTransform()


class Lambda(Transform):
    """torchvision.transforms.v2.Lambda(lambd): lambd applied to the images (the whole batch, or the
    single image); targets pass through it unchanged."""

    def __init__(self, lambd: Callable[[Any], Any]):
        super().__init__()
        if not callable(lambd):
            raise TypeError(f"torchaug.transforms.Lambda: lambd should be callable, got {type(lambd).__name__}")
        self.lambd = lambd

    def transform(self, images, params):
        return self.lambd(images)


class RGB(Transform):
    """torchvision.transforms.v2.RGB: a 1-channel image repeated to 3 channels, a 3-channel one as it is."""

    def transform(self, images, params):
        if isinstance(images, (list, tuple)):
            return [F.grayscale_to_rgb(img) for img in images]
        return F.grayscale_to_rgb(images)

    def _scriptable(self):
        return S.ScriptRGB()


class ToPureTensor(Transform):
    """torchvision.transforms.v2.ToPureTensor: torchvision's tv_tensors (images, and the boxes, masks
    and keypoints among the targets) become plain torch.Tensors; torchaug's target wrappers give
    their data."""

    def forward(self, images, *targets, params: Optional[Dict[str, Any]] = None, return_params: bool = False):
        out = _pure(images)
        if targets:
            out = (out,) + tuple(_pure(t) for t in targets)
        return (out, {}) if return_params else out

    def transform(self, images, params):
        return _pure(images)

    def _scriptable(self):
        return S.ScriptTransform()


def _pure(obj):
    if isinstance(obj, (_targets.BoundingBoxes, _targets.Mask, _targets.KeyPoints)):
        return obj.data
    if isinstance(obj, torch.Tensor):
        return obj.as_subclass(torch.Tensor) if type(obj) is not torch.Tensor else obj
    if isinstance(obj, dict):
        return type(obj)((k, _pure(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)) and not isinstance(obj, str):
        out = [_pure(v) for v in obj]
        return tuple(out) if isinstance(obj, tuple) else out
    return obj
