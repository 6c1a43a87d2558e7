"""The side-stream prefetcher (DESIGN.md §7): while the model trains on batch i, batches i+1 ..
i+depth are copied to the GPU and augmented on a side CUDA stream.

    loader = DataLoader(dataset, batch_size=256, num_workers=2, pin_memory=True, collate_fn=collate_ragged)
    for images, labels in Prefetcher(loader, T.Compose([...]), mean=MEAN, std=STD, memory_format=torch.channels_last):
        loss = criterion(model(images), labels)
"""
import queue
import sys
import threading
import time
import traceback
from typing import Any, Callable, Optional, Sequence

import torch

from .io import EncodedImages, RaggedImages, decode_jpeg, decode_jpeg_ragged
from .io._decode import _mode_code
from .transforms import Compose, Normalize, ToDtype
from .transforms._transform import as_input

__all__ = ["Prefetcher", "PrefetchStats"]


def _map_tensors(obj, fn):
    """obj with fn applied to every tensor (and RaggedImages) in nested tuples, lists and dicts."""
    if isinstance(obj, (torch.Tensor, RaggedImages)):
        return fn(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(_map_tensors(o, fn) for o in obj))
    if isinstance(obj, (tuple, list)):
        return type(obj)(_map_tensors(o, fn) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _map_tensors(v, fn)) for k, v in obj.items())
    return obj


