"""The random draws of the transforms, shared by their eager forms (torchaug/transforms/_*.py) and
their TorchScript forms (torchaug/transforms/_script.py), so that both make the same torch RNG calls
in the same order: the same seed gives the same parameters, eager or scripted. Every function here
is TorchScript-compatible. A draw is made on `gen_device` (the generator's device, or the images'
without one; functional/_utils.py: draw_device) and moved to the images' device."""
from typing import Dict, List, Optional

import torch
from torch import Tensor

from ..functional._augment import _cutmix_boxes
from ..functional._filter import seeds_on
from ..functional._utils import draw_device


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
    """Uniform [low, high) numbers on `device` (generator rules as rand_on), drawn by one uniform_
    call, which consumes the generator as torch.rand does and maps its numbers inside its own kernel:
    a scripted transform then has no elementwise arithmetic on its draws for TorchScript's fuser to
    fuse (on CUDA a fused low + span * u is one FMA, an ulp away from eager's product and sum)."""
    g = draw_device(device, gen_device)
    return _moved(torch.empty(shape, device=g, dtype=dtype).uniform_(low, high, generator=generator), device)


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


AFFINE_DRAWS = 6  # uniforms per sample of _random_affine_params (csrc/kernels/geometry.h: kAffineDraws)
ERASING_DRAWS = 41  # uniforms per sample of _erasing_boxes (csrc/kernels/noise.h: kErasingDraws)
PERSPECTIVE_DRAWS = 9  # uniforms per sample of _perspective_params (csrc/kernels/geometry.h: kPerspectiveDraws)


def affine_params(batch: int, height: int, width: int, sizes: Optional[Tensor], degrees: List[float],
                  translate: Optional[List[float]], scale: Optional[List[float]], shear: Optional[List[float]], like: Tensor,
                  generator: Optional[torch.Generator], rand: Optional[Tensor] = None) -> Dict[str, Tensor]:
    """RandomAffine's parameters (torchvision's get_params per sample) in one launch of
    torchaug::_random_affine_params, for images of sizes (B, 2) int64, or all height x width when
    sizes is None; shear None, [min, max] (x only) or [x min, x max, y min, y max]. The op draws its
    (B, 6) float64 uniforms itself as jitter_program's does (rand: those drawn by the caller, the
    generator then unused); the parameters are float64 views of its (B, 6) rows."""
    p = torch.ops.torchaug._random_affine_params(rand, sizes, height, width, degrees, translate, scale, shear, batch, like,
                                                 generator if rand is None else None)
    return {"angle": p[:, 0], "translate": p[:, 1:3], "scale": p[:, 3], "shear": p[:, 4:6]}


def erasing_params(batch: int, channels: int, height: int, width: int, p: float, scale: List[float], log_ratio: List[float],
                   num_values: int, like: Tensor, generator: Optional[torch.Generator], gen_device: str,
                   rand: Optional[Tensor] = None) -> Dict[str, Tensor]:
    """RandomErasing's draws per sample: its coin and torchvision's up to 10 tries of area and
    log-uniform aspect ratio, the first that fits, in one launch of torchaug::_erasing_boxes (its
    (B, 41) uniforms drawn as jitter_program's are; rand: given); boxes (B, 4) int64 [top, left, h, w]
    (h = w = 0: left alone), and the seeds of random values (num_values 0: value="random"; else the
    count of fill values, 1 or the channels)."""
    random_value = num_values == 0
    if not random_value and num_values != 1 and num_values != channels:
        raise ValueError("torchaug.transforms.RandomErasing: value must have 1 or " + str(channels) + " values (the channels), got "
                         + str(num_values))
    boxes = torch.ops.torchaug._erasing_boxes(rand, height, width, p, scale[0], scale[1], log_ratio[0], log_ratio[1], batch, like,
                                              generator if rand is None else None)
    params = {"boxes": boxes}
    if random_value:
        params["seed"] = seeds_on(batch, like.device, generator, gen_device)
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
    return {"lam": lam, "boxes": _cutmix_boxes(lam, centers, height, width)}


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


