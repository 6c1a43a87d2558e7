"""The input side when the GPU decodes: DataLoader workers only read file bytes.

- EncodedImages: a batch of encoded files as one flat uint8 buffer plus lengths (written into shared
  memory in the worker, pinned in one copy); the Prefetcher decodes it on the GPU.
- ImageFolderBytes: torchvision's ImageFolder layout, returning (bytes, label).
- TarShards / write_tar_shards: WebDataset-style tar shards ("<key>.jpg" + "<key>.cls" members), read
  by offset from an index built once, so that millions of small files are not opened one by one.
"""
import io
import os
import tarfile
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from ._ragged import collate_first_field
from ._shm import SharedBatch, shared_bytes

__all__ = ["EncodedImages", "collate_encoded", "ImageFolderBytes", "TarShards", "write_tar_shards"]

IMG_EXTENSIONS = (".jpg", ".jpeg", ".JPG", ".JPEG")


def _as_array(d, i: int) -> np.ndarray:
    if isinstance(d, torch.Tensor):
        if d.dtype != torch.uint8 or d.dim() != 1:
            raise ValueError(f"torchaug.io.EncodedImages: file {i} must be a 1-D uint8 tensor, got {d.dtype} {tuple(d.shape)}")
        return d.numpy()
    if isinstance(d, (bytes, bytearray, memoryview)):
        return np.frombuffer(d, dtype=np.uint8)
    if isinstance(d, np.ndarray) and d.dtype == np.uint8 and d.ndim == 1:
        return d
    raise TypeError(f"torchaug.io.EncodedImages: file {i} must be bytes, a 1-D uint8 tensor or array, got {type(d).__name__}")


class EncodedImages(SharedBatch):
    """B encoded files back to back in one 1-D uint8 tensor `data`, file i of `lengths[i]` bytes.
    DataLoader's pin_memory=True pins it in one copy; it stays in host memory (the decoder reads the
    bytes there), and tensors() gives the per-file views that torchaug.io.decode_jpeg takes."""

    def __init__(self, data: torch.Tensor, lengths: Sequence[int]):
        if not isinstance(data, torch.Tensor) or data.dim() != 1 or data.dtype != torch.uint8:
            raise ValueError("torchaug.io.EncodedImages: data must be a 1-D uint8 tensor")
        self.data = data
        self.lengths = [int(n) for n in lengths]
        self.offsets = np.concatenate([[0], np.cumsum(self.lengths, dtype=np.int64)]).tolist()
        if self.offsets[-1] != data.numel():
            raise ValueError(f"torchaug.io.EncodedImages: lengths add up to {self.offsets[-1]} bytes, data holds {data.numel()}")

    @classmethod
    def from_bytes(cls, files: Sequence) -> "EncodedImages":
        """Packs files (bytes, 1-D uint8 tensors or arrays) into one buffer; inside a DataLoader
        worker the buffer lies in shared memory, one of the worker's reused segments (torchaug.io._shm),
        so handing it over copies nothing."""
        arrays = [_as_array(d, i) for i, d in enumerate(files)]
        data, lease = shared_bytes(sum(a.size for a in arrays))
        if arrays:
            np.concatenate(arrays, out=data.numpy())
        out = cls(data, [a.size for a in arrays])
        out._lease = lease
        return out

    def __len__(self) -> int:
        return len(self.lengths)

    def tensors(self) -> List[torch.Tensor]:
        # one split (views made in C++) rather than a Python slice per file
        return list(self.data.split(self.lengths)) if self.lengths else []

    def pin_memory(self, device=None) -> "EncodedImages":
        return EncodedImages(self._pinned_data(), self.lengths)

    def __repr__(self) -> str:
        return f"EncodedImages({len(self)} files, {self.data.numel()} bytes)"


def collate_encoded(samples: Sequence):
    """DataLoader collate_fn for (file bytes, label, ...) samples or bare file bytes: the files go into
    one EncodedImages, the other fields through torch's default_collate."""
    return collate_first_field(samples, EncodedImages.from_bytes, "collate_encoded")


def _read_bytes(path: str) -> np.ndarray:
    return np.fromfile(path, dtype=np.uint8)


