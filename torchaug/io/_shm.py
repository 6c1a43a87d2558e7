"""Shared-memory buffers that a DataLoader worker reuses from batch to batch.

A worker's collate (collate_encoded, collate_ragged) writes its batch into shared memory, so that
handing it to the main process copies nothing. torch's default_collate allocates a new shared
segment per batch; for a batch of 256 JPEGs (28 MB) that costs a worker ~12 ms to create and ~5 ms
more to fault its pages in, as long as reading the 256 files (scripts/loader_probe.py, issue 6).

Here each worker keeps up to `TORCHAUG_SHM_POOL` (default 8; 0 turns the pool off) segments and a
small shared table of flags, one per segment. Handing a segment out sets its flag; the main process
clears it when the batch's storage dies there (a weakref.finalize on the storage: the storage lives
as long as any tensor or view of it, so views the user keeps stay valid). A worker reuses only
segments whose flag is clear. When every segment is taken (the main process holds many batches,
`list(loader)` say) the worker allocates a fresh segment as before: never a wait, never a batch
written over while the main process can see it.

With `TORCHAUG_SHM_PIN=1` (default off) the main process keeps each pooled segment mapped once it
has seen it: a batch arriving there gets a tensor of its own over the kept mapping (its death clears
the flag as above), so later batches of that segment map, fault in and unmap nothing, and DataLoader's
pin_memory=True pins the segment in place, once, with cudaHostRegister (SharedBatch.pin_memory)
instead of copying every batch (28 MB for 256 JPEGs) into pinned memory. Segments of workers that
have exited are let go (and unregistered once no batch of theirs is alive) when the next new segment
arrives or on release_segments(). Off by default: on the H100 it saved the main process 10-15 ms of
CPU a batch, but the decoder read registered segments more slowly than pinned copies (the Prefetcher
over 2 workers 0.69x-1.14x, median 0.85x, in 7 same-run pairs), registering costs ~33 ms per 35 MB
segment, and training gained 0-4% (benchmarks/RESULTS.md, case 6, session 29).
"""
import ctypes
import os
import threading
import time
import weakref
from typing import Dict, Optional, Tuple

import torch

_MIB = 1 << 20


def _slots() -> int:
    v = os.environ.get("TORCHAUG_SHM_POOL", "8")
    try:
        n = int(v)
    except ValueError:
        raise ValueError(f"torchaug.io: TORCHAUG_SHM_POOL must be a whole number of segments (0 turns the pool off), got {v!r}") from None
    if n < 0:
        raise ValueError(f"torchaug.io: TORCHAUG_SHM_POOL must be >= 0, got {n}")
    return n


def _new_shared(nbytes: int) -> torch.Tensor:
    # the same allocation default_collate makes in a worker (honours the sharing strategy)
    return torch.empty(0, dtype=torch.uint8).new(torch.UntypedStorage._new_shared(nbytes, device="cpu")).view(-1)


