"""Normalize, ToDtype, LinearTransformation, UniformTemporalSubsample and the conversions and
pass-throughs (ConvertImageDtype, Identity, Lambda, RGB, ToPureTensor, ToImage, PILToTensor,
ToPILImage) with torchvision.transforms.v2 names and signatures."""
from typing import Any, Callable, Dict, Optional, Sequence

import torch
from torch.utils._pytree import tree_map

from .. import functional as F
from . import _script as S
from . import _targets
from ._transform import Transform


class Normalize(Transform):
    """torchvision.transforms.v2.Normalize; a uint8 input is scaled to [0, 1] first (torchvision
    raises instead). out_dtype / memory_format fuse the cast and the layout into the same pass."""

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False,
                 out_dtype: Optional[torch.dtype] = None, memory_format: Optional[torch.memory_format] = None):
        super().__init__()
        mean, std = list(mean), list(std)
        if len(mean) != len(std):
            raise ValueError(f"torchaug.transforms.Normalize: mean and std must have the same length, got {len(mean)} and {len(std)}")
        if any(s == 0 for s in std):
            raise ValueError(f"torchaug.transforms.Normalize: std evaluated to zero, leading to division by zero: {std}")
        self.mean, self.std = [float(m) for m in mean], [float(s) for s in std]
        self.inplace = inplace  # accepted for torchvision compatibility; the op always writes a new tensor
        self.out_dtype, self.memory_format = out_dtype, memory_format

    _TAKES_LIST = True  # no parameters: a list of images of different sizes goes image by image

    def transform(self, images, params):
        if isinstance(images, (list, tuple)):
            return [self.transform(img, params) for img in images]
        return F.normalize(images, self.mean, self.std, out_dtype=self.out_dtype, memory_format=self.memory_format)

    def _scriptable(self):
        return S.ScriptNormalize([float(v) for v in self.mean], [float(v) for v in self.std], self.out_dtype, self.memory_format)


class ToDtype(Transform):
    """torchvision.transforms.v2.ToDtype for images."""

    def __init__(self, dtype: torch.dtype, scale: bool = False):
        super().__init__()
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"torchaug.transforms.ToDtype: dtype must be a torch.dtype, got {dtype!r}")
        self.dtype, self.scale = dtype, scale

    _TAKES_LIST = True  # no parameters: a list of images of different sizes goes image by image

    def transform(self, images, params):
        if isinstance(images, (list, tuple)):
            return [F.to_dtype(img, self.dtype, self.scale) for img in images]
        return F.to_dtype(images, self.dtype, self.scale)

    def _scriptable(self):
        return S.ScriptToDtype(self.dtype, bool(self.scale), self.dtype.is_floating_point)


class ConvertImageDtype(ToDtype):
    """torchvision.transforms.v2.ConvertImageDtype: ToDtype(dtype, scale=True)."""

    def __init__(self, dtype: torch.dtype = torch.float32):
        super().__init__(dtype, scale=True)


class Identity(Transform):
    """torchvision.transforms.v2.Identity: returns its input (targets included) as it is."""

    _TAKES_LIST = True
    _TAKES_CLIPS = True

    def transform(self, images, params):
        return images

    def _scriptable(self):
        return S.ScriptTransform()


class Lambda(Transform):
    """torchvision.transforms.v2.Lambda(lambd): lambd applied to the images (the whole batch, or the
    single image); targets pass through it unchanged."""

    _TAKES_LIST = True
    _TAKES_CLIPS = True

    def __init__(self, lambd: Callable[[Any], Any]):
        super().__init__()
        if not callable(lambd):
            raise TypeError(f"torchaug.transforms.Lambda: lambd should be callable, got {type(lambd).__name__}")
        self.lambd = lambd

    def transform(self, images, params):
        return self.lambd(images)


class RGB(Transform):
    """torchvision.transforms.v2.RGB: a 1-channel image repeated to 3 channels, a 3-channel one as it is."""

    _TAKES_LIST = True

    def transform(self, images, params):
        if isinstance(images, (list, tuple)):
            return [F.grayscale_to_rgb(img) for img in images]
        return F.grayscale_to_rgb(images)

    def _scriptable(self):
        return S.ScriptRGB()


class ToPureTensor(Transform):
    """torchvision.transforms.v2.ToPureTensor: torchvision's tv_tensors (images, and the boxes, masks
    and keypoints among the targets) become plain torch.Tensors; torchaug's target wrappers give
    their data."""

    _TAKES_LIST = True
    _TAKES_CLIPS = True

    def transform(self, images, params):
        return _pure(images)

    def transform_targets(self, images, targets, params):
        return tuple(_pure(t) for t in targets)

    def _scriptable(self):
        return S.ScriptTransform()


