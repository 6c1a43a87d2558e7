"""Functional auto-augmentation: torchaug.augment runs a per-sample program of the auto-augment ops
(op ids and magnitudes as (B, n) tensors) with one switch pass per slot; mixup / cutmix mix each
sample with its neighbour in the batch."""
import math
import numbers
from typing import Optional, Sequence, Union

import torch

from .. import _ops  # noqa: F401  (registers torch.ops.torchaug)
from ._color import COLOR_OPS
from ._utils import _as, as_batch, check_tensor, fill_tensor, interpolation_code, per_sample_rows, unbatch

_ops_ns = torch.ops.torchaug

# op ids of torchaug::augment (csrc/kernels/augment.h): the color ops keep their color_program ids
AUGMENT_OPS = {
    **COLOR_OPS,
    "sharpness": 13,
    "shear_x": 14,
    "shear_y": 15,
    "translate_x": 16,
    "translate_y": 17,
    "rotate": 18,
}

# torchvision's auto-augment op names -> torchaug's
TORCHVISION_OPS = {
    "Identity": "identity",
    "ShearX": "shear_x",
    "ShearY": "shear_y",
    "TranslateX": "translate_x",
    "TranslateY": "translate_y",
    "Rotate": "rotate",
    "Brightness": "brightness",
    "Color": "saturation",
    "Contrast": "contrast",
    "Sharpness": "sharpness",
    "Posterize": "posterize",
    "Solarize": "solarize",
    "AutoContrast": "autocontrast",
    "Equalize": "equalize",
    "Invert": "invert",
}


def augment_op_id(name: str) -> int:
    """The op id of a torchaug op name ("shear_x") or a torchvision one ("ShearX")."""
    key = TORCHVISION_OPS.get(name, name)
    if key not in AUGMENT_OPS:
        raise ValueError(f"torchaug.augment: unknown op {name!r}; known: {', '.join(AUGMENT_OPS)} "
                         f"and torchvision's {', '.join(TORCHVISION_OPS)}")
    return AUGMENT_OPS[key]


