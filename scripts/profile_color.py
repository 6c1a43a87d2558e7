"""Kernels for Nsight Compute: adjust_hue (one color op per sample), ColorJitter's color program and
a RandAugment(2, 9) program of torchaug::augment on 256x3x224x224 uint8, each called 6 times.
    ncu --kernel-name regex:color_apply --launch-skip 3 --launch-count 1 python3 scripts/profile_color.py"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torchaug.functional as F  # noqa: E402
import torchaug.transforms as T  # noqa: E402

which = sys.argv[1] if len(sys.argv) > 1 else "hue"
x = torch.randint(0, 256, (256, 3, 224, 224), dtype=torch.uint8, device="cuda")
hue = torch.rand(256, device="cuda") - 0.5
jitter = T.ColorJitter(0.4, 0.4, 0.4, 0.1)
jp = jitter.make_params(x)
ra = T.RandAugment(2, 9)
rp = ra.make_params(x)
for _ in range(6):
    if which == "hue":
        F.adjust_hue(x, hue)
    elif which == "jitter":
        jitter(x, params=jp)
    else:
        F.augment(x, rp["ops"], rp["magnitudes"], validate=False)
torch.cuda.synchronize()
print("done", which)
