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

from ..functional._augment import _mix_with_previous, _paste_previous, _soft_labels, cutmix_boxes
from ..functional._filter import seeds_on
from ..functional._geometry import (_center_offset, _center_rows, _crop_padded, _inverse_theta, _matrix_dtype, _pad,
                                    _pixel_inverse, _rotation_matrices, _short_edge_size, rotated_size)
from ..functional._utils import draw_device, generator_device


MEMORY_FORMATS = [torch.contiguous_format, torch.preserve_format, torch.channels_last, torch.channels_last_3d]


def _moved(t: Tensor, device: torch.device) -> Tensor:
    """t on `device` (no call when it is there already: a dispatch, and a GIL round trip in a
    producer thread)."""
    return t if t.device == device else t.to(device, non_blocking=True)


def rand_on(shape: List[int], device: torch.device, generator: Optional[torch.Generator], gen_device: str,
            dtype: torch.dtype = torch.float32) -> Tensor:
    """Uniform [0, 1) numbers on `device`, drawn on the generator's device (gen_device, "" without
    a generator) and copied when that is another device (draw_device): a CPU generator gives the same
    draws for CPU and CUDA images. The Python transforms draw through these too."""
    g = draw_device(device, gen_device)
    return _moved(torch.rand(shape, device=g, dtype=dtype, generator=generator), device)


def bernoulli_on(shape: List[int], p: float, device: torch.device, generator: Optional[torch.Generator], gen_device: str) -> Tensor:
    """Bool coins with P(True) = p on `device` (generator rules as rand_on)."""
    g = draw_device(device, gen_device)
    return _moved(torch.empty(shape, dtype=torch.bool, device=g).bernoulli_(p, generator=generator), device)


def randint_on(high: int, shape: List[int], device: torch.device, generator: Optional[torch.Generator], gen_device: str) -> Tensor:
    """int64 uniform in [0, high) on `device` (generator rules as rand_on)."""
    g = draw_device(device, gen_device)
    return _moved(torch.randint(high, shape, device=g, generator=generator), device)


def uniform_on(shape: List[int], low: float, high: float, device: torch.device, generator: Optional[torch.Generator],
               gen_device: str, dtype: torch.dtype = torch.float64) -> Tensor:
    """Uniform [low, high) numbers on `device` (generator rules as rand_on)."""
    return low + (high - low) * rand_on(shape, device, generator, gen_device, dtype)


def dirichlet_on(alpha: Tensor, device: torch.device, generator: Optional[torch.Generator], gen_device: str) -> Tensor:
    """Dirichlet(alpha) draws, one per row of alpha (..., k), on `device` (generator rules as rand_on)."""
    g = draw_device(device, gen_device)
    return torch._sample_dirichlet(alpha.to(g), generator=generator).to(device, non_blocking=True)


def fill_rows(fill: Optional[List[float]], batch: int, channels: int, device: torch.device) -> Optional[Tensor]:
    """The (B, C) float32 fill of one value or one per channel (None: None), as fill_tensor makes it."""
    if fill is None:
        return None
    f = torch.tensor(fill, dtype=torch.float32, device=device)
    if len(fill) == 1:
        f = f.expand(channels)
    elif len(fill) != channels:
        raise ValueError("torchaug: fill must have 1 or " + str(channels) + " values (the channels), got " + str(len(fill)))
    return f.unsqueeze(0).expand(batch, channels)


def affine_params(batch: int, sizes: Tensor, degrees: List[float], translate: Optional[List[float]],
                  scale: Optional[List[float]], shear: Optional[List[float]], device: torch.device,
                  generator: Optional[torch.Generator], gen_device: str) -> Dict[str, Tensor]:
    """RandomAffine's draws (torchvision's get_params per sample): sizes (B, 2) float64 [H, W];
    shear None, [min, max] (x only) or [x min, x max, y min, y max]."""
    angle = uniform_on([batch], degrees[0], degrees[1], device, generator, gen_device)
    if translate is not None:
        max_d = torch.stack([sizes[:, 1] * translate[0], sizes[:, 0] * translate[1]], 1)
        shift = torch.round(uniform_on([batch, 2], -1.0, 1.0, device, generator, gen_device) * max_d)
    else:
        shift = torch.zeros(batch, 2, dtype=torch.float64, device=device)
    if scale is not None:
        factor = uniform_on([batch], scale[0], scale[1], device, generator, gen_device)
    else:
        factor = torch.ones(batch, dtype=torch.float64, device=device)
    sh = torch.zeros(batch, 2, dtype=torch.float64, device=device)
    if shear is not None:
        sh[:, 0] = uniform_on([batch], shear[0], shear[1], device, generator, gen_device)
        if len(shear) == 4:
            sh[:, 1] = uniform_on([batch], shear[2], shear[3], device, generator, gen_device)
    return {"angle": angle, "translate": shift, "scale": factor, "shear": sh}


