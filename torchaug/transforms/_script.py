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

from ..functional._geometry import _center_offset, _short_edge_size
from ..functional._utils import draw_device, generator_device


MEMORY_FORMATS = [torch.contiguous_format, torch.preserve_format, torch.channels_last, torch.channels_last_3d]


def rand_on(shape: List[int], device: torch.device, generator: Optional[torch.Generator], gen_device: str,
            dtype: torch.dtype = torch.float32) -> Tensor:
    """Uniform [0, 1) numbers on `device`, drawn on the generator's device (gen_device, "" without
    a generator) and copied when that is another device (draw_device): a CPU generator gives the same
    draws for CPU and CUDA images. The Python transforms draw through these too."""
    g = draw_device(device, gen_device)
    return torch.rand(shape, device=g, dtype=dtype, generator=generator).to(device, non_blocking=True)


def bernoulli_on(shape: List[int], p: float, device: torch.device, generator: Optional[torch.Generator], gen_device: str) -> Tensor:
    """Bool coins with P(True) = p on `device` (generator rules as rand_on)."""
    g = draw_device(device, gen_device)
    return torch.empty(shape, dtype=torch.bool, device=g).bernoulli_(p, generator=generator).to(device, non_blocking=True)


def randint_on(high: int, shape: List[int], device: torch.device, generator: Optional[torch.Generator], gen_device: str) -> Tensor:
    """int64 uniform in [0, high) on `device` (generator rules as rand_on)."""
    g = draw_device(device, gen_device)
    return torch.randint(high, shape, device=g, generator=generator).to(device, non_blocking=True)


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


def policy_draws(kind: int, batch: int, space_size: int, num_ops: int, magnitude: int, num_bins: int,
                 sub_idx: Optional[Tensor], sub_prob: Optional[Tensor], sub_bins: Optional[Tensor], device: torch.device,
                 generator: Optional[torch.Generator], gen_device: str) -> Tuple[Tensor, Tensor, Tensor, Optional[Tensor]]:
    """(choice, bins, coin, apply) of a policy, with torchvision's draws per sample. kind 0:
    RandAugment (num_ops ops of the space, bin `magnitude`); 1: TrivialAugmentWide (one op, a
    random bin); 2: AutoAugment (a sub-policy of the (S, 2) tables on `device`: each of its ops
    applied when a uniform draw is <= its probability)."""
    apply: Optional[Tensor] = None
    if kind == 0:
        shape = [batch, num_ops]
        choice = randint_on(space_size, shape, device, generator, gen_device)
        coin = rand_on(shape, device, generator, gen_device) <= 0.5
        bins = torch.full(shape, magnitude, dtype=torch.int64, device=device)
    elif kind == 1:
        shape = [batch, 1]
        choice = randint_on(space_size, shape, device, generator, gen_device)
        bins = randint_on(num_bins, shape, device, generator, gen_device)
        coin = rand_on(shape, device, generator, gen_device) <= 0.5
    else:
        assert sub_idx is not None and sub_prob is not None and sub_bins is not None
        s = randint_on(sub_idx.shape[0], [batch], device, generator, gen_device)
        u = rand_on([batch, 2, 2], device, generator, gen_device)
        choice = sub_idx[s]
        apply = u[:, :, 0] <= sub_prob[s]
        coin = u[:, :, 1] <= 0.5
        bins = sub_bins[s]
    return choice, bins, coin, apply


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
            rand = rand_on([b, 22], images.device, self.generator, self.gen_device, torch.float64)
            boxes = torch.ops.torchaug._random_resized_crop_boxes(rand, None, h, w, self.scale[0], self.scale[1],
                                                                  self.ratio[0], self.ratio[1])
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

    The space's tables: op ids (K,), signed (K,), static magnitudes (K, bins); rows in `sized`
    are torchvision's image-size dependent translate ranges, linspace(0, scale * size, bins) with
    size the height (axis 0) or width (axis 1), computed per call as the Python transform does.
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
            k, axis, scale = int(row[0]), int(row[1]), row[2]
            mags[k] = torch.linspace(0.0, scale * (h if axis == 0 else w), self.num_bins)
        return [torch.tensor(self.ids, dtype=torch.int64).to(device), mags.to(device),
                torch.tensor(self.signed, dtype=torch.bool).to(device)]

    @torch.jit.export
    def make_params(self, images: Tensor) -> Dict[str, Tensor]:
        b, dev = images.shape[0], images.device
        ids, mags, signed = self._tables(images.shape[-2], images.shape[-1], dev)
        choice, bins, coin, apply = policy_draws(self.kind, b, len(self.ids), self.num_ops, self.magnitude, self.num_bins,
                                                 self.sub_idx.to(dev), self.sub_prob.to(dev), self.sub_bins.to(dev), dev,
                                                 self.generator, self.gen_device)
        return policy_program(ids, mags, signed, choice, bins, coin, apply)

    @torch.jit.export
    def transform(self, images: Tensor, params: Dict[str, Tensor]) -> Tensor:
        fill: Optional[Tensor] = None
        fill_values = self.fill
        if fill_values is not None:
            b, c = images.shape[0], images.shape[1]
            f = torch.tensor(fill_values, dtype=torch.float32, device=images.device)
            fill = (f.expand(c) if len(fill_values) == 1 else f).unsqueeze(0).expand(b, c)
        return torch.ops.torchaug.augment(images, params["ops"], params["magnitudes"], self.interpolation, fill)


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