class _Pool:
    """One worker's segments; flags[i] is 1 from the moment segment i is handed out until the main
    process has dropped every tensor of the batch in it."""

    def __init__(self, slots: int):
        self.flags = _new_shared(4 * slots).view(torch.int32)
        self.flags.zero_()
        self.flags_np = self.flags.numpy()
        self.buffers = [None] * slots
        self.pid = os.getpid()
        self.allocations = 0  # segments made (pooled or not); pool_stats() reports it for the tests
        self.fresh = 0  # batches that found every segment taken

    def take(self, nbytes: int) -> Tuple[torch.Tensor, Optional[tuple]]:
        free = [i for i, f in enumerate(self.flags_np.tolist()) if f == 0]
        fits = [i for i in free if self.buffers[i] is not None and self.buffers[i].numel() >= nbytes]
        if fits:
            i = min(fits, key=lambda j: self.buffers[j].numel())
        elif free:
            # an empty slot, else the smallest free segment, replaced by a larger one
            empty = [j for j in free if self.buffers[j] is None]
            i = empty[0] if empty else min(free, key=lambda j: self.buffers[j].numel())
            self.buffers[i] = None
            self.buffers[i] = _new_shared(-(-(nbytes + nbytes // 4) // _MIB) * _MIB)
            self.allocations += 1
        else:
            self.allocations += 1
            self.fresh += 1
            return _new_shared(nbytes), None
        self.flags_np[i] = 1
        return self.buffers[i][:nbytes], (self.flags, i, self.pid)


_pool: Optional[_Pool] = None


def shared_bytes(nbytes: int) -> Tuple[torch.Tensor, Optional[tuple]]:
    """(a 1-D uint8 tensor of nbytes, its lease). In a DataLoader worker the tensor lies in shared
    memory, from the worker's pool when a segment is free (the lease then names it; the batch that
    carries the tensor must carry the lease, see SharedBatch); elsewhere it is ordinary memory."""
    global _pool
    if torch.utils.data.get_worker_info() is None or nbytes == 0:
        return torch.empty(nbytes, dtype=torch.uint8), None
    if _pool is None or _pool.pid != os.getpid():
        slots = _slots()
        if slots == 0:
            return _new_shared(nbytes), None
        _pool = _Pool(slots)
    return _pool.take(nbytes)


def pool_stats() -> dict:
    """This process's pool: segments made, batches that found none free, flags (for tests)."""
    if _pool is None or _pool.pid != os.getpid():
        return {"allocations": 0, "fresh": 0, "flags": []}
    return {"allocations": _pool.allocations, "fresh": _pool.fresh, "flags": _pool.flags_np.tolist()}


def _release(flags: torch.Tensor, i: int) -> None:
    flags[i] = 0


def _pin_in_place() -> bool:
    v = os.environ.get("TORCHAUG_SHM_PIN", "0")
    if v not in ("0", "1"):
        raise ValueError(f"torchaug.io: TORCHAUG_SHM_PIN must be 0 or 1 (1 pins the workers' segments in place), got {v!r}")
    return v == "1"


class _Segment:
    """A worker's pooled segment as the main process keeps it: `array`, a numpy view of the whole
    mapping (batches of the segment are tensors over it, each holding it), and whether it is
    registered with CUDA (pinned in place)."""

    def __init__(self, storage: torch.UntypedStorage):
        self.ptr, self.nbytes = storage.data_ptr(), storage.nbytes()
        self.array = torch.empty(0, dtype=torch.uint8).new(storage).numpy()
        self.registered = self.refused = False
        self.lock = threading.Lock()

    def register(self) -> bool:
        """Pins the segment in place (once); False when CUDA refused (the caller copies instead)."""
        with self.lock:
            if self.refused:
                return False
            if not self.registered:
                t0 = time.perf_counter()
                ok = _host_register(self.ptr, self.nbytes)
                stats["register_s"] += time.perf_counter() - t0
                if not ok:
                    self.refused = True  # not asked again for this segment
                    return False
                stats["registered"] += 1
                # unregistered when the last tensor over the mapping is gone, before it is unmapped
                # (numpy runs weakref callbacks before it lets go of the storage)
                weakref.finalize(self.array, _unregister, self.ptr).atexit = False
                self.registered = True
            return True


# segments registered and the seconds spent registering them, in this process (for the benchmarks)
stats = {"registered": 0, "register_s": 0.0}

_runtime = None  # the CUDA runtime library through ctypes, False where it cannot be found


def _cuda_runtime():
    """The CUDA runtime library that torch loaded, called through ctypes, which releases the GIL for
    the call: registering pins the segment page by page (milliseconds for a batch's segment), and
    torch.cuda.cudart()'s binding holds the GIL meanwhile, stalling every other thread of the
    process (the Prefetcher's producer and the training loop). None where it is not a shared
    library of this process."""
    global _runtime
    if _runtime is None:
        _runtime = False
        try:
            with open("/proc/self/maps") as f:
                paths = [line.split()[-1] for line in f if "libcudart.so" in line]
            if paths:
                lib = ctypes.CDLL(paths[0])
                lib.cudaHostRegister.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
                lib.cudaHostUnregister.argtypes = [ctypes.c_void_p]
                lib.cudaHostRegister.restype = lib.cudaHostUnregister.restype = lib.cudaGetLastError.restype = ctypes.c_int
                _runtime = lib
        except (OSError, AttributeError):
            _runtime = False
    return _runtime or None


def _runtime_call(name: str, *args) -> bool:
    """The CUDA runtime's `name`(*args) through ctypes where it can (_cuda_runtime), else through
    torch.cuda.cudart(); True on success (a failure is cleared from the thread's error state, not
    left for its next launch check to find)."""
    rt = _cuda_runtime()
    if rt is None:
        return int(getattr(torch.cuda.cudart(), name)(*args)) == 0
    if getattr(rt, name)(*args) == 0:
        return True
    rt.cudaGetLastError()
    return False


def _host_register(ptr: int, nbytes: int) -> bool:
    return _runtime_call("cudaHostRegister", ptr, nbytes, 1)  # cudaHostRegisterPortable


def _unregister(ptr: int) -> None:
    _runtime_call("cudaHostUnregister", ptr)


_segments: Dict[Tuple[int, int], _Segment] = {}
_segments_lock = threading.Lock()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def release_segments() -> int:
    """Lets go of the kept segments of workers that have exited (each is unmapped, and unregistered,
    once no batch over it is alive); returns how many."""
    with _segments_lock:
        gone = [k for k in _segments if not _alive(k[0])]
        for k in gone:
            del _segments[k]
    return len(gone)


def kept_segments() -> int:
    """How many workers' segments this process keeps mapped (for tests)."""
    with _segments_lock:
        return len(_segments)


def _adopt(data: torch.Tensor, pid: int, i: int) -> Tuple[torch.Tensor, _Segment]:
    """A tensor of its own over `data`'s memory in the kept mapping of worker pid's segment i (kept
    from this batch on when it is new)."""
    storage = data.untyped_storage()
    key = (pid, i)
    with _segments_lock:
        seg = _segments.get(key)
        if seg is None or seg.ptr != storage.data_ptr() or seg.nbytes != storage.nbytes():
            new = seg is None
            seg = _segments[key] = _Segment(storage)  # a segment the worker outgrew is let go here
        else:
            new = False
    if new:
        release_segments()
    start = data.storage_offset() * data.element_size()
    own = torch.frombuffer(seg.array, dtype=torch.uint8, count=data.numel() * data.element_size(), offset=start)
    return own.view(data.dtype), seg


class SharedBatch:
    """Mixed into the batch types a worker packs (EncodedImages, RaggedImages): `_lease` travels
    with the pickled batch; unpickled in another process, it becomes a finalizer on the storage of
    `data` that gives the segment back to the worker (and `data` a tensor over the segment's kept
    mapping, see the top of this file)."""

    _lease: Optional[tuple] = None
    _segment: Optional[_Segment] = None

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        lease = state.get("_lease")
        if lease is not None and lease[2] != os.getpid():
            flags, i, pid = lease
            try:
                if _pin_in_place():
                    self.data, self._segment = _adopt(self.data, pid, i)
            finally:  # the segment goes back with the last tensor over it, also where the setting is bad
                weakref.finalize(self.data.untyped_storage(), _release, flags, i)
                self._lease = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_segment", None)  # this process's mapping: a copy or another process gets plain memory
        return state

    def _pinned_data(self) -> torch.Tensor:
        """`data` in pinned memory: in place when it lies in a kept segment that CUDA registers,
        else a pinned copy."""
        seg = self._segment
        if seg is not None and torch.cuda.is_available() and seg.register():
            return self.data
        return self.data.pin_memory()
