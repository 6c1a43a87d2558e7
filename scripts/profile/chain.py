"""The RandAugment chain of benchmarks/bench_augment.py (RandomResizedCrop(224) + flip + RandAugment(2, 9) +
ToDtype + Normalize on 256 uint8 500x375 images), a few calls with a fixed generator, for Nsight
Compute (scripts/profile/ncu_source.sh): its two big kernels are resized_crop_kernel (uint8 out) and
augment_resident_kernel (with the fused normalize).
    ncu --kernel-name regex:augment_resident --launch-skip 3 --launch-count 1 python3 scripts/profile/chain.py
"""
import torch

import torchaug.transforms as T

g = torch.Generator(device="cuda").manual_seed(0)
x = torch.randint(0, 256, (256, 3, 375, 500), dtype=torch.uint8, device="cuda", generator=g)
chain = T.Compose([T.RandomResizedCrop(224, generator=g), T.RandomHorizontalFlip(generator=g), T.RandAugment(2, 9, generator=g),
                   T.ToDtype(torch.float32, scale=True), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
for _ in range(6):
    y = chain(x)
torch.cuda.synchronize()
print("profiled", tuple(y.shape), y.dtype)