def compiled_draws(batch: int, count: int, device: torch.device, generator: Optional[torch.Generator]) -> Optional[Tensor]:
    """Under torch.compile, the (batch, count) float64 uniforms an op would draw itself
    (_random_resized_crop_boxes, _policy_program: torch.rand's numbers from the generator, on its
    device), drawn here by torch.rand and passed to the op as `rand`; None in eager mode. The numbers
    are the same, but a torch.rand is a random op the compiler sees and keeps in program order, while
    an op's own draws are hidden from it: it moved them past the other transforms' draws. (Inductor
    draws torch.rand's numbers with its own generator unless torch._inductor.config.fallback_random
    is set; README: TorchScript, torch.compile.) Not for TorchScript."""
    if not torch.compiler.is_compiling():
        return None
    where = generator.device if generator is not None else device
    return torch.rand((batch, count), dtype=torch.float64, device=where, generator=generator).to(device)


def policy_draws(kind: int, num_ops: int) -> int:
    """The uniforms _policy_program draws per sample (csrc/kernels/augment.h: policy_draws)."""
    return 2 * num_ops if kind == 0 else (3 if kind == 1 else 5)


def policy_sample(kind: int, batch: int, ids: Tensor, mags: Tensor, signed: Tensor, num_ops: int, magnitude: int,
                  sub_idx: Optional[Tensor], sub_prob: Optional[Tensor], sub_bins: Optional[Tensor],
                  generator: Optional[torch.Generator], rand: Optional[Tensor] = None) -> Dict[str, Tensor]:
    """A policy's programs for `batch` samples in one launch: {"choice", "ops", "magnitudes"} as
    policy_program gives them. torchaug::_policy_program draws their uniforms (B, R) float64 itself,
    the numbers torch.rand((B, R), dtype=torch.float64, generator=generator) gives on the generator's
    device (the tables' device without one; on CUDA inside its kernel), and maps them to
    torchvision's choices. kind 0: RandAugment (2 a slot: op, sign); 1: TrivialAugmentWide (op, bin,
    sign); 2: AutoAugment (sub-policy, then applied and sign per op). rand: those uniforms drawn by
    the caller (compiled_draws), the generator then unused."""
    if kind != 2:
        sub_idx, sub_prob, sub_bins = None, None, None
    choice, ops, m = torch.ops.torchaug._policy_program(rand, ids, mags, signed, kind, num_ops, magnitude, sub_idx, sub_prob,
                                                        sub_bins, batch, generator if rand is None else None)
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


def random_color_range_params(op: int, p: float, const: Tensor, u: Tensor) -> Dict[str, Tensor]:
    """The color program of a random op with parameters drawn from ranges: op with probability p per
    sample (u[:, 0] < p), else the identity, with p0 = lo0 + span0 * u[:, 1] and p1 = lo1 + span1 *
    u[:, 2] from const (1, 4) float64 [lo0, span0, lo1, span1] and u (B, 3) uniform float64 draws."""
    ops = (u[:, :1] < p).to(torch.int64) * op
    p0 = torch.addcmul(const[:, 0:1], const[:, 1:2], u[:, 1:2])
    p1 = torch.addcmul(const[:, 2:3], const[:, 3:4], u[:, 2:3])
    return {"ops": ops, "params": torch.stack([p0, p1], dim=-1).to(torch.float32)}


def salt_and_pepper_params(p: float, amount: List[float], salt_vs_pepper: List[float], u: Tensor, seed: Tensor) -> Dict[str, Tensor]:
    """RandomSaltAndPepper's parameters from u (B, 3) uniform float64 draws and seed (B,): the amount
    (0 for the samples not drawn, u[:, 0] >= p) and the salt fraction drawn from their ranges."""
    amount_ = (amount[0] + (amount[1] - amount[0]) * u[:, 1]) * (u[:, 0] < p).to(u.dtype)
    salt = salt_vs_pepper[0] + (salt_vs_pepper[1] - salt_vs_pepper[0]) * u[:, 2]
    return {"amount": amount_.to(torch.float32), "salt_vs_pepper": salt.to(torch.float32), "seed": seed}


