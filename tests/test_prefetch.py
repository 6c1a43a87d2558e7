"""torchaug.Prefetcher and torchaug.io.RaggedImages: the prefetched batches equal the chain run
synchronously (bitwise, fixed seeds), batch structures, epochs, early break, errors, stream safety
with a slow producer and a slow consumer, flat memory."""
import collections
import threading
import time

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset

import torchaug
import torchaug.transforms as T
from torchaug.io import RaggedImages, collate_ragged

from conftest import ASSETS, DEVICES

CUDA = torch.cuda.is_available()
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


class RaggedDataset(Dataset):
    """Deterministic uint8 images of different sizes (HWC numpy, as PIL decodes) and labels."""

    def __init__(self, n=24, fail_at=None, chw=False):
        self.n, self.fail_at, self.chw = n, fail_at, chw

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise ValueError(f"corrupt sample {i}")
        rng = np.random.default_rng(i)
        img = rng.integers(0, 256, (20 + 3 * (i % 7), 24 + 5 * (i % 5), 3), dtype=np.uint8)
        return (torch.from_numpy(img).permute(2, 0, 1).contiguous() if self.chw else img), i


def chain(seed):
    g = torch.Generator().manual_seed(seed)
    return T.Compose([T.RandomResizedCrop(16, generator=g), T.RandomHorizontalFlip(generator=g),
                      T.RandAugment(generator=g)])


def reference(batches, seed, device):
    """What the prefetcher must yield: the chain and the output stage run synchronously."""
    pipe = T.Compose(list(chain(seed).transforms) + [T.Normalize(MEAN, STD, memory_format=torch.channels_last)])
    out = []
    for images, labels in batches:
        out.append((pipe([im.to(device) for im in images.images()]), labels))
    return out


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("workers", [0, 2])
def test_prefetcher_equals_synchronous_chain(device, workers):
    loader = DataLoader(RaggedDataset(), batch_size=5, num_workers=workers, collate_fn=collate_ragged, pin_memory=device == "cuda")
    expected = reference(list(DataLoader(RaggedDataset(), batch_size=5, collate_fn=collate_ragged)), 7, device)
    pf = torchaug.Prefetcher(loader, chain(7), device=device, depth=3, mean=MEAN, std=STD, memory_format=torch.channels_last)
    got = list(pf)
    assert len(got) == len(expected) == len(pf) == 5
    for (x, y), (ex, ey) in zip(got, expected):
        assert x.device.type == device and x.dtype == torch.float32 and x.shape[1:] == (3, 16, 16)
        assert x.is_contiguous(memory_format=torch.channels_last)
        assert torch.equal(x, ex) and torch.equal(y.cpu(), ey)


def _slow_first_stage(pf, seconds):
    """pf's first stage (decode, copy) made to take seconds(batch number) longer, so that with several
    threads later batches finish it before earlier ones."""
    load = pf._load_batch

    def slow(batch, index):
        import time
        time.sleep(seconds(index))
        return load(batch, index)
    pf._load_batch = slow
    return pf


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("threads", [2, 3])
def test_threads_yield_what_one_thread_yields(device, threads):
    """Producer threads whose first stages finish out of order (batch 3k slowest): the batches come
    in the loader's order, each bitwise what the synchronous chain gives (the chain's random draws
    in the loader's order), over two epochs."""
    loader = DataLoader(RaggedDataset(n=40), batch_size=4, collate_fn=collate_ragged, pin_memory=device == "cuda")
    expected = reference(list(DataLoader(RaggedDataset(n=40), batch_size=4, collate_fn=collate_ragged)) * 2, 7, device)
    pf = torchaug.Prefetcher(loader, chain(7), device=device, depth=2, mean=MEAN, std=STD,
                             memory_format=torch.channels_last, threads=threads)
    _slow_first_stage(pf, lambda i: 0.03 if i % 3 == 0 else 0.0)
    got = list(pf) + list(pf)
    assert len(got) == len(expected) == 20
    for k, ((x, y), (ex, ey)) in enumerate(zip(got, expected)):
        assert torch.equal(x, ex) and torch.equal(y.cpu(), ey), k
    assert pf.stats.batches == 20


@pytest.mark.parametrize("device", DEVICES)
def test_producer_threads_set_their_intra_op_thread_count(device):
    """Producer threads run with 1 intra-op thread on CUDA and with the iterating thread's count on
    the CPU, whatever a thread set before them: a thread's torch.set_num_threads(1), as a DataLoader's
    pin thread makes it (pin_memory=True), is the count of every thread started after it. Once the
    producers run, threads started later get the iterating thread's count again."""
    def count_in_new_thread():
        got = []
        t = threading.Thread(target=lambda: got.append(torch.get_num_threads()))
        t.start()
        t.join()
        return got[0]
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        pin_thread = threading.Thread(target=torch.set_num_threads, args=(1,))
        pin_thread.start()
        pin_thread.join()
        assert count_in_new_thread() == 1
        seen = []

        def record(x):
            seen.append((threading.current_thread().name, torch.get_num_threads()))
            return x
        loader = DataLoader(RaggedDataset(n=12), batch_size=4, num_workers=1, collate_fn=collate_ragged)
        it = iter(torchaug.Prefetcher(loader, record, device=device, threads=2))
        assert count_in_new_thread() == 2
        assert len(list(it)) == 3
        assert [n for _, n in seen] == [1 if device == "cuda" else 2] * 3
        assert all(name.startswith("torchaug-prefetch") for name, _ in seen)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("device", DEVICES)