def _pure(obj):
    """obj (nested in dicts, lists and tuples) with tv_tensors as plain tensors and torchaug's target
    wrappers as their data."""
    def leaf(v):
        if isinstance(v, (_targets.BoundingBoxes, _targets.Mask, _targets.KeyPoints)):
            return v.data
        return v.as_subclass(torch.Tensor) if isinstance(v, torch.Tensor) and type(v) is not torch.Tensor else v

    return tree_map(leaf, obj)


class _PassTargets(Transform):
    """A transform without parameters whose targets pass through unchanged, and whose input need not
    be an image batch (PIL images, videos): forward is transform(images) and the targets as they came."""

    _TAKES_LIST = True
    _TAKES_CLIPS = True

    def forward(self, images, *targets, params: Optional[Dict[str, Any]] = None, return_params: bool = False):
        out = self.transform(images, {})
        out = (out,) + tuple(targets) if targets else out
        return (out, {}) if return_params else out


class LinearTransformation(Transform):
    """torchvision.transforms.v2.LinearTransformation(transformation_matrix, mean_vector): each image
    flattened to D = C * H * W values, mean_vector subtracted, multiplied by the (D, D) matrix (one
    matrix product for the batch), reshaped back (whitening, ZCA)."""

    def __init__(self, transformation_matrix: torch.Tensor, mean_vector: torch.Tensor):
        super().__init__()
        name = "torchaug.transforms.LinearTransformation"
        m, v = transformation_matrix, mean_vector
        if not isinstance(m, torch.Tensor) or not isinstance(v, torch.Tensor):
            raise TypeError(f"{name}: transformation_matrix and mean_vector must be tensors")
        if m.dim() != 2 or m.size(0) != m.size(1):
            raise ValueError(f"{name}: transformation_matrix should be square, got {tuple(m.shape)}")
        if v.dim() != 1 or v.size(0) != m.size(0):
            raise ValueError(f"{name}: mean_vector should have the matrix's size {m.size(0)}, got {tuple(v.shape)}")
        if m.device != v.device or m.dtype != v.dtype:
            raise ValueError(f"{name}: transformation_matrix and mean_vector must share device and dtype, got "
                             f"{m.dtype} on {m.device} and {v.dtype} on {v.device}")
        if not m.is_floating_point():
            raise TypeError(f"{name}: transformation_matrix must be floating, got {m.dtype}")
        self.transformation_matrix, self.mean_vector = m, v

    def transform(self, images, params):
        name = "torchaug.transforms.LinearTransformation"
        if not isinstance(images, torch.Tensor):
            raise TypeError(f"{name}: images must be a tensor, got {type(images).__name__}")
        shape = images.shape
        n = shape[-3] * shape[-2] * shape[-1] if images.dim() >= 3 else -1
        if n != self.transformation_matrix.shape[0]:
            raise ValueError(f"{name}: images of shape (..., C, H, W) = {tuple(shape)} flatten to {n} values, the "
                             f"matrix is {tuple(self.transformation_matrix.shape)}")
        if images.device.type != self.mean_vector.device.type:
            raise ValueError(f"{name}: images are on {images.device}, the matrix on {self.mean_vector.device}")
        flat = images.reshape(-1, n) - self.mean_vector
        return torch.mm(flat, self.transformation_matrix.to(flat.dtype)).reshape(shape)

    def _scriptable(self):
        return S.ScriptLinearTransformation(self.transformation_matrix, self.mean_vector)


class UniformTemporalSubsample(_PassTargets):
    """torchvision.transforms.v2.UniformTemporalSubsample(num_samples): num_samples frames, evenly
    spaced, of videos (..., T, C, H, W) (a (B, T, C, H, W) batch keeps the same frames of every clip)."""

    def __init__(self, num_samples: int):
        super().__init__()
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples <= 0:
            raise ValueError(f"torchaug.transforms.UniformTemporalSubsample: num_samples must be a positive int, got {num_samples!r}")
        self.num_samples = num_samples

    def transform(self, images, params):
        if not isinstance(images, torch.Tensor) or images.dim() < 4:
            raise ValueError(f"torchaug.transforms.UniformTemporalSubsample: videos must be a (..., T, C, H, W) tensor, got "
                             f"{tuple(images.shape) if isinstance(images, torch.Tensor) else type(images).__name__}")
        return S.temporal_subsample(images, self.num_samples)

    def _scriptable(self):
        return S.ScriptTemporalSubsample(self.num_samples)