JITTER_DRAWS = 8  # uniforms per sample of _color_jitter_program (csrc/kernels/color.h: kJitterDraws)


def jitter_program(batch: int, const: List[float], like: Tensor, generator: Optional[torch.Generator],
                   rand: Optional[Tensor] = None) -> Dict[str, Tensor]:
    """ColorJitter's programs for `batch` samples in one launch of torchaug::_color_jitter_program,
    from const [lo (4), span (4), op codes (4)] of brightness, contrast, saturation, hue: per sample
    a random order (the argsort of 4 uniforms) and the factors lo + span * u (4 more uniforms). The
    op draws the (B, 8) float64 uniforms itself, the numbers torch.rand((B, 8), dtype=torch.float64,
    generator=generator) gives on the generator's device (like's device without one; on CUDA inside
    its kernel). rand: those uniforms drawn by the caller (compiled_draws), the generator then unused."""
    codes = [int(c) for c in const[8:12]]
    ops, params = torch.ops.torchaug._color_jitter_program(rand, const[0:4], const[4:8], codes, batch, like,
                                                           generator if rand is None else None)
    return {"ops": ops, "params": params}


def channel_permutation(u: Tensor) -> Dict[str, Tensor]:
    """A uniformly random permutation of the channels per sample from u (B, C) uniform draws (the
    argsort of each row): {"permutation": (B, C) int64}."""
    return {"permutation": u.argsort(dim=1)}


def photometric_distort_params(const: Tensor, p: float, u: Tensor) -> Dict[str, Tensor]:
    """RandomPhotometricDistort's program from const (1, 12) float64 [lo (4), span (4), op codes (4)]
    of brightness, contrast, saturation, hue (code 0: not made) and u (B, 10 + C) uniform draws:
    each adjustment made with probability p (u[:, :4]) with the factor lo + span * u[:, 4:8];
    contrast before saturation and hue where u[:, 8] < 0.5, after them otherwise (torchvision's
    contrast_before); the channels permuted with probability p (u[:, 9]) by the argsort of
    u[:, 10:]. {"ops" (B, 5), "params" (B, 5, 2)}: a 5-slot color program (brightness, contrast,
    saturation, hue, contrast; slots not made hold the identity), and "permutation" (B, C)."""
    b, c = u.shape[0], u.shape[1] - 10
    codes = torch.where(u[:, :4] < p, const[:, 8:12].expand(b, 4), torch.zeros_like(u[:, :4]))
    factors = torch.addcmul(const[:, :4], const[:, 4:8], u[:, 4:8]).to(torch.float32)
    before = u[:, 8] < 0.5
    contrast_before = torch.where(before, codes[:, 1], torch.zeros_like(codes[:, 1]))
    contrast_after = torch.where(before, torch.zeros_like(codes[:, 1]), codes[:, 1])
    ops = torch.stack([codes[:, 0], contrast_before, codes[:, 2], codes[:, 3], contrast_after], dim=1).to(torch.int64)
    p0 = torch.stack([factors[:, 0], factors[:, 1], factors[:, 2], factors[:, 3], factors[:, 1]], dim=1)
    identity = torch.arange(c, device=u.device).expand(b, c)
    permutation = torch.where(u[:, 9:10] < p, u[:, 10:].argsort(dim=1), identity)
    return {"ops": ops, "params": torch.stack([p0, torch.zeros_like(p0)], dim=-1), "permutation": permutation}


def odd_kernel(sigma: float) -> int:
    """ElasticTransform's blur window for sigma: int(8 * sigma + 1), made odd."""
    k = int(8 * sigma + 1)
    return k + 1 if k % 2 == 0 else k


