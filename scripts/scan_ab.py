"""A/B of a switch of the CUDA decoder that is read at each call (issue 6), so that both settings run in
one process, in interleaved rounds (the order flipped every round):
- --switch scan (the default): where the files' scans are checked, beside the hardware batch's decode
  (the default) or before it (TORCHAUG_DECODE_SCAN_BESIDE=0, the order of earlier versions);
- --switch yuv: who converts the hardware batch to RGB, torchaug's one kernel on nvJPEG's YUV planes
  (TORCHAUG_NVJPEG_YUV=1) or nvJPEG, a kernel per image (0, the default).
On bench_decode's 500x375 files of ~110 KB and ~67 KB, 512 of each, in batches of 256:
- one caller from one pinned buffer (as collate_encoded + pin_memory=True hand them over), with the
  caller's intra-op threads (the check on up to 4 threads) and with 1 (a Prefetcher producer's
  setting: the check on one thread);
- one caller from pageable tensors;
- torchvision.io.decode_jpeg (batched, CUDA) on the pinned files in every round, the peer.
CUDA-event timing (bench_decode.single_ms: median of 5 blocks of 4 calls). Prints img/s per round and
the medians; --json writes the rows.

    python3 scripts/scan_ab.py [--switch scan|yuv] [--rounds 3] [--json out.json]
"""
import argparse
import json
import os
import statistics
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, ROOT)
from bench_decode import batches_of, make_files, pinned_views, single_ms  # noqa: E402
from harness import environment, time_cuda  # noqa: E402

SWITCHES = {"scan": ("TORCHAUG_DECODE_SCAN_BESIDE", {"beside": "1", "before": "0"}),
            "yuv": ("TORCHAUG_NVJPEG_YUV", {"own": "1", "nvjpeg": "0"})}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--switch", choices=sorted(SWITCHES), default="scan")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    var, SETTINGS = SWITCHES[args.switch]
    a, b = SETTINGS
    import torchvision.io as tvio

    default_threads = torch.get_num_threads()
    rows = []
    for name, (q, grain, seed) in {"110KB": (97, 4.5, 0), "67KB": (93, 4.0, 1)}.items():
        files = make_files(512, q, grain, seed)
        mean_kb = sum(f.numel() for f in files) / len(files) / 1e3
        feeds = {"pinned": batches_of(pinned_views(files), 256), "pageable": batches_of(files, 256)}
        for r in range(args.rounds):
            order = list(SETTINGS) if r % 2 == 0 else list(SETTINGS)[::-1]
            for setting in order:
                os.environ[var] = SETTINGS[setting]
                for feed, threads in (("pinned", default_threads), ("pinned", 1), ("pageable", default_threads)):
                    torch.set_num_threads(threads)
                    t = single_ms(feeds[feed])
                    rows.append({"files": name, "mean_kb": mean_kb, "round": r, "setting": setting, "feed": feed,
                                 "threads": threads, "ms": t["ms"], "img_per_s": 256e3 / t["ms"]})
                    print(f"{name} ({mean_kb:.0f} KB) round {r} {setting:6s} {feed:8s} threads {threads:2d}: "
                          f"{256e3 / t['ms']:8,.0f} img/s", flush=True)
            torch.set_num_threads(default_threads)
            tv = time_cuda(lambda i: tvio.decode_jpeg(feeds["pinned"][i % 2], device="cuda", mode=tvio.ImageReadMode.RGB),
                           iters=4, warmup=3, repeats=5)
            rows.append({"files": name, "mean_kb": mean_kb, "round": r, "setting": "torchvision", "feed": "pinned",
                         "threads": default_threads, "ms": tv["ms"], "img_per_s": 256e3 / tv["ms"]})
            print(f"{name} round {r} torchvision pinned: {256e3 / tv['ms']:8,.0f} img/s", flush=True)
    os.environ.pop(var, None)
    print(f"\n| files | feed | threads | {a} (median img/s) | {b} | {a} / {b} | torchvision pinned |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for name in ("110KB", "67KB"):
        tv = statistics.median(x["img_per_s"] for x in rows if x["files"] == name and x["setting"] == "torchvision")
        for feed, threads in (("pinned", default_threads), ("pinned", 1), ("pageable", default_threads)):
            med = {s: statistics.median(x["img_per_s"] for x in rows if x["files"] == name and x["setting"] == s
                                        and x["feed"] == feed and x["threads"] == threads) for s in SETTINGS}
            print(f"| {name} | {feed} | {threads} | {med[a]:,.0f} | {med[b]:,.0f} | "
                  f"{med[a] / med[b]:.3f} | {tv:,.0f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"env": environment(), "switch": var, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
