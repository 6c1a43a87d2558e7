"""Transforms whose output size is drawn per sample (RandomZoomOut, RandomIoUCrop,
RandomShortestSize, RandomResize, ScaleJitter): each sample's image, boxes, masks and keypoints
equal torchvision v2's transform applied to that sample alone with the same parameters; the
sizes drawn from a seed equal torchvision's own draws from it; RandomIoUCrop's batched search
picks what torchvision's loop picks from the same numbers."""
import math

import pytest
import torch
from conftest import assert_close_images, random_images, requires_torchvision, torchvision

import torchaug.transforms as T
from torchaug.transforms import _sized

if torchvision is not None:
    from torchvision import tv_tensors
    from torchvision.transforms import v2 as TV

pytestmark = requires_torchvision


def _batch(dtype, channels, device, fmt, gen, sizes=((37, 52), (41, 29), (30, 30), (64, 45))):
    images, targets = [], []
    for h, w in sizes:
        images.append(random_images(1, channels, h, w, dtype, device, generator=gen)[0])
        n = 3
        xy = torch.rand(n, 2, generator=gen) * torch.tensor([w * 0.8, h * 0.8])
        wh = torch.rand(n, 2, generator=gen) * torch.tensor([w * 0.5, h * 0.5]) + 1
        data = {"XYXY": torch.cat([xy, xy + wh], 1), "XYWH": torch.cat([xy, wh], 1),
                "CXCYWH": torch.cat([xy + wh / 2, wh], 1)}[fmt]
        t = {"boxes": tv_tensors.BoundingBoxes(data.to(device), format=fmt, canvas_size=(h, w)),
             "masks": tv_tensors.Mask(torch.randint(0, 3, (n, h, w), generator=gen, dtype=torch.uint8).to(device)),
             "labels": torch.arange(n, device=device)}
        if hasattr(tv_tensors, "KeyPoints"):
            t["keypoints"] = tv_tensors.KeyPoints((torch.rand(n, 2, generator=gen) * torch.tensor([w, h])).to(device),
                                                  canvas_size=(h, w))
        targets.append(t)
    return images, targets


def _tv_params(name, t, p, i, boxes_xyxy):
    """torchvision's params for sample i (None: the sample is left as it is)."""
    if name == "RandomZoomOut":
        return dict(padding=p["padding"][i].tolist()) if p["applies"][i] else None
    if name == "RandomIoUCrop":
        if not p["cropped"][i]:
            return None
        top, left, h, w = p["crop"][i].tolist()
        cx, cy = 0.5 * (boxes_xyxy[:, 0] + boxes_xyxy[:, 2]), 0.5 * (boxes_xyxy[:, 1] + boxes_xyxy[:, 3])
        within = (left < cx) & (cx < left + w) & (top < cy) & (cy < top + h)
        return dict(top=top, left=left, height=h, width=w, is_within_crop_area=within)
    return dict(size=tuple(p["size"][i].tolist()))


def _tv_transform(name, t):
    if name == "RandomZoomOut":
        fill = {tv_tensors.Image: t.fill, "others": 0} if isinstance(t.fill, tuple) else t.fill
        return TV.RandomZoomOut(fill=fill, side_range=t.side_range, p=1.0)
    if name == "RandomIoUCrop":
        return TV.RandomIoUCrop()
    mode = TV.InterpolationMode(getattr(t.interpolation, "value", t.interpolation))
    return TV.RandomShortestSize(1, interpolation=mode, antialias=t.antialias)  # its transform resizes to params["size"]


