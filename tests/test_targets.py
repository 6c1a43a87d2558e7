"""Boxes, masks and keypoints that follow the geometric transforms: per-sample parity
with torchvision v2's functional ops applied to tv_tensors with the same parameters."""
import math
import zlib

import pytest
import torch

import torchaug.functional as F
import torchaug.transforms as T
from conftest import requires_cuda, requires_torchvision, torchvision

if torchvision is not None:
    from torchvision import tv_tensors
    from torchvision.transforms.v2 import functional as TF
requires_tv = pytest.mark.skipif(torchvision is None, reason="torchvision is not installed")
HAS_KEYPOINTS = torchvision is not None and hasattr(tv_tensors, "KeyPoints")

B, H, W = 4, 60, 80
COUNTS = (3, 0, 5, 2)


def _boxes(n, gen, fmt="XYXY", h=H, w=W, dtype=torch.float32):
    xy = torch.rand(n, 2, generator=gen) * torch.tensor([w, h]) - 5
    wh = torch.rand(n, 2, generator=gen) * 30 + 1
    xyxy = torch.cat([xy, xy + wh], 1)
    data = {"XYXY": xyxy, "XYWH": torch.cat([xy, wh], 1), "CXCYWH": torch.cat([xy + wh / 2, wh], 1)}[fmt]
    return tv_tensors.BoundingBoxes(data.to(dtype), format=fmt, canvas_size=(h, w))


def _sample(gen, fmt="XYXY", device="cpu", counts=COUNTS):
    x = torch.randint(0, 256, (len(counts), 3, H, W), dtype=torch.uint8, generator=gen).to(device)
    targets = []
    for n in counts:
        t = {"boxes": _boxes(n, gen, fmt).to(device),
             "masks": tv_tensors.Mask(torch.randint(0, 3, (n, H, W), generator=gen, dtype=torch.uint8).to(device)),
             "labels": torch.arange(n, device=device)}
        if HAS_KEYPOINTS:
            t["keypoints"] = tv_tensors.KeyPoints((torch.rand(n, 3, 2, generator=gen) * torch.tensor([W, H])).to(device),
                                                  canvas_size=(H, W))
        targets.append(t)
    return x, targets


def _tv_apply(name, t, p, i, obj, h=H, w=W):
    """torchvision's functional op of transform `name` with sample i's parameters."""
    if name == "RandomResizedCrop":
        top, left, ch, cw = p["boxes"][i].tolist()
        return TF.resized_crop(obj, top, left, ch, cw, t.size)
    if name == "RandomHorizontalFlip":
        return TF.horizontal_flip(obj) if p["flip"][i] else obj
    if name == "RandomVerticalFlip":
        return TF.vertical_flip(obj) if p["flip"][i] else obj
    if name == "RandomAffine":
        return TF.affine(obj, float(p["angle"][i]), p["translate"][i].tolist(), float(p["scale"][i]), p["shear"][i].tolist())
    if name == "RandomRotation":
        a = float(p["angle"][0 if t.expand else i])
        return TF.rotate(obj, a, expand=t.expand)
    if name == "Pad":
        return TF.pad(obj, t.padding)
    if name == "RandomCrop":
        return TF.crop(TF.pad(obj, p["padding"]), int(p["top"][i]), int(p["left"][i]), *t.size)
    if name == "Resize":
        return TF.resize(obj, t.size)
    if name == "CenterCrop":
        return TF.center_crop(obj, t.size)
    if name in ("RandAugment", "TrivialAugmentWide", "AutoAugment"):
        for k in range(p["ops"].shape[1]):
            op, m = int(p["ops"][i, k]), float(p["magnitudes"][i, k])
            if op == 14:
                obj = TF.affine(obj, 0.0, [0, 0], 1.0, [math.degrees(math.atan(m)), 0.0], center=[0, 0])
            elif op == 15:
                obj = TF.affine(obj, 0.0, [0, 0], 1.0, [0.0, math.degrees(math.atan(m))], center=[0, 0])
            elif op == 16:
                obj = TF.affine(obj, 0.0, [int(m), 0], 1.0, [0.0, 0.0])
            elif op == 17:
                obj = TF.affine(obj, 0.0, [0, int(m)], 1.0, [0.0, 0.0])
            elif op == 18:
                obj = TF.rotate(obj, m)
        return obj
    raise AssertionError(name)


