"""Functional geometry ops: torchvision.transforms.v2.functional names and signatures, with every
parameter optionally per sample (a (B,) or (B, k) tensor on the images' device)."""
import numbers
from typing import List, Optional, Sequence

import torch

from .. import _ops  # noqa: F401  (registers torch.ops.torchaug)
from ..io._ragged import RaggedImages
from ._on_targets import is_target, on_target
from ._utils import (
    InterpolationMode,
    _check_real,
    _constant_row,
    as_batch,
    check_boxes,
    check_tensor,
    fill_tensor,
    image_list,
    ragged_buffer,
    interpolation_code,
    pair,
    per_sample,
    per_sample_rows,
    unbatch,
)

_ops_ns = torch.ops.torchaug


# ---- resized_crop ---------------------------------------------------------------------------

def resized_crop_boxes(
    images,
    boxes: torch.Tensor,
    size,
    interpolation=InterpolationMode.BILINEAR,
    antialias: bool = True,
    *,
    flip: Optional[torch.Tensor] = None,
    mean: Optional[torch.Tensor] = None,
    std: Optional[torch.Tensor] = None,
    out_dtype: Optional[torch.dtype] = None,
    memory_format: Optional[torch.memory_format] = None,
    validate: bool = True,
) -> torch.Tensor:
    """Crop boxes (B, 4) [top, left, height, width] (int64) of each image and resize them to `size`
    in one pass; optionally flip (B,) bool horizontally and normalize ((x * scale - mean) / std with
    mean, std broadcastable to (B, C)) and cast to `out_dtype` in the same pass. `images` is a
    (B, C, H, W) tensor, or a ragged batch: a list of (C, H_i, W_i) tensors or a
    torchaug.io.RaggedImages (read in place, with no Python work per image); the output is always a
    dense (B, C, h, w) batch. The result equals torchvision's
    normalize(to_dtype(hflip(resized_crop(img, *box, size, interpolation, antialias)))) per sample."""
    op = "resized_crop"
    code = interpolation_code(interpolation, op)
    out_size = pair(size, "size", op)
    if isinstance(images, RaggedImages):
        if len(images) == 0:
            raise ValueError(f"torchaug.{op}: the RaggedImages batch is empty")
        batch, channels, device, dtype = len(images), images.channels, images.device, images.data.dtype
    elif isinstance(images, (list, tuple)):
        imgs, hwc = image_list(images, op)
        batch, channels, device, dtype = len(imgs), imgs[0].shape[0], imgs[0].device, imgs[0].dtype
    else:
        x, single = as_batch(images, op)
        batch, channels, device, dtype = x.shape[0], x.shape[1], x.device, x.dtype
    boxes = per_sample_rows(boxes, batch, 4, device, torch.int64, "boxes", op)
    if validate:
        check_boxes(boxes, op)
    if flip is not None:
        flip = per_sample(flip, batch, device, torch.bool, "flip", op)
    if (mean is None) != (std is None):
        raise ValueError(f"torchaug.{op}: mean and std must be given together")
    if mean is not None:
        mean = per_sample_rows(mean, batch, channels, device, torch.float32, "mean", op)
        std = per_sample_rows(std, batch, channels, device, torch.float32, "std", op)
        if out_dtype is None:
            out_dtype = dtype if dtype.is_floating_point else torch.float32
    if isinstance(images, RaggedImages):
        offsets, sizes = images.host_layout()
        return _ops_ns.resized_crop_ragged(
            images.data, offsets, sizes, channels, images.channels_last, boxes, out_size, code, antialias, flip, mean, std,
            out_dtype, memory_format
        )
    if isinstance(images, (list, tuple)):
        flat, offsets, sizes = ragged_buffer(imgs, hwc)
        return _ops_ns.resized_crop_ragged(
            flat, offsets, sizes, channels, hwc, boxes, out_size, code, antialias, flip, mean, std, out_dtype, memory_format
        )
    out = _ops_ns.resized_crop(x, boxes, out_size, code, antialias, flip, mean, std, out_dtype, memory_format)
    return unbatch(out, single)


def resized_crop(
    images,
    top,
    left,
    height,
    width,
    size,
    interpolation=InterpolationMode.BILINEAR,
    antialias: bool = True,
    **fused,
) -> torch.Tensor:
    """torchvision.transforms.v2.functional.resized_crop with per-sample top/left/height/width
    (numbers or (B,) tensors); size [height, width], or one number (the crop's smaller edge, as
    torchvision) where height and width are numbers (every sample gets the same output size). Keyword arguments of resized_crop_boxes (flip, mean, std, out_dtype, memory_format)
    fuse those stages into the same pass."""
    if is_target(images):
        return on_target("resized_crop", images, top, left, height, width, size, interpolation, antialias)
    op = "resized_crop"
    if isinstance(images, RaggedImages):
        batch, device = len(images), images.device
    elif isinstance(images, (list, tuple)):
        imgs, _ = image_list(images, op)
        batch, device = len(imgs), imgs[0].device
    else:
        x, _ = as_batch(images, op)
        batch, device = x.shape[0], x.device
    if isinstance(size, numbers.Integral) or (isinstance(size, Sequence) and len(size) == 1):
        # torchvision resizes the crop's smaller edge to size: one output size for the batch when the
        # crop's height and width are numbers (per-sample tensors would give each sample its own)
        if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in (height, width)):
            raise ValueError(
                f"torchaug.{op}: size must be [height, width] when height or width differ per sample: with one number "
                f"torchvision resizes each crop's smaller edge, which would give every sample a different size; got {size!r}")
        if int(height) <= 0 or int(width) <= 0:
            raise ValueError(f"torchaug.{op}: height and width must be positive, got {height} and {width}")
        size = _compute_resized_output_size(int(height), int(width), size)
    boxes = torch.stack([per_sample(v, batch, device, torch.int64, n, op) for v, n in
                         ((top, "top"), (left, "left"), (height, "height"), (width, "width"))], dim=1)
    return resized_crop_boxes(images, boxes, size, interpolation, antialias, **fused)


