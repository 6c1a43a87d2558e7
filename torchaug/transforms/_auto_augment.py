"""Auto-augmentation policies with a different op for every sample: RandAugment,
TrivialAugmentWide, AutoAugment and AugMix with torchvision.transforms.v2 names, signatures and
magnitude spaces, plus custom op lists as DALI's auto_aug takes them.

A policy draws a program per call: for every sample and slot an op (an index into the policy's
augmentation space) and a signed magnitude, as (B, n) tensors on the images' device. The
built-in ops of the program run in one torchaug::augment call (one switch pass per slot, no
Python loop over samples, no batch splitting); a custom op written in Python is called once per
slot on the whole batch with the mask of the samples that drew it."""
import enum
import math
import numbers
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch

from .. import functional as F
from ..functional._utils import interpolation_code
from . import _draws as D
from . import _script as S
from . import _targets as TG
from ._geometry import _mask_fill, _sizes
from ._transform import BatchInfo, Transform, _per_frame, script_fill

MagnitudeFn = Callable[[int, int, int], Optional[torch.Tensor]]


class Augmentation:
    """One op of an auto-augmentation space.

    op: a torchaug op name (F.AUGMENT_OPS: "shear_x", "brightness", ...) or torchvision's ("ShearX",
        "Color", ...): it runs inside the switch pass with torchvision's meaning of the magnitude;
        or a callable fn(images, magnitudes, apply) -> images, a custom op written with torchaug
        ops: magnitudes (B,) float32 signed, apply (B,) bool the samples that drew it in this slot
        (it must return the others unchanged; an op with per-sample parameters can make them the
        identity, as a zero-size erase box).
    magnitudes: None (the op takes none), a (low, high) range (torch.linspace(low, high, bins), as
        DALI's mag_range), or torchvision's form fn(num_bins, height, width) -> (num_bins,) tensor.
    randomly_negate: the magnitude's sign is flipped with probability 1/2 (torchvision's "signed").
    """

    def __init__(self, op: Union[str, Callable], magnitudes: Union[None, Tuple[float, float], MagnitudeFn] = None,
                 randomly_negate: bool = False, name: Optional[str] = None):
        if isinstance(op, str):
            self.op_id = F.augment_op_id(op)
            self.fn = None
            self.name = name or op
        elif callable(op):
            self.op_id = 0
            self.fn = op
            self.name = name or getattr(op, "__name__", "custom")
        else:
            raise TypeError(f"torchaug.transforms.Augmentation: op must be an op name or a callable, got {type(op).__name__}")
        if magnitudes is None or callable(magnitudes):
            self.magnitudes = magnitudes
        elif (isinstance(magnitudes, Sequence) and len(magnitudes) == 2
              and all(isinstance(v, numbers.Real) and math.isfinite(v) for v in magnitudes)):
            lo, hi = float(magnitudes[0]), float(magnitudes[1])
            self.magnitudes = lambda num_bins, height, width: torch.linspace(lo, hi, num_bins)
        else:
            raise ValueError(f"torchaug.transforms.Augmentation {self.name}: magnitudes must be None, a (low, high) pair "
                             f"of finite numbers or a function (num_bins, height, width) -> tensor, got {magnitudes!r}")
        self.randomly_negate = bool(randomly_negate)

    def table(self, num_bins: int, height: int, width: int) -> torch.Tensor:
        """(num_bins,) float32 magnitudes of the bins (zeros when the op takes none)."""
        if self.magnitudes is None:
            return torch.zeros(num_bins, dtype=torch.float32)
        t = torch.as_tensor(self.magnitudes(num_bins, height, width))
        if t.shape != (num_bins,):
            raise ValueError(f"torchaug.transforms.Augmentation {self.name}: its magnitudes must have shape ({num_bins},), got {tuple(t.shape)}")
        # torchvision reads float(magnitudes[i]): the values of its (float32 or int) tensor
        return t.to(torch.float32)

    def __repr__(self):
        return f"Augmentation({self.name!r}, randomly_negate={self.randomly_negate})"


def _lin(lo: float, hi: float) -> MagnitudeFn:
    return lambda num_bins, height, width: torch.linspace(lo, hi, num_bins)


def _posterize(levels: float, top: int = 8) -> MagnitudeFn:
    return lambda num_bins, height, width: (top - (torch.arange(num_bins) / ((num_bins - 1) / levels))).round().int()


