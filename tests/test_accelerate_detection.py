"""torchaug.accelerate on the detection references' loader: a CocoDetection wrapped by
torchvision's wrap_dataset_for_transforms_v2 with a joint preset (photometric distort, zoom out, IoU
crop, flip, ToDtype, box format, SanitizeBoundingBoxes, ToPureTensor), a Subset of the images with
annotations and the references' collate_fn. The workers read bytes and annotations (the targets
built from the files' headers), the device decodes and transforms images with their boxes and
masks, then the loader's collate_fn runs on the device's samples."""
import json
import os
from collections import defaultdict

import numpy as np
import pytest
import torch
from conftest import CUDA, requires_torchvision, torchvision

import torchaug

if torchvision is not None:
    from torchvision import datasets, tv_tensors
    from torchvision.transforms import v2

pytestmark = [requires_torchvision, pytest.mark.skipif(
    __import__("importlib").util.find_spec("pycocotools") is None, reason="CocoDetection needs pycocotools")]


def collate_fn(batch):  # torchvision references/detection/utils.py
    return tuple(zip(*batch))


class DetectionPresetTrain:  # references/detection/presets.py, data_augmentation="ssd", use_v2, backend "pil"
    def __init__(self, hflip_prob=0.5, mean=(123.0, 117.0, 104.0)):
        fill = defaultdict(lambda: mean, {tv_tensors.Mask: 0})
        self.transforms = v2.Compose([v2.RandomPhotometricDistort(), v2.RandomZoomOut(fill=fill), v2.RandomIoUCrop(),
                                      v2.RandomHorizontalFlip(p=hflip_prob), v2.PILToTensor(), v2.ToDtype(torch.float, scale=True),
                                      v2.ConvertBoundingBoxFormat(tv_tensors.BoundingBoxFormat.XYXY), v2.SanitizeBoundingBoxes(),
                                      v2.ToPureTensor()])

    def __call__(self, img, target):
        return self.transforms(img, target)


@pytest.fixture(scope="module")
def coco(tmp_path_factory):
    """A COCO-style folder: 14 JPEGs of different sizes (one progressive, one with an EXIF block
    before its frame header), 1-3 objects each with a polygon segmentation, two without any."""
    from PIL import Image
    root = tmp_path_factory.mktemp("coco")
    g = np.random.default_rng(0)
    images, annotations = [], []
    for i in range(14):
        h, w = int(g.integers(60, 130)), int(g.integers(60, 130))
        name = f"{i:04d}.jpg"
        pixels = (g.random((h, w, 3)) * 255).astype(np.uint8)
        kw = {"progressive": True} if i == 3 else ({"exif": Image.Exif()} if i == 4 else {})
        if i == 4:
            kw["exif"][0x010E] = "x" * 3000  # an APP1 segment of a few KB before the SOF marker
        Image.fromarray(pixels).save(root / name, quality=90, **kw)
        images.append({"id": 100 + i, "file_name": name, "height": h, "width": w})
        for _ in range(0 if i in (5, 9) else int(g.integers(1, 4))):
            x, y = float(g.uniform(0, w * 0.6)), float(g.uniform(0, h * 0.6))
            bw, bh = float(g.uniform(8, w - x)), float(g.uniform(8, h - y))
            poly = [x, y, x + bw, y, x + bw, y + bh, x, y + bh]
            annotations.append({"id": len(annotations) + 1, "image_id": 100 + i, "category_id": int(g.integers(1, 5)),
                                "bbox": [x, y, bw, bh], "area": bw * bh, "iscrowd": 0, "segmentation": [poly]})
    ann = root / "instances.json"
    ann.write_text(json.dumps({"images": images, "annotations": annotations,
                               "categories": [{"id": c, "name": f"c{c}"} for c in range(1, 5)]}))
    return str(root), str(ann)