class ImageFolderBytes(torch.utils.data.Dataset):
    """torchvision.datasets.ImageFolder's layout (root/<class>/<file>.jpg, classes sorted) whose
    samples are (the file's bytes as a uint8 array, class index): decoding happens later, on the GPU."""

    def __init__(self, root: str, extensions: Tuple[str, ...] = IMG_EXTENSIONS, target_transform: Optional[Callable] = None):
        self.root = os.fspath(root)
        self.classes = sorted(e.name for e in os.scandir(self.root) if e.is_dir())
        if not self.classes:
            raise FileNotFoundError(f"torchaug.io.ImageFolderBytes: no class folders in {self.root}")
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}
        self.samples: List[Tuple[str, int]] = []
        for c in self.classes:
            for dirpath, _, names in sorted(os.walk(os.path.join(self.root, c), followlinks=True)):
                for name in sorted(names):
                    if name.endswith(extensions):
                        self.samples.append((os.path.join(dirpath, name), self.class_to_idx[c]))
        if not self.samples:
            raise FileNotFoundError(f"torchaug.io.ImageFolderBytes: no files ending in {extensions} under {self.root}")
        self.targets = [t for _, t in self.samples]
        self.target_transform = target_transform

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int):
        path, target = self.samples[index]
        if self.target_transform is not None:
            target = self.target_transform(target)
        return _read_bytes(path), target


def write_tar_shards(samples: Sequence[Tuple[str, int]], out_dir: str, samples_per_shard: int = 1000,
                     prefix: str = "shard") -> List[str]:
    """Packs (image path, label) pairs (ImageFolderBytes(...).samples, say) into WebDataset-style tar
    shards in out_dir: member "<key>.jpg" holds the file, "<key>.cls" the label as text. Returns the
    shard paths."""
    if samples_per_shard < 1:
        raise ValueError(f"torchaug.io.write_tar_shards: samples_per_shard must be >= 1, got {samples_per_shard}")
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for s in range(0, len(samples), samples_per_shard):
        path = os.path.join(out_dir, f"{prefix}-{s // samples_per_shard:06d}.tar")
        with tarfile.open(path, "w") as tar:
            for i, (image, label) in enumerate(samples[s:s + samples_per_shard]):
                key = f"{s + i:09d}"
                tar.add(image, arcname=f"{key}.jpg")
                cls = str(int(label)).encode()
                info = tarfile.TarInfo(f"{key}.cls")
                info.size = len(cls)
                tar.addfile(info, io.BytesIO(cls))
        paths.append(path)
    return paths


class TarShards(torch.utils.data.Dataset):
    """A map-style dataset over WebDataset-style tar shards: each sample is the members sharing a key
    ("<key>.jpg" or ".jpeg", and "<key>.cls" with the label as text). The shards are indexed once (tar
    headers only); __getitem__ reads the image's bytes by offset with one pread, so workers never
    open one file per image. Returns (bytes as a uint8 array, label); samples without a .cls get
    label -1."""

    def __init__(self, shards: Sequence[str]):
        if isinstance(shards, (str, os.PathLike)):
            shards = [shards]
        self.shards = [os.fspath(s) for s in shards]
        if not self.shards:
            raise ValueError("torchaug.io.TarShards: no shards given")
        self.index: List[Tuple[int, int, int, int]] = []  # (shard, offset, size, label)
        for si, path in enumerate(self.shards):
            images: Dict[str, Tuple[int, int]] = {}
            labels: Dict[str, int] = {}
            with tarfile.open(path, "r:") as tar:
                for m in tar:
                    if not m.isfile():
                        continue
                    key, ext = os.path.splitext(m.name)
                    if ext.lower() in (".jpg", ".jpeg"):
                        images[key] = (m.offset_data, m.size)
                    elif ext == ".cls":
                        f = tar.extractfile(m)
                        labels[key] = int(f.read().decode().strip())
            for key in sorted(images):
                offset, size = images[key]
                self.index.append((si, offset, size, labels.get(key, -1)))
        if not self.index:
            raise FileNotFoundError(f"torchaug.io.TarShards: no .jpg members in {self.shards}")
        self._fds: Dict[int, int] = {}
        self._pid = None

    def __len__(self) -> int:
        return len(self.index)

    def _fd(self, shard: int) -> int:
        if self._pid != os.getpid():  # a DataLoader worker: its own descriptors
            self._fds, self._pid = {}, os.getpid()
        fd = self._fds.get(shard)
        if fd is None:
            fd = self._fds[shard] = os.open(self.shards[shard], os.O_RDONLY)
        return fd

    def __getitem__(self, index: int):
        shard, offset, size, label = self.index[index]
        data = os.pread(self._fd(shard), size, offset)
        if len(data) != size:
            raise IOError(f"torchaug.io.TarShards: short read of sample {index} from {self.shards[shard]}")
        return np.frombuffer(data, dtype=np.uint8), label

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_fds"], state["_pid"] = {}, None
        return state
