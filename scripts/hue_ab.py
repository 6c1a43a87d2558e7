"""adjust_hue on 256x3x224x224 uint8 with different per-sample shifts, interleaved in one process
(does the time depend on the shift's sign or spread?): python3 scripts/hue_ab.py"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import torchaug.functional as F  # noqa: E402
from harness import time_cuda  # noqa: E402

B = 256
xs = [torch.randint(0, 256, (B, 3, 224, 224), dtype=torch.uint8, device="cuda") for _ in range(4)]
g = torch.Generator(device="cuda").manual_seed(0)
shifts = {"+0.05 all": torch.full((B,), 0.05, device="cuda"), "-0.3 all": torch.full((B,), -0.3, device="cuda"),
          "+0.3 all": torch.full((B,), 0.3, device="cuda"),
          "uniform [-0.5, 0.5)": torch.rand(B, device="cuda", generator=g) - 0.5}
for rep in range(2):
    for name, s in shifts.items():
        t = time_cuda(lambda i: F.adjust_hue(xs[i % 4], s, validate=False), 40)
        print(f"hue {name:22s} {t['ms']:.4f} ms  {B / t['ms'] * 1e3:12,.0f} img/s", flush=True)
