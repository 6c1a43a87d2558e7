"""Which CPUs of this machine share a physical core, measured rather than read from sysfs.

A virtual machine may report one thread per core (lscpu, thread_siblings_list) while its vCPUs are
hyper-threads of the host: two vCPUs on one host core slow each other down by tens of percent, and a
thread spinning on one (nvJPEG's wait for the engines, a busy worker) slows a training loop pinned to
the other. For each CPU i, a pure-Python loop pinned to i is timed while a process spins on CPU j,
against the same loop with nothing spinning; the CPU j that slows i most, and by how much, is its
likely sibling.

    python3 scripts/cpu_pairs.py [--cpus 0,1,2] [--work 0.05] [--json out.json]
"""
import argparse
import json
import multiprocessing as mp
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from train import measure_slowdowns  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpus", default=None, help="comma-separated CPUs to probe (default: every allowed CPU)")
    ap.add_argument("--work", type=float, default=0.05, help="seconds of the timed loop per measurement")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    allowed = sorted(os.sched_getaffinity(0))
    probe = [int(c) for c in args.cpus.split(",")] if args.cpus else allowed
    t0 = time.perf_counter()
    rows = {}
    for i in probe:
        slow = measure_slowdowns(i, [j for j in allowed if j != i], args.work)
        worst = max(slow, key=slow.get)
        rows[i] = slow
        others = sorted(v for j, v in slow.items() if j != worst)
        rest = f"; the others x{others[0]:.2f}-x{others[-1]:.2f} (median x{others[len(others) // 2]:.2f})" if others else ""
        print(f"cpu {i:3d}: slowest beside cpu {worst:3d} x{slow[worst]:.2f}{rest}", flush=True)
    print(f"{len(probe)} CPUs probed in {time.perf_counter() - t0:.1f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpus": allowed, "slowdown": {str(i): {str(j): v for j, v in r.items()} for i, r in rows.items()}}, f, indent=1)


if __name__ == "__main__":
    mp.set_start_method("fork")
    main()