TRANSFORMS = {
    "RandomResizedCrop": lambda g: T.RandomResizedCrop(32, generator=g),
    "RandomHorizontalFlip": lambda g: T.RandomHorizontalFlip(generator=g),
    "RandomVerticalFlip": lambda g: T.RandomVerticalFlip(generator=g),
    "RandomAffine": lambda g: T.RandomAffine(30, (0.1, 0.1), (0.8, 1.2), (-10, 10, -5, 5), generator=g),
    "RandomRotation": lambda g: T.RandomRotation(40, generator=g),
    "RandomRotation(expand)": lambda g: T.RandomRotation(40, expand=True, generator=g),
    "Pad": lambda g: T.Pad([2, 3, 4, 5]),
    "RandomCrop": lambda g: T.RandomCrop(40, padding=4, generator=g),
    "Resize": lambda g: T.Resize(50),
    "CenterCrop": lambda g: T.CenterCrop(70),
    "RandAugment": lambda g: T.RandAugment(3, 20, generator=g),
    "TrivialAugmentWide": lambda g: T.TrivialAugmentWide(generator=g),
    "AutoAugment": lambda g: T.AutoAugment(T.AutoAugmentPolicy.CIFAR10, generator=g),
}


def _mismatch(a, b) -> float:
    return float((a != b).float().mean()) if a.numel() else 0.0


def _box_tol(name):
    # float32 boxes: torchvision and torchaug round differently only in the last bits; the
    # rotations compose a float64 matrix where torchvision rounds its float32 one
    return 2e-3 if "Rotation" in name or "Affine" in name or "Augment" in name else 1e-4


@requires_tv
@pytest.mark.parametrize("name", list(TRANSFORMS))
@pytest.mark.parametrize("fmt", ["XYXY", "XYWH", "CXCYWH"])
@pytest.mark.parametrize("seed", [0, 1])
def test_targets_match_torchvision(device, name, fmt, seed):
    gen = torch.Generator().manual_seed(zlib.crc32(f"{name} {fmt}".encode()) + seed)
    x, targets = _sample(gen, fmt, device)
    t = TRANSFORMS[name](torch.Generator(device=device).manual_seed(3 + seed))
    (out, got), p = t(x, targets, return_params=True)
    assert isinstance(got, list) and len(got) == B
    for i in range(B):
        want_boxes = _tv_apply(type(t).__name__, t, p, i, targets[i]["boxes"])
        gb = got[i]["boxes"]
        assert type(gb) is tv_tensors.BoundingBoxes and gb.format == want_boxes.format
        assert tuple(gb.canvas_size) == tuple(out.shape[-2:])
        if name == "RandomRotation(expand)":
            # torchvision computes the boxes' expanded canvas about another centre than its image's
            # and can make it a pixel smaller than the rotated image; torchaug gives boxes the
            # image's canvas, so clamping at that edge may differ by that pixel
            # (torchvision returns empty boxes with their old canvas)
            assert len(gb) == 0 or all(abs(a - b) <= 1 for a, b in zip(gb.canvas_size, want_boxes.canvas_size))
            torch.testing.assert_close(gb.as_subclass(torch.Tensor), want_boxes.as_subclass(torch.Tensor), rtol=0, atol=1.001)
        else:
            assert tuple(gb.canvas_size) == tuple(want_boxes.canvas_size)
            torch.testing.assert_close(gb.as_subclass(torch.Tensor), want_boxes.as_subclass(torch.Tensor), rtol=0, atol=_box_tol(name))
        want_mask = _tv_apply(type(t).__name__, t, p, i, targets[i]["masks"])
        gm = got[i]["masks"]
        assert type(gm) is tv_tensors.Mask and gm.shape == want_mask.shape and gm.dtype == want_mask.dtype
        if "Augment" in name:
            # masks run through the same per-sample program as the images (its geometric ops only):
            # exactly torchaug's image op; torchvision differs where a sheared sample position sits
            # on a tie between two pixels (see test_augment's _source_ties)
            geo = (p["ops"] >= 14) & (p["ops"] <= 18)
            prog = torch.where(geo, p["ops"], torch.zeros_like(p["ops"]))[i:i + 1]
            own = F.augment(targets[i]["masks"].as_subclass(torch.Tensor).unsqueeze(1), prog.expand(len(gm), -1),
                            p["magnitudes"][i:i + 1].expand(len(gm), -1), "nearest", 0)[:, 0] if len(gm) else gm
            assert torch.equal(gm.as_subclass(torch.Tensor), own.as_subclass(torch.Tensor))
            assert _mismatch(gm, want_mask) <= 0.05
        else:
            # nearest resampling: the image ops' parity bound (a rare pixel on a rounding boundary)
            assert _mismatch(gm, want_mask) <= 1e-3
        assert got[i]["labels"] is targets[i]["labels"]
        if HAS_KEYPOINTS:
            want_kp = _tv_apply(type(t).__name__, t, p, i, targets[i]["keypoints"])
            gk = got[i]["keypoints"]
            assert type(gk) is tv_tensors.KeyPoints and tuple(gk.canvas_size) == tuple(out.shape[-2:])
            assert len(gk) == 0 or all(abs(a - b) <= (1 if "expand" in name else 0) for a, b in zip(gk.canvas_size, want_kp.canvas_size))
            torch.testing.assert_close(gk.as_subclass(torch.Tensor), want_kp.as_subclass(torch.Tensor), rtol=0, atol=_box_tol(name))


