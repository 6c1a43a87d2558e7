"""torchaug's CPU kernels (the fallback for CPU tensors: DataLoader workers, machines without a GPU)
against torchvision v2's per-sample loop on the same cores, 32 uint8 images a batch, every sample its
own parameters in both:

- RandomResizedCrop(224) + flip + ToDtype + Normalize from 500x375 (torchaug: one fused op);
- ColorJitter(0.4, 0.4, 0.4, 0.1), RandomHorizontalFlip, ToDtype + Normalize, RandAugment(2, 9) on
  224x224, and the RandomResizedCrop + flip + RandAugment + normalize chain from 500x375.

At one intra-op thread (the target: torchaug at least 2x torchvision's images per second) and at
every core of the machine. Then one image a call, as a Dataset's __getitem__ in a DataLoader worker
(one thread) calls its transform when the import is all that changed: CIFAR's ToImage +
RandomCrop(32, padding=4) + flip + normalize on the PIL images torchvision's CIFAR10 dataset gives,
with AutoAugment's CIFAR10 policy, and the two 224 chains above on 500x375 uint8 tensors; there a
call's fixed cost (Python, parameter draws, op dispatch) is what counts.
Runs anywhere (no GPU needed); torchvision is the peer.

    python benchmarks/bench_cpu.py [--json out.json] [--markdown out.md] [--quick]
(exercised by tests/test_tools.py with --quick)
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torchaug.transforms as T  # noqa: E402
from harness import Results, time_cpu  # noqa: E402
from torchaug._compat import import_torchvision  # noqa: E402

B = 32
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
CIFAR_MEAN, CIFAR_STD = [0.4914, 0.4822, 0.4465], [0.2470, 0.2435, 0.2616]


def cases(TV):
    """(case, input size, torchaug transform, torchvision v2 transform for one image)."""
    def chain(lib, policy):
        return lib.Compose([lib.RandomResizedCrop(224, antialias=True), lib.RandomHorizontalFlip(), *policy,
                            lib.ToDtype(torch.float32, scale=True), lib.Normalize(MEAN, STD)])
    return [
        ("RRC224+flip+normalize u8 500x375", (375, 500), chain(T, []), chain(TV, [])),
        ("ColorJitter u8 224x224", (224, 224), T.ColorJitter(0.4, 0.4, 0.4, 0.1), TV.ColorJitter(0.4, 0.4, 0.4, 0.1)),
        ("RandomHorizontalFlip u8 224x224", (224, 224), T.RandomHorizontalFlip(), TV.RandomHorizontalFlip()),
        ("ToDtype+Normalize u8 224x224", (224, 224), T.Compose([T.ToDtype(torch.float32, scale=True), T.Normalize(MEAN, STD)]),
         TV.Compose([TV.ToDtype(torch.float32, scale=True), TV.Normalize(MEAN, STD)])),
        ("RandAugment(2,9) u8 224x224", (224, 224), T.RandAugment(2, 9), TV.RandAugment(2, 9)),
        ("RRC224+flip+RandAugment(2,9)+normalize u8 500x375", (375, 500), chain(T, [T.RandAugment(2, 9)]),
         chain(TV, [TV.RandAugment(2, 9)])),
    ]


def single_image_cases(TV):
    """(case, input size, torchaug transform, torchvision v2 transform), one image a call; the 32x32
    cases take PIL images."""
    def cifar(lib, policy):
        return lib.Compose([lib.ToImage(), lib.RandomCrop(32, padding=4), lib.RandomHorizontalFlip(), *policy,
                            lib.ToDtype(torch.float32, scale=True), lib.Normalize(CIFAR_MEAN, CIFAR_STD)])

    def chain(lib, policy):
        return lib.Compose([lib.RandomResizedCrop(224, antialias=True), lib.RandomHorizontalFlip(), *policy,
                            lib.ToDtype(torch.float32, scale=True), lib.Normalize(MEAN, STD)])
    return [
        ("one image a call: ToImage+RandomCrop(32, padding=4)+flip+normalize, PIL 32x32", (32, 32), cifar(T, []), cifar(TV, [])),
        ("one image a call: ToImage+RandomCrop(32, padding=4)+flip+AutoAugment(CIFAR10)+normalize, PIL 32x32", (32, 32),
         cifar(T, [T.AutoAugment(T.AutoAugmentPolicy.CIFAR10)]), cifar(TV, [TV.AutoAugment(TV.AutoAugmentPolicy.CIFAR10)])),
        ("one image a call: RRC224+flip+normalize u8 500x375", (375, 500), chain(T, []), chain(TV, [])),
        ("one image a call: RRC224+flip+RandAugment(2,9)+normalize u8 500x375", (375, 500), chain(T, [T.RandAugment(2, 9)]),
         chain(TV, [TV.RandAugment(2, 9)])),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    import_torchvision()
    from torchvision.transforms import v2 as TV

    # --quick (the test suite's smoke run): 4-image batches, one thread, one timing
    batch, iters, repeats = (4, 1, 1) if args.quick else (B, 5, 9)
    gen = torch.Generator().manual_seed(0)
    res = Results(f"CPU kernels, batches of {batch} uint8 images, against torchvision v2's per-sample loop; then one image a call")
    saved = torch.get_num_threads()
    for threads in [1] if args.quick else sorted({1, os.cpu_count() or 1}):
        torch.set_num_threads(threads)
        for case, (h, w), ours, theirs in cases(TV):
            xs = [torch.randint(0, 256, (batch, 3, h, w), dtype=torch.uint8, generator=gen) for _ in range(2)]
            name = f"{case}, {threads} thread{'s' if threads > 1 else ''}"
            # torchvision's flip returns a sample it does not flip as it is: half the samples cost nothing
            note = "returns the samples it does not flip as they are (no copy)" if "Flip" in case else ""
            tv = res.add(name, "torchvision v2 per-sample loop", batch,
                         time_cpu(lambda i: [theirs(img) for img in xs[i % 2]], iters, repeats=repeats), note=note)
            res.add(name, "torchaug transform (batch, per-sample parameters)", batch,
                    time_cpu(lambda i: ours(xs[i % 2]), iters, repeats=repeats),
                    target=2 * tv["img_per_s"] if threads == 1 else None)
    torch.set_num_threads(1)  # a DataLoader worker's setting
    for case, (h, w), ours, theirs in single_image_cases(TV):
        imgs = [torch.randint(0, 256, (3, h, w), dtype=torch.uint8, generator=gen) for _ in range(batch)]
        if h == 32:
            from PIL import Image
            imgs = [Image.fromarray(img.permute(1, 2, 0).numpy()) for img in imgs]
        tv = res.add(case, "torchvision v2", batch, time_cpu(lambda i: [theirs(img) for img in imgs], iters, repeats=repeats))
        res.add(case, "torchaug transform", batch, time_cpu(lambda i: [ours(img) for img in imgs], iters, repeats=repeats),
                target=2 * tv["img_per_s"])
    torch.set_num_threads(saved)
    res.save(args.json, args.markdown)
    print(res.markdown())


if __name__ == "__main__":
    main()
