"""The resized_crop of a benchmark case, a few launches, for Nsight Compute (scripts/profile/ncu_source.sh):
    ncu --kernel-name regex:resized_crop_kernel --launch-skip 3 --launch-count 1 python3 scripts/profile/resized_crop.py
PROFILE_CROP picks the case (256 uint8 3x375x500 images -> 224x224):
  case1 (default): benchmarks/bench_geometry.py's RandomResizedCrop + flip + ToDtype + Normalize
    (float32 out);
  u8: RandomResizedCrop's boxes, uint8 out (the crop of the RandAugment chain);
  small_u8: every box 100x130 (an upscale: few input rows, two taps an axis), uint8 out: what a
    tile costs whatever its box.
"""
import os

import torch

import torchaug.functional as F
import torchaug.transforms as T

case = os.environ.get("PROFILE_CROP", "case1")
x = torch.randint(0, 256, (256, 3, 375, 500), dtype=torch.uint8, device="cuda")
if case == "case1":
    t = T.Compose([T.RandomResizedCrop(224, generator=torch.Generator().manual_seed(0)), T.RandomHorizontalFlip(),
                   T.ToDtype(torch.float32, scale=True), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
elif case in ("u8", "small_u8"):
    if case == "u8":
        boxes = T.RandomResizedCrop(224, generator=torch.Generator().manual_seed(0)).make_params(x)["boxes"]
    else:
        boxes = torch.tensor([[50, 100, 100, 130]], device="cuda").expand(x.shape[0], 4).contiguous()

    def t(img):
        return F.resized_crop_boxes(img, boxes, [224, 224], validate=False)
else:
    raise SystemExit(f"PROFILE_CROP must be case1, u8 or small_u8, got {case!r}")
for _ in range(6):
    y = t(x)
torch.cuda.synchronize()
print("profiled", case, tuple(y.shape), y.dtype)
