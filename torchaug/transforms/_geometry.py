"""Geometric transforms with torchvision.transforms.v2 names and signatures; every sample of a
batch gets its own parameters."""
import numbers
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from .. import functional as F
from ..functional._utils import InterpolationMode, interpolation_code
from . import _draws as D
from . import _script as S
from . import _targets as TG
from ._transform import BatchInfo, Transform, check_probability, script_fill, setup_size

RRC_DRAWS = 22  # uniforms per sample of _random_resized_crop_boxes (csrc/kernels/geometry.h: kRrcDraws)


def _mask_fill(fill):
    """The fill a mask gets: the transform's fill when it is one number (torchvision fills masks
    with it too), else 0."""
    return fill if isinstance(fill, numbers.Real) and not isinstance(fill, bool) else 0


def _sizes(info: BatchInfo):
    """The canvas of every sample before a transform: one (H, W) tuple, or a list per sample."""
    return tuple(info.uniform_size) if not info.ragged else list(info.host_sizes)


class _CropLike(Transform):
    """Transforms whose output is a crop box of each input resized to a fixed size. Compose fuses
    such a transform with a following horizontal flip, ToDtype and Normalize into one launch. A
    ragged batch (a list of images, or a RaggedImages read in place) becomes a dense one."""

    _TAKES_LIST = True

    _TAKES_RAGGED = True

    def crop_boxes(self, images, params: Dict[str, Any]) -> Tuple[torch.Tensor, List[int], Any, bool]:
        raise NotImplementedError

    def _is_crop(self) -> bool:
        """Whether this call's output is crop_boxes' crops (Compose then fuses it); RandomCrop with a
        padding other than zeros is not."""
        return True

    def transform(self, images, params):
        return self.transform_fused(images, params)

    _CLAMPS = True  # crops clamp boxes to the crop; Resize does not clamp (torchvision)

    def _target_steps(self, images, info, params):
        boxes, size, _, _ = self.crop_boxes(images, params)
        b = boxes.to(torch.float64)
        top, left, h, w = b.unbind(1)
        sx, sy = size[1] / w, size[0] / h
        return [TG.Step(TG.scale_shift(sx, -left * sx, sy, -top * sy), (int(size[0]), int(size[1])), self._CLAMPS)]

    def _transform_masks(self, masks, idx, params, info):
        # the crop boxes of the masks' samples (computed from the images' sizes, which the masks share)
        boxes, size, _, _ = self.crop_boxes(info, params)
        return F.resized_crop_boxes(masks, boxes[idx], size, InterpolationMode.NEAREST, False, validate=False)

    def transform_fused(self, images, params, **fused):
        boxes, size, interpolation, antialias = self.crop_boxes(images, params)
        single = isinstance(images, torch.Tensor) and images.dim() == 3
        x = images.unsqueeze(0) if single else images
        out = F.resized_crop_boxes(x, boxes, size, interpolation, antialias, validate=False, **fused)
        return out[0] if single else out


class _DrawnCrop(_CropLike):
    """A crop-like transform whose windows are drawn per sample by torchaug::_random_resized_crop_boxes
    (RandomResizedCrop, RandomCrop), in _draw: a RandomHorizontalFlip drawing next from the same
    generator can have its coins drawn by the same call (Compose does that in eager mode)."""

    def make_params(self, images) -> Dict[str, Any]:
        return self._draw(images, -1.0)[0]

    def make_params_and_flips(self, images, p: float) -> Tuple[Dict[str, Any], Dict[str, Any]]:
        """make_params(images), then the coins {"flip": (B,) bool} that a RandomHorizontalFlip(p)
        drawing next from the same generator makes, in one call (_random_resized_crop_boxes_flips: the
        same numbers, one kernel on CUDA)."""
        return self._draw(images, p)

    def _draw(self, images, flip_p: float):
        """(params, None), or with flip_p >= 0 (params, {"flip": coins})."""
        raise NotImplementedError


