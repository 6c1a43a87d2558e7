"""torchaug.accelerate: a torchvision ImageFolder DataLoader with its decoding and transforms moved
to the device: the translation of torchvision's transforms (v2 and v1) with their arguments, the
same batches, labels, sampler, length and drop_last, per-sample draws in distribution, the start of
a chain torchaug cannot take kept in the workers, and the refusals that name what is not taken."""
import math
import os
from collections import defaultdict

import numpy as np
import pytest
import torch
from conftest import requires_torchvision, torchvision

import torchaug
import torchaug.transforms as T

if torchvision is not None:
    from torchvision import datasets, tv_tensors
    from torchvision import transforms as v1
    from torchvision.transforms import v2

pytestmark = requires_torchvision
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """An ImageFolder of 3 classes of JPEGs of different sizes."""
    from PIL import Image
    root = tmp_path_factory.mktemp("folder")
    g = np.random.default_rng(0)
    for c in ("cat", "dog", "eel"):
        os.makedirs(root / c)
        for i in range(9):
            h, w = int(g.integers(40, 90)), int(g.integers(40, 90))
            Image.fromarray((g.random((h, w, 3)) * 255).astype(np.uint8)).save(root / c / f"{i}.jpg", quality=90)
    return str(root)


def _loader(folder, transform, **kw):
    kw.setdefault("batch_size", 4)
    return torch.utils.data.DataLoader(datasets.ImageFolder(folder, transform=transform), **kw)


def test_deterministic_chain_gives_the_original_batches(folder):
    # no resampling: the device's decode (libjpeg-turbo on the CPU, as PIL) and crop give the same pixels
    tf = v2.Compose([v2.CenterCrop(32), v2.PILToTensor(), v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])
    dl = _loader(folder, tf, batch_size=5, num_workers=2)
    fast = torchaug.accelerate(dl, device="cpu")
    assert len(fast) == len(dl) == 6 and fast.sampler is dl.sampler and fast.dataset is dl.dataset
    assert fast.loader.persistent_workers and not dl.persistent_workers  # the byte readers live across epochs
    got = list(fast)
    want = list(dl)
    assert len(got) == len(want)
    for (x, y), (xr, yr) in zip(got, want):
        assert torch.equal(y, yr)
        torch.testing.assert_close(x, xr, atol=1e-5, rtol=0)


def test_resampling_chain_is_close_and_v1_translates(folder):
    tf = v1.Compose([v1.Resize(36), v1.CenterCrop(32), v1.ToTensor(), v1.Normalize(MEAN, STD)])
    dl = _loader(folder, tf, batch_size=9, drop_last=True)
    got, want = list(torchaug.accelerate(dl, device="cpu")), list(dl)
    assert len(got) == len(want) == 3
    for (x, y), (xr, yr) in zip(got, want):
        assert torch.equal(y, yr) and x.shape == xr.shape == (9, 3, 32, 32)
        # PIL's antialiased resize against torchvision's tensor resize: a level or two apart
        assert (x - xr).abs().mul(torch.tensor(STD)[:, None, None]).mean() < 2.5 / 255


def test_shuffled_order_labels_and_random_shapes(folder):
    tf = v2.Compose([v2.RandomResizedCrop(24, antialias=True), v2.RandomHorizontalFlip(), v2.RandAugment(), v2.ToImage(),
                     v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD), v2.RandomErasing(0.5)])
    dl = _loader(folder, tf, batch_size=4, shuffle=True, drop_last=True)
    fast = torchaug.accelerate(dl, device="cpu")
    torch.manual_seed(3)
    want = [y for _, y in dl]
    torch.manual_seed(3)
    got = list(fast)
    assert len(got) == len(want) == 6
    for (x, y), yr in zip(got, want):
        assert x.shape == (4, 3, 24, 24) and x.dtype == torch.float32 and torch.equal(y, yr)


