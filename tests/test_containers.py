"""The random containers (RandomApply, RandomChoice, RandomOrder) deciding per sample or per call,
and the conversions and pass-throughs (Identity, Lambda, RGB, ToPureTensor, ConvertImageDtype):
each sample's output is what its draw names, targets follow their sample, replay, frequencies,
TorchScript, and the errors for what a per-sample choice cannot do."""
import math

import numpy as np

import pytest
import torch
from conftest import random_images, requires_torchvision, torchvision

import torchaug.transforms as T


def _x(b=8, device="cpu", seed=0, dtype=torch.uint8):
    return random_images(b, 3, 10, 12, dtype, device, generator=torch.Generator().manual_seed(seed))


def _inv():
    return T.RandomInvert(p=1.0)


def _post():
    return T.RandomPosterize(2, p=1.0)


def test_random_apply_per_sample(device):
    x = _x(b=64, device=device)
    t = T.RandomApply([T.ColorJitter(0.5, 0.5), _inv()], p=0.5, generator=torch.Generator().manual_seed(1))
    out, p = t(x, return_params=True)
    chain = T.Compose([T.ColorJitter(0.5, 0.5), _inv()])(x, params=[p["transforms"][0], p["transforms"][1]])
    apply = p["apply"].cpu()
    assert 0 < apply.sum() < 64  # both outcomes in one batch
    for i in range(64):
        assert torch.equal(out[i], chain[i] if apply[i] else x[i])
    assert torch.equal(t(x, params=p), out)
    assert torch.equal(T.RandomApply([_inv()], p=0.0)(x), x)
    assert torch.equal(T.RandomApply([_inv()], p=1.0)(x), 255 - x)
    assert torch.equal(T.RandomApply(torch.nn.ModuleList([_inv()]), p=1.0)(x[0]), 255 - x[0])


def test_random_apply_frequency_and_per_call_decision():
    x = _x(b=4000)
    apply = T.RandomApply([_inv()], p=0.3, generator=torch.Generator().manual_seed(0)).make_params(x)["apply"]
    assert apply.shape == (4000,) and abs(apply.float().mean().item() - 0.3) < 5 * math.sqrt(0.21 / 4000)
    # per_sample=False: torchvision's one decision for the call, so a shape-changing chain works
    t = T.RandomApply([T.Resize(5)], p=0.5, per_sample=False, generator=torch.Generator().manual_seed(0))
    shapes = {tuple(t(x[:4]).shape) for _ in range(20)}
    assert shapes == {(4, 3, 10, 12), (4, 3, 5, 6)}


def test_a_per_sample_choice_refuses_shape_changing_transforms():
    with pytest.raises(ValueError, match=r"RandomApply: a per-sample choice needs transforms that keep each image's shape "
                                         r"and dtype, got \(4, 3, 10, 12\) torch.uint8 -> \(4, 3, 5, 6\).*per_sample=False"):
        T.RandomApply([T.Resize(5)], p=0.5)(_x(b=4))
    with pytest.raises(ValueError, match=r"RandomChoice: a per-sample choice needs transforms that keep"):
        T.RandomChoice([_inv(), T.ToDtype(torch.float32, scale=True)])(_x(b=4))


def test_random_apply_on_a_list_of_images_of_different_sizes():
    x = _x(b=6)
    imgs = [x[i, :, : 6 + i, : 12 - i] for i in range(6)]
    t = T.RandomApply([T.RandomChannelPermutation()], p=0.5, generator=torch.Generator().manual_seed(3))
    out, p = t(imgs, return_params=True)
    assert 0 < p["apply"].sum() < 6
    perm = p["transforms"][0]["permutation"]
    for i, img in enumerate(imgs):
        assert torch.equal(out[i], img[perm[i]] if p["apply"][i] else img)


def test_random_choice_per_sample(device):
    x = _x(b=48, device=device)
    ts = [_inv(), _post(), T.Grayscale(3)]
    t = T.RandomChoice(ts, p=[2, 1, 1], generator=torch.Generator().manual_seed(5))
    out, p = t(x, return_params=True)
    refs = [tr(x) for tr in ts]
    choice = p["choice"].cpu()
    assert set(choice.tolist()) == {0, 1, 2}
    for i in range(48):
        assert torch.equal(out[i], refs[int(choice[i])][i])
    assert torch.equal(t(x, params=p), out)


