"""Transforms whose output size is drawn (torchvision.transforms.v2's RandomZoomOut, RandomIoUCrop,
RandomShortestSize, RandomResize and ScaleJitter). Every sample gets its own draw, so the images of
a batch come out in sizes of their own: a list of (C, H_i, W_i) tensors (a (C, H, W) image stays
one image). They take a (B, C, H, W) batch, a list of images or a RaggedImages batch, the
detection and segmentation recipes' inputs, with their targets (boxes, masks, keypoints), which
follow as torchvision's do.

The draws are made in one call per batch, on the generator's device (the CPU's without one), and
read on the host once per batch: the output sizes must be known there to allocate the outputs.
The pixel work is one op per sample (a pad, a crop view, a resize), as torchvision's per-sample
loop does it."""
import numbers
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from .. import functional as F
from ..functional._utils import InterpolationMode, interpolation_code
from . import _targets as TG
from ._geometry import _mask_fill
from ._transform import BatchInfo, Transform, check_probability


def _image_list(images, name: str) -> Tuple[List[torch.Tensor], bool]:
    """(the images as a list of (C, H, W) tensors, whether the input was one image)."""
    if isinstance(images, torch.Tensor) and images.dim() in (3, 4):
        return ([images], True) if images.dim() == 3 else (list(images.unbind(0)), False)
    if isinstance(images, (list, tuple)) and all(isinstance(t, torch.Tensor) and t.dim() == 3 for t in images):
        return list(images), False
    raise TypeError(f"torchaug.transforms.{name}: images must be a (C, H, W) or (B, C, H, W) tensor, a list of (C, H, W) "
                    f"tensors or a RaggedImages, got {type(images).__name__}")


def _host_sizes(info: BatchInfo) -> List[Tuple[int, int]]:
    return list(info.host_sizes) if info.ragged else [tuple(int(v) for v in info.uniform_size)] * info.batch


class _SizedPerSample(Transform):
    """The shared part: host draws, the per-sample loop over images and masks, and the targets'
    step (a scale and shift per sample onto a canvas per sample)."""

    _TAKES_LIST = True

    _CLAMP = True

    def _info(self, images) -> BatchInfo:
        _image_list(images, type(self).__name__)  # the error names the transform
        return BatchInfo(images)

    # the draws, on the generator's device (the CPU's without one), read on the host
    def _draw(self, *shape: int) -> torch.Tensor:
        """float32 uniforms in [0, 1) (torch.rand's numbers, as torchvision draws them)."""
        g = self.generator
        return torch.rand(*shape, generator=g, device=g.device if g is not None else "cpu").cpu()

    def _draw_int(self, low: int, high: int, *shape: int) -> torch.Tensor:
        """int64 uniforms in [low, high) (torch.randint's)."""
        g = self.generator
        return torch.randint(low, high, shape, generator=g, device=g.device if g is not None else "cpu").cpu()

    # per sample: the op on one (C, H, W) image (a (1, H, W) mask with mask=True)
    def _one(self, image: torch.Tensor, i: int, params: Dict[str, Any], mask: bool) -> torch.Tensor:
        raise NotImplementedError

    def transform(self, images, params):
        imgs, single = _image_list(images, type(self).__name__)
        out = [self._one(img, i, params, False) for i, img in enumerate(imgs)]
        return out[0] if single else out

    def _transform_masks(self, masks, idx, params, info):
        rows = masks if isinstance(masks, list) else list(masks.unbind(0))
        return [self._one(m, int(s), params, True) for m, s in zip(rows, idx.tolist())]

    # the map of each sample's plane: (sx, tx, sy, ty) per sample, its output size, whether it moves
    def _maps(self, info: BatchInfo, params) -> Tuple[torch.Tensor, List[Tuple[int, int]], Optional[torch.Tensor]]:
        raise NotImplementedError

    def _keep(self, info: BatchInfo, params) -> Optional[Callable[[torch.Tensor, torch.Tensor], torch.Tensor]]:
        return None

    def _target_steps(self, images, info, params):
        m, sizes, applies = self._maps(info, params)
        sx, tx, sy, ty = m.to(torch.float64).unbind(1)
        return [TG.Step(TG.scale_shift(sx, tx, sy, ty).to(info.device), sizes, self._CLAMP,
                        applies=None if applies is None else applies.to(info.device), keep=self._keep(info, params))]


