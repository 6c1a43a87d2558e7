"""Kernel time vs call time of rotate (bench_filter's case 3 row): the warp_affine kernel alone
(matrices prepared), and F.rotate as called (matrices built per call), 256x3x224x224 uint8.
    python3 scripts/profile_rotate.py"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import torchaug.functional as F  # noqa: E402
from harness import time_cuda  # noqa: E402

B = 256
xs = [torch.randint(0, 256, (B, 3, 224, 224), dtype=torch.uint8, device="cuda") for _ in range(4)]
angle = torch.rand(B, device="cuda", generator=torch.Generator(device="cuda").manual_seed(0)) * 60 - 30
for interp in ("nearest", "bilinear"):
    t = time_cuda(lambda i: F.rotate(xs[i % 4], angle, interp), 40)
    print(f"F.rotate {interp:9s} {t['ms']:.4f} ms  {B / t['ms'] * 1e3:12,.0f} img/s", flush=True)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for i in range(20):
            F.rotate(xs[i % 4], angle, interp)
        torch.cuda.synchronize()
    for e in prof.key_averages():
        if e.device_time_total > 0:
            print(f"   {e.key[:70]:70s} {e.device_time_total / e.count:9.1f} us x{e.count // 20}")
