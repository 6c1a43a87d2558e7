"""Train a torchvision model with the augmentation on the GPU (torchaug), or with the plain CPU
DataLoader pipeline of torchvision for comparison, or on synthetic data (the model's own speed).

    python examples/train.py                                   # the package's sample photos, torchaug
    python examples/train.py --data /path/to/train --model resnet50 --loader torchvision
    torchrun --nproc_per_node 2 examples/train.py --data /path/to/train   # DDP, one process per GPU

--data is an ImageFolder layout (one folder of JPEGs per class). With --loader torchaug the
DataLoader workers only read the JPEG files and the GPU decodes them (--decode gpu, nvJPEG; the
default on CUDA), or the workers decode them (--decode workers); RandomResizedCrop + flip +
RandAugment(2, 9) + normalize run on the GPU in the Prefetcher's side stream. With --loader
torchvision the workers run torchvision.transforms.v2's same chain on the CPU. Without CUDA the
defaults are a small model (resnet18), float32 and batches of 32. The last line printed is a JSON
summary with the measured images per second (of all ranks).
"""
import argparse
import functools
import json
import math
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, DistributedSampler

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout

import torchaug  # noqa: E402
import torchaug.transforms as T  # noqa: E402
from torchaug.io import collate_encoded, collate_ragged  # noqa: E402

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
SAMPLES = os.path.join(os.path.dirname(os.path.abspath(torchaug.__file__)), "assets", "images")
EXTENSIONS = (".jpg", ".jpeg", ".JPG", ".JPEG")


def find_images(root):
    """(paths, labels, classes): an ImageFolder layout, or a flat folder (one class per file, as the
    repo's sample photos)."""
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    if classes:
        items = [(os.path.join(root, c, f), i) for i, c in enumerate(classes)
                 for f in sorted(os.listdir(os.path.join(root, c))) if f.endswith(EXTENSIONS)]
    else:
        files = sorted(f for f in os.listdir(root) if f.endswith(EXTENSIONS))
        classes = [os.path.splitext(f)[0] for f in files]
        items = [(os.path.join(root, f), i) for i, f in enumerate(files)]
    if not items:
        raise SystemExit(f"train.py: no JPEG files under {root}")
    return [p for p, _ in items], [y for _, y in items], classes


def _pil_decode(path):
    import numpy as np
    from PIL import Image
    with Image.open(path) as im:  # a (C, H, W) view of HWC memory, as torchvision.io returns (packs HWC)
        return torch.from_numpy(np.array(im.convert("RGB"))).permute(2, 0, 1)


def decode(path):
    """uint8 (3, H, W): libjpeg-turbo through torchvision.io when it loads, else PIL."""
    global _decode
    if _decode is None:
        try:
            import torchvision.io as io
            io.decode_jpeg(io.read_file(path), mode=io.ImageReadMode.RGB)
            _decode = lambda p: io.decode_jpeg(io.read_file(p), mode=io.ImageReadMode.RGB)  # noqa: E731
        except (ImportError, RuntimeError):
            _decode = _pil_decode
    return _decode(path)


_decode = None


class JpegDataset(Dataset):
    """Decoded images and labels; `transform` (torchvision's CPU chain) runs in the worker when given.
    `length` repeats the files (the sample photos are only four)."""

    def __init__(self, root, transform=None, length=None):
        self.paths, self.labels, self.classes = find_images(root)
        self.transform = transform
        self.length = length or len(self.paths)

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        i %= len(self.paths)
        img = decode(self.paths[i])
        if self.transform is not None:
            img = self.transform(img)
        return img, self.labels[i]


class JpegBytesDataset(Dataset):
    """The files' bytes and labels (workers only read; the GPU decodes: --decode gpu)."""

    def __init__(self, root, length=None):
        self.paths, self.labels, self.classes = find_images(root)
        self.length = length or len(self.paths)

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        import numpy as np
        i %= len(self.paths)
        return np.fromfile(self.paths[i], dtype=np.uint8), self.labels[i]

    def __getitems__(self, indices):
        # a DataLoader batch read into one buffer, which collate_encoded hands on without a copy
        indices = [i % len(self.paths) for i in indices]
        return torchaug.io.read_batch([self.paths[i] for i in indices], [self.labels[i] for i in indices])


