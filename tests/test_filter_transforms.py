"""Filter, noise, erasing and rotation transforms: per-sample decisions and parameters (seeded
distributions), p=0/p=1, replay, generators, and parity with torchvision given the drawn parameters."""
import math

import pytest
import torch
from conftest import assert_close_images, random_images, requires_torchvision, torchvision

import torchaug.transforms as T

if torchvision is not None:
    import torchvision.transforms.v2 as TV
    import torchvision.transforms.v2.functional as TF


def _x(b=8, dtype=torch.uint8, device="cpu", seed=0, h=24, w=30):
    return random_images(b, 3, h, w, dtype, device, generator=torch.Generator().manual_seed(seed))


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


ALL = [
    lambda g: T.RandomAdjustSharpness(2.0, p=0.5, generator=g),
    lambda g: T.GaussianBlur(5, (0.1, 2.0), generator=g),
    lambda g: T.GaussianNoise(0.0, 0.1, generator=g),
    lambda g: T.RandomErasing(p=0.7, value="random", generator=g),
    lambda g: T.RandomErasing(p=0.7, value=(0.1, 0.2, 0.3), generator=g),
    lambda g: T.RandomRotation(30, generator=g),
    lambda g: T.RandomRotation((-10, 40), expand=True, fill=[1, 2, 3], generator=g),
]


@pytest.mark.parametrize("make", ALL)
def test_replay_and_generator(device, make):
    x = _x(dtype=torch.float32, device=device)
    t = make(_g(3))
    out, params = t(x, return_params=True)
    assert torch.equal(t(x, params=params), out)
    # the same generator seed gives the same parameters and output, on CPU and CUDA alike
    out2 = make(_g(3))(x)
    assert torch.equal(out, out2)
    if device != "cpu":
        assert_close_images(make(_g(3))(x.cpu()), out.cpu(), torch.float32, "cpu vs cuda")


@requires_torchvision
def test_sharpness_p0_p1():
    x = _x()
    assert torch.equal(T.RandomAdjustSharpness(2.0, p=0.0)(x), x)
    out = T.RandomAdjustSharpness(2.0, p=1.0)(x)
    assert torch.equal(out, torch.stack([TF.adjust_sharpness(x[i], 2.0) for i in range(8)]))


def test_sharpness_decisions_follow_p():
    t = T.RandomAdjustSharpness(3.0, p=0.3, generator=_g(1))
    f = t.make_params(_x(b=4000, h=4, w=4))["factor"]
    frac = (f == 3.0).float().mean().item()
    assert abs(frac - 0.3) < 5 * math.sqrt(0.3 * 0.7 / 4000) and set(f.unique().tolist()) == {1.0, 3.0}


@requires_torchvision
def test_gaussian_blur_sigma_per_sample():
    x = _x(dtype=torch.float32)
    t = T.GaussianBlur([5, 7], (0.5, 3.0), generator=_g(2))
    out, p = t(x, return_params=True)
    s = p["sigma"]
    assert s.shape == (8,) and len(set(s.tolist())) == 8
    ref = torch.stack([TF.gaussian_blur(x[i], [5, 7], [float(s[i])] * 2) for i in range(8)])
    assert_close_images(out, ref, torch.float32, "GaussianBlur")
    big = T.GaussianBlur(3, (0.5, 3.0), generator=_g(3)).make_params(_x(b=4000, h=4, w=4))["sigma"]
    assert 0.5 <= big.min() and big.max() <= 3.0 and abs(big.mean().item() - 1.75) < 0.05


def test_gaussian_noise_independent_per_sample():
    x = torch.full((6, 3, 16, 16), 0.5)
    out = T.GaussianNoise(0.0, 0.1, generator=_g(4))(x)
    n = out - x
    assert all(not torch.equal(n[0], n[i]) for i in range(1, 6))
    assert abs(n.std().item() - 0.1) < 0.01