class RandomResizedCrop(_DrawnCrop):
    """torchvision.transforms.v2.RandomResizedCrop, a different crop per sample, one launch per batch.
    Also takes a list of (C, H_i, W_i) images of different sizes and returns the (B, C, h, w) batch."""

    def __init__(
        self,
        size,
        scale: Tuple[float, float] = (0.08, 1.0),
        ratio: Tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0),
        interpolation=InterpolationMode.BILINEAR,
        antialias: bool = True,
        generator: Optional[torch.Generator] = None,
    ):
        super().__init__(generator)
        self.size = setup_size(size, "RandomResizedCrop")
        if not (isinstance(scale, Sequence) and len(scale) == 2 and 0 <= scale[0] <= scale[1]):
            raise ValueError(f"torchaug.transforms.RandomResizedCrop: scale must be (min, max) with 0 <= min <= max, got {scale!r}")
        if not (isinstance(ratio, Sequence) and len(ratio) == 2 and 0 < ratio[0] <= ratio[1]):
            raise ValueError(f"torchaug.transforms.RandomResizedCrop: ratio must be (min, max) with 0 < min <= max, got {ratio!r}")
        self.scale = (float(scale[0]), float(scale[1]))
        self.ratio = (float(ratio[0]), float(ratio[1]))
        interpolation_code(interpolation, "RandomResizedCrop")
        self.interpolation = interpolation
        self.antialias = antialias

    def _draw(self, images, flip_p: float):
        # torchvision's get_params per sample (10 attempts, then the central crop), in one launch
        # of torchaug::_random_resized_crop_boxes, which draws the (B, 22) uniforms from the generator
        # itself (torch.rand's numbers; on CUDA inside its kernel); flip_p >= 0: and then a flip's
        # coins, as bernoulli_(flip_p) draws them, in the same launch (_random_resized_crop_boxes_flips).
        # Under torch.compile the draws are torch.rand / bernoulli_ calls the compiler keeps in order
        # (compiled_draws), never the fused op.
        info = BatchInfo(images)
        if info.ragged:
            sizes, (h, w), like = info.sizes(), (0, 0), None
        else:
            sizes, (h, w), like = None, info.uniform_size, images
        if flip_p >= 0.0:
            boxes, flips = torch.ops.torchaug._random_resized_crop_boxes_flips(
                sizes, h, w, self.scale[0], self.scale[1], self.ratio[0], self.ratio[1], flip_p, info.batch, like, self.generator)
            return {"boxes": boxes}, {"flip": flips}
        rand = D.compiled_draws(info.batch, RRC_DRAWS, info.device, self.generator)
        boxes = torch.ops.torchaug._random_resized_crop_boxes(rand, sizes, h, w, self.scale[0], self.scale[1], self.ratio[0],
                                                              self.ratio[1], info.batch, like,
                                                              self.generator if rand is None else None)
        return {"boxes": boxes}, None

    def crop_boxes(self, images, params):
        return params["boxes"], self.size, self.interpolation, self.antialias

    def _scriptable(self):
        return S.ScriptCrop(0, list(self.size), interpolation_code(self.interpolation, "RandomResizedCrop"), bool(self.antialias),
                            list(self.scale), list(self.ratio), None, self.generator)


