"""Per-kernel CUDA time of the auto-augmentation chain (torch.profiler), for finding where the
time of benchmarks/bench_augment.py goes: python3 scripts/profile_augment.py"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torchaug.functional as F  # noqa: E402
import torchaug.transforms as T  # noqa: E402

x = torch.randint(0, 256, (256, 3, 224, 224), dtype=torch.uint8, device="cuda")
photos = torch.randint(0, 256, (256, 3, 375, 500), dtype=torch.uint8, device="cuda")
ra = T.RandAugment(2, 9)
chain = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), ra, T.ToDtype(torch.float32, scale=True),
                   T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
p = ra.make_params(x)
for name, fn in [("augment op, RandAugment(2,9) program", lambda: F.augment(x, p["ops"], p["magnitudes"], validate=False)),
                 ("RRC+flip+RandAugment+normalize chain", lambda: chain(photos))]:
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA, torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
    print(f"## {name} (20 calls)")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=14, max_name_column_width=70))