def _short_edge_size(height: int, width: int, size: int, max_size: Optional[int]) -> List[int]:
    """[h, w] with the smaller edge `size` and the aspect ratio kept (the longer edge at most
    max_size): torchvision's rule, TorchScript-compatible (the scripted Resize calls it too)."""
    short, long = (width, height) if width <= height else (height, width)
    new_short, new_long = size, int(size * long / short)
    if max_size is not None and new_long > max_size:
        new_short, new_long = int(max_size * new_short / new_long), max_size
    return [new_long, new_short] if width <= height else [new_short, new_long]


def _compute_resized_output_size(height: int, width: int, size, max_size: Optional[int] = None) -> List[int]:
    # torchvision.transforms.v2.functional._geometry._compute_resized_output_size
    if isinstance(size, numbers.Integral):
        size = [int(size)]
    elif not isinstance(size, Sequence) or not all(isinstance(s, (numbers.Integral, torch.SymInt)) and not isinstance(s, bool)
                                                    for s in size):
        raise ValueError(f"torchaug.resize: size must be an int or a sequence of 1 or 2 ints, got {size!r}")
    elif max_size is not None and len(size) != 1:
        raise ValueError("max_size should only be passed if size is None or specifies the length of the smaller edge")
    if len(size) == 1:
        if max_size is not None and max_size <= size[0]:
            raise ValueError(f"max_size = {max_size} must be strictly greater than the requested size for the smaller edge size = {size}")
        return _short_edge_size(height, width, size[0], max_size)
    if len(size) != 2 or not all(isinstance(s, (numbers.Integral, torch.SymInt)) and not isinstance(s, bool) for s in size):
        raise ValueError(f"torchaug.resize: size must be an int or a sequence of 1 or 2 ints, got {size!r}")
    return [int(size[0]), int(size[1])]


def _ragged_sizes(images, op: str):
    """([(H_i, W_i)], device) of a ragged batch (a list of (C, H_i, W_i) tensors, checked, or a
    RaggedImages); None for a tensor."""
    if isinstance(images, RaggedImages):
        return images.sizes, images.device
    if isinstance(images, (list, tuple)):
        imgs, _ = image_list(images, op)
        return [(t.shape[1], t.shape[2]) for t in imgs], imgs[0].device
    return None


def resize(images, size, interpolation=InterpolationMode.BILINEAR, max_size: Optional[int] = None, antialias: bool = True, **fused):
    """torchvision.transforms.v2.functional.resize; `images` may also be a list of (C, H_i, W_i)
    tensors or a RaggedImages when size is [height, width] (a ragged batch resized into a dense one)."""
    if is_target(images):
        return on_target("resize", images, size, interpolation, max_size, antialias)
    ragged = _ragged_sizes(images, "resize")
    if ragged is not None:
        if isinstance(size, numbers.Integral) or len(size) != 2:
            raise ValueError("torchaug.resize: a list of images of different sizes needs size=[height, width]")
        boxes = torch.tensor([[0, 0, h, w] for h, w in ragged[0]], dtype=torch.int64).to(ragged[1], non_blocking=True)
        return resized_crop_boxes(images, boxes, size, interpolation, antialias, validate=False, **fused)
    x, single = as_batch(images, "resize")
    h, w = x.shape[-2:]
    if h == 0 or w == 0:
        raise ValueError(f"torchaug.resize: images must have height and width > 0, got shape {tuple(images.shape)}")
    out_size = _compute_resized_output_size(h, w, size, max_size)
    boxes = torch.tensor([0, 0, h, w], dtype=torch.int64, device=x.device)
    return unbatch(resized_crop_boxes(x, boxes, out_size, interpolation, antialias, validate=False, **fused), single)


def crop(images, top, left, height: int, width: int) -> torch.Tensor:
    """torchvision's crop (zero padding where the box leaves the image), top/left per sample."""
    if is_target(images):
        return on_target("crop", images, top, left, height, width)
    x, single = as_batch(images, "crop")
    out = resized_crop(x, top, left, height, width, [height, width], InterpolationMode.NEAREST, False)
    return unbatch(out, single)


def _center_offset(size: int, c: int) -> int:
    # torchvision's center_crop: pad (zeros) to at least the crop size, then round((size - crop) / 2)
    # (TorchScript-compatible: the scripted CenterCrop calls it too)
    before = (c - size) // 2 if c > size else 0
    after = (c - size + 1) // 2 if c > size else 0
    return int(round((size + before + after - c) / 2.0)) - before


def _center_crop_box(height: int, width: int, crop_h: int, crop_w: int) -> List[int]:
    return [_center_offset(height, crop_h), _center_offset(width, crop_w), crop_h, crop_w]


def center_crop(images, output_size, **fused) -> torch.Tensor:
    """torchvision.transforms.v2.functional.center_crop; also takes a list of (C, H_i, W_i) tensors or
    a RaggedImages."""
    if is_target(images):
        return on_target("center_crop", images, output_size)
    ch, cw = pair(output_size, "output_size", "center_crop")
    ragged = _ragged_sizes(images, "center_crop")
    if ragged is not None:
        boxes = torch.tensor([_center_crop_box(h, w, ch, cw) for h, w in ragged[0]], dtype=torch.int64)
        return resized_crop_boxes(images, boxes.to(ragged[1], non_blocking=True), [ch, cw], InterpolationMode.NEAREST, False,
                                  validate=False, **fused)
    x, single = as_batch(images, "center_crop")
    box = torch.tensor(_center_crop_box(x.shape[-2], x.shape[-1], ch, cw), dtype=torch.int64, device=x.device)
    return unbatch(resized_crop_boxes(x, box, [ch, cw], InterpolationMode.NEAREST, False, validate=False, **fused), single)


