"""JPEG decoding on the GPU, side by side in one run on ImageNet-like 500x375 JPEGs
(~110 KB and ~67 KB, made from the repo's photos with camera-like grain, and ~40 KB without grain, as
ImageNet's average file and bench_train's files are):

- decode only, batches of 256: torchaug.io.decode_jpeg on CUDA (nvJPEG hardware engines) vs
  torchvision.io.decode_jpeg on CUDA (batched), from pageable and from pinned memory, one caller and
  2 or 3 threads at once, and torchaug's CPU decoder (libjpeg-turbo) on 16 threads;
- decode + RandomResizedCrop + flip + RandAugment(2, 9) + normalize: bytes in memory, and the full
  input pipeline (2 DataLoader workers reading files, Prefetcher decoding and augmenting on the GPU)
  vs the 16-worker torchvision CPU DataLoader;
- memory over 10,000 decode batches.
The GPU rows of a file set, and the decode + chain rows, are the medians of 5 interleaved rounds:
one caller's time is nvJPEG's host work, and the host's speed swings for seconds at a time.

    python benchmarks/bench_decode.py [--json out.json] [--markdown out.md] [--quick] [--decode-only]
"""
import io
import os
import resource
import sys
import tempfile
import time

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Results, family_args, host_ms, interleaved, photo_views, saved_env, time_cuda  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import torchaug  # noqa: E402
import torchaug.transforms as T  # noqa: E402
from torchaug.io import ImageFolderBytes, collate_encoded, decode_jpeg, decode_jpeg_ragged  # noqa: E402

ASSETS = os.path.join(ROOT, "torchaug", "assets", "images")
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
# the interleaved rounds of the rows of a file set (and of the decode + chain rows): their median is the row
ROUNDS = 5


def make_files(n, quality, grain, seed=0, size=(500, 375)):
    out = []
    for im in photo_views(n, size, seed, scale_min=0.6, grain=grain):
        buf = io.BytesIO()
        im.save(buf, "JPEG", quality=quality)
        out.append(torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8))
    return out


class Repeated(torch.utils.data.Dataset):
    """`length` samples cycling over `ds` (an epoch as long as a real data set's, from a few files);
    batch_read=False reads a DataLoader batch a file at a time even where `ds` reads batches at once."""

    def __init__(self, ds, length, batch_read=True):
        self.ds, self.length, self.batch_read = ds, length, batch_read

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        return self.ds[i % len(self.ds)]

    def __getitems__(self, indices):
        # a DataLoader batch read the way `ds` reads one (ImageFolderBytes: into one buffer, read_batch)
        indices = [i % len(self.ds) for i in indices]
        if self.batch_read and hasattr(self.ds, "__getitems__"):
            return self.ds.__getitems__(indices)
        return [self.ds[i] for i in indices]


def write_folder(files, prefix="torchaug_decode_"):
    """The files written into a new temporary ImageFolder layout (8 classes, c0 .. c7); its root."""
    root = tempfile.mkdtemp(prefix=prefix)
    for i, f in enumerate(files):
        os.makedirs(os.path.join(root, f"c{i % 8}"), exist_ok=True)
        with open(os.path.join(root, f"c{i % 8}", f"{i:05d}.jpg"), "wb") as fh:
            fh.write(f.numpy().tobytes())
    return root


def pinned_views(files):
    """The files as views of one pinned buffer (as collate_encoded + pin_memory=True hand them over)."""
    buf = torch.cat(files).pin_memory()
    return list(buf.split([f.numel() for f in files]))


def decoders_note():
    n = os.environ.get("TORCHAUG_NVJPEG_DECODERS")
    return (f"at most {n} decoders in flight (TORCHAUG_NVJPEG_DECODERS)" if n else "the default decoder count")


def batch_ms(decode, bs):
    """A measure for interleaved: CUDA-event ms per batch of one caller running decode(batch) on each
    of the batches `bs` twice in turn, timed as one block after one untimed call."""
    return lambda: time_cuda(lambda i: decode(bs[i % len(bs)]), iters=len(bs) * 2, warmup=1, repeats=1)


