"""Detection and segmentation targets that follow the geometric transforms: bounding boxes, masks
and keypoints, per sample, in the same call as the images.

Targets are torchvision's tv_tensors (BoundingBoxes, Mask, KeyPoints) when torchvision is
installed, or the plain-tensor wrappers of this module (same names, an explicit format and
canvas size). A transform called as `t(images, *targets)` returns `(images, *targets)` with every
box, mask and keypoint moved as the pixels of its sample were; anything else in the targets
(labels, names) passes through.

Which sample a target belongs to: for a single (C, H, W) image, every target; for a batch, a list
or tuple of B entries gives sample i its entry i (the detection layout: one dict of targets per
image), and a target tensor whose first dimension is the batch (masks (B, [K,] H, W), keypoints
(B, ..., 2), boxes (B, N, 4)) gives sample i its row i.

One mechanism serves every geometric transform: a transform describes what it did to each sample
as steps, each a forward affine map of the plane (B, 2, 3) plus the canvas it leaves, and the
samples it touched. Boxes are moved by their four corners (the enclosing box of the moved corners,
as torchvision does for affine and rotate, exact for flips, crops and resizes), then clamped to
the new canvas unless their clamping_mode is None; keypoints are moved as points. Masks are
resampled by the transform's own op with nearest interpolation and the parameters of their sample.
All boxes (keypoints, masks) of the batch move in one pass, whatever their number per sample.
"""
import sys
from typing import Any, Callable, List, Optional, Sequence, Tuple

import torch

BOX_FORMATS = ("XYXY", "XYWH", "CXCYWH")


# ---- plain-tensor targets ------------------------------------------------------------------

class BoundingBoxes:
    """Boxes (N, 4) (or (B, N, 4) for a batch) in `format` XYXY, XYWH or CXCYWH, on a canvas of
    canvas_size (height, width): torchvision's tv_tensors.BoundingBoxes for users without
    torchvision. clamping_mode "soft" / "hard" clamp boxes to the canvas after a transform, None
    does not (torchvision's meanings for axis-aligned boxes)."""

    def __init__(self, data: torch.Tensor, format: str, canvas_size: Sequence[int], clamping_mode: Optional[str] = "soft"):
        if not isinstance(data, torch.Tensor) or data.dim() not in (1, 2, 3) or data.shape[-1] != 4:
            raise ValueError(f"torchaug.BoundingBoxes: data must be a (N, 4) or (B, N, 4) tensor, got "
                             f"{tuple(data.shape) if isinstance(data, torch.Tensor) else type(data).__name__}")
        self.data = data if data.dim() > 1 else data.unsqueeze(0)
        self.format = _box_format(format, "BoundingBoxes")
        self.canvas_size = _canvas(canvas_size, "BoundingBoxes")
        if clamping_mode not in ("soft", "hard", None):
            raise ValueError(f"torchaug.BoundingBoxes: clamping_mode must be 'soft', 'hard' or None, got {clamping_mode!r}")
        self.clamping_mode = clamping_mode

    def __repr__(self):
        return f"BoundingBoxes({self.data!r}, format={self.format}, canvas_size={self.canvas_size})"


class Mask:
    """A mask (..., H, W) (or (B, ..., H, W) for a batch): torchvision's tv_tensors.Mask."""

    def __init__(self, data: torch.Tensor):
        if not isinstance(data, torch.Tensor) or data.dim() < 2:
            raise ValueError(f"torchaug.Mask: data must be a tensor of at least 2 dimensions (..., H, W), got "
                             f"{tuple(data.shape) if isinstance(data, torch.Tensor) else type(data).__name__}")
        self.data = data

    def __repr__(self):
        return f"Mask({self.data!r})"


class KeyPoints:
    """Points (..., 2) [x, y] on a canvas of canvas_size (height, width): torchvision's
    tv_tensors.KeyPoints."""

    def __init__(self, data: torch.Tensor, canvas_size: Sequence[int]):
        if not isinstance(data, torch.Tensor) or data.dim() < 1 or data.shape[-1] != 2:
            raise ValueError(f"torchaug.KeyPoints: data must be a (..., 2) tensor, got "
                             f"{tuple(data.shape) if isinstance(data, torch.Tensor) else type(data).__name__}")
        self.data = data
        self.canvas_size = _canvas(canvas_size, "KeyPoints")

    def __repr__(self):
        return f"KeyPoints({self.data!r}, canvas_size={self.canvas_size})"