def _dataset(coco, transforms, keys=("boxes", "labels", "image_id", "masks")):
    root, ann = coco
    ds = datasets.CocoDetection(root, ann, transforms=transforms)
    ds = datasets.wrap_dataset_for_transforms_v2(ds, target_keys=list(keys))
    # references/detection/coco_utils.py: _coco_remove_images_without_annotations
    keep = [i for i, image_id in enumerate(ds.ids) if len(ds.coco.getAnnIds(imgIds=image_id)) > 0]
    return torch.utils.data.Subset(ds, keep)


def test_a_deterministic_chain_gives_the_original_images_and_targets(coco):
    # decode (libjpeg-turbo, as PIL), flip, dtype, box format, sanitize: the same images and targets
    tf = v2.Compose([v2.PILToTensor(), v2.RandomHorizontalFlip(p=1.0), v2.ToDtype(torch.float32, scale=True),
                     v2.ConvertBoundingBoxFormat("CXCYWH"), v2.SanitizeBoundingBoxes(min_size=20), v2.ToPureTensor()])
    dl = torch.utils.data.DataLoader(_dataset(coco, tf), batch_size=5, num_workers=2, collate_fn=collate_fn)
    fast = torchaug.accelerate(dl, device="cpu")
    assert "read file bytes and annotations" in fast.plan and "collate_fn collate_fn" in fast.plan
    got, want = list(fast), list(dl)
    assert len(fast) == len(dl) == 3 and len(got) == 3
    for (x, t), (xr, tr) in zip(got, want):
        assert isinstance(x, tuple) and isinstance(t, tuple) and len(x) == len(xr)
        for a, b, ta, tb in zip(x, xr, t, tr):
            torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
            assert set(ta) == set(tb) and ta["image_id"] == tb["image_id"]
            assert type(ta["boxes"]) is torch.Tensor and type(ta["masks"]) is torch.Tensor  # ToPureTensor
            torch.testing.assert_close(ta["boxes"], tb["boxes"], atol=1e-4, rtol=0)
            assert torch.equal(ta["labels"], tb["labels"]) and torch.equal(ta["masks"], tb["masks"])


def test_the_references_ssd_preset_runs_per_sample_with_its_batch_sampler(coco):
    ds = _dataset(coco, DetectionPresetTrain())
    batches = torch.utils.data.BatchSampler(torch.utils.data.RandomSampler(ds), 4, drop_last=False)
    dl = torch.utils.data.DataLoader(ds, batch_sampler=batches, num_workers=1, collate_fn=collate_fn)
    fast = torchaug.accelerate(dl, device="cpu")
    for step in ("RandomPhotometricDistort", "RandomZoomOut", "RandomIoUCrop", "RandomHorizontalFlip",
                 "SanitizeBoundingBoxes", "ToPureTensor"):
        assert step in fast.plan
    torch.manual_seed(0)
    seen = []
    for _ in range(3):
        for images, targets in fast:
            assert len(images) == len(targets) <= 4
            for x, t in zip(images, targets):
                assert x.dtype == torch.float32 and x.shape[0] == 3 and 0 <= float(x.min()) and float(x.max()) <= 1
                b = t["boxes"]
                assert type(b) is torch.Tensor and b.shape[0] == t["labels"].shape[0] == t["masks"].shape[0]
                assert t["masks"].shape[-2:] == x.shape[-2:]
                assert ((b[:, 2] > b[:, 0]) & (b[:, 3] > b[:, 1])).all()
                assert (b[:, 0] >= 0).all() and (b[:, 2] <= x.shape[-1]).all() and (b[:, 3] <= x.shape[-2]).all()
                seen.append((t["image_id"], tuple(x.shape)))
    ids = {i for i, _ in seen}
    assert ids == {ds.dataset.ids[i] for i in ds.indices} and len(seen) == 3 * len(ds)
    # per-sample draws: an image's size changes from epoch to epoch (zoom out, IoU crop)
    shapes = defaultdict(set)
    for i, s in seen:
        shapes[i].add(s)
    assert sum(len(s) > 1 for s in shapes.values()) >= len(ids) // 2


