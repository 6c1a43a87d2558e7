"""Compose, with the fusion of crop -> horizontal flip -> ToDtype -> Normalize into one launch, and
of an auto-augmentation policy -> ToDtype -> Normalize into the policy's op call; the random
containers RandomApply, RandomChoice and RandomOrder, deciding per sample."""
import itertools
import math
import numbers
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch
from torch import nn

from .. import functional as F
from ..functional._utils import _constant_row, where_images

from ._auto_augment import _AutoAugmentBase
from ._geometry import RandomHorizontalFlip, _CropLike, _DrawnCrop
from ._misc import Normalize, ToDtype
from . import _script as S
from . import _targets
from ._transform import BatchInfo, Transform, as_input, check_probability, is_image_list, per_size


def _is_scaling_to_float(t) -> bool:
    return type(t) is ToDtype and t.scale and t.dtype.is_floating_point


class Compose(Transform):
    """torchvision.transforms.v2.Compose over torchaug transforms and plain callables.

    A crop-like transform (RandomResizedCrop, Resize, CenterCrop, RandomCrop with zero padding)
    followed by any of RandomHorizontalFlip, ToDtype(floating, scale=True) and Normalize, in that
    order, runs as one resized_crop launch, an auto-augmentation policy (RandAugment,
    TrivialAugmentWide, AutoAugment, AugMix's chains excepted) followed by [ToDtype(floating,
    scale=True)] Normalize as one augment call that normalizes, and ToDtype(floating, scale=True)
    followed by Normalize as one normalize pass, with the same result as running them one by one
    (fuse=False does that). A RandomResizedCrop or RandomCrop followed by a RandomHorizontalFlip of
    the same generator draws the crops and the coins in one call, the numbers the two draw in turn.
    forward(images, *targets, params=None, return_params=False): params is the list of each
    transform's parameters (None for plain callables); targets (boxes, masks, keypoints) follow
    each transform in turn, and then the output is (images, *targets). A RaggedImages batch goes as
    it is to the transforms that read it in place (the crop-like ones) and as its list of images to
    the others."""

    _TAKES_LIST = True
    _TAKES_CLIPS = True

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
        if not self.fuse or not isinstance(ts[i], _CropLike) or not ts[i]._is_crop():
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
        if isinstance(x, torch.Tensor) and x.dim() >= 5:  # clips: each transform draws per clip itself (per_clip)
            for i, t in enumerate(ts):
                if isinstance(t, Transform):
                    out, drawn[i] = t(x, *targets, params=params[i] if params is not None else None, return_params=True)
                    x, targets = (out[0], tuple(out[1:])) if targets else (out, targets)
                else:
                    x = t(x)
            result = (x,) + tuple(targets) if targets else x
            return (result, drawn) if return_params else result
        i = 0
        while i < len(ts):
            x = as_input(ts[i], x)
            listed = is_image_list(x)  # a list of (C, H_i, W_i) images
            if isinstance(ts[i], Transform) and not ts[i]._TAKES_LIST and listed:
                # images of different sizes: the transform runs on each size's batch (per_size)
                x, targets, drawn[i] = per_size(ts[i], x, targets, params[i] if params is not None else None)
                i += 1
                continue
            # a fused launch takes a batch, or a list that a crop-like transform makes one batch of (a
            # flip, ToDtype or Normalize heading a run keeps a list's sizes: those go image by image)
            end = self._fusable_run(i) if not listed or isinstance(ts[i], _CropLike) else i + 1
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
                p = params[i] if params is not None else t._params_for(x, targets)
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
        start = i
        if (params is None and isinstance(crop, _DrawnCrop) and type(ts[i + 1]) is RandomHorizontalFlip
                and crop.generator is ts[i + 1].generator and not torch.compiler.is_compiling()):
            # the crop's windows and the flip's coins in one call (one kernel on CUDA): the numbers the
            # two transforms draw one after the other (under torch.compile they draw one by one, as
            # torch.rand and bernoulli_ calls the compiler keeps in program order)
            drawn[i], drawn[i + 1] = crop.make_params_and_flips(x, ts[i + 1].p)
            start = i + 2
        for k in range(start, end):
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


