"""Sums an Nsight Compute source-page CSV (scripts/profile/ncu_source.sh) by SASS opcode and, where the CSV
carries CUDA source lines, by line: which instructions and which lines a kernel spends its
executed instructions on.
    python3 scripts/profile/ncu_summary.py FILE.csv [...]

A SASS CSV of a library built off the device (scripts/build_for_device.sh) has no CUDA view there (the
library's line table names the build machine's tree): --listing attributes its rows to CUDA lines
through the line table of the kernel's cubin, as nvdisasm prints it, and adds the source lines'
instructions and stall samples (the function whose instructions are the CSV's is found in the listing):
    cuobjdump -xelf all torchaug/_C.*.so          (a cubin per .cu file: resized_crop.sm_90.cubin ...)
    nvdisasm -g -c resized_crop.sm_90.cubin > resized_crop.sass
    python3 scripts/profile/ncu_summary.py ncu_resized_crop_kernel_sass.csv --listing resized_crop.sass
(cuobjdump and nvdisasm: the CUDA toolkit's, or pip's nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm.)"""
import argparse
import collections
import csv
import functools
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILE_LINE = re.compile(r'//## File "([^"]+)", line (\d+)')
INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")


def number(s):
    try:
        return float(str(s).replace(",", ""))
    except ValueError:
        return 0.0


def opcode(text):
    words = text.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def listing_functions(path):
    """{function: {offset: (opcode, (file, line) or None)}} from `nvdisasm -g -c` output."""
    functions, current, where = {}, None, None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith(".text."):
                current = functions.setdefault(line[len(".text."):].split(":")[0].strip(), {})
                where = None
                continue
            m = FILE_LINE.search(line)
            if m:
                where = (m.group(1), int(m.group(2)))
                continue
            m = INSTRUCTION.search(line)
            if m and current is not None:
                current[int(m.group(1), 16)] = (opcode(m.group(2)), where)
    return functions


def match_function(functions, sass):
    """The listing's function whose instructions are the CSV's [(offset, opcode)], or None."""
    best, score = None, 0.0
    for name, body in functions.items():
        if len(body) != len(sass):
            continue
        same = sum(body.get(off, ("", None))[0] == op for off, op in sass) / max(len(sass), 1)
        if same > score:
            best, score = name, same
    return best if score >= 0.9 else None


@functools.lru_cache(maxsize=None)
def _repository_lines(path):
    """The lines of the repository's file at `path`'s part from csrc/ on (none outside csrc/)."""
    if "csrc/" not in path:
        return []
    try:
        with open(os.path.join(ROOT, path[path.find("csrc/"):])) as f:
            return f.read().split("\n")
    except OSError:
        return []


def source_text(path, line):
    """The line's text when the file is in this repository, else ''."""
    lines = _repository_lines(path)
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def summarize(path, listing, top=40):
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f)]
    head = next((i for i, r in enumerate(rows) if any("Instructions Executed" in c for c in r)), None)
    if head is None:
        print(f"{path}: no 'Instructions Executed' column")
        return
    cols = rows[head]
    ex = next(i for i, c in enumerate(cols) if c.startswith("Instructions Executed"))
    src = next((i for i, c in enumerate(cols) if c in ("Source", "# Source")), 1)
    stall = next((i for i, c in enumerate(cols) if c.startswith("Warp Stall Sampling (All")), None)
    body = [r for r in rows[head + 1:] if len(r) > max(ex, src)]
    by_op, by_line = collections.Counter(), collections.Counter()
    stalls = collections.Counter()
    total = 0.0
    for r in body:
        n = number(r[ex])
        total += n
        text = r[src].strip()
        by_op[opcode(text)] += n
        by_line[text[:110]] += n
        if stall is not None:
            stalls[text[:110]] += number(r[stall])
    print(f"== {path}: {total:,.0f} warp instructions executed")
    for op, n in by_op.most_common(25):
        print(f"  {op:<10} {n:>14,.0f} {n / total:6.1%}")
    print("  -- top rows")
    for line, n in by_line.most_common(top):
        print(f"  {n:>14,.0f} {n / total:6.1%}  stall {stalls[line]:>8,.0f}  {line}")
    if listing is None:
        return
    try:
        base = int(body[0][0], 16)
        sass = [(int(r[0], 16) - base, opcode(r[src].strip())) for r in body]
    except (IndexError, ValueError):
        print(f"  -- {path}: its first column holds no instruction addresses; --listing needs the SASS page")
        return
    functions = listing_functions(listing)
    name = match_function(functions, sass)
    if name is None:
        print(f"  -- no function of {listing} has this kernel's {len(sass)} instructions")
        return
    lines, line_stalls = collections.Counter(), collections.Counter()
    for (off, _), r in zip(sass, body):
        where = functions[name][off][1] or ("?", 0)
        lines[where] += number(r[ex])
        if stall is not None:
            line_stalls[where] += number(r[stall])
    stall_total = sum(stalls.values())
    print(f"  -- by source line, through {listing} ({name[:100]}): instructions, stall samples")
    for (file, line), n in lines.most_common(top):
        share = line_stalls[(file, line)] / stall_total if stall_total else 0.0
        print(f"  {n / total:6.1%} {share:6.1%}  {os.path.basename(file)}:{line}  {source_text(file, line)[:90]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--listing", help="nvdisasm -g -c output of the kernel's cubin: attribute SASS rows to CUDA lines")
    ap.add_argument("--top", type=int, default=40, help="rows and source lines listed (default 40)")
    args = ap.parse_args()
    for path in args.csv:
        summarize(path, args.listing, args.top)


if __name__ == "__main__":
    main()