def test_random_choice_weights():
    n = 9000
    choice = T.RandomChoice([_inv(), _post(), T.Identity()], p=[0.5, 0.2, 0.3],
                            generator=torch.Generator().manual_seed(0)).make_params(_x(b=n))["choice"]
    for k, w in enumerate([0.5, 0.2, 0.3]):
        frac = (choice == k).float().mean().item()
        assert abs(frac - w) < 5 * math.sqrt(w * (1 - w) / n), (k, frac)
    one = T.RandomChoice([_inv(), _post()], per_sample=False)
    x = _x(b=4)
    assert all(torch.equal(y, 255 - x) or torch.equal(y, _post()(x)) for y in (one(x) for _ in range(10)))
    for bad in ([1.0], [-1.0, 2.0], [0.0, 0.0], [float("nan"), 1.0]):
        with pytest.raises(ValueError, match=r"RandomChoice: p must have one non-negative weight per transform \(2\)"):
            T.RandomChoice([_inv(), _post()], p=bad)
    with pytest.raises(ValueError, match="RandomChoice: transforms must not be empty"):
        T.RandomChoice([])
    with pytest.raises(TypeError, match="RandomApply: transforms must be a sequence of callables"):
        T.RandomApply(_inv())


def test_random_order_per_sample(device):
    # invert and posterize do not commute: each sample shows the order it drew
    x = _x(b=40, device=device)
    t = T.RandomOrder([_inv(), _post()], generator=torch.Generator().manual_seed(7))
    out, p = t(x, return_params=True)
    inv_first, post_first = _post()(_inv()(x)), _inv()(_post()(x))
    assert not torch.equal(inv_first, post_first)
    order = p["order"].cpu()
    assert set(map(tuple, order.tolist())) == {(0, 1), (1, 0)}
    for i in range(40):
        assert torch.equal(out[i], (inv_first if order[i, 0] == 0 else post_first)[i])
    assert torch.equal(t(x, params=p), out)
    # every order of 3 transforms per sample, evenly
    n = 6000
    orders = T.RandomOrder([_inv(), _post(), T.Identity()], generator=torch.Generator().manual_seed(1)).make_params(_x(b=n))["order"]
    counts = {}
    for row in orders.tolist():
        counts[tuple(row)] = counts.get(tuple(row), 0) + 1
    assert len(counts) == 6 and all(abs(c - n / 6) < 5 * math.sqrt(n / 6) for c in counts.values())
    once = T.RandomOrder([_inv(), _post()], per_sample=False)(x)
    assert torch.equal(once, inv_first) or torch.equal(once, post_first)


def test_targets_follow_their_samples_choice():
    x = _x(b=16)
    boxes = [T.BoundingBoxes(torch.tensor([[1.0, 2.0, 5.0, 6.0]]), "XYXY", (10, 12)) for _ in range(16)]
    batched = T.BoundingBoxes(torch.tensor([[[1.0, 2.0, 5.0, 6.0]]]).repeat(16, 1, 1), "XYXY", (10, 12))
    t = T.RandomApply([T.RandomHorizontalFlip(p=1.0)], p=0.5, generator=torch.Generator().manual_seed(2))
    (out, per_image, whole), p = t(x, boxes, batched, return_params=True)
    flipped = torch.tensor([[7.0, 2.0, 11.0, 6.0]])
    for i in range(16):
        want = flipped if p["apply"][i] else boxes[i].data
        assert torch.equal(out[i], x[i].flip(-1) if p["apply"][i] else x[i])
        assert torch.equal(per_image[i].data, want) and torch.equal(whole.data[i], want)
    assert isinstance(whole, T.BoundingBoxes) and whole.canvas_size == (10, 12)


