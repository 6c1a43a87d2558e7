"""torchaug.accelerate(loader): a DataLoader over a torchvision ImageFolder / DatasetFolder whose
transform is a torchvision Compose, or over a CocoDetection wrapped by wrap_dataset_for_transforms_v2
with a joint transforms (the detection references' preset), becomes one whose workers only read the
files' bytes, while the decoding and the transforms, translated to torchaug's with the same
arguments, run per sample on the GPU in a Prefetcher. The loop over it receives what it received
before (images and labels, or the collate_fn's images and targets), on the device.

What runs where is decided once, from the dataset and its transform:
- every transform torchaug has (torchvision v2 and v1 classes, nested Compose, RandomApply /
  RandomChoice / RandomOrder) runs on the device, with torchaug's per-sample draws;
- classification: the device's part starts at the first step that makes images of different sizes
  one size (RandomResizedCrop, CenterCrop, Resize to [height, width]): the steps before it (a Resize
  of the short edge, say) and transforms torchaug cannot take (a Lambda, a class of the user's, a
  PIL-only op) at the start of the chain stay in the workers, which then decode with the dataset's
  loader as before and hand the device images of different sizes; an untranslatable step after a
  translatable one makes accelerate() refuse, naming it;
- detection: the workers read the bytes and the annotations, and build each target as the wrapper
  does, from the size in the file's header; every step runs on the device (one it cannot take makes
  accelerate() refuse), then the loader's own collate_fn on the (image, target) samples;
- a dataset with a loader of its own, files that are not JPEG, or a collate_fn of the user's on a
  classification loader make it refuse too: nothing is ever changed silently. explain=True prints
  the plan (also `.plan`)."""
import dis
import inspect
import os
from typing import Any, Callable, List, Optional, Sequence

import torch

from . import transforms as T
from .io import ImageFolderBytes, collate_encoded, collate_ragged, read_batch
from .prefetch import Prefetcher

_JPEG = (".jpg", ".jpeg")


class AccelerateError(ValueError):
    """What accelerate() could not take, and why."""


# ---- the translation of torchvision's transforms --------------------------------------------------

def _for_images(value, otherwise):
    """A v2 argument that may be a dict per input type (fill, ToDtype's dtype): its entry for images
    (Image or plain tensors), otherwise(dict) when it has none; the value itself when not a dict."""
    if not isinstance(value, dict):
        return value
    for key, v in value.items():
        if getattr(key, "__name__", "") in ("Image", "Tensor") or key is torch.Tensor:
            return v
    if "others" in value:
        return value["others"]
    return otherwise(value)


def _fill(t):
    """A torchvision transform's fill as torchaug takes it: a number, a sequence, or None (a dict
    without an entry for images or "others": None, as torchvision's _get_fill gives it, that is 0)."""
    return _for_images(getattr(t, "fill", None), lambda d: None)


def _no_image_dtype(d):
    raise AccelerateError(f"ToDtype({d!r}) names no dtype for images")


def _one(size):
    return list(size) if isinstance(size, (list, tuple)) else size


def _affine_arg(v):
    return None if v is None else (list(v) if isinstance(v, (list, tuple)) else v)


_SAME = {  # classes whose constructor arguments are attributes of the same names
    "RandomHorizontalFlip": ("p",), "RandomVerticalFlip": ("p",), "RandomGrayscale": ("p",),
    "Grayscale": ("num_output_channels",), "RandomInvert": ("p",), "RandomAutocontrast": ("p",),
    "RandomEqualize": ("p",), "RandomPosterize": ("bits", "p"), "RandomSolarize": ("threshold", "p"),
    "RandomAdjustSharpness": ("sharpness_factor", "p"), "ColorJitter": ("brightness", "contrast", "saturation", "hue"),
    "RandomPhotometricDistort": ("brightness", "contrast", "saturation", "hue", "p"), "RandomChannelPermutation": (),
    "Normalize": ("mean", "std"), "CenterCrop": ("size",), "GaussianNoise": ("mean", "sigma", "clip"),
}


