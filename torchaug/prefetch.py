"""The side-stream prefetcher: while the model trains on batch i, batches i+1 .. i+depth are decoded,
copied to the GPU and augmented on a side CUDA stream by producer threads (torchaug/_producers.py).

    loader = DataLoader(dataset, batch_size=256, num_workers=2, pin_memory=True, collate_fn=collate_encoded)
    for images, labels in Prefetcher(loader, T.Compose([...]), mean=MEAN, std=STD, memory_format=torch.channels_last):
        loss = criterion(model(images), labels)
"""
import threading
import weakref
from typing import Any, Callable, Optional, Sequence

import torch

from ._batches import DecodeStage, images_of, map_tensors, replace_fields, replace_images, target_fields
from ._producers import _PrefetchIterator, _preparing
from .io import RaggedImages
from .transforms import Compose, Normalize, ToDtype
from .transforms._transform import as_input

__all__ = ["Prefetcher", "PrefetchStats"]


def _pipeline(transform, mean, std, dtype, memory_format) -> Optional[Callable]:
    """The user's chain followed by the output stage the model wants, as one Compose (so that a
    trailing ToDtype + Normalize or crop + Normalize fuses into one pass)."""
    if transform is None:
        chain = []
    elif isinstance(transform, Compose):
        chain = list(transform.transforms)
    elif isinstance(transform, Sequence) and not isinstance(transform, torch.nn.Module):
        chain = list(transform)
    else:
        chain = [transform]
    for t in chain:
        if not callable(t):
            raise TypeError(f"torchaug.Prefetcher: transform must be a callable or a sequence of callables, got {type(t).__name__}")
    if (mean is None) != (std is None):
        raise ValueError("torchaug.Prefetcher: mean and std must be given together")
    if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise ValueError(f"torchaug.Prefetcher: dtype must be a floating torch.dtype, got {dtype!r}")
    if mean is not None:
        chain.append(Normalize(mean, std, out_dtype=dtype, memory_format=memory_format))
    else:
        if dtype is not None:
            chain.append(ToDtype(dtype, scale=True))
        if memory_format is not None:
            chain.append(lambda x: x.contiguous(memory_format=memory_format))
    if not chain:
        return None
    fuse = transform.fuse if isinstance(transform, Compose) else True
    return Compose(chain, fuse=fuse)


class PrefetchStats:
    """Host time a Prefetcher's work took, in seconds summed since it was made, to tell where a
    training step that waits for data loses its time:

    - loader: waiting for the loader's next batch (DataLoader workers reading or decoding);
    - prepare: preparing batches (decode calls, copies, the chain's Python and launches; on the CPU,
      the chain's work itself), summed over the producer threads: with threads > 1 it can exceed
      the wall time (a thread's wait for its turn to run the chain is not counted);
    - queue_full: the producer thread waiting because `depth` batches were ready and not taken
      (the model is the slower side), and then for its next batch's start a share of the model's
      step later (past the step's forward launches, whose Python its own would slow);
    - consumer_wait: the consumer waiting for a batch (the data is the slower side).

    On the CPU the chain runs inline: queue_full and consumer_wait stay 0. per_batch_ms(earlier)
    gives each figure per batch since an earlier as_dict()."""

    FIELDS = ("loader", "prepare", "queue_full", "consumer_wait")

    def __init__(self):
        self.batches = 0
        for f in self.FIELDS:
            setattr(self, f, 0.0)

    def add_batch(self, loader: float, prepare: float) -> None:
        """One batch taken from the loader after `loader` seconds and prepared in `prepare`."""
        self.loader += loader
        self.prepare += prepare
        self.batches += 1

    def as_dict(self) -> dict:
        return {"batches": self.batches, **{f: getattr(self, f) for f in self.FIELDS}}

    def per_batch_ms(self, earlier: Optional[dict] = None) -> dict:
        now, earlier = self.as_dict(), earlier or {}
        n = now["batches"] - earlier.get("batches", 0)
        return {f: (now[f] - earlier.get(f, 0.0)) * 1e3 / n if n > 0 else None for f in self.FIELDS}

    def __repr__(self) -> str:
        return "PrefetchStats(" + ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                                            for k, v in self.as_dict().items()) + ")"