def test_threads_errors_early_break_and_arguments(device):
    """With 3 producer threads: a loader's error and a transform's error reach the caller at their
    batch after every earlier batch; an early break stops every thread."""
    loader = DataLoader(RaggedDataset(n=20, fail_at=13), batch_size=4, num_workers=2, collate_fn=collate_ragged)
    pf = _slow_first_stage(torchaug.Prefetcher(loader, T.Resize([8, 8]), device=device, depth=3, threads=3),
                           lambda i: 0.02 * (i % 2))
    it = iter(pf)
    threads = list(it._run.threads)
    assert len(threads) == 3
    assert [next(it)[1].tolist() for _ in range(3)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    with pytest.raises(ValueError, match="corrupt sample 13"):
        next(it)
    assert not any(t.is_alive() for t in threads)

    calls = []

    def bad_on_the_third(images):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("transform says no")
        return images
    x = torch.zeros(2, 3, 4, 4, dtype=torch.uint8)
    it = iter(_slow_first_stage(torchaug.Prefetcher([x] * 6, bad_on_the_third, device=device, threads=3),
                                lambda i: 0.02 * (3 - i % 3)))
    next(it), next(it)
    with pytest.raises(RuntimeError, match="transform says no"):
        next(it)
    with pytest.raises(StopIteration):
        next(it)

    it = iter(torchaug.Prefetcher(DataLoader(RaggedDataset(n=40), batch_size=2, collate_fn=collate_ragged),
                                  T.Resize([8, 8]), device=device, threads=3))
    next(it)
    threads = list(it._run.threads)
    assert len(threads) == 3
    it.close()
    assert not any(t.is_alive() for t in threads)
    for bad in (0, 17, True, 2.0):
        with pytest.raises(ValueError, match="threads must be an int in \\[1, 16\\]"):
            torchaug.Prefetcher([x], device=device, threads=bad)


@pytest.mark.parametrize("device", DEVICES)
def test_batch_structures_pass_through(device):
    Pair = collections.namedtuple("Pair", "image label")
    x = torch.randint(0, 256, (4, 3, 8, 8), dtype=torch.uint8)
    batches = [x, (x, torch.arange(4), "meta"), [x, {"y": torch.ones(4)}], Pair(x, torch.arange(4)),
               {"image": x, "label": torch.arange(4), "name": ["a", "b", "c", "d"]}]
    got = list(torchaug.Prefetcher(batches, lambda im: im.flip(-1), device=device))
    flipped = x.flip(-1).to(device)
    assert torch.equal(got[0], flipped)
    assert isinstance(got[1], tuple) and torch.equal(got[1][0], flipped) and got[1][2] == "meta"
    assert got[1][1].device.type == device
    assert isinstance(got[2], list) and torch.equal(got[2][0], flipped) and got[2][1]["y"].device.type == device
    assert isinstance(got[3], Pair) and torch.equal(got[3].image, flipped)
    assert torch.equal(got[4]["image"], flipped) and got[4]["name"] == ["a", "b", "c", "d"]
    assert torch.equal(batches[4]["image"], x)  # the input batch is not modified
    # no transform: only the move (and a ragged batch becomes its list of images)
    r = collate_ragged([np.zeros((2, 3, 3), np.uint8), np.ones((4, 5, 3), np.uint8)])
    (moved,) = list(torchaug.Prefetcher([r], device=device))
    assert [tuple(t.shape) for t in moved] == [(3, 2, 3), (3, 4, 5)] and moved[1].device.type == device


@pytest.mark.parametrize("device", DEVICES)
def test_output_stage_and_batch_transform(device):
    x = torch.randint(0, 256, (6, 3, 10, 12), dtype=torch.uint8)
    (y,) = list(torchaug.Prefetcher([x], device=device, dtype=torch.bfloat16))
    assert y.dtype == torch.bfloat16 and torch.equal(y, T.ToDtype(torch.bfloat16, scale=True)(x.to(device)))
    (y,) = list(torchaug.Prefetcher([x], device=device, memory_format=torch.channels_last))
    assert y.dtype == torch.uint8 and y.is_contiguous(memory_format=torch.channels_last) and torch.equal(y, x.to(device))
    mix = T.MixUp(num_classes=4, generator=torch.Generator().manual_seed(3))
    (images, labels), = list(torchaug.Prefetcher([(x, torch.arange(6) % 4)], device=device, dtype=torch.float32,
                                                  batch_transform=lambda b: mix(*b)))
    ref_images, ref_labels = T.MixUp(num_classes=4, generator=torch.Generator().manual_seed(3))(
        T.ToDtype(torch.float32, scale=True)(x.to(device)), (torch.arange(6) % 4).to(device))
    assert torch.equal(images, ref_images) and torch.equal(labels, ref_labels)


def test_epochs_len_and_early_break():
    loader = DataLoader(RaggedDataset(n=40), batch_size=4, num_workers=2, collate_fn=collate_ragged, persistent_workers=False)
    pf = torchaug.Prefetcher(loader, T.Resize([8, 8]), device="cpu")
    assert len(pf) == 10
    for epoch in range(2):
        assert sum(1 for _ in pf) == 10
    it = iter(pf)
    next(it)
    workers = it._run.it._workers
    assert all(w.is_alive() for w in workers)
    for _ in it:
        break  # early break, then close (the loop's end, or garbage collection, does it too)
    it.close()
    for w in workers:
        w.join(timeout=10)
    assert not any(w.is_alive() for w in workers)
    with pytest.raises(StopIteration):
        next(it)
    with pytest.raises(TypeError):
        len(torchaug.Prefetcher(iter([torch.zeros(1, 3, 4, 4)]), device="cpu"))


def test_producer_threads_shorten_the_gil_switch_interval_while_they_run(monkeypatch):
    """TORCHAUG_SWITCH_INTERVAL_US while producer threads run (two iterations at once: until the
    last stops), the interpreter's own again after; 0 leaves it; inline iteration does not touch it."""
    import sys
    before = sys.getswitchinterval()
    batches = [torch.zeros(2, 3, 4, 4) for _ in range(3)]
    monkeypatch.delenv("TORCHAUG_SWITCH_INTERVAL_US", raising=False)
    a, b = iter(torchaug.Prefetcher(batches, device="cpu", threads=2)), iter(torchaug.Prefetcher(batches, device="cpu", threads=2))
    assert abs(sys.getswitchinterval() - 0.0001) < 1e-9
    assert sum(1 for _ in a) == 3  # the end of the loop closes a; b still runs
    assert abs(sys.getswitchinterval() - 0.0001) < 1e-9
    b.close()
    assert sys.getswitchinterval() == before
    monkeypatch.setenv("TORCHAUG_SWITCH_INTERVAL_US", "0")
    it = iter(torchaug.Prefetcher(batches, device="cpu", threads=2))
    assert sys.getswitchinterval() == before
    it.close()
    monkeypatch.setenv("TORCHAUG_SWITCH_INTERVAL_US", "200")
    it = iter(torchaug.Prefetcher(batches, device="cpu"))  # inline: no threads
    assert sys.getswitchinterval() == before and sum(1 for _ in it) == 3
    pf = torchaug.Prefetcher(batches, device="cpu", threads=2)
    it = iter(pf)
    assert abs(sys.getswitchinterval() - 0.0002) < 1e-9
    again = iter(pf)  # a new iteration of the same Prefetcher closes the old one
    assert abs(sys.getswitchinterval() - 0.0002) < 1e-9
    again.close()
    assert sys.getswitchinterval() == before


class _Requests:
    """n batches (batch i filled with i), each request's time kept."""

    def __init__(self, n):
        self.n, self.times = n, []

    def __iter__(self):
        for i in range(self.n):
            self.times.append(time.perf_counter())
            yield torch.full((2, 3, 4, 4), i, dtype=torch.uint8)


@pytest.mark.parametrize("device", DEVICES)
def test_producers_ahead_start_their_next_batch_into_the_consumers_step(device):
    """With `depth` batches ready (the consumer is the slower side), a producer asks the loader for
    its next batch a share of the consumer's step after the take (_Pace.SHARE: past the step's
    forward launches), not at the take; a consumer that then takes sooner than its step wakes it at
    once; the batches and their order are unchanged."""
    from torchaug._producers import _Pace

    step = 0.06
    loader = _Requests(14)
    takes = []
    for i, batch in enumerate(torchaug.Prefetcher(loader, device=device, depth=2, timeout=30)):
        takes.append(time.perf_counter())
        assert batch.device.type == device and int(batch[0, 0, 0, 0]) == i
        time.sleep(step)
    # once three steps are measured (the 4th take on), each request comes a share of a step after the
    # take before it (without the wait: at the take)
    after = [r - max(t for t in takes if t <= r) for r in loader.times if r > takes[4]]
    assert len(after) >= 5 and all(0.5 * _Pace.SHARE * step < a < step for a in after), after

    # steps of 0.5 s, then the consumer takes without pausing: the second quick take ends the wait
    loader = _Requests(12)
    takes = []
    for i, batch in enumerate(torchaug.Prefetcher(loader, device=device, depth=2, timeout=30)):
        takes.append(time.perf_counter())
        assert int(batch[0, 0, 0, 0]) == i
        if i < 6:
            time.sleep(0.5)
    quick = takes[7]  # the second take without a pause before it
    first = min(r for r in loader.times if r > quick)
    assert first - quick < 0.5 * _Pace.SHARE * 0.5, (first - quick, _Pace.SHARE * 0.5)


@pytest.mark.parametrize("device", DEVICES)
def test_break_without_close_shuts_everything_down(device):
    """A loop that breaks off while the user keeps the Prefetcher (the usual `pf = Prefetcher(...)`)
    stops the producer threads and the loader's workers there and then: the Prefetcher holds its
    iterator only weakly (its threads hold the Prefetcher, so a strong reference kept them, the
    queued batches and the workers alive for ever)."""
    import weakref

    loader = DataLoader(RaggedDataset(n=64), batch_size=4, num_workers=2, collate_fn=collate_ragged)
    pf = torchaug.Prefetcher(loader, T.Resize([8, 8]), device=device, threads=2)
    for _ in pf:
        it = pf._live()
        workers, threads, it_ref = list(it._run.it._workers), list(it._run.threads), weakref.ref(it)
        del it
        break
    assert it_ref() is None  # collected, hence closed
    for w in workers:
        w.join(timeout=10)
    for t in threads:
        t.join(timeout=10)
    assert not any(w.is_alive() for w in workers)
    assert not any(t.is_alive() for t in threads)
    assert sum(1 for _ in pf) == 16  # the Prefetcher itself still iterates


class CollectingDataset(Dataset):
    """Each sample runs the worker's garbage collector first."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        import gc
        gc.collect()
        return torch.full((3, 4, 4), i, dtype=torch.uint8)


@pytest.mark.skipif(not CUDA, reason="needs CUDA")
def test_workers_forked_beside_cyclic_garbage_of_cuda_batches():
    """Batches a Prefetcher handed over (their record_stream makes freeing them a CUDA call) left in
    reference cycles when the next loader forks its workers: the Prefetcher collects them first, so a
    worker's garbage collector does not free them where CUDA cannot run (the worker aborted)."""
    import gc

    x = torch.zeros(2, 3, 8, 8, dtype=torch.uint8)
    gc.disable()
    try:
        for _ in range(3):
            (batch,) = list(torchaug.Prefetcher([x], device="cuda"))
            cycle = [batch]
            cycle.append(cycle)
            del batch, cycle
        loader = DataLoader(CollectingDataset(), batch_size=2, num_workers=2)
        got = list(torchaug.Prefetcher(loader, device="cuda"))
    finally:
        gc.enable()
    assert [b[:, 0, 0, 0].tolist() for b in got] == [[0, 1], [2, 3], [4, 5], [6, 7]]


def test_exit_with_live_iterator_does_not_abort():
    """A program that ends while a Prefetcher's producer threads still run exits cleanly: they are
    stopped at exit, before Python finalizes. Before, a thread inside a torch call then was killed
    unwinding through C++ frames and the process aborted (exit code 134, "terminate called without
    an active exception"), 5 times in 5 here."""
    import os
    import subprocess
    import sys

    child = """
import torch, torchaug
x = torch.randn(600, 600)
def slow(images):
    for _ in range(20):
        torch.mm(x, x)  # inside a torch call (the GIL released) most of the time
    return images
pf = torchaug.Prefetcher([torch.zeros(2, 3, 8, 8, dtype=torch.uint8)] * 1000, slow, device="cpu", threads=2)
it = iter(pf)
next(it)
print("exiting with the iterator live", flush=True)
"""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for _ in range(3):
        run = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr[-2000:]
        assert "exiting with the iterator live" in run.stdout and "terminate" not in run.stderr


def test_exit_with_a_producer_stuck_in_the_loader_does_not_hang():
    """A program that ends while a producer thread waits forever inside the loader (a wedged
    DataLoader, a stalled network read) still exits: at exit the producers get a bounded wait, then
    are left behind, instead of an endless one that held the process."""
    import os
    import subprocess
    import sys
    import time

    child = """
import threading, torch, torchaug, torchaug._producers as P
P._CLOSE_WAIT_S = 1.0  # the bound at exit (private): short for the test
never = threading.Event()
def loader():
    yield torch.zeros(2, 3, 8, 8, dtype=torch.uint8)
    never.wait()  # the second batch never comes
    yield torch.zeros(2, 3, 8, 8, dtype=torch.uint8)
it = iter(torchaug.Prefetcher(loader(), lambda x: x, device="cpu", threads=2))
next(it)
print("exiting with a producer stuck in the loader", flush=True)
"""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.monotonic()
    run = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "exiting with a producer stuck in the loader" in run.stdout
    assert time.monotonic() - t0 < 30


def test_collecting_an_iterator_with_a_producer_stuck_in_the_loader_returns(monkeypatch):
    """An iterator dropped while a producer waits inside the loader is closed with a bounded wait
    (a training step must not stop there for good); the producer is left behind, told to stop."""
    import gc
    import threading
    import time

    import torchaug._producers as P
    monkeypatch.setattr(P, "_CLOSE_WAIT_S", 0.5)
    release = threading.Event()

    def loader():
        yield torch.zeros(2, 3, 8, 8, dtype=torch.uint8)
        release.wait()
        yield torch.zeros(2, 3, 8, 8, dtype=torch.uint8)
    try:
        it = iter(torchaug.Prefetcher(loader(), lambda x: x, device="cpu", threads=2))
        next(it)
        threads = list(it._run.threads)
        gc.collect()  # earlier tests' garbage (a DataLoader iterator's __del__ joins its workers) first
        t0 = time.monotonic()
        del it
        gc.collect()
        assert time.monotonic() - t0 < 10
    finally:
        release.set()
    for t in threads:
        t.join(timeout=10)
    assert not any(t.is_alive() for t in threads)


def test_collecting_an_iterator_inside_the_switch_interval_lock_does_not_deadlock():
    """The collector may run while this module holds a lock (an allocation inside
    _SWITCH.acquire): closing the collected iterator there took the same lock again, and the
    thread waited for itself for ever. There collection only tells the producers to stop; the
    reaper thread does the rest."""
    import gc
    import sys
    import threading

    import torchaug._producers as P
    before = sys.getswitchinterval()
    x = torch.zeros(2, 3, 4, 4, dtype=torch.uint8)
    it = iter(torchaug.Prefetcher([x] * 4, lambda t: t, device="cpu", threads=2))
    next(it)
    threads = list(it._run.threads)
    done = threading.Event()

    def collect_holding_the_lock():
        nonlocal it
        with P._SWITCH.holding():  # what acquire and release run under
            del it
            gc.collect()
        done.set()
    worker = threading.Thread(target=collect_holding_the_lock, daemon=True)
    worker.start()
    assert done.wait(timeout=10), "the collection waited for the lock its own thread holds"
    for t in threads:
        t.join(timeout=10)
    assert not any(t.is_alive() for t in threads)
    deadline = __import__("time").monotonic() + 10
    while P._SWITCH.users and __import__("time").monotonic() < deadline:
        __import__("time").sleep(0.01)
    assert P._SWITCH.users == 0 and sys.getswitchinterval() == before


@pytest.mark.parametrize("device", DEVICES)
def test_persistent_workers_survive_epochs_and_early_break(device):
    """A loader with persistent workers keeps them from one epoch to the next: the prefetcher must not
    shut them down at the end of an epoch or on an early break."""
    loader = DataLoader(RaggedDataset(n=24), batch_size=4, num_workers=2, collate_fn=collate_ragged, persistent_workers=True)
    pf = torchaug.Prefetcher(loader, T.Resize([8, 8]), device=device)
    for epoch in range(3):
        assert sum(1 for _ in pf) == 6
    for _ in pf:
        break
    assert sum(1 for _ in pf) == 6


@pytest.mark.parametrize("device", DEVICES)
def test_errors_reach_the_caller_at_their_batch(device):
    loader = DataLoader(RaggedDataset(n=20, fail_at=13), batch_size=4, num_workers=2, collate_fn=collate_ragged)
    pf = torchaug.Prefetcher(loader, T.Resize([8, 8]), device=device, depth=3)
    it = iter(pf)
    assert [next(it)[1].tolist() for _ in range(3)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    with pytest.raises(ValueError, match="corrupt sample 13"):
        next(it)

    def bad(images):
        raise RuntimeError("transform says no")
    x = torch.zeros(2, 3, 4, 4, dtype=torch.uint8)
    it = iter(torchaug.Prefetcher([x, x, x], bad, device=device))
    with pytest.raises(RuntimeError, match="transform says no"):
        next(it)


def _stuck_in_a_decode(release):
    release.wait()


def test_timeout_shows_where_the_producer_is():
    # the consumer's side of the timeout: no item for `timeout` s is an error holding the producer
    # thread's stack (here a thread stuck in _stuck_in_a_decode)
    import queue
    import threading

    from torchaug._producers import _take
    release = threading.Event()
    stuck = threading.Thread(target=_stuck_in_a_decode, args=(release,), daemon=True)
    stuck.start()
    q = queue.Queue()
    try:
        with pytest.raises(RuntimeError, match=r"(?s)no batch came for 0.2 s \(timeout\).*_stuck_in_a_decode"):
            _take(q, 0.2, [stuck])
        q.put("batch")
        assert _take(q, 0.2, [stuck]) == "batch"
        q.put("batch")
        assert _take(q, 0, [stuck]) == "batch"  # 0: no timeout
    finally:
        release.set()
        stuck.join()


@pytest.mark.parametrize("threads", [1, 2])
def test_timeout_stops_a_stalled_prefetcher(device, threads):
    # every configuration, the CPU's default one thread included (its chain then runs on a producer
    # thread, so that the caller can stop waiting)
    import gc
    import threading
    # earlier tests' garbage collected here first: a collection on the producer thread would run the
    # __del__ of a dropped DataLoader iterator there (torch joins its workers, up to 5 s each), and
    # the thread would be inside that, not in the stalled transform, when the timeout reports it
    gc.collect()
    release = threading.Event()

    def stalls_on_the_second_batch(images):
        if stalls_on_the_second_batch.calls == 1:
            release.wait()
        stalls_on_the_second_batch.calls += 1
        return images
    stalls_on_the_second_batch.calls = 0
    x = torch.zeros(2, 3, 4, 4, dtype=torch.uint8)
    # 2 s: room for a busy 2-core machine to deliver the first batch, which does not stall
    it = iter(torchaug.Prefetcher([x, x, x], stalls_on_the_second_batch, device=device, timeout=2.0, threads=threads))
    try:
        next(it)
        with pytest.raises(RuntimeError, match="(?s)no batch came for 2 s.*stalls_on_the_second_batch"):
            next(it)
        with pytest.raises(StopIteration):
            next(it)
    finally:
        release.set()


class _SlowLoader:
    """n batches, each `sleep` s late (workers that read slowly)."""

    def __init__(self, batches, sleep):
        self.batches, self.sleep = batches, sleep

    def __iter__(self):
        import time
        for b in self.batches:
            time.sleep(self.sleep)
            yield b

    def __len__(self):
        return len(self.batches)


def _slow_transform(sleep):
    def transform(x):
        import time
        time.sleep(sleep)
        return x
    return transform


def test_stats_on_the_cpu_say_where_the_time_went():
    x = torch.zeros(2, 3, 4, 4, dtype=torch.uint8)
    p = torchaug.Prefetcher(_SlowLoader([x] * 6, 0.03), _slow_transform(0.015), device="cpu")
    it = iter(p)
    next(it)
    earlier = p.stats.as_dict()
    rest = list(it)
    assert len(rest) == 5 and p.stats.batches == 6
    assert p.stats.loader >= 6 * 0.03 and p.stats.prepare >= 6 * 0.015
    assert p.stats.queue_full == 0 and p.stats.consumer_wait == 0  # inline: nothing waits on a queue
    per = p.stats.per_batch_ms(earlier)
    assert 30 <= per["loader"] < 300 and 15 <= per["prepare"] < 150
    assert per["queue_full"] == 0 and per["consumer_wait"] == 0
    assert p.stats.per_batch_ms(p.stats.as_dict()) == dict.fromkeys(torchaug.PrefetchStats.FIELDS)  # no batch since
    assert "batches=6" in repr(p.stats)


@pytest.mark.skipif(not CUDA, reason="the producer thread runs on CUDA only")
@pytest.mark.parametrize("slow", ["loader", "consumer"])
def test_stats_on_cuda_say_which_side_waited(slow):
    import time
    x = torch.zeros(2, 3, 4, 4, dtype=torch.uint8)
    p = torchaug.Prefetcher(_SlowLoader([x] * 8, 0.05 if slow == "loader" else 0), device="cuda", depth=2)
    for _ in p:
        if slow == "consumer":
            time.sleep(0.05)
    assert p.stats.batches == 8
    if slow == "loader":  # the model waited for the data
        assert p.stats.loader >= 8 * 0.05 and p.stats.consumer_wait >= 6 * 0.04
        assert p.stats.queue_full < p.stats.consumer_wait
    else:  # the data waited for the model: the producer was blocked on a full queue
        assert p.stats.queue_full >= 4 * 0.04 and p.stats.consumer_wait < p.stats.queue_full


def test_argument_errors():
    x = [torch.zeros(1, 3, 4, 4)]
    with pytest.raises(ValueError, match="depth must be an int >= 1"):
        torchaug.Prefetcher(x, depth=0, device="cpu")
    for bad in (-1, "10", True, float("nan")):
        with pytest.raises(ValueError, match="timeout must be a number of seconds >= 0"):
            torchaug.Prefetcher(x, device="cpu", timeout=bad)
    for bad in ("high", 1.5, True, None):
        with pytest.raises(TypeError, match="priority must be an int"):
            torchaug.Prefetcher(x, device="cpu", priority=bad)
    with pytest.raises(TypeError, match="loader must be iterable"):
        torchaug.Prefetcher(3, device="cpu")
    with pytest.raises(TypeError, match="transform must be a callable"):
        torchaug.Prefetcher(x, [T.Resize(4), 3], device="cpu")
    with pytest.raises(ValueError, match="mean and std must be given together"):
        torchaug.Prefetcher(x, mean=MEAN, device="cpu")
    with pytest.raises(ValueError, match="dtype must be a floating"):
        torchaug.Prefetcher(x, dtype=torch.int32, device="cpu")
    with pytest.raises(KeyError, match="image key 'image'"):
        list(torchaug.Prefetcher([{"img": x[0]}], lambda t: t, device="cpu"))
    if not CUDA:
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            torchaug.Prefetcher(x, device="cuda")


def test_ragged_images_pack_torchvision_decodes_hwc():
    """torchvision.io.decode_jpeg on the CPU returns (C, H, W) views of HWC memory: collate_ragged packs
    them HWC, and the crop of the pack equals the crop of the decoded list."""
    io = pytest.importorskip("torchvision.io")
    paths = ASSETS[:3]
    try:
        decoded = [io.decode_jpeg(io.read_file(p), mode=io.ImageReadMode.RGB) for p in paths]
    except RuntimeError as e:  # torchvision's image extension does not load beside this torch
        pytest.skip(f"torchvision.io cannot decode here: {e}")
    packed, labels = collate_ragged([(im, i) for i, im in enumerate(decoded)])
    assert packed.channels_last and labels.tolist() == list(range(len(paths)))
    assert all(torch.equal(a, b) for a, b in zip(decoded, packed.images()))
    boxes = torch.tensor([[0, 0, 100, 120], [10, 20, 64, 64], [5, 5, 200, 150]])[:len(paths)]
    assert torch.equal(torchaug.functional.resized_crop_boxes(packed, boxes, [32, 32]),
                       torchaug.functional.resized_crop_boxes(decoded, boxes, [32, 32]))


def test_ragged_images_pack_and_views():
    hwc = [np.random.default_rng(i).integers(0, 256, (5 + i, 7 + 2 * i, 3), dtype=np.uint8) for i in range(4)]
    r = RaggedImages.from_images(hwc)
    assert r.channels_last and len(r) == 4 and r.data.numel() == sum(a.size for a in hwc)
    for a, v in zip(hwc, r.images()):
        assert torch.equal(v, torch.from_numpy(a).permute(2, 0, 1)) and v.permute(1, 2, 0).is_contiguous()
    chw = [torch.from_numpy(a).permute(2, 0, 1).contiguous() for a in hwc]
    r2 = RaggedImages.from_images(chw)
    assert not r2.channels_last and all(torch.equal(a, b) for a, b in zip(chw, r2.images()))
    # CHW views of HWC memory (torchvision.io.decode_jpeg's CPU output) pack HWC, block by block;
    # one CHW-contiguous image among them makes the batch CHW; either way the views equal the inputs
    views = [torch.from_numpy(a).permute(2, 0, 1) for a in hwc]
    r3 = RaggedImages.from_images(views)
    assert r3.channels_last and torch.equal(r3.data, r.data)
    assert all(torch.equal(a, b) for a, b in zip(views, r3.images()))
    mixed = RaggedImages.from_images(views[:2] + chw[2:])
    assert not mixed.channels_last and all(torch.equal(a, b) for a, b in zip(chw, mixed.images()))
    one = [torch.from_numpy(np.ascontiguousarray(a[..., :1])).permute(2, 0, 1) for a in hwc]  # one channel: both layouts at once
    assert not RaggedImages.from_images(one).channels_last
    gray = RaggedImages.from_images([np.zeros((3, 4), np.uint8), np.ones((2, 2), np.uint8)])
    assert gray.channels == 1 and [tuple(v.shape) for v in gray.images()] == [(1, 3, 4), (1, 2, 2)]
    # the crop of the packed batch equals the crop of the list
    boxes = torch.tensor([[0, 0, 5, 7], [1, 1, 4, 4], [2, 0, 3, 11], [0, 3, 8, 8]])
    assert torch.equal(torchaug.functional.resized_crop_boxes(r.images(), boxes, [6, 6]),
                       torchaug.functional.resized_crop_boxes(chw, boxes, [6, 6]))
    with pytest.raises(TypeError, match="all torch tensors"):
        RaggedImages.from_images([hwc[0], chw[0]])
    with pytest.raises(ValueError, match="image 1 has 1 channels"):
        RaggedImages.from_images([hwc[0], np.zeros((2, 2, 1), np.uint8)])
    with pytest.raises(ValueError, match="dtype"):
        RaggedImages.from_images([chw[0], chw[1].float()])
    with pytest.raises(ValueError, match="must hold"):
        RaggedImages(torch.zeros(10, dtype=torch.uint8), [(2, 2)], 3, False)
    with pytest.raises(ValueError, match="empty batch"):
        collate_ragged([])


@pytest.mark.parametrize("device", DEVICES)
def test_batches_are_prepared_below_autograd(device):
    """No graph is recorded in the producer, and torchaug's ops are dispatched below autograd (their
    Python autograd kernels, a GIL round trip each, are skipped): an op given a leaf that requires
    grad returns a plain tensor there, and one with a grad_fn outside."""
    seen = []

    def probe(x):
        leaf = x.float().requires_grad_()
        y = torchaug.functional.adjust_brightness(leaf, 1.5)
        seen.append((torch.is_grad_enabled(), y.requires_grad, y.grad_fn))
        return x

    batches = [torch.randint(0, 256, (2, 3, 8, 8), dtype=torch.uint8) for _ in range(3)]
    out = list(torchaug.Prefetcher(batches, probe, device=device))
    assert len(out) == 3 and not any(o.requires_grad for o in out)
    assert seen == [(False, False, None)] * 3
    leaf = batches[0].float().requires_grad_()
    assert torchaug.functional.adjust_brightness(leaf, 1.5).grad_fn is not None


def _no_views(monkeypatch):
    """Make RaggedImages.images() (a tensor per image, Python work per image) an error."""
    def fail(self):
        raise AssertionError("RaggedImages.images() called: the batch was not read in place")
    monkeypatch.setattr(RaggedImages, "images", fail)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", ["hwc", "chw", "gray"])
def test_crop_transforms_read_ragged_images_in_place(device, layout, monkeypatch):
    """RandomResizedCrop, Resize, CenterCrop (alone and fused with flip / ToDtype / Normalize) and the
    functional crops take a RaggedImages as it is and give what they give for its list of images."""
    rng = np.random.default_rng(3)
    if layout == "gray":
        arrays = [rng.integers(0, 256, (9 + i, 13 + 2 * i), dtype=np.uint8) for i in range(6)]
    else:
        arrays = [rng.integers(0, 256, (9 + i, 13 + 2 * i, 3), dtype=np.uint8) for i in range(6)]
    packed = arrays if layout != "chw" else [torch.from_numpy(a).permute(2, 0, 1).contiguous() for a in arrays]
    ragged = RaggedImages.from_images(packed).to(device)
    views = ragged.images()
    mean, std = [0.4] * ragged.channels, [0.3] * ragged.channels
    rrc = T.RandomResizedCrop(8, generator=torch.Generator().manual_seed(1))
    boxes = rrc.make_params(views)["boxes"]
    fused = T.Compose([rrc, T.RandomHorizontalFlip(), T.ToDtype(torch.float32, scale=True), T.Normalize(mean, std)])
    _, fused_params = fused(views, return_params=True)
    cases = [
        (lambda x: rrc(x, params={"boxes": boxes})),
        (lambda x: T.Resize([7, 11])(x)),
        (lambda x: T.CenterCrop([10, 12])(x)),
        (lambda x: fused(x, params=fused_params)),
        (lambda x: torchaug.functional.resized_crop_boxes(x, boxes, [5, 6], flip=torch.ones(6, dtype=torch.bool, device=device),
                                                          mean=mean, std=std, out_dtype=torch.bfloat16)),
        (lambda x: torchaug.functional.resize(x, [6, 6])),
        (lambda x: torchaug.functional.center_crop(x, [11, 11])),
    ]
    expected = [fn(views) for fn in cases]
    _no_views(monkeypatch)
    for k, (fn, ex) in enumerate(zip(cases, expected)):
        got = fn(ragged)
        assert got.device.type == device and got.dtype == ex.dtype and torch.equal(got, ex), f"case {k}"
    # the draws for a RaggedImages are those for its list (make_params reads the sizes only)
    a, b = (T.RandomResizedCrop(8, generator=torch.Generator().manual_seed(9)) for _ in range(2))
    assert torch.equal(a.make_params(ragged)["boxes"], b.make_params(views)["boxes"])


def test_other_transforms_see_the_list_of_a_ragged_batch():
    ragged = RaggedImages.from_images([torch.zeros(3, 4, 5, dtype=torch.uint8), torch.ones(3, 6, 2, dtype=torch.uint8)])
    seen = []
    out = T.Compose([lambda x: seen.append(x) or x, T.Resize([3, 3])])(ragged)
    assert isinstance(seen[0], list) and [tuple(v.shape) for v in seen[0]] == [(3, 4, 5), (3, 6, 2)] and out.shape == (2, 3, 3, 3)
    # a transform of one size per batch runs on each size of the list as a batch, and gives a list
    flip = T.RandomHorizontalFlip(p=1.0)
    for given in (ragged.images(), ragged):
        out = flip(given)
        assert isinstance(out, list) and all(torch.equal(o, v.flip(-1)) for o, v in zip(out, ragged.images()))
    with pytest.raises(ValueError, match="empty RaggedImages"):
        T.RandomResizedCrop(4)(RaggedImages(torch.zeros(0, dtype=torch.uint8), [], 3, False))


@pytest.mark.parametrize("device", DEVICES)
def test_prefetcher_reads_ragged_batches_in_place(device, monkeypatch):
    """A RaggedImages batch reaches the crop as it is (no tensor per image in the producer): the
    output equals the synchronous chain over its list of images."""
    expected = reference(list(DataLoader(RaggedDataset(), batch_size=6, collate_fn=collate_ragged)), 5, device)
    _no_views(monkeypatch)
    loader = DataLoader(RaggedDataset(), batch_size=6, collate_fn=collate_ragged, pin_memory=device == "cuda")
    pf = torchaug.Prefetcher(loader, chain(5), device=device, mean=MEAN, std=STD, memory_format=torch.channels_last)
    got = list(pf)
    assert len(got) == len(expected) == 4
    for (x, y), (ex, ey) in zip(got, expected):
        assert torch.equal(x, ex) and torch.equal(y.cpu(), ey)


# -- CUDA: stream safety and memory -------------------------------------------------------------------
cuda_only = pytest.mark.skipif(not CUDA, reason="needs CUDA")


def _batches(n, shape=(8, 3, 64, 64)):
    g = torch.Generator().manual_seed(0)
    return [torch.randint(0, 256, shape, dtype=torch.uint8, generator=g).pin_memory() if CUDA else None for _ in range(n)]


def _checksums(prefetcher, consumer_sleep=0):
    """Consumer: reads every batch on its own stream (after an optional GPU sleep, so that the
    producer runs ahead and frees/reallocates memory meanwhile)."""
    sums = []
    for x in prefetcher:
        if consumer_sleep:
            torch.cuda._sleep(consumer_sleep)
        sums.append((x.to(torch.int64) * torch.arange(1, x.shape[-1] + 1, device=x.device)).sum())
    return torch.stack(sums).cpu()


@cuda_only
def test_host_batch_lives_until_its_copy_is_done():
    """A host batch stays referenced until the work queued from it on the side stream has run (the
    decoder and the copies read it asynchronously; a batch in a worker's shared-memory buffer gives
    the buffer back when it dies): here the side stream is held up by a sleep kernel, so the copy
    cannot have run when the batch is dropped."""
    import weakref
    pf = torchaug.Prefetcher([], None, device="cuda")
    host = (torch.arange(1 << 20, dtype=torch.uint8).pin_memory(), torch.tensor([1, 2]))
    dropped = []
    weakref.finalize(host[0].untyped_storage(), dropped.append, True)
    with torch.cuda.stream(pf._stream):
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time before the copy
        out = pf._load_batch(host, 0)
    del host
    assert not dropped and len(pf._held) == 1
    pf._stream.synchronize()
    assert torch.equal(out[0].cpu(), torch.arange(1 << 20, dtype=torch.uint8))
    with torch.cuda.stream(pf._stream):
        pf._load_batch((torch.zeros(4),), 1)  # the next batch lets the first go
    assert dropped == [True] and len(pf._held) == 1


@cuda_only
@pytest.mark.parametrize("priority", [-1, 0])
@pytest.mark.parametrize("producer_sleep,consumer_sleep", [(20_000_000, 0), (0, 20_000_000), (2_000_000, 2_000_000)])
def test_stream_safety_slow_producer_and_slow_consumer(producer_sleep, consumer_sleep, priority):
    """priority -1 (the default): the side stream's kernels are more urgent than the consumer's."""
    batches = _batches(12)

    def transform(x):
        if producer_sleep:
            torch.cuda._sleep(producer_sleep)  # the side stream is slow to write its output
        return x.flip(-1) + 1

    expected = torch.stack([((b.cuda().flip(-1) + 1).to(torch.int64) * torch.arange(1, 65, device="cuda")).sum() for b in batches]).cpu()
    for depth in (1, 3):
        pf = torchaug.Prefetcher(batches, transform, device="cuda", depth=depth, priority=priority)
        assert pf._streams[0].priority == torch.cuda.Stream(priority=priority).priority
        assert (pf._streams[0].priority < 0) == (priority < 0)
        got = _checksums(pf, consumer_sleep)
        assert torch.equal(got, expected)


@cuda_only
def test_no_host_synchronisation_in_the_chain():
    """RandomResizedCrop of a ragged batch + flip + RandAugment + normalize on the side stream: no
    cudaStreamSynchronize / blocking copy (it would make the host wait for the model's step)."""
    loader = DataLoader(RaggedDataset(n=20), batch_size=5, collate_fn=collate_ragged, pin_memory=True)
    pf = torchaug.Prefetcher(loader, chain(7), device="cuda", depth=2, mean=MEAN, std=STD, dtype=torch.bfloat16,
                             memory_format=torch.channels_last)
    list(pf)  # first epoch: lazily built constants and tables
    torch.cuda.set_sync_debug_mode("error")
    try:
        out = list(pf)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert len(out) == 4 and out[0][0].dtype == torch.bfloat16


@cuda_only
def test_memory_flat_over_2000_batches():
    batches = _batches(4, (16, 3, 32, 32))
    loader = [batches[i % 4] for i in range(2000)]
    pf = torchaug.Prefetcher(loader, T.Compose([T.RandomResizedCrop(24), T.RandAugment()]), device="cuda",
                             mean=MEAN, std=STD)
    torch.cuda.synchronize()
    seen = []
    for i, x in enumerate(pf):
        if i in (100, 1999):
            torch.cuda.synchronize()
            seen.append(torch.cuda.memory_allocated())
    assert i == 1999 and seen[1] <= seen[0]


def test_targets_in_a_batch_move_with_the_images():
    # a detection batch: (images of different sizes, per-image target dicts); the chain moves the
    # boxes and masks as it moves the images, as the chain called directly does
    from torchaug.io import RaggedImages
    g = torch.Generator().manual_seed(0)
    imgs = [torch.randint(0, 256, (3, 30 + 4 * i, 40 - 3 * i), dtype=torch.uint8, generator=g) for i in range(3)]
    targets = [{"boxes": T.BoundingBoxes(torch.tensor([[2.0, 3.0, 12.0, 20.0]]), "XYXY", tuple(im.shape[-2:])),
                "masks": T.Mask(torch.randint(0, 2, (1,) + tuple(im.shape[-2:]), dtype=torch.uint8, generator=g)),
                "labels": torch.tensor([i])} for i, im in enumerate(imgs)]
    chain = T.Compose([T.RandomHorizontalFlip(1.0), T.Resize([20, 24])])
    want_x, want_t = chain(imgs, targets)
    for batch in ((RaggedImages.from_images(imgs), targets), {"image": imgs, "targets": targets, "id": 7}):
        got = next(iter(torchaug.Prefetcher([batch], chain, device="cpu")))
        x, t = (got[0], got[1]) if isinstance(got, tuple) else (got["image"], got["targets"])
        assert torch.equal(x, want_x)
        for a, b in zip(t, want_t):
            assert torch.equal(a["boxes"].data, b["boxes"].data) and torch.equal(a["masks"].data, b["masks"].data)
            assert torch.equal(a["labels"], b["labels"])
        if isinstance(got, dict):
            assert got["id"] == 7