@requires_tv
def test_batched_masks_keypoints_and_single_image(device):
    gen = torch.Generator().manual_seed(5)
    x = torch.randint(0, 256, (B, 3, H, W), dtype=torch.uint8, generator=gen).to(device)
    seg = tv_tensors.Mask(torch.randint(0, 20, (B, H, W), generator=gen).to(device))  # int64 class map per image
    t = T.RandomAffine(25, scale=(0.9, 1.1), generator=torch.Generator(device=device).manual_seed(1))
    (out, seg_out), p = t(x, seg, return_params=True)
    assert type(seg_out) is tv_tensors.Mask and seg_out.dtype == torch.int64 and seg_out.shape == seg.shape
    for i in range(B):
        want = TF.affine(tv_tensors.Mask(seg[i]), float(p["angle"][i]), p["translate"][i].tolist(), float(p["scale"][i]),
                         p["shear"][i].tolist())
        assert _mismatch(seg_out[i], want) <= 1e-3
    # a single (C, H, W) image with its own boxes (not a list)
    b = _boxes(4, gen).to(device)
    flip = T.RandomHorizontalFlip(p=1.0)
    img, b2 = flip(x[0], b)
    assert torch.equal(img, x[0].flip(-1))
    torch.testing.assert_close(b2.as_subclass(torch.Tensor), TF.horizontal_flip(b).as_subclass(torch.Tensor))


