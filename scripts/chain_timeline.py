"""Where case 4's chain (bench_augment's first row) spends its critical path, kernel by kernel: the
full chain called back to back in steady state under CUPTI, and for each kernel of a call the mean
time from the end of the previous call's resident kernel to this kernel's end. Under dependent
launches a kernel's CUPTI start includes its wait for the kernel before, so the ends are the points
that mean something; "adds" is the step from the previous kernel's end, the time the kernel holds
the critical path after the one before finished.

    python3 scripts/chain_timeline.py [--calls 30] [--json out.json]
"""
import argparse
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torchaug.transforms as T  # noqa: E402
from bench_augment import torchaug_chain  # noqa: E402
from harness import environment  # noqa: E402

SHORT = [("random_resized_crop_boxes", "boxes"), ("bernoulli", "bernoulli"), ("resized_crop_kernel", "crop"),
         ("policy_program", "program"), ("resident_order", "order"), ("augment_resident_kernel", "resident")]


def short(name):
    for key, s in SHORT:
        if key in name:
            return s
    return name[:40]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=30)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--json")
    a = p.parse_args()
    env = environment()
    torch.manual_seed(0)
    photos = [torch.randint(0, 256, (a.batch, 3, 375, 500), dtype=torch.uint8, device="cuda") for _ in range(4)]
    chain = torchaug_chain(T.RandAugment(2, 9))
    for i in range(20):
        chain(photos[i % 4])
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for i in range(a.calls):
            chain(photos[i % 4])
        torch.cuda.synchronize()
    kernels = sorted(((e.time_range.start, e.time_range.end, short(e.name)) for e in prof.events()
                      if e.device_type == torch.autograd.DeviceType.CUDA), key=lambda k: k[1])
    # calls: the kernels after one resident kernel's end up to and including the next resident kernel
    calls, cur, base = [], [], None
    for start, end, name in kernels:
        if base is not None:
            cur.append((name, start - base, end - base))
        if name == "resident":
            if base is not None and cur:
                calls.append(cur)
            cur, base = [], end
    if not calls:
        print("no complete call profiled")
        return
    shape = [n for n, _, _ in calls[0]]
    calls = [c for c in calls if [n for n, _, _ in c] == shape]
    rows = []
    prev_end = 0.0
    for k, name in enumerate(shape):
        ends = [c[k][2] for c in calls]
        starts = [c[k][1] for c in calls]
        end = statistics.mean(ends)
        rows.append({"kernel": name, "start_us": statistics.mean(starts), "end_us": end, "end_min_us": min(ends),
                     "end_max_us": max(ends), "adds_us": end - prev_end})
        prev_end = end
    print(f"# chain_timeline · {env['device']} · commit {env['commit']} · {len(calls)} calls of the same kernels "
          f"(us from the previous call's resident kernel's end)")
    print(f"{'kernel':>12s} {'start':>8s} {'end':>8s} {'min':>8s} {'max':>8s} {'adds':>8s}")
    for r in rows:
        print(f"{r['kernel']:>12s} {r['start_us']:8.1f} {r['end_us']:8.1f} {r['end_min_us']:8.1f} {r['end_max_us']:8.1f} "
              f"{r['adds_us']:8.1f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"env": env, "calls": len(calls), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