def test_per_sample_flip_frequency_matches(folder):
    # torchvision's per-sample loop flips each image with probability p; so does the device's chain
    tf = v2.Compose([v2.CenterCrop(32), v2.RandomHorizontalFlip(0.3), v2.PILToTensor()])
    dl = _loader(folder, tf, batch_size=27)
    plain = list(torchaug.accelerate(_loader(folder, v2.Compose([v2.CenterCrop(32), v2.PILToTensor()]), batch_size=27),
                                     device="cpu"))[0][0]
    fast = torchaug.accelerate(dl, device="cpu")
    flipped, n = 0, 0
    for _ in range(40):
        x = next(iter(fast))[0]
        same, mirrored = (x == plain).flatten(1).all(1), (x == plain.flip(-1)).flatten(1).all(1)
        assert (same | mirrored).all()
        flipped += int(mirrored.sum())
        n += x.shape[0]
    assert abs(flipped / n - 0.3) < 5 * math.sqrt(0.21 / n)


def test_translation_keeps_the_arguments():
    cases = [
        (v2.RandomResizedCrop(20, scale=(0.3, 0.9), ratio=(0.5, 2.0), interpolation=v2.InterpolationMode.BICUBIC),
         T.RandomResizedCrop, dict(size=[20, 20], scale=(0.3, 0.9), ratio=(0.5, 2.0))),
        (v2.ColorJitter(0.4, 0.3, 0.2, 0.1), T.ColorJitter, dict(brightness=(0.6, 1.4), hue=(-0.1, 0.1))),
        (v2.RandAugment(3, 5, 21), T.RandAugment, dict(num_ops=3, magnitude=5, num_magnitude_bins=21)),
        (v2.AutoAugment(v2.AutoAugmentPolicy.SVHN), T.AutoAugment, {}),
        (v2.TrivialAugmentWide(11), T.TrivialAugmentWide, dict(num_magnitude_bins=11)),
        (v2.RandomRotation(30, fill=7), T.RandomRotation, {}),
        (v2.RandomAffine(10, translate=(0.1, 0.2), scale=(0.8, 1.2)), T.RandomAffine, {}),
        (v2.GaussianBlur(5, sigma=(0.2, 1.5)), T.GaussianBlur, {}),
        (v2.RandomCrop(16, padding=2, pad_if_needed=True, padding_mode="reflect"), T.RandomCrop, {}),
        (v2.RandomErasing(0.7, value=3), T.RandomErasing, dict(p=0.7)),
        (v2.RandomPhotometricDistort(p=0.2), T.RandomPhotometricDistort, dict(p=0.2)),
        (v2.RandomApply([v2.RandomInvert(1.0), v2.RandomPosterize(3, 1.0)], p=0.4), T.RandomApply, dict(p=0.4)),
        (v2.RandomChoice([v2.RandomEqualize(), v2.RandomSolarize(100)], p=[1, 3]), T.RandomChoice, dict(p=[0.25, 0.75])),
        (v2.Resize(30, max_size=40), T.Resize, {}),
        (v1.RandomResizedCrop(20), T.RandomResizedCrop, dict(size=[20, 20])),
        # the detection and segmentation references' steps
        (v2.RandomZoomOut(fill={tv_tensors.Image: (1, 2, 3), tv_tensors.Mask: 255}, side_range=(1.0, 3.0), p=0.3),
         T.RandomZoomOut, dict(fill=(1, 2, 3), _masks_fill=255, side_range=(1.0, 3.0), p=0.3)),
        (v2.RandomZoomOut(fill=defaultdict(lambda: (9, 9, 9), {tv_tensors.Mask: 0})), T.RandomZoomOut, dict(fill=0)),
        (v2.RandomIoUCrop(0.2, 0.9, 0.6, 1.8, [0.0, 0.5, 1.0], 17), T.RandomIoUCrop,
         dict(min_scale=0.2, max_scale=0.9, min_aspect_ratio=0.6, max_aspect_ratio=1.8, options=[0.0, 0.5, 1.0], trials=17)),
        (v2.RandomShortestSize([480, 512], 1333), T.RandomShortestSize, dict(min_size=[480, 512], max_size=1333)),
        (v2.RandomResize(260, 1040), T.RandomResize, dict(min_size=260, max_size=1040)),
        (v2.ScaleJitter((512, 640), (0.5, 1.5)), T.ScaleJitter, dict(target_size=(512, 640), scale_range=(0.5, 1.5))),
        (v2.ConvertBoundingBoxFormat("CXCYWH"), T.ConvertBoundingBoxFormat, dict(format="CXCYWH")),
        (v2.SanitizeBoundingBoxes(min_size=3, labels_getter=None), T.SanitizeBoundingBoxes, dict(min_size=3, labels_getter=None)),
        (v2.ToPureTensor(), T.ToPureTensor, {}),
    ]
    from torchaug._accelerate import _translate
    for tv, cls, attrs in cases:
        got = _translate(tv)
        assert type(got) is cls, (tv, got)
        for k, v in attrs.items():
            assert getattr(got, k) == v, (tv, k, getattr(got, k))
    assert _translate(v2.Lambda(lambda x: x)) is None and _translate(v2.Compose([v2.RandomInvert(), v2.Lambda(abs)])) is None


