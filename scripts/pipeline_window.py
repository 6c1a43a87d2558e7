"""The Prefetcher over 2 byte-reading workers at a long window (issue 6: the pipeline target, 20,000
img/s with at most 2 workers, was met only in bench_decode's short --quick window). Which side
bounds the steady state: each worker stamps, per batch, when it started reading, when it finished
reading and when its collate finished (CLOCK_MONOTONIC, shared by the processes), and its CPU time;
the main process stamps each batch's arrival. Per row:

  - img/s over the timed batches;
  - per worker and batch: read ms, collate ms, CPU ms, and idle ms (from the end of its previous
    batch to the start of this one: ~0 when the workers are the bound, large when the main process
    does not take their batches fast enough);
  - the Prefetcher's host ms per batch (PrefetchStats) and the main process's CPU (cores busy).

Rows: the loader alone (nothing done with the batches) and the Prefetcher with 1, 2 and 3 producer
threads (decode + RandomResizedCrop + flip + RandAugment(2, 9) + Normalize to bf16 channels_last),
each with the workers reading as --readers says:

  - per_file: ImageFolderBytes a file at a time (a uint8 array per file, packed by collate_encoded:
    the path before session 45);
  - batch: ImageFolderBytes.__getitems__ (torchaug.io.read_batch: the batch read straight into the
    worker's shared segment, handed on as it lies);
  - memory: no loader, 4 batches already in pinned memory cycled (the Prefetcher's own bound).

--chains decode times the decode alone (the Prefetcher with no transform). --envs runs each loader
row under each setting (TORCHAUG_SHM_KEEP=1, say; "default" leaves the environment as it is).

    python scripts/pipeline_window.py [--batches 144] [--skip 24] [--readers per_file,batch,memory] [--threads 0,1,2,3] [--chains full,decode]
                                      [--envs default,TORCHAUG_SHM_KEEP=1]
                                      [--rounds 1] [--json out.json]
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import torchaug  # noqa: E402
import torchaug.transforms as T  # noqa: E402
from bench_decode import MEAN, STD, Repeated, make_files, write_folder  # noqa: E402
from harness import saved_env  # noqa: E402
from torchaug.io import EncodedImages, ImageFolderBytes, collate_encoded  # noqa: E402

B = 256
_read = [0.0, 0.0, 0.0]  # this worker's last batch: read start, read end, CPU seconds of the read


class Stamped(Repeated):
    """bench_decode's Repeated (`length` samples cycling over `ds`, a DataLoader batch read a file at a
    time or, with batch_read, at once through ds.__getitems__), each batch's read stamped for the
    collate below."""

    def __getitems__(self, indices):
        t0, c0 = time.monotonic(), time.thread_time()
        items = super().__getitems__(indices)
        _read[:] = [t0, time.monotonic(), time.thread_time() - c0]
        return items


def stamped_collate(collate):
    def fn(samples):
        c0 = time.thread_time()
        out = collate(samples)
        info = torch.utils.data.get_worker_info()
        stamp = torch.tensor([info.id if info else -1, _read[0], _read[1], time.monotonic(), _read[2] + time.thread_time() - c0],
                             dtype=torch.float64)
        return (*out, stamp)
    return fn


def feed(loader, log):
    """The loader's batches without their stamps; the stamps and each batch's arrival go to log."""
    for *batch, stamp in loader:
        log.append((time.monotonic(), stamp.tolist()))
        yield tuple(batch)


def summarize(log, first, images, seconds):
    """The figures of the batches log[first:] (arrival, [worker, read start, read end, collate end, CPU s])."""
    rows = [(arr, int(w), r0, r1, c1, cpu) for arr, (w, r0, r1, c1, cpu) in log[first:]]
    ms = lambda v: 1e3 * float(np.mean(v)) if v else None  # noqa: E731
    idle, workers = [], {}
    for arr, w, r0, r1, c1, cpu in rows:
        workers.setdefault(w, []).append((r0, c1))
    for b in workers.values():
        b.sort()
        idle += [n0 - p1 for (_, p1), (n0, _) in zip(b, b[1:])]
    t0, t1 = rows[0][0], rows[-1][0]
    return {"img_s": images / seconds,
            "read_ms": ms([r1 - r0 for _, _, r0, r1, _, _ in rows]),
            "collate_ms": ms([c1 - r1 for _, _, _, r1, c1, _ in rows]),
            "worker_cpu_ms": ms([cpu for *_, cpu in rows]),
            "worker_idle_ms": ms(idle),
            # the share of the window each worker spent on its batches (reading + collating)
            "worker_busy": sum(c1 - r0 for _, _, r0, _, c1, _ in rows) / (len(workers) * (t1 - t0)) if t1 > t0 else None,
            "arrival_after_collate_ms": 1e3 * float(np.median([arr - c1 for arr, _, _, _, c1, _ in rows]))}


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def memory_feed(pinned, batches, log):
    """`batches` batches cycling over `pinned` (already in pinned memory: no workers, no pin thread)."""
    for k in range(batches):
        t = time.monotonic()
        log.append((t, [-1.0, t, t, t, 0.0]))
        yield pinned[k % len(pinned)]


def run_row(root, pinned, reader, threads, chain, batches, skip):
    loader = None
    log = []
    if reader == "memory":
        source = memory_feed(pinned, batches, log)
    else:
        ds = Stamped(ImageFolderBytes(root), batches * B, batch_read=reader == "batch")
        loader = torch.utils.data.DataLoader(ds, batch_size=B, shuffle=True, num_workers=2, pin_memory=True, drop_last=True,
                                             prefetch_factor=4, collate_fn=stamped_collate(collate_encoded))
        source = feed(loader, log)
    if threads == 0:
        it = source
    elif chain == "full":
        it = torchaug.Prefetcher(source, T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.RandAugment(2, 9)]),
                                 device="cuda", mean=MEAN, std=STD, dtype=torch.bfloat16, memory_format=torch.channels_last,
                                 threads=threads)
    else:  # the decode alone
        it = torchaug.Prefetcher(source, None, device="cuda", threads=threads)
    count = 0
    for k, (x, y) in enumerate(it):
        if k == skip:
            sync()
            t0, cpu0 = time.perf_counter(), os.times()
            stats0 = it.stats.as_dict() if threads else None
        elif k > skip:
            count += len(y)
        if k == batches - 1:
            sync()
            t1, cpu1 = time.perf_counter(), os.times()
    res = summarize(log[:batches], skip + 1, count, t1 - t0)  # img/s as bench_decode times it (the consumer's view)
    res["main_cores"] = ((cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)) / (t1 - t0)
    if threads:
        res.update({f"pf_{k}_ms": v for k, v in it.stats.per_batch_ms(stats0).items()})
    del it, loader
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=144)
    ap.add_argument("--skip", type=int, default=24)
    ap.add_argument("--readers", default="per_file,batch")
    ap.add_argument("--threads", default="0,1,2,3")
    ap.add_argument("--chains", default="full", help="full (decode + the chain), decode (the decode alone), or both")
    ap.add_argument("--envs", default="default", help="comma-separated settings each row runs under: default or VAR=value")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json")
    args = ap.parse_args()
    files = make_files(1024, 97, 4.5)
    root = write_folder(files, prefix="torchaug_window_")
    labels = torch.arange(B) % 8
    pinned = [(EncodedImages.from_bytes(files[i:i + B]).pin_memory(), labels.pin_memory())
              for i in range(0, len(files), B)] if torch.cuda.is_available() else []
    results = []
    for r in range(args.rounds):
        for chain in args.chains.split(","):
            for threads in [int(t) for t in args.threads.split(",")]:
                for reader in args.readers.split(","):
                    for env in args.envs.split(","):
                        if threads == 0 and (reader == "memory" or chain != args.chains.split(",")[0]):
                            continue  # nothing to time
                        if reader == "memory" and env != args.envs.split(",")[0]:
                            continue  # the settings are the loader's
                        name, _, value = env.partition("=")
                        with saved_env(name):
                            if value:
                                os.environ[name] = value
                            res = run_row(root, pinned, reader, threads, chain, args.batches, args.skip)
                        res.update(reader=reader, threads=threads, chain=chain, env=env, round=r)
                        results.append(res)
                        print(json.dumps({k: (round(v, 2) if isinstance(v, float) else v) for k, v in res.items()}), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
