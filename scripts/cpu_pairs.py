"""Which CPUs of this machine share a physical core, measured rather than read from sysfs.

A virtual machine may report one thread per core (lscpu, thread_siblings_list) while its vCPUs are
hyper-threads of the host: two vCPUs on one host core slow each other down by tens of percent, and a
thread spinning on one (nvJPEG's wait for the engines, a busy worker) slows a training loop pinned to
the other. For each CPU i, a pure-Python loop pinned to i is timed while a process spins on CPU j,
against the same loop with nothing spinning; the CPU j that slows i most, and by how much, is its
likely sibling.

    python3 scripts/cpu_pairs.py [--cpus 0,1,2] [--work 0.05] [--json out.json]

On the H100 machine (session 43) the slowdowns were up to x1.9 but not paired: i slowed by j did
not mean j slowed by i, and a second measurement picked other CPUs. So they show the host's scheduling
of the vCPUs at that moment, not a fixed topology to pin threads by.
"""
import argparse
import json
import multiprocessing as mp
import os
import time


def _spin_on(cpu, flags, index):
    """A process of measure_slowdowns: pinned to cpu, spinning while flags[index] is 1, polling while
    it is 0, gone at -1."""
    os.sched_setaffinity(0, {cpu})
    while flags[index] >= 0:
        if flags[index] == 1:
            for _ in range(20000):
                pass
        else:
            time.sleep(0.0005)


def _timed_loop(n):
    t = time.perf_counter()
    x = 0
    for i in range(n):
        x = (x * 31 + i) & 0xFFFF
    return time.perf_counter() - t


def measure_slowdowns(core, others, work=0.03, reps=3):
    """{CPU j: how much longer a pure-Python loop on `core` takes while a process spins on j than with
    nothing spinning} (medians of `reps` loops of ~`work` s). A virtual machine may show one thread
    per core while two of its CPUs are hyper-threads of one host core: those slow each other down by
    tens of percent, other pairs by a few. The calling thread's CPU set is put back after."""
    others = [j for j in others if j != core]
    ctx = mp.get_context("fork")  # the children run plain Python only (no CUDA, no torch)
    flags = ctx.RawArray("b", len(others))
    procs = [ctx.Process(target=_spin_on, args=(j, flags, k), daemon=True) for k, j in enumerate(others)]
    before = os.sched_getaffinity(0)
    out = {}
    try:
        for p in procs:
            p.start()
        os.sched_setaffinity(0, {core})
        n = 1000
        while _timed_loop(n) < work / 8:
            n *= 2
        n = max(int(n * work / _timed_loop(n)), 1000)

        def median():
            return sorted(_timed_loop(n) for _ in range(reps))[reps // 2]
        for k, j in enumerate(others):
            alone = median()
            flags[k] = 1
            time.sleep(0.005)
            beside = median()
            flags[k] = 0
            out[j] = beside / alone
    finally:
        for k in range(len(others)):
            flags[k] = -1
        for p in procs:
            p.join(2)
            if p.is_alive():
                p.kill()
                p.join()
        os.sched_setaffinity(0, before)
    return out


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
