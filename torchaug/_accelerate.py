"""torchaug.accelerate(loader): a DataLoader over a torchvision ImageFolder / DatasetFolder whose
transform is a torchvision Compose becomes one whose workers only read the files' bytes, while the
decoding and the transforms, translated to torchaug's with the same arguments, run per sample on
the GPU in a Prefetcher. The loop over it receives what it received before (images and labels),
on the device.

What runs where is decided once, from the dataset and its transform:
- every transform torchaug has (torchvision v2 and v1 classes, nested Compose, RandomApply /
  RandomChoice / RandomOrder) runs on the device, with torchaug's per-sample draws;
- the device's part starts at the first step that makes images of different sizes one size
  (RandomResizedCrop, CenterCrop, Resize to [height, width]): the steps before it (a Resize of the
  short edge, say) and transforms torchaug cannot take (a Lambda, a class of the user's, a PIL-only
  op) at the start of the chain stay in the workers, which then decode with the dataset's loader as
  before and hand the device images of different sizes; an untranslatable step after a
  translatable one makes accelerate() refuse, naming it;
- a dataset with a loader of its own, files that are not JPEG, or a collate_fn of the user's make it
  refuse too: nothing is ever changed silently. explain=True prints the plan (also `.plan`)."""
import dis
import inspect
import os
from typing import Any, Callable, List, Optional

import torch

from . import transforms as T
from .io import ImageFolderBytes, collate_encoded, collate_ragged
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
    return otherwise(value)


def _fill(t):
    """A torchvision transform's fill as torchaug takes it: a number, a sequence, or None (a dict
    without an entry for images: its first value)."""
    return _for_images(getattr(t, "fill", None), lambda d: next(iter(d.values()), None))


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
    if name in ("PILToTensor", "ToImage", "ToPureTensor", "Identity", "ToImageTensor"):
        return T.Identity()  # decoded images are uint8 tensors already
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
    if name == "AugMix":
        return T.AugMix(t.severity, t.mixture_width, t.chain_depth, t.alpha, t.all_ops, interpolation=t.interpolation,
                        fill=_fill(t))
    return None


def _makes_one_size(t) -> bool:
    """Whether torchaug transform t takes images of different sizes and gives them one size."""
    return isinstance(t, (T.RandomResizedCrop, T.CenterCrop)) or (isinstance(t, T.Resize) and len(t.size) == 2)


_CALL_ONLY = ("RESUME", "NOP", "CACHE", "PUSH_NULL", "PRECALL")  # bytecode around a call that does nothing of its own


def _applied_attribute(obj) -> Optional[str]:
    """The attribute name when obj's class defines __call__ as `return self.<name>(<argument>)` and
    nothing else (the presets of torchvision's references: a class holding a Compose in
    self.transforms), else None. Read from the bytecode, so that nothing a wrapper does beyond the
    call is ever dropped."""
    fn = getattr(type(obj), "__call__", None)
    code = getattr(fn, "__code__", None)
    if code is None or code.co_argcount != 2 or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return None
    ops = [(i.opname, i.argval) for i in dis.get_instructions(code) if i.opname not in _CALL_ONLY]
    self_name, arg_name = code.co_varnames[:2]
    if len(ops) == 5 and ops[0] == ("LOAD_FAST", self_name) and ops[1][0] in ("LOAD_ATTR", "LOAD_METHOD") \
            and ops[2] == ("LOAD_FAST", arg_name) and ops[3] == ("CALL", 1) and ops[4][0] == "RETURN_VALUE":
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
    image as a uint8 (C, H, W) tensor for the device's part."""

    def __init__(self, dataset, head: List[Callable]):
        self.dataset = dataset
        self.head = head

    def __len__(self) -> int:
        return len(self.dataset.samples)

    def __getitem__(self, index: int):
        path, target = self.dataset.samples[index]
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