def test_refusals_name_what_is_not_taken(coco, tmp_path):
    with pytest.raises(torchaug.AccelerateError, match=r"no transform for Lambda.*every step runs on the device"):
        torchaug.accelerate(torch.utils.data.DataLoader(_dataset(coco, v2.Compose([v2.Lambda(lambda x: x), v2.PILToTensor()])),
                                                        collate_fn=collate_fn))
    root, ann = coco
    apart = datasets.wrap_dataset_for_transforms_v2(datasets.CocoDetection(root, ann, transform=v2.PILToTensor()))
    with pytest.raises(torchaug.AccelerateError, match=r"transform= / target_transform= act on the image and the target apart"):
        torchaug.accelerate(torch.utils.data.DataLoader(apart, collate_fn=collate_fn))
    data = json.loads(open(ann).read())
    data["images"][0]["file_name"] = "0000.png"
    other = tmp_path / "png.json"
    other.write_text(json.dumps(data))
    png = datasets.wrap_dataset_for_transforms_v2(datasets.CocoDetection(root, str(other), transforms=v2.PILToTensor()))
    with pytest.raises(torchaug.AccelerateError, match=r"1 of 14 files are not JPEG.*0000\.png"):
        torchaug.accelerate(torch.utils.data.DataLoader(png, collate_fn=collate_fn))


def test_a_corrupt_file_follows_on_decode_error(coco, tmp_path):
    import shutil
    root, ann = coco
    broken = tmp_path / "broken"
    shutil.copytree(root, broken)
    with open(broken / "0002.jpg", "r+b") as f:
        f.truncate(150)
    ds = datasets.wrap_dataset_for_transforms_v2(datasets.CocoDetection(str(broken), ann, transforms=v2.PILToTensor()))
    with pytest.raises(RuntimeError, match=r"decode_jpeg: sample 2 \(150 bytes, .*0002\.jpg\)"):
        list(torchaug.accelerate(torch.utils.data.DataLoader(ds, batch_size=14, collate_fn=collate_fn), device="cpu"))
    fast = torchaug.accelerate(torch.utils.data.DataLoader(ds, batch_size=14, collate_fn=collate_fn), device="cpu",
                               on_decode_error="skip")
    (images, targets), = list(fast)
    assert len(images) == len(targets) == 13 and 102 not in [t["image_id"] for t in targets]


def test_jpeg_size_reads_the_frame_header(coco):
    from PIL import Image

    from torchaug._accelerate import _jpeg_size
    root, _ = coco
    for name in sorted(os.listdir(root)):
        if name.endswith(".jpg"):
            data = np.fromfile(os.path.join(root, name), dtype=np.uint8)
            w, h = Image.open(os.path.join(root, name)).size
            assert _jpeg_size(data) == (h, w), name
            assert _jpeg_size(data[:20]) is None  # ends before the frame header
    assert _jpeg_size(np.zeros(100, np.uint8)) is None


@pytest.mark.skipif(not CUDA, reason="needs a CUDA device (runs on the GPU machine)")
def test_on_cuda_the_samples_are_the_cpu_ones(coco):
    tf = v2.Compose([v2.PILToTensor(), v2.RandomHorizontalFlip(p=1.0), v2.ToDtype(torch.float32, scale=True), v2.ToPureTensor()])
    dl = torch.utils.data.DataLoader(_dataset(coco, tf), batch_size=6, collate_fn=collate_fn)
    fast = torchaug.accelerate(dl)
    for (x, t), (xr, tr) in zip(fast, dl):
        for a, b, ta, tb in zip(x, xr, t, tr):
            assert a.device.type == "cuda" and a.shape == b.shape and (a.cpu() - b).abs().mean() < 3 / 255
            torch.testing.assert_close(ta["boxes"].cpu(), tb["boxes"], atol=1e-4, rtol=0)
            assert torch.equal(ta["masks"].cpu(), tb["masks"])