@requires_torchvision
def test_random_erasing_matches_torchvision_given_the_rectangles():
    x = _x(b=64, dtype=torch.float32, h=40, w=50)
    t = T.RandomErasing(p=1.0, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=(0.1, 0.2, 0.3), generator=_g(5))
    out, p = t(x, return_params=True)
    boxes = p["boxes"]
    for b in range(64):
        i, j, h, w = boxes[b].tolist()
        ref = TF.erase(x[b], i, j, h, w, torch.tensor([0.1, 0.2, 0.3]).view(3, 1, 1)) if h > 0 else x[b]
        assert torch.equal(out[b], ref)


def test_random_erasing_rectangle_distribution():
    # torchvision's rules: area fraction in scale, aspect ratio in ratio (within rounding), inside
    # the image, the first fitting of 10 tries; compared with torchvision's own draws
    H, W = 40, 50
    t = T.RandomErasing(p=1.0, scale=(0.05, 0.2), ratio=(0.5, 2.0), generator=_g(6))
    boxes = t.make_params(_x(b=3000, h=H, w=W))["boxes"].double()
    i, j, h, w = boxes.unbind(1)
    assert (h > 0).all() and ((i >= 0) & (j >= 0) & (i + h <= H) & (j + w <= W)).all()
    frac = h * w / (H * W)
    assert frac.min() > 0.03 and frac.max() < 0.24
    assert (h / w).min() > 0.35 and (h / w).max() < 2.9
    if torchvision is not None:
        tv = TV.RandomErasing(p=1.0, scale=(0.05, 0.2), ratio=(0.5, 2.0))
        torch.manual_seed(0)
        ref = torch.tensor([[p["i"], p["j"], p["h"], p["w"]] for p in (tv.make_params([torch.zeros(3, H, W)]) for _ in range(3000))]).double()
        for k in range(4):  # the means of i, j, h, w agree within 5 standard errors
            se = math.sqrt(boxes[:, k].var().item() / 3000 + ref[:, k].var().item() / 3000)
            assert abs(boxes[:, k].mean().item() - ref[:, k].mean().item()) < 5 * se + 1e-9, k


def _erasing_boxes_reference(u, coins, height, width, scale, log_ratio):
    """torchvision's get_params as float64 tensor steps over (B, 10, 4) draws: the first of 10 tries
    whose rounded size fits, attempt 0's offsets and size (erased nowhere) where none fits or the
    coin says no."""
    area = height * width * (scale[0] + (scale[1] - scale[0]) * u[..., 0])
    aspect = torch.exp(log_ratio[0] + (log_ratio[1] - log_ratio[0]) * u[..., 1])
    h, w = torch.round(torch.sqrt(area * aspect)), torch.round(torch.sqrt(area / aspect))
    fits = (h < height) & (w < width)
    first = fits.to(torch.int8).argmax(dim=1, keepdim=True)
    found = fits.any(dim=1) & coins
    h, w = h.gather(1, first)[:, 0], w.gather(1, first)[:, 0]
    i = torch.floor(u[..., 2].gather(1, first)[:, 0] * (height - h + 1))
    j = torch.floor(u[..., 3].gather(1, first)[:, 0] * (width - w + 1))
    return torch.stack([i, j, h * found, w * found], dim=1).to(torch.int64)


@pytest.mark.parametrize("scale, ratio, size", [((0.02, 0.33), (0.3, 3.3), (40, 50)), ((0.3, 1.0), (0.2, 5.0), (9, 31)),
                                                ((1.0, 1.0), (1.0, 1.0), (10, 10))])
def test_erasing_boxes_are_get_params_of_the_draws(device, scale, ratio, size):
    # the op against the tensor steps, on both backends: wide ranges so that some tries do not fit
    # and some samples fit none (the last case fits none at all); the coin is draw 40, < p erases
    g = torch.Generator().manual_seed(8)
    rand = torch.rand(500, 41, generator=g, dtype=torch.float64)
    rand[:3, 40] = torch.tensor([0.8, 0.0, 0.7999999])  # the coin's edges
    u, coins = rand[:, :40].reshape(500, 10, 4), rand[:, 40] < 0.8
    log_ratio = [math.log(ratio[0]), math.log(ratio[1])]
    got = torch.ops.torchaug._erasing_boxes(rand.to(device), *size, 0.8, *scale, *log_ratio).cpu()
    assert torch.equal(got, _erasing_boxes_reference(u, coins, *size, scale, log_ratio))
    torch.library.opcheck(torch.ops.torchaug._erasing_boxes, (rand.to(device), *size, 0.8, *scale, *log_ratio))