def _translate(t) -> Optional[Any]:
    """The torchaug transform doing what torchvision's `t` does (per sample), or None when torchaug
    has no such transform."""
    cls = type(t)
    module, name = cls.__module__, cls.__name__
    if not module.startswith("torchvision.transforms"):
        return None
    if name == "Compose":
        parts = [_translate(s) for s in t.transforms]
        return None if any(p is None for p in parts) else T.Compose(parts)
    if name in ("RandomApply", "RandomChoice", "RandomOrder"):
        inner = [_translate(s) for s in t.transforms]
        if any(p is None for p in inner):
            return None
        if name == "RandomApply":
            return T.RandomApply(inner, p=t.p)
        return T.RandomChoice(inner, p=getattr(t, "p", None)) if name == "RandomChoice" else T.RandomOrder(inner)
    if name in ("PILToTensor", "ToImage", "Identity", "ToImageTensor"):
        return T.Identity()  # decoded images are uint8 tensors already
    if name == "ToPureTensor":
        return T.ToPureTensor()
    if name == "ToTensor":  # v1: float in [0, 1]
        return T.ToDtype(torch.float32, scale=True)
    if name == "ConvertImageDtype":
        return T.ConvertImageDtype(t.dtype)
    if name == "ToDtype":
        return T.ToDtype(_for_images(t.dtype, _no_image_dtype), scale=t.scale)
    if name in _SAME:
        return getattr(T, name)(*[_one(getattr(t, a)) for a in _SAME[name]])
    if name == "RandomResizedCrop":
        return T.RandomResizedCrop(list(t.size), scale=tuple(t.scale), ratio=tuple(t.ratio), interpolation=t.interpolation,
                                   antialias=getattr(t, "antialias", True) is not False)
    if name == "Resize":
        return T.Resize(_one(t.size), interpolation=t.interpolation, max_size=t.max_size,
                        antialias=getattr(t, "antialias", True) is not False)
    if name == "RandomCrop":
        return T.RandomCrop(list(t.size), padding=_affine_arg(t.padding), pad_if_needed=t.pad_if_needed, fill=_fill(t),
                            padding_mode=t.padding_mode)
    if name == "Pad":
        return T.Pad(_affine_arg(t.padding), fill=_fill(t), padding_mode=t.padding_mode)
    if name == "RandomRotation":
        return T.RandomRotation(list(t.degrees), interpolation=t.interpolation, expand=t.expand,
                                center=_affine_arg(t.center), fill=_fill(t))
    if name == "RandomAffine":
        return T.RandomAffine(list(t.degrees), translate=_affine_arg(t.translate), scale=_affine_arg(t.scale),
                              shear=_affine_arg(t.shear), interpolation=t.interpolation, fill=_fill(t),
                              center=_affine_arg(t.center))
    if name == "GaussianBlur":
        return T.GaussianBlur(list(t.kernel_size), sigma=tuple(t.sigma))
    if name == "RandomErasing":
        value = getattr(t, "value", 0)
        value = "random" if value is None or value == "random" else (value[0] if isinstance(value, (list, tuple)) and len(value) == 1 else value)
        return T.RandomErasing(t.p, scale=tuple(t.scale), ratio=tuple(t.ratio), value=value, inplace=getattr(t, "inplace", False))
    if name == "RandAugment":
        return T.RandAugment(t.num_ops, t.magnitude, t.num_magnitude_bins, interpolation=t.interpolation, fill=_fill(t))
    if name == "TrivialAugmentWide":
        return T.TrivialAugmentWide(t.num_magnitude_bins, interpolation=t.interpolation, fill=_fill(t))
    if name == "AutoAugment":
        return T.AutoAugment(T.AutoAugmentPolicy(t.policy.value), interpolation=t.interpolation, fill=_fill(t))
    if name == "RandomZoomOut":
        return T.RandomZoomOut(fill=t.fill, side_range=tuple(t.side_range), p=t.p)
    if name == "RandomIoUCrop":
        return T.RandomIoUCrop(t.min_scale, t.max_scale, t.min_aspect_ratio, t.max_aspect_ratio, list(t.options), t.trials)
    if name == "RandomShortestSize":
        return T.RandomShortestSize(list(t.min_size), t.max_size, interpolation=t.interpolation, antialias=t.antialias is not False)
    if name == "RandomResize":
        return T.RandomResize(t.min_size, t.max_size, interpolation=t.interpolation, antialias=t.antialias is not False)
    if name == "ScaleJitter":
        return T.ScaleJitter(tuple(t.target_size), tuple(t.scale_range), interpolation=t.interpolation,
                             antialias=t.antialias is not False)
    if name == "ConvertBoundingBoxFormat":
        return T.ConvertBoundingBoxFormat(t.format)
    if name == "ClampBoundingBoxes":
        return T.ClampBoundingBoxes(t.clamping_mode) if hasattr(t, "clamping_mode") else T.ClampBoundingBoxes()
    if name == "SanitizeBoundingBoxes":
        return T.SanitizeBoundingBoxes(t.min_size, getattr(t, "min_area", 1.0), t.labels_getter)
    if name == "AugMix":
        return T.AugMix(t.severity, t.mixture_width, t.chain_depth, t.alpha, t.all_ops, interpolation=t.interpolation,
                        fill=_fill(t))
    return None


