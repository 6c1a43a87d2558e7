"""The GPU's SM clock, power draw and throttle reasons during each run of scripts/train_ab.py: the
samples of gpu_session.sh's "smi" step (nvidia-smi every 200 ms, $OUT/smi.csv) that fall in the
middle half of each run's window (train_ab's unix_start / unix_end: the half that leaves out the
process start, the model build and the warm-up, and the exit), averaged per run.

    python3 scripts/smi_windows.py out/smi.csv out/train_ab.json
"""
import collections
import datetime
import json
import statistics
import sys


def samples(path):
    out = []
    with open(path) as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            try:
                t = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
                out.append((t, float(parts[1]), float(parts[3]), parts[6] if len(parts) > 6 else ""))
            except (ValueError, IndexError):
                continue  # a header or an error line
    return out


def main(smi_csv, train_json):
    smi = samples(smi_csv)
    with open(train_json) as f:
        rows = json.load(f)["rows"]
    print("| model | round | config | img/s | samples | SM clock MHz (mean, min) | power W (mean, max) | throttle reasons (count) |")
    print("| --- | ---: | --- | ---: | ---: | --- | --- | --- |")
    for r in rows:
        a, b = r.get("unix_start"), r.get("unix_end")
        if a is None:
            continue
        lo, hi = a + (b - a) * 0.25, a + (b - a) * 0.75
        win = [s for s in smi if lo <= s[0] <= hi]
        if not win:
            print(f"| {r['model']} | {r['round']} | {r['config']} | {r['img_per_s']:,.0f} | 0 | | | |")
            continue
        clocks, power = [s[1] for s in win], [s[2] for s in win]
        reasons = collections.Counter(s[3] for s in win)
        print(f"| {r['model']} | {r['round']} | {r['config']} | {r['img_per_s']:,.0f} | {len(win)} | "
              f"{statistics.mean(clocks):.0f}, {min(clocks):.0f} | {statistics.mean(power):.0f}, {max(power):.0f} | "
              + ", ".join(f"{k} ({v})" for k, v in reasons.most_common(3)) + " |")


if __name__ == "__main__":
    main(*sys.argv[1:3])