class Prefetcher:
    """Wraps an iterable of batches (a DataLoader, best with pin_memory=True) and yields them on
    `device`, transformed, up to `depth` batches ahead of the consumer.

    For each batch, on a side CUDA stream: EncodedImages (torchaug.io.collate_encoded: the workers
    read file bytes) decoded on the device with `decode_mode`, a non_blocking copy of every tensor,
    `transform` on the images, the output stage (`mean`/`std` normalize, cast to `dtype`,
    `memory_format`, fused into the chain where it can be; the batch's bounding boxes, masks and
    keypoints move with the images), then `batch_transform` on the whole batch
    (MixUp / CutMix take images and labels). The consumer's stream waits on the batch's event, and
    every tensor of the batch is record_stream()ed on it, so no memory is reused while the model
    still reads it. Batches are prepared without autograd.

    Batches may be tensors, tuples, lists, namedtuples or dicts (nested; non-tensors pass through),
    with RaggedImages (torchaug.io.collate_ragged) for images of different sizes. The images are the
    batch itself when it is a tensor, its first element when it is a tuple or list, and
    batch[image_key] when it is a dict. on_decode_error="skip" drops the files that do not decode
    (and their rows of the batch's other tensors and lists) and records them in `decode_failures` as
    (batch number, index, reason); "raise" makes them an error.

    Re-iterable across epochs; len() when the loader has one; a loop that breaks early shuts the
    loader's iterator down. An exception in the loader or a transform reaches the caller at its
    batch. timeout > 0: a batch not ready after that many seconds is a RuntimeError showing where the
    producer threads are. threads: producer threads (each with its own side stream) that load batches
    beside each other; the chain then runs one batch at a time in the loader's order, so the batches
    and their random draws are those of one thread. priority: the side streams' CUDA priority (lower
    is more urgent). Without CUDA the chain runs inline on the CPU (on `threads` threads when > 1, and
    on one producer thread with a timeout, so that a stalled loader cannot hold the caller).
    `stats` (a PrefetchStats) says where the host time went."""

    def __init__(
        self,
        loader,
        transform: Optional[Any] = None,
        device=None,
        depth: int = 2,
        *,
        mean: Optional[Sequence[float]] = None,
        std: Optional[Sequence[float]] = None,
        dtype: Optional[torch.dtype] = None,
        memory_format: Optional[torch.memory_format] = None,
        batch_transform: Optional[Callable] = None,
        image_key: str = "image",
        decode_mode: str = "rgb",
        on_decode_error: str = "raise",
        timeout: float = 0,
        threads: int = 1,
        priority: int = 0,
    ):
        if not hasattr(loader, "__iter__"):
            raise TypeError(f"torchaug.Prefetcher: loader must be iterable, got {type(loader).__name__}")
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"torchaug.Prefetcher: depth must be an int >= 1, got {depth!r}")
        if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= 16:
            raise ValueError(f"torchaug.Prefetcher: threads must be an int in [1, 16], got {threads!r}")
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise TypeError(f"torchaug.Prefetcher: priority must be an int (a CUDA stream priority: 0 the default, "
                            f"lower more urgent), got {type(priority).__name__}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
            raise ValueError(f"torchaug.Prefetcher: timeout must be a number of seconds >= 0 (0: wait without end), got {timeout!r}")
        if batch_transform is not None and not callable(batch_transform):
            raise TypeError(f"torchaug.Prefetcher: batch_transform must be callable, got {type(batch_transform).__name__}")
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        if self.device.type == "cuda":
            if not torch.cuda.is_available():
                raise RuntimeError("torchaug.Prefetcher: device is cuda but CUDA is not available")
            if self.device.index is None:
                self.device = torch.device("cuda", torch.cuda.current_device())
        self.loader = loader
        self.depth = depth
        self.timeout = float(timeout)
        self.transform = _pipeline(transform, mean, std, dtype, memory_format)
        self.batch_transform = batch_transform
        self.image_key = image_key
        self._decode = DecodeStage(self.device, decode_mode, on_decode_error, image_key)
        self.decode_mode = decode_mode
        self.on_decode_error = on_decode_error
        self.decode_failures = self._decode.failures  # (batch number, index, reason) of the files skipped
        self.stats = PrefetchStats()
        self._batches = 0
        self.threads = threads
        # a side stream per producer thread (a batch's whole preparation is on one of them)
        self.priority = priority
        self._streams = ([torch.cuda.Stream(self.device, priority=priority) for _ in range(threads)]
                         if self.device.type == "cuda" else [])
        self._stream = self._streams[0] if self._streams else None
        # the live iterator, weakly: the producer threads hold this Prefetcher, so a strong reference
        # would keep an iterator whose loop broke off (and its threads, queued batches and the
        # loader's workers) alive as long as the threads run, that is, for ever
        self._live = None
        # host batches whose decode and copies to the device may still be running: (event, batch), see _hold
        self._held = []
        self._held_lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> _PrefetchIterator:
        live = self._live() if self._live is not None else None
        if live is not None:
            live.close()
        it = _PrefetchIterator(self)
        self._live = weakref.ref(it)
        return it

    # -- one batch, on whatever stream is current ------------------------------------------------
    def _prepare(self, batch):
        with _preparing():
            self._batches += 1
            return self._transform_batch(self._load_batch(batch, self._batches - 1))

    def _load_batch(self, batch, index: int):
        """A batch's first stage: decoded (EncodedImages) and copied to the device. It draws nothing at
        random, so producer threads run it for different batches at the same time."""
        host = batch
        if self._decode.wants(batch):
            batch = self._decode(batch, index)
        if self._stream is not None:
            batch = map_tensors(batch, lambda t: t.to(self.device, non_blocking=True))
            self._hold(host)
        return batch

    def _hold(self, host) -> None:
        """Keeps a host batch alive until the work queued from it on the current (side) stream is
        done: the JPEG decoder's engines and the non_blocking copies read it asynchronously, and a
        batch in a worker's shared-memory buffer gives the buffer back to the worker when it dies
        (torchaug/io/_shm.py), which would then write its next batch over memory still being read."""
        done = torch.cuda.Event()
        done.record()
        with self._held_lock:
            self._held = [(e, b) for e, b in self._held if not e.query()]
            self._held.append((done, host))

    def _transform_batch(self, batch):
        """A batch's second stage: the chain and batch_transform, which draw their random parameters;
        producer threads run it one batch at a time in the loader's order, so that the draws are
        those of one thread. Fields holding boxes, masks or keypoints go through the chain with the
        images (target_fields). A RaggedImages batch reaches the chain as it is (its crop reads it in
        place) and plain callables as its list of images."""
        images = images_of(batch, self.image_key)
        keys = target_fields(batch, self.image_key) if self.transform is not None else []
        if keys:  # boxes, masks and keypoints move with the images
            fields = [batch[k] for k in keys]
            out = self.transform(as_input(self.transform, images), *fields)
            batch = replace_fields(replace_images(batch, self.image_key, out[0]), keys, out[1:])
        elif self.transform is not None:
            batch = replace_images(batch, self.image_key, self.transform(as_input(self.transform, images)))
        elif isinstance(images, RaggedImages):
            batch = replace_images(batch, self.image_key, as_input(lambda x: x, images))
        if self.batch_transform is not None:
            batch = self.batch_transform(batch)
        return batch
