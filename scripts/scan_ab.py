"""A/B of where the CUDA decoder checks the files' scans (issue 6): beside the hardware batch's decode
(the default) against before it (TORCHAUG_DECODE_SCAN_BESIDE=0, the order of earlier versions). The
switch is read at each call, so both run in one process, in interleaved rounds (the order flipped
every round), on bench_decode's 500x375 files of ~110 KB and ~67 KB, 512 of each, in batches of 256:
- one caller from one pinned buffer (as collate_encoded + pin_memory=True hand them over), with the
  caller's intra-op threads (the check on up to 4 threads) and with 1 (a Prefetcher producer's
  setting: the check on one thread);
- one caller from pageable tensors;
- torchvision.io.decode_jpeg (batched, CUDA) on the pinned files in every round, the peer.
CUDA-event timing (bench_decode.single_ms: median of 5 blocks of 4 calls). Prints img/s per round and
the medians; --json writes the rows.

    python3 scripts/scan_ab.py [--rounds 3] [--json out.json]
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

SETTINGS = {"beside": "1", "before": "0"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
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
                os.environ["TORCHAUG_DECODE_SCAN_BESIDE"] = SETTINGS[setting]
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
    os.environ.pop("TORCHAUG_DECODE_SCAN_BESIDE", None)
    print("\n| files | feed | threads | beside (median img/s) | before | beside / before | torchvision pinned |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for name in ("110KB", "67KB"):
        tv = statistics.median(x["img_per_s"] for x in rows if x["files"] == name and x["setting"] == "torchvision")
        for feed, threads in (("pinned", default_threads), ("pinned", 1), ("pageable", default_threads)):
            med = {s: statistics.median(x["img_per_s"] for x in rows if x["files"] == name and x["setting"] == s
                                        and x["feed"] == feed and x["threads"] == threads) for s in SETTINGS}
            print(f"| {name} | {feed} | {threads} | {med['beside']:,.0f} | {med['before']:,.0f} | "
                  f"{med['beside'] / med['before']:.3f} | {tv:,.0f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"env": environment(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
