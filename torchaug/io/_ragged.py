"""A ragged batch of images (different sizes) as one flat buffer, so that a DataLoader worker can hand
a whole batch of decoded images over in one tensor, the pin-memory thread pins it in one copy, and
the prefetcher moves it to the GPU in one non_blocking transfer (CV-CUDA's varshape idea)."""
from typing import List, Sequence

import numpy as np
import torch

from ._shm import SharedBatch, shared_bytes


class RaggedImages(SharedBatch):
    """B images of one dtype and channel count, sample i of shape (C, H_i, W_i), stored back to back
    in `data` (1-D) from `offsets[i]`, either CHW or HWC (`channels_last`: as libjpeg-turbo, PIL and
    numpy write, and torchvision.io.decode_jpeg under its CHW view).

    DataLoader's pin_memory=True pins it (pin_memory()), `.to(device, non_blocking=True)` moves it in
    one copy. The crop-like transforms (RandomResizedCrop, Resize, CenterCrop) and
    torchaug.functional.resized_crop_boxes take it as it is and turn it into a dense batch in one
    launch, with no Python work per image; the other transforms see `.images()`, the list of
    (C, H_i, W_i) views."""

    def __init__(self, data: torch.Tensor, sizes: Sequence[Sequence[int]], channels: int, channels_last: bool):
        if not isinstance(data, torch.Tensor) or data.dim() != 1:
            raise ValueError(f"torchaug.io.RaggedImages: data must be a 1-D tensor, got {getattr(data, 'shape', type(data).__name__)}")
        self.data = data
        self.sizes = [(int(h), int(w)) for h, w in sizes]
        self.channels = int(channels)
        self.channels_last = bool(channels_last)
        self._layout = None
        numels = [h * w * self.channels for h, w in self.sizes]
        self.offsets = np.concatenate([[0], np.cumsum(numels)]).astype(np.int64).tolist()
        if self.offsets[-1] != data.numel():
            raise ValueError(
                f"torchaug.io.RaggedImages: data must hold {self.offsets[-1]} elements for sizes {self.sizes} "
                f"with {self.channels} channels, got {data.numel()}"
            )

    @classmethod
    def from_images(cls, images: Sequence) -> "RaggedImages":
        """Pack (C, H, W) torch tensors or (H, W, C) / (H, W) numpy arrays into one buffer: one copy
        of every image, done in the worker that decoded them. Numpy arrays are stored HWC. Tensors
        are stored CHW, except when every one is a (C, H, W) view of HWC memory, as
        torchvision.io.decode_jpeg returns on the CPU: then HWC, so that each image is one
        contiguous block copy instead of a transposing copy (~5x less packing time for 256
        500x375 images in a worker)."""
        if len(images) == 0:
            raise ValueError("torchaug.io.RaggedImages: no images to pack")
        channels_last = isinstance(images[0], np.ndarray)
        hwc_views = not channels_last and _hwc_views(images)
        tensors: List[torch.Tensor] = []
        sizes = []
        channels = 0  # image 0's, once read
        for i, im in enumerate(images):
            if channels_last != isinstance(im, np.ndarray):
                raise TypeError("torchaug.io.RaggedImages: images must be all torch tensors (C, H, W) or all numpy arrays (H, W, C)")
            t = torch.from_numpy(np.ascontiguousarray(im)) if channels_last else im
            if channels_last and t.dim() == 2:
                t = t.unsqueeze(-1)
            if not isinstance(t, torch.Tensor) or t.dim() != 3:
                raise ValueError(f"torchaug.io.RaggedImages: image {i} must be 3-D, got {getattr(im, 'shape', type(im).__name__)}")
            c, h, w = (t.shape[2], t.shape[0], t.shape[1]) if channels_last else tuple(t.shape)
            if tensors and t.dtype != tensors[0].dtype:
                raise ValueError(f"torchaug.io.RaggedImages: image {i} has dtype {t.dtype}, image 0 has {tensors[0].dtype}")
            if tensors and c != channels:
                raise ValueError(f"torchaug.io.RaggedImages: image {i} has {c} channels, image 0 has a different count")
            channels = c
            tensors.append(t)
            sizes.append((h, w))
        flat = [t.permute(1, 2, 0).reshape(-1) if hwc_views else t.reshape(-1) for t in tensors]
        channels_last = channels_last or hwc_views
        # in a DataLoader worker the batch is written straight into shared memory (one of the
        # worker's reused segments), so handing it to the main process does not copy it again
        out, lease = shared_bytes(sum(t.numel() for t in flat) * flat[0].element_size())
        packed = cls(torch.cat(flat, out=out.view(flat[0].dtype)), sizes, channels, channels_last)
        packed._lease = lease
        return packed

    def __len__(self) -> int:
        return len(self.sizes)

    @property
    def device(self) -> torch.device:
        return self.data.device

    def host_layout(self):
        """(offsets (B,), sizes (B, 2) [H, W]) as int64 CPU tensors: the batch description that
        torchaug::resized_crop_ragged takes with `data`."""
        if self._layout is None:
            self._layout = (torch.tensor(self.offsets[:-1], dtype=torch.int64),
                            torch.tensor(self.sizes, dtype=torch.int64).reshape(-1, 2))
        return self._layout

    def pin_memory(self, device=None) -> "RaggedImages":
        return self._with(self.data.pin_memory())

    def to(self, device, non_blocking: bool = False) -> "RaggedImages":
        return self._with(self.data.to(device, non_blocking=non_blocking))

    def _with(self, data: torch.Tensor) -> "RaggedImages":
        out = RaggedImages.__new__(RaggedImages)
        out.data, out.sizes, out.channels, out.channels_last, out.offsets = data, self.sizes, self.channels, self.channels_last, self.offsets
        out._layout = self._layout
        return out

    def images(self) -> List[torch.Tensor]:
        """The (C, H_i, W_i) views into `data` (HWC-strided when channels_last)."""
        out = []
        c = self.channels
        for (h, w), start in zip(self.sizes, self.offsets):
            flat = self.data[start:start + h * w * c]
            out.append(flat.view(h, w, c).permute(2, 0, 1) if self.channels_last else flat.view(c, h, w))
        return out

    def __repr__(self) -> str:
        return (f"RaggedImages({len(self)} images, {self.channels} channels, {self.data.dtype}, "
                f"{'HWC' if self.channels_last else 'CHW'}, device={self.device})")


