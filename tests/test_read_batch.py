"""torchaug.io.read_batch and the readers' __getitems__ (ImageFolderBytes, TarShards): a DataLoader
batch's files read straight into one buffer (in a worker, one of its pooled shared segments), which
collate_encoded hands on as the batch without copying. The samples equal the per-file reads; the
segment goes back to the worker only once nothing can see the batch (claimed: when the main process
drops it; not claimed: when the worker's last view of it dies); bad or changing files are errors
naming the file."""
import copy
import gc
import os
import pickle

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Subset

from torchaug.io import EncodedImages, ImageFolderBytes, TarShards, collate_encoded, read_batch, write_tar_shards
from torchaug.io import _encoded, _shm


@pytest.fixture()
def folder(tmp_path):
    rng = np.random.default_rng(0)
    for i in range(24):
        c = tmp_path / f"c{i % 3}"
        c.mkdir(exist_ok=True)
        # "files" of varied sizes whose bytes say which they are (the readers do not decode)
        (c / f"{i:03d}.jpg").write_bytes(rng.integers(0, 256, 300 + 97 * i, dtype=np.uint8).tobytes())
    return tmp_path


def _same(samples, expected):
    assert len(samples) == len(expected)
    for (a, la), (b, lb) in zip(samples, expected):
        assert isinstance(a, np.ndarray) and a.dtype == np.uint8 and bytes(a) == bytes(b) and la == lb


def test_getitems_equals_per_file_reads(folder, tmp_path):
    ds = ImageFolderBytes(str(folder), target_transform=lambda t: t + 10)
    idx = [5, 0, 23, 5, 11]
    _same(ds.__getitems__(idx), [ds[i] for i in idx])
    tar = TarShards(write_tar_shards(ImageFolderBytes(str(folder)).samples, str(tmp_path / "s"), samples_per_shard=7))
    idx = [3, 22, 7, 0, 14, 6]
    _same(tar.__getitems__(idx), [tar[i] for i in idx])
    paths = [p for p, _ in ds.samples[:4]]
    bare = read_batch(paths)
    assert [bytes(a) for a in bare] == [open(p, "rb").read() for p in paths]
    got = collate_encoded(bare)
    assert isinstance(got, EncodedImages) and [bytes(t.numpy()) for t in got.tensors()] == [bytes(a) for a in bare]


def test_collate_hands_on_the_buffer_once(folder):
    ds = ImageFolderBytes(str(folder))
    samples = ds.__getitems__([1, 2, 3])
    encoded, labels = collate_encoded(samples)
    # the batch is the buffer the files were read into: no copy
    assert encoded.data.data_ptr() == samples[0][0].ctypes.data
    assert labels.tolist() == [ds.samples[i][1] for i in (1, 2, 3)]
    # a second collate of the same samples copies (a buffer is handed on once)
    again, _ = collate_encoded(samples)
    assert again.data.data_ptr() != encoded.data.data_ptr()
    assert torch.equal(again.data, encoded.data)


def test_samples_pickle_as_plain_lists(folder, monkeypatch):
    """Samples returned as they are (a collate_fn that does nothing) cross to the main process as a
    plain list of the files' bytes: the leased buffer is not pickled with them (its lease would then
    be given back twice, by the worker and by the main process)."""
    pool = _shm._Pool(2)
    monkeypatch.setattr(_encoded, "shared_bytes", lambda n: pool.take(n))
    ds = ImageFolderBytes(str(folder))
    samples = ds.__getitems__([0, 3])
    for copied in (pickle.loads(pickle.dumps(samples)), copy.deepcopy(samples), copy.copy(samples)):
        assert type(copied) is list and not hasattr(copied, "_encoded")
        _same(copied, [ds[0], ds[3]])
    del samples, copied
    gc.collect()
    assert pool.flags_np.tolist() == [0, 0]


def test_changed_samples_are_copied(folder):
    ds = ImageFolderBytes(str(folder))
    samples = ds.__getitems__([1, 2, 3])
    other = np.arange(50, dtype=np.uint8)
    samples[1] = (other, 7)
    encoded, labels = collate_encoded(samples)
    assert bytes(encoded.tensors()[1].numpy()) == bytes(other) and labels.tolist()[1] == 7
    assert bytes(encoded.tensors()[0].numpy()) == bytes(ds[1][0])
    # a slice is a plain list of the same views: copied too, and right
    samples = ds.__getitems__([4, 5, 6])
    encoded, _ = collate_encoded(samples[:2])
    assert len(encoded) == 2 and bytes(encoded.tensors()[1].numpy()) == bytes(ds[5][0])