def erasing_params(batch: int, channels: int, height: int, width: int, p: float, scale: List[float], log_ratio: List[float],
                   num_values: int, device: torch.device, generator: Optional[torch.Generator], gen_device: str) -> Dict[str, Tensor]:
    """RandomErasing's draws per sample: torchvision's up to 10 tries of area and log-uniform aspect
    ratio, the first that fits; boxes (B, 4) int64 [top, left, h, w] (h = w = 0: left alone), and
    the seeds of random values (num_values 0: value="random"; else the count of fill values, 1 or
    the channels)."""
    random_value = num_values == 0
    if not random_value and num_values != 1 and num_values != channels:
        raise ValueError("torchaug.transforms.RandomErasing: value must have 1 or " + str(channels) + " values (the channels), got "
                         + str(num_values))
    u = rand_on([batch, 10, 4], device, generator, gen_device, torch.float64)
    area = height * width * (scale[0] + (scale[1] - scale[0]) * u[..., 0])
    aspect = torch.exp(log_ratio[0] + (log_ratio[1] - log_ratio[0]) * u[..., 1])
    h = torch.round(torch.sqrt(area * aspect))
    w = torch.round(torch.sqrt(area / aspect))
    fits = (h < height) & (w < width)
    first = fits.to(torch.int8).argmax(dim=1, keepdim=True)  # the first try that fits
    found = fits.any(dim=1) & bernoulli_on([batch], p, device, generator, gen_device)
    h = h.gather(1, first)[:, 0]
    w = w.gather(1, first)[:, 0]
    i = torch.floor(u[..., 2].gather(1, first)[:, 0] * (height - h + 1))
    j = torch.floor(u[..., 3].gather(1, first)[:, 0] * (width - w + 1))
    params = {"boxes": torch.stack([i, j, h * found, w * found], dim=1).to(torch.int64)}
    if random_value:
        params["seed"] = seeds_on(batch, device, generator, gen_device)
    return params


def mix_lam(batch: int, alpha: float, per_sample: bool, device: torch.device, generator: Optional[torch.Generator],
            gen_device: str) -> Tensor:
    """(B,) float64 lam ~ Beta(alpha, alpha) (one for the batch unless per_sample)."""
    n = batch if per_sample else 1
    a = torch.full([n, 2], alpha, dtype=torch.float64)
    return dirichlet_on(a, device, generator, gen_device)[:, 0].expand(batch)


def cutmix_params(batch: int, height: int, width: int, alpha: float, per_sample: bool, device: torch.device,
                  generator: Optional[torch.Generator], gen_device: str) -> Dict[str, Tensor]:
    """CutMix's lam and box per sample: the box centre as torch.randint(W) / torch.randint(H)."""
    lam = mix_lam(batch, alpha, per_sample, device, generator, gen_device)
    u = rand_on([batch, 2], device, generator, gen_device, torch.float64)
    centers = torch.stack([(u[:, 0] * width).floor().clamp(max=width - 1),
                           (u[:, 1] * height).floor().clamp(max=height - 1)], 1).to(torch.int64)
    return {"lam": lam, "boxes": cutmix_boxes(lam, centers, height, width)}


def policy_program(ids: Tensor, mags: Tensor, signed: Tensor, choice: Tensor, bins: Tensor, coin: Tensor,
                   apply: Optional[Tensor]) -> Dict[str, Tensor]:
    """An auto-augmentation program from draws: the space's op ids (K,), magnitude table (K, bins)
    and signed flags (K,) at space indices `choice` and bins `bins`, negated where `coin` and the op
    is signed; samples where `apply` is False get the identity (op 0, choice -1)."""
    m = mags[choice, bins]
    m = torch.where(coin & signed[choice], -m, m)
    ops = ids[choice]
    if apply is not None:
        ops = torch.where(apply, ops, torch.zeros_like(ops))
        choice = torch.where(apply, choice, torch.full_like(choice, -1))
    return {"choice": choice, "ops": ops, "magnitudes": m}


