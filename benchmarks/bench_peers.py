"""torchaug beside the GPU data-pipeline libraries users weigh it against, in one run on one GPU:
NVIDIA DALI (nvidia-dali-cuda130 2.4, pipelines with conditionals) and CV-CUDA (cvcuda-cu13 0.19,
`cvcuda.tv.Compose` over torchvision v2 transforms).

Augmentation from uint8 device batches (256 images of 500x375, or 224x224 for ColorJitter):
- RandomResizedCrop(224) + flip + normalize, the same + RandAugment(2, 9), ColorJitter(.4, .4, .4, .1);
- torchaug: its transforms, parameters drawn per sample on the GPU;
- DALI: external_source of the same batches (HWC, its layout) into fn.random_resized_crop,
  fn.auto_aug's rand_augment (interp nearest, fill 0: torchvision's defaults), fn.color_twist and
  fn.crop_mirror_normalize, every draw per sample; throughput of pipeline.run() (prefetch depth 2);
- CV-CUDA: cvcuda.tv.Compose of the torchvision v2 transforms. It runs torchvision's own parameter
  sampling, which draws once per call: on a batch tensor one crop / op / factor serves the whole
  batch (not the per-sample augmentation), so the per-sample loop (a call per image) is also timed.

Files -> augmented batch (JPEGs of 500x375 in an ImageFolder layout):
- torchaug: DataLoader with 2 byte-reading workers, Prefetcher (threads=2) decoding with nvJPEG and
  running RRC + flip + RandAugment(2, 9) + normalize on the GPU;
- DALI: fn.readers.file + the mixed (nvImageCodec) decoder + the same chain, and its ROI-fused
  fn.decoders.image_random_crop + resize, each with 2 and 8 CPU threads.
Both give float16 NCHW batches normalized with ImageNet's mean and std.

Peers that are not installed are skipped with a line saying so. Their wheels are larger than one
device call carries: scripts/gpu_peers.sh packs them into parts, installs them on the GPU machine,
runs this benchmark and draws the chart (benchmarks/chart.py). Alone:

    python benchmarks/bench_peers.py [--json out.json] [--markdown out.md] [--quick] [--no-files]
"""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torchaug  # noqa: E402
import torchaug.transforms as T  # noqa: E402
from bench_decode import make_files, write_folder  # noqa: E402
from harness import Results, family_args, time_cuda  # noqa: E402
from torchaug.io import ImageFolderBytes, collate_encoded  # noqa: E402

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
JITTER = dict(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1)


