"""Writes what tests/cpp/test_script.cpp loads (run by ctest as a fixture before it): a torchaug
pipeline (every image transform kind) and a CutMix scripted and saved by Python, their inputs, and
the outputs Python's scripted modules give after torch.manual_seed(1234) (checked equal to the
eager ones').

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
    def __init__(self, x, expected, labels, mixed, mixed_labels):
        super().__init__()
        self.x = x
        self.expected = expected
        self.labels = labels
        self.mixed = mixed
        self.mixed_labels = mixed_labels


def main(out):
    os.makedirs(out, exist_ok=True)
    pipeline = T.Compose([
        T.RandomResizedCrop(40), T.RandomHorizontalFlip(), T.Pad(2, padding_mode="reflect"), T.RandomCrop(36),
        T.RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=5), T.RandomRotation(10, fill=128),
        T.RandAugment(), T.AugMix(mixture_width=2), T.RandomAdjustSharpness(2.0), T.GaussianBlur(3),
        T.ColorJitter(0.3, 0.3, 0.3, 0.05), T.CenterCrop(32), T.ToDtype(torch.float32, scale=True),
        T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]), T.GaussianNoise(), T.RandomErasing(value="random"),
    ])
    mixer = T.CutMix(num_classes=10)
    scripted = torch.jit.script(pipeline)
    scripted_mixer = torch.jit.script(mixer)
    x = torch.randint(0, 256, (6, 3, 48, 64), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    labels = torch.arange(6) % 10
    torch.manual_seed(SEED)
    expected = scripted(x)
    mixed, mixed_labels = scripted_mixer(expected, labels)
    torch.manual_seed(SEED)
    eager = pipeline(x)
    eager_mixed, eager_labels = mixer(eager, labels)
    if not (torch.equal(eager, expected) and torch.equal(eager_mixed, mixed) and torch.equal(eager_labels, mixed_labels)):
        raise SystemExit("make_scripted: the scripted pipeline differs from the eager one")
    scripted.save(os.path.join(out, "pipeline.pt"))
    scripted_mixer.save(os.path.join(out, "mixer.pt"))
    torch.jit.script(Data(x, expected, labels, mixed, mixed_labels)).save(os.path.join(out, "data.pt"))
    print(f"make_scripted: wrote {out}/pipeline.pt, mixer.pt and data.pt")


if __name__ == "__main__":
    main(sys.argv[1])
