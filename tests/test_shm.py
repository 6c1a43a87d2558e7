"""The shared-memory segments a DataLoader worker reuses across batches (torchaug.io._shm): a segment
goes back to its worker only once the main process has dropped every tensor of the batch in it, so
batches and views the caller keeps are never written over; the pool is bounded and falls back to a
fresh segment when all are taken; both sharing strategies."""
import io

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


def test_worker_reuses_segments(strategy, monkeypatch):
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


def test_kept_batches_and_views_are_never_written_over(monkeypatch):
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
    with pytest.raises(ValueError, match="TORCHAUG_SHM_POOL must be a whole number >= 0.*'many'"):
        next(iter(DataLoader(Files(8), batch_size=8, num_workers=1, collate_fn=collate_encoded)))


def test_main_process_batches_are_ordinary_memory():
    encoded = collate_encoded([(_file(i), i) for i in range(4)])[0]
    assert encoded._lease is None and not encoded.data.is_shared()
    _check(encoded, torch.arange(4))


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
def test_pin_memory_copies_pooled_batches_and_the_decode_reads_them():
    """pin_memory=True hands a pooled batch over as a pinned copy; the decoder reads it there and gets
    what it gets from the files' own bytes, and a batch held past its workers' exit stays intact."""
    loader = DataLoader(Jpegs(), batch_size=8, num_workers=2, collate_fn=collate_encoded, pin_memory=True)
    kept = None
    for k, (encoded, labels) in enumerate(loader):
        assert encoded.data.is_pinned()
        got = decode_jpeg(encoded, device="cuda")
        want = decode_jpeg([torch.from_numpy(_jpeg(i).copy()) for i in labels.tolist()], device="cuda")
        for a, b in zip(got, want):
            assert torch.equal(a, b)
        if k == 2:
            kept = (encoded, labels)
        del encoded, got
    del loader
    encoded, labels = kept
    assert encoded.data.is_pinned()
    _check(encoded, labels, _jpeg)
    torch.cuda.synchronize()
