"""The longest CUDA API calls of each thread in a Chrome trace of train.py --trace-out (torch.profiler,
CUPTI): which call a thread waits in (a decode's nvJPEG call that lasts a whole training step, say).

    python3 scripts/api_waits.py TRACE.json.gz [--longest 4]
"""
import argparse
import collections
import gzip
import json


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--longest", type=int, default=4, help="the longest calls listed per thread")
    args = ap.parse_args()
    opener = gzip.open if args.trace.endswith(".gz") else open
    with opener(args.trace, "rt") as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    by_thread = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat", "") in ("cuda_runtime", "cuda_driver") and "dur" in e:
            by_thread[e.get("tid")].append(e)
    for tid, ev in sorted(by_thread.items(), key=lambda kv: -sum(e["dur"] for e in kv[1])):
        total = collections.Counter()
        count = collections.Counter()
        for e in ev:
            total[e["name"]] += e["dur"]
            count[e["name"]] += 1
        print(f"thread {tid}: {len(ev)} API calls, {sum(total.values()) / 1e3:.1f} ms in them")
        for name, us in total.most_common(6):
            print(f"  {us / 1e3:9.2f} ms  {name} x{count[name]}")
        for e in sorted(ev, key=lambda e: -e["dur"])[:args.longest]:
            print(f"    longest: {e['dur'] / 1e3:8.2f} ms {e['name']} at {e['ts'] / 1e3:.1f} ms")


if __name__ == "__main__":
    main()
