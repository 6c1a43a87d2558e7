"""The fused resized_crop of benchmark case 1, a few launches, for Nsight Compute:
    ncu --kernel-name regex:resized_crop_kernel --launch-skip 3 --launch-count 1 python3 scripts/profile_resized_crop.py
"""
import torch

import torchaug.transforms as T

x = torch.randint(0, 256, (256, 3, 375, 500), dtype=torch.uint8, device="cuda")
t = T.Compose([T.RandomResizedCrop(224, generator=torch.Generator().manual_seed(0)), T.RandomHorizontalFlip(),
               T.ToDtype(torch.float32, scale=True), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
for _ in range(6):
    y = t(x)
torch.cuda.synchronize()
print("profiled", tuple(y.shape))
