"""Who holds the GIL while examples/train.py trains (issue 5: EfficientNet-b0's eager step is
host-bound, and its training loop thread burns more CPU per step beside the Prefetcher): py-spy
samples the running process (--gil: only the thread holding the GIL is sampled) for a few seconds
after a delay, and each sample is put to a thread by the functions on its stack: the training loop,
the Prefetcher's producer, DataLoader's pin-memory thread, or other. A share is the fraction of all
sampling ticks (rate x seconds) at which that thread held the GIL.

    python3 scripts/gil_share.py --py-spy PATH [--delay 30] [--seconds 8] [--rate 500] [--json OUT] -- <train.py arguments>
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KINDS = [("producer", "_produce ("), ("pin thread", "_pin_memory_loop ("), ("loader worker", "_worker_loop ("),
         ("training loop", "main (")]


def kind_of(stack):
    for name, key in KINDS:
        if key in stack:
            return name
    return "other"


def main():
    argv = sys.argv[1:]
    rest = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser()
    ap.add_argument("--py-spy", required=True)
    ap.add_argument("--delay", type=float, default=30)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rate", type=int, default=500)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    train = subprocess.Popen([sys.executable, os.path.join(ROOT, "examples", "train.py"), *rest],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    time.sleep(args.delay)
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "gil.txt")
        spy = subprocess.run([args.py_spy, "record", "--gil", "--threads", "--nonblocking", "-r", str(args.rate),
                              "-d", str(args.seconds), "-f", "raw", "-o", raw, "--pid", str(train.pid)],
                             capture_output=True, text=True)
        lines = open(raw).read().splitlines() if os.path.exists(raw) else []
    out, _ = train.communicate(timeout=600)
    result = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    if not lines:
        print(f"gil_share: py-spy gave no samples (exit {spy.returncode}): {spy.stderr.strip()[-500:]}")
        return
    by_kind, top = collections.Counter(), collections.Counter()
    for line in lines:
        stack, _, count = line.rpartition(" ")
        k = kind_of(stack)
        by_kind[k] += int(count)
        frames = stack.split(";")
        top[(k, frames[-1][:90])] += int(count)
    ticks = args.rate * args.seconds
    total = sum(by_kind.values())
    print(f"gil_share: {' '.join(rest)}\n  {result.get('img_per_s') or 0:,.0f} img/s; {total} samples with the GIL held "
          f"of {ticks:.0f} ticks ({total / ticks:.1%})")
    for k, v in by_kind.most_common():
        print(f"  {k:<14} {v / ticks:6.1%} of the time")
    print("  innermost frames holding it, most samples first:")
    for (k, f), v in top.most_common(14):
        print(f"    {v / ticks:6.2%}  {k:<14} {f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": rest, "ticks": ticks, "by_kind": dict(by_kind), "train": result,
                       "top": [[k, fr, v] for (k, fr), v in top.most_common(40)]}, f, indent=1)


if __name__ == "__main__":
    main()
