"""SanitizeBoundingBoxes and SanitizeKeyPoints: drop the boxes that the geometric transforms left
degenerate (and the labels and masks that go with them) or the keypoints they moved off the
canvas (and their labels), torchvision.transforms.v2's rules, for a whole batch with one host
synchronisation."""
import numbers
from typing import Any, Callable, Dict, List, Union

import torch

from . import _targets as TG
from ._transform import BatchInfo, Transform


def _default_labels(target: Dict[str, Any]):
    """torchvision's heuristic: the key "labels" (any case), else the first key containing "label"."""
    keys = list(target.keys())
    for k in keys:
        if isinstance(k, str) and k.lower() == "labels":
            return target[k]
    for k in keys:
        if isinstance(k, str) and "label" in k.lower():
            return target[k]
    return None


class _Sanitize(Transform):
    """What the Sanitize transforms share: a labels_getter, images passed unchanged, and the
    per-image walk of _sanitize over the targets of kind `kind` (`what` in messages)."""

    _TAKES_LIST = True
    _TAKES_CLIPS = True

    kind, what = "boxes", "bounding-box"

    def __init__(self, labels_getter):
        super().__init__()
        if not (labels_getter is None or labels_getter == "default" or callable(labels_getter)):
            raise ValueError(f"torchaug.transforms.{type(self).__name__}: labels_getter must be 'default', a callable or None, "
                             f"got {labels_getter!r}")
        self.labels_getter = labels_getter

    def transform(self, images, params):
        return images

    def transform_targets(self, images, targets, params):
        return _sanitize(self, images, targets, self.kind, self.what)


class SanitizeBoundingBoxes(_Sanitize):
    """torchvision.transforms.v2.SanitizeBoundingBoxes(min_size, min_area, labels_getter) over a
    batch: called as t(images, targets) with targets one dict per image (or one dict for a single
    image) holding a bounding-box target, it removes the boxes narrower or lower than min_size,
    smaller than min_area, or outside their canvas, and the matching rows of the dict's labels
    (labels_getter: "default" finds the "labels" key, a callable maps the dict to a tensor or a
    tuple of tensors, None keeps labels as they are) and masks. The images pass unchanged."""

    def __init__(self, min_size: float = 1.0, min_area: float = 1.0,
                 labels_getter: Union[Callable[[Any], Any], str, None] = "default"):
        for name, v in (("min_size", min_size), ("min_area", min_area)):
            if not isinstance(v, numbers.Real) or v < 1:
                raise ValueError(f"torchaug.transforms.SanitizeBoundingBoxes: {name} must be >= 1, got {v!r}")
        super().__init__(labels_getter)
        self.min_size, self.min_area = float(min_size), float(min_area)

    def _valid(self, boxes: List[Any], device) -> List[torch.Tensor]:
        """Per image, the int64 indices of the boxes to keep: one pass over all boxes, one host read."""
        counts = [TG._raw(b).shape[0] for b in boxes]
        if sum(counts) == 0:
            return [torch.zeros(0, dtype=torch.int64) for _ in boxes]
        raw = [TG._raw(b).reshape(-1, 4) for b in boxes]
        fmts = [TG._box_format(b.format, "SanitizeBoundingBoxes") for b in boxes]
        if len(set(fmts)) == 1 and len({(r.dtype, r.device) for r in raw}) == 1:  # a detection batch: one conversion
            xyxy = TG._to_xyxy(torch.cat(raw).to(device, torch.float64), fmts[0])
        else:
            xyxy = torch.cat([TG._to_xyxy(r.to(device, torch.float64), f) for r, f in zip(raw, fmts)])
        canvas = torch.tensor([[float(b.canvas_size[1]), float(b.canvas_size[0])] for b in boxes for _ in range(TG._raw(b).shape[0])],
                              dtype=torch.float64).to(device, non_blocking=True)
        ws, hs = xyxy[:, 2] - xyxy[:, 0], xyxy[:, 3] - xyxy[:, 1]
        ok = (ws >= self.min_size) & (hs >= self.min_size) & (xyxy >= 0).all(1) & (ws * hs >= self.min_area)
        ok &= (xyxy[:, 0] <= canvas[:, 0]) & (xyxy[:, 2] <= canvas[:, 0]) & (xyxy[:, 1] <= canvas[:, 1]) & (xyxy[:, 3] <= canvas[:, 1])
        ok = ok.cpu()  # the one synchronisation: how many boxes each image keeps
        return [part.nonzero()[:, 0] for part in torch.split(ok, counts)]