def _makes_one_size(t) -> bool:
    """Whether torchaug transform t takes images of different sizes and gives them one size."""
    return isinstance(t, (T.RandomResizedCrop, T.CenterCrop)) or (isinstance(t, T.Resize) and len(t.size) == 2)


_CALL_ONLY = ("RESUME", "NOP", "CACHE", "PUSH_NULL", "PRECALL")  # bytecode around a call that does nothing of its own


def _applied_attribute(obj) -> Optional[str]:
    """The attribute name when obj's class defines __call__ as `return self.<name>(<its arguments>)`
    and nothing else (the presets of torchvision's references: a class holding a Compose in
    self.transforms, called with the image, or with the image and its target), else None. Read from
    the bytecode, so that nothing a wrapper does beyond the call is ever dropped."""
    fn = getattr(type(obj), "__call__", None)
    code = getattr(fn, "__code__", None)
    if code is None or code.co_argcount < 2 or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return None
    ops = []
    for i in dis.get_instructions(code):
        if i.opname == "LOAD_FAST_LOAD_FAST":  # 3.13: two loads in one instruction
            ops += [("LOAD_FAST", name) for name in i.argval]
        elif i.opname not in _CALL_ONLY:
            ops.append((i.opname, i.argval))
    names = code.co_varnames[:code.co_argcount]
    n = len(names) - 1
    if len(ops) == n + 4 and ops[0] == ("LOAD_FAST", names[0]) and ops[1][0] in ("LOAD_ATTR", "LOAD_METHOD") \
            and ops[2:2 + n] == [("LOAD_FAST", a) for a in names[1:]] and ops[2 + n] == ("CALL", n) \
            and ops[3 + n][0] == "RETURN_VALUE":
        return ops[1][1]
    return None


def _steps(transform) -> List[Any]:
    """A dataset's transform as a list of steps (a Compose's, flattened; a wrapper that only applies
    a transform it holds, as the references' presets do, is that transform)."""
    if transform is None:
        return []
    if type(transform).__name__ == "Compose" and type(transform).__module__.startswith("torchvision.transforms"):
        return [s for t in transform.transforms for s in _steps(t)]
    attribute = None if type(transform).__module__.startswith("torchvision.") else _applied_attribute(transform)
    if attribute is not None and callable(getattr(transform, attribute, None)):
        return _steps(getattr(transform, attribute))
    return [transform]


def _describe(t) -> str:
    r = repr(t).replace("\n", " ")
    return r if len(r) <= 100 else r[:97] + "..."


# ---- the workers' datasets --------------------------------------------------------------------------

class _DecodedHead(torch.utils.data.Dataset):
    """The dataset's own loading and the head of its transform that stays in the workers, then the
    image as a uint8 (C, H, W) tensor for the device's part. samples: the (path, class) pairs the
    loader's indices address."""

    def __init__(self, dataset, samples, head: List[Callable]):
        self.dataset = dataset
        self.samples = samples
        self.head = head

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int):
        path, target = self.samples[index]
        image = self.dataset.loader(path)
        for t in self.head:
            image = t(image)
        if not isinstance(image, torch.Tensor):
            import numpy as np
            array = np.asarray(image)
            image = torch.from_numpy(array.copy()).permute(2, 0, 1) if array.ndim == 3 else torch.from_numpy(array.copy())[None]
        if image.dtype != torch.uint8 or image.dim() != 3:
            raise TypeError(f"torchaug.accelerate: the transforms kept in the workers must give a PIL image or a uint8 "
                            f"(C, H, W) tensor, got {image.dtype} of shape {tuple(image.shape)}")
        image = image.as_subclass(torch.Tensor)
        if self.dataset.target_transform is not None:
            target = self.dataset.target_transform(target)
        return image, target