def accelerate(loader, *, device=None, workers: Optional[int] = 4, explain: bool = False, batch_transform: Optional[Callable] = None,
               on_decode_error: str = "raise", depth: int = 2) -> AcceleratedLoader:
    """The DataLoader `loader` (over a torchvision ImageFolder / DatasetFolder of JPEG files, with the
    default image loader and a torchvision transform) with its decoding and transforms moved to
    `device` (CUDA when there is one, else the CPU): the same sampler, batch size, drop_last, length
    and labels; workers (at most `workers`, None: the loader's number) read the files' bytes. Random
    transforms draw per sample, as torchvision's own per-sample loop in the workers did.
    batch_transform (MixUp / CutMix) runs on the device after the transforms; on_decode_error
    "skip" drops files that do not decode (Prefetcher). Raises AccelerateError naming what it
    cannot take. explain=True prints the plan."""
    from torch.utils.data import DataLoader
    from torch.utils.data.dataloader import default_collate

    if not isinstance(loader, DataLoader):
        raise AccelerateError(f"torchaug.accelerate: loader must be a torch.utils.data.DataLoader, got {type(loader).__name__}")
    ds = loader.dataset
    samples = getattr(ds, "samples", None)
    problems: List[str] = []
    if not (isinstance(samples, list) and hasattr(ds, "loader") and hasattr(ds, "transform")):
        raise AccelerateError(f"torchaug.accelerate: the dataset must be a torchvision ImageFolder or DatasetFolder "
                              f"(samples of (path, class), a loader, a transform), got {type(ds).__name__}")
    if getattr(ds, "transforms", None) is not None and type(ds.transforms).__name__ != "StandardTransform":
        problems.append("the dataset has a joint transforms= (image and target together)")
    loader_fn = getattr(ds.loader, "__name__", "")
    if loader_fn not in ("default_loader", "pil_loader", "accimage_loader"):
        problems.append(f"the dataset reads its files with {loader_fn or type(ds.loader).__name__}, not torchvision's "
                        "default image loader")
    not_jpeg = [p for p, _ in samples if not os.fspath(p).lower().endswith(_JPEG)]
    if loader.collate_fn is not default_collate and getattr(loader.collate_fn, "__name__", "") != "default_collate":
        problems.append(f"the loader's collate_fn {getattr(loader.collate_fn, '__name__', loader.collate_fn)!r} is the "
                        "user's (pass MixUp / CutMix as batch_transform= instead)")

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
    if problems:
        raise AccelerateError("torchaug.accelerate: cannot take this loader:\n  - " + "\n  - ".join(problems))

    # the device's steps; torchvision's conversions to tensors are nothing to do there (Identity) and
    # would stand between the steps Compose fuses
    tail = [t for t in translated[head_len:] if type(t) is not T.Identity]
    chain = T.Compose(tail)
    n_workers = loader.num_workers if workers is None else min(loader.num_workers, workers)
    if head_len:
        dataset, collate = _DecodedHead(ds, steps[:head_len]), collate_ragged
    else:
        dataset, collate = ImageFolderBytes.from_dataset(ds), collate_encoded
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
    dev = torch.device(device) if device is not None else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    prefetcher = Prefetcher(workers_loader, chain, dev, depth=depth, batch_transform=batch_transform, on_decode_error=on_decode_error)

    lines = [f"torchaug.accelerate: {type(ds).__name__} of {len(samples)} files, batch {loader.batch_size}, "
             f"{type(loader.sampler).__name__}, drop_last={loader.drop_last}",
             f"  workers ({n_workers}): " + ("read file bytes" if not head_len else
                                             "load with the dataset's loader, then " + " -> ".join(_describe(s) for s in steps[:head_len]))]
    device_steps = ([f"decode JPEG ({'nvJPEG' if dev.type == 'cuda' else 'libjpeg-turbo'})"] if not head_len else []) + \
        [_describe(t) for t in tail] + ([_describe(batch_transform)] if batch_transform is not None else [])
    lines.append(f"  {dev}: " + " -> ".join(device_steps or ["(nothing)"]))
    plan = "\n".join(lines)
    if explain:
        print(plan)
    return AcceleratedLoader(loader, workers_loader, prefetcher, plan)