def _space(entries: Dict[str, Tuple[Optional[MagnitudeFn], bool]]) -> Dict[str, Augmentation]:
    return {name: Augmentation(name, fn, signed) for name, (fn, signed) in entries.items()}


# torchvision.transforms.v2's augmentation spaces, entry for entry
class _SizedLinspace:
    """linspace(0, scale * size, num_bins) (or size / divisor when a divisor is given), size the
    image height (axis 0) or width (axis 1): torchvision's translate ranges, with its arithmetic (a
    class, not a lambda, so that the TorchScript form knows it)."""

    def __init__(self, axis: int, scale: float, divisor: float = 0.0):
        self.axis, self.scale, self.divisor = axis, scale, divisor

    def __call__(self, num_bins: int, height: int, width: int) -> torch.Tensor:
        size = height if self.axis == 0 else width
        return torch.linspace(0.0, size / self.divisor if self.divisor else self.scale * size, num_bins)

    def row(self, k: int) -> List[float]:
        """[k, axis, scale, divisor]: the scripted policies' description of space entry k."""
        return [float(k), float(self.axis), self.scale, self.divisor]


_WIDTH_331 = _SizedLinspace(1, 150.0 / 331.0)
_HEIGHT_331 = _SizedLinspace(0, 150.0 / 331.0)
_BASE = {
    "ShearX": (_lin(0.0, 0.3), True),
    "ShearY": (_lin(0.0, 0.3), True),
    "TranslateX": (_WIDTH_331, True),
    "TranslateY": (_HEIGHT_331, True),
    "Rotate": (_lin(0.0, 30.0), True),
    "Brightness": (_lin(0.0, 0.9), True),
    "Color": (_lin(0.0, 0.9), True),
    "Contrast": (_lin(0.0, 0.9), True),
    "Sharpness": (_lin(0.0, 0.9), True),
    "Posterize": (_posterize(4), False),
    "Solarize": (_lin(1.0, 0.0), False),
    "AutoContrast": (None, False),
    "Equalize": (None, False),
}
RAND_AUGMENT_SPACE = {"Identity": (None, False), **_BASE}
AUTO_AUGMENT_SPACE = {**_BASE, "Invert": (None, False)}
TRIVIAL_AUGMENT_WIDE_SPACE = {
    "Identity": (None, False),
    "ShearX": (_lin(0.0, 0.99), True),
    "ShearY": (_lin(0.0, 0.99), True),
    "TranslateX": (_lin(0.0, 32.0), True),
    "TranslateY": (_lin(0.0, 32.0), True),
    "Rotate": (_lin(0.0, 135.0), True),
    "Brightness": (_lin(0.0, 0.99), True),
    "Color": (_lin(0.0, 0.99), True),
    "Contrast": (_lin(0.0, 0.99), True),
    "Sharpness": (_lin(0.0, 0.99), True),
    "Posterize": (_posterize(6), False),
    "Solarize": (_lin(1.0, 0.0), False),
    "AutoContrast": (None, False),
    "Equalize": (None, False),
}
AUGMIX_PARTIAL_SPACE = {
    "ShearX": (_lin(0.0, 0.3), True),
    "ShearY": (_lin(0.0, 0.3), True),
    "TranslateX": (_SizedLinspace(1, 0.0, 3.0), True),
    "TranslateY": (_SizedLinspace(0, 0.0, 3.0), True),
    "Rotate": (_lin(0.0, 30.0), True),
    "Posterize": (_posterize(4, top=4), False),
    "Solarize": (_lin(1.0, 0.0), False),
    "AutoContrast": (None, False),
    "Equalize": (None, False),
}
AUGMIX_SPACE = {
    **AUGMIX_PARTIAL_SPACE,
    "Brightness": (_lin(0.0, 0.9), True),
    "Color": (_lin(0.0, 0.9), True),
    "Contrast": (_lin(0.0, 0.9), True),
    "Sharpness": (_lin(0.0, 0.9), True),
}


class _Tables:
    """A space's tables on a device for one image size: kernel op ids (K,), magnitudes (K, bins),
    signed (K,)."""

    def __init__(self, space: List[Augmentation], num_bins: int, height: int, width: int, device):
        self.ids = torch.tensor([a.op_id for a in space], dtype=torch.int64).to(device)
        self.mags = torch.stack([a.table(num_bins, height, width) for a in space]).to(device)
        self.signed = torch.tensor([a.randomly_negate for a in space], dtype=torch.bool).to(device)


