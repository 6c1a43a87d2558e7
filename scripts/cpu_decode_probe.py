"""What one core spends per JPEG when a DataLoader worker decodes (issues 5 and 6: how many images a
decoding worker can feed), on one thread, in this process:
  - torchaug.io.decode_jpeg on the CPU, one batched call (libjpeg-turbo into CHW planes);
  - the same through collate_partly_decoded(cpu_share=1): the decode plus its copy into a pooled
    shared-memory segment, as a worker's collate does;
  - torchvision.io.decode_jpeg per file plus RaggedImages.from_images (HWC packing), as
    examples/train.py's decoding workers do (skipped where torchvision.io cannot decode);
  - PIL's open + convert("RGB") per file.
ms per image, best of 3 passes over the same 256 files.

    python scripts/cpu_decode_probe.py [--n 256] [--quality 90]   (500x375 files made from the shipped photos)
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
from bench_train import make_jpeg_folder  # noqa: E402
from torchaug.io import RaggedImages, collate_partly_decoded, decode_jpeg  # noqa: E402


def best_ms_per_image(fn, n, passes=3):
    fn()
    best = float("inf")
    for _ in range(passes):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return 1e3 * best / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--quality", type=int, default=90)
    args = ap.parse_args()
    torch.set_num_threads(1)  # a DataLoader worker's count
    root = tempfile.mkdtemp(prefix="torchaug_cpudec_")
    kb = make_jpeg_folder(root, n=args.n, quality=args.quality) / 1e3
    paths = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
    arrays = [np.fromfile(p, dtype=np.uint8) for p in paths]
    tensors = [torch.from_numpy(a) for a in arrays]
    rows = [("torchaug decode_jpeg (CPU, one call)", lambda: decode_jpeg(tensors)),
            ("collate_partly_decoded(cpu_share=1): decode + copy to shared memory", lambda: collate_partly_decoded(arrays, cpu_share=1.0))]
    try:
        import torchvision.io as tvio
        tvio.decode_jpeg(tensors[0])
        rows.append(("torchvision.io.decode_jpeg per file + RaggedImages.from_images",
                     lambda: RaggedImages.from_images([tvio.decode_jpeg(t) for t in tensors])))
    except Exception as e:  # noqa: BLE001 - torchvision's image extension does not load beside a CPU torch
        print(f"torchvision.io: skipped ({type(e).__name__}: {str(e)[:80]})")
    try:
        import io

        from PIL import Image
        rows.append(("PIL open + convert('RGB') per file", lambda: [np.asarray(Image.open(io.BytesIO(a.tobytes())).convert("RGB")) for a in arrays]))
    except ImportError:
        pass
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(f"cpu_decode_probe: {len(paths)} 500x375 JPEGs of mean {kb:.0f} KB; one thread; {cpu}, {os.cpu_count()} CPUs")
    for name, fn in rows:
        print(f"  {name:<72} {best_ms_per_image(fn, len(paths)):6.3f} ms/image")


if __name__ == "__main__":
    main()