def time_wall(run, iters, warmup=5, repeats=3):
    """Wall ms per iteration of `run()` over blocks of `iters`, the device synchronized at each
    block's ends (all streams: DALI works on streams of its own); median of `repeats`."""
    for _ in range(warmup):
        run()
    torch.cuda.synchronize()
    per_iter = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iters):
            run()
        torch.cuda.synchronize()
        per_iter.append((time.perf_counter() - t0) * 1e3 / iters)
    return {"ms": sorted(per_iter)[repeats // 2], "ms_min": min(per_iter), "ms_max": max(per_iter)}


# ---- DALI ------------------------------------------------------------------------------------------

def dali_available():
    try:
        import nvidia.dali  # noqa: F401
        return True
    except Exception as e:
        print(f"DALI: not measured ({type(e).__name__}: {e})", flush=True)
        return False


def dali_normalize(images, dtype, mirror=True):
    """Flip with probability 0.5 per sample, scale to [0, 1] and normalize, HWC -> CHW."""
    from nvidia.dali import fn, types

    return fn.crop_mirror_normalize(images, dtype=dtype, output_layout="CHW",
                                    mean=[255 * m for m in MEAN], std=[255 * s for s in STD],
                                    mirror=fn.random.coin_flip(probability=0.5) if mirror else 0)


def dali_augment(images, chain):
    """The DALI graph of `chain` on HWC uint8 images (a DataNode), every draw per sample."""
    from nvidia.dali import fn, types
    from nvidia.dali.auto_aug import rand_augment

    if chain == "jitter":
        # one fused colour twist in a fixed order (torchvision draws the order per call); hue in degrees
        return fn.color_twist(images,
                              brightness=fn.random.uniform(range=[1 - JITTER["brightness"], 1 + JITTER["brightness"]]),
                              contrast=fn.random.uniform(range=[1 - JITTER["contrast"], 1 + JITTER["contrast"]]),
                              saturation=fn.random.uniform(range=[1 - JITTER["saturation"], 1 + JITTER["saturation"]]),
                              hue=fn.random.uniform(range=[-360 * JITTER["hue"], 360 * JITTER["hue"]]))
    images = fn.random_resized_crop(images, size=[224, 224], antialias=True)
    if chain == "randaugment":
        images = rand_augment.rand_augment(images, n=2, m=9, fill_value=0, interp_type=types.INTERP_NN)
    return dali_normalize(images, types.FLOAT)


def dali_batches_pipeline(batches, chain, device="gpu", threads=4):
    """A DALI pipeline over `batches` (a list of NHWC uint8 tensors, cycled): external_source -> chain."""
    from nvidia.dali import fn, pipeline_def

    B = batches[0].shape[0]

    @pipeline_def(batch_size=B, num_threads=threads, device_id=0 if device == "gpu" else None,
                  enable_conditionals=chain == "randaugment", prefetch_queue_depth=2, seed=0)
    def pipe():
        images = fn.external_source(source=batches, cycle=True, batch=True, device=device, layout="HWC")
        return dali_augment(images, chain)

    p = pipe()
    p.build()
    return p


def dali_files_pipeline(root, batch, threads, fused, device="gpu"):
    """DALI's files -> batch pipeline: its file reader (shuffled), the mixed decoder (or the ROI-fused
    random-crop decoder + resize), RRC + RandAugment(2, 9) + flip + normalize, float16 CHW."""
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.auto_aug import rand_augment

    decode_device = "mixed" if device == "gpu" else "cpu"

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=0 if device == "gpu" else None,
                  enable_conditionals=True, prefetch_queue_depth=2, seed=0)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        if fused:
            images = fn.decoders.image_random_crop(jpegs, device=decode_device, output_type=types.RGB)
            images = fn.resize(images, size=[224, 224], antialias=True)
        else:
            images = fn.decoders.image(jpegs, device=decode_device, output_type=types.RGB)
            images = fn.random_resized_crop(images, size=[224, 224], antialias=True)
        images = rand_augment.rand_augment(images, n=2, m=9, fill_value=0, interp_type=types.INTERP_NN)
        return dali_normalize(images, types.FLOAT16), labels

    p = pipe()
    p.build()
    return p


# ---- CV-CUDA ---------------------------------------------------------------------------------------

def cvcuda_compose(transforms):
    try:
        import cvcuda.tv
        return cvcuda.tv.Compose(transforms)
    except Exception as e:
        print(f"CV-CUDA: not measured ({type(e).__name__}: {e})", flush=True)
        return None


def torchvision_transforms(chain):
    from torchvision.transforms import v2 as V

    if chain == "jitter":
        return [V.ColorJitter(**JITTER)]
    middle = [V.RandAugment(2, 9)] if chain == "randaugment" else []
    return [V.RandomResizedCrop(224, antialias=True), V.RandomHorizontalFlip(), *middle,
            V.ToDtype(torch.float32, scale=True), V.Normalize(MEAN, STD)]


def torchaug_transform(chain):
    if chain == "jitter":
        return T.ColorJitter(**JITTER)
    middle = [T.RandAugment(2, 9)] if chain == "randaugment" else []
    return T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), *middle,
                      T.ToDtype(torch.float32, scale=True), T.Normalize(MEAN, STD)])


# ---- the cases -------------------------------------------------------------------------------------

def add_with_peers(res, case, B, ours, peers, factor, what, basis="the fastest peer with per-sample draws"):
    """torchaug's row (timing `ours`) with its target, `factor` times the fastest of the peers' rows
    marked as its basis (per-sample draws, 2 threads), then the peers' rows ((impl, timing, note,
    basis) each)."""
    per_sample = [B / (t["ms"] / 1e3) for _, t, _, same in peers if same]
    target = factor * max(per_sample) if per_sample else None
    row = res.add(case, what, B, ours, target=target,
                  note=f"target: {factor:g}x {basis}" if target else "")
    for impl, t, note, _ in peers:
        r = res.add(case, impl, B, t, note=note)
        print(f"    torchaug / {impl}: {row['img_per_s'] / r['img_per_s']:.2f}x", flush=True)