def _rot90(img):  # a step torchaug does not have, for the workers (module-level: the workers pickle it)
    return img.transpose(2)


def test_a_start_torchaug_cannot_take_stays_in_the_workers(folder):
    tf = v2.Compose([v2.Lambda(_rot90), v2.CenterCrop(32), v2.PILToTensor()])
    dl = _loader(folder, tf, batch_size=6, num_workers=1)
    fast = torchaug.accelerate(dl, device="cpu")
    assert "workers (1): load with the dataset's loader, then Lambda" in fast.plan
    for (x, y), (xr, yr) in zip(fast, dl):
        assert torch.equal(x, xr) and torch.equal(y, yr)


class _Preset:
    """The shape of torchvision's references/classification presets: a Compose in self.transforms."""

    def __init__(self, crop_size, backend="tensor"):
        steps = [v2.PILToTensor()] if backend == "tensor" else []
        self.transforms = v2.Compose(steps + [v2.RandomResizedCrop(crop_size), v2.RandomHorizontalFlip(0.5),
                                              v2.ToDtype(torch.float, scale=True), v2.Normalize(MEAN, STD), v2.ToPureTensor()])

    def __call__(self, img):
        return self.transforms(img)


class _PresetThatDoesMore(_Preset):
    def __call__(self, img):
        return self.transforms(img) * 2


def test_a_preset_holding_a_compose_is_its_compose(folder):
    # the references' preset with backend="tensor" starts with PILToTensor: a conversion, so the
    # workers still only read bytes and the device decodes
    fast = torchaug.accelerate(_loader(folder, _Preset(24), batch_size=5, num_workers=1), device="cpu")
    assert "workers (1): read file bytes" in fast.plan and "RandomResizedCrop(size=[24, 24]" in fast.plan
    x, y = next(iter(fast))
    assert x.shape == (5, 3, 24, 24) and x.dtype == torch.float32 and y.shape == (5,)
    from torchaug._accelerate import _steps
    assert len(_steps(_Preset(24, backend="pil"))) == 5
    # a __call__ that does anything beside applying the Compose is one step torchaug cannot take
    assert len(_steps(_PresetThatDoesMore(24))) == 1
    with pytest.raises(torchaug.AccelerateError, match=r"no step of the transform makes the images one size"):
        torchaug.accelerate(_loader(folder, _PresetThatDoesMore(24)), device="cpu")


