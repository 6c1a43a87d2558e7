"""Auto-augmentation per sample: RandomResizedCrop(224) + RandomHorizontalFlip +
RandAugment(2, 9) + ToDtype + Normalize on a batch of 256 uint8 images of 500x375, side by side:

- torchaug transforms (Compose; a different RandAugment op, sign and statistics per sample);
- the policy alone on 256 x 3 x 224 x 224 uint8, and the op with its program drawn beforehand;
- torchvision v2 on the same GPU: batch-wide (one op per batch, what its transform does to a batch
  tensor: not the same augmentation) and the per-sample loop (the correct semantics);
- a CPU DataLoader with 16 workers running the torchvision v2 chain per sample;
- kornia's RandAugment when the kornia wheel was carried to the device (it picks one op per batch);
- the same for TrivialAugmentWide and AutoAugment(ImageNet).

    python benchmarks/bench_augment.py [--json out.json] [--markdown out.md] [--quick]
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torchaug.functional as F  # noqa: E402
import torchaug.transforms as T  # noqa: E402
from bench_geometry import MEAN, STD, dataloader_throughput  # noqa: E402
from harness import Results, family_args, time_cuda  # noqa: E402


def torchaug_chain(policy):
    return T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), policy, T.ToDtype(torch.float32, scale=True),
                      T.Normalize(MEAN, STD)])


def torchvision_chain(policy):
    from torchvision.transforms import v2 as TV

    return TV.Compose([TV.RandomResizedCrop(224, antialias=True), TV.RandomHorizontalFlip(), policy,
                       TV.ToDtype(torch.float32, scale=True), TV.Normalize(MEAN, STD)])


def main():
    args = family_args("bench_augment")
    if args is None:
        return
    from torchvision.transforms import v2 as TV

    B, H, W, dev = 256, 375, 500, "cuda"
    iters = 5 if args.quick else 40
    loop_iters = 2 if args.quick else 3
    res = Results(f"Auto-augmentation per sample, batch {B}")
    print(f"# {res.title}\n# {res.env}", flush=True)
    torch.manual_seed(0)
    n_rot = 4
    photos = [torch.randint(0, 256, (B, 3, H, W), dtype=torch.uint8, device=dev) for _ in range(n_rot)]
    small = [torch.randint(0, 256, (B, 3, 224, 224), dtype=torch.uint8, device=dev) for _ in range(n_rot)]

    out = torch.empty_like(small[0])
    res.add("memory floor", "torch copy_ 256x3x224x224 uint8 (read + write)", B, time_cuda(lambda i: out.copy_(small[i % n_rot]), iters))

    case = "RRC224+flip+RandAugment(2,9)+normalize u8 500x375"
    ours = torchaug_chain(T.RandAugment(2, 9))
    res.add(case, "torchaug transforms (op per sample, params on GPU)", B, time_cuda(lambda i: ours(photos[i % n_rot]), iters),
            target=1_000_000)
    tv = torchvision_chain(TV.RandAugment(2, 9))
    res.add(case, "torchvision v2 batch-wide (one op per batch)", B, time_cuda(lambda i: tv(photos[i % n_rot]), iters))
    res.add(case, "torchvision v2 per-sample loop (GPU)", B,
            time_cuda(lambda i: torch.stack([tv(img) for img in photos[i % n_rot]]), loop_iters, warmup=1, repeats=3))
    try:
        import kornia.augmentation as K

        kchain = torch.nn.Sequential(K.RandomResizedCrop((224, 224)), K.RandomHorizontalFlip(),
                                     K.auto.RandAugment(n=2, m=9), K.Normalize(torch.tensor(MEAN), torch.tensor(STD)))
        res.add(case, "kornia RandAugment (float32 input; one op per batch)", B,
                time_cuda(lambda i: kchain(photos[i % n_rot].float() / 255), max(3, iters // 4), warmup=2))
    except Exception as e:  # kornia is optional: carried to the device as a wheel when available
        print(f"kornia: not measured ({type(e).__name__}: {e})", flush=True)
    workers = min(16, os.cpu_count() or 1)
    if not args.quick:
        res.add(case, f"torchvision v2 CPU DataLoader, {workers} workers", B,
                dataloader_throughput(B, workers, 10, H, W, torchvision_chain(TV.RandAugment(2, 9))),
                note="pinned, copied to GPU")

    # the policy alone on a 224x224 batch, and the op with the program drawn beforehand
    for name, policy, tvp in [("RandAugment(2,9)", T.RandAugment(2, 9), TV.RandAugment(2, 9)),
                              ("TrivialAugmentWide", T.TrivialAugmentWide(), TV.TrivialAugmentWide()),
                              ("AutoAugment(ImageNet)", T.AutoAugment(), TV.AutoAugment())]:
        c = f"{name} u8 224x224"
        res.add(c, "torchaug transform (op per sample)", B, time_cuda(lambda i: policy(small[i % n_rot]), iters))
        progs = [policy.make_params(s) for s in small]
        res.add(c, "torchaug op, program drawn beforehand", B, time_cuda(
            lambda i: F.augment(small[i % n_rot], progs[i % n_rot]["ops"], progs[i % n_rot]["magnitudes"], validate=False), iters))
        res.add(c, "torchvision v2 batch-wide (one op per batch)", B, time_cuda(lambda i: tvp(small[i % n_rot]), iters))
        res.add(c, "torchvision v2 per-sample loop (GPU)", B,
                time_cuda(lambda i: torch.stack([tvp(img) for img in small[i % n_rot]]), loop_iters, warmup=1, repeats=3))
        if name != "RandAugment(2,9)":
            cc = f"RRC224+flip+{name}+normalize u8 500x375"
            chain = torchaug_chain(policy)
            res.add(cc, "torchaug transforms (op per sample)", B, time_cuda(lambda i: chain(photos[i % n_rot]), iters))
            tvc = torchvision_chain(tvp)
            res.add(cc, "torchvision v2 batch-wide (one op per batch)", B, time_cuda(lambda i: tvc(photos[i % n_rot]), iters))
    res.save(args.json, args.markdown)
    print()
    print(res.markdown())


if __name__ == "__main__":
    main()
