"""Writes what tests/cpp/test_script.cpp loads (run by ctest as a fixture before it): a torchaug
pipeline scripted and saved by Python, its input, and the output Python's scripted module gives
after torch.manual_seed(1234) (checked equal to the eager pipeline's).

    python tests/cpp/make_scripted.py OUTDIR
"""
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
warnings.filterwarnings("ignore", category=DeprecationWarning)  # torch.jit: deprecated upstream, asked for by users
import torchaug.transforms as T  # noqa: E402

SEED = 1234


class Data(torch.nn.Module):
    def __init__(self, x, expected):
        super().__init__()
        self.x = x
        self.expected = expected


def main(out):
    os.makedirs(out, exist_ok=True)
    pipeline = T.Compose([
        T.RandomResizedCrop(32), T.RandomHorizontalFlip(), T.RandAugment(), T.ColorJitter(0.3, 0.3, 0.3, 0.05),
        T.ToDtype(torch.float32, scale=True), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    scripted = torch.jit.script(pipeline)
    x = torch.randint(0, 256, (6, 3, 48, 64), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    torch.manual_seed(SEED)
    expected = scripted(x)
    torch.manual_seed(SEED)
    if not torch.equal(pipeline(x), expected):
        raise SystemExit("make_scripted: the scripted pipeline differs from the eager one")
    scripted.save(os.path.join(out, "pipeline.pt"))
    torch.jit.script(Data(x, expected)).save(os.path.join(out, "data.pt"))
    print(f"make_scripted: wrote {out}/pipeline.pt and data.pt")


if __name__ == "__main__":
    main(sys.argv[1])
