"""The README's chart: img/s of every implementation in every case of a benchmark's latest JSON
(benchmarks/results/bench_peers.json by default), one group of horizontal bars a case, log scale.

    python3 benchmarks/chart.py [--json benchmarks/results/bench_peers.json] [--png benchmarks/results/peers.png]
"""
import argparse
import json
import os
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))


def colour(impl):
    for prefix, c in (("torchaug", "#76b900"), ("DALI", "#1f77b4"), ("CV-CUDA", "#ff7f0e"), ("torchvision", "#7f7f7f"),
                      ("kornia", "#9467bd")):
        if impl.startswith(prefix):
            return c
    return "#bcbd22"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=os.path.join(HERE, "results", "bench_peers.json"))
    ap.add_argument("--png", default=os.path.join(HERE, "results", "peers.png"))
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(args.json) as f:
        data = json.load(f)
    cases = []
    for r in data["rows"]:
        if r["case"] not in cases:
            cases.append(r["case"])
    labels, values, colours, ticks = [], [], [], []
    y = 0
    for case in cases:
        rows = [r for r in data["rows"] if r["case"] == case]
        ticks.append((y - 0.5, case))
        for r in rows:
            labels.append((y, r["impl"]))
            values.append(r["img_per_s"])
            colours.append(colour(r["impl"]))
            y += 1
        y += 1.5
    fig, ax = plt.subplots(figsize=(11, 0.4 * y + 1.2))
    ax.barh([p for p, _ in labels], values, color=colours, height=0.8)
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_yticks([p for p, _ in labels], [textwrap.fill(name, 52) for _, name in labels], fontsize=7)
    for (p, _), v in zip(labels, values):
        ax.text(v * 1.05, p, f"{v:,.0f}", va="center", fontsize=7)
    lo = min(values) / 3
    ax.set_xlim(lo, max(values) * 4)
    for p, case in ticks:  # the case's name above its group
        ax.text(lo, p, case, fontsize=8, fontweight="bold", va="bottom")
    e = data["env"]
    ax.set_xlabel("images per second (log scale)")
    ax.set_title(f"{data['title']}\n{e['device']} · torch {e['torch']} · {e['date']} · commit {e['commit']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)
    print(f"chart: {args.png}")


if __name__ == "__main__":
    main()
