"""A/B of the CUDA decoder's settings on the device (issue 6): torchaug's defaults (interpolated
chroma upsampling, a wait for the previous batch, preallocated hardware buffers)
against each of them changed (SETTINGS), on the bench's 500x375 files
of ~110 KB and ~67 KB, with torchvision.io.decode_jpeg (batched, CUDA) in every process as the
peer. Each setting runs in its own process (the decoder is made once per process).

    python3 scripts/decode_ab.py
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, ROOT)
from harness import child_result, run_child, time_cuda  # noqa: E402


def child():
    import torchvision.io as tvio

    from bench_decode import batches_of, make_files
    from torchaug.io import decode_jpeg

    out = {}
    for name, (q, grain, seed) in {"110KB": (97, 4.5, 0), "67KB": (93, 4.0, 1)}.items():
        bs = batches_of(make_files(512, q, grain, seed), 256)
        t = time_cuda(lambda i: decode_jpeg(bs[i % len(bs)], device="cuda"), iters=len(bs) * 4, warmup=3, repeats=5)
        tv = time_cuda(lambda i: tvio.decode_jpeg(bs[i % len(bs)], device="cuda", mode=tvio.ImageReadMode.RGB),
                       iters=len(bs) * 4, warmup=3, repeats=5)
        out[name] = {"torchaug": 256e3 / t["ms"], "torchvision": 256e3 / tv["ms"]}
    child_result(out)


SETTINGS = [  # (label, environment of the child); torchaug's defaults first
    ("default", {}),
    ("no wait for the previous batch", {"TORCHAUG_NVJPEG_PREVSYNC": "0"}),
    ("no preallocation", {"TORCHAUG_NVJPEG_PREALLOCATE": "0"}),
    ("neither (before 3a8f68e)", {"TORCHAUG_NVJPEG_PREVSYNC": "0", "TORCHAUG_NVJPEG_PREALLOCATE": "0"}),
    ("replicated chroma", {"TORCHAUG_NVJPEG_UPSAMPLING": "replicate"}),
]


def main():
    for label, env in SETTINGS:
        r, err = run_child(__file__, env)
        if r is None:
            print(f"{label}: FAILED\n{err}")
            continue
        print(f"{label:32s}: " + "  ".join(
            f"{k}: torchaug {v['torchaug']:8,.0f} img/s, torchvision {v['torchvision']:8,.0f} img/s" for k, v in r.items()),
            flush=True)


if __name__ == "__main__":
    child() if "--child" in sys.argv else main()