CASES = {
    "RandomZoomOut": lambda g: T.RandomZoomOut(fill=(10, 200, 30), side_range=(1.0, 2.5), p=0.7, generator=g),
    "RandomZoomOut(fill=7)": lambda g: T.RandomZoomOut(fill=7, p=1.0, generator=g),
    "RandomIoUCrop": lambda g: T.RandomIoUCrop(generator=g),
    "RandomShortestSize": lambda g: T.RandomShortestSize([20, 33, 48], max_size=60, generator=g),
    "RandomShortestSize(bicubic)": lambda g: T.RandomShortestSize(40, interpolation="bicubic", generator=g),
    "RandomResize": lambda g: T.RandomResize(16, 70, generator=g),
    "RandomResize(nearest)": lambda g: T.RandomResize(16, 70, interpolation="nearest", generator=g),
    "ScaleJitter": lambda g: T.ScaleJitter((48, 40), scale_range=(0.5, 1.5), generator=g),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("dtype,channels", [(torch.uint8, 3), (torch.uint8, 1), (torch.float32, 3)])
@pytest.mark.parametrize("fmt", ["XYXY", "CXCYWH"])
def test_each_sample_is_torchvisions_transform_with_its_parameters(case, dtype, channels, fmt, device):
    gen = torch.Generator().manual_seed(hash((case, str(dtype), channels, fmt)) % 2**31)
    images, targets = _batch(dtype, channels, device, fmt, gen)
    t = CASES[case](torch.Generator().manual_seed(3))
    if channels == 1 and isinstance(getattr(t, "fill", None), tuple):
        t.fill = t.fill[0]
    if dtype == torch.float32 and hasattr(t, "fill"):
        t.fill = tuple(v / 255 for v in t.fill) if isinstance(t.fill, tuple) else t.fill / 255
    (out, tout), p = t(images, targets, return_params=True)
    name = case.split("(")[0]
    tv = _tv_transform(name, t)
    apply = getattr(tv, "transform", None) or tv._transform
    assert isinstance(out, list) and len(out) == len(images)
    for i, (img, tg) in enumerate(zip(images, targets)):
        xyxy = TV.functional.convert_bounding_box_format(tg["boxes"], new_format="XYXY").as_subclass(torch.Tensor)
        params = _tv_params(name, t, p, i, xyxy)
        want = {k: v if params is None or not isinstance(v, (tv_tensors.BoundingBoxes, tv_tensors.Mask)) and k not in ("keypoints",)
                else apply(v, params) for k, v in tg.items()}
        if params is None:
            want_img = img
        elif dtype == torch.uint8 and str(getattr(t, "interpolation", "")).lower().endswith("bicubic"):
            # uint8 bicubic: torchvision's float result rounded once (see test_geometry.py's docstring)
            want_img = apply(tv_tensors.Image(img.float()), params).as_subclass(torch.Tensor).clamp(0, 255).round().to(dtype)
        else:
            want_img = apply(tv_tensors.Image(img), params).as_subclass(torch.Tensor)
        assert out[i].shape == want_img.shape, (case, i)
        assert_close_images(out[i].cpu(), want_img.cpu(), dtype, f"{case} sample {i}")
        assert torch.equal(tout[i]["masks"].cpu(), want["masks"].cpu()), (case, i)
        assert tuple(tout[i]["boxes"].canvas_size) == tuple(want["boxes"].canvas_size)
        torch.testing.assert_close(tout[i]["boxes"].as_subclass(torch.Tensor).cpu(), want["boxes"].as_subclass(torch.Tensor).cpu(),
                                   atol=2e-5, rtol=0)
        if "keypoints" in tg and params is not None:
            kp = apply(tg["keypoints"], params)
            torch.testing.assert_close(tout[i]["keypoints"].as_subclass(torch.Tensor).cpu(), kp.as_subclass(torch.Tensor).cpu(),
                                       atol=2e-5, rtol=0)
        assert torch.equal(tout[i]["labels"], tg["labels"])
    # replay
    again = t(images, targets, params=p)
    assert all(torch.equal(a, b) for a, b in zip(again[0], out))


@pytest.mark.parametrize("name,make", [
    ("RandomZoomOut", lambda: (T.RandomZoomOut(p=0.6), TV.RandomZoomOut(p=0.6))),
    ("RandomShortestSize", lambda: (T.RandomShortestSize([20, 33, 48], 60), TV.RandomShortestSize([20, 33, 48], 60))),
    ("RandomResize", lambda: (T.RandomResize(16, 70), TV.RandomResize(16, 70))),
    ("ScaleJitter", lambda: (T.ScaleJitter((48, 40), (0.5, 1.5)), TV.ScaleJitter((48, 40), (0.5, 1.5)))),
])
def test_one_image_from_a_seed_is_torchvisions_draw(name, make):
    # one sample draws the numbers torchvision draws from the same seed, and sizes them as it does
    ours, theirs = make()
    for seed in range(40):
        x = torch.zeros(3, 37 + seed, 61 - seed, dtype=torch.uint8)
        torch.manual_seed(seed)
        want = theirs(x)
        torch.manual_seed(seed)
        got = ours(x)
        assert got.shape == want.shape, (name, seed)


def _reference_iou_search(t, h, w, boxes, picks, scales, spots):
    """torchvision's RandomIoUCrop.make_params loop, reading its random numbers from the given
    arrays (round j's option picks[j], trial k's scales[j, k] and spots[j, k])."""
    for j in range(picks.shape[0]):
        min_jaccard = t.options[int(picks[j])]
        if min_jaccard >= 1.0:
            return None
        for k in range(t.trials):
            r = t.min_scale + (t.max_scale - t.min_scale) * scales[j, k]
            new_w, new_h = int(w * r[0]), int(h * r[1])
            if new_h == 0 or not (t.min_aspect_ratio <= new_w / new_h <= t.max_aspect_ratio):
                continue
            r = spots[j, k]
            left, top = int((w - new_w) * r[0]), int((h - new_h) * r[1])
            right, bottom = left + new_w, top + new_h
            if left == right or top == bottom:
                continue
            cx, cy = 0.5 * (boxes[:, 0] + boxes[:, 2]), 0.5 * (boxes[:, 1] + boxes[:, 3])
            within = (left < cx) & (cx < right) & (top < cy) & (cy < bottom)
            if not within.any():
                continue
            ious = torchvision.ops.box_iou(boxes[within], torch.tensor([[left, top, right, bottom]], dtype=boxes.dtype)) \
                if _box_iou_loads() else _box_iou(boxes[within], torch.tensor([[left, top, right, bottom]], dtype=boxes.dtype))
            if ious.max() < min_jaccard:
                continue
            return [top, left, new_h, new_w]
    return None


def _box_iou_loads():
    try:
        torchvision.ops.box_iou(torch.zeros(1, 4), torch.zeros(1, 4))
        return True
    except Exception:
        return False


def _box_iou(a, b):  # torchvision.ops.box_iou's arithmetic, where its compiled ops do not load
    area1 = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area2 = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    lt, rb = torch.max(a[:, None, :2], b[:, :2]), torch.min(a[:, None, 2:], b[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter / (area1[:, None] + area2 - inter)


def test_iou_crop_batched_search_is_torchvisions_loop(monkeypatch):
    draws = {"int": [], "float": []}
    real_int, real_float = _sized._SizedPerSample._draw_int, _sized._SizedPerSample._draw

    def record_int(self, *a):
        out = real_int(self, *a)
        draws["int"].append(out)
        return out

    def record_float(self, *a):
        out = real_float(self, *a)
        draws["float"].append(out)
        return out
    monkeypatch.setattr(_sized._SizedPerSample, "_draw_int", record_int)
    monkeypatch.setattr(_sized._SizedPerSample, "_draw", record_float)
    gen = torch.Generator().manual_seed(0)
    sizes = [(60, 80), (33, 90), (120, 40), (50, 50)] * 8
    images = [torch.zeros(3, h, w, dtype=torch.uint8) for h, w in sizes]
    targets, boxes = [], []
    for h, w in sizes:
        n = int(torch.randint(0, 4, (1,), generator=gen))
        xy = torch.rand(n, 2, generator=gen) * torch.tensor([w, h]) * 0.9
        b = torch.cat([xy, xy + torch.rand(n, 2, generator=gen) * 20 + 0.5], 1)
        boxes.append(b)
        targets.append({"boxes": tv_tensors.BoundingBoxes(b, format="XYXY", canvas_size=(h, w))})
    t = T.RandomIoUCrop(sampler_options=[0.0, 0.3, 0.7, 0.9, 1.0], trials=10, max_rounds=12, generator=torch.Generator().manual_seed(5))
    _, p = t(images, targets, return_params=True)
    picks = torch.cat(draws["int"], 1)
    scales = torch.cat(draws["float"][0::2], 1)
    spots = torch.cat(draws["float"][1::2], 1)
    cropped = 0
    for i, (h, w) in enumerate(sizes):
        want = _reference_iou_search(t, h, w, boxes[i], picks[i], scales[i], spots[i])
        rounds = picks.shape[1]
        if want is None:
            assert not p["cropped"][i], i
        else:
            cropped += 1
            assert p["cropped"][i] and p["crop"][i].tolist() == want, (i, p["crop"][i].tolist(), want)
        assert rounds <= 12
    assert 0 < cropped < len(sizes)


def test_outputs_inputs_and_errors():
    x = torch.randint(0, 256, (3, 3, 20, 30), dtype=torch.uint8)
    out = T.RandomShortestSize(10)(x)
    assert isinstance(out, list) and [o.shape for o in out] == [(3, 10, 15)] * 3  # a batch becomes a list
    assert T.RandomResize(5, 6)(x[0]).shape == (3, 5, 7)  # one image stays one image
    from torchaug.io import RaggedImages
    ragged = RaggedImages.from_images([x[0], x[1, :, :10]])
    assert [o.shape for o in T.ScaleJitter((20, 20), (1.0, 1.0))(ragged)] == [(3, 13, 20), (3, 6, 20)]
    with pytest.raises(ValueError, match="RandomIoUCrop: needs bounding boxes among the targets"):
        T.RandomIoUCrop()(x)
    with pytest.raises(ValueError, match=r"RandomZoomOut: side_range must be \(min, max\) with 1 <= min <= max"):
        T.RandomZoomOut(side_range=(0.5, 2.0))
    with pytest.raises(ValueError, match="RandomResize: need ints 0 < min_size < max_size"):
        T.RandomResize(10, 10)
    with pytest.raises(ValueError, match="RandomIoUCrop: trials must be an int >= 1"):
        T.RandomIoUCrop(trials=0)
    with pytest.raises(TypeError, match="RandomZoomOut: images must be"):
        T.RandomZoomOut()(torch.zeros(2, 2))
    with pytest.raises(RuntimeError, match="RandomZoomOut has no TorchScript form"):
        torch.jit.script(T.RandomZoomOut())


def test_detection_recipe_runs_per_sample():
    # torchvision's detection reference (ssdlite): photometric distort, zoom out, IoU crop, flip, sanitize
    gen = torch.Generator().manual_seed(1)
    images, targets = _batch(torch.uint8, 3, "cpu", "XYXY", gen)
    chain = T.Compose([T.RandomPhotometricDistort(p=1.0), T.RandomZoomOut(fill=(123, 117, 104)), T.RandomIoUCrop(),
                       T.RandomHorizontalFlip(), T.ToDtype(torch.float32, scale=True), T.SanitizeBoundingBoxes()])
    torch.manual_seed(0)
    out, tout = chain(images, targets)
    assert len(out) == len(images) and all(o.dtype == torch.float32 for o in out)
    for o, tg in zip(out, tout):
        assert tuple(tg["boxes"].canvas_size) == tuple(o.shape[-2:]) and tg["masks"].shape[-2:] == o.shape[-2:]
        b = tg["boxes"].as_subclass(torch.Tensor)
        assert ((b[:, 2] > b[:, 0]) & (b[:, 3] > b[:, 1])).all() and b.shape[0] == tg["labels"].shape[0]


def test_a_list_of_sizes_runs_each_size_as_a_batch():
    # a transform of one size per batch takes a list of images of different sizes: the images of
    # each size go through it as one batch (their own draws), targets follow, a list comes back
    gen = torch.Generator().manual_seed(4)
    images, targets = _batch(torch.uint8, 3, "cpu", "XYXY", gen, sizes=((20, 30), (24, 18), (20, 30)))
    t = T.RandomAffine(20, translate=(0.1, 0.1))
    (out, tout), p = t(images, targets, return_params=True)
    assert isinstance(out, list) and [o.shape for o in out] == [im.shape for im in images]
    assert sorted(idx for idx, _ in p["per_size"]) == [[0, 2], [1]]
    for idx, gp in p["per_size"]:
        want, want_t = t(torch.stack([images[i] for i in idx]), [targets[i] for i in idx], params=gp)
        for k, i in enumerate(idx):
            assert torch.equal(out[i], want[k])
            assert torch.equal(tout[i]["boxes"].as_subclass(torch.Tensor), want_t[k]["boxes"].as_subclass(torch.Tensor))
            assert torch.equal(tout[i]["masks"], want_t[k]["masks"])
    chain = T.Compose([T.ColorJitter(0.3, 0.3, 0.3, 0.1), T.RandomHorizontalFlip(), T.ToDtype(torch.float32, scale=True)])
    (out, tout), p = chain(images, targets, return_params=True)
    assert all(o.dtype == torch.float32 and o.shape == im.shape for o, im in zip(out, images))
    again, _ = chain(images, targets, params=p)
    assert all(torch.equal(a, b) for a, b in zip(again, out))
    with pytest.raises(TypeError, match=r"RandomAffine: with a list of 3 images of different sizes, each target must be a list of 3"):
        t(images, targets[0])
    with pytest.raises(ValueError, match=r"RandomAffine: params for a list of 3 images must be the \{'per_size': ...\}"):
        t(images, params={"angle": torch.zeros(3)})


@pytest.mark.parametrize("cls", ["RandomHorizontalFlip", "RandomVerticalFlip"])
def test_flips_take_a_list_of_sizes_image_by_image(cls):
    # one coin per image, as for a batch; each image, its boxes, masks and keypoints flipped as
    # torchvision flips that image alone
    gen = torch.Generator().manual_seed(6)
    images, targets = _batch(torch.uint8, 3, "cpu", "XYXY", gen)
    t = getattr(T, cls)(p=0.5, generator=torch.Generator().manual_seed(3))
    (out, tout), p = t(images, targets, return_params=True)
    flips = p["flip"].tolist()
    assert isinstance(out, list) and 0 < sum(flips) < len(images)
    fn = TV.functional.horizontal_flip if cls == "RandomHorizontalFlip" else TV.functional.vertical_flip
    for img, tg, o, to, f in zip(images, targets, out, tout, flips):
        assert torch.equal(o, fn(img) if f else img)
        for key in ("boxes", "masks") + (("keypoints",) if "keypoints" in tg else ()):
            want = fn(tg[key]) if f else tg[key]
            torch.testing.assert_close(to[key].as_subclass(torch.Tensor), want.as_subclass(torch.Tensor))


def test_dtype_and_normalize_take_a_list_image_by_image():
    gen = torch.Generator().manual_seed(8)
    images, targets = _batch(torch.uint8, 3, "cpu", "XYXY", gen)
    chain = T.Compose([T.ToDtype(torch.float32, scale=True), T.Normalize([0.5, 0.4, 0.3], [0.2, 0.3, 0.25])])
    out, tout = chain(images, targets)
    for img, o, tg, to in zip(images, out, targets, tout):
        want = TV.functional.normalize(TV.functional.to_dtype(img, torch.float32, scale=True), [0.5, 0.4, 0.3], [0.2, 0.3, 0.25])
        torch.testing.assert_close(o, want)
        assert to["boxes"] is tg["boxes"] or torch.equal(to["boxes"], tg["boxes"])