def test_plain_tensor_targets_without_torchvision(device):
    """torchaug's own wrappers: an explicit format and canvas, no torchvision needed."""
    x = torch.zeros(2, 3, 10, 20, dtype=torch.uint8, device=device)
    boxes = [T.BoundingBoxes(torch.tensor([[1.0, 2, 5, 6]], device=device), "XYXY", (10, 20)),
             T.BoundingBoxes(torch.tensor([[0.0, 0, 4, 4], [10, 5, 2, 3]], device=device), "XYWH", (10, 20))]
    masks = T.Mask(torch.zeros(2, 10, 20, dtype=torch.bool, device=device))
    masks.data[0, 0, 0] = True
    kps = T.KeyPoints(torch.tensor([[[0.0, 0.0]], [[3.0, 4.0]]], device=device), (10, 20))
    out, b2, m2, k2 = T.RandomHorizontalFlip(p=1.0)(x, boxes, masks, kps)
    assert isinstance(b2[0], T.BoundingBoxes) and b2[0].format == "XYXY" and b2[0].canvas_size == (10, 20)
    assert b2[0].data.tolist() == [[15.0, 2.0, 19.0, 6.0]]
    assert b2[1].format == "XYWH" and b2[1].data.tolist() == [[16.0, 0.0, 4.0, 4.0], [8.0, 5.0, 2.0, 3.0]]
    assert isinstance(m2, T.Mask) and m2.data.dtype == torch.bool and bool(m2.data[0, 0, 19]) and int(m2.data.sum()) == 1
    assert k2.data.tolist() == [[[19.0, 0.0]], [[16.0, 4.0]]]  # keypoints: W - 1 - x
    # Resize scales, and clamps nothing; RandomResizedCrop clamps to the crop
    _, b3 = T.Resize([20, 40])(x, boxes)
    assert b3[0].data.tolist() == [[2.0, 4.0, 10.0, 12.0]] and b3[0].canvas_size == (20, 40)
    crop = T.RandomResizedCrop([5, 5])
    _, b4 = crop(x, boxes, params={"boxes": torch.tensor([[0, 0, 5, 5], [0, 0, 10, 20]], device=device)})
    assert b4[0].data.tolist() == [[1.0, 2.0, 5.0, 5.0]]
    assert b4[1].data.tolist() == [[0.0, 0.0, 1.0, 2.0], [2.5, 2.5, 0.5, 1.5]]


def test_clamping_mode_none_keeps_boxes_outside(device):
    x = torch.zeros(1, 3, 10, 10, dtype=torch.uint8, device=device)
    b = T.BoundingBoxes(torch.tensor([[2.0, 2, 8, 8]], device=device), "XYXY", (10, 10), clamping_mode=None)
    _, out = T.Pad([0, 0, 0, 0])(x, [b])
    _, out = T.RandomCrop(5)(x, [b], params={"top": torch.tensor([0], device=device), "left": torch.tensor([0], device=device),
                                              "padding": [0, 0, 0, 0]})
    assert out[0].data.tolist() == [[2.0, 2.0, 8.0, 8.0]]
    b.clamping_mode = "soft"
    _, out = T.RandomCrop(5)(x, [b], params={"top": torch.tensor([0], device=device), "left": torch.tensor([0], device=device),
                                              "padding": [0, 0, 0, 0]})
    assert out[0].data.tolist() == [[2.0, 2.0, 5.0, 5.0]]


@requires_tv
def test_compose_threads_targets_through_fused_crop_and_flip(device):
    gen = torch.Generator().manual_seed(7)
    x, targets = _sample(gen, "XYXY", device)
    g = torch.Generator(device=device).manual_seed(0)
    c = T.Compose([T.RandomResizedCrop(32, generator=g), T.RandomHorizontalFlip(generator=g), T.ToDtype(torch.float32, scale=True),
                   T.Normalize([0.5] * 3, [0.2] * 3), T.RandomAffine(10, generator=g)])
    (out, got), params = c(x, targets, return_params=True)
    unfused = T.Compose(c.transforms, fuse=False)
    (out2, got2) = unfused(x, targets, params=params)
    assert torch.equal(out, out2)
    for a, b in zip(got, got2):
        assert torch.equal(a["boxes"], b["boxes"]) and torch.equal(a["masks"], b["masks"])
    for i in range(B):
        ref = targets[i]["boxes"]
        for t, p in zip(c.transforms, params):
            if type(t).__name__ in ("ToDtype", "Normalize"):
                continue
            ref = _tv_apply(type(t).__name__, t, p, i, ref)
        torch.testing.assert_close(got[i]["boxes"].as_subclass(torch.Tensor), ref.as_subclass(torch.Tensor), rtol=0, atol=2e-3)


