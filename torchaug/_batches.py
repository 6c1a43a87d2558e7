"""The structure of a loader's batch as the Prefetcher sees it: a tensor, or tuples, lists,
namedtuples and dicts of them (nested; torch.utils._pytree walks them), with the images at a known
place, and the decode stage that turns a batch of encoded files into decoded images."""
from typing import Any, Callable, List, Sequence

import torch
import torch.utils._pytree as pytree

from .io import EncodedImages, RaggedImages, decode_jpeg, decode_jpeg_ragged
from .io._decode import _mode_code

# what the Prefetcher moves to the device and hands over: tensors and ragged batches (a RaggedImages
# is one buffer plus host metadata)
_DEVICE_LEAVES = (torch.Tensor, RaggedImages)


def _is_leaf(x) -> bool:
    return isinstance(x, (torch.Tensor, RaggedImages, EncodedImages))


def map_tensors(batch, fn: Callable):
    """batch with fn applied to every tensor and RaggedImages in it; other leaves pass through."""
    return pytree.tree_map(lambda x: fn(x) if isinstance(x, _DEVICE_LEAVES) else x, batch, is_leaf=_is_leaf)


def tensors(batch) -> List[torch.Tensor]:
    """Every tensor of batch, a RaggedImages counting as its buffer."""
    leaves = pytree.tree_leaves(batch, is_leaf=_is_leaf)
    return [x.data if isinstance(x, RaggedImages) else x for x in leaves if isinstance(x, _DEVICE_LEAVES)]


def images_of(batch, image_key: str):
    """The images of a batch: the batch itself when it is a tensor (or a ragged or encoded batch),
    its first element when it is a tuple or list, batch[image_key] when it is a dict."""
    if isinstance(batch, (torch.Tensor, RaggedImages, EncodedImages)):
        return batch
    if isinstance(batch, (tuple, list)) and len(batch) > 0:
        return batch[0]
    if isinstance(batch, dict):
        if image_key not in batch:
            raise KeyError(f"torchaug.Prefetcher: the batch is a dict without the image key {image_key!r} (keys: {list(batch)})")
        return batch[image_key]
    raise TypeError(f"torchaug.Prefetcher: a batch must be a tensor, a tuple, a list or a dict, got {type(batch).__name__}")


def replace_images(batch, image_key: str, images):
    """batch with its images (images_of) replaced."""
    if isinstance(batch, (torch.Tensor, RaggedImages, EncodedImages)):
        return images
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # namedtuple
        return batch._replace(**{batch._fields[0]: images})
    if isinstance(batch, (tuple, list)):
        return type(batch)([images, *batch[1:]])
    batch = type(batch)(batch)
    batch[image_key] = images
    return batch


def target_fields(batch, image_key: str) -> List[Any]:
    """The positions (tuple, list) or keys (dict) of the batch's other fields that hold bounding
    boxes, masks or keypoints (torchvision's tv_tensors or torchaug.transforms' wrappers, alone or
    in per-image lists and dicts): the chain moves them with the images."""
    from .transforms._targets import _kind

    def holds(v) -> bool:
        if _kind(v) in ("boxes", "mask", "keypoints"):
            return True
        if isinstance(v, dict):
            return any(holds(x) for x in v.values())
        if isinstance(v, (list, tuple)) and not isinstance(v, str):
            return any(holds(x) for x in v)
        return False

    if isinstance(batch, (tuple, list)) and not isinstance(batch, str):
        return [i for i in range(1, len(batch)) if holds(batch[i])]
    if isinstance(batch, dict):
        return [k for k in batch if k != image_key and holds(batch[k])]
    return []


def replace_fields(batch, keys: Sequence[Any], values: Sequence[Any]):
    """batch with the fields at keys (target_fields) replaced by values."""
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return batch._replace(**{batch._fields[k]: v for k, v in zip(keys, values)})
    if isinstance(batch, (tuple, list)):
        out = list(batch)
        for k, v in zip(keys, values):
            out[k] = v
        return type(batch)(out)
    batch = type(batch)(batch)
    for k, v in zip(keys, values):
        batch[k] = v
    return batch


def select_rows(batch, keep: Sequence[int], n: int):
    """batch with only rows `keep` of every tensor (and list) of length n in its top level: what
    belongs to the samples that remain."""
    def select(v):
        if isinstance(v, torch.Tensor) and v.dim() > 0 and v.shape[0] == n:
            return v[torch.tensor(keep, device=v.device)]
        if isinstance(v, list) and len(v) == n:
            return [v[i] for i in keep]
        return v

    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(select(v) for v in batch))
    if isinstance(batch, (tuple, list)):
        return type(batch)(select(v) for v in batch)
    if isinstance(batch, dict):
        return type(batch)((k, select(v)) for k, v in batch.items())
    return batch


def _named(encoded, i: int, reason: str) -> str:
    """A decode failure of file i of a batch read from files, naming the file."""
    return f"torchaug.io.decode_jpeg: sample {i} ({encoded.lengths[i]} bytes, {encoded.names[i]}): {reason}"


class DecodeStage:
    """Decodes the EncodedImages of a batch on `device`: into one RaggedImages (the decoder's buffer and
    the sizes, no tensor per image), or a list of (C, H_i, W_i) images for mode="unchanged" (which
    may mix 1- and 3-channel images). on_error="skip" drops the files that do not decode, and the
    rows of the batch's other tensors and lists that belong to them, and records them in `failures`
    as (batch number, index, reason); "raise" makes them an error."""

    def __init__(self, device: torch.device, mode: str, on_error: str, image_key: str):
        if on_error not in ("raise", "skip"):
            raise ValueError(f"torchaug.Prefetcher: on_decode_error must be 'raise' or 'skip', got {on_error!r}")
        self.device, self.mode, self.on_error, self.image_key = device, mode, on_error, image_key
        self.decode = decode_jpeg if _mode_code(mode) == 0 else decode_jpeg_ragged
        self.failures: List[Any] = []

    def wants(self, batch) -> bool:
        return isinstance(images_of(batch, self.image_key), EncodedImages)

    def __call__(self, batch, index: int):
        encoded = images_of(batch, self.image_key)
        names = getattr(encoded, "names", None)
        if self.on_error == "raise" and names is None:  # the decoder's own error
            return replace_images(batch, self.image_key, self.decode(encoded, device=self.device, mode=self.mode))
        images, failures = self.decode(encoded, device=self.device, mode=self.mode, on_error="skip")
        if not failures:
            return replace_images(batch, self.image_key, images)
        if self.on_error == "raise":  # the first failure, naming its file
            raise RuntimeError(_named(encoded, *failures[0]))
        self.failures += [(index, i, reason if names is None else _named(encoded, i, reason)) for i, reason in failures]
        if not len(images):
            raise RuntimeError(f"torchaug.Prefetcher: no file of batch {index} decoded: {failures[0][1]} "
                               f"(and {len(failures) - 1} more)")
        bad = {i for i, _ in failures}
        n = len(encoded)
        keep = [i for i in range(n) if i not in bad]
        return replace_images(select_rows(batch, keep, n), self.image_key, images)