def _hwc_views(images: Sequence) -> bool:
    """Whether every image is a 3-D tensor over HWC memory (its (H, W, C) permutation contiguous)
    and at least one is not also CHW-contiguous (one channel, or one row and column, is both)."""
    if not all(isinstance(t, torch.Tensor) and t.dim() == 3 for t in images):
        return False
    return all(t.permute(1, 2, 0).is_contiguous() for t in images) and not all(t.is_contiguous() for t in images)


def collate_ragged(samples: Sequence):
    """DataLoader collate_fn for samples of different sizes: (image, label, ...) tuples or bare images.
    Images are packed into one RaggedImages; the other fields are collated by torch's default rule.
    Returns (RaggedImages, labels, ...) or a RaggedImages."""
    return collate_first_field(samples, RaggedImages.from_images, "collate_ragged")


def _per_image_targets(field: Sequence) -> bool:
    """Whether a field's entries are detection targets: dicts holding bounding boxes, masks or
    keypoints (torchvision's tv_tensors or torchaug's wrappers), whose numbers of rows differ from
    image to image, so that they stay one dict per image."""
    from ..transforms._targets import _kind
    return all(isinstance(d, dict) for d in field) and any(_kind(v) in ("boxes", "mask", "keypoints")
                                                            for d in field for v in d.values())


def collate_first_field(samples: Sequence, pack, name: str):
    """(pack(first fields), default_collate(other fields)...) for (x, label, ...) samples, or pack(samples)
    for bare ones: the rule collate_ragged and collate_encoded share. A field of detection targets
    (dicts holding boxes, masks or keypoints) stays a list of one dict per image."""
    if len(samples) == 0:
        raise ValueError(f"torchaug.io.{name}: empty batch")
    if isinstance(samples[0], (tuple, list)):
        fields = list(zip(*samples))
        rest = [list(f) if _per_image_targets(f) else torch.utils.data.default_collate(list(f)) for f in fields[1:]]
        return (pack(fields[0]), *rest)
    return pack(samples)