def _jpeg_size(data) -> Optional[tuple]:
    """(height, width) from a JPEG's frame header (its SOF marker), or None when the bytes are no
    JPEG or end before one: what the image's size is without decoding it."""
    b = memoryview(data).cast("B")
    n = len(b)
    if n < 4 or b[0] != 0xFF or b[1] != 0xD8:
        return None
    i = 2
    while i + 9 <= n:
        if b[i] != 0xFF:
            return None
        m = b[i + 1]
        if m == 0xFF:  # fill byte
            i += 1
            continue
        if m == 0x01 or 0xD0 <= m <= 0xD8:  # markers without a length
            i += 2
            continue
        if 0xC0 <= m <= 0xCF and m not in (0xC4, 0xC8, 0xCC):
            return (b[i + 5] << 8) | b[i + 6], (b[i + 7] << 8) | b[i + 8]
        i += 2 + ((b[i + 2] << 8) | b[i + 3])
    return None


class _DetectionBytes(torch.utils.data.Dataset):
    """A CocoDetection wrapped by torchvision's wrap_dataset_for_transforms_v2, read as (the file's
    bytes, its target): the target is the one the wrapper makes (boxes as BoundingBoxes on the
    image's canvas, masks, labels, image_id), from the annotations and the size in the file's header,
    without decoding the image. indices: the dataset's indices the loader's address (Subsets), or
    None. A file whose header gives no size gets the target the wrapper gives an image without
    annotations: its decode on the device then fails, raised or skipped (on_decode_error)."""

    def __init__(self, wrapped, indices: Optional[List[int]]):
        self.wrapped = wrapped
        self.coco_dataset = wrapped._dataset
        self.indices = indices

    def __len__(self) -> int:
        return len(self.indices) if self.indices is not None else len(self.coco_dataset)

    def _where(self, index: int):
        j = index if self.indices is None else self.indices[index]
        image_id = self.coco_dataset.ids[j]
        return j, image_id, os.path.join(self.coco_dataset.root, self.coco_dataset.coco.loadImgs(image_id)[0]["file_name"])

    def _target(self, j: int, image_id, data):
        size = _jpeg_size(data)
        if size is None:
            return {"image_id": image_id}
        # the wrapper reads only the image's size (torchvision.transforms.v2.functional.get_size):
        # a (3, H, W) view of one byte stands for it
        canvas = torch.empty((), dtype=torch.uint8).expand(3, *size)
        _, target = self.wrapped._wrapper(j, (canvas, self.coco_dataset._load_target(image_id)))
        return target

    def __getitem__(self, index: int):
        import numpy as np
        j, image_id, path = self._where(index)
        data = np.fromfile(path, dtype=np.uint8)
        return data, self._target(j, image_id, data)

    def __getitems__(self, indices: Sequence[int]) -> List:
        """The samples of a DataLoader batch, their files read into one buffer (read_batch)."""
        where = [self._where(i) for i in indices]
        out = read_batch([path for _, _, path in where], [None] * len(where))
        for k, ((j, image_id, _), (view, _)) in enumerate(zip(where, out)):
            out[k] = (view, self._target(j, image_id, view))  # the same view: collate_encoded still claims the buffer
        return out


class _CollateOnDevice:
    """The loader's own collate_fn applied to the device's samples, (image, target) pairs, as the
    original loader applied it to the workers' (the detection references' tuple(zip(*batch))),
    then batch_transform."""

    def __init__(self, collate_fn: Callable, then: Optional[Callable]):
        self.collate_fn = collate_fn
        self.then = then

    def __call__(self, batch):
        images, targets = batch[0], batch[1]
        out = self.collate_fn(list(zip(images, targets)))
        return out if self.then is None else self.then(out)

    def __repr__(self) -> str:
        name = getattr(self.collate_fn, "__qualname__", type(self.collate_fn).__name__)
        return f"collate_fn {name}" + ("" if self.then is None else f" -> {_describe(self.then)}")