@requires_torchvision
def test_targets_of_torchvision_types_keep_their_type():
    from torchvision import tv_tensors
    x = _x(b=8)
    boxes = [tv_tensors.BoundingBoxes([[1.0, 2.0, 5.0, 6.0]], format="XYXY", canvas_size=(10, 12)) for _ in range(8)]
    masks = tv_tensors.Mask(torch.zeros(8, 10, 12, dtype=torch.uint8))
    masks[:, :, :3] = 1
    t = T.RandomChoice([T.RandomHorizontalFlip(p=1.0), T.Identity()], generator=torch.Generator().manual_seed(4))
    (out, b, m), p = t(x, boxes, masks, return_params=True)
    assert all(isinstance(v, tv_tensors.BoundingBoxes) for v in b) and isinstance(m, tv_tensors.Mask)
    for i in range(8):
        flipped = p["choice"][i] == 0
        assert torch.equal(m[i], masks[i].flip(-1) if flipped else masks[i])
        assert b[i][0, 0].item() == (7.0 if flipped else 1.0)


def test_conversions_and_pass_throughs(device):
    x = _x(b=2, device=device)
    assert T.Identity()(x) is x
    boxes = T.BoundingBoxes(torch.tensor([[1.0, 2.0, 5.0, 6.0]]), "XYXY", (10, 12))
    out, b = T.Identity()(x[0], boxes)
    assert out is x[0] or torch.equal(out, x[0])
    assert b is boxes
    assert torch.equal(T.Lambda(lambda im: im // 2)(x), x // 2)
    with pytest.raises(TypeError, match="Lambda: lambd should be callable, got int"):
        T.Lambda(3)
    gray = x[:, :1]
    assert torch.equal(T.RGB()(gray), gray.repeat(1, 3, 1, 1)) and torch.equal(T.RGB()(x), x)
    torch.testing.assert_close(T.ConvertImageDtype()(x), x.float() / 255)
    img, data = T.ToPureTensor()(x[0], {"boxes": boxes, "labels": torch.tensor([1])})
    assert torch.equal(img, x[0]) and torch.equal(data["boxes"], boxes.data) and type(data["boxes"]) is torch.Tensor


@requires_torchvision
def test_to_pure_tensor_unwraps_tv_tensors():
    from torchvision import tv_tensors
    img = tv_tensors.Image(_x(b=1)[0])
    boxes = tv_tensors.BoundingBoxes([[1, 2, 5, 6]], format="XYXY", canvas_size=(10, 12))
    out, b = T.ToPureTensor()(img, boxes)
    assert type(out) is torch.Tensor and type(b) is torch.Tensor and torch.equal(out, img.as_subclass(torch.Tensor))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("per_sample", [True, False])
def test_scripted_containers_draw_as_python(device, per_sample):
    x = _x(b=12, device=device)
    for t in [T.RandomApply([T.ColorJitter(0.3, 0.3), _inv()], p=0.4, per_sample=per_sample),
              T.RandomChoice([_inv(), _post(), T.RandomPhotometricDistort()], p=[1, 2, 3], per_sample=per_sample),
              T.RandomOrder([_inv(), _post(), T.RandomChannelPermutation()], per_sample=per_sample)]:
        scripted = torch.jit.script(t)
        for seed in range(3):
            torch.manual_seed(seed)
            want = t(x)
            torch.manual_seed(seed)
            assert torch.equal(scripted(x), want), type(t).__name__
    with pytest.raises(RuntimeError, match="no TorchScript form"):
        torch.jit.script(T.Lambda(lambda im: im))


@requires_torchvision
def test_linear_transformation_matches_torchvision(device):
    from torchvision.transforms import v2
    g = torch.Generator().manual_seed(0)
    d = 3 * 4 * 5
    m, mean = torch.randn(d, d, generator=g), torch.randn(d, generator=g)
    x = torch.rand(6, 3, 4, 5, generator=g)
    got = T.LinearTransformation(m.to(device), mean.to(device))(x.to(device)).cpu()
    torch.testing.assert_close(got, v2.LinearTransformation(m, mean)(x), rtol=1e-5, atol=1e-5)
    scripted = torch.jit.script(T.LinearTransformation(m, mean))
    torch.testing.assert_close(scripted(x), got, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="LinearTransformation: transformation_matrix should be square"):
        T.LinearTransformation(torch.zeros(3, 4), torch.zeros(3))
    with pytest.raises(ValueError, match=r"images of shape \(..., C, H, W\) = \(6, 3, 4, 4\) flatten to 48 values"):
        T.LinearTransformation(m, mean)(x[..., :4])


@requires_torchvision
def test_uniform_temporal_subsample_matches_torchvision(device):
    from torchvision.transforms import v2
    video = torch.randint(0, 256, (2, 11, 3, 4, 5), dtype=torch.uint8, device=device)
    for n in (1, 4, 11):
        got = T.UniformTemporalSubsample(n)(video)
        assert torch.equal(got.cpu(), v2.UniformTemporalSubsample(n)(video.cpu()))
        assert torch.equal(torch.jit.script(T.UniformTemporalSubsample(n))(video), got)
    with pytest.raises(ValueError, match="num_samples must be a positive int"):
        T.UniformTemporalSubsample(0)


def test_pil_conversions_round_trip():
    from PIL import Image
    array = np.random.default_rng(0).integers(0, 256, (7, 9, 3), dtype=np.uint8)
    pil = Image.fromarray(array)
    chw = T.PILToTensor()(pil)
    assert chw.shape == (3, 7, 9) and chw.dtype == torch.uint8 and torch.equal(chw, torch.from_numpy(array).permute(2, 0, 1))
    assert torch.equal(T.ToImage()(array), chw) and torch.equal(T.ToImage()(pil), chw) and T.ToImage()(chw) is not None
    assert torch.equal(T.ToImage()(Image.fromarray(array[:, :, 0])), chw[:1])
    back = T.ToPILImage()(chw)
    assert np.array_equal(np.asarray(back), array)
    gray = T.ToPILImage()(chw[:1].float() / 255)
    assert gray.mode == "L" and np.array_equal(np.asarray(gray), array[:, :, 0])
    batch = T.ToPILImage()(torch.stack([chw, chw]))
    assert len(batch) == 2 and np.array_equal(np.asarray(batch[1]), array)
    with pytest.raises(TypeError, match="PILToTensor: expected a PIL image or a numpy array, got int"):
        T.PILToTensor()(3)


@pytest.mark.parametrize("mode", ["L", "P", "LA", "PA", "La", "RGB", "RGBA", "RGBX", "CMYK", "YCbCr", "HSV", "LAB",
                                  "1", "I", "I;16", "F"])
def test_pil_conversion_of_every_mode_matches_numpy(mode):
    # byte modes take the raw bytes (tobytes), the others np.asarray: both give numpy's pixels
    from PIL import Image
    array = np.random.default_rng(3).integers(0, 256, (7, 9, 4), dtype=np.uint8)
    pil = Image.fromarray(array).convert(mode)
    want = torch.from_numpy(np.array(np.asarray(pil)))
    want = want.unsqueeze(0) if want.dim() == 2 else want.permute(2, 0, 1).contiguous()
    for t in (T.ToImage(), T.PILToTensor()):
        got = t(pil)
        assert got.dtype == want.dtype and got.is_contiguous() and torch.equal(got, want), (mode, type(t).__name__)


def test_pil_conversions_copy_once_into_contiguous_memory_of_their_own():
    # a PIL image or an array: a contiguous (C, H, W) copy, writable, never an alias of the caller's
    # array, without torch's read-only-array warning (np.asarray of a PIL image is read-only)
    import warnings
    from PIL import Image
    array = np.random.default_rng(2).integers(0, 256, (6, 8, 3), dtype=np.uint8)
    original = array.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for t in (T.ToImage(), T.PILToTensor(), T.ToTensor()):
            for pic in (Image.fromarray(array), array, Image.fromarray(array[:, :, 0]), array[:, :, :1]):
                chw = t(pic)
                assert chw.is_contiguous(), (type(t).__name__, type(pic).__name__)
                assert isinstance(pic, Image.Image) or chw.data_ptr() != pic.ctypes.data
                chw.view(-1)[0] = 7  # writable, its own memory
            readonly = array.copy()
            readonly.flags.writeable = False
            assert torch.equal(t(readonly), t(array))
    assert np.array_equal(array, original)  # the writes above went to copies


@requires_torchvision
def test_to_tensor_matches_torchvision():
    from PIL import Image
    from torchvision.transforms import v2
    array = np.random.default_rng(1).integers(0, 256, (5, 6, 3), dtype=np.uint8)
    for pic in (array, Image.fromarray(array), Image.fromarray(array[:, :, 0])):
        want = v2.ToTensor()(pic)
        got = T.ToTensor()(pic)
        assert got.dtype == torch.float32 and torch.equal(got, want)
