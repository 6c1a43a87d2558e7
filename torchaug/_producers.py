"""The Prefetcher's producer threads (torchaug/prefetch.py): they take batches from the loader, load
them (decode, copy to the device) beside each other on their side streams, and transform them one
at a time in the loader's order; the consumer takes them from a queue and hands them over to its
stream."""
import atexit
import contextlib
import gc
import queue
import sys
import threading
import time
import traceback
import weakref
from typing import TYPE_CHECKING, Optional, Sequence

import torch

from . import _settings as settings
from ._batches import tensors

if TYPE_CHECKING:
    from .prefetch import Prefetcher


@contextlib.contextmanager
def _preparing():
    """What every preparation of a batch runs under. Preparing data records no autograd graph. Below
    the autograd dispatch keys torchaug's ops also skip their Python autograd kernels
    (torch.library.register_autograd): each call would otherwise take the GIL again, beside the
    training loop's thread."""
    with torch.no_grad(), torch._C._AutoDispatchBelowAutograd():
        yield


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


class _Pace:
    """When the producers are ahead of the consumer (`depth` batches ready, a put that waits for a
    take), the next preparation starts a share of the consumer's step after the take instead of at
    it. A training step's forward pass is launched by the training thread's Python, holding the GIL
    between launches, in about the step's first third (the backward costs about twice the forward);
    later in the step that thread waits without the GIL (the autograd engine's backward, the sync on
    the loss). A producer that starts its batch's Python (the loader's next batch, the chain's
    launches) at the take shares the GIL with the forward's launches, and a model whose forward is
    launch-bound (EfficientNet-b0's small kernels) waits for them; started later it runs beside the
    backward. The wait ends early when the consumer takes another batch (it is faster than the
    measured step: a pause between epochs, say), and is skipped where the queued batches would not
    cover it and two preparations."""

    # of the consumer's step: after its forward's launches. On an H200, EfficientNet-b0 under
    # torchaug.accelerate trains at 98.4% of its synthetic-data speed so, against 97.2% with each
    # preparation started at the take (medians of 3 alternating runs of each)
    SHARE = 0.4

    def __init__(self, depth: int):
        self.depth = depth
        self.changed = threading.Condition()
        self.takes = 0
        self._last: Optional[float] = None
        self._steps: list = []  # the latest intervals between takes, in seconds

    def took(self) -> None:
        """The consumer took a batch (its thread)."""
        now = time.perf_counter()
        with self.changed:
            if self._last is not None:
                self._steps = (self._steps + [now - self._last])[-3:]
            self._last = now
            self.takes += 1
            self.changed.notify_all()

    def delay(self, prepare: float) -> float:
        """Seconds to wait after a take before preparing a batch that takes `prepare` seconds."""
        with self.changed:
            if len(self._steps) < 3:
                return 0.0
            step = sorted(self._steps)[1]
        wait = self.SHARE * step
        return wait if wait + 2 * prepare <= self.depth * step else 0.0

    def wait(self, seen: int, seconds: float, stop: threading.Event) -> None:
        """Waits `seconds`, or until a take after the one that counted `seen` + 1, or `stop`."""
        deadline = time.perf_counter() + seconds
        with self.changed:
            while self.takes <= seen + 1 and not stop.is_set():
                left = deadline - time.perf_counter()
                if left <= 0:
                    return
                self.changed.wait(min(left, 0.05))


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

    def __init__(self, owner: "Prefetcher", it, q: "queue.Queue", stop: threading.Event, consumer, num_threads: int,
                 pace: _Pace):
        self.owner, self.it, self.q, self.stop, self.consumer, self.pace = owner, it, q, stop, consumer, pace
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
    _THREAD.defer_close = True  # an iterator collected here is closed by the reaper (__del__)
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
                if stream is not None and any(t.is_cuda for t in tensors(batch)):
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
        seen, ahead = shared.pace.takes, q.full()
        if not _put(q, stop, item):
            return
        shared.pass_turn()
        if ahead:
            shared.pace.wait(seen, shared.pace.delay(waited + loaded + t3 - t2), stop)
        stats.queue_full += time.perf_counter() - t3


class _SwitchInterval:
    """The GIL switch interval while producer threads run. A thread waiting for the GIL waits up to
    the interval (Python's default: 5 ms) before the interpreter makes the holder give it up. The
    producers' Python (the chain's draws and launches) holds it for a while at a time beside the
    training loop's thread, whose kernel launches must keep ahead of the GPU: after each of the
    step's synchronisations (a loss.item()) every millisecond that thread waits is a millisecond the
    GPU idles. A shorter interval (TORCHAUG_SWITCH_INTERVAL_US, default 0.1 ms) bounds that wait.
    Set when the first running iteration starts its threads, given back when the last one stops,
    unless something else changed it meanwhile."""

    def __init__(self):
        self.lock = threading.Lock()
        self.users = 0
        self.saved: Optional[float] = None  # the interval before, when this one set it
        self.value: Optional[float] = None

    @contextlib.contextmanager
    def holding(self):
        """self.lock, with this thread marked as one where a collected iterator must not be closed
        (closing gives the interval back, which takes self.lock again)."""
        before = getattr(_THREAD, "defer_close", False)
        _THREAD.defer_close = True
        try:
            with self.lock:
                yield
        finally:
            _THREAD.defer_close = before

    def acquire(self) -> None:
        with self.holding():
            if self.users == 0:
                wanted = settings.switch_interval_us() / 1e6
                current = sys.getswitchinterval()
                self.saved = self.value = None
                if wanted > 0 and current > wanted:
                    sys.setswitchinterval(wanted)
                    self.saved, self.value = current, sys.getswitchinterval()
            self.users += 1

    def release(self) -> None:
        with self.holding():
            self.users -= 1
            if self.users == 0:
                if self.saved is not None and sys.getswitchinterval() == self.value:
                    sys.setswitchinterval(self.saved)
                self.saved = self.value = None