def torchvision_cpu_transform():
    from torchaug._compat import import_torchvision
    import_torchvision()
    import torchvision.transforms.v2 as V
    return V.Compose([V.RandomResizedCrop(224, antialias=True), V.RandomHorizontalFlip(), V.RandAugment(2, 9),
                      V.ToDtype(torch.float32, scale=True), V.Normalize(MEAN, STD)])


def torchaug_gpu_transform():
    return T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.RandAugment(2, 9)])


class Synthetic:
    """The same normalized batch every step: the model's speed without any input pipeline."""

    def __init__(self, batch, classes, steps, device, dtype):
        self.x = torch.randn(batch, 3, 224, 224, device=device).to(dtype=dtype, memory_format=torch.channels_last)
        self.y = torch.randint(0, classes, (batch,), device=device)
        self.steps = steps

    def __len__(self):
        return self.steps

    def __iter__(self):
        return iter([(self.x, self.y)] * self.steps)


class TorchvisionLoader:
    """The usual loop over a CPU DataLoader: pinned batches copied with non_blocking, channels_last."""

    def __init__(self, loader, device, dtype):
        self.loader, self.device, self.dtype = loader, device, dtype

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        for x, y in self.loader:
            x = x.to(self.device, non_blocking=True).to(dtype=self.dtype, memory_format=torch.channels_last)
            yield x, y.to(self.device, non_blocking=True)


def nice_worker(worker_id, increment):
    """DataLoader worker_init_fn (--worker-nice): the worker at a lower CPU priority, so that where
    the machine's cores run short the training loop's thread, which launches the model's kernels,
    runs ahead of the workers, which only have to stay a few batches ahead."""
    os.nice(increment)


def make_loader(args, device, dtype, world, rank):
    if args.loader == "synthetic":
        return Synthetic(args.batch_size, args.num_classes or 1000, args.steps or 100, device, dtype), None
    root = args.data or SAMPLES
    # the sample photos repeated: 64 batches on CUDA, 8 on the CPU
    length = args.length or (None if args.data else (64 if device.type == "cuda" else 8) * args.batch_size)
    cpu_chain = torchvision_cpu_transform() if args.loader == "torchvision" else None
    gpu_decode = args.loader == "torchaug" and args.decode == "gpu"
    dataset = JpegBytesDataset(root, length) if gpu_decode else JpegDataset(root, cpu_chain, length)
    collate = collate_encoded if gpu_decode else collate_ragged
    sampler = DistributedSampler(dataset, world, rank, shuffle=True, drop_last=True) if world > 1 else None
    loader = DataLoader(
        dataset, batch_size=args.batch_size, shuffle=sampler is None, sampler=sampler, drop_last=True,
        num_workers=args.workers, pin_memory=device.type == "cuda", persistent_workers=args.workers > 0,
        collate_fn=collate if args.loader == "torchaug" else None,
        worker_init_fn=functools.partial(nice_worker, increment=args.worker_nice) if args.worker_nice else None,
    )
    if args.loader == "torchvision":
        return TorchvisionLoader(loader, device, dtype), sampler
    prefetcher = torchaug.Prefetcher(loader, torchaug_gpu_transform(), device=device, depth=args.depth,
                                     mean=MEAN, std=STD, dtype=dtype, memory_format=torch.channels_last,
                                     timeout=args.timeout, threads=args.prefetch_threads)
    return prefetcher, sampler


