"""How decode throughput grows with threads calling decode_jpeg at once (each call on its own nvJPEG
decoder, TORCHAUG_NVJPEG_DECODERS=4 here), GPU otherwise idle, batches of 256 of bench_decode's
500x375 files (~110 KB and ~67 KB): 1 thread (CUDA-event timing, as bench_decode), 2, 3 and 4
threads (wall time per batch, bench_decode.threaded_ms), then 1 thread again (a row timed first
can measure slower than the same code timed later in the process).

    python3 scripts/decode_threads.py [--json PATH]
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, ROOT)
os.environ["TORCHAUG_NVJPEG_DECODERS"] = "4"

import torch  # noqa: E402

from bench_decode import batches_of, make_files, single_ms, threaded_ms  # noqa: E402


def main():
    rows = []
    for name, files in (("110KB", make_files(512, 97, 4.5)), ("67KB", make_files(512, 93, 4.0, seed=1))):
        bs = batches_of(files, 256)
        for k in (1, 2, 3, 4, 1):
            ms = (single_ms(bs) if k == 1 else threaded_ms(bs, k, len(bs) * 4))["ms"]
            rows.append({"files": name, "threads": k, "ms_per_batch": ms, "img_per_s": 256e3 / ms})
            print(f"{name} {k} thread(s): {ms:.2f} ms/batch, {256e3 / ms:,.0f} img/s", flush=True)
    if len(sys.argv) > 2 and sys.argv[1] == "--json":
        with open(sys.argv[2], "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
