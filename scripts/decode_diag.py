"""Where the CUDA decoder's shares disagree (issue 6, a diagnostic): tests/test_decode.py's 96 files
of assorted sizes decoded on the CPU, by the hardware engines in one batch of 96 and in a batch of
29, one file at a time, and by the hybrid decoder's lanes; prints, per file that differs anywhere,
its size and kind and each decode's max |diff| from the CPU.

    python3 scripts/decode_diag.py
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

from test_decode import _bytes, _sized_photos  # noqa: E402
from torchaug.io import decode_jpeg  # noqa: E402


def main():
    data = [_bytes(b) for b in _sized_photos(96)]
    for mode in ("rgb", "gray"):
        cpu = decode_jpeg(data, mode=mode)
        runs = {
            "hw96": decode_jpeg(data, device="cuda", mode=mode, hw_load=1.0),
            "hw96b": decode_jpeg(data, device="cuda", mode=mode, hw_load=1.0),
            "hw29": decode_jpeg(data[:29], device="cuda", mode=mode, hw_load=1.0),
            "single": [decode_jpeg(d, device="cuda", mode=mode, hw_load=1.0) for d in data],
            "lanes": decode_jpeg(data, device="cuda", mode=mode, hw_load=0.0),
        }
        torch.cuda.synchronize()
        bad = 0
        for i, ref in enumerate(cpu):
            diffs = {k: int((v[i].cpu().int() - ref.int()).abs().max()) for k, v in runs.items() if i < len(v)}
            if max(diffs.values()) > 4 or len(set(diffs.values())) > 2:
                bad += 1
                print(f"{mode} #{i} {tuple(ref.shape)} gray={i % 5 == 4} 444={i % 3 == 0} maxdiff {diffs}")
        print(f"{mode}: {bad} of {len(cpu)} files differ", flush=True)


if __name__ == "__main__":
    main()