class RandomZoomOut(_SizedPerSample):
    """torchvision.transforms.v2.RandomZoomOut: with probability p a sample is placed at a random
    spot of a canvas side_range times its size (one ratio for both sides), the rest filled with
    `fill` (a number, one per channel, or torchvision's dict per input type); masks get the fill
    when it is one number (or the dict's Mask / "others" entry), else 0. Every sample its own
    coin, ratio and spot."""

    def __init__(self, fill=0, side_range: Sequence[float] = (1.0, 4.0), p: float = 0.5,
                 generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        if not (isinstance(side_range, Sequence) and len(side_range) == 2 and 1.0 <= side_range[0] <= side_range[1]):
            raise ValueError(f"torchaug.transforms.RandomZoomOut: side_range must be (min, max) with 1 <= min <= max, got {side_range!r}")
        mask_fill = None
        if isinstance(fill, dict):  # torchvision's fill per input type: images', and masks' ("others")
            by_name = {getattr(k, "__name__", k): v for k, v in fill.items()}
            mask_fill = by_name.get("Mask", by_name.get("others", 0))
            fill = by_name.get("Image", by_name.get("Tensor", by_name.get("others", 0)))
        if fill is not None and not isinstance(fill, (numbers.Real, Sequence)) or isinstance(fill, (bool, str)):
            raise TypeError(f"torchaug.transforms.RandomZoomOut: fill must be a number, a sequence of numbers or a dict of "
                            f"them per input type, got {fill!r}")
        self.fill = 0 if fill is None else (tuple(fill) if isinstance(fill, Sequence) else fill)
        self._masks_fill = mask_fill  # the dict's entry for masks; None: from fill
        self.side_range = (float(side_range[0]), float(side_range[1]))
        self.p = check_probability(p, "RandomZoomOut")

    def make_params(self, images) -> Dict[str, Any]:
        info = self._info(images)
        b = info.batch
        applies = self._draw(b) < self.p
        r = self.side_range[0] + self._draw(b) * (self.side_range[1] - self.side_range[0])
        spot = self._draw(b, 2)
        sizes = torch.tensor(_host_sizes(info), dtype=torch.int64)
        h, w = sizes[:, 0], sizes[:, 1]
        canvas_w, canvas_h = (w * r).to(torch.int64), (h * r).to(torch.int64)
        left = ((canvas_w - w) * spot[:, 0]).to(torch.int64)
        top = ((canvas_h - h) * spot[:, 1]).to(torch.int64)
        padding = torch.stack([left, top, canvas_w - (left + w), canvas_h - (top + h)], 1)
        return {"padding": padding * applies.unsqueeze(1), "applies": applies}

    def _one(self, image, i, params, mask):
        pad = params["padding"][i].tolist()
        if not bool(params["applies"][i]):
            return image
        if mask:
            return F.pad(image, pad, _mask_fill(self.fill if self._masks_fill is None else self._masks_fill))
        return F.pad(image, pad, self.fill)

    def _maps(self, info, params):
        pad = params["padding"]
        one = torch.ones(info.batch, dtype=torch.float64)
        sizes = [(h + int(p[1]) + int(p[3]), w + int(p[0]) + int(p[2])) for (h, w), p in zip(_host_sizes(info), pad.tolist())]
        return torch.stack([one, pad[:, 0].double(), one, pad[:, 1].double()], 1), sizes, params["applies"]


class RandomIoUCrop(_SizedPerSample):
    """torchvision.transforms.v2.RandomIoUCrop (the SSD crop), a crop of its own for every sample:
    pick a minimum IoU from sampler_options (1.0 or more: leave the sample as it is), then up to
    `trials` crops of scale [min_scale, max_scale] per side and aspect ratio in [min_aspect_ratio,
    max_aspect_ratio] whose area is not empty, that hold the center of one of the sample's boxes
    and overlap one such box by at least that IoU; the first that does is the crop, else another
    option. Boxes whose centers fall outside the crop become zeros (SanitizeBoundingBoxes removes
    them). It needs the bounding boxes among the targets.

    torchvision tries options without end; here the search is batched and bounded: the samples
    try `max_rounds` options at most (chunks of 4 rounds for the whole batch, one host
    synchronisation each), and a sample none of whose rounds succeeds stays as it is, as option 1.0
    leaves it (with the default options a sample reaches 32 rounds with probability (6/7)^32 < 1%
    only when no crop of it can hold a box center)."""

    _CHUNK = 4

    def __init__(self, min_scale: float = 0.3, max_scale: float = 1.0, min_aspect_ratio: float = 0.5,
                 max_aspect_ratio: float = 2.0, sampler_options: Optional[List[float]] = None, trials: int = 40,
                 max_rounds: int = 32, generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        if not 0 <= min_scale <= max_scale:
            raise ValueError(f"torchaug.transforms.RandomIoUCrop: need 0 <= min_scale <= max_scale, got {min_scale}, {max_scale}")
        if not 0 < min_aspect_ratio <= max_aspect_ratio:
            raise ValueError(f"torchaug.transforms.RandomIoUCrop: need 0 < min_aspect_ratio <= max_aspect_ratio, got "
                             f"{min_aspect_ratio}, {max_aspect_ratio}")
        for name, v in (("trials", trials), ("max_rounds", max_rounds)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"torchaug.transforms.RandomIoUCrop: {name} must be an int >= 1, got {v!r}")
        self.min_scale, self.max_scale = float(min_scale), float(max_scale)
        self.min_aspect_ratio, self.max_aspect_ratio = float(min_aspect_ratio), float(max_aspect_ratio)
        self.options = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0] if sampler_options is None else [float(o) for o in sampler_options]
        if not self.options:
            raise ValueError("torchaug.transforms.RandomIoUCrop: sampler_options must not be empty")
        self.trials, self.max_rounds = trials, max_rounds

    _NEEDS_TARGETS = True

    @staticmethod
    def _box_rows(images, info: BatchInfo, targets) -> Tuple[torch.Tensor, torch.Tensor]:
        """The samples' bounding boxes (their box targets together) as XYXY rows on the host, copied
        from the device at once: (rows (m, 4), the sample of each row (m,) int64)."""
        single = isinstance(images, torch.Tensor) and images.dim() == 3
        _, items = TG.collect(tuple(targets), info.batch, single, "RandomIoUCrop")
        # the targets by format and dtype (one group for a detection batch): one conversion a group
        groups: Dict[Tuple[str, torch.dtype], List[TG._Item]] = {}
        for it in items:
            if it.kind == "boxes":
                groups.setdefault((it.format, it.data.dtype), []).append(it)
        if not groups:
            raise ValueError("torchaug.transforms.RandomIoUCrop: needs bounding boxes among the targets (as torchvision's)")
        rows, owners = [], []
        for (fmt, dtype), its in groups.items():
            data, owner, _ = TG._rows(its, 4, "cpu")
            rows.append(TG._to_xyxy(data.to(TG._work_dtype(dtype)), fmt))
            owners.append(owner)
        return torch.cat(rows).cpu(), torch.cat(owners)

    def make_params(self, images, *targets) -> Dict[str, Any]:
        info = self._info(images)
        b, t = info.batch, self.trials
        rows, owner = self._box_rows(images, info, targets)
        dtype = rows.dtype
        # (b, n, 4) boxes, sample by sample, and which of them are real: a row's place is its rank
        # among its sample's rows
        counts = torch.bincount(owner, minlength=b)
        n = max(1, int(counts.max()) if b else 0)
        order = torch.argsort(owner, stable=True)
        rows, owner = rows[order], owner[order]
        place = torch.arange(owner.numel()) - (torch.cumsum(counts, 0) - counts)[owner]
        padded = torch.zeros(b, n, 4, dtype=dtype)
        valid = torch.zeros(b, n, dtype=torch.bool)
        padded[owner, place] = rows
        valid[owner, place] = True
        sizes = torch.tensor(_host_sizes(info), dtype=torch.int64)
        hh, ww = sizes[:, 0].view(b, 1, 1), sizes[:, 1].view(b, 1, 1)
        options = torch.tensor(self.options, dtype=torch.float64)
        crop = torch.zeros(b, 4, dtype=torch.int64)  # top, left, height, width
        cropped = torch.zeros(b, dtype=torch.bool)
        open_ = torch.ones(b, dtype=torch.bool)
        cx = 0.5 * (padded[..., 0] + padded[..., 2])
        cy = 0.5 * (padded[..., 1] + padded[..., 3])
        area = (padded[..., 2] - padded[..., 0]) * (padded[..., 3] - padded[..., 1])
        for start in range(0, self.max_rounds, self._CHUNK):
            k = min(self._CHUNK, self.max_rounds - start)
            pick = options[self._draw_int(0, len(self.options), b, k)]  # (b, k)
            scale = self.min_scale + (self.max_scale - self.min_scale) * self._draw(b, k, t, 2)
            spot = self._draw(b, k, t, 2)
            new_w, new_h = (ww * scale[..., 0]).to(torch.int64), (hh * scale[..., 1]).to(torch.int64)
            aspect = new_w.double() / new_h.double()
            ok = (self.min_aspect_ratio <= aspect) & (aspect <= self.max_aspect_ratio)
            left, top = ((ww - new_w) * spot[..., 0]).to(torch.int64), ((hh - new_h) * spot[..., 1]).to(torch.int64)
            right, bottom = left + new_w, top + new_h
            ok &= (left != right) & (top != bottom)
            # (b, k, t, n): the boxes whose centers the crop holds, and their IoU with it
            l4, t4, r4, b4 = (v.unsqueeze(-1).to(dtype) for v in (left, top, right, bottom))
            inside = (l4 < cx[:, None, None]) & (cx[:, None, None] < r4) & (t4 < cy[:, None, None]) & (cy[:, None, None] < b4)
            inside &= valid[:, None, None]
            ok &= inside.any(-1)
            iw = (torch.minimum(r4, padded[:, None, None, :, 2]) - torch.maximum(l4, padded[:, None, None, :, 0])).clamp(min=0)
            ih = (torch.minimum(b4, padded[:, None, None, :, 3]) - torch.maximum(t4, padded[:, None, None, :, 1])).clamp(min=0)
            inter = iw * ih
            iou = inter / (area[:, None, None] + (r4 - l4) * (b4 - t4) - inter)
            best = torch.where(inside, iou, torch.full_like(iou, -1.0)).amax(-1)
            ok &= ~(best < pick.to(dtype).unsqueeze(-1))
            leave = pick >= 1.0  # (b, k): the round leaves the sample as it is
            ends = leave | ok.any(-1)
            first = torch.where(ends.any(-1), ends.to(torch.int8).argmax(-1), torch.full((b,), -1, dtype=torch.int64))
            # the samples this chunk settles: the first round that ends each, its first good trial
            i = torch.nonzero(open_ & (first >= 0)).flatten()
            j = first[i]
            open_[i] = False
            crops = ~leave[i, j]
            i, j = i[crops], j[crops]
            trial = ok[i, j].to(torch.int8).argmax(-1)
            crop[i] = torch.stack([top[i, j, trial], left[i, j, trial], new_h[i, j, trial], new_w[i, j, trial]], 1)
            cropped[i] = True
            if not bool(open_.any()):
                break
        return {"crop": crop, "cropped": cropped}

    def _one(self, image, i, params, mask):
        if not bool(params["cropped"][i]):
            return image
        top, left, h, w = params["crop"][i].tolist()
        return image[..., top:top + h, left:left + w]

    def _maps(self, info, params):
        crop, cropped = params["crop"], params["cropped"]
        one = torch.ones(info.batch, dtype=torch.float64)
        sizes = [(c[2], c[3]) if k else s for c, k, s in zip(crop.tolist(), cropped.tolist(), _host_sizes(info))]
        return torch.stack([one, -crop[:, 1].double(), one, -crop[:, 0].double()], 1), sizes, cropped

    def _keep(self, info, params):
        crop, cropped = params["crop"], params["cropped"]

        def keep(xyxy: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
            # the boxes whose centers the crop holds (torchvision's is_within_crop_area); the
            # others become zeros; samples left as they are keep every box
            c = crop.to(xyxy.device)[idx].to(xyxy.dtype)
            top, left, bottom, right = c[:, 0], c[:, 1], c[:, 0] + c[:, 2], c[:, 1] + c[:, 3]
            cx, cy = 0.5 * (xyxy[:, 0] + xyxy[:, 2]), 0.5 * (xyxy[:, 1] + xyxy[:, 3])
            inside = (left < cx) & (cx < right) & (top < cy) & (cy < bottom)
            return inside | ~cropped.to(xyxy.device)[idx]
        return keep


class _ResizeDrawn(_SizedPerSample):
    """A resize to a size drawn per sample."""

    _CLAMP = False

    def __init__(self, interpolation, antialias: bool, generator):
        super().__init__(generator)
        interpolation_code(interpolation, type(self).__name__)
        self.interpolation, self.antialias = interpolation, antialias

    def _sizes(self, info: BatchInfo) -> List[Tuple[int, int]]:
        raise NotImplementedError

    def make_params(self, images) -> Dict[str, Any]:
        return {"size": torch.tensor(self._sizes(self._info(images)), dtype=torch.int64).view(-1, 2)}

    def _one(self, image, i, params, mask):
        size = params["size"][i].tolist()
        if mask:
            return F.resize(image, size, InterpolationMode.NEAREST, antialias=False)
        return F.resize(image, size, self.interpolation, antialias=self.antialias)

    def _maps(self, info, params):
        old = torch.tensor(_host_sizes(info), dtype=torch.float64)
        new = params["size"]
        sx, sy = new[:, 1].double() / old[:, 1], new[:, 0].double() / old[:, 0]
        zero = torch.zeros_like(sx)
        return torch.stack([sx, zero, sy, zero], 1), [tuple(s) for s in new.tolist()], None


class RandomShortestSize(_ResizeDrawn):
    """torchvision.transforms.v2.RandomShortestSize: the shorter edge to one of min_size (drawn per
    sample), the longer at most max_size, the aspect ratio kept."""

    def __init__(self, min_size, max_size: Optional[int] = None, interpolation=InterpolationMode.BILINEAR,
                 antialias: bool = True, generator: Optional[torch.Generator] = None):
        super().__init__(interpolation, antialias, generator)
        sizes = [min_size] if isinstance(min_size, numbers.Integral) else list(min_size)
        if not sizes or not all(isinstance(s, numbers.Integral) and s > 0 for s in sizes):
            raise ValueError(f"torchaug.transforms.RandomShortestSize: min_size must be a positive int or a sequence of them, got {min_size!r}")
        self.min_size, self.max_size = [int(s) for s in sizes], max_size

    def _sizes(self, info):
        pick = self._draw_int(0, len(self.min_size), info.batch).tolist()
        out = []
        for (h, w), k in zip(_host_sizes(info), pick):
            r = self.min_size[k] / min(h, w)
            if self.max_size is not None:
                r = min(r, self.max_size / max(h, w))
            out.append((int(h * r), int(w * r)))
        return out


class RandomResize(_ResizeDrawn):
    """torchvision.transforms.v2.RandomResize: the shorter edge to a size drawn from [min_size,
    max_size) per sample, the aspect ratio kept."""

    def __init__(self, min_size: int, max_size: int, interpolation=InterpolationMode.BILINEAR, antialias: bool = True,
                 generator: Optional[torch.Generator] = None):
        super().__init__(interpolation, antialias, generator)
        if not (isinstance(min_size, numbers.Integral) and isinstance(max_size, numbers.Integral) and 0 < min_size < max_size):
            raise ValueError(f"torchaug.transforms.RandomResize: need ints 0 < min_size < max_size, got {min_size!r}, {max_size!r}")
        self.min_size, self.max_size = int(min_size), int(max_size)

    def _sizes(self, info):
        short = self._draw_int(self.min_size, self.max_size, info.batch).tolist()
        return [tuple(F._geometry._compute_resized_output_size(h, w, [s], None)) for (h, w), s in zip(_host_sizes(info), short)]


class ScaleJitter(_ResizeDrawn):
    """torchvision.transforms.v2.ScaleJitter (large scale jitter): resized to fit target_size times
    a scale drawn from scale_range per sample, the aspect ratio kept (torchvision's arithmetic,
    which pairs target_size[1] with the height)."""

    def __init__(self, target_size: Tuple[int, int], scale_range: Tuple[float, float] = (0.1, 2.0),
                 interpolation=InterpolationMode.BILINEAR, antialias: bool = True, generator: Optional[torch.Generator] = None):
        super().__init__(interpolation, antialias, generator)
        if not (isinstance(target_size, Sequence) and len(target_size) == 2 and all(s > 0 for s in target_size)):
            raise ValueError(f"torchaug.transforms.ScaleJitter: target_size must be (height, width) > 0, got {target_size!r}")
        if not (isinstance(scale_range, Sequence) and len(scale_range) == 2 and 0 < scale_range[0] <= scale_range[1]):
            raise ValueError(f"torchaug.transforms.ScaleJitter: scale_range must be (min, max) with 0 < min <= max, got {scale_range!r}")
        self.target_size, self.scale_range = tuple(target_size), (float(scale_range[0]), float(scale_range[1]))

    def _sizes(self, info):
        scale = self.scale_range[0] + self._draw(info.batch) * (self.scale_range[1] - self.scale_range[0])
        out = []
        for (h, w), s in zip(_host_sizes(info), scale):
            r = min(self.target_size[1] / h, self.target_size[0] / w) * s
            out.append((int(h * r), int(w * r)))
        return out
