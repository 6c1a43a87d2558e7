"""Filter, noise, erasing and rotation transforms with torchvision.transforms.v2 names and
signatures; every decision and parameter is drawn per sample (torchvision draws one per call)."""
import math
import numbers
from typing import Any, Dict, List, Optional, Sequence

import torch

from .. import functional as F
from ..functional._utils import InterpolationMode, interpolation_code
from . import _targets as TG
from . import _draws as D
from . import _script as S
from ._geometry import _box_center, _mask_fill, _range, _script_center, _sizes
from ._transform import BatchInfo, Transform, check_probability, script_fill


class RandomAdjustSharpness(Transform):
    """torchvision.transforms.v2.RandomAdjustSharpness(sharpness_factor, p), decided per sample (a
    sample left alone gets factor 1, which returns it unchanged)."""

    def __init__(self, sharpness_factor: float, p: float = 0.5, generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        if isinstance(sharpness_factor, bool) or not isinstance(sharpness_factor, numbers.Real) or sharpness_factor < 0:
            raise ValueError(f"torchaug.transforms.RandomAdjustSharpness: sharpness_factor must be a non-negative number, got {sharpness_factor!r}")
        self.sharpness_factor = float(sharpness_factor)
        self.p = check_probability(p, "RandomAdjustSharpness")

    def make_params(self, images) -> Dict[str, Any]:
        info = BatchInfo(images)
        apply = self._bernoulli((info.batch,), self.p, info.device)
        factor = torch.where(apply, self.sharpness_factor, 1.0).to(torch.float32)
        return {"factor": factor}

    def transform(self, images, params):
        return F.adjust_sharpness(images, params["factor"], validate=False)

    def _scriptable(self):
        return S.ScriptAdjustSharpness(self.sharpness_factor, self.p, self.generator)


class GaussianBlur(Transform):
    """torchvision.transforms.v2.GaussianBlur(kernel_size, sigma): sigma drawn uniformly in
    [sigma_min, sigma_max] per sample (the same for both axes, as torchvision)."""

    def __init__(self, kernel_size, sigma=(0.1, 2.0), generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.kernel_size = F._filter._odd_pair(kernel_size, "kernel_size", "transforms.GaussianBlur")
        if isinstance(sigma, numbers.Real) and not isinstance(sigma, bool):
            if sigma <= 0:
                raise ValueError(f"torchaug.transforms.GaussianBlur: if sigma is a single number, it must be positive, got {sigma}")
            sigma = (float(sigma), float(sigma))
        elif isinstance(sigma, Sequence) and len(sigma) == 2 and all(isinstance(s, numbers.Real) for s in sigma):
            if not 0.0 < sigma[0] <= sigma[1]:
                raise ValueError(f"torchaug.transforms.GaussianBlur: sigma values should be positive and of the form (min, max), got {sigma!r}")
        else:
            raise TypeError(f"torchaug.transforms.GaussianBlur: sigma should be a single number or a list/tuple with length 2, got {sigma!r}")
        self.sigma = (float(sigma[0]), float(sigma[1]))

    def make_params(self, images) -> Dict[str, Any]:
        info = BatchInfo(images)
        return {"sigma": self._uniform((info.batch,), self.sigma[0], self.sigma[1], info.device, torch.float32)}

    def transform(self, images, params):
        return F.gaussian_blur(images, self.kernel_size, params["sigma"], validate=False)

    def _scriptable(self):
        return S.ScriptGaussianBlur(list(self.kernel_size), list(self.sigma), self.generator)


class GaussianNoise(Transform):
    """torchvision.transforms.v2.GaussianNoise(mean, sigma, clip): independent noise per sample,
    from a seed per sample (the parameters to replay)."""

    def __init__(self, mean: float = 0.0, sigma: float = 0.1, clip: bool = True, generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        if sigma < 0:
            raise ValueError(f"torchaug.transforms.GaussianNoise: sigma shouldn't be negative, got {sigma}")
        self.mean, self.sigma, self.clip = float(mean), float(sigma), bool(clip)

    def make_params(self, images) -> Dict[str, Any]:
        info = BatchInfo(images)
        return {"seed": F.draw_seeds(info.batch, info.device, self.generator)}

    def transform(self, images, params):
        return F.gaussian_noise(images, self.mean, self.sigma, self.clip, seed=params["seed"], validate=False)

    def _scriptable(self):
        return S.ScriptGaussianNoise(self.mean, self.sigma, self.clip, self.generator)


class RandomErasing(Transform):
    """torchvision.transforms.v2.RandomErasing(p, scale, ratio, value, inplace) with a rectangle per
    sample, drawn as torchvision's get_params draws it (up to 10 tries of area and log-uniform aspect
    ratio; a sample with no fitting try is left alone), with the coin, in one
    torchaug::_erasing_boxes launch. value: a number, a per-channel sequence, or
    "random" (floating images: standard normal values; uint8 images: uniform in [0, 255])."""

    def __init__(self, p: float = 0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0.0, inplace: bool = False,
                 generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        name = "torchaug.transforms.RandomErasing"
        if not isinstance(value, (numbers.Number, str, tuple, list)) or isinstance(value, bool):
            raise TypeError(f"{name}: argument value should be either a number or str or a sequence, got {value!r}")
        if isinstance(value, str) and value != "random":
            raise ValueError(f"{name}: if value is str, it should be 'random', got {value!r}")
        if not isinstance(scale, Sequence) or len(scale) != 2 or not isinstance(ratio, Sequence) or len(ratio) != 2:
            raise TypeError(f"{name}: scale and ratio should be sequences of 2 numbers, got {scale!r}, {ratio!r}")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            raise ValueError(f"{name}: scale and ratio should be of kind (min, max), got {scale!r}, {ratio!r}")
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError(f"{name}: scale should be between 0 and 1, got {scale!r}")
        self.p = check_probability(p, "RandomErasing")
        self.scale = (float(scale[0]), float(scale[1]))
        self.ratio = (float(ratio[0]), float(ratio[1]))
        self.value = value if isinstance(value, str) else ([float(value)] if isinstance(value, numbers.Number) else [float(v) for v in value])
        self.inplace = inplace

    def make_params(self, images) -> Dict[str, Any]:
        info = BatchInfo(images)
        if info.ragged:
            raise ValueError("torchaug.transforms.RandomErasing: takes a (B, C, H, W) or (C, H, W) tensor, not a list of images")
        h, w = int(info.uniform_size[0]), int(info.uniform_size[1])
        num_values = 0 if isinstance(self.value, str) else len(self.value)
        rand = D.compiled_draws(info.batch, D.ERASING_DRAWS, info.device, self.generator)
        return D.erasing_params(info.batch, info.channels, h, w, self.p, list(self.scale), self._log_ratio(), num_values,
                                info.like, *self._gen(), rand)

    def _log_ratio(self) -> List[float]:
        return [math.log(self.ratio[0]), math.log(self.ratio[1])]

    def _scriptable(self):
        random_value = self.value == "random"
        return S.ScriptErasing(self.p, list(self.scale), self._log_ratio(), [] if random_value else list(self.value), random_value,
                               bool(self.inplace), self.generator)

    def transform(self, images, params):
        boxes = params["boxes"]
        return F.erase(images, boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3], self.value, self.inplace,
                       seed=params.get("seed"))


class RandomRotation(Transform):
    """torchvision.transforms.v2.RandomRotation(degrees, interpolation, expand, center, fill) with an
    angle per sample; with expand=True one angle is drawn for the batch (the output size depends on
    it), as torchvision draws one per call."""

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand: bool = False,
                 center: Optional[List[float]] = None, fill=0, generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.degrees = _range(degrees, "degrees")
        interpolation_code(interpolation, "RandomRotation", ("nearest", "bilinear"))
        self.interpolation = interpolation
        self.expand = bool(expand)
        if center is not None and not (isinstance(center, Sequence) and len(center) == 2):
            raise ValueError(f"torchaug.transforms.RandomRotation: center must be a sequence of 2 numbers, got {center!r}")
        self.center = center
        self.fill = fill

    def make_params(self, images) -> Dict[str, Any]:
        info = BatchInfo(images)
        n = 1 if self.expand else info.batch
        return {"angle": self._uniform((n,), self.degrees[0], self.degrees[1], info.device)}

    def _scriptable(self):
        return S.ScriptRotation(list(self.degrees), interpolation_code(self.interpolation, "RandomRotation", ("nearest", "bilinear")),
                                self.expand, _script_center(self.center), script_fill(self.fill, "RandomRotation"), self.generator)

    def transform(self, images, params):
        angle = params["angle"]
        if self.expand:
            angle = float(angle[0])  # the output size depends on it: one host read per call
        return F.rotate(images, angle, self.interpolation, self.expand, self.center, self.fill)

    def _target_steps(self, images, info, params):
        b = info.batch
        angle = params["angle"].to(torch.float64).expand(b)
        zero = torch.zeros(b, 2, dtype=torch.float64, device=info.device)
        m = TG.forward_affine(-angle, zero, torch.ones_like(angle), zero, _box_center(self.center, info))
        sizes = _sizes(info)
        if self.expand:
            # torchvision: the boxes shift by the top-left of the rotated canvas, onto the grown image
            h, w = info.uniform_size
            corners = torch.tensor([[0.0, 0.0], [0.0, h], [w, h], [w, 0.0]], dtype=torch.float64, device=info.device)
            moved = corners @ m[0, :, :2].T + m[0, :, 2]
            m = m.clone()
            m[:, :, 2] -= moved.amin(0)
            sizes = tuple(F._geometry.rotated_size(float(params["angle"][0]), self.center, h, w))
        return [TG.Step(m, sizes)]

    def _transform_masks(self, masks, idx, params, info):
        angle = float(params["angle"][0]) if self.expand else params["angle"][idx]
        return F.rotate(masks, angle, InterpolationMode.NEAREST, self.expand, self.center, _mask_fill(self.fill))