class Resize(_CropLike):
    """torchvision.transforms.v2.Resize (size [h, w], or the smaller edge with optional max_size)."""

    _CLAMPS = False

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size: Optional[int] = None, antialias: bool = True):
        super().__init__()
        if isinstance(size, numbers.Integral):
            size = [int(size)]
        if not (isinstance(size, Sequence) and len(size) in (1, 2) and all(isinstance(s, numbers.Integral) and s > 0 for s in size)):
            raise ValueError(f"torchaug.transforms.Resize: size must be a positive int or a sequence of 1 or 2 positive ints, got {size!r}")
        self.size = [int(s) for s in size]
        self.max_size = max_size
        interpolation_code(interpolation, "Resize")
        self.interpolation = interpolation
        self.antialias = antialias

    def crop_boxes(self, images, params):
        info = BatchInfo(images)
        if info.ragged:
            if len(self.size) != 2:
                raise ValueError("torchaug.transforms.Resize: a list of images of different sizes needs size=[height, width]")
            out_size = self.size
            boxes = torch.tensor([[0, 0, h, w] for h, w in info.host_sizes], dtype=torch.int64).to(info.device, non_blocking=True)
        else:
            out_size = F._geometry._compute_resized_output_size(*info.uniform_size, self.size, self.max_size)
            boxes = F._utils._constant_row((0, 0) + tuple(info.uniform_size), torch.device(info.device), torch.int64).expand(info.batch, 4)
        return boxes, out_size, self.interpolation, self.antialias

    def _scriptable(self):
        return S.ScriptCrop(1, list(self.size), interpolation_code(self.interpolation, "Resize"), bool(self.antialias),
                            [], [], self.max_size)


class CenterCrop(_CropLike):
    """torchvision.transforms.v2.CenterCrop (zero padding where the image is smaller than the crop)."""

    def __init__(self, size):
        super().__init__()
        self.size = setup_size(size, "CenterCrop")

    def crop_boxes(self, images, params):
        info = BatchInfo(images)
        ch, cw = self.size
        box = F._geometry._center_crop_box
        if info.ragged:
            boxes = torch.tensor([box(h, w, ch, cw) for h, w in info.host_sizes], dtype=torch.int64).to(info.device, non_blocking=True)
        else:
            row = tuple(box(*info.uniform_size, ch, cw))
            boxes = F._utils._constant_row(row, torch.device(info.device), torch.int64).expand(info.batch, 4)
        return boxes, self.size, InterpolationMode.NEAREST, False

    def _scriptable(self):
        return S.ScriptCrop(2, list(self.size), 0, False, [], [], None)


@F._utils.wide_integers
def _random_crop(images, top, left, padding, size, fill, padding_mode):
    x, single = F._utils.as_batch(images, "RandomCrop")
    fill_rows = F._utils.fill_tensor(fill if fill is not None else 0, x.shape[0], x.shape[1], x.device, "RandomCrop") \
        if padding_mode == "constant" else None
    out = F._geometry._crop_padded(x, top, left, padding, size, fill_rows, padding_mode)
    return out[0] if single else out


