"""Train a torchvision model with the augmentation on the GPU (torchaug), or with the plain CPU
DataLoader pipeline of torchvision for comparison, or on synthetic data (the model's own speed).

    python examples/train.py                                   # the repo's sample photos, torchaug on the GPU
    python examples/train.py --data /path/to/train --model resnet50 --loader torchvision
    torchrun --nproc_per_node 2 examples/train.py --data /path/to/train   # DDP, one process per GPU

--data is an ImageFolder layout (one folder of JPEGs per class). With --loader torchaug the
DataLoader workers only read and decode JPEGs (--decode workers), or only read them and the GPU
decodes (--decode gpu, nvJPEG), or decode a share of each batch and leave the rest to the GPU
(--decode split --cpu-share 0.5); RandomResizedCrop + flip + RandAugment(2, 9) +
normalize run on the GPU in the Prefetcher's side stream. With --loader torchvision the workers run
torchvision.transforms.v2's same chain on the CPU. The last line printed is a JSON summary with the
measured images per second (of all ranks).
"""
import argparse
import faulthandler
import functools
import json
import math
import os
import signal
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, DistributedSampler

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout

import torchaug  # noqa: E402
import torchaug.transforms as T  # noqa: E402
from torchaug.io import collate_encoded, collate_partly_decoded, collate_ragged  # noqa: E402

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