def augment(
    images,
    ops: Union[torch.Tensor, Sequence[str]],
    magnitudes,
    interpolation="nearest",
    fill=None,
    validate: bool = True,
    *,
    mean=None,
    std=None,
    out_dtype: Optional[torch.dtype] = None,
    memory_format: Optional[torch.memory_format] = None,
) -> torch.Tensor:
    """Applies to each sample its own sequence of auto-augment ops: ops (B, n) int64 op ids
    (AUGMENT_OPS) or a list of n names for every sample; magnitudes (B, n) (or a number / (n,)
    sequence for every sample) with the meaning torchvision's auto-augment policies give them
    (csrc/kernels/augment.h): factor 1 + m for brightness / contrast / saturation ("Color") /
    sharpness, int(m) bits for posterize, threshold m * max for solarize, shear m (tangent) about
    the top-left corner, int(m) pixels for translations, m degrees for rotate. Geometric ops use
    `interpolation` (nearest or bilinear) and `fill` (None: zeros; a number, per-channel sequence
    or (B, C) tensor: torchvision's fill blending). validate=False skips the host synchronisation
    that checks op ids on a GPU (ids outside the table are then the identity).
    mean and std (numbers, per-channel sequences or (B, C) tensors): the result normalized as
    torchaug.functional.normalize(result, mean, std, out_dtype=out_dtype,
    memory_format=memory_format) would return it, in the program's own pass where it runs in one
    (uint8 images on CUDA that fit in shared memory)."""
    op = "augment"
    x, single = as_batch(images, op)
    b, c = x.shape[0], x.shape[1]
    code = interpolation_code(interpolation, op, ("nearest", "bilinear"))
    if isinstance(ops, torch.Tensor):
        if ops.dim() == 1:
            ops = ops.unsqueeze(0)
        if ops.dim() != 2 or ops.shape[0] not in (1, b):
            raise ValueError(f"torchaug.{op}: ops must have shape (B, n) with B={b}, got {tuple(ops.shape)}")
        if ops.dtype.is_floating_point or ops.dtype == torch.bool:
            raise TypeError(f"torchaug.{op}: ops must be an integer tensor of op ids, got {ops.dtype}")
        ops = _as(ops, (b, ops.shape[1]), x.device, torch.int64)
    elif isinstance(ops, Sequence) and not isinstance(ops, str):
        if not all(isinstance(o, str) or (isinstance(o, numbers.Integral) and not isinstance(o, bool)) for o in ops):
            raise TypeError(f"torchaug.{op}: ops must be op names or integer op ids, got {list(ops)!r:.120}")
        ids = [augment_op_id(o) if isinstance(o, str) else int(o) for o in ops]
        ops = torch.tensor(ids, dtype=torch.int64).to(x.device, non_blocking=True).expand(b, len(ids))
    else:
        raise TypeError(f"torchaug.{op}: ops must be a (B, n) tensor of op ids or a list of op names, got {type(ops).__name__}")
    n = ops.shape[1]
    if isinstance(magnitudes, numbers.Real) and not isinstance(magnitudes, bool):
        if not math.isfinite(magnitudes):
            raise ValueError(f"torchaug.{op}: magnitudes must be finite, got {magnitudes}")
        magnitudes = torch.full((b, n), float(magnitudes), dtype=torch.float32, device=x.device)
    elif isinstance(magnitudes, Sequence) and not isinstance(magnitudes, str):
        if not all(isinstance(m, numbers.Real) and not isinstance(m, bool) and math.isfinite(m) for m in magnitudes):
            raise ValueError(f"torchaug.{op}: magnitudes must be finite numbers, got {list(magnitudes)!r:.120}")
        magnitudes = torch.tensor([float(m) for m in magnitudes], dtype=torch.float32).to(x.device).expand(b, -1)
    if not isinstance(magnitudes, torch.Tensor):
        raise TypeError(f"torchaug.{op}: magnitudes must be a number, a sequence or a (B, n) tensor, got {type(magnitudes).__name__}")
    if magnitudes.dim() == 1:
        magnitudes = magnitudes.unsqueeze(0)
    if magnitudes.dim() != 2 or magnitudes.shape[0] not in (1, b) or magnitudes.shape[1] != n:
        raise ValueError(f"torchaug.{op}: magnitudes must have shape (B, n) = ({b}, {n}) like ops, got {tuple(magnitudes.shape)}")
    magnitudes = _as(magnitudes, (b, n), x.device, torch.float32)
    if validate and ops.numel():
        bad = (ops < 0) | (ops >= len(AUGMENT_OPS))
        if bool(bad.any()):
            raise ValueError(f"torchaug.{op}: ops must hold op ids in [0, {len(AUGMENT_OPS)}), got {int(ops.min())}..{int(ops.max())}")
        if not bool(torch.isfinite(magnitudes).all()):
            raise ValueError(f"torchaug.{op}: magnitudes must be finite")
    if (mean is None) != (std is None):
        raise ValueError(f"torchaug.{op}: mean and std come together (the fused normalize)")
    if mean is None:
        if out_dtype is not None or memory_format is not None:
            raise ValueError(f"torchaug.{op}: out_dtype and memory_format belong to the fused normalize; pass mean and std")
        out = _ops_ns.augment(x, ops, magnitudes, code, fill_tensor(fill, b, c, x.device, op))
        return unbatch(out, single)
    mean = per_sample_rows(mean, b, c, x.device, torch.float32, "mean", op)
    std = per_sample_rows(std, b, c, x.device, torch.float32, "std", op)
    if out_dtype is None:
        out_dtype = x.dtype if x.dtype.is_floating_point else torch.float32
    out = _ops_ns.augment(x, ops, magnitudes, code, fill_tensor(fill, b, c, x.device, op), mean, std, out_dtype, memory_format)
    return unbatch(out, single)


# ---- batch mixing ---------------------------------------------------------------------------------