class _RandomFlip(Transform):
    """A flip decided per sample. A list of images of different sizes (the detection recipes') is
    flipped image by image with the batch's coins (a flip keeps each image's size), instead of one
    group per size."""

    _TAKES_LIST = True

    def __init__(self, p: float = 0.5, generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.p = check_probability(p, type(self).__name__)

    def make_params(self, images) -> Dict[str, Any]:
        info = BatchInfo(images)
        return {"flip": self._bernoulli((info.batch,), self.p, info.device)}


    _HORIZONTAL = True

    def _target_steps(self, images, info, params):
        flip = params["flip"]
        box, point = TG.flip_maps(flip if self._HORIZONTAL else None, None if self._HORIZONTAL else flip,
                                  info.sizes().to(torch.float64))
        return [TG.Step(box, _sizes(info), clamp=False, point_m=point)]

    def _transform_masks(self, masks, idx, params, info):
        f = params["flip"][idx]
        if isinstance(masks, list):
            return [self._flip(m, f[k:k + 1]) for k, m in enumerate(masks)]
        return self._flip(masks, f)

    def _flip(self, x, f):
        return F.flip(x, f, False) if self._HORIZONTAL else F.flip(x, False, f)

    def transform(self, images, params):
        f = params["flip"]
        if isinstance(images, (list, tuple)):
            return [self._flip(img.unsqueeze(0), f[i:i + 1])[0] for i, img in enumerate(images)]
        return self._flip(images, f)


class RandomHorizontalFlip(_RandomFlip):
    """torchvision.transforms.v2.RandomHorizontalFlip, decided per sample."""

    def _scriptable(self):
        return S.ScriptFlip(True, self.p, self.generator)


class RandomVerticalFlip(_RandomFlip):
    """torchvision.transforms.v2.RandomVerticalFlip, decided per sample."""

    _HORIZONTAL = False

    def _scriptable(self):
        return S.ScriptFlip(False, self.p, self.generator)


def _range(value, name: str, center: float = 0.0, lower: Optional[float] = None) -> Tuple[float, float]:
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError(f"torchaug.transforms.RandomAffine: {name} must be non-negative when a single number, got {value}")
        return (center - float(value), center + float(value))
    if isinstance(value, Sequence) and len(value) == 2 and value[0] <= value[1]:
        return (float(value[0]), float(value[1]))
    raise ValueError(f"torchaug.transforms.RandomAffine: {name} must be a number or a (min, max) pair, got {value!r}")


class RandomAffine(Transform):
    """torchvision.transforms.v2.RandomAffine with an angle, translation, scale and shear per sample
    (torchvision's get_params per sample, in one torchaug::_random_affine_params launch)."""

    def __init__(
        self,
        degrees,
        translate: Optional[Sequence[float]] = None,
        scale: Optional[Sequence[float]] = None,
        shear=None,
        interpolation=InterpolationMode.NEAREST,
        fill=0,
        center: Optional[List[float]] = None,
        generator: Optional[torch.Generator] = None,
    ):
        super().__init__(generator)
        self.degrees = _range(degrees, "degrees")
        if translate is not None:
            if not (isinstance(translate, Sequence) and len(translate) == 2 and all(0.0 <= t <= 1.0 for t in translate)):
                raise ValueError(f"torchaug.transforms.RandomAffine: translate must be two fractions in [0, 1], got {translate!r}")
        self.translate = translate
        if scale is not None:
            if not (isinstance(scale, Sequence) and len(scale) == 2 and 0 < scale[0] <= scale[1]):
                raise ValueError(f"torchaug.transforms.RandomAffine: scale must be (min, max) with 0 < min <= max, got {scale!r}")
        self.scale = scale
        if shear is None:
            self.shear = None
        elif isinstance(shear, numbers.Number) or len(shear) == 2:
            self.shear = _range(shear, "shear")
        elif len(shear) == 4:
            self.shear = _range(shear[:2], "shear") + _range(shear[2:], "shear")
        else:
            raise ValueError(f"torchaug.transforms.RandomAffine: shear must be a number or a sequence of 2 or 4 numbers, got {shear!r}")
        interpolation_code(interpolation, "RandomAffine", ("nearest", "bilinear"))
        self.interpolation = interpolation
        self.fill = fill
        self.center = center

    def make_params(self, images) -> Dict[str, Any]:
        info = BatchInfo(images)
        sizes, (h, w) = (info.sizes(), (0, 0)) if info.ragged else (None, info.uniform_size)
        rand = D.compiled_draws(info.batch, D.AFFINE_DRAWS, info.device, self.generator)
        return D.affine_params(info.batch, h, w, sizes, [float(d) for d in self.degrees],
                               None if self.translate is None else [float(t) for t in self.translate],
                               None if self.scale is None else [float(v) for v in self.scale],
                               None if self.shear is None else [float(v) for v in self.shear], info.like, self.generator, rand)

    def _scriptable(self):
        return S.ScriptAffine(list(self.degrees), None if self.translate is None else [float(t) for t in self.translate],
                              None if self.scale is None else [float(v) for v in self.scale],
                              None if self.shear is None else list(self.shear),
                              interpolation_code(self.interpolation, "RandomAffine", ("nearest", "bilinear")),
                              script_fill(self.fill, "RandomAffine"), _script_center(self.center), self.generator)

    def transform(self, images, params):
        return F.affine(images, params["angle"], params["translate"], params["scale"], params["shear"],
                        self.interpolation, self.fill, self.center)

    def _target_steps(self, images, info, params):
        center = _box_center(self.center, info)
        m = TG.forward_affine(params["angle"].double(), params["translate"].double(), params["scale"].double(),
                              params["shear"].double(), center)
        return [TG.Step(m, _sizes(info))]

    def _transform_masks(self, masks, idx, params, info):
        return F.affine(masks, params["angle"][idx], params["translate"][idx], params["scale"][idx], params["shear"][idx],
                        InterpolationMode.NEAREST, _mask_fill(self.fill), self.center)


def _script_center(center) -> Optional[List[float]]:
    return None if center is None else [float(center[0]), float(center[1])]


def _box_center(center, info: BatchInfo) -> torch.Tensor:
    """(B, 2) float64 the centre torchvision's box and keypoint transforms rotate about: the given
    one, else (W / 2, H / 2) of each sample."""
    if center is not None:
        return torch.tensor([float(center[0]), float(center[1])], dtype=torch.float64, device=info.device).expand(info.batch, 2)
    return info.sizes().to(torch.float64).flip(1) * 0.5


class Pad(Transform):
    """torchvision.transforms.v2.Pad."""

    def __init__(self, padding, fill=0, padding_mode: str = "constant"):
        super().__init__()
        F._geometry._parse_padding(padding)
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError(f"torchaug.transforms.Pad: padding_mode must be constant, edge, reflect or symmetric, got {padding_mode!r}")
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def transform(self, images, params):
        return F.pad(images, self.padding, self.fill, self.padding_mode)

    def _target_steps(self, images, info, params):
        left, top, right, bottom = F._geometry._parse_padding(self.padding)
        one = torch.ones(info.batch, dtype=torch.float64, device=info.device)
        sizes = _sizes(info)
        grow = (lambda h, w: (h + top + bottom, w + left + right))
        out = grow(*sizes) if isinstance(sizes, tuple) else [grow(h, w) for h, w in sizes]
        refuse = _no_boxes_with(self.padding_mode, "Pad") if self.padding_mode != "constant" else None
        return [TG.Step(TG.scale_shift(one, one * left, one, one * top), out, refuse=refuse)]

    def _transform_masks(self, masks, idx, params, info):
        return F.pad(masks, self.padding, _mask_fill(self.fill), self.padding_mode)

    def _scriptable(self):
        return S.ScriptPad(F._geometry._parse_padding(self.padding), script_fill(0 if self.fill is None else self.fill, "Pad"),
                           self.padding_mode)


def _no_boxes_with(padding_mode: str, name: str) -> str:
    """The error boxes and keypoints get from a non-constant padding (masks are padded in every mode)."""
    return (f"torchaug.transforms.{name}: padding_mode {padding_mode!r} cannot move bounding boxes or keypoints "
            "(torchvision supports only 'constant' for them)")


def _is_zero(fill) -> bool:
    """fill is None (0), the number 0 or a sequence of zeros: what a crop box reaching outside the
    image reads."""
    if fill is None:
        return True
    if isinstance(fill, numbers.Real) and not isinstance(fill, bool):
        return fill == 0
    return isinstance(fill, (list, tuple)) and len(fill) > 0 and all(
        isinstance(v, numbers.Real) and not isinstance(v, bool) and v == 0 for v in fill)


class RandomCrop(_DrawnCrop):
    """torchvision.transforms.v2.RandomCrop, a different offset per sample.

    Where the padding is zeros (padding_mode "constant" with fill 0, torchvision's default, or no
    padding at all) the crop is a box of the image that may reach outside it, which resized_crop
    reads as 0: one launch, which Compose fuses with a following flip, ToDtype and Normalize as it
    does the other crops (CIFAR's RandomCrop(32, padding=4) + flip + normalize is one pass). Other
    fills and modes pad, then crop. A list of images of different sizes goes size by size."""

    _TAKES_LIST = False
    _TAKES_RAGGED = False

    def __init__(self, size, padding=None, pad_if_needed: bool = False, fill=0, padding_mode: str = "constant",
                 generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.size = setup_size(size, "RandomCrop")
        self.padding = F._geometry._parse_padding(padding) if padding is not None else [0, 0, 0, 0]
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError(f"torchaug.transforms.RandomCrop: padding_mode must be constant, edge, reflect or symmetric, got {padding_mode!r}")
        self.pad_if_needed, self.fill, self.padding_mode = pad_if_needed, fill, padding_mode

    def _is_crop(self) -> bool:
        # read on every call, not cached: fill and padding_mode are public attributes
        return (self.padding_mode == "constant" and _is_zero(self.fill)) or (not self.pad_if_needed and not any(self.padding))

    def crop_boxes(self, images, params):
        left, top = params["padding"][0], params["padding"][1]
        ch, cw = self.size
        t, l = params["top"], params["left"]
        drawn = params.get("boxes")
        if drawn is not None and t._base is drawn and l._base is drawn:
            boxes = drawn  # the draw's windows, whose columns top and left still are (not replaced by the caller)
        else:
            boxes = torch.cat([t.unsqueeze(1), l.unsqueeze(1),
                               F._utils._constant_row((ch, cw), t.device, torch.int64).expand(t.shape[0], 2)], 1)
        if left or top:  # the padded image's coordinates to the image's
            boxes = boxes - F._utils._constant_row((top, left, 0, 0), t.device, torch.int64)
        return boxes, [ch, cw], InterpolationMode.NEAREST, False

    def _draw(self, images, flip_p: float):
        # the windows of random_crop_offsets, with a flip's coins from the same launch where flip_p >= 0
        info = BatchInfo(images)
        if info.ragged:
            raise ValueError("torchaug.transforms.RandomCrop: takes a (B, C, H, W) batch, not a list of images")
        h, w = info.uniform_size
        padding = D.random_crop_padding(self.padding, self.size, self.pad_if_needed, h, w)
        rand = D.compiled_draws(info.batch, RRC_DRAWS, info.device, self.generator) if flip_p < 0 else None
        params: Dict[str, Any] = D.random_crop_offsets(info.batch, h, w, padding, self.size, info.like, self.generator, rand,
                                                       flip_p)
        params["padding"] = padding
        flips = params.pop("flip", None)
        return params, None if flips is None else {"flip": flips}

    def _scriptable(self):
        return S.ScriptRandomCrop(list(self.size), list(self.padding), bool(self.pad_if_needed),
                                  script_fill(0 if self.fill is None else self.fill, "RandomCrop"), self.padding_mode, self.generator)

    def transform(self, images, params):
        if self._is_crop():
            return self.transform_fused(images, params)
        return self._crop(images, params, self.fill)

    def _crop(self, images, params, fill):
        return _random_crop(images, params["top"], params["left"], list(params["padding"]), list(self.size), fill,
                            self.padding_mode)

    def _target_steps(self, images, info, params):
        left, top, right, bottom = params["padding"]
        refuse = _no_boxes_with(self.padding_mode, "RandomCrop") if self.padding_mode != "constant" and any(params["padding"]) else None
        one = torch.ones(info.batch, dtype=torch.float64, device=info.device)
        tx = left - params["left"].to(torch.float64)
        ty = top - params["top"].to(torch.float64)
        return [TG.Step(TG.scale_shift(one, tx, one, ty), (self.size[0], self.size[1]), refuse=refuse)]

    def _transform_masks(self, masks, idx, params, info):
        p = {"top": params["top"][idx], "left": params["left"][idx], "padding": params["padding"]}
        return self._crop(masks, p, _mask_fill(self.fill))


class FiveCrop(Transform):
    """torchvision.transforms.v2.FiveCrop(size): the tuple (top-left, top-right, bottom-left,
    bottom-right, centre) of crops of every image, views of the input. Targets pass through, with
    torchvision's warning (a crop of the boxes per output is not what the five crops return)."""

    def __init__(self, size):
        super().__init__()
        self.size = setup_size(size, type(self).__name__)

    def transform(self, images, params):
        return F.five_crop(images, self.size)

    def transform_targets(self, images, targets, params):
        warnings.warn(f"torchaug.transforms.{type(self).__name__}() passes its targets through unchanged (as torchvision's does)")
        return targets

    def _scriptable(self):
        return S.ScriptMultiCrop(self.size, False, False)


class TenCrop(FiveCrop):
    """torchvision.transforms.v2.TenCrop(size, vertical_flip): FiveCrop of the images, then of the
    images flipped horizontally (vertically with vertical_flip)."""

    def __init__(self, size, vertical_flip: bool = False):
        super().__init__(size)
        self.vertical_flip = bool(vertical_flip)

    def transform(self, images, params):
        return F.ten_crop(images, self.size, self.vertical_flip)

    def _scriptable(self):
        return S.ScriptMultiCrop(self.size, True, self.vertical_flip)


def _pair_of(value, name: str, where: str) -> Tuple[float, float]:
    """torchvision's _setup_number_or_seq: a number for both axes, or one per axis (x, y)."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        value = [float(value)] * 2
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) not in (1, 2) \
            or not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in value):
        raise TypeError(f"torchaug.transforms.{where}: {name} should be a number or a sequence of 1 or 2 numbers, got {value!r}")
    pair = (float(value[0]), float(value[-1]))
    if min(pair) < 0:
        raise ValueError(f"torchaug.transforms.{where}: {name} must be non-negative, got {list(pair)}")
    return pair


class ElasticTransform(Transform):
    """torchvision.transforms.v2.ElasticTransform(alpha, sigma, interpolation, fill) with a
    displacement field per sample, drawn on the images' device as torchvision draws it (uniform
    noise in [-1, 1], gaussian-blurred with sigma, scaled by alpha / width (x) and alpha / height
    (y)); the warp is one grid_sample for the batch (functional.elastic). Boxes, masks and keypoints
    follow as torchvision's elastic moves them (boxes and keypoints through its approximate inverse
    of the field)."""

    def __init__(self, alpha=50.0, sigma=5.0, interpolation=InterpolationMode.BILINEAR, fill=0,
                 generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.alpha = _pair_of(alpha, "alpha", "ElasticTransform")
        self.sigma = _pair_of(sigma, "sigma", "ElasticTransform")
        interpolation_code(interpolation, "ElasticTransform", ("nearest", "bilinear"))
        self.interpolation, self.fill = interpolation, fill
        for s in self.sigma:
            if s > 0 and D.odd_kernel(s) > 65:
                raise ValueError(f"torchaug.transforms.ElasticTransform: sigma must be at most 8 (a blur window of 65), got {list(self.sigma)}")

    def make_params(self, images) -> Dict[str, Any]:
        info = BatchInfo(images)
        if info.ragged:
            raise ValueError("torchaug.transforms.ElasticTransform: images of different sizes need a displacement field each; "
                             "pass a (B, C, H, W) batch")
        h, w = info.uniform_size
        return {"displacement": D.elastic_displacement(info.batch, h, w, list(self.alpha), list(self.sigma),
                                                       torch.device(info.device), *self._gen())}

    def transform(self, images, params):
        return F.elastic(images, params["displacement"], self.interpolation, self.fill)

    def _scriptable(self):
        return S.ScriptElastic(list(self.alpha), list(self.sigma), interpolation_code(self.interpolation, "ElasticTransform",
                               ("nearest", "bilinear")), script_fill(self.fill, "ElasticTransform"), self.generator)

    def _target_steps(self, images, info, params):
        h, w = info.uniform_size
        disp = params["displacement"]

        def move(points: torch.Tensor, samples: torch.Tensor, box_corners: bool) -> torch.Tensor:
            # torchvision's elastic_bounding_boxes / elastic_keypoints: the field's approximate
            # inverse (identity - displacement) read at the point's pixel (box corners rounded up,
            # keypoints truncated, both clamped into the image), back to pixel coordinates
            dtype = points.dtype
            index = (points.ceil() if box_corners else points).to(torch.long)
            ix, iy = index[:, 0].clamp(0, w - 1), index[:, 1].clamp(0, h - 1)
            rows = samples if disp.shape[0] > 1 else torch.zeros_like(samples)
            identity = F._geometry._identity_grid(h, w, points.device, dtype)[0, iy, ix]
            inv = identity - disp.to(points.device)[rows, iy, ix].to(dtype)  # read at the points only
            t_size = torch.tensor([w, h], device=points.device, dtype=dtype)
            return inv.add(1).mul(0.5 * t_size).sub(0.5)
        return [TG.Step(None, (h, w), point_fn=move)]

    def _transform_masks(self, masks, idx, params, info):
        d = params["displacement"]
        return F.elastic(masks, d[idx] if d.shape[0] > 1 else d, InterpolationMode.NEAREST, _mask_fill(self.fill))


class RandomPerspective(Transform):
    """torchvision.transforms.v2.RandomPerspective: with probability p a sample's corners move
    inward by up to distortion_scale of its half sides, each sample its own coin and corners
    (torchvision's ranges; coefficients and coin in one torchaug::_perspective_params launch); the
    warp is one projective warp_affine launch for the batch (functional.perspective). Boxes, masks
    and keypoints follow as torchvision moves them."""

    def __init__(self, distortion_scale: float = 0.5, p: float = 0.5, interpolation=InterpolationMode.BILINEAR, fill=0,
                 generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        if not isinstance(distortion_scale, numbers.Real) or not 0 <= distortion_scale <= 1:
            raise ValueError(f"torchaug.transforms.RandomPerspective: distortion_scale must be in [0, 1], got {distortion_scale!r}")
        self.distortion_scale = float(distortion_scale)
        self.p = check_probability(p, "RandomPerspective")
        interpolation_code(interpolation, "RandomPerspective", ("nearest", "bilinear"))
        self.interpolation, self.fill = interpolation, fill

    def make_params(self, images) -> Dict[str, Any]:
        info = BatchInfo(images)
        h, w = info.uniform_size
        rand = D.compiled_draws(info.batch, D.PERSPECTIVE_DRAWS, info.device, self.generator)
        return D.perspective_params(info.batch, h, w, self.distortion_scale, self.p, info.like, self.generator, rand)

    def _scriptable(self):
        return S.ScriptPerspective(self.distortion_scale, self.p, interpolation_code(self.interpolation, "RandomPerspective",
                                   ("nearest", "bilinear")), script_fill(self.fill, "RandomPerspective"), self.generator)

    def transform(self, images, params):
        out = F.perspective(images, interpolation=self.interpolation, fill=self.fill, coefficients=params["coefficients"])
        a = params["applies"]
        return F._utils.where_images(a.view(-1, 1, 1, 1)[0] if images.dim() == 3 else a.view(-1, 1, 1, 1), out, images)

    def _target_steps(self, images, info, params):
        m = F._geometry.perspective_inverse(params["coefficients"])
        return [TG.Step(m, _sizes(info), applies=params["applies"])]

    def _transform_masks(self, masks, idx, params, info):
        out = F.perspective(masks, interpolation=InterpolationMode.NEAREST, fill=_mask_fill(self.fill),
                            coefficients=params["coefficients"][idx])
        return torch.where(params["applies"][idx].view(-1, 1, 1, 1), out, masks)
