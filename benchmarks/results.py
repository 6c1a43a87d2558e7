"""Rebuilds benchmarks/RESULTS.md from the latest JSON of each benchmark in benchmarks/results/
(bench_<name>.json, as `python3 benchmarks/bench_<name>.py --json ...` writes it): one table per
benchmark with its date, device, torch, commit, every implementation measured in that run, each
one's ratio to torchaug, and the targets.

    python3 benchmarks/results.py [--check]      (--check: exit 1 if RESULTS.md is not up to date)
"""
import argparse
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import markdown_table  # noqa: E402

# the order of the sections, and what each benchmark measures
ABOUT = {
    "geometry": "RandomResizedCrop(224) + RandomHorizontalFlip + ToDtype + Normalize on 256 uint8 500x375 "
                "images, every sample its own crop and flip, one fused `resized_crop` launch. The torchvision v2 "
                "batch-wide row gives the whole batch one crop (less work, other semantics); its per-sample loop is "
                "the same semantics. The memory floor is the copy bandwidth over the bytes the chain must move. "
                "The fused kernel is bound by neither memory nor issue (Nsight Compute on an H100, "
                "`scripts/profile/ncu_source.sh`: 127 us a batch, ~220 instructions an output pixel, four blocks of "
                "256 threads an SM with registers and shared memory both at their bound, ~0.7 instructions issued "
                "a scheduler cycle): its warps wait on dependent arithmetic, the horizontal pass's global loads and "
                "the tile's barriers in about equal parts, so fewer instructions alone do not make it faster. "
                "Then CIFAR's RandomCrop(32, padding=4) + flip + ToDtype + Normalize on 512 32x32 images: the "
                "zero-padded crop fused the same way, eager and replayed from a CUDA graph.",
    "augment": "Auto-augmentation with a different op and magnitude for every sample (RandAugment, "
               "TrivialAugmentWide, AutoAugment), alone on 224x224 and in the RandomResizedCrop + flip + policy + "
               "normalize chain from 500x375. torchvision's and kornia's policies draw one op per batch.",
    "color": "The color ops and ColorJitter on 256 x 3 x 224 x 224 uint8, a factor (and, for ColorJitter, an order) "
             "per sample; torchvision's batch-wide ops draw one per batch.",
    "filter": "Sharpness, blur, noise, erasing and rotation on 256 x 3 x 224 x 224, parameters per sample.",
    "decode": "JPEG decoding (nvJPEG) of ImageNet-like 500x375 files, the decode + augmentation chain, and the "
              "whole input pipeline with byte-reading DataLoader workers and the Prefetcher, against torchvision's "
              "batched decode and a CPU DataLoader. The GPU decode rows of a file set, and the decode + chain rows, "
              "are medians of 5 rounds timed in turns (one decode call's time follows the host's moment, which "
              "moves over seconds: a round reaches every row of a case alike).",
    "warps": "RandomRotation, RandomAffine, RandomPerspective, ElasticTransform and JPEG on 256 x 3 x 224 x 224 uint8, "
             "parameters per sample: "
             "torchaug on the batch against torchvision v2's per-sample loop and its whole-batch call (one draw for "
             "the batch) on the same GPU, and kornia where it has the op.",
    "peers": "torchaug beside NVIDIA DALI 2.4 and CV-CUDA 0.19 (scripts/gpu_peers.sh): RandomResizedCrop + flip + "
             "normalize, the same with RandAugment(2, 9), and ColorJitter from uint8 device batches, and files to augmented "
             "batch. DALI draws per sample; cvcuda.tv.Compose runs torchvision's sampling (one draw per call), so its "
             "per-sample loop is the same semantics and its batch call is not.",
    "scaling": "The RandomResizedCrop + flip (+ RandAugment) + normalize chains on uint8 device batches across image "
               "sizes (32x32 to 1024x1024 at batch 256) and batch sizes (8 to 1024 at 224x224): cost per pixel and per "
               "image, and the host time of a call. Called eagerly, the RandomResizedCrop + flip + normalize chain "
               "costs ~50 us of host time a call back to back (on an H100 machine's host: about half of it the "
               "transforms' Python, the rest the two op calls, the draws and the fused crop, ~12 us each, where torch's "
               "own `add_` on a CUDA tensor takes ~7 us there; scripts/profile/host_split.py shows the split), so "
               "an eager call of fewer than ~100 images of 224x224 (of 256 of 128x128 too) waits on the host, not the GPU. "
               "Replayed from a CUDA graph, a batch of 64x64 or smaller images is bound by the host's `replay()` (H100, "
               "RandomResizedCrop + flip + normalize at 64x64: ~20 us of host time a replay against ~14 us of the "
               "chain's kernels; torch's replay first launches two `fill_` kernels that write the CUDA generator's seed "
               "and offset for the graph's draws), so those rows stay near 20 us a batch whatever the kernels do.",
    "detection": "nms, batched_nms and roi_align against torchvision.ops (calls per second).",
    "cpu": "The CPU kernels (CPU tensors: DataLoader workers, machines without a GPU) on batches of 32 uint8 "
           "images, every sample its own parameters, against torchvision v2's per-sample loop on the same cores, "
           "at one intra-op thread (target: 2x torchvision) and at every core; then one image a call at one thread, "
           "as a Dataset's __getitem__ in a DataLoader worker calls a transform when only the import changed "
           "(there a call's fixed cost in Python, draws and dispatch counts: ~0.1 ms, which a 32x32 image's pixels "
           "do not amortize).",
    "train": "End-to-end training (examples/train.py: bf16, channels_last, SGD) on generated 500x375 JPEGs: "
             "torchaug against torchvision's CPU DataLoader and synthetic data (the model's own speed).",
    "accelerate": "benchmarks/reference_train.py, a training script in the shape of torchvision's "
                  "references/classification, as it is (16 workers decoding and augmenting on the CPU), with the two "
                  "lines `import torchaug; data_loader = torchaug.accelerate(data_loader)`, and on synthetic data.",
    "ddp": "examples/train.py on 1 GPU and under torchrun on 2 and all GPUs of the machine (benchmarks/bench_ddp.sh): torchaug with "
           "GPU decode and 2 byte-reading workers per rank against synthetic data.",
}