# ---- accelerate ------------------------------------------------------------------------------------

class AcceleratedLoader:
    """What accelerate() returns: iterate it as the DataLoader it replaces. `plan` says what runs
    where; `loader` is the DataLoader of the workers' part, `prefetcher` the device's part; sampler,
    dataset, batch_size and drop_last are the original loader's (sampler.set_epoch works as before)."""

    def __init__(self, original, loader, prefetcher: Prefetcher, plan: str):
        self.original = original
        self.loader = loader
        self.prefetcher = prefetcher
        self.plan = plan
        self.dataset = original.dataset
        self.sampler = original.sampler
        self.batch_sampler = original.batch_sampler
        self.batch_size = original.batch_size
        self.drop_last = original.drop_last

    def __iter__(self):
        return iter(self.prefetcher)

    def __len__(self) -> int:
        return len(self.loader)

    def __repr__(self) -> str:
        return self.plan


def _unwrap_subsets(ds):
    """(the dataset under any torch.utils.data.Subset wrappers, the indices of it that ds's indices
    address, or None when ds is no Subset)."""
    indices = None
    while isinstance(ds, torch.utils.data.Subset):
        level = list(ds.indices)
        indices = level if indices is None else [level[i] for i in indices]
        ds = ds.dataset
    return ds, indices


def _is_v2_wrapper(ds) -> bool:
    """Whether ds is torchvision's wrap_dataset_for_transforms_v2 wrapper (a detection dataset)."""
    return any(c.__name__ == "VisionDatasetTVTensorWrapper" and c.__module__.startswith("torchvision.") for c in type(ds).__mro__)


def _device_chain(steps, translated, start: int):
    """The device's steps from `start` on, as one Compose: torchvision's conversions to tensors are
    nothing to do there (Identity), and ToPureTensor is nothing for images alone; both would stand
    between the steps Compose fuses."""
    drop = (T.Identity,) if start < 0 else (T.Identity, T.ToPureTensor)
    tail = [t for t in translated[max(start, 0):] if type(t) not in drop]
    return tail, T.Compose(tail)


def _plan(head: str, n_workers: int, workers_do: str, dev, device_steps: List[str]) -> str:
    return "\n".join([head, f"  workers ({n_workers}): {workers_do}", f"  {dev}: " + " -> ".join(device_steps or ["(nothing)"])])


