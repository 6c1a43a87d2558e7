"""The batch mixers MixUp and CutMix with torchvision.transforms.v2 names and signatures, each sample
mixed with the one before it, with its own lam (and box) per sample."""
import numbers
from typing import Any, Dict, Optional

import torch

from .. import functional as F
from . import _draws as D
from . import _script as S
from ._transform import Transform


class _Mixer(Transform):
    def __init__(self, alpha: float, num_classes: Optional[int], per_sample: bool, generator):
        super().__init__(generator)
        name = type(self).__name__
        if not isinstance(alpha, numbers.Real) or not alpha > 0:
            raise ValueError(f"torchaug.transforms.{name}: alpha must be positive, got {alpha!r}")
        if num_classes is not None and (isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral) or num_classes < 1):
            raise ValueError(f"torchaug.transforms.{name}: num_classes must be a positive integer or None, got {num_classes!r}")
        self.alpha, self.num_classes, self.per_sample = float(alpha), num_classes, bool(per_sample)

    _MODE = 0  # the scripted form's mode: 0 MixUp, 1 CutMix

    def _scriptable(self):
        return S.ScriptMixer(self._MODE, self.alpha, self.num_classes, self.per_sample, self.generator)

    def forward(self, images, labels, params: Optional[Dict[str, Any]] = None, return_params: bool = False):
        if not isinstance(images, torch.Tensor) or images.dim() != 4:
            raise ValueError(f"torchaug.transforms.{type(self).__name__}: images must be a (B, C, H, W) batch, got "
                             f"{tuple(images.shape) if isinstance(images, torch.Tensor) else type(images).__name__}")
        if not isinstance(labels, torch.Tensor) or labels.shape[0] != images.shape[0]:
            raise ValueError(f"torchaug.transforms.{type(self).__name__}: labels must be a tensor with one row per image "
                             f"({images.shape[0]}), got {tuple(labels.shape) if isinstance(labels, torch.Tensor) else type(labels).__name__}")
        if params is None:
            params = self.make_params(images)
        out = self.transform((images, labels), params)
        return (out, params) if return_params else out


class MixUp(_Mixer):
    """torchvision.transforms.v2.MixUp(alpha, num_classes) with lam ~ Beta(alpha, alpha) per sample
    (per_sample=False: one per batch, as torchvision). forward(images, labels) -> (images, soft
    labels); labels are class indices (one-hot encoded with num_classes) or (B, num_classes)."""

    _TAKES_LIST = True
    _TAKES_CLIPS = True

    def __init__(self, *, alpha: float = 1.0, num_classes: Optional[int] = None, per_sample: bool = True,
                 generator: Optional[torch.Generator] = None):
        super().__init__(alpha, num_classes, per_sample, generator)

    def make_params(self, images) -> Dict[str, Any]:
        return {"lam": D.mix_lam(images.shape[0], self.alpha, self.per_sample, images.device, *self._gen())}

    def transform(self, inputs, params):
        images, labels = inputs
        return F.mixup(images, labels, params["lam"], self.num_classes)


class CutMix(_Mixer):
    """torchvision.transforms.v2.CutMix(alpha, num_classes) with lam and the box per sample
    (per_sample=False: one lam for the batch; boxes still per sample). forward(images, labels) ->
    (images, soft labels), the labels mixed with 1 - box area / image area as torchvision's."""

    def __init__(self, *, alpha: float = 1.0, num_classes: Optional[int] = None, per_sample: bool = True,
                 generator: Optional[torch.Generator] = None):
        super().__init__(alpha, num_classes, per_sample, generator)

    _MODE = 1

    def make_params(self, images) -> Dict[str, Any]:
        return D.cutmix_params(images.shape[0], images.shape[-2], images.shape[-1], self.alpha, self.per_sample, images.device,
                               *self._gen())

    def transform(self, inputs, params):
        images, labels = inputs
        return F.cutmix(images, labels, params["boxes"], self.num_classes)
