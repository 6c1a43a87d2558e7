"""Who holds the GIL while examples/train.py trains (issue 5: EfficientNet-b0's eager step is
host-bound, and its training loop thread burns more CPU per step beside the Prefetcher): py-spy
samples the running process (--gil: only the thread holding the GIL is sampled) for a few seconds
after a delay, and each sample is put to a thread by the functions on its stack: the training loop,
the Prefetcher's producer, DataLoader's pin-memory thread, or other. A share is the fraction of all
sampling ticks (rate x seconds) at which that thread held the GIL.

    python3 scripts/gil_share.py --py-spy PATH [--delay 30] [--seconds 8] [--rate 500] [--json OUT] -- <train.py arguments>

With --native every thread is sampled while it runs (not only the GIL's holder), native frames
included: a thread's share is then the CPU it burns, and each sample is also put to the library its
innermost frame is in (libcuda, libtorch_cuda, libpython, libc...), to tell where a loop thread that
burns more CPU per step beside the Prefetcher spends it.
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


def library_of(frame):
    """The file a py-spy frame is in, without its directory and version suffix: "foo (libcuda.so.1)"
    -> "libcuda.so", "bar (/x/y.py:12)" -> "y.py"."""
    where = frame.rpartition(" (")[2].rstrip(")") if " (" in frame else frame
    base = os.path.basename(where.split(":")[0])
    return base.split(".so")[0] + ".so" if ".so" in base else base


def main():
    argv = sys.argv[1:]
    rest = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser()
    ap.add_argument("--py-spy", required=True)
    ap.add_argument("--delay", type=float, default=30)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rate", type=int, default=500)
    ap.add_argument("--native", action="store_true", help="every running thread, native frames, by library (see above)")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    train = subprocess.Popen([sys.executable, os.path.join(ROOT, "examples", "train.py"), *rest],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    time.sleep(args.delay)
    seconds = max(int(round(args.seconds)), 1)  # py-spy takes whole seconds
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "gil.txt")
        # native stacks need the process paused at each sample (py-spy refuses --nonblocking with them)
        mode = ["--native"] if args.native else ["--gil", "--nonblocking"]
        spy = subprocess.run([args.py_spy, "record", *mode, "--threads", "-r", str(args.rate),
                              "-d", str(seconds), "-f", "raw", "-o", raw, "--pid", str(train.pid)],
                             capture_output=True, text=True)
        lines = open(raw).read().splitlines() if os.path.exists(raw) else []
    out, _ = train.communicate(timeout=600)
    result = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    if not lines:
        print(f"gil_share: py-spy gave no samples (exit {spy.returncode}): {spy.stderr.strip()[-500:]}")
        return
    by_kind, top, by_lib = collections.Counter(), collections.Counter(), collections.Counter()
    for line in lines:
        stack, _, count = line.rpartition(" ")
        k = kind_of(stack)
        by_kind[k] += int(count)
        frames = stack.split(";")
        top[(k, frames[-1][:90])] += int(count)
        by_lib[(k, library_of(frames[-1]))] += int(count)
    ticks = args.rate * seconds
    total = sum(by_kind.values())
    what = "samples of running threads" if args.native else "samples with the GIL held"
    print(f"gil_share: {' '.join(rest)}\n  {result.get('img_per_s') or 0:,.0f} img/s; {total} {what} "
          f"of {ticks:.0f} ticks ({total / ticks:.1%})")
    if result.get("cpu_ms_per_step"):
        print("  host ms/step (whole timed window, sampling included): " + ", ".join(f"{k} {v:.2f}" for k, v in result["cpu_ms_per_step"].items()))
    for k, v in by_kind.most_common():
        print(f"  {k:<14} {v / ticks:6.1%} of the time")
    if args.native:
        print("  by thread and the library of the innermost frame (share of the time):")
        for (k, lib), v in by_lib.most_common(16):
            print(f"    {v / ticks:6.2%}  {k:<14} {lib}")
    print("  innermost frames, most samples first:")
    for (k, f), v in top.most_common(24 if args.native else 14):
        print(f"    {v / ticks:6.2%}  {k:<14} {f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": rest, "native": args.native, "ticks": ticks, "by_kind": dict(by_kind), "train": result,
                       "by_library": [[k, lib, v] for (k, lib), v in by_lib.most_common()],
                       "top": [[k, fr, v] for (k, fr), v in top.most_common(40)]}, f, indent=1)


if __name__ == "__main__":
    main()