@requires_tv
def test_color_transforms_pass_targets_through(device):
    gen = torch.Generator().manual_seed(8)
    x, targets = _sample(gen, "XYXY", device)
    out, got = T.ColorJitter(0.4, 0.4, 0.4, 0.1)(x, targets)
    assert got is targets


@requires_tv
def test_sanitize_bounding_boxes(device):
    x = torch.zeros(2, 3, 20, 20, dtype=torch.uint8, device=device)
    boxes = [tv_tensors.BoundingBoxes(torch.tensor([[0.0, 0, 5, 5], [3, 3, 3.5, 9], [18, 18, 25, 25]], device=device),
                                      format="XYXY", canvas_size=(20, 20)),
             tv_tensors.BoundingBoxes(torch.zeros(0, 4, device=device), format="XYXY", canvas_size=(20, 20))]
    masks = [tv_tensors.Mask(torch.ones(3, 20, 20, device=device)), tv_tensors.Mask(torch.ones(0, 20, 20, device=device))]
    targets = [{"boxes": b, "masks": m, "labels": torch.arange(len(b), device=device), "image_id": i}
               for i, (b, m) in enumerate(zip(boxes, masks))]
    _, got = T.SanitizeBoundingBoxes()(x, targets)
    want = torchvision.transforms.v2.SanitizeBoundingBoxes()(targets[0])
    assert torch.equal(got[0]["boxes"], want["boxes"]) and got[0]["labels"].tolist() == want["labels"].tolist() == [0]
    assert got[0]["masks"].shape == (1, 20, 20) and got[0]["image_id"] == 0
    assert got[1]["boxes"].shape == (0, 4)
    with pytest.raises(ValueError, match="min_size must be >= 1"):
        T.SanitizeBoundingBoxes(min_size=0.5)
    with pytest.raises(ValueError, match="image 1 must hold exactly one bounding-box target"):
        T.SanitizeBoundingBoxes()(x, [targets[0], {"labels": torch.zeros(1)}])


@requires_tv
def test_sanitize_keypoints(device):
    x = torch.zeros(2, 3, 20, 30, dtype=torch.uint8, device=device)
    groups = torch.tensor([[[1.0, 2], [29.5, 19.5]], [[-0.5, 3], [4, 4]], [[5, 20], [1, 1]], [[0, 0], [29.9, 0]]], device=device)
    points = tv_tensors.KeyPoints(groups, canvas_size=(20, 30))
    flat = tv_tensors.KeyPoints(groups[:, 0], canvas_size=(20, 30))
    targets = [{"kp": points, "labels": torch.arange(4, device=device)}, {"kp": flat, "labels": torch.arange(4, device=device)}]
    _, got = T.SanitizeKeyPoints(labels_getter="default")(x, targets)
    for mine, theirs in zip(got, targets):
        want = torchvision.transforms.v2.SanitizeKeyPoints(labels_getter="default")(theirs)
        assert isinstance(mine["kp"], tv_tensors.KeyPoints)
        assert torch.equal(mine["kp"].as_subclass(torch.Tensor), want["kp"].as_subclass(torch.Tensor))
        assert torch.equal(mine["labels"], want["labels"])
    assert got[0]["labels"].tolist() == [0, 3] and got[1]["labels"].tolist() == [0, 3]
    _, kept = T.SanitizeKeyPoints()(x[0], {"kp": T.KeyPoints(groups, (20, 30)), "labels": torch.arange(4, device=device)})
    assert kept["kp"].data.shape == (2, 2, 2) and kept["labels"].shape == (4,)  # labels_getter None: labels kept
    with pytest.raises(ValueError, match="image 0 must hold exactly one keypoints target, found 0"):
        T.SanitizeKeyPoints()(x[0], {"labels": torch.zeros(1)})