def accelerate(loader, *, device=None, workers: Optional[int] = 4, explain: bool = False, batch_transform: Optional[Callable] = None,
               on_decode_error: str = "raise", depth: int = 2) -> AcceleratedLoader:
    """The DataLoader `loader` with its decoding and transforms moved to `device` (CUDA when there is
    one, else the CPU): the same sampler, batch size, drop_last, length and labels or targets;
    workers (at most `workers`, None: the loader's number) read the files' bytes. Random transforms
    draw per sample, as torchvision's own per-sample loop in the workers did.

    It takes a loader over a torchvision ImageFolder / DatasetFolder of JPEG files with the default
    image loader and a torchvision transform, or over a CocoDetection wrapped by
    torchvision.datasets.wrap_dataset_for_transforms_v2 with a joint `transforms` (the detection
    references' preset: images and targets together; the loader's collate_fn then runs on the
    device's (image, target) samples), either under torch.utils.data.Subset.

    batch_transform (MixUp / CutMix) runs on the device after the transforms; on_decode_error
    "skip" drops files that do not decode (Prefetcher). Raises AccelerateError naming what it
    cannot take. explain=True prints the plan."""
    from torch.utils.data import DataLoader

    if not isinstance(loader, DataLoader):
        raise AccelerateError(f"torchaug.accelerate: loader must be a torch.utils.data.DataLoader, got {type(loader).__name__}")
    ds, indices = _unwrap_subsets(loader.dataset)
    dev = torch.device(device) if device is not None else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    n_workers = loader.num_workers if workers is None else min(loader.num_workers, workers)
    decode = f"decode JPEG ({'nvJPEG' if dev.type == 'cuda' else 'libjpeg-turbo'})"
    if _is_v2_wrapper(ds):
        dataset, chain, collate, plan = _detection(loader, ds, indices, batch_transform, n_workers, dev, decode)
    else:
        dataset, chain, collate, plan = _classification(loader, ds, indices, batch_transform, n_workers, dev, decode)
    if isinstance(collate, _CollateOnDevice):
        batch_transform, collate = collate, collate_encoded
    kwargs = dict(num_workers=n_workers, collate_fn=collate, pin_memory=torch.cuda.is_available(),
                  worker_init_fn=loader.worker_init_fn, generator=loader.generator, timeout=loader.timeout,
                  multiprocessing_context=loader.multiprocessing_context if n_workers > 0 else None)
    if n_workers > 0:
        # the workers only read files (and run the head kept there): they live across epochs, so
        # that an epoch starts with its first batches read instead of with new worker processes
        kwargs.update(persistent_workers=True, prefetch_factor=loader.prefetch_factor)
    if loader.batch_size is None:
        kwargs.update(batch_sampler=loader.batch_sampler)
    else:
        kwargs.update(batch_size=loader.batch_size, sampler=loader.sampler, drop_last=loader.drop_last)
    workers_loader = DataLoader(dataset, **kwargs)
    prefetcher = Prefetcher(workers_loader, chain, dev, depth=depth, batch_transform=batch_transform, on_decode_error=on_decode_error)
    if explain:
        print(plan)
    return AcceleratedLoader(loader, workers_loader, prefetcher, plan)


def _refuse(problems: List[str]) -> None:
    if problems:
        raise AccelerateError("torchaug.accelerate: cannot take this loader:\n  - " + "\n  - ".join(problems))


def _users_collate(loader) -> Optional[str]:
    from torch.utils.data.dataloader import default_collate
    if loader.collate_fn is default_collate or getattr(loader.collate_fn, "__name__", "") == "default_collate":
        return None
    return repr(getattr(loader.collate_fn, "__name__", loader.collate_fn))


def _classification(loader, ds, indices, batch_transform, n_workers, dev, decode):
    """The workers' dataset, the device's chain, the workers' collate_fn and the plan for an
    ImageFolder / DatasetFolder."""
    samples = getattr(ds, "samples", None)
    problems: List[str] = []
    if not (isinstance(samples, list) and hasattr(ds, "loader") and hasattr(ds, "transform")):
        raise AccelerateError(f"torchaug.accelerate: the dataset must be a torchvision ImageFolder or DatasetFolder "
                              f"(samples of (path, class), a loader, a transform) or a CocoDetection wrapped by "
                              f"wrap_dataset_for_transforms_v2, got {type(ds).__name__}")
    if indices is not None:
        samples = [samples[i] for i in indices]
    if getattr(ds, "transforms", None) is not None and type(ds.transforms).__name__ != "StandardTransform":
        problems.append("the dataset has a joint transforms= (image and target together)")
    loader_fn = getattr(ds.loader, "__name__", "")
    if loader_fn not in ("default_loader", "pil_loader", "accimage_loader"):
        problems.append(f"the dataset reads its files with {loader_fn or type(ds.loader).__name__}, not torchvision's "
                        "default image loader")
    not_jpeg = [p for p, _ in samples if not os.fspath(p).lower().endswith(_JPEG)]
    users = _users_collate(loader)
    if users is not None:
        problems.append(f"the loader's collate_fn {users} is the user's (pass MixUp / CutMix as batch_transform= instead)")

    steps = _steps(ds.transform)
    translated = [_translate(s) for s in steps]
    missing = [i for i, t in enumerate(translated) if t is None]
    untaken = missing[-1] + 1 if missing else 0
    if missing and missing != list(range(untaken)):
        names = ", ".join(_describe(steps[i]) for i in missing)
        problems.append(f"torchaug has no transform for {names}, and it is not at the start of the chain (only a start "
                        "of untranslatable steps can stay in the workers)")
    # the device's part starts with a step that reads images of different sizes and makes them one
    # size (decoded files, or the workers' images, differ in size); the steps before it stay in the workers
    first = next((i for i in range(untaken, len(steps)) if _makes_one_size(translated[i])), None)
    if first is None and not problems:
        problems.append("no step of the transform makes the images one size (RandomResizedCrop, CenterCrop, Resize to "
                        "[height, width]) for the device to start from")
    head_len = first if first is not None else 0
    if all(type(t) is T.Identity for t in translated[:head_len]):
        head_len = 0  # only conversions to tensors before it (PILToTensor): the device decodes to tensors
    if not_jpeg and head_len == 0:
        problems.append(f"{len(not_jpeg)} of {len(samples)} files are not JPEG (the device decodes JPEG), e.g. {not_jpeg[0]}")
    _refuse(problems)

    tail, chain = _device_chain(steps, translated, head_len)
    if head_len:
        dataset, collate = _DecodedHead(ds, samples, steps[:head_len]), collate_ragged
    else:
        dataset, collate = ImageFolderBytes.from_dataset(ds), collate_encoded
        if indices is not None:
            dataset.samples = samples
            dataset.targets = [t for _, t in samples]
    plan = _plan(f"torchaug.accelerate: {type(ds).__name__} of {len(samples)} files, batch {loader.batch_size}, "
                 f"{type(loader.sampler).__name__}, drop_last={loader.drop_last}", n_workers,
                 "read file bytes" if not head_len else
                 "load with the dataset's loader, then " + " -> ".join(_describe(s) for s in steps[:head_len]), dev,
                 ([decode] if not head_len else []) + [_describe(t) for t in tail] +
                 ([_describe(batch_transform)] if batch_transform is not None else []))
    return dataset, chain, collate, plan