def _labels(transform, target: Dict[str, Any]) -> List[torch.Tensor]:
    """The tensors of a target dict that its labels_getter names (filtered with the rows)."""
    getter = transform.labels_getter
    if getter is None:
        return []
    got = _default_labels(target) if getter == "default" else getter(target)
    if got is None:
        return []
    got = [got] if isinstance(got, torch.Tensor) else list(got)
    if not all(isinstance(t, torch.Tensor) for t in got):
        raise ValueError(f"torchaug.transforms.{type(transform).__name__}: the labels must be a tensor or a tuple of tensors")
    return got


def _sanitize(transform, images, targets, kind: str, what: str):
    """The targets (one dict per image, each with one `kind` target) with the rows transform._valid
    rejects removed, with their labels (and, for boxes, their masks)."""
    name = type(transform).__name__
    info = BatchInfo(images)
    single = isinstance(images, torch.Tensor) and images.dim() == 3
    if len(targets) != 1:
        raise TypeError(f"torchaug.transforms.{name}: takes the images and one targets argument (a dict per image), "
                        f"got {len(targets)} targets arguments")
    per_image = [targets[0]] if single else targets[0]
    if not isinstance(per_image, (list, tuple)) or len(per_image) != info.batch or not all(isinstance(d, dict) for d in per_image):
        raise TypeError(f"torchaug.transforms.{name}: targets must be a list of {info.batch} dicts (one per image)")
    found = []
    for i, d in enumerate(per_image):
        keys = [k for k, v in d.items() if TG._kind(v) == kind]
        if len(keys) != 1:
            raise ValueError(f"torchaug.transforms.{name}: the targets of image {i} must hold exactly one {what} "
                             f"target, found {len(keys)}")
        found.append(d[keys[0]])
    valid = transform._valid(found, info.device)
    out = []
    for i, (d, obj) in enumerate(zip(per_image, found)):
        keep = valid[i]
        n = TG._raw(obj).shape[0]
        labels = _labels(transform, d)
        new = dict(d)
        for k, v in d.items():
            raw = TG._raw(v) if TG._kind(v) in ("boxes", "mask", "keypoints") else v
            is_label = any(v is lab for lab in labels)
            rows_of_kind = kind == "boxes" and TG._kind(v) == "mask" and raw.dim() >= 3 and raw.shape[0] == n
            if TG._kind(v) == kind or is_label or rows_of_kind:
                if is_label and raw.shape[0] != n:
                    raise ValueError(f"torchaug.transforms.{name}: image {i} has {n} {what} rows but labels {k!r} of shape "
                                     f"{tuple(raw.shape)}")
                new[k] = _take(v, keep.to(raw.device, non_blocking=True))
        out.append(type(d)(new))
    return (out[0] if single else out,)


class SanitizeKeyPoints(_Sanitize):
    """torchvision.transforms.v2.SanitizeKeyPoints(labels_getter) over a batch: called as t(images,
    targets) with one dict per image holding a keypoints target (N, 2) or groups (N, K, 2), it
    removes the points (whole groups) with a coordinate outside the canvas ([0, W) x [0, H)), and
    the matching rows of the labels labels_getter names (None, the default: none; "default": the
    "labels" key; or a callable). The images pass unchanged; one host synchronisation a batch."""

    kind, what = "keypoints", "keypoints"

    def __init__(self, labels_getter: Union[Callable[[Any], Any], str, None] = None):
        super().__init__(labels_getter)

    def _valid(self, points: List[Any], device) -> List[torch.Tensor]:
        counts = [TG._raw(p).shape[0] for p in points]
        oks = []
        for p in points:
            xy = TG._raw(p).to(device)
            h, w = (float(v) for v in p.canvas_size)
            ok = (xy[..., 0] >= 0) & (xy[..., 0] < w) & (xy[..., 1] >= 0) & (xy[..., 1] < h)
            oks.append(ok.flatten(1).all(1) if ok.dim() > 1 else ok)
        ok = torch.cat(oks).cpu() if oks else torch.zeros(0, dtype=torch.bool)  # the one synchronisation
        return [part.nonzero()[:, 0] for part in torch.split(ok, counts)]


def _take(obj, keep: torch.Tensor):
    """Rows `keep` of a target (tv_tensor, torchaug wrapper or plain tensor), of the same type."""
    if isinstance(obj, TG.BoundingBoxes):
        return TG.BoundingBoxes(obj.data[keep], obj.format, obj.canvas_size, obj.clamping_mode)
    if isinstance(obj, TG.Mask):
        return TG.Mask(obj.data[keep])
    if isinstance(obj, TG.KeyPoints):
        return TG.KeyPoints(obj.data[keep], obj.canvas_size)
    tv = TG._tv()
    if tv is not None and isinstance(obj, tv.TVTensor):
        return tv.wrap(obj.as_subclass(torch.Tensor)[keep], like=obj)
    return obj[keep]


