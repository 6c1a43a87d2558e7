"""Where a byte-reading DataLoader worker's time goes (issue 6: the Prefetcher rows are bound by the
2 workers): reading 256 files, packing them into one shared-memory EncodedImages, and DataLoader
throughput with 1 and 2 workers, with and without pin_memory, with the workers' shared-memory
segments reused (torchaug.io._shm) and made per batch, on ImageFolderBytes and TarShards.
No GPU work except the pinning.

    python scripts/loader_probe.py [--root DIR]   (default: 1,024 generated 500x375 JPEGs of ~110 KB)
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from harness import saved_env  # noqa: E402
from torchaug.io import EncodedImages, ImageFolderBytes, TarShards, collate_encoded, write_tar_shards  # noqa: E402
from bench_decode import Repeated, make_files  # noqa: E402

B = 256


def ms(fn, n=10):
    fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e3


def loader_ms(ds, workers, pin, n=24):
    dl = torch.utils.data.DataLoader(Repeated(ds, 10 ** 6), batch_size=B, num_workers=workers, collate_fn=collate_encoded,
                                     prefetch_factor=4, pin_memory=pin)
    it = iter(dl)
    for _ in range(6):
        next(it)
    t0 = time.perf_counter()
    for _ in range(n):
        next(it)
    dt = (time.perf_counter() - t0) / n * 1e3
    del it
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root")
    args = ap.parse_args()
    root = args.root
    if root is None:
        root = tempfile.mkdtemp(prefix="torchaug_probe_")
        for i, f in enumerate(make_files(1024, 97, 4.5)):
            os.makedirs(os.path.join(root, f"c{i % 8}"), exist_ok=True)
            with open(os.path.join(root, f"c{i % 8}", f"{i:05d}.jpg"), "wb") as fh:
                fh.write(f.numpy().tobytes())
    folder = ImageFolderBytes(root)
    shards = TarShards(write_tar_shards(folder.samples, tempfile.mkdtemp(prefix="torchaug_shards_"), 256))
    idx = list(range(B))
    for name, ds in (("folder", folder), ("tar", shards)):
        samples = [ds[i] for i in idx]
        print(f"{name}: read 256 files {ms(lambda: [ds[i] for i in idx]):.1f} ms; "
              f"collate_encoded {ms(lambda: collate_encoded(samples)):.1f} ms; "
              f"{sum(s[0].size for s in samples) / 1e6:.1f} MB per batch", flush=True)
        if hasattr(ds, "__getitems__"):
            print(f"{name}: __getitems__ + collate {ms(lambda: collate_encoded(ds.__getitems__(idx))):.1f} ms", flush=True)
        with saved_env("TORCHAUG_SHM_POOL"):
            for workers in (1, 2):
                for pin in (False, True):
                    if pin and not torch.cuda.is_available():
                        continue
                    for pool in ("8", "0"):  # the workers' segments reused, or one made per batch (the old path)
                        os.environ["TORCHAUG_SHM_POOL"] = pool
                        print(f"{name}: DataLoader {workers} worker(s), pin_memory={pin}, "
                              f"{'segments reused' if pool != '0' else 'a new segment per batch'}: "
                              f"{loader_ms(ds, workers, pin):.1f} ms per batch", flush=True)
    e = collate_encoded([folder[i] for i in idx])[0]
    if torch.cuda.is_available():
        print(f"pin_memory of one EncodedImages: {ms(lambda: e.pin_memory()):.1f} ms", flush=True)
    total = e.data.numel()

    def shm(touch):
        empty = torch.empty(0, dtype=torch.uint8)
        t = empty.new(empty._typed_storage()._new_shared(total, device="cpu")).view(-1)
        if touch:
            t.numpy()[::4096] = 1
    print(f"a {total / 1e6:.1f} MB shared-memory buffer (as a worker's collate makes per batch): allocate {ms(lambda: shm(False)):.1f} ms, "
          f"allocate + touch every page {ms(lambda: shm(True)):.1f} ms", flush=True)
    shared = EncodedImages(e.data.share_memory_(), e.lengths)
    print(f"EncodedImages.tensors(): {ms(lambda: shared.tensors()):.2f} ms; np.asarray copy of the batch "
          f"{ms(lambda: np.array(e.data.numpy())):.1f} ms", flush=True)


if __name__ == "__main__":
    main()
