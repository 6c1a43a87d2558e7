"""Sums an Nsight Compute source-page CSV (scripts/profile/ncu_source.sh) by SASS opcode and, where the CSV
carries CUDA source lines, by line: which instructions and which lines a kernel spends its
executed instructions on.
    python3 scripts/profile/ncu_summary.py FILE.csv [...]"""
import collections
import csv
import sys


def number(s):
    try:
        return float(str(s).replace(",", ""))
    except ValueError:
        return 0.0


for path in sys.argv[1:]:
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f)]
    head = next((i for i, r in enumerate(rows) if any("Instructions Executed" in c for c in r)), None)
    if head is None:
        print(f"{path}: no 'Instructions Executed' column")
        continue
    cols = rows[head]
    ex = next(i for i, c in enumerate(cols) if c.startswith("Instructions Executed"))
    src = next((i for i, c in enumerate(cols) if c in ("Source", "# Source")), 1)
    stall = next((i for i, c in enumerate(cols) if c.startswith("Warp Stall Sampling (All")), None)
    by_op, by_line = collections.Counter(), collections.Counter()
    stalls = collections.Counter()
    total = 0.0
    for r in rows[head + 1:]:
        if len(r) <= max(ex, src):
            continue
        n = number(r[ex])
        total += n
        text = r[src].strip()
        op = text.split()[0] if text else "?"
        if op.startswith("@"):
            op = text.split()[1] if len(text.split()) > 1 else op
        by_op[op.split(".")[0]] += n
        by_line[text[:110]] += n
        if stall is not None:
            stalls[text[:110]] += number(r[stall])
    print(f"== {path}: {total:,.0f} warp instructions executed")
    for op, n in by_op.most_common(25):
        print(f"  {op:<10} {n:>14,.0f} {n / total:6.1%}")
    print("  -- top rows")
    for line, n in by_line.most_common(40):
        print(f"  {n:>14,.0f} {n / total:6.1%}  stall {stalls[line]:>8,.0f}  {line}")