def _detection(loader, wrapped, indices, batch_transform, n_workers, dev, decode):
    """The workers' dataset, the device's chain, the collate step and the plan for a CocoDetection
    wrapped by wrap_dataset_for_transforms_v2: every step of its joint transforms runs on the device
    (the workers do not decode), and the loader's collate_fn on the device's samples."""
    inner = wrapped._dataset
    if type(inner).__name__ != "CocoDetection" or not hasattr(inner, "coco"):
        raise AccelerateError(f"torchaug.accelerate: of the datasets wrap_dataset_for_transforms_v2 wraps, it takes "
                              f"CocoDetection (the detection references'), got {type(inner).__name__}")
    problems: List[str] = []
    joint = wrapped.transforms
    if joint is not None and type(joint).__name__ == "StandardTransform":
        problems.append("the dataset's transform= / target_transform= act on the image and the target apart; accelerate "
                        "takes a joint transforms= (images and targets together, as the references' presets)")
    ids = inner.ids if indices is None else [inner.ids[i] for i in indices]
    files = [inner.coco.imgs[i]["file_name"] for i in ids]
    not_jpeg = [f for f in files if not f.lower().endswith(_JPEG)]
    if not_jpeg:
        problems.append(f"{len(not_jpeg)} of {len(files)} files are not JPEG (the device decodes JPEG), e.g. {not_jpeg[0]}")
    steps = _steps(joint) if joint is not None and not problems else []
    translated = [_translate(s) for s in steps]
    missing = [_describe(s) for s, t in zip(steps, translated) if t is None]
    if missing:
        problems.append(f"torchaug has no transform for {', '.join(missing)} (the workers of a detection dataset do not "
                        "decode: every step runs on the device)")
    _refuse(problems)
    tail, chain = _device_chain(steps, translated, -1)
    collate = _CollateOnDevice(loader.collate_fn, batch_transform)
    plan = _plan(f"torchaug.accelerate: {type(inner).__name__} of {len(files)} images (wrapped for transforms v2), "
                 f"batch {loader.batch_size}, {type(loader.sampler).__name__ if loader.batch_size is not None else type(loader.batch_sampler).__name__}, "
                 f"drop_last={loader.drop_last}", n_workers, "read file bytes and annotations (targets from the files' headers)",
                 dev, [decode] + [_describe(t) for t in tail] + [_describe(collate)])
    return _DetectionBytes(wrapped, indices), chain, collate, plan
