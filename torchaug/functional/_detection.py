"""Detection ops with torchvision.ops names and signatures: nms, batched_nms, roi_align."""
import numbers
from typing import List, Sequence, Union

import torch

from .. import _ops  # noqa: F401  (registers torch.ops.torchaug)
from ._utils import check_tensor

_ops_ns = torch.ops.torchaug


def _check_boxes(boxes, op: str, name: str = "boxes") -> torch.Tensor:
    """A real tensor with values (NaN and inf are values here: torchvision's semantics apply)."""
    return check_tensor(boxes, name, op)


def _check_box_rows(boxes, op: str, name: str) -> None:
    _check_boxes(boxes, op, name)
    if boxes.dim() != 2 or boxes.shape[1] != 4:
        raise ValueError(f"torchaug.{op}: {name} must have shape (N, 4) [x1, y1, x2, y2], got {tuple(boxes.shape)}")


def _threshold(value, op: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"torchaug.{op}: iou_threshold must be a number, got {type(value).__name__}")
    return float(value)


def nms(boxes: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """torchvision.ops.nms: the indices (int64) of the boxes (N, 4) [x1, y1, x2, y2] kept by greedy
    non-maximum suppression, in decreasing score order; a box is dropped when its IoU with a kept
    box of higher score is > iou_threshold."""
    _check_boxes(boxes, "nms")
    _check_boxes(scores, "nms", "scores")
    return _ops_ns.nms(boxes, scores, _threshold(iou_threshold, "nms"))


def batched_nms(boxes: torch.Tensor, scores: torch.Tensor, idxs: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """torchvision.ops.batched_nms: NMS within each category idxs (N,), in one pass (boxes of
    different categories never suppress each other); indices in decreasing score order."""
    _check_boxes(boxes, "batched_nms")
    _check_boxes(scores, "batched_nms", "scores")
    _check_boxes(idxs, "batched_nms", "idxs")
    return _ops_ns.batched_nms(boxes, scores, idxs, _threshold(iou_threshold, "batched_nms"))


def _roi_format(boxes: Union[torch.Tensor, Sequence[torch.Tensor]], dtype, device) -> torch.Tensor:
    """torchvision's rois: a (K, 5) tensor as is, or a list of (K_i, 4) boxes per image, prefixed
    with their image index."""
    op = "roi_align"
    if isinstance(boxes, torch.Tensor):
        _check_boxes(boxes, op)
        if boxes.dim() != 2 or boxes.shape[1] != 5:
            raise ValueError(f"torchaug.{op}: boxes must be a (K, 5) tensor [batch_index, x1, y1, x2, y2] or a list of "
                             f"(K_i, 4) tensors, got shape {tuple(boxes.shape)}")
        return boxes.to(device=device, dtype=dtype)
    if not isinstance(boxes, (list, tuple)) or not all(isinstance(b, torch.Tensor) for b in boxes):
        raise TypeError(f"torchaug.{op}: boxes must be a (K, 5) tensor or a list of (K_i, 4) tensors, got {type(boxes).__name__}")
    for i, b in enumerate(boxes):
        _check_boxes(b, op, f"boxes[{i}]")
        if b.dim() != 2 or b.shape[1] != 4:
            raise ValueError(f"torchaug.{op}: boxes[{i}] must have shape (K_i, 4), got {tuple(b.shape)}")
    if len(boxes) == 0:
        return torch.zeros(0, 5, dtype=dtype, device=device)
    cat = torch.cat([b.to(device=device, dtype=dtype) for b in boxes])
    counts = torch.tensor([b.shape[0] for b in boxes], device=device)
    index = torch.repeat_interleave(torch.arange(len(boxes), device=device, dtype=dtype), counts, output_size=cat.shape[0])
    return torch.cat([index[:, None], cat], 1)


def roi_align(input: torch.Tensor, boxes: Union[torch.Tensor, List[torch.Tensor]], output_size,
              spatial_scale: float = 1.0, sampling_ratio: int = -1, aligned: bool = False,
              validate: bool = True) -> torch.Tensor:
    """torchvision.ops.roi_align: (K, C, output_size) features of input (B, C, H, W) pooled over
    the boxes, a (K, 5) tensor [batch_index, x1, y1, x2, y2] or a list of (K_i, 4) boxes per image,
    in input coordinates times spatial_scale. validate=True checks on the host that every batch
    index is in [0, B) (one synchronisation on a GPU); unchecked, such RoIs give zeros."""
    op = "roi_align"
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"torchaug.{op}: input must be a tensor, got {type(input).__name__}")
    if not input.dtype.is_floating_point:
        raise TypeError(f"torchaug.{op}: input must be floating, got {input.dtype}")
    if input.device.type == "meta":
        raise ValueError(f"torchaug.{op}: input must hold values, got a tensor on the meta device")
    if isinstance(output_size, numbers.Integral):
        output_size = (int(output_size), int(output_size))
    if not (isinstance(output_size, Sequence) and len(output_size) == 2 and all(isinstance(s, numbers.Integral) for s in output_size)):
        raise ValueError(f"torchaug.{op}: output_size must be an int or a pair of ints, got {output_size!r}")
    rois = _roi_format(boxes, input.dtype, input.device)
    if validate and rois.shape[0] and input.dim() == 4:
        idx = rois[:, 0]
        bad = (idx < 0) | (idx >= input.shape[0]) | (idx != idx.trunc())
        if bool(bad.any()):
            first = int(bad.nonzero()[0, 0])
            raise ValueError(f"torchaug.{op}: boxes: RoI {first} has batch index {float(idx[first])}, expected an integer in "
                             f"[0, {input.shape[0]})")
    return _ops_ns.roi_align(input, rois, float(spatial_scale), int(output_size[0]), int(output_size[1]),
                             int(sampling_ratio), bool(aligned))


_BOX_FORMATS = ("xyxy", "xywh", "cxcywh")


def _box_format(fmt, op: str) -> str:
    if fmt not in _BOX_FORMATS:
        raise ValueError(f"torchaug.{op}: fmt must be one of {', '.join(_BOX_FORMATS)} (axis-aligned boxes), got {fmt!r}")
    return fmt


def _corners(boxes: torch.Tensor, fmt: str):
    """(top-left, bottom-right) (N, 1, 2) of boxes in fmt, as torchvision's _box_inter_union forms them."""
    if fmt == "xyxy":
        return boxes[:, None, :2], boxes[:, None, 2:]
    if fmt == "xywh":
        return boxes[:, None, :2], boxes[:, None, :2] + boxes[:, None, 2:]
    return boxes[:, None, :2] - boxes[:, None, 2:] / 2, boxes[:, None, :2] + boxes[:, None, 2:] / 2


def box_area(boxes: torch.Tensor, fmt: str = "xyxy") -> torch.Tensor:
    """torchvision.ops.box_area of (N, 4) boxes in fmt "xyxy" (default), "xywh" or "cxcywh"."""
    _box_format(fmt, "box_area")
    _check_box_rows(boxes, "box_area", "boxes")
    if fmt == "xyxy":
        return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    return boxes[:, 2] * boxes[:, 3]


def box_iou(boxes1: torch.Tensor, boxes2: torch.Tensor, fmt: str = "xyxy") -> torch.Tensor:
    """torchvision.ops.box_iou: the (N, M) IoU matrix of two sets of boxes in fmt "xyxy" (default),
    "xywh" or "cxcywh" (torchvision's rotated formats are not taken)."""
    _box_format(fmt, "box_iou")
    _check_box_rows(boxes1, "box_iou", "boxes1")
    _check_box_rows(boxes2, "box_iou", "boxes2")
    if boxes1.device != boxes2.device:
        raise ValueError(f"torchaug.box_iou: boxes1 and boxes2 must be on one device, got {boxes1.device} and {boxes2.device}")
    area1, area2 = box_area(boxes1, fmt), box_area(boxes2, fmt)
    lt1, rb1 = _corners(boxes1, fmt)
    lt2, rb2 = _corners(boxes2, fmt)
    lt = torch.max(lt1, lt2.transpose(0, 1))
    rb = torch.min(rb1, rb2.transpose(0, 1))
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter / (area1[:, None] + area2 - inter)