def policy_sample(kind: int, batch: int, ids: Tensor, mags: Tensor, signed: Tensor, num_ops: int, magnitude: int,
                  sub_idx: Optional[Tensor], sub_prob: Optional[Tensor], sub_bins: Optional[Tensor],
                  generator: Optional[torch.Generator]) -> Dict[str, Tensor]:
    """A policy's programs for `batch` samples in one launch: {"choice", "ops", "magnitudes"} as
    policy_program gives them. torchaug::_policy_program draws their uniforms (B, R) float64 itself,
    the numbers torch.rand((B, R), dtype=torch.float64, generator=generator) gives on the generator's
    device (the tables' device without one; on CUDA inside its kernel), and maps them to
    torchvision's choices. kind 0: RandAugment (2 a slot: op, sign); 1: TrivialAugmentWide (op, bin,
    sign); 2: AutoAugment (sub-policy, then applied and sign per op)."""
    if kind != 2:
        sub_idx, sub_prob, sub_bins = None, None, None
    choice, ops, m = torch.ops.torchaug._policy_program(None, ids, mags, signed, kind, num_ops, magnitude, sub_idx, sub_prob,
                                                        sub_bins, batch, generator)
    return {"choice": choice, "ops": ops, "magnitudes": m}


def random_color_op_params(batch: int, op: int, p: float, p0: float, p1: float, device: torch.device,
                           generator: Optional[torch.Generator], gen_device: str) -> Dict[str, Tensor]:
    """The color program of a Random<op> transform: op (with parameters p0, p1) with probability p
    per sample, else the identity."""
    apply = bernoulli_on([batch, 1], p, device, generator, gen_device)
    ops = apply.to(torch.int64) * op
    params = torch.zeros([batch, 1, 2], dtype=torch.float32, device=device)
    params[:, 0, 0] = p0
    params[:, 0, 1] = p1
    return {"ops": ops, "params": params}


def jitter_params(const: Tensor, u: Tensor) -> Dict[str, Tensor]:
    """ColorJitter's program from const (1, 12) float64 [lo (4), span (4), op codes (4)] of
    brightness, contrast, saturation, hue and u (B, 8) uniform float64 draws: a random order per
    sample (argsort of u[:, :4]) and the factors lo + span * u[:, 4:]."""
    b = u.shape[0]
    order = u[:, :4].argsort(dim=1)
    factors = torch.addcmul(const[:, :4], const[:, 4:8], u[:, 4:])
    ops = const[:, 8:].expand(b, 4).gather(1, order).to(torch.int64)
    p0 = factors.gather(1, order).to(torch.float32)
    return {"ops": ops, "params": torch.stack([p0, torch.zeros_like(p0)], dim=-1)}


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