HISTORY = """In short (the commits that made each step say more):
- RandomResizedCrop + flip + cast + normalize fuse into one separable tile kernel that reads each input
  row once per tile (the tile's input region asked of L2 at once, before its rows are read) and stores
  in the output's dtype and layout; uint8 taps are one FMA each.
- An auto-augmentation program, or a color program of several slots (ColorJitter), runs in one launch
  where the image fits a block's shared memory (the resident kernel: statistics, color, sharpness and
  geometric slots in the block; runs of separable color slots composed into one table, applied where
  the pixels are read next), its blocks taking samples by estimated cost; elsewhere one pass per slot
  (auto-augmentation) or per statistics op (color).
- Random parameters are drawn inside the parameter kernels (a transform's draws and their mapping to
  parameters in one launch: crop boxes, policies, ColorJitter, RandomAffine, RandomPerspective's
  homographies, RandomErasing's boxes), the chain's kernels are dependent launches (each starts while
  the one before runs), and the hot ops' autograd kernels are C++.
- Warps sample the images in their own dtype (affine, projective and grid maps share one set of taps);
  separable blurs read each shared-memory value once for several sums; the noise ops share one Philox
  call among a few pixels.
- JPEG decoding: nvJPEG's hardware engines with a pool of decoders per GPU, the scan check beside the
  engines, 32 CUDA work queues so that the decoder does not wait behind the model, and workers that
  read a batch straight into one reused shared-memory buffer.
"""


def load():
    found = {}
    for path in sorted(glob.glob(os.path.join(HERE, "results", "bench_*.json"))):
        name = os.path.basename(path)[len("bench_"):-len(".json")]
        with open(path) as f:
            found[name] = json.load(f)
    order = [n for n in ABOUT if n in found] + sorted(n for n in found if n not in ABOUT)
    return [(n, found[n]) for n in order]


def table(data) -> str:
    return markdown_table(data["title"], data["env"], data["rows"])


def render(benchmarks) -> str:
    out = ["# Benchmark results", "",
           "The current state, rebuilt by `python3 benchmarks/results.py` from the latest JSON of each benchmark in",
           "`benchmarks/results/`. Each benchmark measures torchaug and its peers side by side in one run on one GPU",
           "(CUDA-event timing after warm-up, median of repeats, inputs rotated so that the L2 cache does not",
           "flatter); a table's heading line gives the date, device, torch and commit of its run. Ratios compare",
           "rows of the same run only; a row with a target says whether it is met. Earlier figures and how they",
           "moved are in the history of this file.", ""]
    for name, data in benchmarks:
        out += [f"## {name}", "", ABOUT.get(name, ""), "", table(data)]
    out += ["## How the kernels got fast", "", HISTORY]
    return "\n".join(out).rstrip("\n") + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    text = render(load())
    path = os.path.join(HERE, "RESULTS.md")
    if args.check:
        with open(path) as f:
            sys.exit(0 if f.read() == text else 1)
    with open(path, "w") as f:
        f.write(text)
    print(f"wrote {path} ({text.count(chr(10))} lines)")


if __name__ == "__main__":
    main()
