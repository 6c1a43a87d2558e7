"""The side-stream prefetcher (DESIGN.md §7): while the model trains on batch i, batches i+1 ..
i+depth are copied to the GPU and augmented on a side CUDA stream.

    loader = DataLoader(dataset, batch_size=256, num_workers=2, pin_memory=True, collate_fn=collate_ragged)
    for images, labels in Prefetcher(loader, T.Compose([...]), mean=MEAN, std=STD, memory_format=torch.channels_last):
        loss = criterion(model(images), labels)
"""
import atexit
import contextlib
import gc
import queue
import sys
import threading
import time
import traceback
import weakref
from typing import Any, Callable, Optional, Sequence

import torch

from .io import EncodedImages, PartlyDecoded, RaggedImages, decode_jpeg, decode_jpeg_ragged
from .io._decode import _mode_code
from .io._shm import release_segments
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


@contextlib.contextmanager
def _preparing():
    """What every preparation of a batch runs under. Preparing data records no autograd graph. Below
    the autograd dispatch keys torchaug's ops also skip their Python autograd kernels
    (torch.library.register_autograd): each call would otherwise take the GIL again, beside the
    training loop's thread."""
    with torch.no_grad(), torch._C._AutoDispatchBelowAutograd():
        yield


class PrefetchStats:
    """Host time a Prefetcher's work took, in seconds summed since it was made, to tell where a
    training step that waits for data loses its time:

    - loader: waiting for the loader's next batch (DataLoader workers reading or decoding);
    - prepare: preparing batches (decode calls, copies, the chain's Python and launches; on the CPU,
      the chain's work itself), summed over the producer threads: with threads > 1 it can exceed
      the wall time (a thread's wait for its turn to run the chain is not counted);
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
    (nvJPEG on CUDA) with `decode_mode`, or PartlyDecoded (torchaug.io.collate_partly_decoded: the
    workers decode a share of each batch on the CPU, the GPU the rest, joined in one RaggedImages);
    on_decode_error="skip" drops the files that do not decode (and the rows of the batch's other
    tensors and lists that belong to them) and records them in `decode_failures` as (batch number,
    index, reason), "raise" makes them an error. The images are the batch itself when it is a
    tensor, its first element when it is a tuple or list, and batch[image_key] when it is a dict.

    Re-iterable across epochs, len() when the loader has one, and a loop that breaks early shuts
    the loader's iterator down (or call close() on the iterator). An exception in the loader or a
    transform reaches the caller at the batch it belongs to. timeout > 0: a batch the producer
    threads have not prepared after that many seconds is a RuntimeError that shows where the threads
    are (their Python stacks), instead of a wait without end (a stalled loader or decode; under DDP
    the other ranks then fail in their collectives instead of waiting too). Without CUDA (device
    "cpu") the same chain runs inline (and timeout does not apply), unless threads > 1. `stats` (a
    PrefetchStats) says where the host time went: waiting for the loader, preparing, or one side
    waiting for the other.
    Batches are prepared without autograd (no graph is recorded, outputs never require grad).

    priority: the CUDA priority of the side streams (torch.cuda.Stream's: 0 is the default streams',
    lower numbers are more urgent, clamped to the range torch supports). The decode runs at the
    priority of the stream it is called on (its own streams follow it), so the whole preparation
    does. -1 lets the preparation's kernels take SMs ahead of the training step's as blocks free
    up. The default is 0: beside ResNet-50 -1 did not prepare batches faster or train faster
    (benchmarks/RESULTS.md, case 5, sessions 17 and 36; blocks already running are not preempted).

    threads: producer threads (each with its own side stream) preparing batches at the same time.
    Each takes the next batch from the loader and decodes and copies it beside the others (decode
    calls from different threads run on different nvJPEG decoders at once, up to
    TORCHAUG_NVJPEG_DECODERS); the chain and batch_transform then run one batch at a time in the
    loader's order, so that the batches and their random draws are exactly those of one thread.
    Up to `depth` prepared batches wait in the queue, and each thread holds one more while it waits
    for its turn. On the CPU, threads > 1 prepares batches on such threads too (1: inline). Two
    threads measured faster on an H100 when the GPU had room (no model beside: 20,714-26,299 img/s
    over 2 workers against 14,881-20,083 with one), not beside a training step (EfficientNet-b0
    0.4-1.5 points slower; benchmarks/RESULTS.md, cases 5 and 6, sessions 23 and 45): the default is 1.
    Intra-op threads (torch.get_num_threads()): on CUDA the producer threads run with 1; their CPU
    work is the decoder's header parse and the ops' host side, and a team of intra-op threads there
    can take cores from the training and loader threads (benchmarks/RESULTS.md, case 5, session 27:
    ResNet-50 trained 0.4-2.0 points faster with 1 than with 16 in three A/B runs; EfficientNet-b0's
    runs were within their noise).
    On the CPU, where the chain itself runs on them, they run with the count of the thread that
    starts the iteration. Either way the count is set, not inherited: a thread's
    torch.set_num_threads also becomes the count of every thread started after it (a DataLoader's
    pin thread sets 1, pytorch/pytorch#60469), so the producers' count used to depend on whether the
    loader pinned memory; the iterating thread puts torch's default for later threads back to its
    own count once the producers have set theirs."""

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
        if on_decode_error not in ("raise", "skip"):
            raise ValueError(f"torchaug.Prefetcher: on_decode_error must be 'raise' or 'skip', got {on_decode_error!r}")
        # one RaggedImages per decoded batch, except for "unchanged" (1- and 3-channel images mixed)
        self._decode_fn = decode_jpeg if _mode_code(decode_mode) == 0 else decode_jpeg_ragged
        self.decode_mode = decode_mode
        self.on_decode_error = on_decode_error
        self.decode_failures = []
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
        # host batches whose copies to the device may still be running: (event, batch), see _hold
        self._held = []
        self._held_lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> "_PrefetchIterator":
        live = self._live() if self._live is not None else None
        if live is not None:
            live.close()
        it = _PrefetchIterator(self)
        self._live = weakref.ref(it)
        return it

    # -- one batch, on whatever stream is current ------------------------------------------------
    def _prepare(self, batch):
        with _preparing():
            return self._prepare_batch(batch)

    def _prepare_batch(self, batch):
        self._batches += 1
        return self._transform_batch(self._load_batch(batch, self._batches - 1))

    def _load_batch(self, batch, index: int):
        """A batch's first stage: decoded (EncodedImages, PartlyDecoded) and copied to the device. It
        draws nothing at random, so producer threads run it for different batches at the same time."""
        host = batch
        if isinstance(self._images(batch), (EncodedImages, PartlyDecoded)):
            batch = self._decode(batch, index)
        if self._stream is not None:
            batch = _map_tensors(batch, lambda t: t.to(self.device, non_blocking=True))
            self._hold(host)
        return batch

    def _hold(self, host) -> None:
        """Keeps a host batch alive until the copies queued from it on the current (side) stream are
        done. A pinned copy is safe without it (torch's pinned allocator waits for the copy), but a
        worker's segment pinned in place (TORCHAUG_SHM_PIN=1) goes back to its worker when the batch
        dies, and the worker would write its next batch over memory a copy may still be reading."""
        done = torch.cuda.Event()
        done.record()
        with self._held_lock:
            self._held = [(e, b) for e, b in self._held if not e.query()]
            self._held.append((done, host))

    def _transform_batch(self, batch):
        """A batch's second stage: the chain and batch_transform, which draw their random parameters;
        producer threads run it one batch at a time in the loader's order, so that the draws are
        those of one thread."""
        if self.transform is not None:
            batch = self._apply_to_images(batch, self.transform)
        elif isinstance(self._images(batch), RaggedImages):
            batch = self._apply_to_images(batch, lambda x: x)
        if self.batch_transform is not None:
            batch = self.batch_transform(batch)
        return batch

    def _decode(self, batch, index: int):
        """The batch with its EncodedImages decoded on the device: one RaggedImages (the decoder's
        buffer and the sizes, no tensor per image), or a list of (C, H_i, W_i) images for
        decode_mode="unchanged" (which may mix 1- and 3-channel images)."""
        encoded = self._images(batch)
        # a PartlyDecoded batch joins its CPU share in one RaggedImages (its mode is "rgb" or "gray")
        decode = decode_jpeg_ragged if isinstance(encoded, PartlyDecoded) else self._decode_fn
        if self.on_decode_error == "raise":
            return self._replace_images(batch, decode(encoded, device=self.device, mode=self.decode_mode))
        images, failures = decode(encoded, device=self.device, mode=self.decode_mode, on_error="skip")
        if not failures:
            return self._replace_images(batch, images)
        self.decode_failures += [(index, i, reason) for i, reason in failures]
        if not len(images):
            raise RuntimeError(f"torchaug.Prefetcher: no file of batch {index} decoded: {failures[0][1]} (and {len(failures) - 1} more)")
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
        if isinstance(batch, (torch.Tensor, RaggedImages, EncodedImages, PartlyDecoded)):
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
        if isinstance(batch, (torch.Tensor, RaggedImages, EncodedImages, PartlyDecoded)):
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