@requires_cuda
@requires_tv
@pytest.mark.parametrize("name", ["RandomAffine", "RandAugment", "RandomResizedCrop"])
def test_targets_cpu_cuda_agree(name):
    gen = torch.Generator().manual_seed(9)
    x, targets = _sample(gen, "XYXY", "cpu")
    t = TRANSFORMS[name](None)
    (_, got_c), p = t(x, targets, return_params=True)
    # .to keeps a tv_tensor's type (.cuda() would return a plain tensor, which passes through)
    pc = {k: (v.to("cuda") if isinstance(v, torch.Tensor) else v) for k, v in p.items()}
    xg = x.to("cuda")
    tg = [{k: (v.to("cuda") if isinstance(v, torch.Tensor) else v) for k, v in d.items()} for d in targets]
    _, got_g = t(xg, tg, params=pc)
    for a, b in zip(got_c, got_g):
        assert type(b["boxes"]) is tv_tensors.BoundingBoxes and b["boxes"].device.type == "cuda"
        torch.testing.assert_close(b["boxes"].cpu().as_subclass(torch.Tensor), a["boxes"].as_subclass(torch.Tensor), rtol=0, atol=1e-4)
        # nearest sampling positions on a tie between two pixels may round either way on the GPU
        # (FMA contraction; sheared rows sit on ties), as in test_augment
        assert _mismatch(b["masks"].cpu(), a["masks"]) <= (3e-2 if name == "RandAugment" else 1e-3)


@requires_tv
@pytest.mark.parametrize("mode", ["edge", "reflect", "symmetric"])
def test_masks_alone_follow_non_constant_padding(device, mode):
    # torchvision pads masks in every mode (boxes and keypoints only with constant padding)
    gen = torch.Generator().manual_seed(11)
    x, targets = _sample(gen, "XYXY", device)
    masks = [d["masks"] for d in targets]
    out, got = T.Pad([3, 1, 2, 4], padding_mode=mode)(x, masks)
    for i, m in enumerate(masks):
        if m.shape[0] == 0:  # (torchvision's pad refuses an empty stack in these modes)
            assert got[i].shape == (0, H + 5, W + 5)
            continue
        assert torch.equal(got[i], TF.pad(m, [3, 1, 2, 4], padding_mode=mode))
    t = T.RandomCrop([50, 70], padding=4, padding_mode=mode)
    (out, got), p = t(x, masks, return_params=True)
    for i, m in enumerate(masks):
        if m.shape[0] == 0:
            assert got[i].shape == (0, 50, 70)
            continue
        ref = TF.crop(TF.pad(m, [4, 4, 4, 4], padding_mode=mode), int(p["top"][i]), int(p["left"][i]), 50, 70)
        assert torch.equal(got[i], ref)
    with pytest.raises(ValueError, match=f"padding_mode '{mode}' cannot move bounding boxes"):
        t(x, targets)


@requires_tv
def test_target_errors(device):
    gen = torch.Generator().manual_seed(10)
    x, targets = _sample(gen, "XYXY", device)
    t = T.RandomHorizontalFlip()
    with pytest.raises(ValueError, match="box format must be one of XYXY, XYWH, CXCYWH"):
        T.BoundingBoxes(torch.zeros(1, 4), "XYXYXYXY", (5, 5))
    with pytest.raises(ValueError, match=r"the boxes canvas_size of sample 1 is \(10, 10\), but its image is \(60, 80\)"):
        bad = [dict(d) for d in targets]
        bad[1]["boxes"] = tv_tensors.BoundingBoxes(torch.zeros(0, 4, device=device), format="XYXY", canvas_size=(10, 10))
        t(x, bad)
    with pytest.raises(ValueError, match=r"x1 <= x2 and y1 <= y2; a box of sample 2 is \[5.0, 5.0, 1.0, 9.0\]"):
        bad = [dict(d) for d in targets]
        bad[2]["boxes"] = tv_tensors.BoundingBoxes(torch.tensor([[5.0, 5, 1, 9]], device=device), format="XYXY", canvas_size=(H, W))
        t(x, bad)
    with pytest.raises(ValueError, match="a mask target for a batch of 4 images must be a list of 4 per-image targets"):
        t(x, tv_tensors.Mask(torch.zeros(3, H, W, device=device)))
    with pytest.raises(ValueError, match=r"the mask of sample 0 is \(5, 5\), but its image is \(60, 80\)"):
        t(x, [tv_tensors.Mask(torch.zeros(1, 5, 5, device=device))] * 4)
    with pytest.raises(ValueError, match="padding_mode 'reflect' cannot move bounding boxes"):
        T.Pad(2, padding_mode="reflect")(x, targets)
    with pytest.raises(TypeError, match="cannot follow AugMix"):
        T.AugMix()(x, targets)
    with pytest.raises(ValueError, match="BoundingBoxes: data must be a"):
        T.BoundingBoxes(torch.zeros(3), "XYXY", (5, 5))


