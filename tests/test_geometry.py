"""Geometry ops: resized_crop (dense, ragged, fused epilogue), warp_affine / affine, flip.

References are torchvision.transforms.v2.functional applied per sample with the same parameters.
One documented difference: for uint8 bicubic on the CPU, torchvision calls PyTorch's native uint8
kernel, which rounds and clips the intermediate (horizontal) pass to [0, 255], so bicubic overshoot
is cut twice (up to ~15 LSB from the exact result). torchaug keeps the intermediate in float and
rounds once, which is what torchvision does on CUDA (cast to float32, interpolate, clamp, round):
our uint8 bicubic reference is therefore torchvision applied to the float32 image, then clamped
and rounded.
"""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import torchaug.functional as F
from conftest import (
    CUDA,
    assert_close_images,
    random_images,
    requires_cuda,
    requires_torchvision,
    torchvision,
)

if torchvision is not None:
    from torchvision.transforms import InterpolationMode as IM
    from torchvision.transforms.v2 import functional as TF

ops = torch.ops.torchaug
MODES = ["nearest", "bilinear", "bicubic", "nearest-exact"]  # the resize family's; affine takes the first two
IMAGE_DTYPES = [torch.uint8, torch.float32, torch.float64, torch.float16, torch.bfloat16]


def tv_mode(name):
    return {"nearest": IM.NEAREST, "bilinear": IM.BILINEAR, "bicubic": IM.BICUBIC, "nearest-exact": IM.NEAREST_EXACT}[name]


def tv_resized_crop(img, box, size, mode, antialias):
    """torchvision reference for one (C, H, W) image (see the module docstring for uint8 bicubic)."""
    top, left, h, w = [int(v) for v in box]
    if img.dtype == torch.uint8 and mode == "bicubic":
        out = TF.resized_crop(img.float(), top, left, h, w, size, interpolation=tv_mode(mode), antialias=antialias)
        return out.clamp_(0, 255).round_().to(torch.uint8)
    if img.dtype in (torch.float16, torch.bfloat16) and not mode.startswith("nearest"):
        out = TF.resized_crop(img.float(), top, left, h, w, size, interpolation=tv_mode(mode), antialias=antialias)
        return out.to(img.dtype)
    return TF.resized_crop(img, top, left, h, w, size, interpolation=tv_mode(mode), antialias=antialias)


