"""The input side when the GPU decodes: DataLoader workers only read file bytes.

- EncodedImages: a batch of encoded files as one flat uint8 buffer plus lengths (written into shared
  memory in the worker, pinned in one copy); the Prefetcher decodes it on the GPU.
- ImageFolderBytes: torchvision's ImageFolder layout, returning (bytes, label).
- TarShards / write_tar_shards: WebDataset-style tar shards ("<key>.jpg" + "<key>.cls" members), read
  by offset from an index built once, so that millions of small files are not opened one by one.
- read_batch: a batch of files read straight into one buffer (in a DataLoader worker, one of its
  shared segments). ImageFolderBytes and TarShards read a DataLoader batch this way (__getitems__),
  and collate_encoded hands that buffer on as the batch's EncodedImages without copying it.
"""
import io
import os
import tarfile
import weakref
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from ._ragged import collate_first_field
from ._shm import SharedBatch, shared_bytes

__all__ = ["EncodedImages", "collate_encoded", "ImageFolderBytes", "TarShards", "write_tar_shards", "read_batch"]

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
    bytes there), and tensors() gives the per-file views that torchaug.io.decode_jpeg takes. `names`
    (the files' paths, when the batch was read from files) lets a decode error name the file."""

    names: Optional[List[str]] = None

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
        out = EncodedImages(self.data.pin_memory(), self.lengths)
        out.names = self.names
        return out

    def __repr__(self) -> str:
        return f"EncodedImages({len(self)} files, {self.data.numel()} bytes)"


def collate_encoded(samples: Sequence):
    """DataLoader collate_fn for (file bytes, label, ...) samples or bare file bytes: the files go into
    one EncodedImages, the other fields through torch's default_collate. A batch that read_batch (or
    ImageFolderBytes' and TarShards' __getitems__) read into one buffer is handed on as it lies."""
    encoded = samples.claim() if isinstance(samples, _PackedSamples) else None
    pack = EncodedImages.from_bytes if encoded is None else (lambda files: encoded)
    return collate_first_field(samples, pack, "collate_encoded")


class _PackedSamples(list):
    """A batch's samples, (file bytes, label) or bare file bytes, whose files are numpy views lying back
    to back in one buffer (`_encoded.data`): collate_encoded takes that buffer as the batch (claim)
    instead of copying the files into a new one.

    In a DataLoader worker the buffer is one of the worker's pooled shared segments (torchaug.io._shm),
    leased to this batch. Claimed, the lease travels with the EncodedImages to the main process, which
    gives the segment back when it drops the batch. Not claimed (another collate_fn, or the samples
    changed), the worker gives it back itself once the last view of the files is gone."""

    def claim(self) -> Optional["EncodedImages"]:
        """The batch as one EncodedImages, if these are still the samples read (else None)."""
        views = self._views
        if len(self) != len(views) or self._claimed[0]:
            return None
        for s, v in zip(self, views):
            if (s[0] if isinstance(s, tuple) else s) is not v:
                return None
        self._claimed[0] = True
        return self._encoded

    def __reduce__(self):
        # pickled or copied (a collate_fn that returns the samples as they are, say): a plain list of
        # the files' bytes, never the leased buffer, which only collate_encoded hands on
        return list, (list(self),)


def _give_back_unclaimed(claimed: list, flags: torch.Tensor, i: int) -> None:
    if not claimed[0]:
        flags[i] = 0


def _read_packed(sizes: Sequence[int], fill: Callable[[int, np.ndarray], None], labels: Optional[Sequence] = None,
                 names: Optional[List[str]] = None) -> _PackedSamples:
    """The _PackedSamples of files of `sizes` bytes, file k written into its view by fill(k, view);
    names: what to call the files in errors (their paths)."""
    data, lease = shared_bytes(sum(sizes))
    whole = data.numpy()
    ends = np.cumsum(sizes).tolist()
    # each view's base is `whole` (a slice of an array over foreign memory keeps that array as its
    # base), so `whole` lives as long as any of them
    views = [whole[e - n:e] for n, e in zip(sizes, ends)]
    claimed = [False]
    if lease is not None:
        weakref.finalize(whole, _give_back_unclaimed, claimed, lease[0], lease[1])
    for k, v in enumerate(views):
        fill(k, v)
    out = _PackedSamples(views if labels is None else zip(views, labels))
    encoded = EncodedImages(data, sizes)
    encoded._lease = lease
    encoded.names = names
    out._encoded, out._views, out._claimed = encoded, views, claimed
    return out


def _pread_into(fd: int, view: np.ndarray, offset: int, op: str, what: str) -> None:
    """Fills `view` with the bytes of fd from `offset` on; an error naming `what` if they end first."""
    got, n = 0, view.size
    while got < n:
        k = os.preadv(fd, [view[got:]], offset + got)
        if k == 0:
            raise IOError(f"torchaug.io.{op}: {what} ended after {got} of its {n} bytes (changed since it was listed?)")
        got += k


def _read_file_into(path: str, view: np.ndarray, op: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        _pread_into(fd, view, 0, op, path)
        size = os.fstat(fd).st_size
        if size != view.size:
            raise IOError(f"torchaug.io.{op}: {path} is now {size} bytes, {view.size} when the batch was listed (changed while read)")
    finally:
        os.close(fd)


def read_batch(paths: Sequence[str], labels: Optional[Sequence] = None) -> List:
    """Reads the files at `paths` straight into one buffer: in a DataLoader worker, one of the worker's
    reused shared-memory segments. Returns the batch's samples, (the file's bytes as a uint8 array,
    label) or bare arrays when labels is None: views of that buffer, which collate_encoded hands to the
    main process as the batch's EncodedImages without a copy. A dataset's __getitems__ (what DataLoader
    calls with a batch's indices) can return it:

        def __getitems__(self, indices):
            return torchaug.io.read_batch([self.paths[i] for i in indices], [self.labels[i] for i in indices])

    On the H100 machine a worker spent 7-9 ms of CPU on a batch of 256 files of ~110 KB read so, against
    14-31 ms reading a uint8 array per file for collate_encoded to pack."""
    paths = [os.fspath(p) for p in paths]
    if labels is not None and len(labels) != len(paths):
        raise ValueError(f"torchaug.io.read_batch: labels must match paths, got {len(labels)} labels for {len(paths)} paths")
    sizes = [os.stat(p).st_size for p in paths]
    return _read_packed(sizes, lambda k, view: _read_file_into(paths[k], view, "read_batch"), labels, paths)


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

    @classmethod
    def from_dataset(cls, dataset) -> "ImageFolderBytes":
        """The same files, classes and target_transform as a torchvision ImageFolder / DatasetFolder
        `dataset` (its samples, without scanning the folder again)."""
        out = cls.__new__(cls)
        out.root = os.fspath(getattr(dataset, "root", ""))
        out.classes, out.class_to_idx = list(dataset.classes), dict(dataset.class_to_idx)
        out.samples = list(dataset.samples)
        out.targets = [t for _, t in out.samples]
        out.target_transform = dataset.target_transform
        return out

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int):
        path, target = self.samples[index]
        if self.target_transform is not None:
            target = self.target_transform(target)
        return _read_bytes(path), target

    def __getitems__(self, indices: Sequence[int]) -> List:
        """The samples of a DataLoader batch, read into one buffer (read_batch)."""
        picked = [self.samples[i] for i in indices]
        tt = self.target_transform
        return read_batch([p for p, _ in picked], [t if tt is None else tt(t) for _, t in picked])


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


def _index_shard(path: str) -> Tuple[Dict[str, Tuple[int, int]], Dict[str, int]]:
    """The (offset, size) of each image member of a tar shard and the labels of its .cls members.
    A shard that is cut short is an error naming it and the offset where it breaks: tarfile reads a
    shard cut between two members as a shorter, valid one, so the end-of-archive blocks (two zero
    blocks after the last member) are checked, and every member's data must lie inside the file."""
    images: Dict[str, Tuple[int, int]] = {}
    labels: Dict[str, int] = {}
    file_size = os.path.getsize(path)
    where = 0
    try:
        with tarfile.open(path, "r:") as tar:
            for m in tar:
                where = m.offset
                if not m.isfile():
                    continue
                if m.offset_data + m.size > file_size:
                    raise ValueError(f"member {m.name!r} needs bytes {m.offset_data}..{m.offset_data + m.size} of a "
                                     f"{file_size}-byte file")
                key, ext = os.path.splitext(m.name)
                if ext.lower() in (".jpg", ".jpeg"):
                    images[key] = (m.offset_data, m.size)
                elif ext == ".cls":
                    text = tar.extractfile(m).read().decode(errors="replace").strip()
                    try:
                        labels[key] = int(text)
                    except ValueError:
                        raise ValueError(f"member {m.name!r} must hold an integer label, got {text[:40]!r}") from None
            end = tar.offset
    except (tarfile.TarError, EOFError, ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"torchaug.io.TarShards: shard {path} is not a readable tar archive at byte offset {where}: "
                         f"{e}") from None
    with open(path, "rb") as f:
        f.seek(end)
        trailer = f.read(1024)
    if len(trailer) < 1024 or trailer.count(0) != 1024:
        raise ValueError(f"torchaug.io.TarShards: shard {path} is cut short: it ends at byte {file_size} without the "
                         f"end-of-archive blocks after the member ending at byte offset {end} (a truncated copy?)")
    return images, labels


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
            images, labels = _index_shard(path)
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
        data = np.empty(size, dtype=np.uint8)
        _pread_into(self._fd(shard), data, offset, "TarShards", f"sample {index} in {self.shards[shard]}")
        return data, label

    def __getitems__(self, indices: Sequence[int]) -> List:
        """The samples of a DataLoader batch, read by offset into one buffer (see read_batch)."""
        picked = [self.index[i] for i in indices]

        def fill(k, view):
            shard, offset, _, _ = picked[k]
            _pread_into(self._fd(shard), view, offset, "TarShards", f"sample {indices[k]} in {self.shards[shard]}")
        return _read_packed([size for _, _, size, _ in picked], fill, [label for *_, label in picked])

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_fds"], state["_pid"] = {}, None
        return state