@requires_tv
def test_warp_affine_boxes_follow_warp_affine(device):
    """Boxes moved with the same matrices warp_affine samples with equal torchvision's affine of them."""
    from torchaug.ops import warp_affine_boxes

    gen = torch.Generator().manual_seed(11)
    angle = torch.tensor([0.0, 25.0, -40.0])
    translate = torch.tensor([[0.0, 0.0], [5.0, -3.0], [-7.0, 2.0]])
    scale, shear = torch.tensor([1.0, 0.9, 1.2]), torch.tensor([[0.0, 0.0], [10.0, 0.0], [-5.0, 8.0]])
    m = F.affine_matrices(angle, translate, scale, shear, None, H, W, 3, "cpu").to(device)
    boxes = [_boxes(n, gen).to(device) for n in (4, 0, 6)]
    moved = warp_affine_boxes([b.as_subclass(torch.Tensor) for b in boxes], m, (H, W))
    for i, b in enumerate(boxes):
        want = TF.affine(b, float(angle[i]), translate[i].tolist(), float(scale[i]), shear[i].tolist())
        torch.testing.assert_close(moved[i], want.as_subclass(torch.Tensor), rtol=0, atol=2e-3)
    # a single image's boxes, another format, no clamping
    one = warp_affine_boxes(torch.tensor([[-5.0, 1.0, 4.0, 3.0]], device=device), torch.tensor([[1.0, 0, -2], [0, 1, 0]]), (10, 10),
                            format="XYWH", clamp=False)
    assert one.tolist() == [[-3.0, 1.0, 4.0, 3.0]]
    with pytest.raises(ValueError, match=r"matrices must have shape \(B, 2, 3\) with B=3"):
        warp_affine_boxes([b.as_subclass(torch.Tensor) for b in boxes], torch.zeros(2, 2, 3), (H, W))


# ---- the targets' representation: ConvertBoundingBoxFormat, ClampBoundingBoxes, ClampKeyPoints --

@requires_torchvision
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_box_format_conversion_and_clamping_match_torchvision(dtype):
    from torchvision import tv_tensors
    from torchvision.transforms import v2
    g = torch.Generator().manual_seed(0)
    raw = (torch.rand(9, 4, generator=g) * 40 - 5)
    raw[:, 2:] = raw[:, 2:].abs() + 1
    data = raw.to(dtype)
    img = torch.zeros(3, 20, 30, dtype=torch.uint8)
    for old in ("XYXY", "XYWH", "CXCYWH"):
        for new in ("XYXY", "XYWH", "CXCYWH"):
            tv_in = tv_tensors.BoundingBoxes(data, format=old, canvas_size=(20, 30))
            want = v2.ConvertBoundingBoxFormat(new)(tv_in)
            _, got = T.ConvertBoundingBoxFormat(new)(img, tv_in)
            assert isinstance(got, tv_tensors.BoundingBoxes) and got.format.name == new
            # integer boxes bitwise; float ones to an ulp (torchvision 0.26 converts XYWH <-> CXCYWH through
            # XYXY, 0.28 directly: the same numbers, rounded in another order)
            exact = dict(rtol=0, atol=0) if not dtype.is_floating_point else dict(rtol=1e-6, atol=1e-5)
            torch.testing.assert_close(got.as_subclass(torch.Tensor), want.as_subclass(torch.Tensor), **exact, msg=str((old, new)))
            _, mine = T.ConvertBoundingBoxFormat(new.lower())(img, T.BoundingBoxes(data, old, (20, 30)))
            assert mine.format == new and torch.equal(mine.data, got.as_subclass(torch.Tensor))
        tv_in = tv_tensors.BoundingBoxes(data, format=old, canvas_size=(20, 30))
        want = v2.ClampBoundingBoxes("soft")(tv_in)
        _, got = T.ClampBoundingBoxes("soft")(img, [tv_in])
        assert torch.equal(got[0].as_subclass(torch.Tensor), want.as_subclass(torch.Tensor)), old
        _, same = T.ClampBoundingBoxes(None)(img, T.BoundingBoxes(data, old, (20, 30)))
        assert torch.equal(same.data, data)
    points = (torch.rand(5, 2, generator=g) * 50 - 10).to(dtype)
    want = v2.ClampKeyPoints()(tv_tensors.KeyPoints(points, canvas_size=(20, 30)))
    _, got = T.ClampKeyPoints()(img, {"kp": T.KeyPoints(points, (20, 30))})
    assert torch.equal(got["kp"].data, want.as_subclass(torch.Tensor))
    with pytest.raises(ValueError, match="ConvertBoundingBoxFormat: format must be one of XYXY, XYWH, CXCYWH"):
        T.ConvertBoundingBoxFormat("XYWHR")


