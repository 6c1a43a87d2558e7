"""Shared-memory buffers that a DataLoader worker reuses from batch to batch.

A worker's collate (collate_encoded, collate_ragged) writes its batch into shared memory, so that
handing it to the main process copies nothing. torch's default_collate allocates a new shared
segment per batch; for a batch of 256 JPEGs (28 MB) that costs a worker ~12 ms to create and ~5 ms
more to fault its pages in, as long as reading the 256 files.

Here each worker keeps up to `TORCHAUG_SHM_POOL` segments (torchaug/_settings.py; default 8, 0 turns
the pool off) and a small shared table of flags, one per segment. Handing a segment out sets its
flag; the main process clears it when the batch's storage dies there (a weakref.finalize on the
storage: the storage lives as long as any tensor or view of it, so views the user keeps stay
valid). A worker reuses only segments whose flag is clear. When every segment is taken (the main process holds many batches,
`list(loader)` say) the worker allocates a fresh segment as before: never a wait, never a batch
written over while the main process can see it.
"""
import os
import weakref
from typing import Optional, Tuple

import torch

from .. import _settings as settings

_MIB = 1 << 20


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
        slots = settings.shm_pool()
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


class SharedBatch:
    """Mixed into the batch types a worker packs (EncodedImages, RaggedImages): `_lease` travels
    with the pickled batch; unpickled in another process, it becomes a finalizer on the storage of
    `data` that gives the segment back to the worker."""

    _lease: Optional[tuple] = None

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        lease = state.get("_lease")
        if lease is not None and lease[2] != os.getpid():
            flags, i, _ = lease
            weakref.finalize(self.data.untyped_storage(), _release, flags, i)
            self._lease = None