def progress(total, disable):
    try:
        from tqdm import tqdm
        return tqdm(total=total, disable=disable, unit="step", dynamic_ncols=True)
    except ImportError:
        class Plain:  # tqdm's interface, a line every 20 steps
            def __init__(self):
                self.n = 0

            def update(self, k):
                self.n += k

            def set_postfix_str(self, s):
                if not disable and self.n % 20 == 0:
                    print(f"step {self.n}/{total} {s}", flush=True)

            def close(self):
                pass
        return Plain()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", help="ImageFolder root (default: the repo's sample photos)")
    p.add_argument("--model", default=None,
                   help="a torchvision.models name (resnet50, efficientnet_b0, ...; default resnet50 on CUDA, resnet18 on the "
                        "CPU), or none (the input pipeline alone)")
    p.add_argument("--loader", choices=["torchaug", "torchvision", "synthetic"], default="torchaug")
    p.add_argument("--decode", choices=["gpu", "workers"], default=None,
                   help="torchaug loader: decode JPEGs on the GPU (workers only read bytes; default on CUDA) or in the workers")
    p.add_argument("--batch-size", type=int, default=None, help="per GPU (default 256 on CUDA, 32 on the CPU)")
    p.add_argument("--workers", type=int, default=None,
                   help="DataLoader workers (default 8, at most the machine's cores); --decode workers needs ~12 on a "
                        "16-core H100 machine to feed ResNet-50, --decode gpu 2")
    p.add_argument("--worker-nice", type=int, default=0,
                   help="raise the DataLoader workers' niceness by this much (0..19): the training thread first where cores run short")
    p.add_argument("--depth", type=int, default=2, help="batches the Prefetcher prepares ahead")
    p.add_argument("--prefetch-threads", type=int, default=1,
                   help="the Prefetcher's producer threads (each decodes its batch on its own nvJPEG decoder)")
    p.add_argument("--cuda-graph", action="store_true",
                   help="the model's forward and backward captured once as CUDA graphs (torch.cuda.make_graphed_callables) "
                        "and replayed each step: the step's host work is a few launches, not one per kernel (one CUDA "
                        "device; every batch must have --batch-size images of 224x224)")
    p.add_argument("--timeout", type=float, default=0,
                   help="seconds the Prefetcher waits for a batch before it raises, showing where its thread is (0: no limit)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--steps", type=int, default=None, help="at most this many steps per epoch")
    p.add_argument("--length", type=int, default=None, help="dataset length (repeats the files)")
    p.add_argument("--num-classes", type=int, default=None)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--amp", choices=["bf16", "none"], default=None, help="bf16 autocast (default on CUDA) or none")
    p.add_argument("--warmup", type=int, default=None, help="steps before the timed window (default 30 on CUDA, 2 on the CPU)")
    p.add_argument("--device", default=None)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        local = int(os.environ.get("LOCAL_RANK", "0"))
        if torch.cuda.is_available() and (args.device is None or args.device.startswith("cuda")):
            torch.cuda.set_device(local)
            dist.init_process_group("nccl", device_id=torch.device("cuda", local))
            device = torch.device("cuda", local)
        else:  # CPU processes (the CI's check of this path): gloo
            dist.init_process_group("gloo")
            device = torch.device("cpu")
    else:
        device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    torch.manual_seed(args.seed + rank)
    torch.backends.cudnn.benchmark = True
    cuda = device.type == "cuda"
    args.decode = args.decode or ("gpu" if cuda else "workers")
    args.model = args.model or ("resnet50" if cuda else "resnet18")
    args.batch_size = args.batch_size or (256 if cuda else 32)
    args.amp = args.amp or ("bf16" if cuda else "none")
    args.workers = args.workers if args.workers is not None else min(8, os.cpu_count() or 1)
    args.warmup = args.warmup if args.warmup is not None else (30 if cuda else 2)
    amp = args.amp == "bf16"
    dtype = torch.bfloat16 if amp and device.type == "cuda" else torch.float32

    loader, sampler = make_loader(args, device, dtype, world, rank)
    classes = args.num_classes or (len(loader.loader.dataset.classes) if hasattr(loader, "loader") and hasattr(loader.loader, "dataset") else 1000)
    model = None
    if args.model != "none":
        from torchaug._compat import import_torchvision  # PyPI's CUDA torchvision beside a CPU-only torch too
        torchvision = import_torchvision()
        model = torchvision.models.get_model(args.model, num_classes=max(classes, 2)).to(device, memory_format=torch.channels_last)
        if world > 1:
            model = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-5)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    graph_input = None
    if args.cuda_graph:
        if device.type != "cuda" or world > 1 or model is None:
            raise SystemExit(f"train.py: --cuda-graph needs a model on one CUDA device, got --device {device.type}, "
                             f"{world} processes, --model {args.model}")
        # captured before iter(loader) starts the Prefetcher's threads: no other thread may call
        # CUDA while a stream captures
        graph_input = torch.randn(args.batch_size, 3, 224, 224, device=device).to(dtype=dtype, memory_format=torch.channels_last)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp, cache_enabled=False):
            model = torch.cuda.make_graphed_callables(model, (graph_input,))

    steps_per_epoch = min(len(loader), args.steps or math.inf)
    total = steps_per_epoch * args.epochs
    bar = progress(total, disable=rank != 0)
    step, timed_images, t_start, loss = 0, 0, None, None
    stats = getattr(loader, "stats", None)  # the Prefetcher's host time (torchaug.PrefetchStats)
    stats_at_start = None
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    t_last, n_last = time.perf_counter(), 0
    cpu_start = None
    stamps = []  # the host time at the end of each timed step (its spread: steady or spiky steps)
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for i, (x, y) in enumerate(loader):
            if i >= steps_per_epoch:
                break
            y = y.to(device, non_blocking=True)
            if graph_input is not None and (x.shape != graph_input.shape or x.dtype != graph_input.dtype):
                raise ValueError(f"train.py: --cuda-graph captured the model for batches of {tuple(graph_input.shape)} "
                                 f"{graph_input.dtype}, got {tuple(x.shape)} {x.dtype} at step {step}")
            if model is not None:
                with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
                    loss = criterion(model(x), y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            step += 1
            if step == args.warmup:
                sync()
                t_start = time.perf_counter()
                cpu_start = (time.thread_time(), time.process_time())
                stats_at_start = stats.as_dict() if stats is not None else None
            elif step > args.warmup:
                timed_images += x.shape[0]
            bar.update(1)
            now = time.perf_counter()
            if cpu_start is not None:
                stamps.append(now)
            if now - t_last > 1.0 or step % 20 == 0:
                bar.set_postfix_str(f"{(step - n_last) * x.shape[0] * world / (now - t_last):,.0f} img/s")
                t_last, n_last = now, step
    sync()
    bar.close()
    elapsed = time.perf_counter() - t_start if t_start is not None else float("nan")
    cpu_stop = (time.thread_time(), time.process_time())
    result = {
        "model": args.model, "loader": args.loader, "decode": args.decode if args.loader == "torchaug" else None,
        "world_size": world, "batch_size": args.batch_size,
        "workers": args.workers if args.loader != "synthetic" else 0, "worker_nice": args.worker_nice,
        "cuda_graph": args.cuda_graph, "amp": args.amp, "steps": step, "timed_steps": max(step - args.warmup, 0),
        "img_per_s": timed_images * world / elapsed if timed_images else None,
        "loss": loss.item() if loss is not None else None, "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
    }
    if cpu_start is not None and step > args.warmup:
        # host CPU time per timed step: the training loop's thread (its launches; time it waits, for
        # the GIL or a lock, is not counted) and the whole process (every thread: the input side too)
        timed_steps = step - args.warmup
        result["cpu_ms_per_step"] = {"loop_thread": round(1e3 * (cpu_stop[0] - cpu_start[0]) / timed_steps, 2),
                                     "process": round(1e3 * (cpu_stop[1] - cpu_start[1]) / timed_steps, 2),
                                     "wall": round(1e3 * elapsed / timed_steps, 2)}
        # the host's time between the ends of consecutive timed steps (steady or spiky steps; under
        # DDP every step waits for the slowest rank)
        gaps = sorted(b - a for a, b in zip(stamps, stamps[1:]))
        if gaps:
            result["step_ms"] = {q: round(1e3 * gaps[min(len(gaps) - 1, int(f * len(gaps)))], 2)
                                 for q, f in (("p50", 0.5), ("p90", 0.9), ("max", 1.0))}
    if stats is not None and stats_at_start is not None:
        # the Prefetcher, per batch prepared in the timed window (ms): where the input side's host
        # time went, and which side waited for the other
        result["prefetch_ms_per_batch"] = {k: round(v, 2) if v is not None else None
                                           for k, v in stats.per_batch_ms(stats_at_start).items()}
    if world > 1:
        # (rank 0's figures only: a gloo collective on tensors made in Python, gathering the ranks'
        # figures, can leave its work object for the group's thread to release, which takes the GIL,
        # while the main thread, holding it, joins that thread in the group's destructor: the
        # process never exits)
        dist.destroy_process_group()
    if rank == 0:
        print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