def elastic_displacement(batch: int, h: int, w: int, alpha: List[float], sigma: List[float], device: torch.device,
                         generator: Optional[torch.Generator], gen_device: str) -> Tensor:
    """ElasticTransform's (B, H, W, 2) displacement fields, torchvision's draw per sample: uniform
    noise in [-1, 1] per axis, blurred with the window odd_kernel(sigma[axis]) and sigma (both
    values, as torchvision passes them), scaled by alpha[0] / W (x) and alpha[1] / H (y)."""
    fields: List[Tensor] = []
    for axis in range(2):
        d = rand_on([batch, 1, h, w], device, generator, gen_device) * 2 - 1
        if sigma[axis] > 0.0:
            k = odd_kernel(sigma[axis])
            s = torch.tensor(sigma, dtype=torch.float32, device=device).unsqueeze(0).expand(batch, 2)
            d = torch.ops.torchaug.gaussian_blur(d, [k, k], s)
        fields.append(d * alpha[axis] / (w if axis == 0 else h))
    return torch.cat(fields, 1).permute(0, 2, 3, 1)


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


def random_crop_offsets(batch: int, h: int, w: int, padding: List[int], size: List[int], like: Tensor,
                        generator: Optional[torch.Generator], rand: Optional[Tensor] = None,
                        flip_p: float = -1.0) -> Dict[str, Tensor]:
    """RandomCrop's window per sample, uniform over the padded image: {"top", "left"} (B,) int64 in
    the padded image's coordinates, each uniform over [0, padded - size] as torchvision's randint
    draws it (here floor(u * (padded - size + 1))), and "boxes", the (B, 4) [top, left, height,
    width] windows of which top and left are views (the crop's boxes with no copy).

    A size[0] x size[1] crop is RandomResizedCrop's box on the padded canvas with the scale and the
    ratio of that size: its first attempt fits, at exactly that size (the area and the ratio come
    back through sqrt and rint whole), and its offsets are drawn as above. So the window is one
    launch of torchaug::_random_resized_crop_boxes (its uniforms drawn in the kernel on CUDA, as
    torch.rand((B, 22), dtype=torch.float64) would draw them, the last two of each row giving the
    offsets), not a chain of small ops. rand: those uniforms drawn by the caller (compiled_draws).
    flip_p >= 0 (rand None): also "flip", the coins a RandomHorizontalFlip(flip_p) drawing next from
    the generator makes, from the same call (torchaug::_random_resized_crop_boxes_flips)."""
    ph, pw = h + padding[1] + padding[3], w + padding[0] + padding[2]
    if ph < size[0] or pw < size[1]:
        raise ValueError("torchaug.transforms.RandomCrop: crop size " + str(size) + " is larger than the padded image ("
                         + str(ph) + ", " + str(pw) + ")")
    scale = float(size[0] * size[1]) / float(ph * pw)
    ratio = float(size[1]) / float(size[0])
    if flip_p >= 0.0 and rand is None:
        boxes, flips = torch.ops.torchaug._random_resized_crop_boxes_flips(None, ph, pw, scale, scale, ratio, ratio, flip_p, batch,
                                                                           like, generator)
        return {"top": boxes[:, 0], "left": boxes[:, 1], "boxes": boxes, "flip": flips}
    boxes = torch.ops.torchaug._random_resized_crop_boxes(rand, None, ph, pw, scale, scale, ratio, ratio, batch, like,
                                                          generator if rand is None else None)
    return {"top": boxes[:, 0], "left": boxes[:, 1], "boxes": boxes}


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


def perspective_params(batch: int, height: int, width: int, distortion_scale: float, p: float, like: Tensor,
                       generator: Optional[torch.Generator], rand: Optional[Tensor] = None) -> Dict[str, Tensor]:
    """RandomPerspective's draws per sample (torchvision's get_params): a coin (uniform < p), the x
    and y of the top-left, top-right, bottom-right and bottom-left corners (integers in torchvision's
    ranges, in its order), and each sample's coefficients, in one launch of
    torchaug::_perspective_params (its (B, 9) uniforms drawn as jitter_program's are; rand: given)."""
    coefficients, applies = torch.ops.torchaug._perspective_params(rand, height, width, distortion_scale, p, batch, like,
                                                                   generator if rand is None else None)
    return {"coefficients": coefficients, "applies": applies}