def _box_format(fmt, where: str) -> str:
    name = getattr(fmt, "name", fmt)
    if not isinstance(name, str) or name.upper() not in BOX_FORMATS:
        raise ValueError(f"torchaug.{where}: box format must be one of {', '.join(BOX_FORMATS)}, got {fmt!r}"
                         " (rotated box formats are not supported)")
    return name.upper()


def _canvas(size, where: str) -> Tuple[int, int]:
    if not (isinstance(size, Sequence) and len(size) == 2 and all(int(s) == s and s > 0 for s in size)):
        raise ValueError(f"torchaug.{where}: canvas_size must be (height, width) of positive ints, got {size!r}")
    return (int(size[0]), int(size[1]))


# ---- what a geometric transform did -----------------------------------------------------------

class Step:
    """One geometric step of a transform, per sample: box_m (B, 2, 3) (affine) or (B, 3, 3)
    (projective) float64 the forward map of box coordinates (pixel edges: the image spans [0, W] x
    [0, H]); point_m the map of keypoints (torchvision's keypoint conventions; box_m when None);
    sizes the (height, width) canvas each sample has after the step (B pairs, or one pair for all);
    clamp whether boxes are clamped to it (torchvision: every op but resize and flips); applies (B,)
    bool the samples it moves (None: all); refuse: an error message raised when boxes or keypoints
    meet the step (masks follow it);
    keep(xyxy (n, 4), samples (n,)) -> (n,) bool: the boxes, as they are before the step, that it
    keeps; the others become zeros (RandomIoUCrop's boxes outside its crop); point_fn(points (n, 2),
    samples (n,), box_corners) -> (n, 2): the points moved, in place of the maps (box_m None; an
    elastic displacement field), box_corners saying whether they are the corners of boxes."""

    def __init__(self, box_m: Optional[torch.Tensor], sizes, clamp: bool = True, point_m: Optional[torch.Tensor] = None,
                 applies: Optional[torch.Tensor] = None, refuse: Optional[str] = None,
                 keep: Optional[Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = None,
                 point_fn: Optional[Callable[[torch.Tensor, torch.Tensor, bool], torch.Tensor]] = None):
        self.box_m, self.point_m, self.clamp, self.applies = box_m, point_m, clamp, applies
        self.sizes, self.refuse, self.keep, self.point_fn = sizes, refuse, keep, point_fn

    def size(self, b: int) -> Tuple[int, int]:
        s = self.sizes
        return (int(s[0]), int(s[1])) if _uniform(s) else (int(s[b][0]), int(s[b][1]))


def _uniform(sizes) -> bool:
    return isinstance(sizes, tuple) and len(sizes) == 2 and not isinstance(sizes[0], (tuple, list))


def affine_rows(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, d: torch.Tensor, e: torch.Tensor,
                f: torch.Tensor) -> torch.Tensor:
    """(B, 2, 3) float64 [[a, b, c], [d, e, f]] from (B,) rows (numbers broadcast)."""
    rows = torch.broadcast_tensors(*[torch.as_tensor(v, dtype=torch.float64) if not isinstance(v, torch.Tensor) else v.double()
                                     for v in (a, b, c, d, e, f)])
    return torch.stack(rows, -1).view(-1, 2, 3)


def scale_shift(sx, tx, sy, ty) -> torch.Tensor:
    """x' = sx * x + tx, y' = sy * y + ty, per sample."""
    z = torch.zeros_like(torch.as_tensor(sx, dtype=torch.float64))
    return affine_rows(sx, z, tx, z, sy, ty)


def forward_affine(angle: torch.Tensor, translate: torch.Tensor, scale: torch.Tensor, shear: torch.Tensor,
                   center: torch.Tensor) -> torch.Tensor:
    """(B, 2, 3) torchvision's _get_inverse_affine_matrix(center, angle, translate, scale, shear,
    inverted=False) per sample: the forward map its bounding boxes and keypoints use. angle, scale
    (B,); translate, shear, center (B, 2); degrees; float64."""
    rot = torch.deg2rad(angle)
    sx, sy = torch.deg2rad(shear[:, 0]), torch.deg2rad(shear[:, 1])
    cx, cy = center[:, 0], center[:, 1]
    tx, ty = translate[:, 0], translate[:, 1]
    cos_sy, tan_sx = torch.cos(sy), torch.tan(sx)
    a = torch.cos(rot - sy) / cos_sy
    b = -(a * tan_sx + torch.sin(rot))
    c = torch.sin(rot - sy) / cos_sy
    d = torch.cos(rot) - c * tan_sx
    m0, m1, m3, m4 = a * scale, b * scale, c * scale, d * scale
    m2 = (cx + tx) - m0 * cx - m1 * cy
    m5 = (cy + ty) - m3 * cx - m4 * cy
    return torch.stack([m0, m1, m2, m3, m4, m5], 1).view(-1, 2, 3)


def flip_maps(horizontal: Optional[torch.Tensor], vertical: Optional[torch.Tensor], sizes: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Per-sample flips of images of sizes (B, 2) [H, W] (float64 on the device): boxes map x to
    W - x, keypoints to W - 1 - x (torchvision's conventions)."""
    h, w = sizes[:, 0], sizes[:, 1]
    one = torch.ones_like(h)
    zero = torch.zeros_like(h)
    fh = horizontal.to(torch.float64) if horizontal is not None else zero
    fv = vertical.to(torch.float64) if vertical is not None else zero
    sx, sy = one - 2 * fh, one - 2 * fv
    box = scale_shift(sx, fh * w, sy, fv * h)
    point = scale_shift(sx, fh * (w - 1), sy, fv * (h - 1))
    return box, point


# ---- collecting the targets of a call --------------------------------------------------------

def _tv():
    return sys.modules.get("torchvision.tv_tensors")


def _kind(obj) -> Optional[str]:
    tv = _tv()
    if tv is not None:
        if isinstance(obj, tv.BoundingBoxes):
            return "boxes"
        if isinstance(obj, tv.Mask):
            return "mask"
        if hasattr(tv, "KeyPoints") and isinstance(obj, tv.KeyPoints):
            return "keypoints"
        if isinstance(obj, torch.Tensor) and type(obj) is not torch.Tensor and isinstance(obj, tv.TVTensor) \
                and not isinstance(obj, (tv.Image, tv.Video)):
            return "unsupported"
    if isinstance(obj, BoundingBoxes):
        return "boxes"
    if isinstance(obj, Mask):
        return "mask"
    if isinstance(obj, KeyPoints):
        return "keypoints"
    return None


class _Item:
    """One target tensor: its rows (boxes (n, 4), keypoints (n, 2), masks (n, H, W)) and the sample
    of each row."""

    def __init__(self, kind: str, obj, data: torch.Tensor, samples: List[int], per_row: int, batched: bool):
        self.kind, self.obj, self.data, self.samples, self.per_row, self.batched = kind, obj, data, samples, per_row, batched
        self.result = None

    @property
    def format(self) -> str:
        return _box_format(self.obj.format, "transforms") if self.kind == "boxes" else ""

    @property
    def clamping(self) -> Optional[str]:
        return getattr(self.obj, "clamping_mode", "soft")


def _raw(obj) -> torch.Tensor:
    return obj.data if isinstance(obj, (BoundingBoxes, Mask, KeyPoints)) else obj.as_subclass(torch.Tensor)


def collect(targets: Tuple[Any, ...], batch: int, single: bool, name: str):
    """Walks the targets of a call; returns (structure with _Item in place of each box / mask /
    keypoint tensor, items)."""
    items: List[_Item] = []

    def rows(kind: str, t: torch.Tensor) -> int:
        """Rows of one sample's target: boxes / keypoints (n, 4 or 2), masks (n, H, W)."""
        row = t.shape[-1] if kind != "mask" else max(1, t.shape[-2] * t.shape[-1])
        return int(t.numel() // row)

    def item(obj, kind: str, sample: Optional[int]):
        if kind == "unsupported":
            raise TypeError(f"torchaug.transforms.{name}: targets of type {type(obj).__name__} are not supported "
                            "(bounding boxes, masks and keypoints are)")
        data = _raw(obj)
        if sample is None:  # a batched target: its first dimension is the batch
            if (kind == "boxes" and data.dim() != 3) or data.dim() < 2 or data.shape[0] != batch:
                raise ValueError(
                    f"torchaug.transforms.{name}: a {kind} target for a batch of {batch} images must be a list of "
                    f"{batch} per-image targets or a tensor whose first dimension is the batch, got shape {tuple(data.shape)}")
            it = _Item(kind, obj, data, list(range(batch)), rows(kind, data[0]) if batch else 0, True)
        else:
            it = _Item(kind, obj, data, [sample], rows(kind, data), False)
        items.append(it)
        return it

    def walk(obj, sample: Optional[int], top: bool):
        kind = _kind(obj)
        if kind is not None:
            return item(obj, kind, sample)
        if isinstance(obj, dict):
            return type(obj)((k, walk(v, sample, top)) for k, v in obj.items())
        if isinstance(obj, (list, tuple)) and not isinstance(obj, str):
            if sample is None and len(obj) == batch and top:
                out = [walk(v, i, False) for i, v in enumerate(obj)]
            else:
                out = [walk(v, sample, top) for v in obj]
            return tuple(out) if isinstance(obj, tuple) else out
        return obj

    structure = tuple(walk(t, 0 if single else None, True) for t in targets)
    return structure, items


def rebuild(structure):
    def walk(obj):
        if isinstance(obj, _Item):
            return obj.result
        if isinstance(obj, dict):
            return type(obj)((k, walk(v)) for k, v in obj.items())
        if isinstance(obj, (list, tuple)) and not isinstance(obj, str):
            out = [walk(v) for v in obj]
            return tuple(out) if isinstance(obj, tuple) else out
        return obj

    return tuple(walk(t) for t in structure)


# ---- moving them --------------------------------------------------------------------------------

def _to_xyxy(b: torch.Tensor, fmt: str) -> torch.Tensor:
    if fmt == "XYXY":
        return b
    if fmt == "XYWH":
        return torch.cat([b[:, :2], b[:, :2] + b[:, 2:]], 1)
    half = b[:, 2:] / 2
    return torch.cat([b[:, :2] - half, b[:, :2] + half], 1)


def _from_xyxy(b: torch.Tensor, fmt: str) -> torch.Tensor:
    if fmt == "XYXY":
        return b
    if fmt == "XYWH":
        return torch.cat([b[:, :2], b[:, 2:] - b[:, :2]], 1)
    return torch.cat([(b[:, :2] + b[:, 2:]) / 2, b[:, 2:] - b[:, :2]], 1)


def _rows(items: List[_Item], width: int, device) -> Tuple[torch.Tensor, torch.Tensor, List[int]]:
    """All rows of items (n, width) in one tensor, the sample of each row, and the row counts."""
    counts = [it.per_row * len(it.samples) for it in items]
    data = torch.cat([it.data.reshape(-1, width) for it in items]) if items else torch.zeros(0, width)
    samples = torch.tensor([s for it in items for s in it.samples], dtype=torch.int64)
    reps = torch.tensor([it.per_row for it in items for _ in it.samples], dtype=torch.int64)
    idx = torch.repeat_interleave(samples, reps).to(device, non_blocking=True)
    return data, idx, counts


def _work_dtype(dtype: torch.dtype) -> torch.dtype:
    return dtype if dtype.is_floating_point else torch.float32


def move_points(xy: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """(n, 2) points through (n, 2, 3) affine or (n, 3, 3) projective maps, in xy's dtype
    (torchvision multiplies in the boxes' dtype)."""
    m = m.to(xy.dtype)
    moved = (m[:, :2, :2] @ xy.unsqueeze(-1)).squeeze(-1) + m[:, :2, 2]
    if m.shape[1] == 3:
        moved = moved / ((m[:, 2:, :2] @ xy.unsqueeze(-1)).squeeze(-1) + m[:, 2:, 2])
    return moved


def apply_steps(items: List[_Item], steps: List[Step], device, name: str):
    """Moves every box and keypoint item through the steps; sets item.result_data."""
    for kind in ("boxes", "keypoints"):
        group = [it for it in items if it.kind == kind]
        if not group:
            continue
        for st in steps:
            if st.refuse is not None:
                raise ValueError(st.refuse)
        width = 4 if kind == "boxes" else 2
        by_format = {}
        for it in group:
            key = (it.format, it.data.dtype, it.clamping) if kind == "boxes" else (it.data.dtype,)
            by_format.setdefault(key, []).append(it)
        for key, its in by_format.items():
            data, idx, counts = _rows(its, width, device)
            work = _work_dtype(data.dtype)
            x = data.to(device=device, dtype=work)
            if kind == "boxes":
                x = _to_xyxy(x, key[0])
                _check_ordered(x, idx, name)
            for st in steps:
                move = st.point_fn  # points moved by a function (a displacement field), else by maps
                if move is None:
                    m = (st.box_m if kind == "boxes" or st.point_m is None else st.point_m).to(device)
                    move = (lambda pts, rows, corners, m=m: move_points(pts, m[rows]))
                if kind == "boxes":
                    corners = x[:, [0, 1, 2, 1, 2, 3, 0, 3]].view(-1, 4, 2)
                    moved = move(corners.reshape(-1, 2), idx.repeat_interleave(4, 0), True).view(-1, 4, 2)
                    lo, hi = moved.amin(1), moved.amax(1)
                    y = torch.cat([lo, hi], 1)
                    if st.clamp and key[2] is not None:
                        size = _sizes_tensor(st, idx, device, work)
                        y = torch.minimum(torch.maximum(y, torch.zeros_like(y)), size.repeat(1, 2))
                else:
                    y = move(x, idx, False)
                if st.applies is not None:
                    y = torch.where(st.applies.to(device)[idx].unsqueeze(1), y, x)
                if kind == "boxes" and st.keep is not None:
                    y = torch.where(st.keep(x, idx).unsqueeze(1), y, torch.zeros_like(y))
                x = y
            if kind == "boxes":
                x = _from_xyxy(x, key[0])
            x = x.to(data.dtype) if data.dtype != work else x
            for it, part in zip(its, torch.split(x, counts)):
                it.result_data = part.reshape(it.data.shape)


def _check_ordered(xyxy: torch.Tensor, idx: torch.Tensor, name: str):
    """Boxes must have x1 <= x2 and y1 <= y2 (one host read per call with boxes)."""
    bad = (xyxy[:, 2] < xyxy[:, 0]) | (xyxy[:, 3] < xyxy[:, 1])
    if xyxy.numel() and bool(bad.any()):
        row = int(bad.nonzero()[0, 0])
        raise ValueError(f"torchaug.transforms.{name}: bounding boxes must have x1 <= x2 and y1 <= y2; a box of sample "
                         f"{int(idx[row])} is {[round(float(v), 3) for v in xyxy[row]]} (as XYXY)")


def _sizes_tensor(st: Step, idx: torch.Tensor, device, dtype) -> torch.Tensor:
    """(n, 2) [W, H] of each row's canvas after the step."""
    s = st.sizes
    if _uniform(s):
        return torch.tensor([[float(s[1]), float(s[0])]], dtype=dtype, device=device)
    table = torch.tensor([[float(w), float(h)] for h, w in s], dtype=dtype).to(device, non_blocking=True)
    return table[idx]


def mask_rows(items: List[_Item], device):
    """All masks of the items as one (n, 1, H, W) batch (a list of (1, H_i, W_i) when sizes
    differ), in a dtype the image ops take (uint8 for bool / uint8, float32 for other integers,
    the masks' own floating dtype), and the sample of each."""
    group = [it for it in items if it.kind == "mask"]
    planes, samples = [], []
    for it in group:
        d = it.data
        flat = d.reshape(-1, d.shape[-2], d.shape[-1])
        planes.append(flat)
        for s in it.samples:
            samples += [s] * it.per_row
    if not planes:
        return group, None, None
    dtypes = {p.dtype for p in planes}
    if dtypes <= {torch.bool, torch.uint8}:
        work = torch.uint8
    elif all(dt.is_floating_point for dt in dtypes) and len(dtypes) == 1:
        work = planes[0].dtype
    else:
        work = torch.float32
    sizes = {tuple(p.shape[-2:]) for p in planes}
    if len(sizes) == 1:
        batch = torch.cat([p.to(device=device, dtype=work) for p in planes]).unsqueeze(1)
    else:
        batch = [q.unsqueeze(0) for p in planes for q in p.to(device=device, dtype=work)]
    idx = torch.tensor(samples, dtype=torch.int64).to(device, non_blocking=True)
    return group, batch, idx


def finish_masks(group: List[_Item], out):
    """Splits the transformed mask batch (n, 1, h, w) (the ops to one size return a dense batch,
    also from a list of masks of different sizes; the ops to sizes per sample a list of (1, h_i,
    w_i)) back into the items, in their dtypes and shapes."""
    pos = 0
    for it in group:
        n = it.per_row * len(it.samples)
        if isinstance(out, list):
            rows = out[pos:pos + n]
            if len({tuple(r.shape[-2:]) for r in rows}) > 1:
                raise ValueError("torchaug.transforms: the masks of a batched mask target come out in different sizes "
                                 "(give one mask target per sample)")
            part = torch.cat(rows) if rows else torch.zeros(0, *it.data.shape[-2:], dtype=it.data.dtype, device=it.data.device)
        else:
            part = out[pos:pos + n].reshape(n, out.shape[-2], out.shape[-1])
        pos += n
        dt = it.data.dtype
        if dt == torch.bool:
            part = part != 0
        elif not dt.is_floating_point and part.dtype.is_floating_point:
            part = part.round().to(dt)
        else:
            part = part.to(dt)
        it.result_data = part.reshape(*it.data.shape[:-2], part.shape[-2], part.shape[-1])


def wrap(it: _Item, canvas: Tuple[int, int]):
    """The transformed target, of the type it came in."""
    obj, data = it.obj, it.result_data
    if isinstance(obj, BoundingBoxes):
        return BoundingBoxes(data, obj.format, canvas, obj.clamping_mode)
    if isinstance(obj, KeyPoints):
        return KeyPoints(data, canvas)
    if isinstance(obj, Mask):
        return Mask(data)
    tv = _tv()
    if it.kind == "mask":
        return tv.wrap(data, like=obj)
    return tv.wrap(data, like=obj, canvas_size=canvas)


def check_canvas(items: List[_Item], sizes: Callable[[int], Tuple[int, int]], name: str):
    for it in items:
        s = it.samples[0]
        want = sizes(s)
        if it.kind == "mask":
            got = tuple(it.data.shape[-2:])
        else:
            got = tuple(int(v) for v in it.obj.canvas_size)
        if got != tuple(want):
            what = "mask" if it.kind == "mask" else f"{it.kind} canvas_size"
            where = "the batch" if it.batched else f"sample {s}"
            raise ValueError(f"torchaug.transforms.{name}: the {what} of {where} is {got}, but its image is {tuple(want)}")


def follow(transform, images, targets: Tuple[Any, ...], params, info, name: str):
    """The targets of a call moved as transform moved the images."""
    single = isinstance(images, torch.Tensor) and images.dim() == 3
    structure, items = collect(targets, info.batch, single, name)
    if not items:
        return targets
    steps = transform._target_steps(images, info, params)
    if steps is None:  # not a geometric transform: targets pass through
        return targets
    in_size = (lambda b: info.uniform_size) if not info.ragged else (lambda b: info.host_sizes[b])
    check_canvas(items, in_size, name)
    device = info.device
    apply_steps(items, steps, device, name)
    group, batch, idx = mask_rows(items, device)
    if batch is not None:
        finish_masks(group, transform._transform_masks(batch, idx, params, info))
    last = steps[-1]
    for it in items:
        it.result = wrap(it, last.size(it.samples[0]))
    return rebuild(structure)


def select(take: torch.Tensor, applied: Tuple[Any, ...], original: Tuple[Any, ...], batch: int, single: bool, name: str):
    """Per sample, the targets of `applied` where take (B,) bool is True, those of `original`
    elsewhere: two results of the same targets (the per-sample containers). A target of one sample
    is taken whole (the decisions are read on the host, once); a batched target (first dimension the
    batch) row by row, in one torch.where."""
    host: List[bool] = []

    def taken(sample: int) -> bool:
        if not host:
            host.extend(bool(v) for v in take.tolist())
        return host[sample]

    def walk(a, o, sample: Optional[int], top: bool):
        kind = _kind(o)
        if kind is not None:
            if sample is not None:
                return a if taken(sample) else o
            ra, ro = _raw(a), _raw(o)
            if ra.shape != ro.shape:
                raise ValueError(f"torchaug.transforms.{name}: a batched {kind} target changed shape from {tuple(ro.shape)} "
                                 f"to {tuple(ra.shape)}; a per-sample choice needs the same shape (pass per_sample=False)")
            data = torch.where(take.to(ra.device).view(-1, *[1] * (ra.dim() - 1)), ra, ro)
            it = _Item(kind, a, data, [], 0, True)
            it.result_data = data
            return wrap(it, tuple(getattr(a, "canvas_size", ())))
        if isinstance(o, dict):
            return type(o)((k, walk(a[k], v, sample, top)) for k, v in o.items())
        if isinstance(o, (list, tuple)) and not isinstance(o, str):
            if sample is None and len(o) == batch and top:
                out = [walk(va, vo, i, False) for i, (va, vo) in enumerate(zip(a, o))]
            else:
                out = [walk(va, vo, sample, top) for va, vo in zip(a, o)]
            return tuple(out) if isinstance(o, tuple) else out
        return o

    return tuple(walk(a, o, 0 if single else None, True) for a, o in zip(applied, original))


def warp_affine_boxes(boxes, matrices: torch.Tensor, out_size, format: str = "XYXY", clamp: bool = True):
    """Boxes that follow torchaug.functional.warp_affine(images, matrices, out_size): boxes a list of
    B tensors (N_i, 4) (one per sample) or the (N, 4) boxes of a single image, in `format`; matrices (B, 2, 3) the same inverse maps (output pixel -> input pixel, pixel
    centres at integer coordinates) given to warp_affine. Each box is moved by its corners and, with
    clamp, clamped to out_size [height, width]. Returns the boxes in the same form."""
    single = isinstance(boxes, torch.Tensor)
    blist = [boxes] if single else list(boxes)
    m = torch.as_tensor(matrices, dtype=torch.float64)
    m = m.unsqueeze(0) if m.dim() == 2 else m
    if m.shape[1:] != (2, 3) or m.shape[0] not in (1, len(blist)):
        raise ValueError(f"torchaug.warp_affine_boxes: matrices must have shape (B, 2, 3) with B={len(blist)}, got {tuple(m.shape)}")
    m = m.expand(len(blist), 2, 3)
    # the forward map in pixel-index coordinates, then in box coordinates (pixel edges: + 0.5)
    a = m[:, :, :2]
    inv = torch.linalg.inv(a)
    t = -(inv @ m[:, :, 2:]).squeeze(-1)
    half = torch.full((len(blist), 2), 0.5, dtype=torch.float64, device=m.device)
    t = t + half - (inv @ half.unsqueeze(-1)).squeeze(-1)
    fwd = torch.cat([inv, t.unsqueeze(-1)], 2)
    size = (int(out_size[0]), int(out_size[1]))
    items = [_Item("boxes", BoundingBoxes(b, format, size), b, [i], b.shape[0], False) for i, b in enumerate(blist)]
    device = blist[0].device if blist else m.device
    apply_steps(items, [Step(fwd, size, clamp)], device, "warp_affine_boxes")
    out = [it.result_data for it in items]
    return out[0] if single else out
