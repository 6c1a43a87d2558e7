"""Where a decode call's time goes, from TORCHAUG_DECODE_TRACE=1 lines on stderr: per thread, the
time from each traced step to the next, summed by (step, next step) over the log's later half (after
warm-up), and the calls' total (enter -> exit) and the time between calls.

    python3 scripts/profile/decode_trace.py LOG [LOG...]
"""
import collections
import re
import statistics
import sys

LINE = re.compile(r"torchaug decode_jpeg cuda:\d+ thread (\d+) t=([\d.]+): (.+?) \((-?\d+)\)$")


def summarize(path):
    by_thread = collections.defaultdict(list)
    for line in open(path, errors="replace"):
        m = LINE.search(line.strip())
        if m:
            by_thread[m.group(1)].append((float(m.group(2)), m.group(3)))
    for tid, ev in by_thread.items():
        ev = ev[len(ev) // 2:]  # the later half: past warm-up
        pairs = collections.defaultdict(list)
        calls, between = [], []
        start = last_exit = None
        for (t0, a), (t1, b) in zip(ev, ev[1:]):
            pairs[(a, b)].append((t1 - t0) * 1e3)
        for t, step in ev:
            if step == "enter":
                start = t
                if last_exit is not None:
                    between.append((t - last_exit) * 1e3)
            elif step == "exit" and start is not None:
                calls.append((t - start) * 1e3)
                last_exit = t
        if not calls:
            continue
        print(f"{path}: thread {tid}: {len(calls)} calls, median {statistics.median(calls):.2f} ms in a call, "
              f"{statistics.median(between) if between else float('nan'):.2f} ms between calls (medians)")
        for (a, b), v in sorted(pairs.items(), key=lambda kv: -sum(kv[1]))[:8]:
            print(f"  {a:>28} -> {b:<28} median {statistics.median(v):7.2f} ms, max {max(v):7.2f}, x{len(v)}")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        summarize(p)
