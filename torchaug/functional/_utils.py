"""Argument handling shared by the functional ops: batching, per-sample parameter broadcasting,
interpolation modes, and value validation of user-given device parameters."""
import enum
import functools
import inspect
import itertools
import math
import numbers
import operator
from typing import List, Optional, Sequence, Tuple

import torch


class InterpolationMode(enum.Enum):
    """The interpolation modes torchaug implements, with torchvision's names and values: a
    torchvision.transforms.InterpolationMode (or its string value) is accepted wherever this is."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"


_INTERP_CODES = {"nearest": 0, "bilinear": 1, "bicubic": 2, "nearest-exact": 3}


def interpolation_code(mode, op: str, allowed=("nearest", "bilinear", "bicubic", "nearest-exact")) -> int:
    """The ops' interpolation code of a mode (torchaug's or torchvision's InterpolationMode, or its
    value); `allowed` the modes the op takes (the resize family takes all four)."""
    value = getattr(mode, "value", mode)
    if isinstance(value, str) and value.lower() in allowed:
        return _INTERP_CODES[value.lower()]
    raise ValueError(f"torchaug.{op}: interpolation must be one of {', '.join(allowed)}, got {mode!r}")


def as_batch(images, op: str) -> Tuple[torch.Tensor, bool]:
    """(B, C, H, W) from a (C, H, W) or (B, C, H, W) tensor; the flag says to squeeze the result."""
    if not isinstance(images, torch.Tensor):
        raise TypeError(f"torchaug.{op}: images must be a torch.Tensor, got {type(images).__name__}")
    if images.dtype != torch.uint8 and not images.dtype.is_floating_point:
        raise TypeError(f"torchaug.{op}: images must be uint8 or floating, got {images.dtype}")
    if images.device.type == "meta":
        raise ValueError(f"torchaug.{op}: images must hold values, got a tensor on the meta device "
                         "(the ops, torch.ops.torchaug.*, take meta tensors)")
    if images.dim() >= 3 and images.numel() == 0 and any(s == 0 for s in images.shape[-3:]):
        raise ValueError(f"torchaug.{op}: images must have C, H, W > 0, got shape {tuple(images.shape)}")
    if images.dim() == 3:
        return images.unsqueeze(0), True
    if images.dim() != 4:
        raise ValueError(
            f"torchaug.{op}: images must be (C, H, W) or (B, C, H, W), got {images.dim()}-D with shape {tuple(images.shape)}"
        )
    return images, False


def generator_device(generator: Optional[torch.Generator]) -> str:
    """The generator's device as a string, "" without a generator (a string, so that TorchScript
    forms can hold it: TorchScript cannot read generator.device)."""
    return "" if generator is None else str(generator.device)


def draw_device(device: torch.device, gen_device: str) -> torch.device:
    """Where random numbers for `device` are drawn: on the generator's device when there is one (a
    CPU generator gives the same draws for CPU and CUDA images), then copied. TorchScript-compatible."""
    return torch.device(gen_device) if gen_device != "" else device


def draw_on(device, generator: Optional[torch.Generator], draw):
    """draw(device, generator): random numbers made on draw_device and returned on `device`."""
    device = torch.device(device)
    return draw(draw_device(device, generator_device(generator)), generator).to(device, non_blocking=True)


def unbatch(out: torch.Tensor, single: bool) -> torch.Tensor:
    return out[0] if single else out


def _as(value: torch.Tensor, shape: Tuple[int, ...], device, dtype) -> torch.Tensor:
    """value.to(device, dtype).expand(shape), skipping the calls that would change nothing (each
    is a dispatch, and a GIL release and re-acquisition in a producer thread beside the training
    loop)."""
    if value.dtype != dtype or value.device != device:
        value = value.to(device=device, dtype=dtype)
    return value if tuple(value.shape) == shape else value.expand(shape)


def _in_place(value, shape: Tuple[int, ...], device, dtype) -> bool:
    """Whether value is already the tensor per_sample / per_sample_rows would return (the draws the
    transforms pass), so that it is returned without their checks. A GPU tensor of the right dtype
    passes every check they make; a CPU floating one is still checked for finite values."""
    return (type(value) is torch.Tensor and value.dtype == dtype and value.shape == shape and value.device == device
            and (value.device.type != "cpu" or not value.is_floating_point()))


def per_sample(value, batch: int, device, dtype, name: str, op: str) -> torch.Tensor:
    """A (B,) tensor from a number, a 0-d, (1,) or (B,) tensor (on `device`)."""
    if _in_place(value, (batch,), device, dtype):
        return value
    if isinstance(value, torch.Tensor):
        _check_real(value, dtype, name, op)
        if value.dim() == 0:
            value = value.reshape(1)
        if value.dim() != 1 or value.shape[0] not in (1, batch):
            raise ValueError(f"torchaug.{op}: {name} must be a number or have shape (B,) or (1,) with B={batch}, got {tuple(value.shape)}")
        if value.device != torch.device(device) and value.numel() > 1 and value.device.type != "cpu":
            raise ValueError(f"torchaug.{op}: {name} must be on the images' device {device}, got {value.device}")
        return _as(value, (batch,), device, dtype)
    if isinstance(value, bool) or not isinstance(value, numbers.Number):
        if not (isinstance(value, bool) and dtype == torch.bool):
            raise TypeError(f"torchaug.{op}: {name} must be a number or a tensor, got {type(value).__name__}")
    if isinstance(value, complex) or not math.isfinite(value):
        raise ValueError(f"torchaug.{op}: {name} must be a finite real number, got {value}")
    return torch.full((batch,), value, dtype=dtype, device=device)


def check_tensor(value, name: str, op: str, integer: bool = False) -> torch.Tensor:
    """A tensor argument (other than the images) that holds values, not on the meta device, of a
    real dtype (an integer one where `integer`): the one type check of the functions' tensors."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"torchaug.{op}: {name} must be a tensor, got {type(value).__name__}")
    if value.is_complex() or value.dtype == torch.bool or (integer and value.is_floating_point()):
        raise TypeError(f"torchaug.{op}: {name} must be {'an integer' if integer else 'a real'} tensor, got {value.dtype}")
    if value.device.type == "meta":
        raise ValueError(f"torchaug.{op}: {name} must hold values, got a tensor on the meta device")
    return value


