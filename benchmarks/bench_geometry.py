"""RandomResizedCrop(224) + RandomHorizontalFlip + ToDtype(float32,
scale=True) + Normalize on a batch of 256 uint8 images of 500x375, side by side:

- torchaug transforms (Compose, fused into one launch; parameters drawn on the GPU per sample);
- torchaug with the parameters drawn beforehand (the op alone) and unfused (three launches);
- torchvision v2 on the same GPU: batch-wide (one crop and one flip for the whole batch, which is
  what its transforms do to a batch) and the per-sample loop (the correct per-sample semantics);
- a CPU DataLoader with 16 workers running the torchvision v2 chain per sample, batches pinned and
  copied to the GPU (the usual input pipeline);
- the device-to-device copy bandwidth and the memory floor of the chain.

Then CIFAR's chain, RandomCrop(32, padding=4) + flip + ToDtype + Normalize on 512 uint8 32x32 images
(torchaug: one launch, as eager transforms and replayed from a CUDA graph), beside torchvision v2's
per-sample loop and batch-wide call on the same GPU.

    python benchmarks/bench_geometry.py [--json out.json] [--markdown out.md] [--quick]
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torchaug.functional as F  # noqa: E402
import torchaug.transforms as T  # noqa: E402
from harness import Results, time_cuda  # noqa: E402

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
CASE = "RRC224+flip+normalize u8 500x375"


def torchaug_pipeline(fuse=True):
    return T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToDtype(torch.float32, scale=True),
                      T.Normalize(MEAN, STD)], fuse=fuse)


def torchvision_pipeline():
    from torchvision.transforms import v2 as TV

    return TV.Compose([TV.RandomResizedCrop(224, antialias=True), TV.RandomHorizontalFlip(),
                       TV.ToDtype(torch.float32, scale=True), TV.Normalize(MEAN, STD)])


class _Photos(torch.utils.data.Dataset):
    def __init__(self, images, transform):
        self.images, self.transform = images, transform

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.transform(self.images[i])


def dataloader_throughput(batch, workers, batches, height, width, pipeline=None):
    """img/s of a DataLoader whose workers run the torchvision v2 chain per sample on CPU uint8
    tensors, with pinned batches copied to the GPU (non_blocking) as a training loop does."""
    images = torch.randint(0, 256, (batch * 4, 3, height, width), dtype=torch.uint8)
    ds = _Photos(images, pipeline if pipeline is not None else torchvision_pipeline())
    loader = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers, pin_memory=True,
                                         drop_last=True, persistent_workers=True, prefetch_factor=4)
    import time

    it = iter(loader)
    seen = 0

    def next_batch():
        nonlocal it
        try:
            return next(it)
        except StopIteration:
            it = iter(loader)
            return next(it)

    for _ in range(3):  # start the workers, fill the queues
        next_batch().cuda(non_blocking=True)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(batches):
        x = next_batch().cuda(non_blocking=True)
        seen += x.shape[0]
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    return {"ms": dt * 1e3 / batches, "ms_min": float("nan"), "ms_max": float("nan")}


def copy_bandwidth():
    n = 1 << 30
    a = torch.empty(n, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    t = time_cuda(lambda i: b.copy_(a), iters=10, warmup=3, repeats=5)
    return 2 * n / (t["ms"] / 1e3)  # bytes read + written per second


CIFAR_CASE = "RandomCrop(32, padding=4)+flip+normalize u8 32x32"
CIFAR_MEAN, CIFAR_STD = [0.4914, 0.4822, 0.4465], [0.2470, 0.2435, 0.2616]


def cifar_pipeline(lib):
    return lib.Compose([lib.RandomCrop(32, padding=4), lib.RandomHorizontalFlip(), lib.ToDtype(torch.float32, scale=True),
                        lib.Normalize(CIFAR_MEAN, CIFAR_STD)])


def cifar_case(res, it, peers, batch=512):
    """CIFAR's training chain on a batch of 32x32 images: small images, where a call's launches and
    host work weigh more than its bytes."""
    import torchaug

    inputs = [torch.randint(0, 256, (batch, 3, 32, 32), dtype=torch.uint8, device="cuda") for _ in range(4)]
    ours = cifar_pipeline(T)
    res.add(CIFAR_CASE, "torchaug transforms (one launch)", batch, time_cuda(lambda i: ours(inputs[i % 4]), it))
    graph = torchaug.graphed(ours, inputs[0])

    def replay(i):
        graph.input.copy_(inputs[i % 4])
        return graph.replay()
    res.add(CIFAR_CASE, "torchaug transforms in a CUDA graph", batch, time_cuda(replay, it),
            note="fresh draws each replay; the batch copied into the graph's input")
    if peers:
        from torchvision.transforms import v2 as TV
        tv = cifar_pipeline(TV)
        res.add(CIFAR_CASE, "torchvision v2 batch-wide (one crop per batch)", batch, time_cuda(lambda i: tv(inputs[i % 4]), it))
        res.add(CIFAR_CASE, "torchvision v2 per-sample loop (GPU)", batch, time_cuda(
            lambda i: torch.stack([tv(img) for img in inputs[i % 4]]), 2, warmup=1, repeats=3))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    ap.add_argument("--torchaug-only", action="store_true", help="skip the peers (for comparing torchaug variants)")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("bench_geometry: needs a CUDA device (timings on a CPU are not evidence of GPU speed)")
    B, H, W = args.batch, 375, 500
    it = 5 if args.quick else 50
    res = Results(f"{CASE} -> 224x224 float32 (batch {B})")
    print(f"# {res.title}\n# {res.env}", flush=True)

    torch.manual_seed(0)
    n_rot = 4  # 4 x 144 MB of input: far more than the L2 cache
    inputs = [torch.randint(0, 256, (B, 3, H, W), dtype=torch.uint8, device="cuda") for _ in range(n_rot)]

    fused = torchaug_pipeline()
    # target: 2.5M img/s, about two thirds of an H100's memory floor (~3.7M)
    res.add(CASE, "torchaug transforms (fused, params on GPU)", B, time_cuda(lambda i: fused(inputs[i % n_rot]), it),
            target=2_500_000)
    params = [fused.transforms[0].make_params(x) for x in inputs]
    flips = [fused.transforms[1].make_params(x)["flip"] for x in inputs]
    res.add(CASE, "torchaug op, params drawn beforehand", B, time_cuda(
        lambda i: F.resized_crop_boxes(inputs[i % n_rot], params[i % n_rot]["boxes"], [224, 224], flip=flips[i % n_rot],
                                       mean=MEAN, std=STD, validate=False), it))
    unfused = torchaug_pipeline(fuse=False)
    res.add(CASE, "torchaug transforms (unfused: 3 launches)", B, time_cuda(lambda i: unfused(inputs[i % n_rot]), it))

    # memory floor of the fused chain: the crop rows read (bytes of the boxes' rows) + output written
    boxes = torch.cat([p["boxes"] for p in params]).double()
    read = (boxes[:, 2] * boxes[:, 3] * 3).mean().item()
    written = 224 * 224 * 3 * 4
    bw = copy_bandwidth()
    floor = bw / (read + written)
    res.add(CASE, "memory floor (copy bandwidth / bytes moved)", B, {"ms": B / floor * 1e3, "ms_min": 0, "ms_max": 0},
            note=f"{bw / 1e12:.2f} TB/s measured copy; {(read + written) / 1e3:.0f} KB per image")

    try:
        tv = None if args.torchaug_only else torchvision_pipeline()
    except ImportError:
        tv = None
    if tv is not None:
        res.add(CASE, "torchvision v2 batch-wide (one crop per batch)", B, time_cuda(lambda i: tv(inputs[i % n_rot]), it))
        loop_it = 2 if args.quick else 5
        res.add(CASE, "torchvision v2 per-sample loop (GPU)", B, time_cuda(
            lambda i: torch.stack([tv(img) for img in inputs[i % n_rot]]), loop_it, warmup=1, repeats=3))
        workers = min(args.workers, os.cpu_count() or 1)
        res.add(CASE, f"torchvision v2 CPU DataLoader, {workers} workers", B,
                dataloader_throughput(B, workers, 5 if args.quick else 20, H, W), note="pinned, copied to GPU")

    # ragged input: the decoded-JPEG case, images of different sizes in one launch
    shapes = [(375, 500), (500, 375), (333, 500), (480, 640), (427, 640), (300, 451)]
    ragged = [torch.randint(0, 256, (3, *shapes[i % len(shapes)]), dtype=torch.uint8, device="cuda") for i in range(B)]
    res.add("RRC224+flip+normalize ragged u8", "torchaug transforms, list of 256 images", B,
            time_cuda(lambda i: fused(ragged), it))

    cifar_case(res, it, tv is not None)

    print()
    print(res.markdown())
    res.save(args.json, args.markdown)


if __name__ == "__main__":
    main()
