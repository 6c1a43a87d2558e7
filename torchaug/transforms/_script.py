"""TorchScript forms of the transforms (torch.jit.script(transform) returns one of these, through
Transform.__prepare_scriptable__, the hook torchvision uses for the same purpose).

A scripted transform is an nn.Module with
    forward(images: Tensor) -> Tensor                       (C, H, W) or (B, C, H, W)
    make_params(images: Tensor) -> Dict[str, Tensor]        the per-sample parameters
    transform(images: Tensor, params: Dict[str, Tensor]) -> Tensor   (replay)
that draws its parameters with the same torch RNG calls, in the same order, as the Python
transform: after the same torch.manual_seed (or from a generator in the same state) it returns
the same output, in Python and from C++ (torch::jit::load with the torchaug library loaded). It
calls torch.ops.torchaug.* directly, so it runs wherever the library is loaded. Scripted forms
take tensors, not lists of images of different sizes; a module holding a torch.Generator scripts
but cannot be saved (TorchScript cannot serialise a Generator)."""
from typing import Dict, List, Optional, Tuple

import torch
from torch import Tensor, nn

from ..functional._augment import _mix_with_previous, _paste_previous, _soft_labels
from ..functional._color import _permute_channels
from ..functional._filter import seeds_on
from ..functional._geometry import (_center_offset, _elastic, _perspective, _five_crop, _center_rows, _crop_padded, _inverse_theta, _matrix_dtype, _pad,
                                    _rotation_matrices, _short_edge_size, rotated_size)
from ..functional._utils import generator_device
from ._draws import (elastic_displacement, perspective_params, random_color_range_params, salt_and_pepper_params, affine_params, augmix_mix, augmix_program, bernoulli_on, channel_permutation, cutmix_params,
                     erasing_params, fill_rows, jitter_program, mix_lam, photometric_distort_params, policy_sample, rand_on,
                     random_color_op_params, random_crop_offsets, random_crop_padding, uniform_on)


MEMORY_FORMATS = [torch.contiguous_format, torch.preserve_format, torch.channels_last, torch.channels_last_3d]


class ScriptTransform(nn.Module):
    """The base of the scripted forms: forward = transform(make_params) on a (B, C, H, W) batch."""

    generator: Optional[torch.Generator]

    def __init__(self, generator: Optional[torch.Generator] = None):
        super().__init__()
        self.generator = generator
        self.gen_device = generator_device(generator)

    def forward(self, images: Tensor) -> Tensor:
        single = images.dim() == 3
        x = images.unsqueeze(0) if single else images
        if x.dim() != 4:
            raise ValueError("torchaug: images must be (C, H, W) or (B, C, H, W)")
        out = self.transform(x, self.make_params(x))
        return out[0] if single else out

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        return {}

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        return images