def split_cores():
    """(one core of the process's allowed CPUs, the allowed CPUs minus that core and its SMT siblings),
    for --pin-loop; None where the process has too few CPUs or no sched_setaffinity (not Linux)."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    core = allowed[0]
    siblings = {core}
    try:
        with open(f"/sys/devices/system/cpu/cpu{core}/topology/thread_siblings_list") as f:
            for part in f.read().strip().split(","):
                a, _, b = part.partition("-")
                siblings.update(range(int(a), int(b or a) + 1))
    except OSError:
        pass
    others = [c for c in allowed if c not in siblings]
    return ({core}, set(others)) if others else None


def make_loader(args, device, dtype, world, rank):
    if args.loader == "synthetic":
        return Synthetic(args.batch_size, args.num_classes or 1000, args.steps or 100, device, dtype), None
    root = args.data or SAMPLES
    length = args.length or (None if args.data else 64 * args.batch_size)
    cpu_chain = torchvision_cpu_transform() if args.loader == "torchvision" else None
    gpu_decode = args.loader == "torchaug" and args.decode in ("gpu", "split")
    dataset = JpegBytesDataset(root, length) if gpu_decode else JpegDataset(root, cpu_chain, length)
    collate = collate_ragged
    if gpu_decode:
        collate = collate_encoded if args.decode == "gpu" else functools.partial(collate_partly_decoded, cpu_share=args.cpu_share)
    sampler = DistributedSampler(dataset, world, rank, shuffle=True, drop_last=True) if world > 1 else None
    loader = DataLoader(
        dataset, batch_size=args.batch_size, shuffle=sampler is None, sampler=sampler, drop_last=True,
        num_workers=args.workers, pin_memory=device.type == "cuda", persistent_workers=args.workers > 0,
        prefetch_factor=args.prefetch_factor if args.workers > 0 else None,
        collate_fn=collate if args.loader == "torchaug" else None,
        worker_init_fn=functools.partial(nice_worker, increment=args.worker_nice) if args.worker_nice else None,
    )
    if args.loader == "torchvision":
        return TorchvisionLoader(loader, device, dtype), sampler
    prefetcher = torchaug.Prefetcher(loader, torchaug_gpu_transform(), device=device, depth=args.depth,
                                     mean=MEAN, std=STD, dtype=dtype, memory_format=torch.channels_last,
                                     timeout=args.timeout, threads=args.prefetch_threads,
                                     priority=args.stream_priority)
    return prefetcher, sampler


def _union(intervals):
    """[(start, end)] sorted, merged."""
    out = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _length(merged):
    return sum(b - a for a, b in merged)


def _intersection(xs, ys):
    """Total length where two merged interval lists overlap."""
    i = j = 0
    total = 0.0
    while i < len(xs) and j < len(ys):
        a, b = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        total += max(0.0, b - a)
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return total


def stream_summary(trace, steps):
    """Where the GPU's time went in a traced window (a torch.profiler Chrome trace, CUDA activity):
    the model's stream (the one with the most kernel time) against all the others, ms per step.
    model_kernel_ms: its kernels' summed time; model_idle_ms: its span (first kernel start to last
    end) minus the time it ran a kernel (the model waiting for the host or for a batch);
    model_overlap_ms: the time it ran a kernel while another stream also did (where the pipeline's
    kernels and the model's share the GPU); others_kernel_ms / others_busy_ms: the other streams'
    kernels summed and their union; memcpy_ms: copies on any stream."""
    by_stream, copies = {}, []
    for e in trace["traceEvents"] if isinstance(trace, dict) else trace:
        cat = e.get("cat", "")
        if e.get("ph") != "X" or "dur" not in e:
            continue
        if cat == "kernel":
            by_stream.setdefault(e.get("args", {}).get("stream"), []).append((e["ts"], e["ts"] + e["dur"]))
        elif cat in ("gpu_memcpy", "gpu_memset"):
            copies.append((e["ts"], e["ts"] + e["dur"]))
    if not by_stream:
        return None
    model = max(by_stream, key=lambda k: sum(b - a for a, b in by_stream[k]))
    mine = _union(by_stream[model])
    others = _union([iv for k, v in by_stream.items() if k != model for iv in v])
    span = mine[-1][1] - mine[0][0]
    per = 1e-3 / max(steps, 1)  # us -> ms per step
    return {
        "steps": steps, "model_stream": model, "model_kernels": len(by_stream[model]) / max(steps, 1),
        "model_span_ms": span * per, "model_kernel_ms": sum(b - a for a, b in by_stream[model]) * per,
        "model_idle_ms": (span - _length(mine)) * per, "model_overlap_ms": _intersection(mine, others) * per,
        "others_kernel_ms": sum(b - a for k, v in by_stream.items() if k != model for a, b in v) * per,
        "others_busy_ms": _length(others) * per, "others_streams": len(by_stream) - 1,
        "memcpy_ms": sum(b - a for a, b in copies) * per,
    }


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
    p.add_argument("--model", default="resnet50", help="a torchvision.models name (resnet50, efficientnet_b0, ...), or none (the input pipeline alone)")
    p.add_argument("--loader", choices=["torchaug", "torchvision", "synthetic"], default="torchaug")
    p.add_argument("--decode", choices=["gpu", "workers", "split"], default=None,
                   help="torchaug loader: decode JPEGs on the GPU (workers only read bytes; default on CUDA), "
                        "in the workers, or split: the workers decode --cpu-share of each batch, the GPU the rest")
    p.add_argument("--cpu-share", type=float, default=0.5,
                   help="--decode split: the share of each batch the workers decode on the CPU")
    p.add_argument("--batch-size", type=int, default=256, help="per GPU")
    p.add_argument("--workers", type=int, default=8,
                   help="DataLoader workers; --decode workers needs ~12 on a 16-core H100 machine to feed ResNet-50 (8 fell behind on one), --decode gpu 2")
    p.add_argument("--worker-nice", type=int, default=0,
                   help="raise the DataLoader workers' niceness by this much (0..19): the training thread first where cores run short")
    p.add_argument("--prefetch-factor", type=int, default=2)
    p.add_argument("--depth", type=int, default=2, help="batches the Prefetcher prepares ahead")
    p.add_argument("--prefetch-threads", type=int, default=1,
                   help="the Prefetcher's producer threads (each decodes its batch on its own nvJPEG decoder)")
    p.add_argument("--stream-priority", type=int, default=0,
                   help="CUDA priority of the Prefetcher's side streams (0: the model's; lower: more urgent)")
    p.add_argument("--model-priority", type=int, default=0,
                   help="CUDA priority of the stream the training loop runs on (0: the default stream; lower, e.g. -1: more "
                        "urgent than the Prefetcher's side streams, so that the GPU schedules the model's blocks first)")
    p.add_argument("--side-stream", action="store_true",
                   help="the training loop on a stream of its own (non-blocking, at --model-priority) instead of the "
                        "default stream, as --model-priority other than 0 does")
    p.add_argument("--cuda-graph", action="store_true",
                   help="the model's forward and backward captured once as CUDA graphs (torch.cuda.make_graphed_callables) "
                        "and replayed each step: the step's host work is a few launches, not one per kernel (one CUDA "
                        "device; every batch must have --batch-size images of 224x224)")
    p.add_argument("--pin-loop", action="store_true",
                   help="the training loop's thread alone on one core (its SMT siblings left idle); the workers, the "
                        "Prefetcher's threads and the rest of the process on the other cores (Linux)")
    p.add_argument("--timeout", type=float, default=0,
                   help="seconds the Prefetcher waits for a batch before it raises, showing where its thread is (0: no limit)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--steps", type=int, default=None, help="at most this many steps per epoch")
    p.add_argument("--length", type=int, default=None, help="dataset length (repeats the files)")
    p.add_argument("--num-classes", type=int, default=None)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--amp", choices=["bf16", "none"], default="bf16")
    p.add_argument("--warmup", type=int, default=30, help="steps before the timed window")
    p.add_argument("--device", default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--trace-out", default=None,
                   help="with --trace-steps: the traced steps' Chrome trace (CUPTI: kernels, copies, CUDA API calls of every "
                        "thread) written there, gzipped")
    p.add_argument("--trace-steps", type=int, default=0,
                   help="after the timed window, this many more steps under CUPTI (CUDA only): the model stream's "
                        "kernel time, idle time and overlap with the other streams per step (in the JSON's kernel_trace)")
    args = p.parse_args(argv)
    if hasattr(signal, "SIGUSR1"):  # `kill -USR1 <pid>` prints every thread's Python stack (a stalled run)
        faulthandler.register(signal.SIGUSR1, all_threads=True)

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
    if args.decode is None:
        args.decode = "gpu" if device.type == "cuda" else "workers"
    amp = args.amp == "bf16"
    dtype = torch.bfloat16 if amp and device.type == "cuda" else torch.float32

    loader, sampler = make_loader(args, device, dtype, world, rank)
    classes = args.num_classes or (len(loader.loader.dataset.classes) if hasattr(loader, "loader") and hasattr(loader.loader, "dataset") else 1000)
    model = None
    if args.model != "none":
        import torchvision
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
    trace_from = total - args.trace_steps if args.trace_steps > 0 and device.type == "cuda" else None
    t_stop, prof, cpu_start, cpu_stop = None, None, None, None
    restore_stream = torch.cuda.current_stream(device) if device.type == "cuda" else None
    restore_cpus = os.sched_getaffinity(0) if args.pin_loop and hasattr(os, "sched_getaffinity") else None
    if (args.model_priority != 0 or args.side_stream) and device.type == "cuda":
        # the loop's kernels on a stream of that priority (the thread's current stream: the
        # Prefetcher hands each batch over to it); it first waits for the setup queued so far
        loop_stream = torch.cuda.Stream(device, priority=args.model_priority)
        loop_stream.wait_stream(torch.cuda.current_stream(device))
        torch.cuda.set_stream(loop_stream)
    cores = split_cores() if args.pin_loop else None
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        if cores is not None:  # the threads and worker processes iter() starts inherit the other cores
            os.sched_setaffinity(0, cores[1])
        it = iter(loader)
        if cores is not None:  # then this thread alone on its core (0: the calling thread)
            os.sched_setaffinity(0, cores[0])
        for i, (x, y) in enumerate(it):
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
            elif step > args.warmup and t_stop is None:
                timed_images += x.shape[0]
            if step == trace_from and t_start is not None:  # the timed window ends; the traced one starts
                sync()
                t_stop = time.perf_counter()
                cpu_stop = (time.thread_time(), time.process_time())
                prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
                prof.__enter__()
            bar.update(1)
            now = time.perf_counter()
            if now - t_last > 1.0 or step % 20 == 0:
                bar.set_postfix_str(f"{(step - n_last) * x.shape[0] * world / (now - t_last):,.0f} img/s")
                t_last, n_last = now, step
    sync()
    bar.close()
    if restore_stream is not None:  # main() may run again in this process (the tests)
        torch.cuda.set_stream(restore_stream)
    if restore_cpus is not None:
        os.sched_setaffinity(0, restore_cpus)
    elapsed = (t_stop or time.perf_counter()) - t_start if t_start is not None else float("nan")
    cpu_stop = cpu_stop or (time.thread_time(), time.process_time())
    kernel_trace = None
    if prof is not None:
        prof.__exit__(None, None, None)
        with tempfile.TemporaryDirectory() as tmp:
            prof.export_chrome_trace(os.path.join(tmp, "trace.json"))
            with open(os.path.join(tmp, "trace.json"), "rb") as f:
                kernel_trace = stream_summary(json.load(f), step - trace_from)
                if args.trace_out:  # the exported file itself, gzipped
                    import gzip
                    import shutil
                    f.seek(0)
                    with gzip.open(args.trace_out, "wb") as out:
                        shutil.copyfileobj(f, out)
    result = {
        "model": args.model, "loader": args.loader, "decode": args.decode if args.loader == "torchaug" else None,
        "cpu_share": args.cpu_share if args.loader == "torchaug" and args.decode == "split" else None, "world_size": world, "batch_size": args.batch_size,
        "workers": args.workers if args.loader != "synthetic" else 0, "worker_nice": args.worker_nice,
        "model_priority": args.model_priority, "side_stream": args.side_stream, "cuda_graph": args.cuda_graph, "loop_core": sorted(cores[0]) if cores else None, "steps": step, "timed_steps": max(step - args.warmup, 0),
        "img_per_s": timed_images * world / elapsed if timed_images else None,
        "loss": loss.item() if loss is not None else None, "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
    }
    if cpu_start is not None and step > args.warmup:
        # host CPU time per timed step: the training loop's thread (its launches; time it waits, for
        # the GIL or a lock, is not counted) and the whole process (every thread: the input side too)
        timed_steps = (trace_from if t_stop is not None else step) - args.warmup
        result["cpu_ms_per_step"] = {"loop_thread": round(1e3 * (cpu_stop[0] - cpu_start[0]) / timed_steps, 2),
                                     "process": round(1e3 * (cpu_stop[1] - cpu_start[1]) / timed_steps, 2),
                                     "wall": round(1e3 * elapsed / timed_steps, 2)}
    if kernel_trace is not None:
        result["kernel_trace"] = kernel_trace
    if stats is not None and stats_at_start is not None:
        # rank 0's Prefetcher, per batch prepared in the timed window (ms): where the input side's
        # host time went, and which side waited for the other
        result["prefetch_ms_per_batch"] = {k: round(v, 2) if v is not None else None
                                           for k, v in stats.per_batch_ms(stats_at_start).items()}
    if world > 1:
        dist.destroy_process_group()
    if rank == 0:
        print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
