"""The shared-memory segments a DataLoader worker reuses across batches (torchaug.io._shm): a segment
goes back to its worker only once the main process has dropped every tensor of the batch in it, so
batches and views the caller keeps are never written over; the pool is bounded and falls back to a
fresh segment when all are taken; both sharing strategies. With TORCHAUG_SHM_PIN=1 the main process
keeps each segment mapped and pin_memory=True pins it in place."""
import copy
import io
import pickle

import numpy as np
import pytest
import torch
from conftest import requires_cuda
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from torchaug.io import EncodedImages, RaggedImages, collate_encoded, collate_ragged, decode_jpeg
from torchaug.io import _shm


def _file(i: int) -> np.ndarray:
    # a "file" whose bytes say which sample it is; sizes vary and grow over the epoch, so that
    # segments are also outgrown and replaced
    n = 500 + (i * 7919) % 3000 + 40 * i
    return ((np.arange(n) + i * 13) % 251).astype(np.uint8)


class Files(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return _file(i), i


def _with_stats(samples):
    return collate_encoded(samples), _shm.pool_stats()


def _check(encoded: EncodedImages, labels, make=_file):
    """Each file of the batch is still sample i's bytes (make(i))."""
    for view, i in zip(encoded.tensors(), labels.tolist()):
        assert torch.equal(view, torch.from_numpy(np.array(make(i)))), f"sample {i} written over"


@pytest.fixture(params=["file_descriptor", "file_system"])
def strategy(request):
    old = torch.multiprocessing.get_sharing_strategy()
    torch.multiprocessing.set_sharing_strategy(request.param)
    yield request.param
    torch.multiprocessing.set_sharing_strategy(old)


@pytest.fixture(params=["1", "0"], ids=["kept", "mapped-per-batch"])
def pin_env(request, monkeypatch):
    monkeypatch.setenv("TORCHAUG_SHM_PIN", request.param)
    return request.param


def test_worker_reuses_segments(strategy, pin_env, monkeypatch):
    monkeypatch.setenv("TORCHAUG_SHM_POOL", "4")
    loader = DataLoader(Files(240), batch_size=8, num_workers=2, collate_fn=_with_stats)
    stats = {}
    for (encoded, labels), st in loader:
        _check(encoded, labels)
        stats[int(labels[0]) // 8 % 2] = st  # batches alternate between the 2 workers
        del encoded  # the segment goes back once the batch is dropped
    for st in stats.values():
        # 15 batches per worker, in at most 4 segments (sizes grow: some are replaced, none fresh)
        assert st["fresh"] == 0 and 1 <= st["allocations"] < 15, st


def test_kept_batches_and_views_are_never_written_over(pin_env, monkeypatch):
    monkeypatch.setenv("TORCHAUG_SHM_POOL", "2")
    loader = DataLoader(Files(160), batch_size=8, num_workers=2, collate_fn=_with_stats, prefetch_factor=3)
    kept, views, last = [], [], None
    for k, ((encoded, labels), st) in enumerate(loader):
        _check(encoded, labels)
        if k % 3 == 0:
            kept.append((encoded, labels))  # the whole batch
        elif k % 3 == 1:
            views.append((encoded.tensors()[-1], int(labels[-1])))  # one view; the batch is dropped
        last = st
    assert last["fresh"] > 0  # the 2 segments were all taken at times: fresh ones made, nothing waited
    for encoded, labels in kept:
        _check(encoded, labels)
    for view, i in views:
        assert torch.equal(view, torch.from_numpy(_file(i)))


class Images(Dataset):
    def __len__(self):
        return 60

    def __getitem__(self, i):
        h, w = 5 + i % 7, 3 + i % 5
        return torch.full((3, h, w), float(i)) + torch.arange(h * w, dtype=torch.float32).view(1, h, w), i


def test_ragged_batches_use_the_pool(monkeypatch):
    monkeypatch.setenv("TORCHAUG_SHM_POOL", "3")
    loader = DataLoader(Images(), batch_size=4, num_workers=2, collate_fn=lambda s: (collate_ragged(s), _shm.pool_stats()))
    ds = Images()
    allocations = []
    for (ragged, labels), st in loader:
        assert isinstance(ragged, RaggedImages) and ragged.data.dtype == torch.float32
        for im, i in zip(ragged.images(), labels.tolist()):
            assert torch.equal(im, ds[i][0])
        allocations.append(st["allocations"])
    assert 1 <= max(allocations) <= 3 and st["fresh"] == 0  # 8 batches per worker in at most 3 segments


def test_pool_off_and_bad_setting(monkeypatch):
    monkeypatch.setenv("TORCHAUG_SHM_POOL", "0")
    for (encoded, labels), st in DataLoader(Files(32), batch_size=8, num_workers=1, collate_fn=_with_stats):
        _check(encoded, labels)
        assert st["allocations"] == 0 and encoded._lease is None
    monkeypatch.setenv("TORCHAUG_SHM_POOL", "many")
    with pytest.raises(ValueError, match="TORCHAUG_SHM_POOL must be a whole number of segments.*'many'"):
        next(iter(DataLoader(Files(8), batch_size=8, num_workers=1, collate_fn=collate_encoded)))


def test_main_process_batches_are_ordinary_memory():
    encoded = collate_encoded([(_file(i), i) for i in range(4)])[0]
    assert encoded._lease is None and not encoded.data.is_shared()
    _check(encoded, torch.arange(4))


def _segment_of(t: torch.Tensor):
    """The kept segment whose mapping holds t's bytes, else None."""
    p = t.data_ptr()
    for seg in list(_shm._segments.values()):
        if seg.ptr <= p and p + t.numel() * t.element_size() <= seg.ptr + seg.nbytes:
            return seg
    return None


def test_main_process_keeps_each_segment_mapped(strategy, monkeypatch):
    monkeypatch.setenv("TORCHAUG_SHM_POOL", "4")
    monkeypatch.setenv("TORCHAUG_SHM_PIN", "1")
    loader = DataLoader(Files(240), batch_size=8, num_workers=2, collate_fn=_with_stats)
    segments, allocations, kept = set(), {}, None
    for k, ((encoded, labels), st) in enumerate(loader):
        _check(encoded, labels)
        seg = encoded._segment
        # the batch's own tensor over the kept mapping of its segment (not a mapping of its own)
        assert seg is not None and _segment_of(encoded.data) is seg
        assert encoded.data.untyped_storage().data_ptr() != seg.ptr or encoded.data.untyped_storage().nbytes() < seg.nbytes
        segments.add(id(seg))
        allocations[int(labels[0]) // 8 % 2] = st["allocations"]
        if k == 3:
            kept = (encoded, labels)
    # 30 batches in no more kept segments than the workers made
    assert len(segments) <= sum(allocations.values()) < 30
    # the workers have exited: their segments are let go, the batch still held stays readable
    del loader
    assert _shm.release_segments() >= 0 and _shm.kept_segments() == 0
    _check(*kept)
    # a batch over a kept segment copies and pickles as ordinary memory
    copied = copy.deepcopy(kept[0])
    assert copied._segment is None and copied.data.data_ptr() != kept[0].data.data_ptr()
    _check(copied, kept[1])
    _check(pickle.loads(pickle.dumps(kept[0])), kept[1])


@pytest.mark.parametrize("value", [None, "0"], ids=["default", "off"])
def test_segments_mapped_per_batch_by_default(value, monkeypatch):
    if value is None:
        monkeypatch.delenv("TORCHAUG_SHM_PIN", raising=False)
    else:
        monkeypatch.setenv("TORCHAUG_SHM_PIN", value)
    for (encoded, labels), st in DataLoader(Files(32), batch_size=8, num_workers=1, collate_fn=_with_stats):
        _check(encoded, labels)
        assert encoded._segment is None and st["allocations"] >= 1


def test_bad_pin_setting(monkeypatch):
    """A TORCHAUG_SHM_PIN other than 0 or 1 is an error that says so, raised where the batch arrives."""
    monkeypatch.setenv("TORCHAUG_SHM_PIN", "yes")
    with pytest.raises(ValueError, match="TORCHAUG_SHM_PIN must be 0 or 1.*got 'yes'"):
        next(iter(DataLoader(Files(8), batch_size=8, num_workers=1, collate_fn=collate_encoded)))


def _jpeg(i: int) -> np.ndarray:
    rng = np.random.default_rng(i)
    im = Image.fromarray(rng.integers(0, 256, (24 + i % 5 * 8, 32 + i % 3 * 8, 3), dtype=np.uint8))
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=90)
    return np.frombuffer(buf.getvalue(), dtype=np.uint8)


class Jpegs(Dataset):
    def __len__(self):
        return 96

    def __getitem__(self, i):
        return _jpeg(i), i


@requires_cuda
@pytest.mark.parametrize("pin", ["1", "0"], ids=["in-place", "copied"])
def test_pin_memory_pins_segments_in_place(pin, monkeypatch):
    """pin_memory=True pins a kept segment once with cudaHostRegister and hands the batch over where
    it lies (no copy); the decoder reads it there and gets what it gets from pageable bytes."""
    monkeypatch.setenv("TORCHAUG_SHM_POOL", "8")  # never all taken here: every batch comes from the pool
    monkeypatch.setenv("TORCHAUG_SHM_PIN", pin)
    unregistered = []
    real_unregister = _shm._unregister
    monkeypatch.setattr(_shm, "_unregister", lambda ptr: (unregistered.append(ptr), real_unregister(ptr)))
    loader = DataLoader(Jpegs(), batch_size=8, num_workers=2, collate_fn=collate_encoded, pin_memory=True)
    kept, registered = None, set()
    for k, (encoded, labels) in enumerate(loader):
        assert encoded.data.is_pinned()
        seg = _segment_of(encoded.data)
        if pin == "1":
            assert seg is not None and seg.registered  # in place
            registered.add(seg.ptr)
        else:
            assert seg is None  # a pinned copy
        got = decode_jpeg(encoded, device="cuda")
        want = decode_jpeg([torch.from_numpy(_jpeg(i).copy()) for i in labels.tolist()], device="cuda")
        for a, b in zip(got, want):
            assert torch.equal(a, b)
        if k == 2:
            kept = (encoded, labels)
            kept_ptr = _segment_of(encoded.data).ptr if pin == "1" else None
        del encoded, got, seg  # the _Segment holds its mapping too
    del loader
    _shm.release_segments()
    assert _shm.kept_segments() == 0
    # 12 batches in at most 4 segments a worker (2 in flight, 1 in the loop, 1 held), each registered
    # once; all but the held batch's segment unregistered once their last batch was dropped
    assert len(registered) <= 8 and set(unregistered) == registered - {kept_ptr}
    # a batch held past its workers' exit stays pinned and intact; dropping it unregisters its segment
    encoded, labels = kept
    assert encoded.data.is_pinned()
    _check(encoded, labels, _jpeg)
    del kept, encoded
    assert set(unregistered) == registered
    torch.cuda.synchronize()
