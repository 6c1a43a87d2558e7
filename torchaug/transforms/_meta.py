"""Transforms of the targets' representation, torchvision.transforms.v2's _meta: ConvertBoundingBoxFormat,
ClampBoundingBoxes and ClampKeyPoints. The images pass unchanged; every box (keypoint) target of
the call, torchvision's tv_tensors or torchaug's wrappers, alone or in lists and dicts per sample,
is rewritten with torchvision's arithmetic (integer boxes included)."""
from typing import Optional

import torch
from torch.utils._pytree import tree_map

from . import _targets as TG
from ._transform import Transform

_FORMATS = ("XYXY", "XYWH", "CXCYWH")


def _half(t: torch.Tensor) -> torch.Tensor:
    return t / 2 if t.is_floating_point() else t.div(2, rounding_mode="floor")


def _cxcywh_to_xyxy(b: torch.Tensor) -> torch.Tensor:
    f = b.float() if not b.is_floating_point() else b.clone()  # integer boxes in float, truncated back
    f[..., :2].sub_(f[..., 2:] / 2)
    f[..., 2:].add_(f[..., :2])
    return f.to(b.dtype)


def convert_box_format(boxes: torch.Tensor, old: str, new: str) -> torch.Tensor:
    """Boxes (..., 4) from format old to new (XYXY, XYWH, CXCYWH), with the arithmetic of
    torchvision's convert_bounding_box_format, integer boxes included."""
    if old == new:
        return boxes.clone()
    if old == "XYWH" and new == "CXCYWH":
        b = boxes.clone()
        b[..., :2].add_(_half(b[..., 2:]))
        return b
    if old == "CXCYWH" and new == "XYWH":
        f = boxes.float() if not boxes.is_floating_point() else boxes.clone()
        f[..., :2].sub_(f[..., 2:] / 2)
        if boxes.is_floating_point():
            return f
        x2y2 = (f[..., :2] + f[..., 2:]).to(boxes.dtype)  # torchvision's: w, h from the truncated corners
        out = f.to(boxes.dtype)
        out[..., 2:] = x2y2 - out[..., :2]
        return out
    if old == "XYWH":  # to XYXY
        b = boxes.clone()
        b[..., 2:] += b[..., :2]
    elif old == "CXCYWH":
        b = _cxcywh_to_xyxy(boxes)
    else:
        b = boxes.clone()
    if new == "XYWH":
        b[..., 2:] -= b[..., :2]
    elif new == "CXCYWH":
        b[..., 2:].sub_(b[..., :2])
        b[..., :2] = _half(b[..., :2] * 2 + b[..., 2:])
    return b


def _format(fmt, where: str) -> str:
    name = getattr(fmt, "name", fmt)
    if not isinstance(name, str) or name.upper() not in _FORMATS:
        raise ValueError(f"torchaug.transforms.{where}: format must be one of {', '.join(_FORMATS)}, got {fmt!r}")
    return name.upper()


def _rewrap(obj, data: torch.Tensor, fmt: Optional[str] = None):
    """A box / keypoint target of obj's type with new data (and format)."""
    if isinstance(obj, TG.BoundingBoxes):
        return TG.BoundingBoxes(data, fmt or obj.format, obj.canvas_size, obj.clamping_mode)
    if isinstance(obj, TG.KeyPoints):
        return TG.KeyPoints(data, obj.canvas_size)
    tv = TG._tv()
    if fmt is not None:
        return tv.wrap(data, like=obj, format=getattr(tv.BoundingBoxFormat, fmt))
    return tv.wrap(data, like=obj)


class _TargetMap(Transform):
    """Images unchanged; each target of kind `kind` rewritten by _map(obj, data)."""

    _TAKES_LIST = True
    _TAKES_CLIPS = True

    kind = "boxes"

    def transform(self, images, params):
        return images

    def transform_targets(self, images, targets, params):
        return tuple(self._walk(t) for t in targets)

    def _walk(self, obj):
        def leaf(v):
            return self._map(v, TG._raw(v)) if TG._kind(v) == self.kind else v

        return tree_map(leaf, obj)

    def _map(self, obj, data: torch.Tensor):
        raise NotImplementedError

    def _scriptable(self):
        from . import _script as S
        return S.ScriptTransform()  # a scripted transform takes images only: they pass unchanged


class ConvertBoundingBoxFormat(_TargetMap):
    """torchvision.transforms.v2.ConvertBoundingBoxFormat(format): every box target in `format`."""

    def __init__(self, format):
        super().__init__()
        self.format = _format(format, "ConvertBoundingBoxFormat")

    def _map(self, obj, data):
        old = _format(obj.format, "ConvertBoundingBoxFormat")
        return _rewrap(obj, convert_box_format(data, old, self.format), self.format)


class ClampBoundingBoxes(_TargetMap):
    """torchvision.transforms.v2.ClampBoundingBoxes(clamping_mode): boxes clamped to their canvas
    (x in [0, W], y in [0, H]); "auto" takes each target's own clamping_mode, None leaves it."""

    def __init__(self, clamping_mode: Optional[str] = "auto"):
        super().__init__()
        if clamping_mode not in ("auto", "soft", "hard", None):
            raise ValueError(f"torchaug.transforms.ClampBoundingBoxes: clamping_mode must be 'auto', 'soft', 'hard' or None, "
                             f"got {clamping_mode!r}")
        self.clamping_mode = clamping_mode

    def _map(self, obj, data):
        mode = getattr(obj, "clamping_mode", "soft") if self.clamping_mode == "auto" else self.clamping_mode
        if mode is None:
            return _rewrap(obj, data.clone())
        fmt = _format(obj.format, "ClampBoundingBoxes")
        h, w = (int(v) for v in obj.canvas_size)
        xyxy = convert_box_format(data if data.is_floating_point() else data.float(), fmt, "XYXY")
        xyxy[..., 0::2].clamp_(min=0, max=w)  # soft and hard agree for axis-aligned boxes
        xyxy[..., 1::2].clamp_(min=0, max=h)
        return _rewrap(obj, convert_box_format(xyxy, "XYXY", fmt).to(data.dtype))


class ClampKeyPoints(_TargetMap):
    """torchvision.transforms.v2.ClampKeyPoints: keypoints clamped to their canvas (x in [0, W - 1],
    y in [0, H - 1])."""

    kind = "keypoints"

    def _map(self, obj, data):
        h, w = (int(v) for v in obj.canvas_size)
        out = data.clone() if data.is_floating_point() else data.float()
        out[..., 0].clamp_(min=0, max=w - 1)
        out[..., 1].clamp_(min=0, max=h - 1)
        return _rewrap(obj, out.to(data.dtype))


class SetClampingMode(_TargetMap):
    """torchvision.transforms.v2.SetClampingMode(clamping_mode): the box targets' clamping_mode
    ("soft", "hard" or None) for the transforms after it."""

    def __init__(self, clamping_mode: Optional[str]):
        super().__init__()
        if clamping_mode not in ("soft", "hard", None):
            raise ValueError(f"torchaug.transforms.SetClampingMode: clamping_mode must be 'soft', 'hard' or None, got {clamping_mode!r}")
        self.clamping_mode = clamping_mode

    def _map(self, obj, data):
        if isinstance(obj, TG.BoundingBoxes):
            return TG.BoundingBoxes(data.clone(), obj.format, obj.canvas_size, self.clamping_mode)
        out = obj.clone()
        out.clamping_mode = self.clamping_mode
        return out