class ScriptCrop(ScriptTransform):
    """RandomResizedCrop (mode 0), Resize (1), CenterCrop (2): a crop box per sample resized to size."""

    size: List[int]
    scale: List[float]
    ratio: List[float]
    max_size: Optional[int]

    def __init__(self, mode: int, size: List[int], interpolation: int, antialias: bool, scale: List[float],
                 ratio: List[float], max_size: Optional[int], generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.mode = mode
        self.size = size
        self.interpolation = interpolation
        self.antialias = antialias
        self.scale = scale
        self.ratio = ratio
        self.max_size = max_size

    def _out_size(self, h: int, w: int) -> List[int]:
        if self.mode != 1 or len(self.size) == 2:
            return self.size
        return _short_edge_size(h, w, self.size[0], self.max_size)

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        b, h, w = images.shape[0], images.shape[-2], images.shape[-1]
        if self.mode == 0:
            # the op draws its uniforms from the generator (torch.rand's numbers; on CUDA inside its kernel)
            boxes = torch.ops.torchaug._random_resized_crop_boxes(None, None, h, w, self.scale[0], self.scale[1],
                                                                  self.ratio[0], self.ratio[1], b, images, self.generator)
            return {"boxes": boxes}
        if self.mode == 1:
            return {"boxes": torch.tensor([0, 0, h, w], dtype=torch.int64, device=images.device).unsqueeze(0).expand(b, 4)}
        ch, cw = self.size[0], self.size[1]
        top = _center_offset(h, ch)
        left = _center_offset(w, cw)
        return {"boxes": torch.tensor([top, left, ch, cw], dtype=torch.int64, device=images.device).unsqueeze(0).expand(b, 4)}

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        size = self._out_size(images.shape[-2], images.shape[-1])
        return torch.ops.torchaug.resized_crop(images, params["boxes"], size, self.interpolation, self.antialias,
                                               None, None, None, None, None)


class ScriptFlip(ScriptTransform):
    def __init__(self, horizontal: bool, p: float, generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.horizontal = horizontal
        self.p = p

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        return {"flip": bernoulli_on([images.shape[0]], self.p, images.device, self.generator, self.gen_device)}

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        flip = params["flip"]
        other = torch.zeros_like(flip)
        if self.horizontal:
            return torch.ops.torchaug.flip(images, flip, other)
        return torch.ops.torchaug.flip(images, other, flip)


class ScriptNormalize(ScriptTransform):
    """Normalize (scale 1/255 for uint8, then (x - mean) / std) and ToDtype(floating, scale=True)
    (mean 0, std 1); out_dtype None keeps a floating input's dtype (float32 for uint8)."""

    mean: List[float]
    std: List[float]
    out_dtype: Optional[torch.dtype]
    memory_format: Optional[int]  # TorchScript's memory_format is an int (MEMORY_FORMATS)

    def __init__(self, mean: List[float], std: List[float], out_dtype: Optional[torch.dtype],
                 memory_format: Optional[torch.memory_format]):
        super().__init__()
        self.mean = mean
        self.std = std
        self.out_dtype = out_dtype
        self.memory_format = None if memory_format is None else MEMORY_FORMATS.index(memory_format)

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        b, c = images.shape[0], images.shape[1]
        mean = torch.tensor(self.mean, dtype=torch.float32, device=images.device)
        std = torch.tensor(self.std, dtype=torch.float32, device=images.device)
        mean = mean.expand(c).unsqueeze(0).expand(b, c) if len(self.mean) == 1 else mean.unsqueeze(0).expand(b, c)
        std = std.expand(c).unsqueeze(0).expand(b, c) if len(self.std) == 1 else std.unsqueeze(0).expand(b, c)
        out_dtype = self.out_dtype
        if out_dtype is None:
            out_dtype = images.dtype if images.is_floating_point() else torch.float32
        return torch.ops.torchaug.normalize(images, mean, std, out_dtype, self.memory_format)


class ScriptToDtype(ScriptTransform):
    """ToDtype (torchaug.functional.to_dtype's rules)."""

    def __init__(self, dtype: torch.dtype, scale: bool, floating: bool):
        super().__init__()
        self.dtype = dtype
        self.scale = scale
        self.floating = floating

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        if images.dtype == self.dtype:
            return images
        if not self.scale or (images.is_floating_point() and self.floating):
            return images.to(self.dtype)
        if images.is_floating_point():
            if self.dtype != torch.uint8:
                raise ValueError("torchaug.to_dtype: only uint8 and floating dtypes are supported")
            return images.mul(255 + 1.0 - 1e-3).to(self.dtype)
        if images.dtype != torch.uint8 or not self.floating:
            raise ValueError("torchaug.to_dtype: only uint8 and floating dtypes are supported")
        b, c = images.shape[0], images.shape[1]
        zeros = torch.zeros(1, c, dtype=torch.float32, device=images.device).expand(b, c).contiguous()
        ones = torch.ones(1, c, dtype=torch.float32, device=images.device).expand(b, c).contiguous()
        return torch.ops.torchaug.normalize(images, zeros, ones, self.dtype, None)


class ScriptColorOp(ScriptTransform):
    """RandomInvert / Posterize / Solarize / Autocontrast / Equalize / Grayscale: one color op
    (color_program code `op`, parameters p0, p1) with probability p per sample."""

    def __init__(self, op: int, p: float, p0: float, p1: float, generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.op = op
        self.p = p
        self.p0 = p0
        self.p1 = p1

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        return random_color_op_params(images.shape[0], self.op, self.p, self.p0, self.p1, images.device, self.generator,
                                      self.gen_device)

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        return torch.ops.torchaug.color_program(images, params["ops"], params["params"])


class ScriptColorRange(ScriptTransform):
    """RandomGamma / RandomSolarizeAdd: color op `op` with probability p, its parameters drawn from
    const [lo0, span0, lo1, span1] (const8 for uint8 images, constf for floating ones)."""

    def __init__(self, op: int, p: float, const8: List[float], constf: List[float], generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.op = op
        self.p = p
        self.const8 = torch.tensor(const8, dtype=torch.float64)
        self.constf = torch.tensor(constf, dtype=torch.float64)

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        u = rand_on([images.shape[0], 3], images.device, self.generator, self.gen_device, torch.float64)
        const = self.constf if images.is_floating_point() else self.const8
        return random_color_range_params(self.op, self.p, const.to(images.device).unsqueeze(0), u)

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        return torch.ops.torchaug.color_program(images, params["ops"], params["params"])


class ScriptSaltAndPepper(ScriptTransform):
    def __init__(self, p: float, amount: List[float], salt_vs_pepper: List[float], per_channel: bool,
                 generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.p = p
        self.amount = amount
        self.salt_vs_pepper = salt_vs_pepper
        self.per_channel = per_channel

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        b = images.shape[0]
        u = rand_on([b, 3], images.device, self.generator, self.gen_device, torch.float64)
        return salt_and_pepper_params(self.p, self.amount, self.salt_vs_pepper, u,
                                      seeds_on(b, images.device, self.generator, self.gen_device))

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        return torch.ops.torchaug.salt_and_pepper(images, params["amount"], params["salt_vs_pepper"], params["seed"],
                                                  self.per_channel, None, None)


class ScriptColorJitter(ScriptTransform):
    """ColorJitter: const = [lo (4), span (4), op codes (4)] of brightness, contrast, saturation, hue."""

    def __init__(self, const: List[float], generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.const = const

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        return jitter_program(images.shape[0], self.const, images, self.generator)

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        return torch.ops.torchaug.color_program(images, params["ops"], params["params"])


class ScriptPhotometricDistort(ScriptTransform):
    """RandomPhotometricDistort (const as ScriptColorJitter's, p), or with permute_only
    RandomChannelPermutation (a permutation per sample, nothing else)."""

    def __init__(self, const: List[float], p: float, generator: Optional[torch.Generator] = None, permute_only: bool = False):
        super().__init__(generator)
        self.const = torch.tensor(const, dtype=torch.float64)
        self.p = p
        self.permute_only = permute_only

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        b, c = images.shape[0], images.shape[1]
        if self.permute_only:
            return channel_permutation(rand_on([b, c], images.device, self.generator, self.gen_device))
        u = rand_on([b, 10 + c], images.device, self.generator, self.gen_device, torch.float64)
        return photometric_distort_params(self.const.to(images.device).unsqueeze(0), self.p, u)

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        if not self.permute_only:
            images = torch.ops.torchaug.color_program(images, params["ops"], params["params"])
            if self.p == 0:
                return images
        return _permute_channels(images, params["permutation"])


class ScriptRGB(ScriptTransform):
    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        if images.shape[1] == 2:
            raise ValueError("torchaug.grayscale_to_rgb: images must have 1 channel (or 3 or more, returned as they are)")
        return images.repeat(1, 3, 1, 1) if images.shape[1] == 1 else images


class ScriptGrayscale(ScriptTransform):
    def __init__(self, num_output_channels: int):
        super().__init__()
        self.num_output_channels = num_output_channels

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        return torch.ops.torchaug.rgb_to_grayscale(images, self.num_output_channels)


class ScriptPolicy(ScriptTransform):
    """RandAugment (kind 0), TrivialAugmentWide (1), AutoAugment (2) over built-in ops.

    The space's tables: op ids (K,), signed (K,), static magnitudes (K, bins); rows [k, axis,
    scale, divisor] in `sized` are torchvision's image-size dependent translate ranges,
    linspace(0, scale * size, bins) (size / divisor with a divisor) with size the height (axis 0)
    or width (axis 1), computed per call as the Python transform does.
    AutoAugment: sub-policies as (S, 2) index, probability and bin tables."""

    ids: List[int]
    signed: List[bool]
    sized: List[List[float]]
    fill: Optional[List[float]]

    def __init__(self, kind: int, ids: List[int], signed: List[bool], mags: Tensor, sized: List[List[float]],
                 num_ops: int, magnitude: int, interpolation: int, fill: Optional[List[float]],
                 sub_idx: Tensor, sub_prob: Tensor, sub_bins: Tensor, generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.kind = kind
        self.ids = ids
        self.signed = signed
        self.mags = mags
        self.sized = sized
        self.num_bins = mags.shape[1]
        self.num_ops = num_ops
        self.magnitude = magnitude
        self.interpolation = interpolation
        self.fill = fill
        self.sub_idx = sub_idx
        self.sub_prob = sub_prob
        self.sub_bins = sub_bins

    def _tables(self, h: int, w: int, device: torch.device) -> List[Tensor]:
        mags = self.mags.clone()
        for row in self.sized:
            k, axis, scale, divisor = int(row[0]), int(row[1]), row[2], row[3]
            size = h if axis == 0 else w
            mags[k] = torch.linspace(0.0, size / divisor if divisor != 0.0 else scale * size, self.num_bins)
        return [torch.tensor(self.ids, dtype=torch.int64).to(device), mags.to(device),
                torch.tensor(self.signed, dtype=torch.bool).to(device)]

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        b, dev = images.shape[0], images.device
        ids, mags, signed = self._tables(images.shape[-2], images.shape[-1], dev)
        return policy_sample(self.kind, b, ids, mags, signed, self.num_ops, self.magnitude, self.sub_idx.to(dev),
                             self.sub_prob.to(dev), self.sub_bins.to(dev), self.generator)

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        fill = fill_rows(self.fill, images.shape[0], images.shape[1], images.device)
        return torch.ops.torchaug.augment(images, params["ops"], params["magnitudes"], self.interpolation, fill)


class ScriptAffine(ScriptTransform):
    """RandomAffine: an angle, translation, scale and shear per sample."""

    degrees: List[float]
    translate: Optional[List[float]]
    scale: Optional[List[float]]
    shear: Optional[List[float]]
    fill: Optional[List[float]]
    center: Optional[List[float]]

    def __init__(self, degrees: List[float], translate: Optional[List[float]], scale: Optional[List[float]],
                 shear: Optional[List[float]], interpolation: int, fill: Optional[List[float]], center: Optional[List[float]],
                 generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.degrees = degrees
        self.translate = translate
        self.scale = scale
        self.shear = shear
        self.interpolation = interpolation
        self.fill = fill
        self.center = center

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        return affine_params(images.shape[0], images.shape[-2], images.shape[-1], None, self.degrees, self.translate, self.scale,
                             self.shear, images, self.generator)

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        b, c, h, w = images.shape[0], images.shape[1], images.shape[-2], images.shape[-1]
        dev, f64 = images.device, torch.float64
        m = _inverse_theta(params["angle"].to(dev, f64).expand(b), params["translate"].to(dev, f64).expand(b, 2),
                           params["scale"].to(dev, f64).expand(b), params["shear"].to(dev, f64).expand(b, 2),
                           _center_rows(self.center, b, h, w, dev), 0.0, [h, w, h, w]).to(_matrix_dtype(images))
        return torch.ops.torchaug.warp_affine(images, m, [h, w], self.interpolation, fill_rows(self.fill, b, c, dev))


class ScriptRotation(ScriptTransform):
    """RandomRotation: an angle per sample (one per batch with expand=True)."""

    degrees: List[float]
    fill: Optional[List[float]]
    center: Optional[List[float]]

    def __init__(self, degrees: List[float], interpolation: int, expand: bool, center: Optional[List[float]],
                 fill: Optional[List[float]], generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.degrees = degrees
        self.interpolation = interpolation
        self.expand = expand
        self.center = center
        self.fill = fill

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        n = 1 if self.expand else images.shape[0]
        return {"angle": uniform_on([n], self.degrees[0], self.degrees[1], images.device, self.generator, self.gen_device)}

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        b, c, h, w = images.shape[0], images.shape[1], images.shape[-2], images.shape[-1]
        dev = images.device
        angle = params["angle"].to(dev, torch.float64)
        oh, ow = h, w
        if self.expand:
            a0 = float(angle[0]) % 360.0  # one host read, as eager
            angle = torch.full([b], a0, dtype=torch.float64, device=dev)
            size = rotated_size(a0, self.center, h, w)
            oh, ow = size[0], size[1]
        angle = angle.expand(b) % 360
        m = _rotation_matrices(angle, _center_rows(self.center, b, h, w, dev), self.center is not None, self.expand,
                               h, w, oh, ow).to(_matrix_dtype(images))
        return torch.ops.torchaug.warp_affine(images, m, [oh, ow], self.interpolation, fill_rows(self.fill, b, c, dev))


class ScriptPad(ScriptTransform):
    """Pad: padding [left, top, right, bottom], fill (constant mode) or edge / reflect / symmetric."""

    padding: List[int]
    fill: List[float]

    def __init__(self, padding: List[int], fill: List[float], padding_mode: str):
        super().__init__()
        self.padding = padding
        self.fill = fill
        self.padding_mode = padding_mode

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        fill = fill_rows(self.fill, images.shape[0], images.shape[1], images.device) if self.padding_mode == "constant" else None
        return _pad(images, self.padding, fill, self.padding_mode)


class ScriptRandomCrop(ScriptTransform):
    """RandomCrop: a window per sample of the padded image (the padding follows from the image size,
    so replayed parameters hold only top and left)."""

    size: List[int]
    padding: List[int]
    fill: List[float]

    def __init__(self, size: List[int], padding: List[int], pad_if_needed: bool, fill: List[float], padding_mode: str,
                 generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.size = size
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self.padding_mode = padding_mode

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        h, w = images.shape[-2], images.shape[-1]
        pad = random_crop_padding(self.padding, self.size, self.pad_if_needed, h, w)
        return random_crop_offsets(images.shape[0], h, w, pad, self.size, images, self.generator)

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        pad = random_crop_padding(self.padding, self.size, self.pad_if_needed, images.shape[-2], images.shape[-1])
        fill = fill_rows(self.fill, images.shape[0], images.shape[1], images.device) if self.padding_mode == "constant" else None
        b = images.shape[0]
        return _crop_padded(images, params["top"].to(images.device).expand(b), params["left"].to(images.device).expand(b),
                            pad, self.size, fill, self.padding_mode)


class ScriptGaussianBlur(ScriptTransform):
    """GaussianBlur: sigma uniform in [sigma_min, sigma_max] per sample (both axes)."""

    kernel_size: List[int]
    sigma: List[float]

    def __init__(self, kernel_size: List[int], sigma: List[float], generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.kernel_size = kernel_size
        self.sigma = sigma

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        return {"sigma": uniform_on([images.shape[0]], self.sigma[0], self.sigma[1], images.device, self.generator,
                                    self.gen_device, torch.float32)}

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        s = params["sigma"].to(images.device, torch.float32).expand(images.shape[0]).unsqueeze(1).expand(-1, 2)
        return torch.ops.torchaug.gaussian_blur(images, self.kernel_size, s)


class ScriptGaussianNoise(ScriptTransform):
    """GaussianNoise: independent noise per sample from a seed per sample."""

    def __init__(self, mean: float, sigma: float, clip: bool, generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.mean = mean
        self.sigma = sigma
        self.clip = clip

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        return {"seed": seeds_on(images.shape[0], images.device, self.generator, self.gen_device)}

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        b, dev = images.shape[0], images.device
        return torch.ops.torchaug.gaussian_noise(images, torch.full([b], self.mean, dtype=torch.float32, device=dev),
                                                 torch.full([b], self.sigma, dtype=torch.float32, device=dev),
                                                 params["seed"].to(dev).expand(b), self.clip)


class ScriptAdjustSharpness(ScriptTransform):
    """RandomAdjustSharpness: the factor with probability p per sample, else 1 (unchanged)."""

    def __init__(self, sharpness_factor: float, p: float, generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.sharpness_factor = sharpness_factor
        self.p = p

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        b, dev = images.shape[0], images.device
        apply = bernoulli_on([b], self.p, dev, self.generator, self.gen_device)
        return {"factor": torch.where(apply, torch.full([b], self.sharpness_factor, dtype=torch.float32, device=dev),
                                      torch.ones(b, dtype=torch.float32, device=dev))}

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        return torch.ops.torchaug.adjust_sharpness(images, params["factor"].to(images.device, torch.float32).expand(images.shape[0]))


class ScriptErasing(ScriptTransform):
    """RandomErasing: a rectangle per sample; value one number or one per channel, or random."""

    scale: List[float]
    log_ratio: List[float]
    value: List[float]

    def __init__(self, p: float, scale: List[float], log_ratio: List[float], value: List[float], random_value: bool,
                 inplace: bool, generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.p = p
        self.scale = scale
        self.log_ratio = log_ratio
        self.value = value
        self.random_value = random_value
        self.inplace = inplace

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        return erasing_params(images.shape[0], images.shape[1], images.shape[-2], images.shape[-1], self.p, self.scale,
                              self.log_ratio, 0 if self.random_value else len(self.value), images, self.generator,
                              self.gen_device)

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        b, c, dev = images.shape[0], images.shape[1], images.device
        boxes = params["boxes"].to(dev, torch.int64).expand(b, 4)
        if self.random_value:
            out = torch.ops.torchaug.erase(images, boxes, None, params["seed"].to(dev).expand(b))
        else:
            out = torch.ops.torchaug.erase(images, boxes, fill_rows(self.value, b, c, dev), None)
        if self.inplace:
            images.copy_(out)
            return images
        return out


class ScriptAugMix(ScriptPolicy):
    """AugMix: mixture_width chains per sample (depth 1 to 3, or chain_depth), mixed with Dirichlet
    weights and a Beta weight of the original, as torchvision mixes them."""

    def __init__(self, ids: List[int], signed: List[bool], mags: Tensor, sized: List[List[float]], interpolation: int,
                 fill: Optional[List[float]], severity: int, mixture_width: int, chain_depth: int, alpha: float,
                 generator: Optional[torch.Generator] = None):
        empty = torch.zeros(0, 2, dtype=torch.int64)
        super().__init__(-1, ids, signed, mags, sized, 1, 0, interpolation, fill, empty, empty.float(), empty, generator)
        self.severity = severity
        self.mixture_width = mixture_width
        self.chain_depth = chain_depth
        self.alpha = alpha

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        b, dev = images.shape[0], images.device
        ids, mags, signed = self._tables(images.shape[-2], images.shape[-1], dev)
        return augmix_program(ids, mags, signed, b, self.severity, self.mixture_width, self.chain_depth, self.alpha, dev,
                              self.generator, self.gen_device)

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        b, c, mw = images.shape[0], images.shape[1], self.mixture_width
        chains = torch.ops.torchaug.augment(images.repeat(mw, 1, 1, 1), params["ops"].to(images.device),
                                            params["magnitudes"].to(images.device, torch.float32), self.interpolation,
                                            fill_rows(self.fill, mw * b, c, images.device))
        return augmix_mix(images, chains, params["weights"], params["original_weight"], mw)


class ScriptMixer(nn.Module):
    """MixUp (mode 0) and CutMix (1): forward(images, labels) -> (images, soft labels)."""

    generator: Optional[torch.Generator]
    num_classes: Optional[int]

    def __init__(self, mode: int, alpha: float, num_classes: Optional[int], per_sample: bool,
                 generator: Optional[torch.Generator] = None):
        super().__init__()
        self.mode = mode
        self.alpha = alpha
        self.num_classes = num_classes
        self.per_sample = per_sample
        self.generator = generator
        self.gen_device = generator_device(generator)

    def forward(self, images: Tensor, labels: Tensor) -> Tuple[Tensor, Tensor]:
        name = "MixUp" if self.mode == 0 else "CutMix"
        if images.dim() != 4:
            raise ValueError("torchaug.transforms." + name + ": images must be a (B, C, H, W) batch, got shape " + str(images.shape))
        if labels.dim() == 0 or labels.shape[0] != images.shape[0]:
            raise ValueError("torchaug.transforms." + name + ": labels must be a tensor with one row per image ("
                             + str(images.shape[0]) + "), got shape " + str(labels.shape))
        return self.transform(images, labels, self.make_params(images))

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        b, dev = images.shape[0], images.device
        if self.mode == 0:
            return {"lam": mix_lam(b, self.alpha, self.per_sample, dev, self.generator, self.gen_device)}
        return cutmix_params(b, images.shape[-2], images.shape[-1], self.alpha, self.per_sample, dev, self.generator,
                             self.gen_device)

    @torch.jit.export
    def transform(self, images: Tensor, labels: Tensor, params: Dict[str, Tensor]) -> Tuple[Tensor, Tensor]:
        if self.mode == 1:
            return _paste_previous(images, params["boxes"].to(images.device, torch.int64), labels, self.num_classes)
        if not images.is_floating_point():
            raise TypeError("torchaug.mixup: images must be floating point (mixing uint8 would truncate), got " + str(images.dtype))
        lam = params["lam"].reshape(-1).to(images.device, torch.float64).expand(images.shape[0])
        return _mix_with_previous(images, lam), _mix_with_previous(_soft_labels(labels.to(images.device), self.num_classes, "mixup"), lam)


class ScriptCompose(nn.Module):
    """Compose: the scripted forms one after the other (the Python Compose's fusions give the same
    result; the scripted pipeline runs them unfused)."""

    def __init__(self, transforms: List[nn.Module]):
        super().__init__()
        self.transforms = nn.ModuleList(transforms)

    def forward(self, images: Tensor) -> Tensor:
        x = images
        for t in self.transforms:
            x = t(x)
        return x


class ScriptRandomContainer(nn.Module):
    """RandomApply (kind 0), RandomChoice (1), RandomOrder (2) over scripted forms: the Python
    containers' draws, in their order, and their per-sample choice by torch.where (or, with
    per_sample False, one decision per call)."""

    generator: Optional[torch.Generator]

    def __init__(self, kind: int, transforms: List[nn.Module], p: float, edges: List[float], per_sample: bool,
                 generator: Optional[torch.Generator] = None):
        super().__init__()
        self.kind = kind
        self.transforms = nn.ModuleList(transforms)
        self.n = len(transforms)
        self.p = p
        self.edges = torch.tensor(edges, dtype=torch.float64)  # RandomChoice's cumulative weights
        self.per_sample = per_sample
        self.generator = generator
        self.gen_device = generator_device(generator)

    def _pick(self, take: Tensor, a: Tensor, o: Tensor) -> Tensor:
        if a.shape != o.shape or a.dtype != o.dtype:
            raise ValueError("torchaug.transforms: a per-sample choice needs transforms that keep each image's shape and dtype")
        t = take.to(o.device)
        return torch.where(t.view(-1, 1, 1, 1)[0] if o.dim() == 3 else t.view(-1, 1, 1, 1), a, o)

    def forward(self, images: Tensor) -> Tensor:
        n = (images.shape[0] if images.dim() == 4 else 1) if self.per_sample else 1
        if self.kind == 0:
            apply = bernoulli_on([n], self.p, images.device, self.generator, self.gen_device)
            if not self.per_sample and not bool(apply[0]):
                return images
            x = images
            for t in self.transforms:
                x = t(x)
            return self._pick(apply, x, images) if self.per_sample else x
        if self.kind == 1:
            u = rand_on([n, 1], images.device, self.generator, self.gen_device, torch.float64)
            choice = (u >= self.edges.to(images.device).unsqueeze(0)).sum(dim=1)
            out = images
            for k, t in enumerate(self.transforms):
                if self.per_sample:
                    y = t(images)
                    out = y if k == 0 else self._pick(choice == k, y, out)
                elif k == int(choice[0]):
                    out = t(images)
            return out
        order = rand_on([n, self.n], images.device, self.generator, self.gen_device).argsort(dim=1)
        x = images
        for s in range(self.n):
            out = x
            for k, t in enumerate(self.transforms):
                if self.per_sample:
                    y = t(x)
                    out = y if k == 0 else self._pick(order[:, s] == k, y, out)
                elif k == int(order[0, s]):
                    out = t(x)
            x = out
        return x


class ScriptMultiCrop(nn.Module):
    """FiveCrop, or TenCrop (ten) with its vertical_flip: forward returns the list of crops."""

    def __init__(self, size: List[int], ten: bool, vertical_flip: bool):
        super().__init__()
        self.size = size
        self.ten = ten
        self.vertical_flip = vertical_flip

    def forward(self, images: Tensor) -> List[Tensor]:
        op = "ten_crop" if self.ten else "five_crop"
        crops = _five_crop(images, self.size[0], self.size[1], op)
        if self.ten:
            crops = crops + _five_crop(images.flip(-2 if self.vertical_flip else -1), self.size[0], self.size[1], op)
        return crops


def temporal_subsample(videos: Tensor, num_samples: int) -> Tensor:
    """num_samples evenly spaced frames of (..., T, C, H, W) videos: torchvision's uniform_temporal_subsample."""
    t_max = videos.shape[-4] - 1
    indices = torch.linspace(0.0, float(t_max), num_samples, device=videos.device).long()
    return torch.index_select(videos, -4, indices)


class ScriptTemporalSubsample(nn.Module):
    def __init__(self, num_samples: int):
        super().__init__()
        self.num_samples = num_samples

    def forward(self, images: Tensor) -> Tensor:
        return temporal_subsample(images, self.num_samples)


class ScriptLinearTransformation(nn.Module):
    def __init__(self, transformation_matrix: Tensor, mean_vector: Tensor):
        super().__init__()
        self.transformation_matrix = transformation_matrix
        self.mean_vector = mean_vector

    def forward(self, images: Tensor) -> Tensor:
        shape = images.shape
        n = shape[-3] * shape[-2] * shape[-1]
        if n != self.transformation_matrix.shape[0]:
            raise ValueError("torchaug.transforms.LinearTransformation: the images do not flatten to the matrix's size")
        flat = images.reshape(-1, n) - self.mean_vector
        return torch.mm(flat, self.transformation_matrix.to(flat.dtype)).reshape(shape)


class ScriptElastic(ScriptTransform):
    """ElasticTransform: a displacement field per sample (elastic_displacement), one grid_sample."""

    fill: Optional[List[float]]

    def __init__(self, alpha: List[float], sigma: List[float], interpolation: int, fill: Optional[List[float]],
                 generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.alpha = alpha
        self.sigma = sigma
        self.mode = "nearest" if interpolation == 0 else "bilinear"
        self.fill = fill

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        return {"displacement": elastic_displacement(images.shape[0], images.shape[2], images.shape[3], self.alpha, self.sigma,
                                                     images.device, self.generator, self.gen_device)}

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        rows = fill_rows(self.fill, images.shape[0], images.shape[1], images.device)
        return _elastic(images, params["displacement"], self.mode, rows)


class ScriptPerspective(ScriptTransform):
    """RandomPerspective: a coin and a homography per sample (perspective_params), one projective warp."""

    fill: Optional[List[float]]

    def __init__(self, distortion_scale: float, p: float, interpolation: int, fill: Optional[List[float]],
                 generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        self.distortion_scale = distortion_scale
        self.p = p
        self.mode = "nearest" if interpolation == 0 else "bilinear"
        self.fill = fill

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        return perspective_params(images.shape[0], images.shape[2], images.shape[3], self.distortion_scale, self.p, images,
                                  self.generator)

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        rows = fill_rows(self.fill, images.shape[0], images.shape[1], images.device)
        out = _perspective(images, params["coefficients"], self.mode, rows)
        return torch.where(params["applies"].view(-1, 1, 1, 1), out, images)