class _AutoAugmentBase(Transform):
    """A policy over an augmentation space (an ordered list of Augmentation). Parameters:
    {"choice": (B, n) int64 index into the space, "ops": (B, n) int64 op ids of torchaug::augment,
    "magnitudes": (B, n) float32 signed magnitudes}; ops of samples that skip a slot are 0
    (identity)."""

    _SPACE: Dict[str, Tuple[Optional[MagnitudeFn], bool]] = {}

    def __init__(self, interpolation="nearest", fill=None, augmentations=None, exclude: Sequence[str] = (),
                 generator: Optional[torch.Generator] = None):
        super().__init__(generator)
        name = type(self).__name__
        interpolation_code(interpolation, name, ("nearest", "bilinear"))
        self.interpolation = interpolation
        valid = (fill is None or isinstance(fill, torch.Tensor)
                 or (isinstance(fill, numbers.Real) and not isinstance(fill, bool))
                 or (isinstance(fill, Sequence) and not isinstance(fill, str) and all(isinstance(v, numbers.Real) for v in fill)))
        if not valid:
            raise TypeError(f"torchaug.transforms.{name}: fill must be None, a number or a sequence of numbers, got {fill!r}")
        self.fill = fill
        self.space = self._build_space(augmentations, exclude)
        self._custom = [i for i, a in enumerate(self.space) if a.fn is not None]  # the Python ops
        self._tables: Dict[Any, _Tables] = {}

    def _build_space(self, augmentations, exclude) -> List[Augmentation]:
        name = type(self).__name__
        default = _space(self._SPACE)
        if augmentations is None:
            space = dict(default)
        else:
            if isinstance(augmentations, (str, Augmentation)) or not isinstance(augmentations, Sequence):
                raise TypeError(f"torchaug.transforms.{name}: augmentations must be a sequence of op names and Augmentation objects")
            space = {}
            for a in augmentations:
                if isinstance(a, str):
                    if a in default:
                        space[a] = default[a]
                    else:
                        raise ValueError(f"torchaug.transforms.{name}: unknown op {a!r} in augmentations; the policy's ops are "
                                         f"{', '.join(default)} (pass an Augmentation for any other)")
                elif isinstance(a, Augmentation):
                    space[a.name] = a
                else:
                    raise TypeError(f"torchaug.transforms.{name}: augmentations must hold op names or Augmentation objects, got {a!r}")
        if isinstance(exclude, str):
            exclude = [exclude]
        for e in exclude:
            if e not in space:
                raise ValueError(f"torchaug.transforms.{name}: cannot exclude {e!r}: not in the policy's ops ({', '.join(space)})")
            del space[e]
        if not space:
            raise ValueError(f"torchaug.transforms.{name}: the augmentation space is empty")
        return list(space.values())

    def _tables_for(self, num_bins: int, height: int, width: int, device) -> _Tables:
        key = (num_bins, height, width, str(device))
        t = self._tables.get(key)
        if t is None:
            t = _Tables(self.space, num_bins, height, width, device)
            self._tables[key] = t
        return t

    def _info(self, images) -> BatchInfo:
        info = BatchInfo(images)
        if info.ragged:
            raise TypeError(f"torchaug.transforms.{type(self).__name__}: takes a (B, C, H, W) or (C, H, W) tensor, got a list")
        return info

    def _program(self, t: _Tables, choice: torch.Tensor, bins: torch.Tensor, coin: torch.Tensor,
                 apply: Optional[torch.Tensor] = None) -> Dict[str, Any]:
        """The program of space indices `choice` at magnitude bins `bins`, negated where `coin` and
        the op is signed; samples where `apply` is False get the identity."""
        return D.policy_program(t.ids, t.mags, t.signed, choice, bins, coin, apply)

    def _run(self, images, params: Dict[str, Any]):
        ops, mags, choice = params["ops"], params["magnitudes"], params["choice"]
        if not self._custom:
            return F.augment(images, ops, mags, self.interpolation, self.fill, validate=False)
        x = images
        for k in range(ops.shape[1]):
            x = F.augment(x, ops[:, k:k + 1], mags[:, k:k + 1], self.interpolation, self.fill, validate=False)
            for i in self._custom:
                single = x.dim() == 3
                xb = x.unsqueeze(0) if single else x
                xb = self.space[i].fn(xb, mags[:, k], choice[:, k] == i)
                x = xb[0] if single else xb
        return x

    def transform(self, images, params: Dict[str, Any]):
        return self._run(images, params)

    def transform_fused(self, images, params: Dict[str, Any], mean, std, out_dtype=None, memory_format=None):
        """transform, then normalize(mean, std, out_dtype, memory_format), in one op call (Compose
        fuses a following ToDtype(floating, scale=True) + Normalize into it)."""
        if self._custom:
            x = self._run(images, params)
            return F.normalize(x, mean, std, out_dtype=out_dtype, memory_format=memory_format)
        return F.augment(images, params["ops"], params["magnitudes"], self.interpolation, self.fill, validate=False,
                         mean=mean, std=std, out_dtype=out_dtype, memory_format=memory_format)

    # the geometric ops of the space, by torchaug::augment op id
    _GEOMETRIC = (F.AUGMENT_OPS["shear_x"], F.AUGMENT_OPS["shear_y"], F.AUGMENT_OPS["translate_x"],
                  F.AUGMENT_OPS["translate_y"], F.AUGMENT_OPS["rotate"])

    def _target_steps(self, images, info, params):
        """One step per slot, moving the samples whose op in that slot is geometric as torchvision's
        functional op with the same magnitude moves boxes and keypoints: ShearX / ShearY
        affine(shear=degrees(atan(m)), center=[0, 0]), TranslateX / Y affine(translate=int(m)),
        Rotate rotate(m). Custom Python ops leave targets where they are."""
        ops, mags = params["ops"], params["magnitudes"].to(torch.float64)
        b, dev = info.batch, info.device
        half = info.sizes().to(torch.float64).flip(1) * 0.5
        zero = torch.zeros(b, dtype=torch.float64, device=dev)
        sx_id, sy_id, tx_id, ty_id, rot_id = self._GEOMETRIC
        steps = []
        for k in range(ops.shape[1]):
            op, m = ops[:, k], mags[:, k]
            is_sx, is_sy, is_tx, is_ty, is_rot = (op == sx_id), (op == sy_id), (op == tx_id), (op == ty_id), (op == rot_id)
            shear_deg = torch.rad2deg(torch.atan(m))
            shear = torch.stack([torch.where(is_sx, shear_deg, zero), torch.where(is_sy, shear_deg, zero)], 1)
            translate = torch.stack([torch.where(is_tx, m.trunc(), zero), torch.where(is_ty, m.trunc(), zero)], 1)
            angle = torch.where(is_rot, -m, zero)
            center = torch.where((is_sx | is_sy).unsqueeze(1), torch.zeros_like(half), half)
            mat = TG.forward_affine(angle, translate, torch.ones_like(zero), shear, center)
            steps.append(TG.Step(mat, _sizes(info), applies=is_sx | is_sy | is_tx | is_ty | is_rot))
        return steps

    def _transform_masks(self, masks, idx, params, info):
        ops = params["ops"]
        geometric = torch.zeros_like(ops, dtype=torch.bool)
        for g in self._GEOMETRIC:
            geometric |= ops == g
        only_geometric = torch.where(geometric, ops, torch.zeros_like(ops))[idx]
        return F.augment(masks, only_geometric, params["magnitudes"][idx], "nearest", _mask_fill(self.fill), validate=False)

    _KIND: Optional[int] = None  # the policy's kind for _script.policy_sample (None: the class draws its own)
    num_ops, magnitude = 1, 0  # RandAugment's; the others' draws do not read them

    def _num_bins(self) -> int:
        return self.num_magnitude_bins

    def _sub_policies(self, device) -> Tuple[Optional[torch.Tensor], Optional[torch.Tensor], Optional[torch.Tensor]]:
        """AutoAugment's (S, 2) sub-policy tables on `device`."""
        return None, None, None

    def make_params(self, images) -> Dict[str, Any]:
        info = self._info(images)
        h, w = info.uniform_size
        dev = torch.device(info.device)
        t = self._tables_for(self._num_bins(), h, w, dev)
        rand = D.compiled_draws(info.batch, D.policy_draws(self._KIND, self.num_ops), dev, self.generator)
        return D.policy_sample(self._KIND, info.batch, t.ids, t.mags, t.signed, self.num_ops, self.magnitude,
                               *self._sub_policies(dev), self.generator, rand)

    def _scriptable(self):
        name = type(self).__name__
        if self._KIND is None:
            return None
        ids, signed, static, sized = self._script_space(self._num_bins())
        empty = torch.zeros(0, 2, dtype=torch.int64)
        return S.ScriptPolicy(
            self._KIND, ids, signed, static, sized,
            self.num_ops, self.magnitude, interpolation_code(self.interpolation, name, ("nearest", "bilinear")),
            script_fill(self.fill, name), getattr(self, "_sub_idx", empty), getattr(self, "_sub_prob", empty.float()),
            getattr(self, "_sub_bins", empty), self.generator)

    def _script_space(self, bins: int):
        """The space as the scripted forms hold it: op ids, signed flags, the (K, bins) magnitudes that
        do not depend on the image size, and [k, axis, scale] rows for those that do."""
        name = type(self).__name__
        if self._custom:
            raise RuntimeError(f"torchaug.transforms.{name}: a space with Python augmentations has no TorchScript form")
        static, sized = [], []
        for k, a in enumerate(self.space):
            if isinstance(a.magnitudes, _SizedLinspace):
                sized.append(a.magnitudes.row(k))
                static.append(torch.zeros(bins))
                continue
            t = a.table(bins, 224, 224)
            if not torch.equal(t, a.table(bins, 97, 331)):
                raise RuntimeError(f"torchaug.transforms.{name}: the magnitudes of {a.name} depend on the image size; no TorchScript form")
            static.append(t)
        return [a.op_id for a in self.space], [a.randomly_negate for a in self.space], torch.stack(static), sized


