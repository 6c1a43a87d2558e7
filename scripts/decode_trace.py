"""Host timeline of a few CUDA decodes with the hardware share split off to the lanes (issue 6, a
diagnostic): run with TORCHAUG_DECODE_TRACE=1, decode_jpeg prints when it starts the lanes, when
the hardware batch call returns and when the lanes are done, so the log shows whether the
hardware call blocks the host and whether the lanes ran beside it.

    TORCHAUG_DECODE_TRACE=1 python3 scripts/decode_trace.py [hw_load ...]
"""
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

from bench_decode import make_files  # noqa: E402
from torchaug.io import decode_jpeg  # noqa: E402


def main():
    loads = [float(x) for x in sys.argv[1:]] or [1.0, 0.8, 0.0]
    files = make_files(256, 97, 4.5)
    for load in loads:
        for _ in range(3):
            decode_jpeg(files, device="cuda", hw_load=load)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        decode_jpeg(files, device="cuda", hw_load=load)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        print(f"hw_load={load:g}: call {1e3 * (t1 - t0):.2f} ms on the host, {1e3 * (t2 - t0):.2f} ms to the GPU's end",
              file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