@requires_tv
def test_set_clamping_mode():
    from torchvision.transforms import v2
    img = torch.zeros(3, 20, 30, dtype=torch.uint8)
    boxes = tv_tensors.BoundingBoxes(torch.tensor([[1.0, 2, 40, 9]]), format="XYXY", canvas_size=(20, 30))
    _, got = T.SetClampingMode(None)(img, boxes)
    assert got.clamping_mode is None and v2.SetClampingMode(None)(boxes).clamping_mode is None
    _, mine = T.SetClampingMode("hard")(img, T.BoundingBoxes(torch.tensor([[1.0, 2, 40, 9]]), "XYXY", (20, 30)))
    assert mine.clamping_mode == "hard"
    # None: a flip leaves the box past the canvas as it is; soft clamps it
    _, free = T.RandomHorizontalFlip(1.0)(img, T.SetClampingMode(None)(img, T.BoundingBoxes(torch.tensor([[1.0, 2, 40, 9]]), "XYXY", (20, 30)))[1])
    assert free.data.tolist() == [[-10.0, 2.0, 29.0, 9.0]]
    with pytest.raises(ValueError, match="SetClampingMode: clamping_mode must be 'soft', 'hard' or None"):
        T.SetClampingMode("auto")


@requires_torchvision
def test_target_only_transforms_act_inside_a_compose():
    # ConvertBoundingBoxFormat, ClampBoundingBoxes and ToPureTensor change only targets: in a Compose
    # (a batch, or a list of images of different sizes) they must act as they do alone
    images = [torch.zeros(3, 20, 30, dtype=torch.uint8), torch.zeros(3, 24, 18, dtype=torch.uint8)]

    def targets():
        return [{"boxes": tv_tensors.BoundingBoxes(torch.tensor([[1.0, 2, 40, 12]]), format="XYXY", canvas_size=s),
                 "labels": torch.tensor([1])} for s in [(20, 30), (24, 18)]]

    chain = T.Compose([T.RandomHorizontalFlip(1.0), T.ClampBoundingBoxes("hard"), T.ConvertBoundingBoxFormat("CXCYWH"),
                       T.ToPureTensor()])
    for x, tg in ((images, targets()), (torch.stack([images[0]] * 2), targets()[:1] * 2)):
        _, got = chain(x, tg)
        want = [TF.convert_bounding_box_format(TF.clamp_bounding_boxes(TF.horizontal_flip(t["boxes"])), new_format="CXCYWH")
                for t in tg]
        for g, w in zip(got, want):
            assert type(g["boxes"]) is torch.Tensor
            torch.testing.assert_close(g["boxes"], w.as_subclass(torch.Tensor))