def _check_bins(num_magnitude_bins, name: str) -> int:
    if isinstance(num_magnitude_bins, bool) or not isinstance(num_magnitude_bins, numbers.Integral) or num_magnitude_bins < 2:
        raise ValueError(f"torchaug.transforms.{name}: num_magnitude_bins must be an integer >= 2, got {num_magnitude_bins!r}")
    return int(num_magnitude_bins)


class RandAugment(_AutoAugmentBase):
    """torchvision.transforms.v2.RandAugment(num_ops, magnitude, num_magnitude_bins, interpolation,
    fill) with its own ops for every sample: each of the num_ops slots draws an op uniformly from
    the space (Identity included) and its sign. augmentations: the space instead of torchvision's
    (op names of it, or Augmentation objects); exclude: names to leave out (say ["Rotate"] for
    digits)."""

    _SPACE = RAND_AUGMENT_SPACE
    _KIND = 0

    def __init__(self, num_ops: int = 2, magnitude: int = 9, num_magnitude_bins: int = 31, interpolation="nearest",
                 fill=None, *, augmentations=None, exclude: Sequence[str] = (), generator: Optional[torch.Generator] = None):
        super().__init__(interpolation, fill, augmentations, exclude, generator)
        if isinstance(num_ops, bool) or not isinstance(num_ops, int) or num_ops < 0:
            raise ValueError(f"torchaug.transforms.RandAugment: num_ops should be a non-negative integer, but got {num_ops!r} instead.")
        self.num_ops = num_ops
        self.num_magnitude_bins = _check_bins(num_magnitude_bins, "RandAugment")
        if isinstance(magnitude, bool) or not isinstance(magnitude, numbers.Integral) or not 0 <= magnitude < self.num_magnitude_bins:
            raise ValueError(f"torchaug.transforms.RandAugment: magnitude must be an integer in [0, num_magnitude_bins) = "
                             f"[0, {self.num_magnitude_bins}), got {magnitude!r}")
        self.magnitude = int(magnitude)