class ScriptColorJitter(ScriptTransform):
    """ColorJitter: const = [lo (4), span (4), op codes (4)] of brightness, contrast, saturation, hue."""

    def __init__(self, const: List[float], generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        # a float64 tensor made here: TorchScript's torch.tensor(List[float]) rounds through float32
        self.const = torch.tensor(const, dtype=torch.float64)

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        u = rand_on([images.shape[0], 8], images.device, self.generator, self.gen_device, torch.float64)
        return jitter_params(self.const.to(images.device).unsqueeze(0), u)

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        return torch.ops.torchaug.color_program(images, params["ops"], params["params"])


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
        b, dev = images.shape[0], images.device
        sizes = torch.tensor([images.shape[-2], images.shape[-1]], dtype=torch.int64, device=dev).expand(b, 2).to(torch.float64)
        return affine_params(b, sizes, self.degrees, self.translate, self.scale, self.shear, dev, self.generator, self.gen_device)

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        b, c, h, w = images.shape[0], images.shape[1], images.shape[-2], images.shape[-1]
        dev, f64 = images.device, torch.float64
        theta = _inverse_theta(params["angle"].to(dev, f64).expand(b), params["translate"].to(dev, f64).expand(b, 2),
                               params["scale"].to(dev, f64).expand(b), params["shear"].to(dev, f64).expand(b, 2),
                               _center_rows(self.center, b, h, w, dev), None)
        m = _pixel_inverse(theta, h, w, h, w).to(_matrix_dtype(images))
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
        if self.expand:
            angle = torch.full([b], float(angle[0]), dtype=torch.float64, device=dev)  # one host read, as eager
        angle = angle.expand(b) % 360
        oh, ow = h, w
        if self.expand:
            size = rotated_size(float(angle[0]), self.center, h, w)
            oh, ow = size[0], size[1]
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


def random_crop_padding(padding: List[int], size: List[int], pad_if_needed: bool, h: int, w: int) -> List[int]:
    """RandomCrop's padding [left, top, right, bottom] of an h x w image: the given padding, grown on
    both sides where pad_if_needed and the padded image is still smaller than the crop."""
    left, top, right, bottom = padding[0], padding[1], padding[2], padding[3]
    if pad_if_needed:
        if h + top + bottom < size[0]:
            diff = size[0] - (h + top + bottom)
            top, bottom = top + diff, bottom + diff
        if w + left + right < size[1]:
            diff = size[1] - (w + left + right)
            left, right = left + diff, right + diff
    return [left, top, right, bottom]


def random_crop_offsets(batch: int, h: int, w: int, padding: List[int], size: List[int], device: torch.device,
                        generator: Optional[torch.Generator], gen_device: str) -> Dict[str, Tensor]:
    """RandomCrop's window per sample, uniform over the padded image: {"top", "left"} (B,) int64."""
    ph, pw = h + padding[1] + padding[3], w + padding[0] + padding[2]
    if ph < size[0] or pw < size[1]:
        raise ValueError("torchaug.transforms.RandomCrop: crop size " + str(size) + " is larger than the padded image ("
                         + str(ph) + ", " + str(pw) + ")")
    t = torch.floor(rand_on([batch], device, generator, gen_device, torch.float64) * (ph - size[0] + 1)).to(torch.int64)
    left = torch.floor(rand_on([batch], device, generator, gen_device, torch.float64) * (pw - size[1] + 1)).to(torch.int64)
    return {"top": t, "left": left}


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
        return random_crop_offsets(images.shape[0], h, w, pad, self.size, images.device, self.generator, self.gen_device)

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
                              self.log_ratio, 0 if self.random_value else len(self.value), images.device, self.generator,
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


def augmix_program(ids: Tensor, mags: Tensor, signed: Tensor, batch: int, severity: int, mixture_width: int,
                   chain_depth: int, alpha: float, device: torch.device, generator: Optional[torch.Generator],
                   gen_device: str) -> Dict[str, Tensor]:
    """AugMix's draws: the mixture_width chains of every sample as one (mixture_width * B, depth)
    program, their Dirichlet weights (B, mixture_width) and the original's Beta weight (B,)."""
    depth_max = chain_depth if chain_depth > 0 else 3
    shape = [mixture_width, batch, depth_max]
    choice = randint_on(ids.shape[0], shape, device, generator, gen_device)
    bins = randint_on(severity, shape, device, generator, gen_device)
    coin = rand_on(shape, device, generator, gen_device) <= 0.5
    apply: Optional[Tensor] = None
    if chain_depth <= 0:
        depth = randint_on(3, [mixture_width, batch, 1], device, generator, gen_device) + 1
        apply = torch.arange(depth_max, device=device).view(1, 1, -1) < depth
    prog = policy_program(ids, mags, signed, choice, bins, coin, apply)
    out: Dict[str, Tensor] = {}
    for k, v in prog.items():
        out[k] = v.reshape(mixture_width * batch, depth_max)
    m = dirichlet_on(torch.full([batch, 2], alpha, dtype=torch.float32), device, generator, gen_device)
    w = dirichlet_on(torch.full([batch, mixture_width], alpha, dtype=torch.float32), device, generator, gen_device)
    out["weights"] = w * m[:, 1:2]
    out["original_weight"] = m[:, 0]
    return out


def augmix_mix(images: Tensor, chains: Tensor, weights: Tensor, original_weight: Tensor, mixture_width: int) -> Tensor:
    """torchvision's mix: original_weight * images + sum of weights[:, i] * chain i, in float32, then
    cast back to the images' dtype (chains (mixture_width * B, C, H, W))."""
    b = images.shape[0]
    chains = chains.view([mixture_width, b] + list(images.shape[1:]))
    view = [b, 1, 1, 1]
    mix = original_weight.view(view) * images
    for i in range(mixture_width):
        mix.add_(weights[:, i].view(view) * chains[i])
    return mix.to(images.dtype)


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