_SWITCH = _SwitchInterval()
# per thread: defer_close, set where a collected iterator must not be closed (see __del__)
_THREAD = threading.local()


class _PrefetchIterator:
    """On CUDA `threads` producer threads take batches from the loader and prepare them on their
    side streams, at most `depth` ahead, so that the host work of the chain (decode calls, launches,
    Python) runs while the consumer's thread runs the model's step; on the CPU the chain runs inline
    (or on `threads` > 1 producer threads)."""

    def __init__(self, owner: "Prefetcher"):
        self._owner = owner
        loader = owner.loader
        forks = getattr(loader, "num_workers", 0) > 0 and not (
            getattr(loader, "persistent_workers", False) and getattr(loader, "_iterator", None) is not None)
        if forks and torch.cuda.is_initialized():
            # the loader's workers are forked from this process now (persistent workers that already
            # run are not): cyclic garbage holding CUDA tensors (batches handed over, whose
            # record_stream makes freeing them a CUDA call) would be freed by a worker's garbage
            # collector, where CUDA cannot run, and the worker would abort; collected here first
            # (a full collection of a training process's heap takes tens of milliseconds)
            gc.collect()
        # The producers' intra-op thread count is set, not inherited: a thread's torch.set_num_threads
        # also becomes the count of every thread started after it (a DataLoader's pin thread sets 1,
        # pytorch/pytorch#60469). On CUDA the producers run with 1 (their CPU work is the decoder's
        # header parse and the ops' host side, and a team of intra-op threads there takes cores from
        # the training and loader threads); on the CPU, where the chain runs on them, with this
        # thread's count, read before the loader's iterator starts its pin thread.
        num_threads = torch.get_num_threads()
        self._run = run = _Run(loader, iter(loader))
        # on the CPU with one thread and no timeout the chain runs inline; else producer threads
        # prepare the batches (a timeout needs one: a stalled loader blocks the thread that asks it)
        self._inline = owner._stream is None and owner.threads == 1 and owner.timeout <= 0
        if not self._inline:
            # the stream the consumer reads on (the main thread's): batches already on the GPU are
            # prepared after the work queued there
            self._consumer = torch.cuda.current_stream(owner.device) if owner._stream is not None else None
            run.queue = queue.Queue(maxsize=owner.depth)
            _REAPER.start()
            _SWITCH.acquire()
            run.switch = True
            self._pace = _Pace(owner.depth)
            shared = _Producers(owner, run.it, run.queue, run.stop, self._consumer,
                                1 if owner._stream is not None else num_threads, self._pace)
            # the threads hold no reference to this iterator, so that a loop that breaks early lets
            # it be collected and closed (__del__)
            run.threads = [threading.Thread(target=_produce, args=(shared, stream), daemon=True,
                                              name="torchaug-prefetch" + (f"-{k}" if k else ""))
                             for k, stream in enumerate(owner._streams or [None] * owner.threads)]
            for t in run.threads:
                t.start()
            # each producer's torch.set_num_threads also set the count of threads started later:
            # back to this thread's own
            for _ in run.threads:
                shared.counted.acquire(timeout=5)
            torch.set_num_threads(num_threads)
            _RUNNING.add(self)

    def __iter__(self):
        return self

    def __next__(self):
        owner = self._owner
        if self._inline:  # CPU, one thread: the chain inline
            if self._run.it is None:
                raise StopIteration
            t0 = time.perf_counter()
            try:
                batch = next(self._run.it)
            except StopIteration:
                self.close()
                raise
            t1 = time.perf_counter()
            batch = owner._prepare(batch)
            owner.stats.add_batch(t1 - t0, time.perf_counter() - t1)
            return batch
        run = self._run
        if not run.threads:
            raise StopIteration
        t0 = time.perf_counter()
        try:
            item = _take(run.queue, owner.timeout, run.threads)
        except RuntimeError:
            # producer threads that do not come back: told to stop and left behind (daemon
            # threads), the loader's iterator shut down
            self.close(wait=0)
            raise
        owner.stats.consumer_wait += time.perf_counter() - t0
        self._pace.took()
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
        for t in tensors(batch):
            if t.device.type == "cuda":
                t.record_stream(consumer)
        return batch

    def close(self, wait: Optional[float] = None) -> None:
        """Stops the producers, drops the queued batches and shuts the loader's iterator (and its
        workers) down, unless the loader keeps persistent workers for the next epoch. wait: seconds
        to wait for the producers to finish the batch in hand (None: as long as that takes); one
        still running then is left behind, told to stop (a daemon thread)."""
        _RUNNING.discard(self)
        self._run.close(wait)

    def __del__(self):
        # The collector runs wherever an allocation triggers it. On the thread that dropped the
        # iterator (a loop that breaks off) it is closed here, with the bounded wait. On a producer
        # thread (the wait would hold up its batch) or inside _SWITCH's lock (closing takes it
        # again: the thread would wait for itself) the producers are only told to stop, and the
        # reaper closes it.
        run = getattr(self, "_run", None)
        if run is None:
            return
        run.stop.set()
        if getattr(_THREAD, "defer_close", False):
            _REAPER.submit(run)
            return
        try:
            run.close(wait=_CLOSE_WAIT_S)
        except Exception:
            pass


