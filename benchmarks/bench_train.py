"""End-to-end training throughput: ResNet-50 and EfficientNet-b0, bf16, channels_last,
batch 256, on synthetic data (the model's own speed) vs the torchvision CPU DataLoader (workers
decode and run RandomResizedCrop + flip + RandAugment(2, 9) + normalize) vs torchaug (workers only
decode; the chain runs on the GPU in the Prefetcher), and torchaug with nvJPEG decode and the model
replayed from CUDA graphs against synthetic data so (torchaug_gpu_graph). Every configuration is one run of
examples/train.py in its own process, on ImageNet-like 500x375 JPEGs made from the repo's photos.

    python benchmarks/bench_train.py [--json out.json] [--markdown out.md] [--quick]
        [--models resnet50,efficientnet_b0] [--cpu-workers 16] [--torchaug-workers 12] [--torchaug-nice 10]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Results, photo_views  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_jpeg_folder(root, n=1024, classes=8, size=(500, 375), quality=90, seed=0, grain=0.0):
    """n JPEGs of `size` (random crops of the sample photos, resized, with gaussian grain of std
    `grain` levels as camera photos have), in `classes` folders; returns the mean file size in bytes."""
    total = 0
    for i, out in enumerate(photo_views(n, size, seed, scale_min=0.5, flip=True, grain=grain)):
        folder = os.path.join(root, f"class{i % classes}")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"{i:05d}.jpg")
        out.save(path, quality=quality)
        total += os.path.getsize(path)
    return total / n


def run(args_list, script=None, timeout=900):
    """One training run in a process of its own: `script` (default examples/train.py; a script that
    calls train.main with the same arguments) with args_list.
    Returns the JSON summary train.py prints last."""
    cmd = [sys.executable] + (script or [os.path.join(ROOT, "examples", "train.py")]) + args_list
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
    if proc.returncode != 0 or not lines:
        print(proc.stdout[-2000:], proc.stderr[-4000:], flush=True)
        raise SystemExit(f"bench_train: {' '.join(cmd)} failed (rc {proc.returncode})")
    return json.loads(lines[-1])


def stats_note(r):
    """The Prefetcher's host time per batch of the timed window (train.py's prefetch_ms_per_batch)."""
    st = r.get("prefetch_ms_per_batch")
    if not st:
        return ""
    return "; host ms/batch: " + ", ".join(f"{k} {v:.1f}" for k, v in st.items() if v is not None)


def pipeline_only(data, batch, batches=40):
    """The Prefetcher's work alone (no model): pinned ragged batches of decoded JPEGs -> one H2D copy
    each -> RandomResizedCrop + flip + RandAugment(2, 9) + normalize (bf16, channels_last). Returns
    (img/s, host ms per batch spent in the Prefetcher's Python)."""
    import time
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import train
    import torchaug
    from torchaug.io import RaggedImages

    paths = train.find_images(data)[0]
    ragged = [RaggedImages.from_images([train.decode(paths[(k * batch + i) % len(paths)]) for i in range(batch)]).pin_memory()
              for k in range(4)]
    pf = torchaug.Prefetcher([ragged[i % 4] for i in range(batches)], train.torchaug_gpu_transform(), device="cuda",
                             mean=train.MEAN, std=train.STD, dtype=torch.bfloat16, memory_format=torch.channels_last)
    for _ in pf:  # warm-up epoch
        pass
    torch.cuda.synchronize()
    t0, host = time.perf_counter(), 0.0
    it = iter(pf)
    while True:
        h = time.perf_counter()
        try:
            next(it)
        except StopIteration:
            break
        host += time.perf_counter() - h
    torch.cuda.synchronize()
    return batches * batch / (time.perf_counter() - t0), 1e3 * host / batches


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--models", default="efficientnet_b0,resnet50")
    ap.add_argument("--cpu-workers", type=int, default=16)
    ap.add_argument("--torchaug-workers", type=int, default=12,
                    help="decoding workers of the torchaug_workers rows (8 did not keep up on one H100 machine)")
    ap.add_argument("--torchaug-nice", type=int, default=10,
                    help="niceness added to the torchaug rows' decoding workers (train.py --worker-nice): EfficientNet-b0 reached 98%% "
                         "in 7 of 8 runs with 10, 5 of 7 without, on one H100 machine")
    ap.add_argument("--gpu-decode-workers", type=int, default=2)
    ap.add_argument("--configs", default="pipeline,input_cpu,input_workers,input_gpu,cpu,torchaug_workers,torchaug_gpu,torchaug_gpu_graph",
                    help="which rows to run (synthetic always runs per model; torchaug_gpu_graph also runs synthetic in CUDA graphs, "
                         "its baseline)")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--data", help="an existing ImageFolder (default: 1,024 generated 500x375 JPEGs)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("bench_train: needs CUDA")
        return
    warmup, timed = (10, 20) if args.quick else (50, 100)
    data = args.data
    note = ""
    if data is None:
        data = tempfile.mkdtemp(prefix="torchaug_jpegs_")
        mean_bytes = make_jpeg_folder(data, n=256 if args.quick else 1024)
        note = f"1,024 500x375 JPEGs, mean {mean_bytes / 1e3:.0f} KB"
    res = Results("End-to-end training throughput (examples/train.py: bf16, channels_last, SGD)")
    common = ["--data", data, "--batch-size", str(args.batch_size), "--warmup", str(warmup),
              "--steps", str(warmup + timed), "--length", str(args.batch_size * (warmup + timed + 2))]
    want = set(args.configs.split(","))
    if "pipeline" in want:
        rate, host_ms = pipeline_only(data, args.batch_size)
        res.add("augmentation only (no model)", "torchaug Prefetcher, pinned ragged batches", args.batch_size,
                {"ms": 1e3 * args.batch_size / rate}, note=f"{host_ms:.1f} ms of host time per batch")
    # the input pipelines alone (no model): how many images per second each loader can feed
    inputs = [("input_cpu", "torchvision", args.cpu_workers, "workers"), ("input_workers", "torchaug", args.torchaug_workers, "workers"),
              ("input_workers", "torchaug", args.cpu_workers, "workers"), ("input_gpu", "torchaug", args.gpu_decode_workers, "gpu")]
    for key, loader, workers, decode in inputs:
        if key not in want:
            continue
        nice = ["--worker-nice", str(args.torchaug_nice)] if loader == "torchaug" and decode == "workers" else []
        r = run(["--model", "none", "--loader", loader, "--workers", str(workers), "--decode", decode, *nice] + common)
        what = f"{loader} ({workers} workers{', nvJPEG decode' if loader == 'torchaug' and decode == 'gpu' else ''})"
        res.add("input pipeline only (no model)", what, args.batch_size, {"ms": 1e3 * args.batch_size / r["img_per_s"]},
                note=stats_note(r).lstrip("; "))
    for model in args.models.split(","):
        synth = run(["--model", model, "--loader", "synthetic"] + common)
        base = synth["img_per_s"]
        res.add(f"train {model}", "synthetic data (model only)", args.batch_size, {"ms": 1e3 * args.batch_size / base})
        if "cpu" in want:
            cpu = run(["--model", model, "--loader", "torchvision", "--workers", str(args.cpu_workers)] + common)
            res.add(f"train {model}", f"torchvision v2 CPU DataLoader ({args.cpu_workers} workers)", args.batch_size,
                    {"ms": 1e3 * args.batch_size / cpu["img_per_s"]}, note=f"{cpu['img_per_s'] / base:.1%} of synthetic")
        if "torchaug_workers" in want:
            ta = run(["--model", model, "--loader", "torchaug", "--decode", "workers", "--workers", str(args.torchaug_workers),
                      "--worker-nice", str(args.torchaug_nice)] + common)
            res.add(f"train {model}", f"torchaug Prefetcher ({args.torchaug_workers} decode workers, nice +{args.torchaug_nice})", args.batch_size,
                    {"ms": 1e3 * args.batch_size / ta["img_per_s"]},
                    note=f"{ta['img_per_s'] / base:.1%} of synthetic; {note}{stats_note(ta)}", target=0.98 * base)
        def gpu_decode_row(baseline, graph):
            """torchaug with nvJPEG decode, the model eager or replayed from CUDA graphs (train.py
            --cuda-graph), against `baseline` img/s (synthetic data run the same way)."""
            flag = ["--cuda-graph"] if graph else []
            ta = run(["--model", model, "--loader", "torchaug", "--decode", "gpu", "--workers", str(args.gpu_decode_workers)]
                     + flag + common)
            res.add(f"train {model}", f"torchaug Prefetcher, nvJPEG decode ({args.gpu_decode_workers} byte-reading workers)"
                    + (", model in CUDA graphs" if graph else ""), args.batch_size, {"ms": 1e3 * args.batch_size / ta["img_per_s"]},
                    note=f"{ta['img_per_s'] / baseline:.1%} of synthetic{' in CUDA graphs' if graph else ''}; {note}{stats_note(ta)}",
                    target=0.98 * baseline)
        if "torchaug_gpu" in want:
            gpu_decode_row(base, graph=False)
        if "torchaug_gpu_graph" in want:
            gbase = run(["--model", model, "--loader", "synthetic", "--cuda-graph"] + common)["img_per_s"]
            res.add(f"train {model}", "synthetic data, model in CUDA graphs", args.batch_size, {"ms": 1e3 * args.batch_size / gbase},
                    note=f"{gbase / base:.1%} of eager synthetic")
            gpu_decode_row(gbase, graph=True)
    res.save(args.json, args.markdown)
    print(res.markdown())


if __name__ == "__main__":
    main()