class _RandomContainer(Transform):
    """A container that picks, per sample, among results of its transforms run on the whole batch
    (RandomApply, RandomChoice, RandomOrder), or with per_sample=False once per call, as
    torchvision does.

    Per sample, every transform runs over the whole batch and each image takes the result its
    draw names (one torch.where per choice: no host synchronisation, no split of the batch), so the
    transforms must keep each image's shape and dtype; targets follow the result their sample took
    (a target of one sample needs the decisions on the host: one synchronisation per call with
    targets). The parameters are the draws ("apply", "choice" or "order", (B,) or (B, n) on the
    images' device; one row with per_sample=False) and, under "transforms", those the transforms
    drew, so that return_params / params= replay the call."""

    _TAKES_LIST = True
    _TAKES_CLIPS = True

    def __init__(self, transforms: Sequence[Callable], per_sample: bool, generator, name: str):
        super().__init__(generator)
        if not isinstance(transforms, Sequence) or isinstance(transforms, str) or not all(callable(t) for t in transforms):
            raise TypeError(f"torchaug.transforms.{name}: transforms must be a sequence of callables, got {transforms!r:.80}")
        self.transforms = list(transforms)
        self._modules_list = nn.ModuleList([t for t in self.transforms if isinstance(t, nn.Module)])
        self.per_sample = bool(per_sample)

    def forward(self, images, *targets, params: Optional[Dict[str, Any]] = None, return_params: bool = False):
        images = as_input(self, images)
        if params is None:
            params = self.make_params(images)
        else:
            params = dict(params)
        out, targets = self._run(images, targets, params)
        result = (out,) + tuple(targets) if targets else out
        return (result, params) if return_params else result

    def transform(self, images, params: Dict[str, Any]):
        return self._run(images, (), dict(params))[0]

    def _apply(self, t, images, targets, params: Dict[str, Any], key):
        """t(images, *targets) with its parameters params["transforms"][key] when replaying; the ones
        it drew are stored there."""
        drawn = params.setdefault("transforms", {})
        if not isinstance(t, Transform):
            return t(images), targets
        out, p = t(images, *targets, params=drawn.get(key), return_params=True)
        drawn[key] = p
        return (out[0], tuple(out[1:])) if targets else (out, targets)

    def _script_form(self, kind: int, p: float = 1.0, edges: Sequence[float] = ()):
        for t in self.transforms:
            if not isinstance(t, nn.Module):
                raise RuntimeError(f"torchaug.transforms.{type(self).__name__}: {t!r} is not an nn.Module; a scripted container "
                                   "holds modules only")
        return S.ScriptRandomContainer(kind, list(self.transforms), p, [float(e) for e in edges], self.per_sample, self.generator)

    def _pick(self, take: torch.Tensor, a, a_targets, o, o_targets):
        """Per sample, a (and its targets) where take (B,) is True, else o."""
        name = type(self).__name__
        if isinstance(o, torch.Tensor):
            if not isinstance(a, torch.Tensor) or a.shape != o.shape or a.dtype != o.dtype:
                raise ValueError(
                    f"torchaug.transforms.{name}: a per-sample choice needs transforms that keep each image's shape and "
                    f"dtype, got {tuple(o.shape)} {o.dtype} -> {tuple(a.shape) if isinstance(a, torch.Tensor) else type(a).__name__} "
                    f"{getattr(a, 'dtype', '')}; pass per_sample=False for one decision per call (torchvision's)")
            single = o.dim() == 3
            t = take.to(o.device)
            if o.dim() >= 5:  # clips (..., T, C, H, W): one decision per clip
                mask = t.view(*o.shape[:-4], 1, 1, 1, 1)
            else:
                mask = t.view(-1, 1, 1, 1)[0] if single else t.view(-1, 1, 1, 1)
            out = where_images(mask, a, o)
            batch = 1 if single else o.shape[0]
        else:  # a list of images of different sizes: each keeps its own
            if not isinstance(a, (list, tuple)) or len(a) != len(o) or any(x.shape != y.shape or x.dtype != y.dtype for x, y in zip(a, o)):
                raise ValueError(f"torchaug.transforms.{name}: a per-sample choice needs transforms that keep each image's "
                                 "shape and dtype; pass per_sample=False for one decision per call (torchvision's)")
            t = take.to(o[0].device)
            out = [where_images(t[i], x, y) for i, (x, y) in enumerate(zip(a, o))]
            single, batch = False, len(o)
        if not o_targets:
            return out, o_targets
        return out, _targets.select(take, a_targets, o_targets, batch, single, name)


def _check_transforms_and_p(name: str, transforms, p):
    if p is None:
        return None
    if isinstance(p, (str, bytes)) or not isinstance(p, Sequence) or len(p) != len(transforms) \
            or not all(isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v) and v >= 0 for v in p) \
            or not sum(p) > 0:
        raise ValueError(f"torchaug.transforms.{name}: p must have one non-negative weight per transform ({len(transforms)}) "
                         f"with a positive sum, got {p!r}")
    return [float(v) / sum(p) for v in p]