def _take(q: "queue.Queue", timeout: float, threads: Sequence[threading.Thread]):
    """The next item of the producers' queue; with timeout > 0, a RuntimeError showing where the
    producer threads are when no item came for that many seconds."""
    if timeout <= 0:
        return q.get()
    try:
        return q.get(timeout=timeout)
    except queue.Empty:
        where = "".join(f"{t.name} (most recent call last):\n{_thread_stack(t)}" for t in threads)
        raise RuntimeError(f"torchaug.Prefetcher: no batch came for {timeout:g} s (timeout); the producer threads are "
                           f"at:\n{where}") from None


class _Producers:
    """What the producer threads of one _PrefetchIterator share: the loader's iterator (taken from
    one thread at a time, each batch numbered), and the turn: the number of the next batch to be
    transformed and queued, so that the chain's random draws and the queue follow the loader's order
    whatever order the threads' first stages finish in."""

    def __init__(self, owner: "Prefetcher", it, q: "queue.Queue", stop: threading.Event, consumer, num_threads: int):
        self.owner, self.it, self.q, self.stop, self.consumer = owner, it, q, stop, consumer
        self.num_threads = num_threads  # the intra-op thread count the threads run with
        self.counted = threading.Semaphore(0)  # released by each thread once it has set that count
        self.taking = threading.Lock()
        self.turn_changed = threading.Condition()
        self.turn = 0  # the number (counted from this iterator's first batch) of the next batch to queue
        self.taken = 0
        self.ended = False  # the loader ended or failed: no thread takes another batch

    def next_batch(self):
        """(number in this iterator, number in the Prefetcher's life, batch, seconds waited for it),
        with _END or (_Failed, None) for the batch once the loader ends or fails, then None."""
        with self.taking:
            if self.ended:
                return None
            n = self.taken
            self.taken += 1
            t0 = time.perf_counter()
            try:
                batch = next(self.it)
            except StopIteration:
                self.ended = True
                return n, None, _END, 0.0
            except Exception as e:  # a worker's error
                self.ended = True
                return n, None, (_Failed(e), None), 0.0
            index = self.owner._batches
            self.owner._batches += 1
            return n, index, batch, time.perf_counter() - t0

    def wait_turn(self, n: int) -> bool:
        with self.turn_changed:
            while self.turn != n:
                if self.stop.is_set():
                    return False
                self.turn_changed.wait(0.05)
        return not self.stop.is_set()

    def pass_turn(self) -> None:
        with self.turn_changed:
            self.turn += 1
            self.turn_changed.notify_all()


