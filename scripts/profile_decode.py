"""What a batch's decode and augmentation cost the GPU's SMs, kernel by kernel (torch.profiler's CUDA
activities, which list every kernel and copy of the process, nvJPEG's own included): batches of
256 of bench_decode's 500x375 files (~110 KB and ~67 KB), decode_jpeg_ragged on the hardware
decoder, then the training pipeline's chain on the decoded batch (RandomResizedCrop(224) + flip +
RandAugment(2, 9) + Normalize to bf16 channels_last, as examples/train.py's Prefetcher runs it).

The SM time per batch is what a decode or a chain takes from a model training beside it (case 5
of benchmarks/RESULTS.md: ~4% of ResNet-50's step is lost, about 2.5 ms a batch).

--pinned: instead, the decode rate alone of the same batches read from pageable memory (a tensor per
file, as bench_decode's rows) and from one pinned buffer (what a DataLoader with pin_memory=True
hands the Prefetcher), torchaug and torchvision.io.decode_jpeg (batched, CUDA) alternating.

    python3 scripts/profile_decode.py [--decode-only | --pinned] [--json PATH]
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

import torchaug.transforms as T  # noqa: E402
from bench_decode import batches_of, make_files, pinned_views, single_ms  # noqa: E402
from torchaug.io import decode_jpeg_ragged  # noqa: E402

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
CALLS = 10


def kernels_of(fn, calls=CALLS):
    """{name: (count, total us)} of the CUDA activities (kernels, copies, sets) of `calls` calls of fn
    after warm-up calls."""
    for i in range(3):
        fn(i)
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for i in range(calls):
            fn(i)
        torch.cuda.synchronize()
    rows = {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        n, us = rows.get(e.name, (0, 0.0))
        rows[e.name] = (n + 1, us + e.device_time)
    return rows


def report(title, rows, calls=CALLS):
    print(f"## {title} ({calls} calls; us per call)", flush=True)
    total_k = 0.0
    out = []
    for name, (n, us) in sorted(rows.items(), key=lambda kv: -kv[1][1]):
        kind = "copy" if name.lower().startswith(("memcpy", "memset")) else "kernel"
        if kind == "kernel":
            total_k += us
        out.append({"name": name, "kind": kind, "count_per_call": n / calls, "us_per_call": us / calls})
        print(f"  {us / calls:10.1f} us  x{n / calls:6.1f}  {kind:6s}  {name[:110]}", flush=True)
    print(f"  kernels in all: {total_k / calls:.1f} us per call", flush=True)
    return {"title": title, "kernel_us_per_call": total_k / calls, "rows": out}


def pinned_rates():
    import torchvision.io as tvio
    from harness import time_cuda

    results = []
    for name, files in (("110KB", make_files(512, 97, 4.5)), ("67KB", make_files(512, 93, 4.0, seed=1))):
        sets = {"pageable": batches_of(files, 256), "pinned": batches_of(pinned_views(files), 256)}
        decoders = {"torchaug": lambda b: decode_jpeg_ragged(b, device="cuda"),
                    "torchvision": lambda b: tvio.decode_jpeg(b, device="cuda", mode=tvio.ImageReadMode.RGB)}
        rows = {}
        for rnd in range(2):
            for dec, fn in decoders.items():
                for mem, bs in sets.items():
                    ms = time_cuda(lambda i: fn(bs[i % len(bs)]), iters=len(bs) * 2, warmup=3, repeats=5)["ms"]
                    rows.setdefault(f"{dec} {mem}", []).append(ms)
        for key, ms in rows.items():
            print(f"decode 256 x {name}, {key:22s}: {' / '.join(f'{m:.2f}' for m in ms)} ms per batch, best "
                  f"{256e3 / min(ms):,.0f} img/s", flush=True)
            results.append({"files": name, "row": key, "ms_per_batch": ms, "img_s_best": 256e3 / min(ms)})
    return results


def main():
    if "--pinned" in sys.argv:
        results = pinned_rates()
        if "--json" in sys.argv:
            with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
                json.dump({"device": torch.cuda.get_device_name(), "pinned": results}, f, indent=1)
        return
    results = []
    chain = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.RandAugment(2, 9),
                       T.Normalize(MEAN, STD, out_dtype=torch.bfloat16, memory_format=torch.channels_last)])
    for name, files in (("110KB", make_files(512, 97, 4.5)), ("67KB", make_files(512, 93, 4.0, seed=1))):
        bs = batches_of(files, 256)
        results.append(report(f"decode_jpeg_ragged, 256 files of {name}",
                              kernels_of(lambda i: decode_jpeg_ragged(bs[i % len(bs)], device="cuda"))))
        ms = single_ms(bs)["ms"]
        results[-1]["decode_ms_per_batch"] = ms
        print(f"  decode_jpeg alone, GPU otherwise idle: {ms:.2f} ms per batch, {256e3 / ms:,.0f} img/s", flush=True)
        if "--decode-only" not in sys.argv:
            decoded = [decode_jpeg_ragged(b, device="cuda") for b in bs]
            results.append(report(f"chain on the decoded batch ({name})", kernels_of(lambda i: chain(decoded[i % len(bs)]))))
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "upsampling": os.environ.get("TORCHAUG_NVJPEG_UPSAMPLING"),
                       "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