class _Run:
    """What closing one _PrefetchIterator takes: its stop event, producer threads, queue, the
    loader's iterator, and its hold on the GIL switch interval. Kept apart from the iterator so that
    the reaper thread can close a collected iterator's run."""

    def __init__(self, loader, it):
        self.persistent = getattr(loader, "persistent_workers", False)
        self.it = it
        self.stop = threading.Event()
        self.threads: list = []
        self.queue: Optional["queue.Queue"] = None
        self.switch = False

    def give_switch_back(self) -> None:
        if self.switch:
            self.switch = False
            _SWITCH.release()

    def close(self, wait: Optional[float]) -> None:
        self.give_switch_back()
        self.stop.set()
        threads, self.threads = self.threads, []
        deadline = None if wait is None else time.monotonic() + wait
        for thread in threads:
            if thread is threading.current_thread():
                continue
            while thread.is_alive() and (deadline is None or time.monotonic() < deadline):
                try:
                    self.queue.get(timeout=0.05)
                except queue.Empty:
                    pass
                thread.join(timeout=0.05)
        self.shutdown_loader()

    def shutdown_loader(self) -> None:
        it, self.it = self.it, None
        if self.persistent:
            return
        shutdown = getattr(it, "_shutdown_workers", None)
        if shutdown is not None:
            shutdown()


class _Reaper:
    """A daemon thread that closes the runs of collected iterators, each on a thread of its own (a
    run whose producer is stuck in its loader waits out _CLOSE_WAIT_S without delaying the others).
    submit() is safe inside the garbage collector: a SimpleQueue's put takes no lock that the
    interrupted code may hold, and the threads are started by the reaper, never by a collection."""

    def __init__(self):
        self.pending: "queue.SimpleQueue" = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.thread: Optional[threading.Thread] = None
        self.closers: list = []

    def start(self) -> None:
        with self.lock:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._loop, daemon=True, name="torchaug-prefetch-reaper")
                self.thread.start()

    def submit(self, run: _Run) -> None:
        self.pending.put(run)

    @staticmethod
    def _close(run: _Run) -> None:
        try:
            run.close(wait=_CLOSE_WAIT_S)
        except Exception:
            pass

    def _loop(self) -> None:
        while True:
            run = self.pending.get()
            if run is None:
                return
            closer = threading.Thread(target=self._close, args=(run,), daemon=True, name="torchaug-prefetch-closer")
            closer.start()
            with self.lock:
                self.closers = [t for t in self.closers if t.is_alive()] + [closer]

    def finish(self) -> None:
        """At exit: the pending runs closed on this thread, then the closers still running waited
        for (bounded)."""
        while True:
            try:
                run = self.pending.get_nowait()
            except queue.Empty:
                break
            if run is not None:
                self._close(run)
        thread = self.thread
        if thread is not None and thread.is_alive():
            self.pending.put(None)
            thread.join(timeout=1.0)
        deadline = time.monotonic() + _CLOSE_WAIT_S + 5
        with self.lock:
            closers = list(self.closers)
        for t in closers:
            t.join(timeout=max(0.0, deadline - time.monotonic()))


_REAPER = _Reaper()


# Iterators whose producer threads may still run. At interpreter exit they are closed before Python
# finalizes: a producer thread still inside a torch call then (which released the GIL) is stopped by
# the interpreter as it takes the GIL back, unwinding through C++ frames that must not be unwound,
# and the process aborts ("terminate called without an active exception"). The wait is bounded
# (_CLOSE_WAIT_S for each iterator, as when an iterator is collected): a producer stuck in the loader
# (a wedged DataLoader worker, a read that never returns) is left behind rather than holding the
# process forever.
_RUNNING: "weakref.WeakSet[_PrefetchIterator]" = weakref.WeakSet()
_CLOSE_WAIT_S = 10.0


@atexit.register
def _close_running() -> None:
    for it in list(_RUNNING):
        try:
            it.close(wait=_CLOSE_WAIT_S)
        except Exception:
            pass
    _REAPER.finish()