def test_random_erasing_p0_and_no_fit():
    x = _x()
    assert torch.equal(T.RandomErasing(p=0.0)(x), x)
    # no rectangle can fit (scale forces the whole image): the samples are left alone
    assert torch.equal(T.RandomErasing(p=1.0, scale=(1.0, 1.0), ratio=(1.0, 1.0))(_x(h=10, w=10)), _x(h=10, w=10))


@requires_torchvision
def test_random_rotation_angles_per_sample():
    x = _x()
    t = T.RandomRotation((-20, 35), fill=[5, 6, 7], generator=_g(7))
    out, p = t(x, return_params=True)
    a = p["angle"]
    assert a.shape == (8,) and (a >= -20).all() and (a <= 35).all() and len(set(a.tolist())) == 8
    ref = torch.stack([TF.rotate(x[i], float(a[i]), fill=[5, 6, 7]) for i in range(8)])
    assert_close_images(out, ref, torch.uint8, "RandomRotation")


def test_errors():
    with pytest.raises(ValueError, match=r"torchaug.transforms.RandomAdjustSharpness: sharpness_factor must be a non-negative number"):
        T.RandomAdjustSharpness(-1.0)
    with pytest.raises(ValueError, match=r"torchaug.transforms.GaussianBlur: sigma values should be positive and of the form \(min, max\)"):
        T.GaussianBlur(3, (2.0, 1.0))
    with pytest.raises(ValueError, match=r"kernel_size must be an odd integer"):
        T.GaussianBlur(4)
    with pytest.raises(ValueError, match=r"torchaug.transforms.RandomErasing: if value is str, it should be 'random'"):
        T.RandomErasing(value="noise")
    with pytest.raises(ValueError, match=r"torchaug.transforms.RandomErasing: scale should be between 0 and 1"):
        T.RandomErasing(scale=(0.5, 1.5))
    with pytest.raises(ValueError, match=r"torchaug.transforms.RandomErasing: value must have 1 or 3 values"):
        T.RandomErasing(p=1.0, value=(1.0, 2.0))(_x())
    with pytest.raises(ValueError, match=r"torchaug.transforms.GaussianNoise: sigma shouldn't be negative"):
        T.GaussianNoise(sigma=-1.0)


def test_random_salt_and_pepper_per_sample(device):
    import torchaug.functional as F
    x = torch.full((400, 3, 16, 16), 100, dtype=torch.uint8, device=device)
    t = T.RandomSaltAndPepper(amount=(0.1, 0.3), salt_vs_pepper=(0.2, 0.8), p=0.5, generator=torch.Generator().manual_seed(3))
    out, p = t(x, return_params=True)
    amount = p["amount"].cpu()
    drawn = amount > 0
    assert abs(drawn.float().mean().item() - 0.5) < 0.13
    assert amount[drawn].min() >= 0.1 and amount[drawn].max() <= 0.3
    changed = (out != 100).any(1).flatten(1).float().mean(1).cpu()  # per pixel, all channels together
    assert (changed[~drawn] == 0).all()
    assert (changed[drawn] - amount[drawn]).abs().max() < 0.12
    salt = ((out == 255).any(1).flatten(1).float().sum(1) / (out != 100).any(1).flatten(1).float().sum(1).clamp(min=1)).cpu()
    svp = p["salt_vs_pepper"].cpu()
    assert (salt[drawn] - svp[drawn]).abs().mean() < 0.1
    assert torch.equal(out, F.salt_and_pepper(x, p["amount"], p["salt_vs_pepper"], seed=p["seed"]))
    assert torch.equal(t(x, params=p), out)