def _tensors(obj, out):
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, RaggedImages):
        out.append(obj.data)
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            _tensors(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors(o, out)
    return out


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
      the chain's work itself);
    - queue_full: the producer thread waiting because `depth` batches were ready and not taken
      (the model is the slower side);
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
    `device`, transformed, `depth` batches ahead of the consumer.

    For each batch, on a side CUDA stream: a non_blocking copy of every tensor to the device, then
    `transform` on the images, then the output stage (`mean`/`std` normalize, cast to `dtype`,
    `memory_format`), then `batch_transform` on the whole batch (MixUp / CutMix take images and
    labels); an event marks the end. Handing a batch over makes the consumer's current stream wait
    on that event and record_stream()s every tensor of the batch on it, so no memory is reused
    while the model still reads it.

    Batches may be tensors, tuples, lists, namedtuples or dicts (nested; non-tensors pass through),
    with RaggedImages (torchaug.io.collate_ragged) for images of different sizes, or EncodedImages
    (torchaug.io.collate_encoded: workers only read file bytes), which is decoded on `device` first
    (nvJPEG on CUDA) with `decode_mode`; on_decode_error="skip" drops the files that do not decode
    (and the rows of the batch's other tensors and lists that belong to them) and records them in
    `decode_failures` as (batch number, index, reason), "raise" makes them an error. The images are the
    batch itself when it is a tensor, its first element when it is a tuple or list, and
    batch[image_key] when it is a dict.

    Re-iterable across epochs, len() when the loader has one, and a loop that breaks early shuts
    the loader's iterator down (or call close() on the iterator). An exception in the loader or a
    transform reaches the caller at the batch it belongs to. timeout > 0: a batch the producer
    thread has not prepared after that many seconds is a RuntimeError that shows where the thread
    is (its Python stack), instead of a wait without end (a stalled loader or decode; under DDP the
    other ranks then fail in their collectives instead of waiting too). Without CUDA (device "cpu")
    the same chain runs inline (and timeout does not apply). `stats` (a PrefetchStats) says where
    the host time went: waiting for the loader, preparing, or one side waiting for the other.
    Batches are prepared without autograd (no graph is recorded, outputs never require grad)."""

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
    ):
        if not hasattr(loader, "__iter__"):
            raise TypeError(f"torchaug.Prefetcher: loader must be iterable, got {type(loader).__name__}")
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"torchaug.Prefetcher: depth must be an int >= 1, got {depth!r}")
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
        if on_decode_error not in ("raise", "skip"):
            raise ValueError(f"torchaug.Prefetcher: on_decode_error must be 'raise' or 'skip', got {on_decode_error!r}")
        # one RaggedImages per decoded batch, except for "unchanged" (1- and 3-channel images mixed)
        self._decode_fn = decode_jpeg if _mode_code(decode_mode) == 0 else decode_jpeg_ragged
        self.decode_mode = decode_mode
        self.on_decode_error = on_decode_error
        self.decode_failures = []
        self.stats = PrefetchStats()
        self._batches = 0
        self._stream = torch.cuda.Stream(self.device) if self.device.type == "cuda" else None
        self._live = None

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> "_PrefetchIterator":
        if self._live is not None:
            self._live.close()
        self._live = _PrefetchIterator(self)
        return self._live

    # -- one batch, on whatever stream is current ------------------------------------------------
    def _prepare(self, batch):
        # Preparing data records no autograd graph. Below the autograd dispatch keys torchaug's ops
        # also skip their Python autograd kernels (torch.library.register_autograd): each call
        # would otherwise take the GIL again, beside the training loop's thread.
        with torch.no_grad(), torch._C._AutoDispatchBelowAutograd():
            return self._prepare_batch(batch)

    def _prepare_batch(self, batch):
        self._batches += 1
        if isinstance(self._images(batch), EncodedImages):
            batch = self._decode(batch)
        if self._stream is not None:
            batch = _map_tensors(batch, lambda t: t.to(self.device, non_blocking=True))
        if self.transform is not None:
            batch = self._apply_to_images(batch, self.transform)
        elif isinstance(self._images(batch), RaggedImages):
            batch = self._apply_to_images(batch, lambda x: x)
        if self.batch_transform is not None:
            batch = self.batch_transform(batch)
        return batch

    def _decode(self, batch):
        """The batch with its EncodedImages decoded on the device: one RaggedImages (the decoder's
        buffer and the sizes, no tensor per image), or a list of (C, H_i, W_i) images for
        decode_mode="unchanged" (which may mix 1- and 3-channel images)."""
        encoded = self._images(batch)
        decode = self._decode_fn
        if self.on_decode_error == "raise":
            return self._replace_images(batch, decode(encoded, device=self.device, mode=self.decode_mode))
        images, failures = decode(encoded, device=self.device, mode=self.decode_mode, on_error="skip")
        if not failures:
            return self._replace_images(batch, images)
        self.decode_failures += [(self._batches - 1, i, reason) for i, reason in failures]
        if not len(images):
            raise RuntimeError(f"torchaug.Prefetcher: no file of batch {self._batches - 1} decoded: {failures[0][1]} (and {len(failures) - 1} more)")
        bad = {i for i, _ in failures}
        keep = [i for i in range(len(encoded)) if i not in bad]
        n = len(encoded)

        def select(v):
            if isinstance(v, torch.Tensor) and v.dim() > 0 and v.shape[0] == n:
                return v[torch.tensor(keep, device=v.device)]
            if isinstance(v, list) and len(v) == n:
                return [v[i] for i in keep]
            return v

        if isinstance(batch, tuple) and hasattr(batch, "_fields"):
            batch = type(batch)(*(select(v) for v in batch))
        elif isinstance(batch, (tuple, list)):
            batch = type(batch)(select(v) for v in batch)
        elif isinstance(batch, dict):
            batch = type(batch)((k, select(v)) for k, v in batch.items())
        return self._replace_images(batch, images)

    def _images(self, batch):
        if isinstance(batch, (torch.Tensor, RaggedImages, EncodedImages)):
            return batch
        if isinstance(batch, (tuple, list)) and len(batch) > 0:
            return batch[0]
        if isinstance(batch, dict):
            if self.image_key not in batch:
                raise KeyError(f"torchaug.Prefetcher: the batch is a dict without the image key {self.image_key!r} (keys: {list(batch)})")
            return batch[self.image_key]
        raise TypeError(f"torchaug.Prefetcher: a batch must be a tensor, a tuple, a list or a dict, got {type(batch).__name__}")

    def _apply_to_images(self, batch, fn):
        # a RaggedImages batch reaches the chain as it is (its crop reads it in place) and plain
        # callables as its list of images
        return self._replace_images(batch, fn(as_input(fn, self._images(batch))))

    def _replace_images(self, batch, out):
        if isinstance(batch, (torch.Tensor, RaggedImages, EncodedImages)):
            return out
        if isinstance(batch, tuple) and hasattr(batch, "_fields"):
            return batch._replace(**{batch._fields[0]: out})
        if isinstance(batch, (tuple, list)):
            return type(batch)([out, *batch[1:]])
        batch = type(batch)(batch)
        batch[self.image_key] = out
        return batch


class _Failed:
    """An exception raised while preparing a batch, re-raised when the consumer reaches it."""

    def __init__(self, error: BaseException):
        self.error = error


_END = object()


def _put(q: "queue.Queue", stop: threading.Event, item) -> bool:
    while not stop.is_set():
        try:
            q.put(item, timeout=0.05)
            return True
        except queue.Full:
            continue
    return False


def _thread_stack(thread: threading.Thread) -> str:
    frame = sys._current_frames().get(thread.ident)
    return "".join(traceback.format_stack(frame)) if frame is not None else "  (the thread has ended)\n"


def _take(q: "queue.Queue", timeout: float, thread: threading.Thread):
    """The next item of the producer's queue; with timeout > 0, a RuntimeError showing where the
    producer thread is when no item came for that many seconds."""
    if timeout <= 0:
        return q.get()
    try:
        return q.get(timeout=timeout)
    except queue.Empty:
        raise RuntimeError(f"torchaug.Prefetcher: no batch came for {timeout:g} s (timeout); the producer thread is "
                           f"at (most recent call last):\n{_thread_stack(thread)}") from None


def _produce(owner: "Prefetcher", it, q: "queue.Queue", stop: threading.Event, consumer) -> None:
    """The producer thread of a _PrefetchIterator: batches from the loader, prepared on the side
    stream, with an event marking the end of each; an exception goes to the consumer at its batch."""
    stream = owner._stream
    stats = owner.stats
    torch.cuda.set_device(owner.device)
    while not stop.is_set():
        t0 = time.perf_counter()
        try:
            batch = next(it)
        except StopIteration:
            _put(q, stop, _END)
            return
        except Exception as e:  # a worker's error
            _put(q, stop, (_Failed(e), None))
            return
        t1 = time.perf_counter()
        try:
            if any(t.is_cuda for t in _tensors(batch, [])):
                # a batch already on the GPU may still be written by the consumer's stream; host
                # batches need no wait (the side stream must not queue behind the model's step)
                stream.wait_stream(consumer)
            with torch.cuda.stream(stream):
                batch = owner._prepare(batch)
                done = torch.cuda.Event()
                done.record(stream)
        except Exception as e:
            _put(q, stop, (_Failed(e), None))
            return
        t2 = time.perf_counter()
        stats.add_batch(t1 - t0, t2 - t1)
        if not _put(q, stop, (batch, done)):
            return
        stats.queue_full += time.perf_counter() - t2


class _PrefetchIterator:
    """On CUDA a producer thread takes batches from the loader and prepares them on the side stream,
    at most `depth` ahead, so that the host work of the chain (decode calls, launches, Python) runs
    while the consumer's thread runs the model's step; on the CPU the chain runs inline."""

    def __init__(self, owner: Prefetcher):
        self._owner = owner
        self._it = iter(owner.loader)
        self._stop = threading.Event()
        self._thread = None
        if owner._stream is not None:
            # the stream the consumer reads on (the main thread's): batches already on the GPU are
            # prepared after the work queued there
            self._consumer = torch.cuda.current_stream(owner.device)
            self._queue = queue.Queue(maxsize=owner.depth)
            # the thread holds no reference to this iterator, so that a loop that breaks early lets
            # it be collected and closed (__del__)
            self._thread = threading.Thread(target=_produce, args=(owner, self._it, self._queue, self._stop, self._consumer),
                                            name="torchaug-prefetch", daemon=True)
            self._thread.start()

    def __iter__(self):
        return self

    def __next__(self):
        owner = self._owner
        if owner._stream is None:  # CPU: the chain inline
            if self._it is None:
                raise StopIteration
            t0 = time.perf_counter()
            try:
                batch = next(self._it)
            except StopIteration:
                self.close()
                raise
            t1 = time.perf_counter()
            batch = owner._prepare(batch)
            owner.stats.add_batch(t1 - t0, time.perf_counter() - t1)
            return batch
        if self._thread is None:
            raise StopIteration
        t0 = time.perf_counter()
        try:
            item = _take(self._queue, owner.timeout, self._thread)
        except RuntimeError:
            self._abandon()
            raise
        owner.stats.consumer_wait += time.perf_counter() - t0
        if item is _END:
            self.close()
            raise StopIteration
        batch, done = item
        if isinstance(batch, _Failed):
            self.close()
            raise batch.error
        return self._hand_over(batch, done)

    def _hand_over(self, batch, done):
        """The consumer's stream waits for the batch, and its memory is not reused before the work
        queued on that stream (the model reading it) is done."""
        consumer = torch.cuda.current_stream(self._owner.device)
        consumer.wait_event(done)
        for t in _tensors(batch, []):
            if t.device.type == "cuda":
                t.record_stream(consumer)
        return batch

    def _abandon(self) -> None:
        """close() for a producer thread that does not come back (a timeout): it is told to stop
        and left behind (a daemon thread), and the loader's iterator is shut down."""
        self._stop.set()
        self._thread = None
        self._shutdown_loader()

    def close(self) -> None:
        """Stops the producer, drops the queued batches and shuts the loader's iterator (and its
        workers) down, unless the loader keeps persistent workers for the next epoch."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            while thread.is_alive():
                try:
                    self._queue.get(timeout=0.05)
                except queue.Empty:
                    pass
                thread.join(timeout=0.05)
        self._shutdown_loader()

    def _shutdown_loader(self) -> None:
        it, self._it = self._it, None
        if getattr(self._owner.loader, "persistent_workers", False):
            return
        shutdown = getattr(it, "_shutdown_workers", None)
        if shutdown is not None:
            shutdown()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