def _five_crop(x: torch.Tensor, ch: int, cw: int, op: str = "five_crop") -> List[torch.Tensor]:
    """The four corners and the centre (torchvision's order) of (..., H, W) as views, torchvision's
    five_crop. TorchScript-compatible (the scripted FiveCrop and TenCrop call it)."""
    h, w = x.shape[-2], x.shape[-1]
    if ch > h or cw > w or ch <= 0 or cw <= 0:
        raise ValueError("torchaug." + op + ": size must be positive and at most the images' size " + str([h, w])
                         + ", got " + str([ch, cw]))
    top, left = _center_offset(h, ch), _center_offset(w, cw)
    return [x[..., :ch, :cw], x[..., :ch, w - cw:], x[..., h - ch:, :cw], x[..., h - ch:, w - cw:],
            x[..., top:top + ch, left:left + cw]]


def five_crop(images, size) -> Sequence[torch.Tensor]:
    """torchvision's five_crop: (top-left, top-right, bottom-left, bottom-right, centre) crops of
    size, views of the images (a (C, H, W) image or a (B, C, H, W) batch)."""
    x, _ = as_batch(images, "five_crop")
    ch, cw = pair(size, "size", "five_crop")
    return tuple(_five_crop(images, ch, cw))


def ten_crop(images, size, vertical_flip: bool = False) -> Sequence[torch.Tensor]:
    """torchvision's ten_crop: five_crop of the images, then five_crop of the images flipped
    horizontally (vertically with vertical_flip)."""
    x, _ = as_batch(images, "ten_crop")
    ch, cw = pair(size, "size", "ten_crop")
    return tuple(_five_crop(images, ch, cw, "ten_crop") + _five_crop(images.flip(-2 if vertical_flip else -1), ch, cw, "ten_crop"))


def elastic(images, displacement: torch.Tensor, interpolation=InterpolationMode.BILINEAR, fill=None) -> torch.Tensor:
    """torchvision.transforms.v2.functional.elastic with a displacement per sample: output pixel
    (x, y) of sample b samples the input at the identity grid plus displacement[b, y, x] (in
    grid_sample's [-1, 1] coordinates); displacement (B, H, W, 2) or (1, H, W, 2). One grid_sample
    for the batch, with torchvision's fill blending (fill None: zeros outside) and rounding."""
    if is_target(images):
        return on_target("elastic", images, displacement, interpolation, fill)
    op = "elastic"
    x, single = as_batch(images, op)
    mode = ("nearest", "bilinear")[interpolation_code(interpolation, op, ("nearest", "bilinear"))]
    b, c, h, w = x.shape
    check_tensor(displacement, "displacement", op)
    if displacement.dim() != 4 or displacement.shape[0] not in (1, b) or tuple(displacement.shape[1:]) != (h, w, 2):
        raise ValueError(f"torchaug.{op}: displacement must have shape (B, H, W, 2) or (1, H, W, 2) with B={b}, H={h}, W={w}, "
                         f"got {tuple(displacement.shape)}")
    if not displacement.is_floating_point():
        raise TypeError(f"torchaug.{op}: displacement must be floating, got {displacement.dtype}")
    _check_real(displacement, torch.float32, "displacement", op)  # finite, where reading it costs no synchronisation
    fill_rows = None if fill is None else fill_tensor(fill, b, c, x.device, op)
    return unbatch(_elastic(x, displacement, mode, fill_rows), single)


def _grid_dtype(x: torch.Tensor) -> torch.dtype:
    # float32 coordinates for the narrower types (torchvision's on the CPU; its CUDA float16 grid is
    # coarser), so that the CPU and CUDA results agree
    return x.dtype if x.dtype in (torch.float32, torch.float64) else torch.float32


def _elastic(x: torch.Tensor, displacement: torch.Tensor, mode: str, fill_rows: Optional[torch.Tensor]) -> torch.Tensor:
    """elastic of a (B, C, H, W) batch; fill_rows (B, C) or None: one torchaug::warp_grid launch in
    the images' dtype, or torch's grid_sample (_sample_grid, the same values) where a gradient is
    wanted. TorchScript-compatible (the scripted ElasticTransform calls it)."""
    h, w = x.shape[2], x.shape[3]
    dtype = _grid_dtype(x)
    grid = _identity_grid(h, w, x.device, dtype) + displacement.to(device=x.device, dtype=dtype)
    if x.requires_grad or grid.requires_grad:
        return _sample_grid(x, grid, mode, fill_rows)
    return torch.ops.torchaug.warp_grid(x, grid, 0 if mode == "nearest" else 1, fill_rows)


def _sample_grid(x: torch.Tensor, grid: torch.Tensor, mode: str, fill_rows: Optional[torch.Tensor]) -> torch.Tensor:
    """torchvision's _apply_grid_transform over a batch: grid (1 or B, H_out, W_out, 2) in grid_sample's
    coordinates (of _grid_dtype(x)), the fill blended in by a ones channel sampled beside the
    image's (fill None: zeros outside), integers rounded. TorchScript-compatible."""
    b, c, h, w = x.shape[0], x.shape[1], x.shape[2], x.shape[3]
    dtype = grid.dtype
    src = x.to(dtype)
    if fill_rows is not None:
        src = torch.cat([src, torch.ones(b, 1, h, w, dtype=dtype, device=x.device)], dim=1)
    oh, ow = grid.shape[1], grid.shape[2]
    out = torch.nn.functional.grid_sample(src, grid.expand(b, oh, ow, 2), mode=mode, padding_mode="zeros", align_corners=False)
    if fill_rows is not None:
        mask = out[:, c:].expand(b, c, oh, ow)
        out = out[:, :c]
        f = fill_rows.to(dtype).view(b, c, 1, 1)
        if mode == "nearest":
            out = torch.where(mask < 0.5, f.expand_as(out), out)
        else:
            out = (out - f) * mask + f
    out = out.round().to(x.dtype) if not x.is_floating_point() else out.to(x.dtype)
    if x.shape[1] > 1 and x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous():
        out = out.contiguous(memory_format=torch.channels_last)
    return out