def _soft_labels(labels: torch.Tensor, num_classes: Optional[int], op: str) -> torch.Tensor:
    """(B, num_classes) floating labels from class indices (one-hot, float32) or soft labels.
    TorchScript-compatible (the scripted MixUp and CutMix call it)."""
    if labels.dim() == 1:
        if labels.is_floating_point():
            raise TypeError("torchaug." + op + ": labels must be class indices (int64) or (B, num_classes) soft labels, got "
                            + str(labels.dtype) + " of shape " + str(labels.shape))
        if num_classes is None:
            raise ValueError("torchaug." + op + ": num_classes is needed to one-hot encode class indices")
        return torch.nn.functional.one_hot(labels, num_classes).to(torch.float32)
    if labels.dim() != 2:
        raise ValueError("torchaug." + op + ": labels must be (B,) class indices or (B, num_classes), got shape " + str(labels.shape))
    return labels if labels.is_floating_point() else labels.to(torch.float32)


def _lam_column(lam, b: int, device, op: str) -> torch.Tensor:
    """(B,) float64 lambda in [0, 1] from a number or a (B,)/(1,) tensor (values read where they
    live on the CPU)."""
    if isinstance(lam, torch.Tensor):
        lam = check_tensor(lam, "lam", op).reshape(-1)
        if lam.shape[0] not in (1, b):
            raise ValueError(f"torchaug.{op}: lam must be a number or have shape (B,) with B={b}, got {tuple(lam.shape)}")
        _check_lam(lam, op)
        return lam.to(device=device, dtype=torch.float64).expand(b)
    if isinstance(lam, bool) or not isinstance(lam, numbers.Real):
        raise TypeError(f"torchaug.{op}: lam must be a number or a tensor, got {type(lam).__name__}")
    if not 0.0 <= float(lam) <= 1.0:
        raise ValueError(f"torchaug.{op}: lam must be in [0, 1], got {lam}")
    return torch.full((b,), float(lam), dtype=torch.float64, device=device)


def _check_lam(lam: torch.Tensor, op: str) -> None:
    if lam.device.type == "cpu" and lam.numel() and not torch.compiler.is_compiling():
        bad = ~((lam >= 0) & (lam <= 1))
        if bool(bad.any()):
            i = int(bad.nonzero()[0, 0])
            raise ValueError(f"torchaug.{op}: lam must be in [0, 1], got {lam[i].item():g} for sample {i}")


def _mix_with_previous(t: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
    """lam_i * t_i + (1 - lam_i) * t_{i-1} per row i, as torchvision computes it with lam a Python
    float: t.roll(1, 0).mul_(1.0 - lam).add_(t.mul(lam)) (lam (B,) float64; 1 - lam in double,
    then rounded to t's dtype). TorchScript-compatible."""
    view = [t.shape[0]] + [1] * (t.dim() - 1)
    return t.roll(1, 0).mul_((1.0 - lam).to(t.dtype).view(view)).add_(t.mul(lam.to(t.dtype).view(view)))


def mixup(images: torch.Tensor, labels: torch.Tensor, lam, num_classes: Optional[int] = None):
    """torchvision.transforms.v2.MixUp's mixing with lam per sample: sample i becomes
    lam_i * x_i + (1 - lam_i) * x_{i-1} (the batch rolled by one), labels likewise (one-hot
    encoded from class indices with num_classes). Floating images, as torchvision's."""
    op = "mixup"
    x, _ = as_batch(images, op)
    if not x.dtype.is_floating_point:
        raise TypeError(f"torchaug.{op}: images must be floating point (mixing uint8 would truncate), got {x.dtype}")
    _check_labels(labels, x.shape[0], num_classes, op)
    lam = _lam_column(lam, x.shape[0], x.device, op)
    return _mix_with_previous(x, lam), _mix_with_previous(_soft_labels(labels.to(x.device), num_classes, op), lam)


def _check_labels(labels, b: int, num_classes, op: str) -> None:
    """labels: (B,) integer class indices in [0, num_classes) or (B, K) soft labels."""
    check_tensor(labels, "labels", op)
    if labels.dim() not in (1, 2) or labels.shape[0] != b:
        raise ValueError(f"torchaug.{op}: labels must have shape (B,) or (B, num_classes) with B={b}, got {tuple(labels.shape)}")
    if num_classes is not None and (isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral)
                                    or not 0 < num_classes <= 2 ** 31):
        raise ValueError(f"torchaug.{op}: num_classes must be a positive integer, got {num_classes!r}")
    if labels.dim() == 1 and not labels.is_floating_point() and labels.device.type == "cpu" and labels.numel() \
            and num_classes is not None and not bool(((labels >= 0) & (labels < num_classes)).all()):
        raise ValueError(f"torchaug.{op}: labels must be class indices in [0, {num_classes}), got {labels.tolist()!r:.120}")