def random_boxes(b, h, w, gen, allow_outside=False):
    rows = []
    for _ in range(b):
        bh = int(torch.randint(1, h + 1, (1,), generator=gen))
        bw = int(torch.randint(1, w + 1, (1,), generator=gen))
        if allow_outside:
            top = int(torch.randint(-bh // 2, h - bh // 2 + 1, (1,), generator=gen))
            left = int(torch.randint(-bw // 2, w - bw // 2 + 1, (1,), generator=gen))
        else:
            top = int(torch.randint(0, h - bh + 1, (1,), generator=gen))
            left = int(torch.randint(0, w - bw + 1, (1,), generator=gen))
        rows.append([top, left, bh, bw])
    return torch.tensor(rows, dtype=torch.int64)


# ---------------------------------------------------------------------------------------------
# resized_crop
# ---------------------------------------------------------------------------------------------

@requires_torchvision
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("antialias", [True, False])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
@pytest.mark.parametrize("channels_last", [False, True])
def test_resized_crop_matches_torchvision(device, mode, antialias, dtype, channels_last):
    gen = torch.Generator().manual_seed(1)
    x = random_images(6, 3, 41, 57, dtype, device, channels_last, gen)
    boxes = random_boxes(6, 41, 57, gen)
    for size in ([17, 23], [64, 90]):  # down- and upscaling
        out = F.resized_crop_boxes(x, boxes.to(device), size, mode, antialias)
        assert out.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)
        for b in range(6):
            ref = tv_resized_crop(x[b].cpu(), boxes[b], size, mode, antialias)
            assert_close_images(out[b].cpu(), ref, dtype, f"sample {b}, size {size}")


@requires_torchvision
def test_resized_crop_boxes_outside_image_pad_with_zeros(device):
    # torchvision's crop pads with zeros where the box leaves the image; so do we.
    gen = torch.Generator().manual_seed(2)
    x = random_images(5, 3, 30, 40, torch.uint8, device, generator=gen)
    boxes = random_boxes(5, 30, 40, gen, allow_outside=True)
    out = F.resized_crop_boxes(x, boxes.to(device), [20, 20], "bilinear", True)
    for b in range(5):
        ref = tv_resized_crop(x[b].cpu(), boxes[b], [20, 20], "bilinear", True)
        assert_close_images(out[b].cpu(), ref, torch.uint8, f"sample {b}")
    # crops of the box's own size (RandomCrop with zero padding): the pixels as they are, zeros
    # outside, with the flip and normalize of the same pass
    shifted = torch.tensor([[-4, -4, 30, 40], [3, -2, 30, 40], [-1, 5, 30, 40], [0, 0, 30, 40], [4, 3, 30, 40]])
    flip = torch.tensor([True, False, True, False, True])
    for mode in ("nearest", "bilinear"):
        out = F.resized_crop_boxes(x, shifted.to(device), [30, 40], mode, False, flip=flip.to(device), mean=[0.5] * 3,
                                   std=[0.25] * 3)
        for b in range(5):
            top, left = int(shifted[b, 0]), int(shifted[b, 1])
            ref = TF.crop(x[b].cpu(), top, left, 30, 40)
            ref = TF.normalize(TF.to_dtype(TF.hflip(ref) if flip[b] else ref, torch.float32, scale=True), [0.5] * 3, [0.25] * 3)
            torch.testing.assert_close(out[b].cpu(), ref, atol=1e-6, rtol=0, msg=f"{mode}, sample {b}")


@requires_torchvision
@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
def test_resized_crop_other_dtypes(device, dtype):
    gen = torch.Generator().manual_seed(3)
    x = random_images(3, 3, 25, 31, dtype, device, generator=gen)
    boxes = random_boxes(3, 25, 31, gen)
    out = F.resized_crop_boxes(x, boxes.to(device), [12, 14], "bilinear", True)
    for b in range(3):
        assert_close_images(out[b].cpu(), tv_resized_crop(x[b].cpu(), boxes[b], [12, 14], "bilinear", True), dtype)


@requires_torchvision
@pytest.mark.parametrize("in_dtype", [torch.uint8, torch.float32])
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("out_format", [torch.contiguous_format, torch.channels_last])
def test_resized_crop_fused_epilogue(device, in_dtype, out_dtype, out_format):
    """crop + resize + per-sample hflip + to_dtype(scale) + normalize in one pass equals the
    torchvision chain (each stage rounding to its dtype as torchvision does)."""
    gen = torch.Generator().manual_seed(4)
    x = random_images(5, 3, 40, 52, in_dtype, device, generator=gen)
    boxes = random_boxes(5, 40, 52, gen)
    flip = torch.tensor([True, False, True, True, False])
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    out = F.resized_crop_boxes(x, boxes.to(device), [24, 24], "bilinear", True, flip=flip.to(device),
                               mean=mean, std=std, out_dtype=out_dtype, memory_format=out_format)
    assert out.dtype == out_dtype and out.is_contiguous(memory_format=out_format)
    for b in range(5):
        ref = tv_resized_crop(x[b].cpu(), boxes[b], [24, 24], "bilinear", True)
        if flip[b]:
            ref = TF.horizontal_flip(ref)
        ref = TF.to_dtype(ref, out_dtype, scale=True)
        ref = TF.normalize(ref, mean, std)
        # uint8 resize results may differ by 1 LSB before the scale: 1 / 255 / std after it
        lsb = 1 / 255 / min(std) if in_dtype == torch.uint8 else 0.0
        rounding = {torch.float32: 1e-5, torch.float16: 4e-3, torch.bfloat16: 3e-2}[out_dtype]
        torch.testing.assert_close(out[b].cpu().float(), ref.float(), atol=lsb + rounding, rtol=rounding)


def test_resized_crop_fused_equals_unfused_bitwise(device):
    gen = torch.Generator().manual_seed(5)
    x = random_images(8, 3, 50, 66, torch.uint8, device, generator=gen)
    boxes = random_boxes(8, 50, 66, gen).to(device)
    flip = (torch.rand(8, generator=gen) < 0.5).to(device)
    mean, std = [0.5, 0.4, 0.3], [0.2, 0.25, 0.3]
    fused = F.resized_crop_boxes(x, boxes, [32, 32], flip=flip, mean=mean, std=std)
    step = F.resized_crop_boxes(x, boxes, [32, 32])
    step = F.flip(step, flip, False)
    step = F.normalize(step, mean, std)
    assert torch.equal(fused, step)


@pytest.mark.parametrize("hwc", [False, True])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_resized_crop_ragged_equals_dense(device, hwc, dtype):
    """A list of images of different sizes gives, per sample, what the dense op gives that image."""
    gen = torch.Generator().manual_seed(6)
    shapes = [(30, 41), (55, 20), (17, 17), (64, 48)]
    imgs = []
    for h, w in shapes:
        t = random_images(1, 3, h, w, dtype, device, generator=gen)[0]
        imgs.append(t.permute(1, 2, 0).contiguous().permute(2, 0, 1) if hwc else t)
    boxes = torch.cat([random_boxes(1, h, w, gen) for h, w in shapes]).to(device)
    flip = torch.tensor([True, False, False, True], device=device)
    out = F.resized_crop_boxes(imgs, boxes, [21, 19], "bilinear", True, flip=flip, mean=[0.1, 0.2, 0.3], std=[0.5, 0.6, 0.7])
    assert out.shape == (4, 3, 21, 19)
    assert out.is_contiguous(memory_format=torch.channels_last if hwc else torch.contiguous_format)
    for i, img in enumerate(imgs):
        ref = F.resized_crop_boxes(img.unsqueeze(0), boxes[i:i + 1], [21, 19], "bilinear", True, flip=flip[i:i + 1],
                                   mean=[0.1, 0.2, 0.3], std=[0.5, 0.6, 0.7])
        assert torch.equal(out[i], ref[0])


@pytest.mark.parametrize("hwc", [False, True])
@pytest.mark.parametrize("out_h", [96, 128])
def test_resized_crop_ragged_tall_tiles_equal_dense(device, hwc, out_h):
    """A ragged batch whose tallest image allows the tallest tiles on CUDA (150 rows to 96: 56-row
    tiles for every sample; to 128: 64-row ones), with crops inside, an upscaled one and boxes
    reaching outside their image (the per-pixel path for the tiles they exceed) gives, per sample,
    the dense op's bytes."""
    gen = torch.Generator().manual_seed(11)
    shapes = [(150, 150), (120, 90), (60, 200), (97, 33)]
    imgs = []
    for h, w in shapes:
        t = random_images(1, 3, h, w, torch.uint8, device, generator=gen)[0]
        imgs.append(t.permute(1, 2, 0).contiguous().permute(2, 0, 1) if hwc else t)
    boxes = torch.tensor([[0, 0, 150, 150], [10, 5, 110, 80], [20, 30, 12, 20], [-30, -4, 160, 40]], device=device)
    for antialias in (True, False):
        out = F.resized_crop_boxes(imgs, boxes, [out_h, 40], "bilinear", antialias)
        for i, img in enumerate(imgs):
            ref = F.resized_crop_boxes(img.unsqueeze(0), boxes[i:i + 1], [out_h, 40], "bilinear", antialias)
            assert torch.equal(out[i], ref[0]), f"sample {i}, antialias {antialias}"


def test_resized_crop_identity_and_crop_are_exact(device):
    x = random_images(3, 3, 20, 30, torch.uint8, device)
    for mode in MODES:
        assert torch.equal(F.resize(x, [20, 30], mode), x)
    out = F.crop(x, 3, 4, 10, 12)
    assert torch.equal(out, x[:, :, 3:13, 4:16])


@requires_torchvision
def test_nearest_exact_is_refused_where_torchvision_has_none(device):
    x = random_images(2, 3, 8, 9, torch.uint8, device)
    with pytest.raises(ValueError, match="torchaug.affine: interpolation must be one of nearest, bilinear, got"):
        F.affine(x, 10.0, [0, 0], 1.0, [0.0, 0.0], "nearest-exact")
    with pytest.raises(RuntimeError, match=r"warp_affine: interpolation must be 0 \(nearest\) or 1 \(bilinear\), got 3"):
        torch.ops.torchaug.warp_affine(x, torch.eye(2, 3, device=device).expand(2, 2, 3).contiguous(), [8, 9], 3, None)
    out = F.resize(x, [5, 4], IM.NEAREST_EXACT if torchvision is not None else "nearest-exact")
    assert out.shape == (2, 3, 5, 4)


@requires_torchvision
def test_resize_and_center_crop_match_torchvision(device):
    x = random_images(2, 3, 37, 50, torch.uint8, device)
    for size, max_size in ((24, None), ([24], 30), ([20, 33], None), (60, None)):
        out = F.resize(x, size, "bilinear", max_size=max_size)
        ref = TF.resize(x.cpu(), size, max_size=max_size)
        assert_close_images(out.cpu(), ref, torch.uint8, f"resize {size}")
    for size in ([20, 25], [40, 60], [37, 50], 11, [36, 49]):
        out = F.center_crop(x, size)
        assert torch.equal(out.cpu(), TF.center_crop(x.cpu(), size)), f"center_crop {size}"


@settings(max_examples=25, deadline=None)
@given(
    b=st.integers(1, 3),
    c=st.sampled_from([1, 3, 4, 5]),
    h=st.integers(1, 24),
    w=st.integers(1, 24),
    oh=st.integers(1, 20),
    ow=st.integers(1, 20),
    mode=st.sampled_from(MODES),
    antialias=st.booleans(),
    dtype=st.sampled_from([torch.uint8, torch.float32, torch.float64]),
    channels_last=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_resized_crop_property(b, c, h, w, oh, ow, mode, antialias, dtype, channels_last, seed):
    """Any shape, channel count (including > 4, the kernel's channel chunk), dtype and layout:
    equal to torch.nn.functional.interpolate of the cropped image (torchvision's own path)."""
    gen = torch.Generator().manual_seed(seed)
    x = random_images(b, c, h, w, dtype, "cpu", channels_last, gen)
    boxes = random_boxes(b, h, w, gen)
    out = F.resized_crop_boxes(x, boxes, [oh, ow], mode, antialias)
    for i in range(b):
        top, left, bh, bw = boxes[i].tolist()
        crop = x[i:i + 1, :, top:top + bh, left:left + bw].to(torch.float64)
        kw = {} if mode.startswith("nearest") else {"align_corners": False, "antialias": antialias}
        if antialias and not mode.startswith("nearest") and ow == 1 and oh > 1:
            # PyTorch's CPU antialiased interpolate gives every output row the first row's value
            # when the output is one pixel wide (a PyTorch bug, seen in 2.13); the transposed
            # problem is computed correctly there.
            ref = torch.nn.functional.interpolate(crop.transpose(2, 3), size=[ow, oh], mode=mode, **kw)[0].transpose(1, 2)
        else:
            ref = torch.nn.functional.interpolate(crop, size=[oh, ow], mode=mode, **kw)[0]
        if dtype == torch.uint8:
            ref = ref.clamp(0, 255).round().to(torch.uint8)
            assert_close_images(out[i], ref, dtype)
        else:
            torch.testing.assert_close(out[i].double(), ref, atol=1e-5, rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# warp_affine / affine
# ---------------------------------------------------------------------------------------------

def random_affine_params(gen):
    angle = float(torch.empty(1).uniform_(-180, 180, generator=gen))
    translate = [int(torch.randint(-8, 9, (1,), generator=gen)), int(torch.randint(-8, 9, (1,), generator=gen))]
    scale = float(torch.empty(1).uniform_(0.6, 1.5, generator=gen))
    shear = [float(torch.empty(1).uniform_(-20, 20, generator=gen)), float(torch.empty(1).uniform_(-20, 20, generator=gen))]
    return angle, translate, scale, shear


@requires_torchvision
@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
@pytest.mark.parametrize("fill", [None, 0, [10, 200, 30]])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
@pytest.mark.parametrize("channels_last", [False, True])
def test_affine_matches_torchvision(device, mode, fill, dtype, channels_last):
    """Per-sample affine parameters; nearest: a pixel may differ only where the sampling position
    sits within float32 rounding of a tie between two pixels (torchvision builds the position with
    a different float32 expression); bilinear: uint8 within 1 LSB."""
    gen = torch.Generator().manual_seed(7)
    b = 4
    x = random_images(b, 3, 33, 47, dtype, device, channels_last, gen)
    if dtype != torch.uint8 and fill is not None and not isinstance(fill, int):
        fill = [f / 255 for f in fill]
    params = [random_affine_params(gen) for _ in range(b)]
    angle = torch.tensor([p[0] for p in params], device=device)
    translate = torch.tensor([p[1] for p in params], device=device)
    scale = torch.tensor([p[2] for p in params], device=device)
    shear = torch.tensor([p[3] for p in params], device=device)
    out = F.affine(x, angle, translate, scale, shear, mode, fill)
    for i, (a, t, s, sh) in enumerate(params):
        ref = TF.affine(x[i].cpu(), a, t, s, sh, interpolation=tv_mode(mode), fill=fill)
        got = out[i].cpu()
        if mode == "nearest":
            mismatch = (got != ref).any(0).float().mean().item()
            assert mismatch <= 2e-3, f"sample {i}: {mismatch:.4%} of pixels differ"
        else:
            assert_close_images(got, ref, dtype, f"sample {i}")


def test_warp_affine_identity_and_integer_shift(device):
    x = random_images(2, 3, 16, 20, torch.float32, device)
    eye = torch.tensor([[1.0, 0, 0], [0, 1, 0]])
    for mode in ("nearest", "bilinear"):
        assert torch.equal(F.warp_affine(x, eye, interpolation=mode), x)
    shift = torch.tensor([[1.0, 0, 3], [0, 1, -2]])  # out(x, y) = in(x + 3, y - 2)
    out = F.warp_affine(x, shift, interpolation="bilinear")
    assert torch.equal(out[:, :, 2:, :17], x[:, :, :14, 3:])
    assert (out[:, :, :2] == 0).all() and (out[:, :, :, 17:] == 0).all()
    # with a fill, torchvision's blend (s - fill) * mask + fill rounds inside the image
    out = F.warp_affine(x, shift, interpolation="bilinear", fill=0.5)
    torch.testing.assert_close(out[:, :, 2:, :17], x[:, :, :14, 3:], atol=1e-7, rtol=0)
    assert (out[:, :, :2] == 0.5).all() and (out[:, :, :, 17:] == 0.5).all()


def test_warp_affine_out_size_and_per_sample_matrices(device):
    x = random_images(2, 1, 10, 10, torch.float32, device)
    m = torch.tensor([[[1.0, 0, 0], [0, 1, 0]], [[0.5, 0, 0], [0, 0.5, 0]]], device=device)
    out = F.warp_affine(x, m, [20, 20], "nearest")
    assert out.shape == (2, 1, 20, 20)
    torch.testing.assert_close(out[1, :, ::2, ::2], x[1])
    assert (out[0, :, 10:] == 0).all()


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_pad_matches_reference(device, mode):
    x = random_images(2, 3, 8, 9, torch.uint8, device)
    out = F.pad(x, [1, 2, 3, 4], fill=[7, 8, 9])
    assert out.shape == (2, 3, 14, 13)
    assert torch.equal(out[:, :, 2:10, 1:10], x)
    assert (out[:, 0, :2] == 7).all() and (out[:, 2, :, -3:] == 9).all()
    for pm, tm in (("edge", "replicate"), ("reflect", "reflect")):
        ref = torch.nn.functional.pad(x.float(), [1, 3, 2, 4], mode=tm).to(torch.uint8)
        assert torch.equal(F.pad(x, [1, 2, 3, 4], padding_mode=pm), ref)


@requires_torchvision
def test_pad_symmetric_matches_torchvision():
    x = random_images(1, 3, 8, 9, torch.uint8)
    assert torch.equal(F.pad(x, [1, 2, 3, 4], padding_mode="symmetric")[0], TF.pad(x[0], [1, 2, 3, 4], padding_mode="symmetric"))


# ---------------------------------------------------------------------------------------------
# flip
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", IMAGE_DTYPES)
@pytest.mark.parametrize("channels_last", [False, True])
def test_flip_per_sample(device, dtype, channels_last):
    x = random_images(4, 3, 7, 9, dtype, device, channels_last)
    h = torch.tensor([True, False, True, False], device=device)
    v = torch.tensor([False, False, True, True], device=device)
    out = F.flip(x, h, v)
    for i in range(4):
        dims = [d for d, on in ((1, bool(v[i])), (2, bool(h[i]))) if on]
        ref = x[i].flip(dims) if dims else x[i]
        assert torch.equal(out[i], ref)
    assert out.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)
    assert torch.equal(F.horizontal_flip(x[0]), x[0].flip(-1))
    # samples that neither flip touches are copied in blocks of rows, cut where the threads' ranges
    # of rows end (here inside samples: 256 rows a range)
    x = random_images(6, 3, 300, 64, dtype, device, channels_last)
    h = torch.tensor([False, True, False, False, True, False], device=device)
    v = torch.tensor([False, False, True, False, True, False], device=device)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        out = F.flip(x, h, v)
    finally:
        torch.set_num_threads(threads)
    for i in range(6):
        dims = [d for d, on in ((1, bool(v[i])), (2, bool(h[i]))) if on]
        assert torch.equal(out[i], x[i].flip(dims) if dims else x[i])
    # every other column of a batch: rows of neither layout, element by element
    x = random_images(4, 3, 5, 12, dtype, device, channels_last)[..., ::2]
    h = torch.tensor([True, False, True, False], device=device)
    v = torch.tensor([False, True, True, False], device=device)
    out = F.flip(x, h, v)
    for i in range(4):
        dims = [d for d, on in ((1, bool(v[i])), (2, bool(h[i]))) if on]
        assert torch.equal(out[i], x[i].flip(dims) if dims else x[i])


# ---------------------------------------------------------------------------------------------
# opcheck, gradcheck, CPU <-> CUDA
# ---------------------------------------------------------------------------------------------

def _opcheck_samples(device):
    gen = torch.Generator().manual_seed(8)
    x = random_images(2, 3, 12, 15, torch.float32, device, generator=gen).requires_grad_()
    xu = random_images(2, 3, 12, 15, torch.uint8, device, generator=gen)
    xc = random_images(2, 3, 12, 15, torch.float32, device, True, gen)
    boxes = torch.tensor([[1, 2, 8, 9], [0, 0, 12, 15]], device=device)
    flip = torch.tensor([True, False], device=device)
    mean = torch.rand(2, 3, device=device)
    std = torch.rand(2, 3, device=device) + 0.5
    m = F.affine_matrices(torch.tensor([10.0, -30.0]), [[1, 2], [0, 0]], 1.1, [3.0, 0.0], None, 12, 15, 2, "cpu").float().to(device)
    fill = torch.rand(2, 3, device=device)
    p3 = torch.cat([m, torch.tensor([[[1e-3, -2e-3, 1.0]], [[-3e-3, 1e-3, 0.9]]], device=device)], 1)  # projective
    return [
        (ops.resized_crop, (x, boxes, [7, 9], 1, True)),
        (ops.resized_crop, (x, boxes, [7, 9], 2, False, flip, mean, std, torch.float32, torch.channels_last)),
        (ops.resized_crop, (xu, boxes, [16, 20], 0, False, None, mean, std, torch.float16, None)),
        (ops.resized_crop, (xc, boxes, [5, 6], 1, True, flip)),
        (ops.warp_affine, (x, m.clone().requires_grad_(), [12, 15], 1, fill)),
        (ops.warp_affine, (x, m, [9, 20], 0, None)),
        (ops.warp_affine, (xu, m, [12, 15], 1, fill)),
        (ops.warp_affine, (x, p3.clone().requires_grad_(), [12, 15], 1, fill)),
        (ops.warp_affine, (xu, p3, [10, 13], 0, None)),
        (ops.flip, (x, flip, ~flip)),
        (ops.flip, (xc, flip, flip)),
        (ops.normalize, (x, mean, std, torch.float32, None)),
        (ops.normalize, (xu, mean, std, torch.bfloat16, torch.channels_last)),
    ]


def test_opcheck(device):
    for op, args in _opcheck_samples(device):
        torch.library.opcheck(op, args)


def test_opcheck_ragged(device):
    data = torch.randint(0, 256, (3 * 10 * 12 + 3 * 7 * 9,), dtype=torch.uint8).to(device)
    offsets = torch.tensor([0, 3 * 10 * 12])
    sizes = torch.tensor([[10, 12], [7, 9]])
    boxes = torch.tensor([[0, 0, 10, 12], [1, 1, 5, 5]], device=device)
    torch.library.opcheck(ops.resized_crop_ragged, (data, offsets, sizes, 3, False, boxes, [6, 6], 1, True))


@pytest.mark.parametrize("mode,antialias", [(1, True), (1, False), (2, True), (2, False), (0, False)])
def test_resized_crop_gradcheck(device, mode, antialias):
    gen = torch.Generator().manual_seed(9)
    x = random_images(2, 2, 7, 9, torch.float64, device, generator=gen).requires_grad_()
    boxes = torch.tensor([[1, 2, 5, 6], [0, 0, 7, 9]], device=device)
    flip = torch.tensor([True, False], device=device)
    std = torch.tensor([[0.5, 2.0], [1.0, 0.25]], device=device)
    mean = torch.zeros(2, 2, device=device)
    for size in ([4, 5], [9, 13]):
        assert torch.autograd.gradcheck(lambda t: ops.resized_crop(t, boxes, size, mode, antialias), (x,))
        assert torch.autograd.gradcheck(lambda t: ops.resized_crop(t, boxes, size, mode, antialias, flip, mean, std), (x,))


def test_cpu_samples_taken_one_at_a_time():
    """The CPU loops that take a batch a sample at a time hand the samples out one by one to the
    intra-op threads (csrc/cpu/samples.h): on two threads, with boxes of very different areas (so that
    the threads finish samples out of order), every sample's crop and gradient are those it gets
    alone, bitwise, and no sample is skipped or done twice."""
    gen = torch.Generator().manual_seed(12)
    x = torch.rand(13, 3, 40, 52, dtype=torch.float64, generator=gen).requires_grad_()
    boxes = torch.tensor([[0, 0, 40, 52] if i % 3 == 0 else [i, i, 3 + i % 5, 4 + i % 7] for i in range(13)])
    grad_out = torch.rand(13, 3, 17, 19, dtype=torch.float64, generator=gen)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        out = ops.resized_crop(x, boxes, [17, 19], 1, True)
        (grad,) = torch.autograd.grad(out, x, grad_out)
        for b in range(13):
            xb = x[b:b + 1].detach().clone().requires_grad_()
            ob = ops.resized_crop(xb, boxes[b:b + 1], [17, 19], 1, True)
            (gb,) = torch.autograd.grad(ob, xb, grad_out[b:b + 1])
            assert torch.equal(out[b:b + 1], ob) and torch.equal(grad[b:b + 1], gb), b
    finally:
        torch.set_num_threads(threads)


def test_autograd_kernels_in_cpp(device):
    """resized_crop's and resized_crop_ragged's autograd kernels (csrc/autograd.cpp): no graph
    when nothing requires a gradient (grad mode on or off), a gradient of the input's layout for a
    channels_last input (and, in float32, the one the float64 gradcheck above checks), and the
    ragged op's error when a gradient is asked of it."""
    gen = torch.Generator().manual_seed(11)
    boxes = torch.tensor([[1, 2, 5, 6], [0, 0, 7, 9]], device=device)
    x = random_images(2, 3, 7, 9, torch.float32, device, generator=gen)
    y = ops.resized_crop(x, boxes, [4, 5], 1, True)
    assert not y.requires_grad and y.grad_fn is None
    xl = x.contiguous(memory_format=torch.channels_last).requires_grad_()
    with torch.no_grad():
        assert not ops.resized_crop(xl, boxes, [4, 5], 1, True).requires_grad
    yl = ops.resized_crop(xl, boxes, [4, 5], 1, True)
    assert yl.requires_grad
    g = torch.rand(yl.shape, generator=gen).to(device)
    (gl,) = torch.autograd.grad(yl, xl, g)
    assert gl.is_contiguous(memory_format=torch.channels_last)
    x64 = x.double().requires_grad_()
    (g64,) = torch.autograd.grad(ops.resized_crop(x64, boxes, [4, 5], 1, True), x64, g.double())
    torch.testing.assert_close(gl, g64.float(), rtol=1e-5, atol=1e-6)
    data = x.reshape(-1).clone().requires_grad_()
    offsets = torch.tensor([0, 3 * 7 * 9])
    sizes = torch.tensor([[7, 9], [7, 9]])
    out = ops.resized_crop_ragged(data, offsets, sizes, 3, False, boxes, [4, 5], 1, True)
    assert out.requires_grad
    with pytest.raises(RuntimeError, match="resized_crop_ragged is not differentiable with respect to data; stack the images"):
        out.sum().backward()


@pytest.mark.parametrize("fill", [False, True])
def test_warp_affine_gradcheck(device, fill):
    gen = torch.Generator().manual_seed(10)
    x = random_images(2, 2, 6, 7, torch.float64, device, generator=gen).requires_grad_()
    m = F.affine_matrices(torch.tensor([17.0, -41.0]), [[0.3, 0.7], [-1.1, 0.2]], torch.tensor([0.9, 1.13]),
                          [4.0, 2.0], None, 6, 7, 2, "cpu").to(device).requires_grad_()
    f = torch.rand(2, 2, generator=gen).float().to(device) if fill else None
    assert torch.autograd.gradcheck(lambda t, mm: ops.warp_affine(t, mm, [6, 7], 1, f), (x, m))
    # nearest: differentiable with respect to the images only
    assert torch.autograd.gradcheck(lambda t: ops.warp_affine(t, m.detach(), [5, 8], 0, f), (x,))
    # projective (3x3): the images and all nine entries
    p3 = torch.cat([m.detach(), torch.tensor([[[0.02, -0.01, 1.0]], [[-0.03, 0.01, 1.1]]], dtype=m.dtype, device=device)], 1)
    assert torch.autograd.gradcheck(lambda t, mm: ops.warp_affine(t, mm, [6, 7], 1, f), (x, p3.requires_grad_()))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_warp_affine_layouts_give_the_same_bytes(device, dtype):
    # dense planes (CUDA's 32-bit tap path), channels_last and a strided view (the general path)
    gen = torch.Generator().manual_seed(13)
    x = random_images(3, 3, 29, 31, dtype, device, generator=gen)
    m = F.affine_matrices(torch.tensor([33.0, -80.0, 150.0]), [[2, 1], [0, -3], [1, 1]], torch.tensor([0.8, 1.2, 1.0]), [4.0, -6.0], None,
                          29, 31, 3, "cpu").float().to(device)
    p3 = torch.cat([m, torch.tensor([[[2e-3, -1e-3, 1.0]]], device=device).expand(3, 1, 3)], 1)
    wide = random_images(3, 3, 29, 62, dtype, device, generator=gen)
    wide[..., ::2] = x
    fill = torch.rand(3, 3, generator=gen).to(device)
    for mat in (m, p3):
        for mode in (0, 1):
            for f in (None, fill):
                want = ops.warp_affine(x, mat, [27, 35], mode, f)
                for other in (x.contiguous(memory_format=torch.channels_last), wide[..., ::2]):
                    assert torch.equal(ops.warp_affine(other, mat, [27, 35], mode, f), want)


def test_projective_warp_with_an_affine_last_row_is_the_affine_warp(device):
    # the homogeneous divide by exactly 1 leaves affine_source's positions: the same bytes
    gen = torch.Generator().manual_seed(12)
    x = random_images(3, 3, 17, 23, torch.uint8, device, generator=gen)
    m = F.affine_matrices(torch.tensor([12.0, -70.0, 200.0]), [[1, 2], [0, 0], [-3, 1]], 0.9, [3.0, 5.0], None, 17, 23, 3,
                          "cpu").float().to(device)
    p3 = torch.cat([m, torch.tensor([0.0, 0.0, 1.0], device=device).expand(3, 1, 3)], 1)
    for mode in (0, 1):
        assert torch.equal(ops.warp_affine(x, p3, [19, 21], mode, None), ops.warp_affine(x, m, [19, 21], mode, None))


def _affine_params(n, seed, device):
    g = torch.Generator().manual_seed(seed)
    u = lambda *s: (torch.rand(*s, generator=g, dtype=torch.float64) * 2 - 1).to(device)  # noqa: E731
    return 180 * u(n), 20 * u(n, 2), 1 + 0.5 * u(n), 40 * u(n, 2), 30 * u(n, 2)


@requires_torchvision
def test_affine_matrices_match_torchvision(device):
    # every sample's centred map against torchvision's _get_inverse_affine_matrix (Python floats),
    # its pixel-index form against the centred map moved by the output's and input's centres
    from torchvision.transforms.v2.functional._geometry import _get_inverse_affine_matrix
    n = 64
    angle, translate, scale, shear, center = _affine_params(n, 3, device)
    theta = ops._affine_matrices(angle, translate, scale, shear, center).cpu()
    want = torch.tensor([_get_inverse_affine_matrix(center[i].tolist(), float(angle[i]), translate[i].tolist(),
                                                    float(scale[i]), shear[i].tolist()) for i in range(n)],
                        dtype=torch.float64).view(n, 2, 3)
    # to float64 rounding: torchvision releases order the steps differently (0.28 factors out cx + tx)
    # and CUDA's sin / cos / tan are within an ulp or two of the host's
    torch.testing.assert_close(theta, want, rtol=1e-13, atol=1e-12)
    h, w, oh, ow = 30, 41, 25, 52
    m = ops._affine_matrices(angle, translate, scale, shear, center, 0.0, [h, w, oh, ow]).cpu()
    ox, oy = (ow - 1) * 0.5, (oh - 1) * 0.5
    shifted = theta.clone()
    shifted[:, 0, 2] = theta[:, 0, 2] - theta[:, 0, 0] * ox - theta[:, 0, 1] * oy + (w - 1) * 0.5
    shifted[:, 1, 2] = theta[:, 1, 2] - theta[:, 1, 0] * ox - theta[:, 1, 1] * oy + (h - 1) * 0.5
    assert torch.equal(m, shifted)


def test_affine_matrices_snap_and_broadcast(device):
    # snap_period: rotations by its multiples get exact entries; one-row parameters serve every sample
    f64 = dict(dtype=torch.float64, device=device)
    angle = torch.tensor([90.0, -180.0, 270.0, 90.0, 45.0], **f64)
    zeros, one = torch.zeros(1, 2, **f64), torch.ones(1, **f64)
    m = ops._affine_matrices(angle, zeros, one, zeros, zeros, 90.0).cpu()
    assert torch.equal(m[:3, :, :2], torch.tensor([[[0.0, 1.0], [-1.0, 0.0]], [[-1.0, 0.0], [0.0, -1.0]], [[0.0, -1.0], [1.0, 0.0]]],
                                                  dtype=torch.float64))
    assert abs(float(m[4, 0, 0]) - 0.5 ** 0.5) < 1e-15
    by_half_turns = ops._affine_matrices(angle, zeros, one, zeros, zeros, 180.0).cpu()
    assert torch.equal(by_half_turns[1], m[1]) and by_half_turns[0, 0, 0] != 0 and abs(float(by_half_turns[0, 0, 0])) < 1e-15
    full = ops._affine_matrices(angle, zeros.expand(5, 2).contiguous(), one.expand(5).contiguous(),
                                zeros.expand(5, 2).contiguous(), zeros.expand(5, 2).contiguous(), 90.0).cpu()
    assert torch.equal(m, full)
    # a snapped sample's entries do not move with its angle
    a = angle.clone().requires_grad_()
    ops._affine_matrices(a, zeros, one, zeros, zeros, 90.0).sum().backward()
    assert torch.equal(a.grad[:4].cpu(), torch.zeros(4, dtype=torch.float64)) and a.grad[4] != 0


def test_affine_matrices_gradcheck_and_opcheck(device):
    angle, translate, scale, shear, center = _affine_params(3, 5, device)
    for period, sizes in ((0.0, None), (90.0, [7, 9, 11, 6])):  # no angle on a multiple of 90 (not differentiable there)
        inputs = tuple(t.clone().requires_grad_() for t in (angle, translate, scale, shear, center[:1]))
        assert torch.autograd.gradcheck(lambda *a: ops._affine_matrices(*a, period, sizes), inputs)
        torch.library.opcheck(ops._affine_matrices, (angle, translate, scale, shear, center, period, sizes))
    # through affine(): the images' gradient and the parameters' in one backward
    x = random_images(3, 2, 7, 9, torch.float64, device).requires_grad_()
    a = angle.clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda t, aa: F.affine(t, aa, translate, scale, shear, "bilinear"), (x, a))


def test_affine_matrices_errors(device):
    f64 = dict(dtype=torch.float64, device=device)
    a, t = torch.zeros(2, **f64), torch.zeros(2, 2, **f64)
    s = torch.ones(2, **f64)
    with pytest.raises(RuntimeError, match=r"torchaug::_affine_matrices: translate must have shape \(B, 2\) or \(1, 2\) with B=2, got \(2, 3\)"):
        ops._affine_matrices(a, torch.zeros(2, 3, **f64), s, t, t)
    with pytest.raises(RuntimeError, match=r"torchaug::_affine_matrices: scale must be float64, got Float"):
        ops._affine_matrices(a, t, s.float(), t, t)
    with pytest.raises(RuntimeError, match=r"torchaug::_affine_matrices: angle must have shape \(B,\) or \(1,\) with B=3, got \(2,\)"):
        ops._affine_matrices(a, torch.zeros(3, 2, **f64), s[:1], t[:1], t[:1])
    with pytest.raises(RuntimeError, match=r"torchaug::_affine_matrices: pixel_sizes must be \[H, W, OH, OW\], got 2 values"):
        ops._affine_matrices(a, t, s, t, t, 0.0, [3, 4])
    with pytest.raises(RuntimeError, match=r"torchaug::_affine_matrices: snap_period must be a finite number >= 0 \(degrees\), got -90"):
        ops._affine_matrices(a, t, s, t, t, -90.0)


@pytest.mark.parametrize("in_dtype", [torch.uint8, torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "strided", "to_channels_last"])
def test_normalize_equals_its_formula(device, in_dtype, out_dtype, layout):
    """normalize(x, mean, std) is (x * scale - mean) / std in the input's accumulation type (float,
    double for double images; scale 1/255 for uint8 as to_dtype(scale=True) has it), rounded once
    to out_dtype: bit for bit, per-sample and batch-broadcast parameters, every layout."""
    gen = torch.Generator().manual_seed(11)
    x = random_images(3, 3, 9, 14, in_dtype, generator=gen, channels_last=layout == "channels_last")
    if layout == "strided":
        x = random_images(3, 3, 9, 28, in_dtype, generator=gen)[..., ::2]
    fmt = torch.channels_last if layout == "to_channels_last" else None
    acc = torch.float64 if in_dtype == torch.float64 else torch.float32
    for mean, std in ((torch.rand(3, 3, generator=gen), torch.rand(3, 3, generator=gen) + 0.1),
                      (torch.tensor([[0.485, 0.456, 0.406]]).expand(3, 3), torch.tensor([[0.229, 0.224, 0.225]]).expand(3, 3))):
        got = ops.normalize(x.to(device), mean.to(device), std.to(device), out_dtype, fmt)
        scale = torch.tensor(1 / 255 if in_dtype == torch.uint8 else 1.0, dtype=torch.float32).to(acc)
        want = ((x.to(acc) * scale - mean.to(acc)[:, :, None, None]) / std.to(acc)[:, :, None, None]).to(out_dtype)
        assert got.dtype == out_dtype and got.shape == x.shape
        assert got.is_contiguous(memory_format=fmt or (torch.channels_last if layout == "channels_last" else torch.contiguous_format))
        assert torch.equal(got.cpu(), want), (got.cpu() - want).abs().max()


def test_flip_and_normalize_gradcheck(device):
    x = random_images(2, 3, 4, 5, torch.float64, device).requires_grad_()
    flip = torch.tensor([True, False], device=device)
    assert torch.autograd.gradcheck(lambda t: ops.flip(t, flip, ~flip), (x,))
    mean, std = torch.rand(2, 3, device=device), torch.rand(2, 3, device=device) + 0.5
    assert torch.autograd.gradcheck(lambda t: ops.normalize(t, mean, std, torch.float64, None), (x,))
    # second derivatives (the backward of each is differentiable), and the gradient in the images'
    # dtype and memory format, a channels_last batch with a batch-broadcast std included
    assert torch.autograd.gradgradcheck(lambda t: ops.flip(t, flip, ~flip), (x,))
    assert torch.autograd.gradgradcheck(lambda t: ops.normalize(t, mean, std, torch.float64, None) ** 2, (x,))
    xl = x.detach().float().contiguous(memory_format=torch.channels_last).requires_grad_()
    s = torch.tensor([[0.5, 0.25, 2.0]], device=device).expand(2, 3)
    ops.normalize(xl, mean, s, torch.float64, None).sum().backward()
    assert xl.grad.dtype == torch.float32 and xl.grad.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(xl.grad, (1 / s).view(2, 3, 1, 1).expand(2, 3, 4, 5).float())
    # a gradient wanted for a parameter only: the output is recorded (as register_autograd records
    # it), the parameter gets none; with no gradient wanted, none is recorded
    m = mean.clone().requires_grad_()
    out = ops.normalize(x.detach(), m, std, None, None)
    assert out.requires_grad
    out.sum().backward()
    assert m.grad is None
    with torch.no_grad():
        assert not ops.normalize(x, mean, std, None, None).requires_grad and not ops.flip(x, flip, flip).requires_grad


@requires_cuda
def test_cpu_cuda_agree():
    """Same parameters on CPU and CUDA: uint8 within 1 LSB, floats to rounding."""
    for op, args in _opcheck_samples("cpu"):
        cuda_args = tuple(a.detach().cuda() if isinstance(a, torch.Tensor) else a for a in args)
        cpu_args = tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in args)
        a, b = op(*cpu_args), op(*cuda_args).cpu()
        assert a.dtype == b.dtype and a.stride() == b.stride()
        if a.dtype == torch.uint8:
            assert (a.int() - b.int()).abs().max() <= 1
        else:
            torch.testing.assert_close(a.float(), b.float(), atol=1e-2 if a.dtype == torch.bfloat16 else 1e-4, rtol=1e-3)


@pytest.mark.skipif(not CUDA or torch.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_cuda_kernels_of_more_than_48k_shared_memory_on_every_device():
    """resized_crop's tile kernel and the resident augment launch with more than 48 KiB of dynamic
    shared memory, an opt-in that belongs to the device it was set on: one process launching them
    on each GPU in turn gets the same bytes on every one (the opt-in is set once per device)."""
    gen = torch.Generator().manual_seed(3)
    x = random_images(8, 3, 375, 500, torch.uint8, generator=gen)
    boxes = random_boxes(8, 375, 500, gen)
    ops = torch.randint(0, len(F.AUGMENT_OPS), (8, 2), generator=gen)
    mags = torch.rand(8, 2, generator=gen)
    results = []
    for d in range(torch.cuda.device_count()):
        dev = f"cuda:{d}"
        crop = F.resized_crop_boxes(x.to(dev), boxes.to(dev), [224, 224])
        results.append((crop.cpu(), F.augment(crop, ops.to(dev), mags.to(dev), validate=False).cpu()))
    for crop, aug in results[1:]:
        assert torch.equal(crop, results[0][0]) and torch.equal(aug, results[0][1])


@pytest.mark.parametrize("antialias", [True, False])
@pytest.mark.parametrize("out_format", [torch.contiguous_format, torch.channels_last])
def test_resized_crop_uint8_ties_round_half_to_even(device, antialias, out_format):
    """An exact 2x bilinear upscale weighs neighbours 3/4 and 1/4, so many sums are exact halves:
    the uint8 store rounds them half to even (torch.round), on every backend and through the CUDA
    tile kernel's uint8 epilogue, bitwise what rounding the float64 interpolation gives."""
    # neighbours 2 apart along each row (sums a + 1/2 and a + 3/2), rows alike (the vertical taps are
    # exact), odd offsets between channels and samples (ties up and down)
    row = 2 * torch.arange(48) + 37 * torch.arange(3).view(3, 1) + 11 * torch.arange(4).view(4, 1, 1)
    x = (row % 256).to(torch.uint8).unsqueeze(2).expand(4, 3, 40, 48).contiguous()
    boxes = torch.tensor([[0, 0, 40, 48]]).expand(4, 4).contiguous()
    out = F.resized_crop_boxes(x.to(device), boxes.to(device), [80, 96], "bilinear", antialias,
                               memory_format=out_format).cpu()
    ref = torch.nn.functional.interpolate(x.double(), size=[80, 96], mode="bilinear", align_corners=False,
                                          antialias=antialias)
    frac = ref - ref.floor()
    assert ((frac - 0.5).abs() < 1e-9).float().mean() > 0.2  # the case is mostly ties
    assert torch.equal(out, ref.round().clamp(0, 255).to(torch.uint8))


@requires_cuda
def test_cpu_cuda_agree_large_batch():
    gen = torch.Generator().manual_seed(11)
    x = random_images(64, 3, 75, 100, torch.uint8, generator=gen)
    boxes = random_boxes(64, 75, 100, gen)
    for mode in MODES:
        for aa in (True, False):
            a = F.resized_crop_boxes(x, boxes, [48, 40], mode, aa)
            b = F.resized_crop_boxes(x.cuda(), boxes.cuda(), [48, 40], mode, aa).cpu()
            assert (a.int() - b.int()).abs().max() <= 1
    # strong downscales (more taps than the CUDA tap tables hold) and crops taller than the image
    # (more input rows than the tile's shared-memory region): the CUDA per-pixel path
    tall = boxes.clone()
    tall[:, 0] -= 40
    tall[:, 2] = 150
    for bx, size in ((boxes, [3, 4]), (tall, [40, 30])):
        for mode in MODES:
            a = F.resized_crop_boxes(x, bx, size, mode, True)
            b = F.resized_crop_boxes(x.cuda(), bx.cuda(), size, mode, True).cpu()
            assert (a.int() - b.int()).abs().max() <= 1
    m = F.affine_matrices(torch.rand(64) * 360, torch.randn(64, 2) * 5, torch.rand(64) + 0.5, torch.randn(64, 2) * 10, None, 75, 100, 64, "cpu").float()
    for mode in ("nearest", "bilinear"):
        a = F.warp_affine(x, m, None, mode, 0)
        b = F.warp_affine(x.cuda(), m.cuda(), None, mode, 0).cpu()
        diff = (a.int() - b.int()).abs()
        assert diff.max() <= 1 if mode == "bilinear" else (diff > 0).float().mean() < 1e-3


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cpu_cuda_same_resize_weights(dtype):
    """The taps' weights are bitwise the same on the CPU and in every CUDA kernel (the axis math
    rounds each product, never an FMA that nvcc may or may not form). Seen through images of
    isolated powers of two, 9 pixels apart in both directions: no output's taps (at most 8 a side
    here: bicubic antialiased at up to 1.75x) reach two of them, so every sum has one nonzero term, exact
    whatever the order of the sums, and each output is wy * wx * v rounded once, on either backend.
    Upscales, downscales, boxes reaching outside the image, a flip; the tile kernel at its row
    heights (a dense batch whose crops are inside it, one that is not validated, a ragged list)."""
    gen = torch.Generator().manual_seed(21)
    B, H, W = 6, 120, 160
    x = torch.zeros(B, 1, H, W, dtype=dtype)
    x[:, :, 4::9, 2::9] = 2.0 ** torch.randint(-2, 3, x[:, :, 4::9, 2::9].shape, generator=gen).to(dtype)
    boxes = torch.tensor([[10, 7, 30, 40], [0, 0, 100, 112], [50, 30, 70, 89], [-6, -9, 40, 50], [20, 111, 90, 60],
                          [20, 21, 100, 110]])
    # a crop's edge pixels hold no power of two: the taps that interpolate clamps there repeat an edge
    # pixel, and two nonzero terms would round in each backend's order
    for top, left, h, w in boxes.tolist():
        assert all(r % 9 != 4 for r in (top, top + h - 1)) and all(c % 9 != 2 for c in (left, left + w - 1))
    flip = torch.tensor([True, False, True, False, False, True])
    xc, bc, fc = x.cuda(), boxes.cuda(), flip.cuda()
    for size in ([224, 224], [96, 112], [64, 72]):
        for mode in ("bilinear", "bicubic"):
            for aa in (True, False):
                want = F.resized_crop_boxes(x, boxes, size, mode, aa, flip=flip)
                dense = F.resized_crop_boxes(xc, bc, size, mode, aa, flip=fc, validate=False)
                ragged = F.resized_crop_boxes(list(xc), bc, size, mode, aa, flip=fc)
                for got in (dense, ragged):
                    assert torch.equal(got.cpu(), want), (size, mode, aa, (got.cpu() - want).abs().max())
    # crops inside the images: the tallest tiles the batch's height allows
    inside = boxes[[0, 1, 2, 5]]
    for mode in ("bilinear", "bicubic"):
        for aa in (True, False):
            want = F.resized_crop_boxes(x[:4], inside, [64, 64], mode, aa)
            got = F.resized_crop_boxes(xc[:4], inside.cuda(), [64, 64], mode, aa)
            assert torch.equal(got.cpu(), want), (mode, aa)


@requires_cuda
@pytest.mark.parametrize("normalize", [False, True])
def test_cpu_cuda_same_bits_after_undershoot(normalize):
    """Bicubic undershoots next to an edge (sums in (-0.5, 0)): the uint8 value the crop stores there
    is 0, so its float32 output (ToDtype, or normalized with a mean of 0) is +0, as torchvision's
    uint8 round trip gives, on both backends; compared bit for bit, where torch.equal takes -0 for
    +0. One uint8 value rounded half to even, dense and ragged, tile kernel and CPU."""
    x = torch.zeros(2, 3, 40, 48, dtype=torch.uint8)
    x[:, :, :, 24:] = 255
    x[1, :, 10:30] = 255 - x[1, :, 10:30]
    boxes = torch.tensor([[0, 10, 40, 28], [5, 12, 30, 26]])
    kw = dict(mean=torch.zeros(2, 3), std=torch.full((2, 3), 0.5)) if normalize else dict(out_dtype=torch.float32)
    sums = F.resized_crop_boxes(x.float(), boxes, [64, 96], "bicubic", False)
    assert ((sums < 0) & (sums > -0.5)).any()  # the values that round to -0
    want = F.resized_crop_boxes(x, boxes, [64, 96], "bicubic", False, **kw)
    assert not torch.signbit(want).any()
    bits = lambda t: t.contiguous().view(torch.int32)
    kc = {k: v.cuda() if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
    for got in (F.resized_crop_boxes(x.cuda(), boxes.cuda(), [64, 96], "bicubic", False, **kc),
                F.resized_crop_boxes(list(x.cuda()), boxes.cuda(), [64, 96], "bicubic", False, **kc)):
        assert torch.equal(bits(got.cpu()), bits(want)), (bits(got.cpu()) != bits(want)).sum()


@requires_cuda
def test_cuda_uint8_scaled_taps_are_bitwise_the_float_taps():
    """uint8 images take scaled taps in the CUDA kernel (csrc/cuda/resized_crop.cu: the byte read as
    a subnormal float times a weight scaled by 2^126): every sum is bitwise the one of the float taps,
    so the uint8 result is the float32 kernel's on the same integer-valued pixels, rounded half to
    even and saturated. Checked for rows at every byte alignment (odd widths, a view starting one
    pixel in, ragged images at odd offsets), every tap count of the consecutive path (downscales up
    to 3.5x with antialias), boxes reaching outside the image, 1, 3 and 5 channels, and all three
    interpolations; and within 1 LSB of the CPU."""
    gen = torch.Generator().manual_seed(12)
    cases = []
    big = random_images(12, 3, 375, 500, torch.uint8, generator=gen)
    cases.append((big, random_boxes(12, 375, 500, gen), [224, 224]))
    odd = random_images(6, 3, 61, 98, torch.uint8, generator=gen)[..., 1:]  # W 97, rows start at odd bytes
    cases.append((odd, random_boxes(6, 61, 97, gen, allow_outside=True), [17, 29]))
    cases.append((odd, random_boxes(6, 61, 97, gen), [40, 90]))
    for c in (1, 5):
        x = random_images(4, c, 45, 123, torch.uint8, generator=gen)
        cases.append((x, random_boxes(4, 45, 123, gen), [13, 35]))
    ragged = [random_images(1, 3, h, w, torch.uint8, generator=gen)[0] for h, w in ((33, 77), (20, 101), (57, 13))]
    ragged_boxes = torch.cat([random_boxes(1, im.shape[1], im.shape[2], gen) for im in ragged])

    def run(mode, aa, dtype):
        outs = [F.resized_crop_boxes(x.to(dtype).cuda(), bx.cuda(), size, mode, aa).cpu() for x, bx, size in cases]
        outs.append(F.resized_crop_boxes([im.to(dtype).cuda() for im in ragged], ragged_boxes.cuda(), [19, 23], mode,
                                         aa).cpu())
        return outs

    for mode in MODES:
        for aa in (True, False):
            got = run(mode, aa, torch.uint8)
            ref = [f.round().clamp(0, 255).to(torch.uint8) for f in run(mode, aa, torch.float32)]
            for i, (a, b) in enumerate(zip(ref, got)):
                assert torch.equal(a, b), f"{mode} antialias={aa} case {i}: {(a.int() - b.int()).abs().max()} LSB"
            for (x, bx, size), b in zip(cases, got):
                cpu = F.resized_crop_boxes(x, bx, size, mode, aa)
                assert (cpu.int() - b.int()).abs().max() <= 1, f"{mode} antialias={aa}: CPU differs"


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
@pytest.mark.parametrize("channels", [1, 3, 5, 9])
def test_cuda_fused_normalize_divides_exactly(channels, dtype):
    """The tile kernel's float32 epilogue divides by std through its reciprocal (rn_div_by in
    csrc/kernels/common.h): bitwise what the normalize op's division gives, over 512 per-sample
    means and stds a channel spread over e^-6 .. e^6, and for stds and means outside the reciprocal's
    range (the fallback to the plain division). The constants come from the tile's shared table
    (s_norm): one chunk of channels (1, 3), two (5), and more channels than it holds (9, the generic
    store)."""
    gen = torch.Generator().manual_seed(13)
    B = 512
    x = random_images(B, channels, 24, 24, dtype, "cuda", generator=gen)
    boxes = random_boxes(B, 24, 24, gen).cuda()
    mean = torch.rand(B, channels, generator=gen) * 4 - 2
    std = torch.exp(torch.rand(B, channels, generator=gen) * 12 - 6)
    std[0, :3] = torch.tensor([1e-30, 1e30, 3e-20])[:channels]
    mean[1, :3] = torch.tensor([1e-25, 0.0, 3e25])[:channels]
    mean, std = mean.cuda(), std.cuda()
    fused = ops.resized_crop(x, boxes, [16, 16], 1, True, None, mean, std, torch.float32, None)
    ref = ops.normalize(ops.resized_crop(x, boxes, [16, 16], 1, True), mean, std, torch.float32, None)
    assert torch.isfinite(fused).all()
    torch.testing.assert_close(fused, ref, rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# errors (CONTRIBUTING.md: an error names the op, the argument, what was expected and what came)
# ---------------------------------------------------------------------------------------------

def test_errors_name_the_op_and_argument(device):
    x = random_images(2, 3, 10, 12, torch.uint8, device)
    boxes = torch.tensor([[0, 0, 5, 5], [1, 1, 4, 4]], device=device)
    cases = [
        (lambda: ops.resized_crop(x.int(), boxes, [4, 4], 1, True), r"torchaug::resized_crop: images must be uint8, float32.*got Int"),
        (lambda: ops.resized_crop(x[0], boxes, [4, 4], 1, True), r"torchaug::resized_crop: images must be a 4-D \(B, C, H, W\) tensor, got 3-D"),
        (lambda: ops.resized_crop(x, boxes[:, :3], [4, 4], 1, True), r"torchaug::resized_crop: boxes must have shape \(B, 4\) with B=2, got \(2, 3\)"),
        (lambda: ops.resized_crop(x, boxes.float(), [4, 4], 1, True), r"torchaug::resized_crop: boxes must have dtype Long, got Float"),
        (lambda: ops.resized_crop(x, boxes, [0, 4], 1, True), r"torchaug::resized_crop: out_size must be positive, got \[0, 4\]"),
        (lambda: ops.resized_crop(x, boxes, [4], 1, True), r"torchaug::resized_crop: out_size must be \[height, width\]"),
        (lambda: ops.resized_crop(x, boxes, [4, 4], 5, True), r"torchaug::resized_crop: interpolation must be 0 \(nearest\), 1 \(bilinear\), 2 \(bicubic\) or 3 \(nearest-exact\), got 5"),
        (lambda: ops.resized_crop(x, boxes, [4, 4], 1, True, torch.ones(3, dtype=torch.bool, device=device)), r"torchaug::resized_crop: flip must have shape \(B,\) with B=2, got \(3,\)"),
        (lambda: ops.resized_crop(x, boxes, [4, 4], 1, True, None, torch.zeros(2, 4, device=device), torch.ones(2, 4, device=device)), r"torchaug::resized_crop: mean must have shape \(B, C\) with B=2, got \(2, 4\)"),
        (lambda: ops.resized_crop(x, boxes, [4, 4], 1, True, None, torch.zeros(2, 3, device=device), None), r"mean and std must be given together"),
        (lambda: ops.resized_crop(x.float(), boxes, [4, 4], 1, True, None, None, None, torch.uint8), r"torchaug::resized_crop: out_dtype must be the input dtype \(Float\) or floating, got Byte"),
        (lambda: ops.resized_crop(x[:, :, :0], boxes, [4, 4], 1, True), r"torchaug::resized_crop: images must have C, H, W > 0, got shape \(2, 3, 0, 12\)"),
        (lambda: ops.warp_affine(x, torch.zeros(2, 4, 3, device=device), [4, 4], 1), r"torchaug::warp_affine: matrices must have shape \(B, 2, 3\) or \(B, 3, 3\) with B=2, got \(2, 4, 3\)"),
        (lambda: ops.warp_affine(x, torch.zeros(2, 2, 3, device=device), [4, 4], 2), r"torchaug::warp_affine: interpolation must be 0 \(nearest\) or 1 \(bilinear\), got 2"),
        (lambda: ops.warp_affine(x, torch.zeros(2, 2, 3, device=device), [4, 4], 1, torch.zeros(2, 4, device=device)), r"torchaug::warp_affine: fill must have shape \(B, C\) with B=2, got \(2, 4\)"),
        (lambda: ops.flip(x, torch.ones(2, device=device), torch.ones(2, dtype=torch.bool, device=device)), r"torchaug::flip: horizontal must have dtype Bool, got Float"),
        (lambda: ops.normalize(x, torch.zeros(2, 3, device=device), torch.ones(2, 3, device=device), torch.uint8, None), r"torchaug::normalize: out_dtype must be float32, float64, float16 or bfloat16, got Byte"),
        (lambda: ops.normalize(x, torch.zeros(3, device=device), torch.ones(2, 3, device=device), None, None), r"torchaug::normalize: mean must have shape \(B, C\) with B=2, got \(3,\)"),
    ]
    for fn, pattern in cases:
        with pytest.raises(RuntimeError, match=pattern):
            fn()


def test_value_errors_on_cpu():
    x = random_images(2, 3, 10, 12, torch.uint8)
    with pytest.raises(RuntimeError, match=r"torchaug::resized_crop: boxes must have 0 < height, width <= 1048576 and \|top\|, \|left\| <= 1048576, got box 1 = \[1, 1, 0, 4\]"):
        ops.resized_crop(x, torch.tensor([[0, 0, 5, 5], [1, 1, 0, 4]]), [4, 4], 1, True)
    with pytest.raises(RuntimeError, match=r"torchaug::normalize: std must not contain zeros"):
        ops.normalize(x, torch.zeros(2, 3), torch.tensor([[1.0, 0.0, 1.0]] * 2), None, None)
    with pytest.raises(ValueError, match=r"torchaug.resized_crop: crop boxes must have 0 < height, width <= 1048576 and \|top\|, \|left\| <= 1048576, got box 0"):
        F.resized_crop(x, 0, 0, 0, 5, [4, 4])
    with pytest.raises(ValueError, match=r"size must be \[height, width\] when height or width differ per sample"):
        F.resized_crop(x, 0, 0, torch.tensor([5, 6]), 5, 4)
    with pytest.raises(ValueError, match=r"torchaug.flip: images must be \(C, H, W\) or \(B, C, H, W\), got 2-D"):
        F.flip(x[0, 0], True)


def test_ragged_errors():
    data = torch.zeros(100, dtype=torch.uint8)
    boxes = torch.tensor([[0, 0, 2, 2]])
    with pytest.raises(RuntimeError, match=r"torchaug::resized_crop_ragged: image 0 \(offset 0, 3x10x10\) lies outside data of 100 elements"):
        ops.resized_crop_ragged(data, torch.tensor([0]), torch.tensor([[10, 10]]), 3, False, boxes, [2, 2], 1, True)
    with pytest.raises(RuntimeError, match=r"torchaug::resized_crop_ragged: offsets \(B,\) and sizes \(B, 2\) must describe the same B images, got offsets of shape \(1,\) and sizes of shape \(1, 3\)"):
        ops.resized_crop_ragged(data, torch.tensor([0]), torch.tensor([[1, 2, 3]]), 3, False, boxes, [2, 2], 1, True)
    with pytest.raises(ValueError, match=r"torchaug.resized_crop: images\[1\] must have the channels, dtype and device of images\[0\]"):
        F.resized_crop_boxes([torch.zeros(3, 4, 4), torch.zeros(1, 4, 4)], boxes.expand(2, 4), [2, 2])
    # the list is checked as a whole; the error names the first image that fails, whichever check
    good = [torch.zeros(3, 4, 4) for _ in range(5)]
    for i, bad, message in [(3, torch.zeros(3, 4, 4, dtype=torch.float64), r"images\[3\] must have the channels, dtype and device"),
                            (2, torch.zeros(4, 4), r"images\[2\] must be a \(C, H, W\) tensor, got torch.Size\(\[4, 4\]\)"),
                            (4, [[0.0]], r"images\[4\] must be a \(C, H, W\) tensor, got list"),
                            (1, torch.zeros(2, 4, 4), r"images\[1\] must have the channels, dtype and device")]:
        images = good[:i] + [bad] + good[i + 1:]
        with pytest.raises(ValueError, match=r"torchaug.resized_crop: " + message):
            F.resized_crop_boxes(images, boxes.expand(5, 4), [2, 2])


@requires_cuda
def test_device_mismatch_errors():
    x = random_images(2, 3, 10, 12, torch.uint8, "cuda")
    with pytest.raises(RuntimeError, match=r"torchaug::resized_crop: boxes must be on the images' device cuda:0, got cpu"):
        ops.resized_crop(x, torch.tensor([[0, 0, 5, 5]] * 2), [4, 4], 1, True)
    with pytest.raises(ValueError, match=r"torchaug.resized_crop: images\[1\] must have the channels, dtype and device of images\[0\] \(3, torch.uint8, cuda:0\), got \(3, torch.uint8, cpu\)"):
        F.resized_crop_boxes([x[0], x[1].cpu()], torch.tensor([[0, 0, 5, 5]] * 2, device="cuda"), [4, 4])
    with pytest.raises(RuntimeError, match=r"torchaug::warp_affine: matrices must be on the images' device cuda:0, got cpu"):
        ops.warp_affine(x, torch.zeros(2, 2, 3), [4, 4], 1)


def test_empty_batch(device):
    x = random_images(0, 3, 10, 12, torch.uint8, device)
    boxes = torch.zeros(0, 4, dtype=torch.int64, device=device)
    assert ops.resized_crop(x, boxes, [4, 5], 1, True).shape == (0, 3, 4, 5)
    assert ops.warp_affine(x, torch.zeros(0, 2, 3, device=device), [4, 5], 1).shape == (0, 3, 4, 5)
    assert ops.flip(x, torch.zeros(0, dtype=torch.bool, device=device), torch.zeros(0, dtype=torch.bool, device=device)).shape == (0, 3, 10, 12)
    assert ops.normalize(x, torch.zeros(0, 3, device=device), torch.ones(0, 3, device=device), None, None).shape == (0, 3, 10, 12)


def test_torch_compile_fullgraph(device):
    x = random_images(4, 3, 40, 50, torch.uint8, device)
    boxes = torch.tensor([[0, 0, 40, 50], [5, 5, 20, 30], [1, 2, 3, 4], [10, 0, 30, 50]], device=device)
    flip = torch.tensor([True, False, True, False], device=device)

    def pipeline(img, bx, fl):
        y = torch.ops.torchaug.resized_crop(img, bx, [24, 24], 1, True, fl)
        mean = torch.full((img.shape[0], 3), 0.5, device=img.device)
        return torch.ops.torchaug.normalize(y, mean, mean, torch.float32, torch.channels_last)

    compiled = torch.compile(pipeline, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(x, boxes, flip), pipeline(x, boxes, flip))


@pytest.mark.parametrize("channels_last", [False, True])
def test_torch_compile_fullgraph_list_of_images(device, channels_last):
    # a list of images of different sizes is packed into one buffer inside the traced graph (the
    # shared-storage shortcut reads storages, which a trace does not): the eager bytes
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    images = [random_images(1, 3, h, w, torch.uint8, device).contiguous(memory_format=fmt)[0]
              for h, w in ((20, 30), (25, 18), (22, 26))]
    boxes = torch.tensor([[0, 0, 10, 10], [2, 3, 12, 9], [1, 1, 20, 20]], device=device)

    def crop(xs, bx):
        return F.resized_crop_boxes(xs, bx, [8, 8], validate=False, mean=[0.5] * 3, std=[0.25] * 3)

    compiled = torch.compile(crop, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(images, boxes), crop(images, boxes))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.float64])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("fill", [None, [7.0, 250.4, 3.6]])
def test_nearest_warp_equals_its_formula(device, dtype, channels_last, fill):
    """Nearest-neighbour warp_affine is, bit for bit, the tap at the rounded source position
    (m @ (x, y, 1), each product and sum rounded in the image's accumulation type, rounded half to
    even), the fill (or zero) where that tap is outside the image: the CPU's row loops and the GPU's
    per-pixel kernels alike."""
    gen = torch.Generator().manual_seed(11)
    b, c, h, w, oh, ow = 5, 3, 23, 31, 19, 37
    x = random_images(b, c, h, w, dtype, device, channels_last, gen)
    angle = torch.rand(b, generator=gen) * 6.28
    m = torch.zeros(b, 2, 3, dtype=torch.float64)
    m[:, 0, 0], m[:, 0, 1] = angle.cos() * 1.3, -angle.sin()
    m[:, 1, 0], m[:, 1, 1] = angle.sin(), angle.cos() * 0.8
    m[:, :, 2] = torch.rand(b, 2, generator=gen) * 40 - 10
    acc = torch.float64 if dtype == torch.float64 else torch.float32
    m = m.to(acc)
    out = F.warp_affine(x, m.to(device), [oh, ow], "nearest", fill)
    ys, xs = torch.meshgrid(torch.arange(oh), torch.arange(ow), indexing="ij")
    fx, fy = xs.to(acc), ys.to(acc)
    sx = (m[:, 0, 0, None, None] * fx + m[:, 0, 1, None, None] * fy) + m[:, 0, 2, None, None]
    sy = (m[:, 1, 0, None, None] * fx + m[:, 1, 1, None, None] * fy) + m[:, 1, 2, None, None]
    rx, ry = sx.round(), sy.round()
    assert valid_mix(rx, ry, h, w)
    valid = (rx >= 0) & (rx < w) & (ry >= 0) & (ry < h)
    ix, iy = rx.clamp(0, w - 1).long(), ry.clamp(0, h - 1).long()
    xc = x.cpu()
    taps = xc[torch.arange(b)[:, None, None, None], torch.arange(c)[None, :, None, None], iy[:, None], ix[:, None]]
    if fill is None:
        outside = torch.zeros(c, dtype=dtype)
    elif dtype == torch.uint8:
        outside = torch.tensor(fill).round().clamp(0, 255).to(torch.uint8)
    else:
        outside = torch.tensor(fill, dtype=torch.float32).to(dtype)
    ref = torch.where(valid[:, None], taps, outside[None, :, None, None].expand(b, c, oh, ow))
    assert torch.equal(out.cpu(), ref)


def valid_mix(rx, ry, h, w):
    """Some taps inside the image, some outside."""
    inside = (rx >= 0) & (rx < w) & (ry >= 0) & (ry < h)
    return bool(inside.any()) and not bool(inside.all())


# ---- warp_grid ------------------------------------------------------------------------------------

def _warp_grid_grids(b, oh, ow, dtype, generator):
    """Grids that reach past the image on every side, with some entries on pixel centres and the
    centres' midpoints (the nearest taps' ties)."""
    g = torch.rand(b, oh, ow, 2, generator=generator, dtype=torch.float64).to(dtype) * 2.6 - 1.3
    g[:, 0, :, 0] = (2 * torch.arange(ow, dtype=dtype) + 1) / ow - 1  # pixel centres of a same-size input
    g[:, 1, :, 0] = 2 * torch.arange(ow, dtype=dtype) / ow - 1  # midpoints
    return g


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.float16, torch.float64])
@pytest.mark.parametrize("interpolation", [0, 1])
@pytest.mark.parametrize("fill", [None, "rows"])
def test_warp_grid_is_grid_sample_with_torchvisions_fill_and_rounding(device, dtype, interpolation, fill):
    # against F._geometry._sample_grid (torch's grid_sample on a float copy, torchvision's
    # _apply_grid_transform): a grid per sample and one for the batch, another output size,
    # channels_last input; bilinear uint8 within 1 LSB (the taps' sums in another order), float64
    # within 1e-12, nearest exactly
    gen = torch.Generator().manual_seed(int(interpolation) * 10 + (fill is None))
    x = random_images(3, 3, 17, 23, dtype, device, generator=gen)
    gdtype = torch.float64 if dtype == torch.float64 else torch.float32
    rows = None if fill is None else (torch.rand(3, 3, generator=gen) * (255 if dtype == torch.uint8 else 1)).to(device)
    mode = "nearest" if interpolation == 0 else "bilinear"
    for grid in (_warp_grid_grids(3, 11, 29, gdtype, gen), _warp_grid_grids(1, 17, 23, gdtype, gen)):
        grid = grid.to(device)
        for images in (x, x.contiguous(memory_format=torch.channels_last)):
            got = torch.ops.torchaug.warp_grid(images, grid, interpolation, rows)
            want = F._geometry._sample_grid(images, grid, mode, rows)
            assert got.shape == want.shape and got.stride() == want.stride()
            if interpolation == 0:
                torch.testing.assert_close(got, want, atol=0, rtol=0)
            elif dtype == torch.float64:
                torch.testing.assert_close(got, want, atol=1e-12, rtol=0)
            else:
                assert_close_images(got, want, dtype, f"{dtype} {mode} fill={fill}")
    torch.library.opcheck(torch.ops.torchaug.warp_grid, (x, grid, interpolation, rows))


def test_warp_grid_errors(device):
    x = torch.zeros(2, 3, 5, 6, device=device)
    with pytest.raises(RuntimeError, match=r"warp_grid: grid must have shape \(B, H_out, W_out, 2\) or \(1, H_out, W_out, 2\) with B=2, got \(3, 4, 4, 2\)"):
        torch.ops.torchaug.warp_grid(x, torch.zeros(3, 4, 4, 2, device=device))
    with pytest.raises(RuntimeError, match="warp_grid: grid must be float32 or float64, got Half"):
        torch.ops.torchaug.warp_grid(x, torch.zeros(2, 4, 4, 2, device=device, dtype=torch.float16))
    with pytest.raises(RuntimeError, match=r"warp_grid: fill must have shape \(B, C\)"):
        torch.ops.torchaug.warp_grid(x, torch.zeros(2, 4, 4, 2, device=device), 1, torch.zeros(2, 2, device=device))
    if torch.device(device).type == "cpu":
        with pytest.raises(RuntimeError, match="warp_grid: grid must be finite, got nan"):
            torch.ops.torchaug.warp_grid(x, torch.full((2, 4, 4, 2), float("nan")))


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_warp_grid_cpu_and_cuda_agree(dtype):
    gen = torch.Generator().manual_seed(4)
    x = random_images(4, 3, 31, 40, dtype, generator=gen)
    grid = _warp_grid_grids(4, 31, 40, torch.float32, gen)
    rows = torch.rand(4, 3, generator=gen) * 255
    for interpolation in (0, 1):
        cpu = torch.ops.torchaug.warp_grid(x, grid, interpolation, rows)
        cuda = torch.ops.torchaug.warp_grid(x.cuda(), grid.cuda(), interpolation, rows.cuda()).cpu()
        assert_close_images(cuda, cpu, dtype, f"interpolation {interpolation}")