def perspective(images, startpoints=None, endpoints=None, interpolation=InterpolationMode.BILINEAR, fill=None,
                coefficients=None) -> torch.Tensor:
    """torchvision.transforms.v2.functional.perspective with a map per sample: coefficients (B, 8)
    or (8,) (a tensor or 8 numbers), the 8 coefficients of the homography from output pixels to
    input pixels that torchvision uses, or startpoints and endpoints ((4, 2) or (B, 4, 2) corners)
    to compute them from (perspective_coefficients). One projective warp_affine launch for the
    batch, with torchvision's sampling positions (to float32 rounding: nearest may pick the other
    pixel where a position sits on a tie), fill blending (fill None: zeros outside) and rounding."""
    if is_target(images):
        return on_target("perspective", images, startpoints, endpoints, interpolation, fill, coefficients)
    op = "perspective"
    x, single = as_batch(images, op)
    mode = ("nearest", "bilinear")[interpolation_code(interpolation, op, ("nearest", "bilinear"))]
    b, c = x.shape[0], x.shape[1]
    if coefficients is None:
        if startpoints is None or endpoints is None:
            raise ValueError(f"torchaug.{op}: give coefficients, or startpoints and endpoints")
        coefficients = perspective_coefficients(startpoints, endpoints)
    elif startpoints is not None or endpoints is not None:
        raise ValueError(f"torchaug.{op}: give coefficients or startpoints and endpoints, not both")
    coeffs = coefficients if isinstance(coefficients, torch.Tensor) else torch.tensor(coefficients, dtype=torch.float64)
    check_tensor(coeffs, "coefficients", op)
    if not coeffs.is_floating_point():
        coeffs = coeffs.to(torch.float32)
    if coeffs.dim() == 1:
        coeffs = coeffs.unsqueeze(0)
    if coeffs.dim() != 2 or coeffs.shape[1] != 8 or coeffs.shape[0] not in (1, b):
        raise ValueError(f"torchaug.{op}: coefficients must have shape (8,), (1, 8) or (B, 8) with B={b}, "
                         f"got {tuple(coeffs.shape)}")
    _check_real(coeffs, torch.float32, "coefficients", op)
    fill_rows = None if fill is None else fill_tensor(fill, b, c, x.device, op)
    return unbatch(_perspective(x, coeffs.expand(b, 8), mode, fill_rows), single)


def perspective_coefficients(startpoints, endpoints) -> torch.Tensor:
    """torchvision's _get_perspective_coeffs for a batch: the (B, 8) float32 coefficients of the
    homography that maps endpoints to startpoints (output pixels to input pixels), solved by least
    squares in float64 as torchvision solves them; startpoints and endpoints (4, 2) or (B, 4, 2)."""
    op = "perspective_coefficients"
    start = torch.as_tensor(startpoints, dtype=torch.float64).cpu()
    end = torch.as_tensor(endpoints, dtype=torch.float64).cpu()
    for name, t in (("startpoints", start), ("endpoints", end)):
        if t.shape[-2:] != (4, 2) or t.dim() not in (2, 3):
            raise ValueError(f"torchaug.{op}: {name} must be 4 (x, y) corners, shape (4, 2) or (B, 4, 2), got {tuple(t.shape)}")
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"torchaug.{op}: {name} must be finite")
    start, end = torch.broadcast_tensors(start.reshape(-1, 4, 2), end.reshape(-1, 4, 2))
    return _solve_perspective(start.contiguous(), end.contiguous())