class RandomApply(_RandomContainer):
    """torchvision.transforms.v2.RandomApply(transforms, p): the transforms, in order, applied to
    each sample with probability p (a decision per sample; per_sample=False: one per call)."""

    def __init__(self, transforms: Sequence[Callable], p: float = 0.5, per_sample: bool = True,
                 generator: Optional[torch.Generator] = None):
        if isinstance(transforms, nn.ModuleList):
            transforms = list(transforms)
        super().__init__(transforms, per_sample, generator, "RandomApply")
        self.p = check_probability(p, "RandomApply")

    def make_params(self, images) -> Dict[str, Any]:
        info = BatchInfo(images)
        return {"apply": self._bernoulli((info.batch if self.per_sample else 1,), self.p, info.device)}

    def _scriptable(self):
        return self._script_form(0, p=self.p)

    def _run(self, images, targets, params):
        apply = params["apply"]
        if not self.per_sample and not bool(apply.reshape(-1)[0]):
            return images, targets
        x, tg = images, targets
        for k, t in enumerate(self.transforms):
            x, tg = self._apply(t, x, tg, params, k)
        return self._pick(apply, x, tg, images, targets) if self.per_sample else (x, tg)


class RandomChoice(_RandomContainer):
    """torchvision.transforms.v2.RandomChoice(transforms, p): one of the transforms, drawn with the
    weights p (uniform by default), for each sample (per_sample=False: one for the call). Per sample,
    every transform runs over the batch and each image takes the result of its own choice."""

    def __init__(self, transforms: Sequence[Callable], p: Optional[List[float]] = None, per_sample: bool = True,
                 generator: Optional[torch.Generator] = None):
        super().__init__(transforms, per_sample, generator, "RandomChoice")
        if not self.transforms:
            raise ValueError("torchaug.transforms.RandomChoice: transforms must not be empty")
        self.p = _check_transforms_and_p("RandomChoice", self.transforms, p) or [1.0 / len(self.transforms)] * len(self.transforms)

    def make_params(self, images) -> Dict[str, Any]:
        info = BatchInfo(images)
        n = info.batch if self.per_sample else 1
        u = self._rand((n, 1), info.device, torch.float64)
        edges = _constant_row(tuple(itertools.accumulate(self.p[:-1])), torch.device(info.device), torch.float64)
        return {"choice": (u >= edges).sum(dim=1)}  # the index of the interval of cumulative weights u falls in

    def _scriptable(self):
        return self._script_form(1, edges=list(itertools.accumulate(self.p[:-1])))

    def _run(self, images, targets, params):
        choice = params["choice"]
        if not self.per_sample:
            k = int(choice.reshape(-1)[0])
            return self._apply(self.transforms[k], images, targets, params, k)
        out, out_targets = None, targets
        for k, t in enumerate(self.transforms):
            y, y_targets = self._apply(t, images, targets, params, k)
            if out is None:
                out, out_targets = y, y_targets
            else:
                out, out_targets = self._pick(choice == k, y, y_targets, out, out_targets)
        return out, out_targets


class RandomOrder(_RandomContainer):
    """torchvision.transforms.v2.RandomOrder(transforms): the transforms applied in a random order,
    a uniformly random order for each sample (per_sample=False: one for the call). Per sample, slot s
    runs every transform over the batch and each image takes the one its order puts at s: n^2
    transform calls for n transforms, each sample applying each transform once."""

    def __init__(self, transforms: Sequence[Callable], per_sample: bool = True, generator: Optional[torch.Generator] = None):
        super().__init__(transforms, per_sample, generator, "RandomOrder")

    def make_params(self, images) -> Dict[str, Any]:
        info = BatchInfo(images)
        n = info.batch if self.per_sample else 1
        return {"order": self._rand((n, len(self.transforms)), info.device).argsort(dim=1)}

    def _scriptable(self):
        return self._script_form(2)

    def _run(self, images, targets, params):
        order = params["order"]
        if not self.per_sample:
            x, tg = images, targets
            for k in order.reshape(-1).tolist():
                x, tg = self._apply(self.transforms[k], x, tg, params, k)
            return x, tg
        x, tg = images, targets
        for s in range(len(self.transforms)):
            out, out_targets = None, tg
            for k, t in enumerate(self.transforms):
                y, y_targets = self._apply(t, x, tg, params, (s, k))
                if out is None:
                    out, out_targets = y, y_targets
                else:
                    out, out_targets = self._pick(order[:, s] == k, y, y_targets, out, out_targets)
            x, tg = out, out_targets
        return x, tg
