"""The CUDA decoder's split between nvJPEG's hardware engines and its hybrid decoder's lanes (issue
6), on the device: img/s of torchaug.io.decode_jpeg for several hw_load values and lane counts
(TORCHAUG_NVJPEG_THREADS, read once per process, so one process per count), on the bench's 500x375
files of ~110 KB and ~67 KB, with torchvision.io.decode_jpeg (batched, CUDA) timed in every process
as the peer.

    python3 scripts/decode_split.py [--threads 4,8,12] [--loads 1,0.8,0.7,0.6,0.5,0]
"""
import json
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

    loads = [float(x) for x in os.environ["SPLIT_LOADS"].split(",")]
    out = {}
    for name, (q, grain, seed) in {"110KB": (97, 4.5, 0), "67KB": (93, 4.0, 1)}.items():
        bs = batches_of(make_files(512, q, grain, seed), 256)
        row = {}
        tv = time_cuda(lambda i: tvio.decode_jpeg(bs[i % len(bs)], device="cuda", mode=tvio.ImageReadMode.RGB),
                       iters=len(bs) * 4, warmup=3, repeats=5)
        row["torchvision"] = 256e3 / tv["ms"]
        for load in loads:
            t = time_cuda(lambda i: decode_jpeg(bs[i % len(bs)], device="cuda", hw_load=load), iters=len(bs) * 4,
                          warmup=3, repeats=5)
            row[f"hw_load={load:g}"] = 256e3 / t["ms"]
        out[name] = row
    child_result(out)


def main():
    args = sys.argv[1:]
    threads = [4, 8, 12]
    loads = "1,0.8,0.7,0.6,0.5,0"
    if "--threads" in args:
        threads = [int(x) for x in args[args.index("--threads") + 1].split(",")]
    if "--loads" in args:
        loads = args[args.index("--loads") + 1]
    results = {}
    for n in threads:
        label = f"{n} lanes"
        r, err = run_child(__file__, {"TORCHAUG_NVJPEG_THREADS": str(n), "SPLIT_LOADS": loads}, timeout=400)
        if r is None:
            print(f"{label}: FAILED\n{err}", flush=True)
            continue
        results[label] = r
        for name, row in r.items():
            print(f"{label}, {name}: " + "  ".join(f"{k} {v:8,.0f}" for k, v in row.items()), flush=True)
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "decode_split.json"), "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    child() if "--child" in sys.argv else main()