def device_batches(res, args, B, use_dali):
    iters = 5 if args.quick else 40
    n_rot = 4
    torch.manual_seed(0)
    photos = [torch.randint(0, 256, (B, 3, 375, 500), dtype=torch.uint8, device="cuda") for _ in range(n_rot)]
    small = [torch.randint(0, 256, (B, 3, 224, 224), dtype=torch.uint8, device="cuda") for _ in range(n_rot)]
    for chain, case in (("rrc", "RRC224+flip+normalize u8 500x375"),
                        ("randaugment", "RRC224+flip+RandAugment(2,9)+normalize u8 500x375"),
                        ("jitter", "ColorJitter(.4,.4,.4,.1) u8 224x224")):
        xs = small if chain == "jitter" else photos
        ours_fn = torchaug_transform(chain)
        ours = time_cuda(lambda i: ours_fn(xs[i % n_rot]), iters)
        peers = []
        if use_dali:
            hwc = [x.permute(0, 2, 3, 1).contiguous() for x in xs]  # DALI's layout, made outside the timing
            try:
                p = dali_batches_pipeline(hwc, chain)
                note = "draws per sample; HWC input, its native layout"
                if chain == "jitter":
                    note += "; fn.color_twist: one fused twist in a fixed order (torchvision's order is random)"
                if chain == "randaugment":
                    note += "; fn.auto_aug.rand_augment (torchvision's 14 ops, conditionals)"
                peers.append(("DALI 2.4 pipeline (external_source of device batches)", time_wall(lambda: p.run(), iters), note, True))
                del p
            except Exception as e:
                print(f"DALI {case}: failed ({type(e).__name__}: {str(e)[:400]})", flush=True)
            del hwc
        cv = cvcuda_compose(torchvision_transforms(chain))
        if cv is not None:
            try:
                cv(xs[0])
                peers.append(("CV-CUDA 0.19 cvcuda.tv.Compose on the batch", time_cuda(lambda i: cv(xs[i % n_rot]), iters),
                              "torchvision's sampling: one draw per call, so one crop / op / factor for the whole batch", False))
                peers.append(("CV-CUDA 0.19 cvcuda.tv.Compose per-sample loop",
                              time_cuda(lambda i: [cv(img) for img in xs[i % n_rot]], 2, warmup=1, repeats=3),
                              "a call per image: the per-sample semantics", True))
            except Exception as e:
                print(f"CV-CUDA {case}: failed ({type(e).__name__}: {str(e)[:400]})", flush=True)
        add_with_peers(res, case, B, ours, peers, 5, "torchaug transforms (draws per sample)")
        torch.cuda.empty_cache()


def files_to_batch(res, args, B, use_dali):
    n_files = 512 if args.quick else 2048
    files = make_files(n_files, 90, 2.0, seed=2)
    kb = sum(f.numel() for f in files) / len(files) / 1e3
    root = write_folder(files, prefix="torchaug_peers_")
    case = f"files -> RRC+flip+RandAugment(2,9)+normalize f16 (JPEG 500x375, mean {kb:.0f} KB)"
    n_batches, skip = (24, 8) if args.quick else (96, 16)

    loader = torch.utils.data.DataLoader(ImageFolderBytes(root), batch_size=B, shuffle=True, num_workers=2, pin_memory=True,
                                         drop_last=True, prefetch_factor=4, collate_fn=collate_encoded, persistent_workers=True)
    pf = torchaug.Prefetcher(loader, T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.RandAugment(2, 9)]),
                             device="cuda", mean=MEAN, std=STD, dtype=torch.float16, threads=2)
    count, k, t0 = 0, 0, None
    while k < n_batches:  # epochs of n_files / B batches, back to back
        for x, y in pf:
            if k == skip:
                torch.cuda.synchronize()
                t0 = time.perf_counter()
            elif k > skip:
                count += x.shape[0]
            k += 1
            if k == n_batches:
                break
    torch.cuda.synchronize()
    ours = {"ms": 1e3 * (time.perf_counter() - t0) * B / count}
    del pf, loader
    peers = []
    for fused in ((False, True) if use_dali else ()):
        for threads in (2, 8):
            try:
                p = dali_files_pipeline(root, B, threads, fused)
                name = ("fn.decoders.image_random_crop (ROI decode) + resize" if fused
                        else "fn.decoders.image (mixed) + fn.random_resized_crop")
                peers.append((f"DALI 2.4 readers.file + {name}, {threads} threads",
                              time_wall(lambda: p.run(), n_batches - skip, warmup=skip, repeats=1),
                              "fn.auto_aug.rand_augment with conditionals; float16 CHW out", threads == 2))
                del p
            except Exception as e:
                print(f"DALI files ({threads} threads, fused={fused}): failed ({type(e).__name__}: {str(e)[:400]})", flush=True)
    add_with_peers(res, case, B, ours, peers, 2, "torchaug Prefetcher, 2 byte-reading workers, threads=2",
                   basis="the fastest DALI pipeline on 2 threads")


def main():
    args = family_args("bench_peers", {"--no-files": "the device-batch cases only"})
    if args is None:
        return
    B = 256
    res = Results("torchaug beside DALI and CV-CUDA, batch 256")
    print(f"# {res.title}\n# {res.env}", flush=True)
    use_dali = dali_available()
    device_batches(res, args, B, use_dali)
    if not args.no_files:
        files_to_batch(res, args, B, use_dali)
    res.save(args.json, args.markdown)
    print()
    print(res.markdown())


if __name__ == "__main__":
    main()