def _solve_perspective(start: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
    """(n, 8) float32 coefficients from float64 corners start, end (n, 4, 2), on their device.
    TorchScript-compatible (the scripted RandomPerspective draws through it)."""
    n = start.shape[0]
    x1, y1 = end[..., 0], end[..., 1]  # (n, 4)
    x2, y2 = start[..., 0], start[..., 1]
    one, zero = torch.ones_like(x1), torch.zeros_like(x1)
    rows_x = torch.stack([x1, y1, one, zero, zero, zero, -x2 * x1, -x2 * y1], -1)
    rows_y = torch.stack([zero, zero, zero, x1, y1, one, -y2 * x1, -y2 * y1], -1)
    a = torch.stack([rows_x, rows_y], 2).reshape(n, 8, 8)
    return torch.linalg.lstsq(a, start.reshape(n, 8, 1), driver="gels").solution.reshape(n, 8).to(torch.float32)


def _perspective(x: torch.Tensor, coeffs: torch.Tensor, mode: str, fill_rows: Optional[torch.Tensor]) -> torch.Tensor:
    """perspective of a (B, C, H, W) batch, coeffs (B, 8), as torchvision samples it: output pixel
    (x, y) reads the input at H(x + 0.5, y + 0.5) - 0.5 for the homography H of the coefficients
    (its grid's pixel centres, and grid_sample's), one projective warp_affine launch with the
    shifts folded into the matrices. TorchScript-compatible (the scripted RandomPerspective calls it)."""
    b, h, w = x.shape[0], x.shape[2], x.shape[3]
    c = coeffs.to(device=x.device, dtype=torch.float64)
    m = torch.cat([c, torch.ones(c.shape[0], 1, dtype=torch.float64, device=x.device)], 1).view(-1, 3, 3)
    m[:, :, 2] += 0.5 * (m[:, :, 0] + m[:, :, 1])  # H @ (x + 0.5, y + 0.5, 1)
    m[:, :2, :] -= 0.5 * m[:, 2:, :]  # (u / w - 0.5, v / w - 0.5) = ((u - 0.5 w) / w, (v - 0.5 w) / w)
    m = m.to(_matrix_dtype(x)).expand(b, 3, 3)
    if not m.requires_grad:
        m = m.contiguous()
    return torch.ops.torchaug.warp_affine(x, m, [h, w], 0 if mode == "nearest" else 1, fill_rows)


def perspective_inverse(coeffs: torch.Tensor) -> torch.Tensor:
    """(B, 3, 3) float64: the map from input pixels to output pixels of coefficients (B, 8)
    (torchvision's inverse for boxes and keypoints, normalised so that its last entry is 1)."""
    c = coeffs.to(torch.float64)
    c0, c1, c2, c3, c4, c5, c6, c7 = c.unbind(1)
    denom = c0 * c4 - c1 * c3
    inv = torch.stack([c4 - c5 * c7, -c1 + c2 * c7, c1 * c5 - c2 * c4,
                       -c3 + c5 * c6, c0 - c2 * c6, -c0 * c5 + c2 * c3,
                       -c4 * c6 + c3 * c7, -c0 * c7 + c1 * c6], 1) / denom.unsqueeze(1)
    return torch.cat([inv, torch.ones_like(denom).unsqueeze(1)], 1).view(-1, 3, 3)


def _identity_grid(h: int, w: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    # torchvision's _create_identity_grid: pixel centres in grid_sample's [-1, 1] coordinates, (1, H, W, 2)
    grid = torch.empty(1, h, w, 2, device=device, dtype=dtype)
    grid[..., 0].copy_(torch.linspace((-w + 1) / w, (w - 1) / w, w, device=device, dtype=dtype))
    grid[..., 1].copy_(torch.linspace((-h + 1) / h, (h - 1) / h, h, device=device, dtype=dtype).unsqueeze_(-1))
    return grid


# ---- flips ----------------------------------------------------------------------------------

def flip(images, horizontal=False, vertical=False) -> torch.Tensor:
    """Per-sample flips: horizontal, vertical are bools or (B,) bool tensors."""
    x, single = as_batch(images, "flip")
    b = x.shape[0]
    h = per_sample(horizontal, b, x.device, torch.bool, "horizontal", "flip")
    v = per_sample(vertical, b, x.device, torch.bool, "vertical", "flip")
    return unbatch(_ops_ns.flip(x, h, v), single)


def horizontal_flip(images) -> torch.Tensor:
    if is_target(images):
        return on_target("horizontal_flip", images)
    return flip(images, True, False)


def vertical_flip(images) -> torch.Tensor:
    if is_target(images):
        return on_target("vertical_flip", images)
    return flip(images, False, True)


# ---- affine ---------------------------------------------------------------------------------

def warp_affine(images, matrices, out_size=None, interpolation=InterpolationMode.BILINEAR, fill=None) -> torch.Tensor:
    """Inverse-mapped affine warp: output pixel (x, y) samples the input at matrices[b] @ (x, y, 1)
    (pixel centres at integer coordinates). matrices: (B, 2, 3) or (2, 3); or (B, 3, 3) or (3, 3), a
    projective warp (homography) that samples at (u / w, v / w) for (u, v, w) = matrices[b] @ (x, y, 1).
    fill=None pads with zeros; a number, per-channel sequence or (B, C) tensor blends as torchvision's
    affine does."""
    op = "warp_affine"
    x, single = as_batch(images, op)
    b, c = x.shape[0], x.shape[1]
    code = interpolation_code(interpolation, op, ("nearest", "bilinear"))
    if not isinstance(matrices, torch.Tensor):
        try:
            matrices = torch.as_tensor(matrices, dtype=torch.float32)
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(f"torchaug.{op}: matrices must be a (B, 2, 3) or (2, 3) tensor, got {matrices!r:.80}") from None
    if not matrices.dtype.is_floating_point or matrices.device.type == "meta":
        raise TypeError(f"torchaug.{op}: matrices must be a floating tensor with values, got {matrices.dtype} on {matrices.device}")
    if matrices.dim() == 2:
        matrices = matrices.unsqueeze(0)
    if matrices.dim() != 3 or matrices.shape[1:] not in ((2, 3), (3, 3)) or matrices.shape[0] not in (1, b):
        raise ValueError(f"torchaug.{op}: matrices must have shape (B, 2, 3), (2, 3), (B, 3, 3) or (3, 3) with B={b}, "
                         f"got {tuple(matrices.shape)}")
    mdtype = torch.float64 if x.dtype == torch.float64 or matrices.dtype == torch.float64 else torch.float32
    matrices = matrices.to(device=x.device, dtype=mdtype).expand(b, matrices.shape[1], 3)
    if not matrices.requires_grad:
        matrices = matrices.contiguous()
    size = list(x.shape[-2:]) if out_size is None else pair(out_size, "out_size", op)
    out = _ops_ns.warp_affine(x, matrices, size, code, fill_tensor(fill, b, c, x.device, op))
    return unbatch(out, single)


def affine_matrices(angle, translate, scale, shear, center, height: int, width: int, batch: int, device,
                    out_height: Optional[int] = None, out_width: Optional[int] = None,
                    snap_period: float = 0.0) -> torch.Tensor:
    """(B, 2, 3) pixel-space inverse matrices of torchvision's affine(angle, translate, scale, shear,
    center), computed per sample in float64 as torchvision's _get_inverse_affine_matrix (one launch).
    snap_period: samples whose angle is a multiple of it (degrees; 0: none) get exact 0 / +-1 entries
    (torchvision rotates those with torch.rot90)."""
    oh = height if out_height is None else out_height
    ow = width if out_width is None else out_width
    return _centred_inverse(angle, translate, scale, shear, center, height, width, batch, device, snap_period,
                            [height, width, oh, ow])


def _matrix_dtype(images: torch.Tensor) -> torch.dtype:
    """The dtype of warp_affine's sampling matrices for these images (float64 images sample in
    float64). TorchScript-compatible."""
    return torch.float64 if images.dtype == torch.float64 else torch.float32


def _centred_inverse(angle, translate, scale, shear, center, height: int, width: int, batch: int, device,
                     snap_period: float = 0.0, pixel_sizes: Optional[List[int]] = None) -> torch.Tensor:
    """(B, 2, 3) torchvision's _get_inverse_affine_matrix per sample: the inverse map in coordinates
    centred on the image (the theta its grid and _compute_affine_output_size use), or with
    pixel_sizes [H, W, OH, OW] warp_affine's pixel-index matrices (_inverse_theta)."""
    op = "affine"
    f64 = torch.float64
    angle = per_sample(angle, batch, device, f64, "angle", op)
    if isinstance(scale, numbers.Real) and not isinstance(scale, bool) and not scale > 0:
        raise ValueError(f"torchaug.{op}: scale must be positive, got {scale}")
    scale = per_sample(scale, batch, device, f64, "scale", op)
    if scale.device.type == "cpu" and not torch.compiler.is_compiling() and scale.numel() and not bool((scale > 0).all()):
        raise ValueError(f"torchaug.{op}: scale must be positive, got {scale.tolist() if scale.numel() <= 8 else scale}")
    translate = per_sample_rows(translate, batch, 2, device, f64, "translate", op)
    if isinstance(shear, numbers.Number):
        shear = [float(shear), 0.0]
    shear = per_sample_rows(shear, batch, 2, device, f64, "shear", op)
    return _inverse_theta(angle, translate, scale, shear, _center_offsets(center, batch, height, width, device, op),
                          snap_period, pixel_sizes)


def _center_offsets(center, batch: int, height: int, width: int, device, op: str) -> torch.Tensor:
    """(B, 2) float64 offsets of a user's centre [x, y] (a pair, or per sample (B, 2)) from the image
    centre; None: the image centre, one (1, 2) row of zeros for every sample."""
    if center is None:
        return _constant_row((0.0, 0.0), device, torch.float64)
    c = per_sample_rows(center, batch, 2, device, torch.float64, "center", op)
    return c - torch.tensor([width * 0.5, height * 0.5], dtype=torch.float64, device=device)


def _inverse_theta(angle: torch.Tensor, translate: torch.Tensor, scale: torch.Tensor, shear: torch.Tensor,
                   c: torch.Tensor, snap_period: float = 0.0, pixel_sizes: Optional[List[int]] = None) -> torch.Tensor:
    """The arithmetic of _centred_inverse on float64 tensors, one launch for the batch: angle, scale
    (B,) or (1,); translate, shear (B, 2) or (1, 2); c (B, 2) or (1, 2) the centre's offset from the
    image centre; snap_period and pixel_sizes as _centred_inverse's. TorchScript-compatible."""
    return torch.ops.torchaug._affine_matrices(angle, translate, scale, shear, c, snap_period, pixel_sizes)


def _center_rows(center: Optional[List[float]], batch: int, height: int, width: int, device: torch.device) -> torch.Tensor:
    """(B, 2) float64 offsets of a centre [x, y] (None: the image centre) from the image centre, as
    _centred_inverse computes them. TorchScript-compatible (the scripted transforms use it)."""
    if center is None:
        return torch.zeros(batch, 2, dtype=torch.float64, device=device)
    # (torch.full, not torch.tensor: TorchScript's torch.tensor(List[float]) rounds through float32)
    cx = torch.full([batch], float(center[0]) - width * 0.5, dtype=torch.float64, device=device)
    cy = torch.full([batch], float(center[1]) - height * 0.5, dtype=torch.float64, device=device)
    return torch.stack([cx, cy], 1)


def _rotation_matrices(angle: torch.Tensor, c: torch.Tensor, has_center: bool, expand: bool, height: int, width: int,
                       out_height: int, out_width: int) -> torch.Tensor:
    """(B, 2, 3) pixel-space inverse matrices of torchvision's rotate by angle (B,) float64 degrees
    in [0, 360) about centre offsets c (B, 2). Rotations by 180 (and by 90 / 270 when the image is
    square or expanded) about the image centre get exact entries: torchvision uses torch.rot90 for
    them. TorchScript-compatible."""
    period = 0.0 if has_center else (90.0 if expand or height == width else 180.0)
    zeros = torch.zeros(1, 2, dtype=torch.float64, device=angle.device)
    one = torch.ones(1, dtype=torch.float64, device=angle.device)
    return _inverse_theta(-angle, zeros, one, zeros, c, period, [height, width, out_height, out_width])


def affine(images, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST, fill=None, center=None) -> torch.Tensor:
    """torchvision.transforms.v2.functional.affine with every parameter optionally per sample:
    angle, scale (B,); translate, shear (B, 2) (or torchvision's numbers and pairs)."""
    if is_target(images):
        return on_target("affine", images, angle, translate, scale, shear, interpolation, fill, center)
    x, single = as_batch(images, "affine")
    interpolation_code(interpolation, "affine", ("nearest", "bilinear"))  # named as this function's
    b, h, w = x.shape[0], x.shape[-2], x.shape[-1]
    m = affine_matrices(angle, translate, scale, shear, center, h, w, b, x.device)
    return unbatch(warp_affine(x, m.to(_matrix_dtype(x)), None, interpolation, fill), single)


def rotate(images, angle, interpolation=InterpolationMode.NEAREST, expand: bool = False, center=None, fill=None) -> torch.Tensor:
    """torchvision.transforms.v2.functional.rotate with the angle (degrees, counter-clockwise)
    optionally per sample. expand=True (the output grows to hold the whole rotated image) needs
    one angle for the batch, a number, since the output size depends on it."""
    if is_target(images):
        return on_target("rotate", images, angle, interpolation, expand, center, fill)
    op = "rotate"
    x, single = as_batch(images, op)
    interpolation_code(interpolation, op, ("nearest", "bilinear"))  # named as this function's
    b, h, w = x.shape[0], x.shape[-2], x.shape[-1]
    oh, ow = h, w
    if expand and not isinstance(angle, numbers.Real):
        raise ValueError(f"torchaug.{op}: expand=True needs one angle for the batch (a number), got {type(angle).__name__}")
    if expand:  # from the number itself: an empty batch has no angle row to read
        oh, ow = rotated_size(float(angle) % 360, None if center is None else [float(v) for v in center], h, w)
    angle = per_sample(angle, b, x.device, torch.float64, "angle", op) % 360
    m = _rotation_matrices(angle, _center_offsets(center, b, h, w, x.device, op), center is not None, expand, h, w, oh, ow)
    return unbatch(warp_affine(x, m.to(_matrix_dtype(x)), [oh, ow], interpolation, fill), single)


def rotated_size(angle: float, center: Optional[List[float]], h: int, w: int) -> List[int]:
    """[height, width] of rotate(expand=True) by angle degrees (torchvision's output size).
    TorchScript-compatible."""
    a = angle % 360
    if center is None and (a == 90.0 or a == 270.0):
        return [w, h]
    if center is not None or not (a == 0.0 or a == 180.0):
        one = torch.full([1], -a, dtype=torch.float64)
        zeros = torch.zeros(1, 2, dtype=torch.float64)
        theta = _inverse_theta(one, zeros, torch.ones(1, dtype=torch.float64), zeros, _center_rows(center, 1, h, w, torch.device("cpu")))
        ow, oh = _expanded_size(theta[0], h, w)
        return [oh, ow]
    return [h, w]


def _expanded_size(theta: torch.Tensor, h: int, w: int) -> List[int]:
    # torchvision's _compute_affine_output_size of the centred inverse matrix theta (2, 3)
    half_w, half_h = 0.5 * w, 0.5 * h
    pts = torch.tensor([[-half_w, -half_h, 1.0], [-half_w, half_h, 1.0], [half_w, half_h, 1.0], [half_w, -half_h, 1.0]])
    new_pts = torch.matmul(pts, theta.to(torch.float32).t())
    min_vals, max_vals = new_pts.aminmax(dim=0)
    halfs = torch.tensor([half_w, half_h])
    min_vals.add_(halfs)
    max_vals.add_(halfs)
    tol = 1e-4
    cmax = max_vals.mul_(1.0 / tol).trunc_().mul_(tol).ceil_()
    cmin = min_vals.mul_(1.0 / tol).trunc_().mul_(tol).floor_()
    size = cmax.sub_(cmin)
    return [int(size[0]), int(size[1])]


def _magnitude(value, images, op: str) -> torch.Tensor:
    x, _ = as_batch(images, op)
    return per_sample(value, x.shape[0], x.device, torch.float64, "magnitude", op)


def shear_x(images, magnitude, interpolation=InterpolationMode.NEAREST, fill=None) -> torch.Tensor:
    """The ShearX of torchvision's auto-augment policies, per sample: affine with shear
    [degrees(atan(magnitude)), 0] about the top-left corner (center [0, 0])."""
    m = torch.rad2deg(torch.atan(_magnitude(magnitude, images, "shear_x")))
    return affine(images, 0.0, [0.0, 0.0], 1.0, torch.stack([m, torch.zeros_like(m)], 1), interpolation, fill, [0.0, 0.0])


def shear_y(images, magnitude, interpolation=InterpolationMode.NEAREST, fill=None) -> torch.Tensor:
    """The ShearY of torchvision's auto-augment policies, per sample: shear [0, degrees(atan(magnitude))]
    about the top-left corner."""
    m = torch.rad2deg(torch.atan(_magnitude(magnitude, images, "shear_y")))
    return affine(images, 0.0, [0.0, 0.0], 1.0, torch.stack([torch.zeros_like(m), m], 1), interpolation, fill, [0.0, 0.0])


def translate_x(images, magnitude, interpolation=InterpolationMode.NEAREST, fill=None) -> torch.Tensor:
    """The TranslateX of torchvision's auto-augment policies, per sample: a shift of int(magnitude)
    pixels (truncated toward zero, as torchvision's int()) along x."""
    m = torch.trunc(_magnitude(magnitude, images, "translate_x"))
    return affine(images, 0.0, torch.stack([m, torch.zeros_like(m)], 1), 1.0, [0.0, 0.0], interpolation, fill)


def translate_y(images, magnitude, interpolation=InterpolationMode.NEAREST, fill=None) -> torch.Tensor:
    """The TranslateY of torchvision's auto-augment policies, per sample: a shift of int(magnitude)
    pixels along y."""
    m = torch.trunc(_magnitude(magnitude, images, "translate_y"))
    return affine(images, 0.0, torch.stack([torch.zeros_like(m), m], 1), 1.0, [0.0, 0.0], interpolation, fill)


# ---- pad ------------------------------------------------------------------------------------

def _parse_padding(padding) -> List[int]:
    if isinstance(padding, numbers.Integral):
        return [int(padding)] * 4
    if isinstance(padding, torch.Tensor) and padding.dim() > 1:
        raise ValueError(f"torchaug.pad: padding must be an int or a sequence of 1, 2 or 4 ints, one for the whole batch "
                         f"(the output is one tensor), got a tensor of shape {tuple(padding.shape)}")
    if not isinstance(padding, (Sequence, torch.Tensor)) or not all(
            isinstance(p, numbers.Integral) or (isinstance(p, torch.Tensor) and p.dim() == 0 and not p.is_floating_point()
                                                and not p.is_complex()) for p in padding):
        raise ValueError(f"torchaug.pad: padding must be an int or a sequence of 1, 2 or 4 ints, one for the whole batch "
                         f"(the output is one tensor), got {padding!r}")
    padding = list(padding)
    if len(padding) == 1:
        return [int(padding[0])] * 4
    if len(padding) == 2:
        return [int(padding[0]), int(padding[1]), int(padding[0]), int(padding[1])]
    if len(padding) == 4:
        return [int(p) for p in padding]
    raise ValueError(f"torchaug.pad: padding must be an int or a sequence of 1, 2 or 4 ints, got {padding!r}")


def _pad_index(size: int, before: int, after: int, mode: str, device: torch.device) -> torch.Tensor:
    i = torch.arange(-before, size + after, device=device)
    if mode == "edge":
        return i.clamp(0, size - 1)
    if mode == "reflect":
        i = torch.where(i < 0, -i, i)
        return torch.where(i > size - 1, 2 * (size - 1) - i, i)
    # symmetric
    i = torch.where(i < 0, -i - 1, i)
    return torch.where(i > size - 1, 2 * size - 1 - i, i)


def pad(images, padding, fill=0, padding_mode: str = "constant") -> torch.Tensor:
    """torchvision.transforms.v2.functional.pad: padding [left, top, right, bottom] (or 1 / 2 values),
    modes constant (fill: number, per-channel sequence or (B, C)), edge, reflect, symmetric."""
    if is_target(images):
        return on_target("pad", images, padding, fill, padding_mode)
    x, single = as_batch(images, "pad")
    p = _parse_padding(padding)
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError(f"torchaug.pad: padding_mode must be constant, edge, reflect or symmetric, got {padding_mode!r}")
    fill_rows = fill_tensor(fill if fill is not None else 0, x.shape[0], x.shape[1], x.device, "pad") if padding_mode == "constant" else None
    return unbatch(_pad(x, p, fill_rows, padding_mode), single)


def _pad(x: torch.Tensor, padding: List[int], fill: Optional[torch.Tensor], mode: str) -> torch.Tensor:
    """pad of a (B, C, H, W) batch, padding [left, top, right, bottom]; fill (B, C) for mode
    "constant" (None: zeros). TorchScript-compatible (the scripted Pad and RandomCrop call it)."""
    left, top, right, bottom = padding[0], padding[1], padding[2], padding[3]
    h, w = x.shape[-2], x.shape[-1]
    if max(abs(left), abs(top), abs(right), abs(bottom)) > 1 << 24:
        raise ValueError("torchaug.pad: padding must be at most 2^24 pixels a side, got " + str(padding))
    if h + top + bottom <= 0 or w + left + right <= 0:
        raise ValueError("torchaug.pad: padding " + str(padding) + " leaves no pixels of the " + str(h) + "x" + str(w)
                         + " image (the padded size must be positive)")
    if mode == "constant":
        # an integer shift, the fill outside
        m = torch.zeros(x.shape[0], 2, 3, dtype=_matrix_dtype(x), device=x.device)
        m[:, 0, 0] = 1.0
        m[:, 1, 1] = 1.0
        m[:, 0, 2] = float(-left)
        m[:, 1, 2] = float(-top)
        return _ops_ns.warp_affine(x, m, [h + top + bottom, w + left + right], 0, fill)
    if min(min(left, top), min(right, bottom)) < 0:
        raise ValueError("torchaug.pad: negative padding needs padding_mode='constant', got " + str(padding))
    if mode == "reflect" and (max(top, bottom) >= h or max(left, right) >= w):
        raise ValueError("torchaug.pad: reflect padding must be smaller than the image (" + str(h) + "x" + str(w) + "), got " + str(padding))
    if mode == "symmetric" and (max(top, bottom) > h or max(left, right) > w):
        raise ValueError("torchaug.pad: symmetric padding must be at most the image's size (" + str(h) + "x" + str(w) + "), got " + str(padding))
    rows = _pad_index(h, top, bottom, mode, x.device)
    cols = _pad_index(w, left, right, mode, x.device)
    out = x.index_select(-2, rows).index_select(-1, cols)
    if x.shape[1] > 1 and x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous():
        out = out.contiguous(memory_format=torch.channels_last)  # outputs keep the input's memory format
    return out


def _crop_padded(x: torch.Tensor, top: torch.Tensor, left: torch.Tensor, padding: List[int], size: List[int],
                 fill: Optional[torch.Tensor], mode: str) -> torch.Tensor:
    """RandomCrop's crop of a (B, C, H, W) batch: the size [h, w] window at (top (B,), left (B,)) of
    each image padded by padding [left, top, right, bottom] in `mode` (fill (B, C) for "constant").
    TorchScript-compatible (the scripted RandomCrop calls it)."""
    ch, cw = size[0], size[1]
    if mode == "constant":
        # a crop of the padded image is an integer shift of the original, the fill outside
        dt = _matrix_dtype(x)
        m = torch.zeros(x.shape[0], 2, 3, dtype=dt, device=x.device)
        m[:, 0, 0] = 1.0
        m[:, 1, 1] = 1.0
        m[:, 0, 2] = (left - padding[0]).to(dt)
        m[:, 1, 2] = (top - padding[1]).to(dt)
        return _ops_ns.warp_affine(x, m, [ch, cw], 0, fill)
    padded = _pad(x, padding, None, mode)
    boxes = torch.stack([top, left, torch.full_like(top, ch), torch.full_like(left, cw)], 1)
    return _ops_ns.resized_crop(padded, boxes, [ch, cw], 0, False, None, None, None, None, None)