def _failed_or_end(item) -> bool:
    return item is _END or (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], _Failed))


def _produce(shared: _Producers, stream) -> None:
    """A producer thread of a _PrefetchIterator: batches from the loader, loaded (decoded, copied) on
    this thread's side stream beside the other threads', then, at their turn, transformed there, with
    an event marking the end of each; an exception goes to the consumer at its batch."""
    owner, q, stop = shared.owner, shared.q, shared.stop
    stats = owner.stats
    try:
        # torch sets a thread's count lazily, at its first get or parallel op, to the default of that
        # moment (which the iterating thread puts back, below): that first, then the count
        torch.get_num_threads()
        torch.set_num_threads(shared.num_threads)
    finally:
        shared.counted.release()
    if stream is not None:
        torch.cuda.set_device(owner.device)

    def on_stream():
        return torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()
    while not stop.is_set():
        taken = shared.next_batch()
        if taken is None:
            return
        n, index, batch, waited = taken
        item = batch if _failed_or_end(batch) else None
        t1 = time.perf_counter()
        if item is None:
            try:
                if stream is not None and any(t.is_cuda for t in _tensors(batch, [])):
                    # a batch already on the GPU may still be written by the consumer's stream; host
                    # batches need no wait (the side stream must not queue behind the model's step)
                    stream.wait_stream(shared.consumer)
                with on_stream(), _preparing():
                    batch = owner._load_batch(batch, index)
            except Exception as e:
                item = (_Failed(e), None)
        loaded = time.perf_counter() - t1
        if not shared.wait_turn(n):
            return
        t2 = time.perf_counter()
        if item is None:
            try:
                with on_stream(), _preparing():
                    batch = owner._transform_batch(batch)
                    done = None
                    if stream is not None:
                        done = torch.cuda.Event()
                        done.record(stream)
                item = (batch, done)
            except Exception as e:
                item = (_Failed(e), None)
        t3 = time.perf_counter()
        if _failed_or_end(item):
            # the consumer stops at this item: no thread takes another batch
            shared.ended = True
            _put(q, stop, item)
            shared.pass_turn()
            return
        stats.add_batch(waited, loaded + t3 - t2)
        if not _put(q, stop, item):
            return
        stats.queue_full += time.perf_counter() - t3
        shared.pass_turn()