def cutmix_boxes(lam: torch.Tensor, centers: torch.Tensor, height: int, width: int):
    """torchvision's CutMix box per sample: lam (B,) float64 in [0, 1], centers (B, 2) int64
    [r_x, r_y]. Returns boxes (B, 4) int64 [x1, y1, x2, y2] (cutmix derives the labels' lam from
    them)."""
    if not isinstance(lam, torch.Tensor) or lam.dim() != 1:
        raise ValueError(f"torchaug.cutmix_boxes: lam must be a (B,) tensor, got {getattr(lam, 'shape', lam)!r}")
    if not isinstance(centers, torch.Tensor) or tuple(centers.shape) != (lam.shape[0], 2):
        raise ValueError(f"torchaug.cutmix_boxes: centers must be a (B, 2) tensor with B={lam.shape[0]}, got {getattr(centers, 'shape', centers)!r}")
    _check_lam(lam, "cutmix_boxes")
    return _cutmix_boxes(lam, centers, height, width)


def _cutmix_boxes(lam: torch.Tensor, centers: torch.Tensor, height: int, width: int):
    """cutmix_boxes' arithmetic on checked operands. TorchScript-compatible."""
    r = 0.5 * torch.sqrt(1.0 - lam)
    rw = (r * width).trunc().to(torch.int64)
    rh = (r * height).trunc().to(torch.int64)
    rx, ry = centers[:, 0], centers[:, 1]
    x1 = (rx - rw).clamp(min=0)
    y1 = (ry - rh).clamp(min=0)
    x2 = (rx + rw).clamp(max=width)
    y2 = (ry + rh).clamp(max=height)
    return torch.stack([x1, y1, x2, y2], 1)


def cutmix(images: torch.Tensor, labels: torch.Tensor, boxes: torch.Tensor, num_classes: Optional[int] = None):
    """torchvision.transforms.v2.CutMix's pasting with a box per sample: boxes (B, 4) int64
    [x1, y1, x2, y2]; sample i gets x_{i-1}'s pixels inside its box, and labels
    lam_i * y_i + (1 - lam_i) * y_{i-1} with lam_i = 1 - box area / image area."""
    op = "cutmix"
    x, _ = as_batch(images, op)
    b = x.shape[0]
    if not isinstance(boxes, torch.Tensor) or boxes.shape != (b, 4):
        raise ValueError(f"torchaug.{op}: boxes must be a (B, 4) tensor with B={b}, got {getattr(boxes, 'shape', boxes)!r}")
    check_tensor(boxes, "boxes", op, integer=True)
    _check_labels(labels, b, num_classes, op)
    return _paste_previous(x, boxes.to(device=x.device, dtype=torch.int64), labels, num_classes)


def _paste_previous(x: torch.Tensor, boxes: torch.Tensor, labels: torch.Tensor, num_classes: Optional[int]):
    """cutmix's arithmetic (x (B, C, H, W), boxes (B, 4) int64 on its device). TorchScript-compatible."""
    b, h, w = x.shape[0], x.shape[-2], x.shape[-1]
    ys = torch.arange(h, device=x.device).view(1, h, 1)
    xs = torch.arange(w, device=x.device).view(1, 1, w)
    bx = boxes.view(b, 4, 1, 1)
    inside = (xs >= bx[:, 0]) & (xs < bx[:, 2]) & (ys >= bx[:, 1]) & (ys < bx[:, 3])  # (B, H, W)
    out = torch.where(inside.unsqueeze(1), x.roll(1, 0), x)
    area = ((boxes[:, 2] - boxes[:, 0]).clamp(min=0) * (boxes[:, 3] - boxes[:, 1]).clamp(min=0)).to(torch.float64)
    lam = 1.0 - area / (w * h)
    return out, _mix_with_previous(_soft_labels(labels.to(x.device), num_classes, "cutmix"), lam)