def test_refusals_name_what_is_not_taken(folder, tmp_path, capsys):
    with pytest.raises(torchaug.AccelerateError, match=r"no transform for Lambda.*not at the start of the chain"):
        torchaug.accelerate(_loader(folder, v2.Compose([v2.CenterCrop(32), v2.Lambda(_rot90), v2.PILToTensor()])))
    own = datasets.ImageFolder(folder, transform=v2.PILToTensor(), loader=lambda p: None)
    with pytest.raises(torchaug.AccelerateError, match=r"reads its files with <lambda>, not torchvision's default image loader"):
        torchaug.accelerate(torch.utils.data.DataLoader(own))
    with pytest.raises(torchaug.AccelerateError, match=r"collate_fn 'mine' is the user's"):
        def mine(b):
            return b
        torchaug.accelerate(_loader(folder, v2.PILToTensor(), collate_fn=mine))
    from PIL import Image
    os.makedirs(tmp_path / "a")
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(tmp_path / "a" / "x.png")
    with pytest.raises(torchaug.AccelerateError, match=r"1 of 1 files are not JPEG"):
        torchaug.accelerate(_loader(str(tmp_path), v2.PILToTensor()))
    with pytest.raises(torchaug.AccelerateError, match="dataset must be a torchvision ImageFolder or DatasetFolder"):
        torchaug.accelerate(torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.zeros(4))))
    fast = torchaug.accelerate(_loader(folder, v2.Compose([v2.RandomResizedCrop(24), v2.PILToTensor()])), explain=True,
                               device="cpu")
    out = capsys.readouterr().out
    assert out.strip() == fast.plan and "cpu: decode JPEG (libjpeg-turbo) -> RandomResizedCrop(size=[24, 24]" in out


def test_a_corrupt_file_follows_on_decode_error(folder, tmp_path):
    import shutil
    root = tmp_path / "data"
    shutil.copytree(folder, root)
    with open(root / "dog" / "3.jpg", "r+b") as f:
        f.truncate(100)
    tf = v2.Compose([v2.CenterCrop(32), v2.PILToTensor()])
    with pytest.raises(RuntimeError, match=r"decode_jpeg: sample 12 \(100 bytes, .*dog/3\.jpg\): truncated JPEG"):
        list(torchaug.accelerate(_loader(str(root), tf, batch_size=27), device="cpu"))
    fast = torchaug.accelerate(_loader(str(root), tf, batch_size=27), device="cpu", on_decode_error="skip")
    (x, y), = list(fast)
    assert x.shape[0] == 26 and y.shape[0] == 26 and len(fast.prefetcher.decode_failures) == 1
    assert fast.prefetcher.decode_failures[0][2].endswith("dog/3.jpg): truncated JPEG (the data ends before the image's EOI "
                                                         "marker, or is too short for the size its header declares)")


def test_a_subset_of_the_folder_keeps_its_indices(folder):
    ds = datasets.ImageFolder(folder, transform=v2.Compose([v2.CenterCrop(16), v2.PILToTensor()]))
    picked = [25, 3, 14, 7, 1, 20]
    sub = torch.utils.data.Subset(torch.utils.data.Subset(ds, list(range(1, 27))), [p - 1 for p in picked])
    dl = torch.utils.data.DataLoader(sub, batch_size=4)
    fast = torchaug.accelerate(dl, device="cpu")
    assert "of 6 files" in fast.plan and len(fast) == 2
    for (x, y), (xr, yr) in zip(fast, dl):
        assert torch.equal(y, yr) and torch.equal(x, xr)
    assert torch.equal(torch.cat([y for _, y in fast]), torch.tensor([ds.targets[i] for i in picked]))


def test_a_distributed_sampler_and_its_epochs_are_kept(folder):
    from torch.utils.data import DistributedSampler
    ds = datasets.ImageFolder(folder, transform=v2.Compose([v2.CenterCrop(16), v2.PILToTensor()]))
    sampler = DistributedSampler(ds, num_replicas=2, rank=1, shuffle=True, seed=5)
    dl = torch.utils.data.DataLoader(ds, batch_size=3, sampler=sampler, persistent_workers=True, num_workers=1)
    fast = torchaug.accelerate(dl, device="cpu")
    assert fast.sampler is sampler and len(fast) == len(dl) == 5 and fast.loader.persistent_workers
    for epoch in (0, 1):
        fast.sampler.set_epoch(epoch)
        got = torch.cat([y for _, y in fast])
        want = torch.tensor([ds.targets[i] for i in sampler])
        assert torch.equal(got, want)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (runs on the GPU machine)")