def test_lease_given_back_only_when_nothing_sees_the_batch(folder, monkeypatch):
    """A worker's segment (simulated here with a pool in this process): claimed by collate_encoded, it
    stays taken (the main process gives it back); not claimed, it goes back with the last view."""
    pool = _shm._Pool(2)
    monkeypatch.setattr(_encoded, "shared_bytes", lambda n: pool.take(n))
    ds = ImageFolderBytes(str(folder))
    samples = ds.__getitems__([0, 1, 2])
    assert pool.flags_np.tolist() == [1, 0]
    kept = samples[2][0]
    del samples
    gc.collect()
    assert pool.flags_np.tolist() == [1, 0], "given back while a view of the batch was alive"
    del kept
    gc.collect()
    assert pool.flags_np.tolist() == [0, 0]
    samples = ds.__getitems__([3, 4])
    encoded, _ = collate_encoded(samples)
    assert encoded._lease is not None and encoded._lease[1] == 0
    del samples, encoded
    gc.collect()
    assert pool.flags_np.tolist() == [1, 0], "a claimed segment is the main process's to give back"


def _stats_collate(samples):
    return collate_encoded(samples)[0], _shm.pool_stats()


def _copying_collate(samples):
    return [bytes(x) for x, _ in samples], _shm.pool_stats()


@pytest.mark.parametrize("collate", [_stats_collate, _copying_collate], ids=["collate_encoded", "another_collate"])
def test_workers_reuse_segments(folder, collate, monkeypatch):
    monkeypatch.setenv("TORCHAUG_SHM_POOL", "3")
    ds = ImageFolderBytes(str(folder))
    loader = DataLoader(ds, batch_size=4, num_workers=1, collate_fn=collate, prefetch_factor=1)
    seen = 0
    for _ in range(4):  # 24 batches through a pool of 3 segments
        for batch, stats in loader:
            files = batch.tensors() if isinstance(batch, EncodedImages) else batch
            for f, (path, _) in zip(files, ds.samples[seen:seen + 4]):
                assert bytes(f.numpy() if isinstance(f, torch.Tensor) else f) == open(path, "rb").read()
            seen = (seen + 4) % len(ds)
            del batch, files
    assert stats["fresh"] == 0 and stats["allocations"] <= 3, stats


def test_loaders_over_getitems(folder, tmp_path):
    """Both readers through a DataLoader with 2 workers, and through Subset (which passes
    __getitems__ on): the batches of per-file reads."""
    ds = ImageFolderBytes(str(folder))
    tar = TarShards(write_tar_shards(ds.samples, str(tmp_path / "s"), samples_per_shard=5))
    for reader in (ds, tar, Subset(ds, list(range(3, 20)))):
        expected = [reader[i] for i in range(len(reader))]
        k = 0
        for encoded, labels in DataLoader(reader, batch_size=5, num_workers=2, collate_fn=collate_encoded):
            assert isinstance(encoded, EncodedImages)
            for f, y in zip(encoded.tensors(), labels.tolist()):
                assert bytes(f.numpy()) == bytes(expected[k][0]) and y == expected[k][1]
                k += 1
        assert k == len(reader)


def test_errors_name_the_file(folder, tmp_path, monkeypatch):
    ds = ImageFolderBytes(str(folder))
    path = ds.samples[2][0]
    with pytest.raises(ValueError, match="read_batch: labels must match paths, got 1 labels for 2 paths"):
        read_batch([path, path], [0])
    with pytest.raises(FileNotFoundError, match="nope.jpg"):
        read_batch([path, str(tmp_path / "nope.jpg")])
    size = os.path.getsize(path)
    real_stat = os.stat

    class Stat:
        def __init__(self, n):
            self.st_size = n

    # the file shorter than when listed: its read ends early
    monkeypatch.setattr(_encoded.os, "stat", lambda p: Stat(size + 10) if p == path else real_stat(p))
    with pytest.raises(IOError, match=f"read_batch: {path} ended after {size} of its {size + 10} bytes"):
        ds.__getitems__([0, 2])
    # longer: read to the listed size, then caught
    monkeypatch.setattr(_encoded.os, "stat", lambda p: Stat(size - 10) if p == path else real_stat(p))
    with pytest.raises(IOError, match=f"read_batch: {path} is now {size} bytes, {size - 10} when the batch was listed"):
        ds.__getitems__([2])
    monkeypatch.undo()
    shard = write_tar_shards(ds.samples, str(tmp_path / "s"), samples_per_shard=100)[0]
    tar = TarShards([shard])
    _, offset, n, _ = tar.index[-1]
    with open(shard, "r+b") as f:
        f.truncate(offset + n // 2)
    with pytest.raises(IOError, match=f"TarShards: sample {len(tar) - 1} in .*shard-000000.tar ended after {n // 2} of its {n} bytes"):
        tar.__getitems__([0, len(tar) - 1])
    with pytest.raises(IOError, match=f"TarShards: sample {len(tar) - 1} in .*shard-000000.tar ended after {n // 2} of its {n} bytes"):
        tar[len(tar) - 1]
