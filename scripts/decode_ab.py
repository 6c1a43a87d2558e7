"""A/B of the CUDA decoder's settings on the device (issue 6): nvJPEG with interpolated chroma
upsampling (torchaug's default: matches libjpeg-turbo within 1 level) vs nvJPEG's default
replication (TORCHAUG_NVJPEG_UPSAMPLING=replicate), 1 and 2 lanes, on the bench's 500x375 files
of ~110 KB and ~67 KB, with torchvision.io.decode_jpeg (batched, CUDA) in every process as the
peer. Each setting runs in its own process (the decoder is made once per process).

    python3 scripts/decode_ab.py
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child():
    import torch
    import torchvision.io as tvio

    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    sys.path.insert(0, ROOT)
    from bench_decode import batches_of, make_files
    from harness import time_cuda
    from torchaug.io import decode_jpeg

    out = {}
    for name, (q, grain, seed) in {"110KB": (97, 4.5, 0), "67KB": (93, 4.0, 1)}.items():
        bs = batches_of(make_files(512, q, grain, seed), 256)
        t = time_cuda(lambda i: decode_jpeg(bs[i % len(bs)], device="cuda"), iters=len(bs) * 4, warmup=3, repeats=5)
        tv = time_cuda(lambda i: tvio.decode_jpeg(bs[i % len(bs)], device="cuda", mode=tvio.ImageReadMode.RGB),
                       iters=len(bs) * 4, warmup=3, repeats=5)
        out[name] = {"torchaug": 256e3 / t["ms"], "torchvision": 256e3 / tv["ms"]}
    print("RESULT " + json.dumps(out), flush=True)


def main():
    rows = []
    for upsampling in ("interpolate", "replicate"):
        for lanes in ("1", "2"):
            env = dict(os.environ, TORCHAUG_NVJPEG_UPSAMPLING=upsampling, TORCHAUG_DECODE_LANES=lanes)
            p = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True, timeout=240)
            line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
            if p.returncode != 0 or not line:
                print(f"{upsampling} {lanes} lane(s): FAILED\n{p.stderr[-2000:]}")
                continue
            r = json.loads(line[0][7:])
            rows.append((upsampling, lanes, r))
            print(f"{upsampling:11s} {lanes} lane(s): " + "  ".join(
                f"{k}: torchaug {v['torchaug']:8,.0f} img/s, torchvision {v['torchvision']:8,.0f} img/s" for k, v in r.items()),
                flush=True)


if __name__ == "__main__":
    child() if "--child" in sys.argv else main()