class TrivialAugmentWide(_AutoAugmentBase):
    """torchvision.transforms.v2.TrivialAugmentWide(num_magnitude_bins, interpolation, fill) with
    its own op, magnitude bin and sign for every sample. augmentations / exclude as RandAugment."""

    _SPACE = TRIVIAL_AUGMENT_WIDE_SPACE
    _KIND = 1

    def __init__(self, num_magnitude_bins: int = 31, interpolation="nearest", fill=None, *, augmentations=None,
                 exclude: Sequence[str] = (), generator: Optional[torch.Generator] = None):
        super().__init__(interpolation, fill, augmentations, exclude, generator)
        self.num_magnitude_bins = _check_bins(num_magnitude_bins, "TrivialAugmentWide")


class AutoAugmentPolicy(enum.Enum):
    """torchvision's AutoAugmentPolicy (its values, so torchvision's enum members are accepted too)."""

    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


SubPolicy = Tuple[Tuple[str, float, Optional[int]], Tuple[str, float, Optional[int]]]

_POLICIES: Dict[str, List[SubPolicy]] = {
    "imagenet": [
        (("Posterize", 0.4, 8), ("Rotate", 0.6, 9)),
        (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)),
        (("Posterize", 0.6, 7), ("Posterize", 0.6, 6)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)),
        (("Equalize", 0.4, None), ("Rotate", 0.8, 8)),
        (("Solarize", 0.6, 3), ("Equalize", 0.6, None)),
        (("Posterize", 0.8, 5), ("Equalize", 1.0, None)),
        (("Rotate", 0.2, 3), ("Solarize", 0.6, 8)),
        (("Equalize", 0.6, None), ("Posterize", 0.4, 6)),
        (("Rotate", 0.8, 8), ("Color", 0.4, 0)),
        (("Rotate", 0.4, 9), ("Equalize", 0.6, None)),
        (("Equalize", 0.0, None), ("Equalize", 0.8, None)),
        (("Invert", 0.6, None), ("Equalize", 1.0, None)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Rotate", 0.8, 8), ("Color", 1.0, 2)),
        (("Color", 0.8, 8), ("Solarize", 0.8, 7)),
        (("Sharpness", 0.4, 7), ("Invert", 0.6, None)),
        (("ShearX", 0.6, 5), ("Equalize", 1.0, None)),
        (("Color", 0.4, 0), ("Equalize", 0.6, None)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)),
        (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Invert", 0.6, None), ("Equalize", 1.0, None)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)),
    ],
    "cifar10": [
        (("Invert", 0.1, None), ("Contrast", 0.2, 6)),
        (("Rotate", 0.7, 2), ("TranslateX", 0.3, 9)),
        (("Sharpness", 0.8, 1), ("Sharpness", 0.9, 3)),
        (("ShearY", 0.5, 8), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.5, None), ("Equalize", 0.9, None)),
        (("ShearY", 0.2, 7), ("Posterize", 0.3, 7)),
        (("Color", 0.4, 3), ("Brightness", 0.6, 7)),
        (("Sharpness", 0.3, 9), ("Brightness", 0.7, 9)),
        (("Equalize", 0.6, None), ("Equalize", 0.5, None)),
        (("Contrast", 0.6, 7), ("Sharpness", 0.6, 5)),
        (("Color", 0.7, 7), ("TranslateX", 0.5, 8)),
        (("Equalize", 0.3, None), ("AutoContrast", 0.4, None)),
        (("TranslateY", 0.4, 3), ("Sharpness", 0.2, 6)),
        (("Brightness", 0.9, 6), ("Color", 0.2, 8)),
        (("Solarize", 0.5, 2), ("Invert", 0.0, None)),
        (("Equalize", 0.2, None), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.2, None), ("Equalize", 0.6, None)),
        (("Color", 0.9, 9), ("Equalize", 0.6, None)),
        (("AutoContrast", 0.8, None), ("Solarize", 0.2, 8)),
        (("Brightness", 0.1, 3), ("Color", 0.7, 0)),
        (("Solarize", 0.4, 5), ("AutoContrast", 0.9, None)),
        (("TranslateY", 0.9, 9), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.9, None), ("Solarize", 0.8, 3)),
        (("Equalize", 0.8, None), ("Invert", 0.1, None)),
        (("TranslateY", 0.7, 9), ("AutoContrast", 0.9, None)),
    ],
    "svhn": [
        (("ShearX", 0.9, 4), ("Invert", 0.2, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.6, None), ("Solarize", 0.6, 6)),
        (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("AutoContrast", 0.8, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.4, None)),
        (("ShearY", 0.9, 5), ("Solarize", 0.2, 6)),
        (("Invert", 0.9, None), ("AutoContrast", 0.8, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("Solarize", 0.3, 3)),
        (("ShearY", 0.8, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.9, None), ("TranslateY", 0.6, 6)),
        (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Contrast", 0.3, 3), ("Rotate", 0.8, 4)),
        (("Invert", 0.8, None), ("TranslateY", 0.0, 2)),
        (("ShearY", 0.7, 6), ("Solarize", 0.4, 8)),
        (("Invert", 0.6, None), ("Rotate", 0.8, 4)),
        (("ShearY", 0.3, 7), ("TranslateX", 0.9, 3)),
        (("ShearX", 0.1, 6), ("Invert", 0.6, None)),
        (("Solarize", 0.7, 2), ("TranslateY", 0.6, 7)),
        (("ShearY", 0.8, 4), ("Invert", 0.8, None)),
        (("ShearX", 0.7, 9), ("TranslateY", 0.8, 3)),
        (("ShearY", 0.8, 5), ("AutoContrast", 0.7, None)),
        (("ShearX", 0.7, 2), ("Invert", 0.1, None)),
    ],
}


class AutoAugment(_AutoAugmentBase):
    """torchvision.transforms.v2.AutoAugment(policy, interpolation, fill) with its own sub-policy
    for every sample, each op applied with its probability and sign per sample. policy: an
    AutoAugmentPolicy (torchaug's or torchvision's) or a custom list of sub-policies
    ((name, probability, magnitude bin or None), (name, probability, bin or None)) over the space
    (AUTO_AUGMENT_SPACE, 10 bins, plus any Augmentation given in augmentations)."""

    _SPACE = AUTO_AUGMENT_SPACE
    NUM_BINS = 10
    _KIND = 2

    def __init__(self, policy=AutoAugmentPolicy.IMAGENET, interpolation="nearest", fill=None, *, augmentations=None,
                 generator: Optional[torch.Generator] = None):
        extra = list(augmentations) if augmentations is not None else []
        for a in extra:
            if not isinstance(a, Augmentation):
                raise TypeError(f"torchaug.transforms.AutoAugment: augmentations must be Augmentation objects, got {a!r}")
        super().__init__(interpolation, fill, list(self._SPACE) + extra, (), generator)
        self.policy = policy
        value = getattr(policy, "value", None)
        if isinstance(value, str) and value in _POLICIES:
            subs = _POLICIES[value]
        elif isinstance(policy, Sequence) and not isinstance(policy, str) and len(policy) > 0:
            subs = list(policy)
        else:
            raise ValueError(f"torchaug.transforms.AutoAugment: the provided policy {policy!r} is not recognized")
        names = [a.name for a in self.space]
        idx, prob, bins = [], [], []
        for s in subs:
            if not (isinstance(s, Sequence) and len(s) == 2):
                raise ValueError(f"torchaug.transforms.AutoAugment: a sub-policy must be two (name, probability, bin) entries, got {s!r}")
            for entry in s:
                if not (isinstance(entry, Sequence) and len(entry) == 3):
                    raise ValueError(f"torchaug.transforms.AutoAugment: a sub-policy entry must be (name, probability, bin), got {entry!r}")
                op, p, b = entry
                if op not in names:
                    raise ValueError(f"torchaug.transforms.AutoAugment: unknown op {op!r}; known: {', '.join(names)}")
                if not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
                    raise ValueError(f"torchaug.transforms.AutoAugment: probability of {op} must be in [0, 1], got {p!r}")
                if b is not None and (isinstance(b, bool) or not isinstance(b, numbers.Integral) or not 0 <= b < self.NUM_BINS):
                    raise ValueError(f"torchaug.transforms.AutoAugment: magnitude bin of {op} must be None or in [0, {self.NUM_BINS}), got {b!r}")
                idx.append(names.index(op))
                prob.append(float(p))
                bins.append(0 if b is None else int(b))
        self._sub_idx = torch.tensor(idx, dtype=torch.int64).view(-1, 2)
        self._sub_prob = torch.tensor(prob, dtype=torch.float32).view(-1, 2)
        self._sub_bins = torch.tensor(bins, dtype=torch.int64).view(-1, 2)
        self._sub_dev: Dict[str, Tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}

    def _num_bins(self) -> int:
        return self.NUM_BINS

    def _sub_policies(self, device):
        sub = self._sub_dev.get(str(device))
        if sub is None:
            sub = (self._sub_idx.to(device), self._sub_prob.to(device), self._sub_bins.to(device))
            self._sub_dev[str(device)] = sub
        return sub


class AugMix(_AutoAugmentBase):
    """torchvision.transforms.v2.AugMix(severity, mixture_width, chain_depth, alpha, all_ops,
    interpolation, fill) per sample: each sample's mixture_width chains have their own depth (1 to
    3 when chain_depth <= 0), ops, magnitudes and signs, and its own Dirichlet / Beta weights. The
    chains of the whole batch run as one torchaug::augment call over mixture_width copies of it;
    the mix is computed as torchvision does (float32, then cast back to the images' dtype)."""

    def __init__(self, severity: int = 3, mixture_width: int = 3, chain_depth: int = -1, alpha: float = 1.0,
                 all_ops: bool = True, interpolation="bilinear", fill=None, *, augmentations=None,
                 exclude: Sequence[str] = (), generator: Optional[torch.Generator] = None):
        self._SPACE = AUGMIX_SPACE if all_ops else AUGMIX_PARTIAL_SPACE
        super().__init__(interpolation, fill, augmentations, exclude, generator)
        if isinstance(severity, bool) or not isinstance(severity, numbers.Integral) or not 1 <= severity <= 10:
            raise ValueError(f"torchaug.transforms.AugMix: the severity must be between [1, 10]. Got {severity!r} instead.")
        if isinstance(mixture_width, bool) or not isinstance(mixture_width, numbers.Integral) or mixture_width < 1:
            raise ValueError(f"torchaug.transforms.AugMix: mixture_width must be a positive integer, got {mixture_width!r}")
        if isinstance(chain_depth, bool) or not isinstance(chain_depth, numbers.Integral):
            raise ValueError(f"torchaug.transforms.AugMix: chain_depth must be an integer, got {chain_depth!r}")
        if not isinstance(alpha, numbers.Real) or not alpha > 0:
            raise ValueError(f"torchaug.transforms.AugMix: alpha must be positive, got {alpha!r}")
        if self._custom:
            raise ValueError("torchaug.transforms.AugMix: custom Python ops are not supported (the chains run as one augment call)")
        self.severity, self.mixture_width, self.chain_depth = int(severity), int(mixture_width), int(chain_depth)
        self.alpha, self.all_ops = float(alpha), bool(all_ops)

    def make_params(self, images) -> Dict[str, Any]:
        info = self._info(images)
        h, w = info.uniform_size
        dev = torch.device(info.device)
        t = self._tables_for(10, h, w, dev)  # torchvision's _PARAMETER_MAX bins
        return D.augmix_program(t.ids, t.mags, t.signed, info.batch, self.severity, self.mixture_width, self.chain_depth,
                                self.alpha, dev, *self._gen())

    def _scriptable(self):
        name = "AugMix"
        ids, signed, static, sized = self._script_space(10)
        return S.ScriptAugMix(ids, signed, static, sized, interpolation_code(self.interpolation, name, ("nearest", "bilinear")),
                              script_fill(self.fill, name), self.severity, self.mixture_width, self.chain_depth, self.alpha,
                              self.generator)

    def transform_targets(self, images, targets, params):
        info = BatchInfo(images)
        _, items = TG.collect(targets, info.batch, isinstance(images, torch.Tensor) and images.dim() == 3, "AugMix")
        if items:
            raise TypeError("torchaug.transforms.AugMix: bounding boxes, masks and keypoints cannot follow AugMix (it blends "
                            "copies of each image moved in different ways; torchvision's AugMix refuses them too)")
        return targets

    def _per_frame(self, params, clips, frames):
        # the chains' rows are (mixture_width, clips) flattened: each clip's row repeated per frame
        mw = self.mixture_width
        out = {}
        for k, v in params.items():
            if isinstance(v, torch.Tensor) and v.dim() >= 1 and v.shape[0] == mw * clips:
                out[k] = v.view(mw, clips, *v.shape[1:]).repeat_interleave(frames, 1).reshape(mw * clips * frames, *v.shape[1:])
            else:
                out[k] = _per_frame(v, clips, frames)
        return out

    def transform(self, images, params: Dict[str, Any]):
        single = images.dim() == 3
        x = images.unsqueeze(0) if single else images
        mw = self.mixture_width
        chains = self._run(x.repeat(mw, 1, 1, 1), params)
        out = D.augmix_mix(x, chains, params["weights"], params["original_weight"], mw)
        return out[0] if single else out
