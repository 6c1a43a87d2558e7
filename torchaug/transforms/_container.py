"""Compose, with the fusion of crop -> horizontal flip -> ToDtype -> Normalize into one launch, and
of an auto-augmentation policy -> ToDtype -> Normalize into the policy's op call."""
from typing import Any, Callable, List, Optional, Sequence

from torch import nn

from .. import functional as F

from ._auto_augment import _AutoAugmentBase
from ._geometry import RandomHorizontalFlip, _CropLike
from ._misc import Normalize, ToDtype
from . import _script as S
from ._transform import Transform, as_input


def _is_scaling_to_float(t) -> bool:
    return type(t) is ToDtype and t.scale and t.dtype.is_floating_point


class Compose(Transform):
    """torchvision.transforms.v2.Compose over torchaug transforms and plain callables.

    A crop-like transform (RandomResizedCrop, Resize, CenterCrop) followed by any of
    RandomHorizontalFlip, ToDtype(floating, scale=True) and Normalize, in that order, runs as one
    resized_crop launch, an auto-augmentation policy (RandAugment, TrivialAugmentWide, AutoAugment,
    AugMix's chains excepted) followed by [ToDtype(floating, scale=True)] Normalize as one augment
    call that normalizes, and ToDtype(floating, scale=True) followed by Normalize as one normalize
    pass, with the same result as running them one by one (fuse=False does that).
    forward(images, *targets, params=None, return_params=False): params is the list of each
    transform's parameters (None for plain callables); targets (boxes, masks, keypoints) follow
    each transform in turn, and then the output is (images, *targets). A RaggedImages batch goes as
    it is to the transforms that read it in place (the crop-like ones) and as its list of images to
    the others."""

    _TAKES_RAGGED = True

    def __init__(self, transforms: Sequence[Callable], fuse: bool = True):
        super().__init__()
        if not isinstance(transforms, Sequence) or not all(callable(t) for t in transforms):
            raise TypeError("torchaug.transforms.Compose: transforms must be a sequence of callables")
        self.transforms = list(transforms)
        self._modules_list = nn.ModuleList([t for t in transforms if isinstance(t, nn.Module)])
        self.fuse = fuse

    def _fusable_run(self, i: int) -> int:
        """End (exclusive) of the fusable run starting at transform i; i + 1 when nothing fuses."""
        ts = self.transforms
        if self.fuse and _is_scaling_to_float(ts[i]) and i + 1 < len(ts) and type(ts[i + 1]) is Normalize:
            return i + 2  # ToDtype(floating, scale=True) + Normalize: one normalize pass
        if self.fuse and isinstance(ts[i], _AutoAugmentBase) and type(ts[i]).transform is _AutoAugmentBase.transform:
            j = i + 1
            if j < len(ts) and _is_scaling_to_float(ts[j]):
                j += 1
            return j + 1 if j < len(ts) and type(ts[j]) is Normalize else i + 1
        if not self.fuse or not isinstance(ts[i], _CropLike):
            return i + 1
        j = i + 1
        if j < len(ts) and type(ts[j]) is RandomHorizontalFlip:
            j += 1
        if j < len(ts) and _is_scaling_to_float(ts[j]):
            j += 1
        if j < len(ts) and type(ts[j]) is Normalize:
            j += 1
        return j

    def forward(self, images, *targets, params: Optional[List[Any]] = None, return_params: bool = False):
        ts = self.transforms
        if params is not None and len(params) != len(ts):
            raise ValueError(f"torchaug.transforms.Compose: params must have one entry per transform ({len(ts)}), got {len(params)}")
        drawn: List[Any] = [None] * len(ts)
        x = images
        i = 0
        while i < len(ts):
            x = as_input(ts[i], x)
            end = self._fusable_run(i)
            if end - i > 1:
                out = self._run_fused(x, i, end, params, drawn)
                if targets:  # each transform of the fused run moves the targets in turn
                    targets = ts[i].transform_targets(x, targets, drawn[i])
                    for k in range(i + 1, end):
                        targets = ts[k].transform_targets(out, targets, drawn[k])
                x = out
                i = end
                continue
            t = ts[i]
            if isinstance(t, Transform):
                p = params[i] if params is not None else t.make_params(x)
                drawn[i] = p
                out = t.transform(x, p)
                if targets:
                    targets = t.transform_targets(x, targets, p)
                x = out
            else:
                x = t(x)  # plain callables see the images only; targets pass through
            i += 1
        result = (x,) + tuple(targets) if targets else x
        return (result, drawn) if return_params else result

    def _scriptable(self):
        children = []
        for t in self.transforms:
            if not isinstance(t, nn.Module):
                raise RuntimeError(f"torchaug.transforms.Compose: {t!r} is not an nn.Module; a scripted Compose holds modules only")
            if type(t).__name__ in ("MixUp", "CutMix"):
                raise RuntimeError(f"torchaug.transforms.Compose: a scripted Compose maps images to images; script {type(t).__name__} "
                                   "on its own (its forward takes and returns images and labels)")
            children.append(t)  # torch.jit.script prepares each child (its own TorchScript form)
        return S.ScriptCompose(children)

    def _run_fused(self, x, i: int, end: int, params, drawn):
        ts = self.transforms
        crop = ts[i]
        for k in range(i, end):
            drawn[k] = params[k] if params is not None else ts[k].make_params(x)
        if isinstance(crop, ToDtype):
            norm = ts[i + 1]
            out_dtype = norm.out_dtype if norm.out_dtype is not None else crop.dtype
            return F.normalize(x, norm.mean, norm.std, out_dtype=out_dtype, memory_format=norm.memory_format)
        if isinstance(crop, _AutoAugmentBase):
            norm = ts[end - 1]
            cast = ts[i + 1] if end - i == 3 else None
            out_dtype = norm.out_dtype if norm.out_dtype is not None else (cast.dtype if cast is not None else None)
            return crop.transform_fused(x, drawn[i], norm.mean, norm.std, out_dtype, norm.memory_format)
        fused = {}
        for k in range(i + 1, end):
            t = ts[k]
            if isinstance(t, RandomHorizontalFlip):
                fused["flip"] = drawn[k]["flip"]
            elif isinstance(t, ToDtype):
                fused["out_dtype"] = t.dtype
            else:
                fused["mean"], fused["std"] = t.mean, t.std
                if t.out_dtype is not None:
                    fused["out_dtype"] = t.out_dtype
                fused["memory_format"] = t.memory_format
        return crop.transform_fused(x, drawn[i], **fused)
