"""Normalize and ToDtype with torchvision.transforms.v2 names and signatures."""
from typing import Optional, Sequence

import torch

from .. import functional as F
from . import _script as S
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
