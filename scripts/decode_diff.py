"""CPU (libjpeg-turbo) vs CUDA (nvJPEG) decode differences on the shipped photos and generated files
of each kind: mean and max absolute difference per file (the bound tests/test_decode.py states)."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import test_decode as td  # noqa: E402
from torchaug.io import decode_jpeg  # noqa: E402

rows = [(os.path.basename(p), open(p, "rb").read()) for p in td.ASSETS] + [(k, f()) for k, f in sorted(td.KINDS.items())]
for mode in ("rgb", "gray"):
    for name, data in rows:
        t = td._bytes(data)
        cpu = decode_jpeg(t, mode=mode).int()
        gpu = decode_jpeg(t, device="cuda", mode=mode).cpu().int()
        d = (cpu - gpu).abs().float()
        print(f"{mode:4} {name:18} mean |diff| {d.mean():.3f}  p99.9 {d.flatten().kthvalue(max(1, int(0.999 * d.numel()))).values:.0f}  max {d.max():.0f}")
# bad files on CUDA: what each gives
for name, (data, reason) in sorted(td.BAD.items()):
    try:
        decode_jpeg(td._bytes(data) if data else torch.empty(0, dtype=torch.uint8), device="cuda")
        print(f"bad {name:20} decoded WITHOUT error")
    except RuntimeError as e:
        print(f"bad {name:20} {str(e)[:150]}")