class _PrefetchIterator:
    """On CUDA `threads` producer threads take batches from the loader and prepare them on their
    side streams, at most `depth` ahead, so that the host work of the chain (decode calls, launches,
    Python) runs while the consumer's thread runs the model's step; on the CPU the chain runs inline
    (or on `threads` > 1 producer threads)."""

    def __init__(self, owner: Prefetcher):
        self._owner = owner
        if getattr(owner.loader, "num_workers", 0) > 0 and torch.cuda.is_initialized():
            # the loader's workers are forked from this process: cyclic garbage holding CUDA tensors
            # (batches handed over, whose record_stream makes freeing them a CUDA call) would be
            # freed by a worker's garbage collector, where CUDA cannot run, and the worker would
            # abort; collected here first
            gc.collect()
        # read before the loader's iterator starts its pin thread, which sets the count of the
        # threads started after it to 1 (see Prefetcher)
        num_threads = torch.get_num_threads()
        self._it = iter(owner.loader)
        self._stop = threading.Event()
        self._threads = []
        # on the CPU with one thread the chain runs inline; else producer threads prepare the batches
        self._inline = owner._stream is None and owner.threads == 1
        if not self._inline:
            # the stream the consumer reads on (the main thread's): batches already on the GPU are
            # prepared after the work queued there
            self._consumer = torch.cuda.current_stream(owner.device) if owner._stream is not None else None
            self._queue = queue.Queue(maxsize=owner.depth)
            shared = _Producers(owner, self._it, self._queue, self._stop, self._consumer,
                                1 if owner._stream is not None else num_threads)
            # the threads hold no reference to this iterator, so that a loop that breaks early lets
            # it be collected and closed (__del__)
            self._threads = [threading.Thread(target=_produce, args=(shared, stream), daemon=True,
                                              name="torchaug-prefetch" + (f"-{k}" if k else ""))
                             for k, stream in enumerate(owner._streams or [None] * owner.threads)]
            for t in self._threads:
                t.start()
            # each producer's torch.set_num_threads also set the count of threads started later:
            # back to this thread's own
            for _ in self._threads:
                shared.counted.acquire(timeout=5)
            torch.set_num_threads(num_threads)
            _RUNNING.add(self)

    def __iter__(self):
        return self

    def __next__(self):
        owner = self._owner
        if self._inline:  # CPU, one thread: the chain inline
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
        if not self._threads:
            raise StopIteration
        t0 = time.perf_counter()
        try:
            item = _take(self._queue, owner.timeout, self._threads)
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
        if done is None:  # prepared on the CPU
            return batch
        consumer = torch.cuda.current_stream(self._owner.device)
        consumer.wait_event(done)
        for t in _tensors(batch, []):
            if t.device.type == "cuda":
                t.record_stream(consumer)
        return batch

    def _abandon(self) -> None:
        """close() for producer threads that do not come back (a timeout): they are told to stop
        and left behind (daemon threads), and the loader's iterator is shut down."""
        self._stop.set()
        self._threads = []
        self._shutdown_loader()

    def close(self) -> None:
        """Stops the producers, drops the queued batches and shuts the loader's iterator (and its
        workers) down, unless the loader keeps persistent workers for the next epoch."""
        _RUNNING.discard(self)
        self._stop.set()
        threads, self._threads = self._threads, []
        for thread in threads:
            if thread is threading.current_thread():
                continue
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
            release_segments()  # the exited workers' segments this process kept mapped (and pinned)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


# Iterators whose producer threads may still run. At interpreter exit they are closed before Python
# finalizes: a producer thread still inside a torch call then (which released the GIL) is stopped by
# the interpreter as it takes the GIL back, unwinding through C++ frames that must not be unwound,
# and the process aborts ("terminate called without an active exception").
_RUNNING: "weakref.WeakSet[_PrefetchIterator]" = weakref.WeakSet()


@atexit.register
def _close_running() -> None:
    for it in list(_RUNNING):
        try:
            it.close()
        except Exception:
            pass