def _check_real(value: torch.Tensor, dtype: torch.dtype, name: str, op: str) -> None:
    """A tensor parameter is real (a complex one would lose its imaginary part in the cast) and a
    bool one only where a bool is asked; values on the CPU are finite (a GPU one is not read: that
    would synchronise)."""
    if value.is_complex() or (value.dtype == torch.bool) != (dtype == torch.bool):
        raise TypeError(f"torchaug.{op}: {name} must be a {'bool' if dtype == torch.bool else 'real number'} tensor, got {value.dtype}")
    if value.device.type == "meta":
        raise ValueError(f"torchaug.{op}: {name} must hold values, got a tensor on the meta device")
    if value.is_floating_point() and value.device.type == "cpu" and not torch.compiler.is_compiling() \
            and value.numel() and not bool(torch.isfinite(value).all()):
        raise ValueError(f"torchaug.{op}: {name} must be finite, got {value.tolist() if value.numel() <= 8 else value}")


@functools.lru_cache(maxsize=256)
def _constant_row(values: tuple, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    # constants of a transform (Normalize's mean, a fill) live on the device once, not one host
    # to device copy per call
    return torch.tensor(values, dtype=dtype, device=device).unsqueeze(0)


def per_sample_rows(value, batch: int, k: int, device, dtype, name: str, op: str) -> torch.Tensor:
    """A (B, k) tensor from a number, a length-k sequence, or a tensor of shape (), (k,), (1, k) or
    (B, k); a batch-broadcast value is returned expanded (stride 0), not copied."""
    if _in_place(value, (batch, k), device, dtype):
        return value
    values = None  # the row, when value is a constant given as numbers
    if (type(value) is list or type(value) is tuple) and len(value) == k and all(type(v) is float for v in value):
        # a transform's constant (Normalize keeps mean and std as lists of floats), without the
        # ABC checks below (~20 us a call in a chain's host time)
        values = tuple(value)
        if not all(map(math.isfinite, values)):
            raise ValueError(f"torchaug.{op}: {name} must be finite real numbers, got {list(values)}")
    elif not isinstance(value, torch.Tensor):
        if isinstance(value, numbers.Number):
            value = [value] * k
        if isinstance(value, Sequence) and len(value) in (1, k) and all(isinstance(v, numbers.Number) for v in value):
            if not all(isinstance(v, numbers.Real) and math.isfinite(v) for v in value):
                raise ValueError(f"torchaug.{op}: {name} must be finite real numbers, got {list(value)}")
            values = tuple(float(v) for v in value) * (k if len(value) == 1 else 1)
        else:
            try:
                value = torch.as_tensor(value, dtype=dtype)
            except (TypeError, ValueError, RuntimeError):
                raise TypeError(f"torchaug.{op}: {name} must be a number, a sequence of {k} numbers or a tensor, "
                                f"got {value!r:.80}") from None
    elif values is None:
        _check_real(value, dtype, name, op)
    if values is not None:
        if torch.compiler.is_compiling():  # traced: a constant of the graph
            return torch.tensor(values, dtype=dtype, device=device).unsqueeze(0).expand(batch, k)
        return _constant_rows(values, device if type(device) is torch.device else torch.device(device), dtype, batch)
    if value.dim() == 0:
        value = value.reshape(1).expand(k)
    if value.dim() == 1:
        if value.shape[0] == 1:
            value = value.expand(k)
        if value.shape[0] != k:
            raise ValueError(f"torchaug.{op}: {name} must have {k} values (or shape (B, {k})), got shape {tuple(value.shape)}")
        value = value.unsqueeze(0)
    if value.dim() != 2 or value.shape[1] != k or value.shape[0] not in (1, batch):
        raise ValueError(f"torchaug.{op}: {name} must have shape (B, {k}) or ({k},) with B={batch}, got {tuple(value.shape)}")
    return _as(value, (batch, k), device, dtype)


@functools.lru_cache(maxsize=256)
def _constant_rows(values: tuple, device: torch.device, dtype: torch.dtype, batch: int) -> torch.Tensor:
    # the (B, k) stride-0 view of a constant row, made once per batch size
    return _constant_row(values, device, dtype).expand(batch, len(values))


def fill_tensor(fill, batch: int, channels: int, device, op: str) -> Optional[torch.Tensor]:
    """None, or the (B, C) float32 fill of a number, a per-channel sequence or a tensor."""
    if fill is None:
        return None
    return per_sample_rows(fill, batch, channels, device, torch.float32, "fill", op)


# The largest crop box edge and offset of the resize ops (csrc/kernels/geometry.h: kMaxBoxExtent).
MAX_BOX_EXTENT = 1 << 20


def check_boxes(boxes: torch.Tensor, op: str) -> None:
    """Value check of user-given crop boxes (a host synchronisation when they live on a GPU; the
    transforms build valid boxes and skip it)."""
    if not boxes.numel():
        return
    lim = MAX_BOX_EXTENT
    bad = ((boxes[:, 2:] <= 0) | (boxes[:, 2:] > lim) | (boxes[:, :2].abs() > lim)).any(1)
    if bool(bad.any()):
        i = int(bad.nonzero()[0, 0])
        raise ValueError(f"torchaug.{op}: crop boxes must have 0 < height, width <= {lim} and |top|, |left| <= {lim}, "
                         f"got box {i} = {boxes[i].tolist()} (top, left, height, width)")


def pair(size, name: str, op: str) -> List[int]:
    if type(size) in (list, tuple) and len(size) == 2 and type(size[0]) is int and type(size[1]) is int:
        return [size[0], size[1]]  # a transform's size, without the ABC checks below (a few us a call)
    if isinstance(size, numbers.Integral):
        return [int(size), int(size)]
    if isinstance(size, Sequence) and len(size) == 2 and all(isinstance(s, (numbers.Integral, torch.SymInt)) for s in size):
        return [size[0], size[1]]
    if isinstance(size, Sequence) and len(size) == 1 and isinstance(size[0], numbers.Integral):
        return [int(size[0]), int(size[0])]
    raise ValueError(f"torchaug.{op}: {name} must be an int or a sequence of 2 ints, got {size!r}")


def image_list(images, op: str) -> Tuple[List[torch.Tensor], bool]:
    """A ragged batch given as a list of (C, H_i, W_i) tensors: checks them and says whether they are
    all laid out channels-last (HWC in memory). The checks run over the whole list at once (map and
    sets: a list of 256 images is a call's common case, where a loop's per-image Python would cost
    more than the launch); the loop that names the first bad image runs only when one fails."""
    if len(images) == 0:
        raise ValueError(f"torchaug.{op}: the list of images is empty")
    images = list(images)
    if not (all_chw_tensors(images) and len({t.shape[0] for t in images}) == 1 and len({t.dtype for t in images}) == 1
            and len({t.device for t in images}) == 1):
        _check_image_list(images, op)
    channels = images[0].shape[0]
    hwc = channels > 1 and all(_is_hwc(t) for t in images)
    return images, hwc


def all_chw_tensors(images: Sequence) -> bool:
    """Whether every item is a 3-D (C, H, W) tensor (over the whole sequence at once: no per-item
    Python beyond the isinstance test)."""
    return all(isinstance(t, torch.Tensor) for t in images) and list(map(torch.Tensor.dim, images)).count(3) == len(images)


def _check_image_list(images: List, op: str) -> None:
    """Raises the error that names the first image of the list that is not a (C, H, W) tensor with
    the channels, dtype and device of images[0]."""
    first = images[0]
    if isinstance(first, torch.Tensor) and first.dim() == 3:
        channels, dtype, device = first.shape[0], first.dtype, first.device
    for i, t in enumerate(images):
        if not isinstance(t, torch.Tensor) or t.dim() != 3:
            raise ValueError(f"torchaug.{op}: images[{i}] must be a (C, H, W) tensor, got {getattr(t, 'shape', type(t).__name__)}")
        if t.shape[0] != channels or t.dtype != dtype or t.device != device:
            raise ValueError(
                f"torchaug.{op}: images[{i}] must have the channels, dtype and device of images[0] "
                f"({channels}, {dtype}, {device}), got ({t.shape[0]}, {t.dtype}, {t.device})"
            )


def _is_hwc(t: torch.Tensor) -> bool:
    """Whether a (C, H, W) tensor is dense channels-last (HWC in memory): its strides compared first,
    the view's check (which allows any stride on a dimension of size 1) where they differ."""
    c, h, w = t.shape
    return t.stride() == (1, w * c, c) or t.permute(1, 2, 0).is_contiguous()


def sizes_tensor(pairs) -> torch.Tensor:
    """The (B, 2) int64 host tensor of (H, W) pairs, made from one flat list of ints (which torch.tensor
    parses about twice as fast as a list of pairs: a list of 256 images is a call's common case)."""
    return torch.tensor(list(itertools.chain.from_iterable(pairs)), dtype=torch.int64).view(-1, 2)


def ragged_buffer(images: List[torch.Tensor], hwc: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The flat buffer, per-image element offsets and (B, 2) sizes of a ragged batch, for the
    *_ragged ops. When every image is a dense view into one storage (decode_jpeg's output,
    RaggedImages.images()) that storage is used as it is; otherwise the images are packed into a new
    buffer (one copy)."""
    first = images[0]
    shapes = list(map(operator.attrgetter("shape"), images))
    sizes = sizes_tensor(map(operator.itemgetter(1, 2), shapes))
    if not torch.compiler.is_compiling():
        storage = first.untyped_storage()
        ptr = storage.data_ptr()
        offsets = []
        for t, (c, h, w) in zip(images, shapes):
            if t.untyped_storage().data_ptr() != ptr or t.stride() != ((1, w * c, c) if hwc else (h * w, w, 1)):
                break
            offsets.append(t.storage_offset())
        else:
            flat = torch.empty(0, dtype=first.dtype, device=first.device)
            flat.set_(storage, 0, (storage.nbytes() // first.element_size(),))
            return flat, torch.tensor(offsets, dtype=torch.int64), sizes
    # one call: each image flattened (copied where it is not dense in that order), then joined
    flat = torch._utils._flatten_dense_tensors([t.permute(1, 2, 0) for t in images] if hwc else images)
    starts = itertools.accumulate((c * h * w for c, h, w in shapes[:-1]), initial=0)
    return flat, torch.tensor(list(starts), dtype=torch.int64), sizes


# ---- integer images beyond uint8 ------------------------------------------------------------------

# integer image dtypes the ops take beside uint8 (torchvision's kernels take uint16: 16-bit medical and
# industrial images), and their maximum. They are computed in float32 scaled to [0, 1] by the maximum
# (exact: every uint16 value survives the round trip), the arguments in pixel values (fill,
# thresholds, erase and salt values) scaled alike, and rounded back to the input's dtype.
WIDE_INTEGERS = {torch.uint16: 65535.0}
_VALUE_ARGUMENTS = ("fill", "threshold", "shift", "v", "salt_value", "pepper_value")


def _scaled(value, top: float):
    if isinstance(value, torch.Tensor):
        return value.to(torch.float32) / top
    if isinstance(value, (list, tuple)):
        return type(value)(_scaled(v, top) for v in value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    return value / top


def narrow(out, dtype: torch.dtype, top: float):
    """A result computed in float32 on [0, 1] back in the integer dtype (tensors, lists and tuples of them)."""
    if isinstance(out, torch.Tensor) and out.is_floating_point():
        return out.mul(top).round_().clamp_(0, top).to(dtype)
    if isinstance(out, (list, tuple)):
        return type(out)(narrow(o, dtype, top) for o in out)
    return out


def where_images(mask: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """torch.where(mask, a, b) for images of any dtype: uint16 images (for which torch has few
    kernels) are selected as the int16 words they are."""
    if a.dtype in WIDE_INTEGERS and a.dtype == b.dtype:
        return torch.where(mask, a.view(torch.int16), b.view(torch.int16)).view(a.dtype)
    return torch.where(mask, a, b)


def wide_integers(fn, keeps_dtype=True):
    """fn (an op whose first argument is the images) taking the WIDE_INTEGERS dtypes through its
    floating path: images scaled to [0, 1], pixel-valued arguments alike, the result rounded back
    to the input's dtype where the op keeps an integer input's dtype (keeps_dtype: a bool, or a
    function of the bound arguments: an op normalizing on request gives floats then), else left
    floating. Other inputs go to fn as they are."""
    signature = inspect.signature(fn)
    values = [n for n in _VALUE_ARGUMENTS if n in signature.parameters]
    first = next(iter(signature.parameters))

    @functools.wraps(fn)
    def run(*args, **kwargs):
        images = args[0] if args else kwargs.get(first)
        top = WIDE_INTEGERS.get(getattr(images, "dtype", None))
        if top is None or not isinstance(images, torch.Tensor) or type(images).__name__ in ("Mask", "BoundingBoxes", "KeyPoints"):
            return fn(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        bound.arguments[first] = images.to(torch.float32).div_(top)
        for name in values:
            if bound.arguments.get(name) is not None:
                bound.arguments[name] = _scaled(bound.arguments[name], top)
        keep = keeps_dtype(bound.arguments) if callable(keeps_dtype) else keeps_dtype
        out = fn(*bound.args, **bound.kwargs)
        return narrow(out, images.dtype, top) if keep else out

    return run