def _to_chw(pic, name: str) -> torch.Tensor:
    """A PIL image or an (H, W[, C]) numpy array as a contiguous (C, H, W) tensor of the array's
    dtype, in memory of its own: one copy, transposing (numpy's; the caller's array is never aliased,
    and torch does not warn about the read-only array a PIL image gives). Contiguous, where
    torchvision's pil_to_tensor returns a (C, H, W) view of HWC memory: the ops keep their input's
    layout, and a chain's output stays contiguous as torchvision's chains' are."""
    import numpy as np
    if isinstance(pic, np.ndarray):
        array = pic
    elif hasattr(pic, "getbands") and hasattr(pic, "size"):  # a PIL image
        from PIL import ImageMode
        mode = ImageMode.getmode(pic.mode)
        if mode.typestr == "|u1":  # a byte a band (L, RGB, RGBA, P, ...): the bytes as they are, as np.asarray
            # reads them, without building and parsing __array_interface__ (a few us of a call on a
            # CIFAR-sized image, whose whole chain takes ~0.1 ms)
            array = np.frombuffer(pic.tobytes(), np.uint8).reshape(pic.size[1], pic.size[0], len(mode.bands))
        else:
            array = np.asarray(pic)
    else:
        raise TypeError(f"torchaug.transforms.{name}: expected a PIL image or a numpy array, got {type(pic).__name__}")
    if array.ndim == 2:
        array = array[:, :, None]
    if array.ndim != 3:
        raise ValueError(f"torchaug.transforms.{name}: expected an (H, W) or (H, W, C) image, got shape {array.shape}")
    return torch.from_numpy(np.array(array.transpose(2, 0, 1), order="C", copy=True))


class PILToTensor(_PassTargets):
    """torchvision.transforms.v2.PILToTensor: a PIL image as a (C, H, W) tensor of its pixel type
    (uint8 for L and RGB), for the batch or the GPU afterwards."""

    def transform(self, images, params):
        return _to_chw(images, type(self).__name__)

    def _scriptable(self):
        return S.ScriptTransform()  # a scripted transform takes tensors: nothing to convert


class ToImage(PILToTensor):
    """torchvision.transforms.v2.ToImage: a PIL image, a numpy (H, W[, C]) array or a tensor as a
    (C, H, W) (or batched) image tensor; tensors pass as they are (tv_tensors become plain tensors)."""

    def transform(self, images, params):
        if isinstance(images, torch.Tensor):
            images = images.as_subclass(torch.Tensor)
            return images.unsqueeze(0) if images.dim() == 2 else images
        return _to_chw(images, type(self).__name__)


class ToTensor(PILToTensor):
    """torchvision.transforms.ToTensor (deprecated in v2 for ToImage + ToDtype): a PIL image or numpy
    (H, W[, C]) array as a float32 (C, H, W) tensor, uint8 values scaled to [0, 1]."""

    def transform(self, images, params):
        chw = _to_chw(images, type(self).__name__)
        return chw.to(torch.float32).div_(255) if chw.dtype == torch.uint8 else chw.to(torch.float32)

    # no TorchScript form: it takes PIL images and arrays, a scripted transform takes tensors (ToDtype scales those)
    _scriptable = Transform._scriptable


class ToPILImage(_PassTargets):
    """torchvision.transforms.v2.ToPILImage(mode): a (C, H, W) image (a list of PIL images for a
    (B, C, H, W) batch) as a PIL image: floating images scaled by 255 as torchvision does, on the CPU."""

    def __init__(self, mode: Optional[str] = None):
        super().__init__()
        self.mode = mode

    def transform(self, images, params):
        from PIL import Image
        if not isinstance(images, torch.Tensor) or images.dim() not in (2, 3, 4):
            raise TypeError(f"torchaug.transforms.ToPILImage: expected a (C, H, W) or (B, C, H, W) tensor, got "
                            f"{tuple(images.shape) if isinstance(images, torch.Tensor) else type(images).__name__}")
        if images.dim() == 4:
            return [self.transform(img, params) for img in images]
        img = images.detach().cpu()
        if img.dim() == 2:
            img = img.unsqueeze(0)
        if img.is_floating_point() and self.mode != "F":
            img = img.mul(255).byte()
        array = img.permute(1, 2, 0).numpy()
        if array.shape[2] == 1:
            array = array[:, :, 0]
        return Image.fromarray(array, mode=self.mode) if self.mode is not None else Image.fromarray(array)