def threaded_ms(bs, threads, iters):
    """A measure for interleaved: wall ms per batch of `iters` batches decoded by `threads` Python
    threads at once, each calling decode_jpeg on its share of the batches back to back on a stream
    of its own (the warm-up round makes every thread's decoder and grows its buffers)."""
    import threading

    def work(k, out):
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            for i in range(k, iters, threads):
                out.append(decode_jpeg(bs[i % len(bs)], device="cuda"))
                if len(out) > 2:
                    out.pop(0)
        stream.synchronize()

    def once():
        ts = [threading.Thread(target=work, args=(k, [])) for k in range(threads)]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return {"ms": (time.perf_counter() - t0) * 1e3 / iters}

    return once


def batches_of(files, b):
    return [files[i:i + b] for i in range(0, len(files) - b + 1, b)]


def main():
    args = family_args("bench_decode", {"--decode-only": "the decode rows only (no chain, Prefetcher or DataLoader rows)"})
    if args is None:
        return
    import torchvision
    import torchvision.io as tvio
    import torchvision.transforms.v2 as V

    n = 512 if args.quick else 1024
    B = 256
    res = Results("JPEG decoding on the GPU (torchaug.io.decode_jpeg, nvJPEG) vs torchvision")
    sets = {"110KB": make_files(n, 97, 4.5), "67KB": make_files(n, 93, 4.0, seed=1), "40KB": make_files(n, 90, 0.0, seed=2)}
    for name, files in sets.items():
        target = 25000 if name in ("110KB", "40KB") else None
        kb = sum(f.numel() for f in files) / len(files) / 1e3
        bs = batches_of(files, B)
        case = f"decode 500x375 ~{name} (mean {kb:.0f} KB)"
        # the same files as views of one pinned buffer: what a DataLoader with pin_memory=True hands
        # the Prefetcher (collate_encoded packs a batch in one buffer, pinned in one copy)
        pb = batches_of(pinned_views(files), B)
        # ~100 calls first (about a second): a process's first few dozen decode calls, and the first
        # of a larger file size, run slower than the steady state a training run sees
        for i in range(100):
            decode_jpeg(bs[i % len(bs)], device="cuda")
        torch.cuda.synchronize()
        ours = lambda b: decode_jpeg(b, device="cuda")  # noqa: E731
        theirs = lambda b: tvio.decode_jpeg(b, device="cuda", mode=tvio.ImageReadMode.RGB)  # noqa: E731
        # one call's time follows the host's speed, which swings for seconds at a time: the rows of a
        # set are timed in interleaved rounds, after a round that warms every row up
        measures = {"one": batch_ms(ours, bs), "threads 2": threaded_ms(bs, 2, len(bs) * 4), "tv": batch_ms(theirs, bs),
                    "pinned one": batch_ms(ours, pb), "pinned threads 2": threaded_ms(pb, 2, len(pb) * 4),
                    "pinned threads 3": threaded_ms(pb, 3, len(pb) * 4), "tv pinned": batch_ms(theirs, pb)}
        t = interleaved(measures, rounds=ROUNDS)
        res.add(case, "torchaug nvJPEG hardware", B, t["one"], target=target)
        res.add(case, "torchaug nvJPEG hardware, 2 threads calling at once", B, t["threads 2"], target=target,
                note=f"the Prefetcher's threads=2; {decoders_note()}; wall time per batch")
        res.add(case, "torchvision.io.decode_jpeg cuda (batched)", B, t["tv"])
        res.add(case, "torchaug nvJPEG hardware, pinned input", B, t["pinned one"], target=target,
                note="the files in one pinned buffer (DataLoader pin_memory=True), the rows above read them from pageable memory")
        for threads in (2, 3):
            res.add(case, f"torchaug nvJPEG hardware, {threads} threads calling at once, pinned input", B,
                    t[f"pinned threads {threads}"], target=target,
                    note=f"the Prefetcher's threads={threads} over a DataLoader with pin_memory=True; {decoders_note()}; "
                    "wall time per batch")
        res.add(case, "torchvision.io.decode_jpeg cuda (batched), pinned input", B, t["tv pinned"])
        torch.set_num_threads(16)
        t = time_cuda(lambda i: decode_jpeg(bs[i % len(bs)], device="cpu"), iters=len(bs), warmup=1, repeats=3)
        res.add(case, "torchaug CPU libjpeg-turbo (16 threads, one call)", B, t)

    if args.decode_only:
        res.save(args.json, args.markdown)
        return
    # decode + the augmentation chain, bytes already in memory: the decoded batch as one RaggedImages
    # (what the Prefetcher does), and as a list of per-image views (the path before it; the same GPU
    # work, a tensor per image on the host)
    files = sets["110KB"]
    bs = batches_of(files, B)
    chain = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.RandAugment(2, 9),
                       T.Normalize(MEAN, STD)])
    case = "decode + RRC + flip + RandAugment(2,9) + normalize"
    pb = batches_of(pinned_views(files), B)
    ragged = lambda b: chain(decode_jpeg_ragged(b, device="cuda"))  # noqa: E731
    measures = {"ragged": batch_ms(ragged, bs), "ragged pinned": batch_ms(ragged, pb),
                "list": batch_ms(lambda b: chain(decode_jpeg(b, device="cuda")), bs)}
    t = interleaved(measures, rounds=ROUNDS)
    res.add(case, "torchaug (bytes in memory, one process)", B, t["ragged"], target=20000)
    res.add(case, "torchaug (bytes in pinned memory, one process)", B, t["ragged pinned"], target=20000,
            note="the bytes as the Prefetcher gets them from a DataLoader with pin_memory=True")
    res.add(case, "torchaug, decoded batch as a list of views", B, t["list"], note="the path before RaggedImages was read in place")
    host = host_ms(chain, lambda i: decode_jpeg_ragged(bs[i % len(bs)], device="cuda"))
    host_list = host_ms(chain, lambda i: decode_jpeg(bs[i % len(bs)], device="cuda"))
    res.add(case + ": host time of the chain", "torchaug, RaggedImages in place", B, {"ms": host},
            note="host ms per batch of the chain's Python and launches (decode call excluded)")
    res.add(case + ": host time of the chain", "torchaug, list of views", B, {"ms": host_list},
            note="host ms per batch of the chain's Python and launches (decode call excluded)")

    # the whole input pipeline: workers read files, the Prefetcher decodes and augments on the GPU;
    # one long epoch (the files repeated), timed after its first batches (the workers' start and
    # the decoder's allocations), so that the rows are the steady state, not an epoch's start
    root = write_folder(files)
    # (skip covers the workers' segments being made: ~5 a worker with prefetch_factor=4; up to 8
    # batches the 2 workers read ahead would flatter a shorter window)
    n_batches, skip = (48, 16) if args.quick else (112, 16)
    # the workers' shared-memory segments reused (the default) or made per batch (TORCHAUG_SHM_POOL=0),
    # in the same process; the workers read a batch into one buffer (ImageFolderBytes.__getitems__),
    # or a file at a time (batch_read False: a dataset without __getitems__)
    with saved_env("TORCHAUG_SHM_POOL"):
        for workers, pool, threads, batch_read in ((1, True, 1, True), (2, True, 1, True), (2, True, 2, True),
                                                   (2, True, 3, True), (2, True, 2, False), (2, False, 1, True)):
            os.environ["TORCHAUG_SHM_POOL"] = "8" if pool else "0"  # read by the workers, forked below
            ds = Repeated(ImageFolderBytes(root), n_batches * B, batch_read)
            loader = torch.utils.data.DataLoader(ds, batch_size=B, shuffle=True, num_workers=workers, pin_memory=True,
                                                 drop_last=True, prefetch_factor=4, collate_fn=collate_encoded)
            pf = torchaug.Prefetcher(loader, T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.RandAugment(2, 9)]),
                                     device="cuda", mean=MEAN, std=STD, dtype=torch.bfloat16, memory_format=torch.channels_last,
                                     threads=threads)
            # timed from batch `skip` to the last batch's arrival: the epoch's end (the workers joined)
            # is not part of the steady state either
            count, t0, stats0 = 0, None, None
            for k, (x, y) in enumerate(pf):
                if k == skip:
                    torch.cuda.synchronize()
                    t0, stats0 = time.perf_counter(), pf.stats.as_dict()
                elif k > skip:
                    count += x.shape[0]
                if k == n_batches - 1:
                    torch.cuda.synchronize()
                    t_last = time.perf_counter()
                    dt = t_last - t0
                    st = pf.stats.per_batch_ms(stats0)
            ended_ms = 1e3 * (time.perf_counter() - t_last)
            res.add(case, f"torchaug Prefetcher, {workers} byte-reading worker{'s' if workers > 1 else ''}"
                    + (f", {threads} producer threads" if threads > 1 else "")
                    + ("" if pool else ", a new shared-memory segment per batch")
                    + ("" if batch_read else ", reading a file at a time"), B,
                    {"ms": 1e3 * dt * B / count}, target=20000 if workers == 2 and pool and batch_read else None,
                    note="host ms/batch: " + ", ".join(f"{k} {v:.1f}" for k, v in st.items() if v is not None)
                    + f"; the epoch's end after the last batch (not timed): {ended_ms:.0f} ms")
            del pf, loader

    # the CPU DataLoader peer: 16 workers decode with PIL and run torchvision v2's chain
    class PilFolder(torch.utils.data.Dataset):
        def __init__(self, root, transform):
            self.ds = ImageFolderBytes(root)
            self.transform = transform

        def __len__(self):
            return len(self.ds)

        def __getitem__(self, i):
            path, y = self.ds.samples[i]
            with Image.open(path) as im:
                x = torch.from_numpy(np.asarray(im.convert("RGB"))).permute(2, 0, 1)
            return self.transform(x), y

    tv_chain = V.Compose([V.RandomResizedCrop(224, antialias=True), V.RandomHorizontalFlip(), V.RandAugment(2, 9),
                          V.ToDtype(torch.float32, scale=True), V.Normalize(MEAN, STD)])
    loader = torch.utils.data.DataLoader(PilFolder(root, tv_chain), batch_size=B, shuffle=True, num_workers=16,
                                         pin_memory=True, drop_last=True, persistent_workers=True)
    for _ in loader:
        pass
    t0 = time.perf_counter()
    count = 0
    for _ in range(1 if args.quick else 2):
        for x, y in loader:
            x = x.cuda(non_blocking=True)
            count += x.shape[0]
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    res.add(case, f"torchvision {torchvision.__version__} v2 CPU DataLoader (16 workers, PIL)", B, {"ms": 1e3 * dt * B / count})

    # memory over 10,000 batches (16 files each)
    small = sets["67KB"][:16]
    for _ in range(50):
        decode_jpeg(small, device="cuda")
    torch.cuda.synchronize()
    free0 = torch.cuda.mem_get_info()[0]
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    steps = 2000 if args.quick else 10000
    t0 = time.perf_counter()
    for _ in range(steps):
        decode_jpeg(small, device="cuda")
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    free1 = torch.cuda.mem_get_info()[0]
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    res.add(f"memory over {steps:,} batches of 16", "torchaug nvJPEG", 16, {"ms": 1e3 * dt / steps},
            note=f"device memory used grew by {(free0 - free1) / 2**20:.1f} MiB, peak RSS by {(rss1 - rss0) / 1024:.1f} MiB")
    res.save(args.json, args.markdown)
    print(res.markdown())


if __name__ == "__main__":
    main()