def test_on_cuda_the_batches_are_the_cpu_ones(folder):
    # nvJPEG's decode against libjpeg-turbo's, then the same crop: within a few levels, same labels
    tf = v2.Compose([v2.CenterCrop(32), v2.PILToTensor(), v2.ToDtype(torch.float32, scale=True)])
    dl = _loader(folder, tf, batch_size=9)
    fast = torchaug.accelerate(dl)
    assert "cuda" in fast.plan and "nvJPEG" in fast.plan
    for (x, y), (xr, yr) in zip(fast, dl):
        assert x.device.type == "cuda" and x.shape == xr.shape and torch.equal(y.cpu(), yr)
        assert (x.cpu() - xr).abs().mean() < 3 / 255


def test_the_references_style_script_with_the_two_lines_under_torchrun(folder):
    # benchmarks/reference_train.py (torchvision references' shape) with torchaug.accelerate, two
    # processes with gloo: DistributedSampler per rank, DistributedDataParallel, the Prefetcher's
    # batches (on CUDA when there is one, then moved to the CPU model by the script's own .to())
    import json
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           os.path.join(root, "tests", "_train_launcher.py"), "--script", "benchmarks/reference_train.py",
           "--data-path", folder, "--device", "cpu", "--model", "resnet18", "-b", "3", "-j", "1", "--steps", "3",
           "--warmup", "1", "--train-crop-size", "32", "--accelerate"]
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads([line for line in run.stdout.splitlines() if line.startswith("{")][-1])
    assert result["mode"] == "accelerate" and result["steps"] == 2 and result["img_per_s"] > 0
    assert "DistributedSampler" in result["plan"] and "read file bytes" in result["plan"]


def _ks(a, b) -> float:
    """The two-sample Kolmogorov-Smirnov statistic."""
    a, b = np.sort(np.asarray(a)), np.sort(np.asarray(b))
    grid = np.concatenate([a, b])
    return float(np.max(np.abs(np.searchsorted(a, grid, side="right") / len(a) - np.searchsorted(b, grid, side="right") / len(b))))


def test_random_chain_outputs_are_distributed_as_the_original_loaders(tmp_path):
    # per-image statistics of a random chain (crop scale and place, brightness, flip) over many
    # draws: the accelerated loader's against torchvision's per-sample loop in the workers
    from PIL import Image
    os.makedirs(tmp_path / "a")
    yy, xx = np.mgrid[0:60, 0:80]
    for i in range(6):  # gradients: the crop's place, size and flip show in its statistics
        img = np.stack([xx * 3, yy * 4 + 5 * i, (xx + yy) * 2], -1).clip(0, 255).astype(np.uint8)
        Image.fromarray(img).save(tmp_path / "a" / f"{i}.jpg", quality=95)
    tf = v2.Compose([v2.RandomResizedCrop(24, scale=(0.1, 1.0)), v2.RandomHorizontalFlip(), v2.ColorJitter(brightness=0.5),
                     v2.PILToTensor(), v2.ToDtype(torch.float32, scale=True)])
    dl = _loader(str(tmp_path), tf, batch_size=6)
    fast = torchaug.accelerate(dl, device="cpu")
    torch.manual_seed(0)
    stats = {"tv": [], "ta": []}
    for _ in range(100):
        for key, loader in (("tv", dl), ("ta", fast)):
            for x, _ in loader:
                stats[key] += [torch.stack([x.mean((1, 2, 3)), x[:, 0].std((1, 2)),
                                            x[..., :12].mean((1, 2, 3)) - x[..., 12:].mean((1, 2, 3))], 1)]
    tv, ta = torch.cat(stats["tv"]).numpy(), torch.cat(stats["ta"]).numpy()
    n = len(tv)
    bound = 1.95 * math.sqrt(2 / n)  # KS at the 0.1% level
    for k, what in enumerate(("mean", "red's spread", "left - right")):
        assert _ks(tv[:, k], ta[:, k]) < bound, (what, _ks(tv[:, k], ta[:, k]), bound)
