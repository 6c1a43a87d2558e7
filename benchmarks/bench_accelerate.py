"""The two-line switch on a training script that was not written around torchaug
(benchmarks/reference_train.py, in the shape of torchvision's references/classification): for each
model, in one run on one GPU, the script as it is with 16 DataLoader workers decoding and augmenting
on the CPU, the same script with `torchaug.accelerate(data_loader)` added (at most 4 byte-reading
workers; decode and augmentation on the GPU), and synthetic data (the model's own speed), each in a
process of its own, synthetic and accelerated runs alternating `--repeats` times (medians: one run
of either varies by about 2% from the next). The recipe is the references' ResNet-50 one without
MixUp / CutMix (RandomResizedCrop + flip + TrivialAugmentWide + normalize + RandomErasing(0.1),
label smoothing, AMP), on generated ImageNet-like 500x375 JPEGs. Reports images per second, the
share of synthetic speed (target: accelerate at >= 98%) and the CPU cores the process and its
workers kept busy; then the detection references' loader (CocoDetection wrapped for transforms v2,
the ssd preset: photometric distort, zoom out, IoU crop, flip, sanitize) on a generated COCO-style
dataset, as it is and with the switch, delivering batches to the GPU without a model; then the
accelerated loader alone (no model) over epochs of 4 batches against epochs of 40.

    python benchmarks/bench_accelerate.py [--json out.json] [--markdown out.md] [--quick]
        [--models resnet50,efficientnet_b0] [--stock-workers 16] [--repeats 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import torch
import torchaug  # noqa: F401  (before CUDA starts: it asks CUDA for its 32 work queues)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_train import make_jpeg_folder  # noqa: E402
from harness import Results  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def image_folder(root, unique, total, classes=10):
    """An ImageFolder of `total` files in `classes` folders: `unique` generated JPEGs, hard-linked
    over again (the files' bytes and the page cache are those of `unique` files)."""
    src = os.path.join(root, "unique")
    make_jpeg_folder(src, n=unique, classes=1)
    files = sorted(os.path.join(src, "class0", f) for f in os.listdir(os.path.join(src, "class0")))
    data = os.path.join(root, "train")
    for i in range(total):
        folder = os.path.join(data, f"n{i % classes:08d}")
        os.makedirs(folder, exist_ok=True)
        os.link(files[i % len(files)], os.path.join(folder, f"{i:06d}.jpg"))
    return data, sum(os.path.getsize(f) for f in files) / len(files)


def run(args_list, timeout=900):
    cmd = [sys.executable, os.path.join(HERE, "reference_train.py")] + args_list
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        print(proc.stdout[-2000:], proc.stderr[-4000:], flush=True)
        raise SystemExit(f"bench_accelerate: {' '.join(cmd)} failed (rc {proc.returncode})")
    return json.loads(lines[-1])


def epoch_boundaries(data, batch, epochs, batches_per_epoch, workers):
    """img/s of the accelerated loader alone (no model) over `epochs` epochs of `batches_per_epoch`
    batches (a SubsetRandomSampler over the first files), after one epoch of warm-up."""
    import time

    import torchvision
    from reference_train import ClassificationPresetTrain
    dataset = torchvision.datasets.ImageFolder(data, ClassificationPresetTrain(crop_size=224, auto_augment_policy="ta_wide",
                                                                             random_erase_prob=0.1))
    n = batch * batches_per_epoch
    order = torch.utils.data.SubsetRandomSampler(list(range(n)))
    loader = torchaug.accelerate(torch.utils.data.DataLoader(dataset, batch_size=batch, sampler=order, num_workers=workers,
                                                             pin_memory=True))
    for _ in loader:
        pass
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(epochs):
        for _ in loader:
            pass
    torch.cuda.synchronize()
    return epochs * n / (time.perf_counter() - t0)


class DetectionPresetTrain:
    """torchvision references/detection/presets.py, data_augmentation="ssd", use_v2 (PIL backend)."""

    def __init__(self, hflip_prob=0.5, mean=(123.0, 117.0, 104.0)):
        from collections import defaultdict

        from torchvision import tv_tensors
        from torchvision.transforms import v2 as T
        fill = defaultdict(lambda: mean, {tv_tensors.Mask: 0})
        self.transforms = T.Compose([T.RandomPhotometricDistort(), T.RandomZoomOut(fill=fill), T.RandomIoUCrop(),
                                     T.RandomHorizontalFlip(p=hflip_prob), T.PILToTensor(), T.ToDtype(torch.float, scale=True),
                                     T.ConvertBoundingBoxFormat(tv_tensors.BoundingBoxFormat.XYXY), T.SanitizeBoundingBoxes(),
                                     T.ToPureTensor()])

    def __call__(self, img, target):
        return self.transforms(img, target)


def collate_fn(batch):  # references/detection/utils.py
    return tuple(zip(*batch))


def coco_folder(root, unique, total):
    """A COCO-style detection dataset: `total` image entries over `unique` generated 500x375 JPEGs,
    1-6 boxes each (random categories, box-shaped polygons)."""
    import random
    src = os.path.join(root, "coco")
    make_jpeg_folder(src, n=unique, classes=1)
    files = sorted(os.listdir(os.path.join(src, "class0")))
    g = random.Random(0)
    images, annotations = [], []
    for i in range(total):
        images.append({"id": i + 1, "file_name": f"class0/{files[i % unique]}", "height": 375, "width": 500})
        for _ in range(g.randint(1, 6)):
            w, h = g.uniform(20, 250), g.uniform(20, 180)
            x, y = g.uniform(0, 500 - w), g.uniform(0, 375 - h)
            annotations.append({"id": len(annotations) + 1, "image_id": i + 1, "category_id": g.randint(1, 90),
                                "bbox": [x, y, w, h], "area": w * h, "iscrowd": 0,
                                "segmentation": [[x, y, x + w, y, x + w, y + h, x, y + h]]})
    ann = os.path.join(root, "instances.json")
    with open(ann, "w") as f:
        json.dump({"images": images, "annotations": annotations,
                   "categories": [{"id": c, "name": str(c)} for c in range(1, 91)]}, f)
    return src, ann


def detection_pipeline(src, ann, batch, workers, fast, warm, timed, device="cuda"):
    """img/s and CPU cores of the detection references' loader (ssd preset, batch `batch`) delivering
    its images and targets to the GPU as the references' loop does (`image.to(device)` per image),
    as it is or through torchaug.accelerate, over `timed` batches after `warm`."""
    import time

    from reference_train import cpu_seconds
    from torchvision import datasets
    ds = datasets.wrap_dataset_for_transforms_v2(datasets.CocoDetection(src, ann, transforms=DetectionPresetTrain()),
                                                 target_keys=["boxes", "labels", "image_id"])
    loader = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers, collate_fn=collate_fn)
    if fast:
        loader = torchaug.accelerate(loader, device=device)
    it = iter(loader)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def step():
        images, targets = next(it)
        images = [image.to(device, non_blocking=True) for image in images]
        targets = [{k: v.to(device, non_blocking=True) if isinstance(v, torch.Tensor) else v for k, v in t.items()} for t in targets]
        return len(images)

    for _ in range(warm):
        step()
    sync()
    c0, t0 = cpu_seconds(), time.perf_counter()
    n = sum(step() for _ in range(timed))
    sync()
    wall = time.perf_counter() - t0
    cores = (cpu_seconds() - c0) / wall  # before the iterator ends: its workers still count
    plan = loader.plan if fast else ""
    return n / wall, cores, plan


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--models", default="resnet50,efficientnet_b0")
    ap.add_argument("--stock-workers", type=int, default=16)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3, help="synthetic and accelerated runs per model, alternating")
    args = ap.parse_args()
    if args.repeats < 1:
        raise SystemExit(f"bench_accelerate: --repeats must be >= 1, got {args.repeats}")
    if not torch.cuda.is_available():
        print("bench_accelerate: needs CUDA")
        return
    warmup, steps = (10, 30) if args.quick else (30, 90)
    root = tempfile.mkdtemp(prefix="torchaug_reference_")
    data, mean_bytes = image_folder(root, unique=256 if args.quick else 1024, total=args.batch_size * (steps + 1))
    note = f"{args.batch_size * (steps + 1):,} 500x375 JPEGs (mean {mean_bytes / 1e3:.0f} KB)"
    res = Results("torchaug.accelerate on a references-style training script (TrivialAugmentWide recipe, AMP)")
    common = ["--data-path", data, "-b", str(args.batch_size), "-j", str(args.stock_workers), "--amp",
              "--warmup", str(warmup), "--steps", str(steps)]

    def spread(runs):
        rates = sorted(r["img_per_s"] for r in runs)
        return statistics.median(rates), f"median of {len(rates)} runs ({rates[0]:,.0f}-{rates[-1]:,.0f})"

    for model in args.models.split(","):
        synths, fasts = [], []
        for _ in range(args.repeats):  # alternating, so that a drift of the machine reaches both alike
            synths.append(run(["--model", model, "--synthetic"] + common))
            fasts.append(run(["--model", model, "--accelerate"] + common))
        base, base_runs = spread(synths)
        res.add(f"train {model}", "synthetic data (model only)", args.batch_size, {"ms": 1e3 * args.batch_size / base},
                note=f"{base_runs}; {statistics.median(r['cpu_cores'] for r in synths):.1f} CPU cores")
        stock = run(["--model", model] + common)
        res.add(f"train {model}", f"the script as it is ({args.stock_workers} workers, torchvision v2 on the CPU)",
                args.batch_size, {"ms": 1e3 * args.batch_size / stock["img_per_s"]},
                note=f"{stock['img_per_s'] / base:.1%} of synthetic; one run; {stock['cpu_cores']:.1f} CPU cores")
        fast, fast_runs = spread(fasts)
        mid = min(fasts, key=lambda r: abs(r["img_per_s"] - fast))  # the median run's plan and host times
        workers = mid["plan"].split("workers (")[1].split(")")[0]
        host = ", ".join(f"{k} {v:.1f}" for k, v in mid["prefetch_ms_per_batch"].items() if v is not None)
        res.add(f"train {model}", f"+ torchaug.accelerate ({workers} byte-reading workers, GPU decode)", args.batch_size,
                {"ms": 1e3 * args.batch_size / fast},
                note=f"{fast / base:.1%} of synthetic; {fast_runs}; {statistics.median(r['cpu_cores'] for r in fasts):.1f} "
                     f"CPU cores; {note}; Prefetcher host ms/batch (median run): {host}",
                target=0.98 * base)
        print(mid["plan"], flush=True)
    # the detection references' loader (ssd preset) delivering batches to the GPU, no model
    dbatch, warm, timed = 32, 20, (20 if args.quick else 60)
    src, ann = coco_folder(root, unique=256 if args.quick else 512, total=dbatch * (warm + timed + 1))
    case = f"detection references' loader, ssd preset ({dbatch} 500x375 JPEGs a batch, to the GPU, no model)"
    stock, stock_cores, _ = detection_pipeline(src, ann, dbatch, args.stock_workers, False, warm, timed)
    res.add(case, f"the loader as it is ({args.stock_workers} workers, torchvision v2 on the CPU)", dbatch,
            {"ms": 1e3 * dbatch / stock}, note=f"{stock_cores:.1f} CPU cores")
    fast, fast_cores, plan = detection_pipeline(src, ann, dbatch, args.stock_workers, True, warm, timed)
    res.add(case, "+ torchaug.accelerate (4 byte-reading workers, GPU decode)", dbatch, {"ms": 1e3 * dbatch / fast},
            note=f"{fast / stock:.2f}x the loader as it is; {fast_cores:.1f} CPU cores")
    print(plan, flush=True)
    # the input pipeline alone across epoch boundaries: many short epochs against a few long ones
    short = epoch_boundaries(data, args.batch_size, 10, 4, args.stock_workers)
    long = epoch_boundaries(data, args.batch_size, 2, 40 if not args.quick else 20, args.stock_workers)
    res.add("epoch boundaries (no model)", "torchaug.accelerate, epochs of 40 batches", args.batch_size,
            {"ms": 1e3 * args.batch_size / long})
    res.add("epoch boundaries (no model)", "torchaug.accelerate, epochs of 4 batches", args.batch_size,
            {"ms": 1e3 * args.batch_size / short}, note=f"{short / long:.0%} of the 40-batch epochs' speed")
    res.save(args.json, args.markdown)
    print(res.markdown())


if __name__ == "__main__":
    main()
