"""Color transforms: per-sample decisions, factors and orders (seeded distributions), p=0/p=1,
replay, generators, and per-sample parity with torchvision applying the drawn parameters."""
import math

import pytest
import torch
from conftest import assert_close_images, random_images, requires_cuda, requires_torchvision, torchvision

import torchaug.transforms as T
from torchaug.functional import COLOR_OPS

if torchvision is not None:
    import torchvision.transforms.v2.functional as TF

NAMES = {v: k for k, v in COLOR_OPS.items()}


def _x(b=8, dtype=torch.uint8, device="cpu", seed=0):
    return random_images(b, 3, 12, 14, dtype, device, generator=torch.Generator().manual_seed(seed))


RANDOM_OPS = [
    (lambda p, g: T.RandomGrayscale(p=p, generator=g), "grayscale"),
    (lambda p, g: T.RandomInvert(p=p, generator=g), "invert"),
    (lambda p, g: T.RandomPosterize(3, p=p, generator=g), "posterize"),
    (lambda p, g: T.RandomSolarize(100.0, p=p, generator=g), "solarize"),
    (lambda p, g: T.RandomAutocontrast(p=p, generator=g), "autocontrast"),
    (lambda p, g: T.RandomEqualize(p=p, generator=g), "equalize"),
]


@requires_torchvision
@pytest.mark.parametrize("make,name", RANDOM_OPS)
def test_p0_is_identity_and_p1_matches_torchvision(device, make, name):
    x = _x(device=device)
    assert torch.equal(make(0.0, None)(x), x)
    out = make(1.0, None)(x)
    ref = {"grayscale": lambda i: TF.rgb_to_grayscale(x[i], 3), "invert": lambda i: TF.invert(x[i]),
           "posterize": lambda i: TF.posterize(x[i], 3), "solarize": lambda i: TF.solarize(x[i], 100.0),
           "autocontrast": lambda i: TF.autocontrast(x[i]), "equalize": lambda i: TF.equalize(x[i])}[name]
    assert_close_images(out, torch.stack([ref(i) for i in range(x.shape[0])]), torch.uint8, name)


@pytest.mark.parametrize("make,name", RANDOM_OPS)
def test_per_sample_decisions_follow_p(make, name):
    # 4000 samples at p = 0.3: the applied fraction lies within 5 standard deviations of p
    x = _x(b=4000)
    t = make(0.3, torch.Generator().manual_seed(1))
    ops = t.make_params(x)["ops"]
    frac = (ops[:, 0] == COLOR_OPS[name]).float().mean().item()
    assert abs(frac - 0.3) < 5 * math.sqrt(0.3 * 0.7 / 4000)
    assert set(ops.unique().tolist()) <= {0, COLOR_OPS[name]}


def test_replay_and_generator(device):
    x = _x(device=device)
    t = T.ColorJitter(0.4, 0.4, 0.4, 0.1, generator=torch.Generator().manual_seed(3))
    out, params = t(x, return_params=True)
    assert torch.equal(t(x, params=params), out)
    # a CPU generator gives the same program for CPU and CUDA images
    again = T.ColorJitter(0.4, 0.4, 0.4, 0.1, generator=torch.Generator().manual_seed(3)).make_params(x.cpu())
    assert torch.equal(again["ops"].cpu(), params["ops"].cpu()) and torch.equal(again["params"].cpu(), params["params"].cpu())


@requires_cuda
def test_same_generator_same_output_on_cpu_and_cuda():
    x = _x(b=16)
    a = T.ColorJitter(0.5, 0.5, 0.5, 0.2, generator=torch.Generator().manual_seed(9))(x)
    b = T.ColorJitter(0.5, 0.5, 0.5, 0.2, generator=torch.Generator().manual_seed(9))(x.cuda()).cpu()
    assert (a.int() - b.int()).abs().max() <= 1


def test_color_jitter_ranges_and_orders():
    # torchvision's ranges; every one of the 24 orders appears with frequency ~1/24 per sample
    t = T.ColorJitter(brightness=0.4, contrast=(0.5, 1.5), saturation=0.3, hue=0.1, generator=torch.Generator().manual_seed(0))
    n = 24000
    p = t.make_params(_x(b=n))
    ops, f = p["ops"], p["params"][..., 0]
    for name, (lo, hi) in {"brightness": (0.6, 1.4), "contrast": (0.5, 1.5), "saturation": (0.7, 1.3), "hue": (-0.1, 0.1)}.items():
        vals = f[ops == COLOR_OPS[name]]
        assert vals.numel() == n
        assert lo <= vals.min() and vals.max() <= hi
        assert abs(vals.mean().item() - (lo + hi) / 2) < 5 * (hi - lo) / math.sqrt(12 * n)
    counts = {}
    for row in ops.tolist():
        counts[tuple(row)] = counts.get(tuple(row), 0) + 1
    assert len(counts) == 24
    expected = n / 24
    assert all(abs(c - expected) < 5 * math.sqrt(expected) for c in counts.values())


def test_color_jitter_unused_components_are_identity():
    t = T.ColorJitter(brightness=0.2)
    ops = t.make_params(_x())["ops"]
    assert ((ops == COLOR_OPS["brightness"]).sum(1) == 1).all() and ((ops == 0).sum(1) == 3).all()
    assert T.ColorJitter().make_params(_x())["ops"].eq(0).all()
    assert T.ColorJitter(brightness=(1.0, 1.0)).brightness is None


@requires_torchvision
def test_color_jitter_matches_torchvision_per_sample(device):
    x = _x(b=10, device=device)
    t = T.ColorJitter(0.5, 0.5, 0.5, 0.2, generator=torch.Generator().manual_seed(5))
    out, p = t(x, return_params=True)
    fns = {"brightness": TF.adjust_brightness, "contrast": TF.adjust_contrast, "saturation": TF.adjust_saturation,
           "hue": TF.adjust_hue}
    for i in range(x.shape[0]):
        img = x[i]
        for k in range(4):
            img = fns[NAMES[int(p["ops"][i, k])]](img, p["params"][i, k, 0].item())
        assert_close_images(out[i], img, torch.uint8, f"sample {i}")


def test_constructor_errors():
    with pytest.raises(ValueError, match=r"ColorJitter: if brightness is a single number, it must be non negative"):
        T.ColorJitter(brightness=-0.1)
    with pytest.raises(ValueError, match=r"ColorJitter: hue values should be between \(-0.5, 0.5\)"):
        T.ColorJitter(hue=0.7)
    with pytest.raises(ValueError, match=r"RandomPosterize: bits must be an integer in \[0, 8\], got 9"):
        T.RandomPosterize(9)
    with pytest.raises(ValueError, match=r"RandomInvert: p must be a probability in \[0, 1\], got 1.5"):
        T.RandomInvert(p=1.5)
    with pytest.raises(TypeError, match=r"RandomSolarize: threshold should be less or equal the maximum value of the dtype \(1\), got 100"):
        T.RandomSolarize(100.0)(_x(dtype=torch.float32))
    with pytest.raises(ValueError, match=r"Grayscale: num_output_channels must be 1 or 3, got 2"):
        T.Grayscale(2)


def test_grayscale_transform(device):
    x = _x(device=device)
    assert T.Grayscale()(x).shape == (8, 1, 12, 14)
    g3 = T.Grayscale(3)(x)
    assert torch.equal(g3[:, 0], g3[:, 1]) and torch.equal(g3[:, 1], g3[:, 2])


def test_compose_with_color_transforms(device):
    x = _x(device=device)
    pipe = T.Compose([T.RandomResizedCrop(8), T.ColorJitter(0.3, 0.3, 0.3, 0.05), T.RandomGrayscale(0.2), T.Normalize([0.5] * 3, [0.25] * 3)])
    y, params = pipe(T.ToDtype(torch.float32, scale=True)(x), return_params=True)
    assert y.shape == (8, 3, 8, 8)
    assert torch.equal(pipe(T.ToDtype(torch.float32, scale=True)(x), params=params), y)


# ---- channel permutation and photometric distortion ---------------------------------------------

@requires_torchvision
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_permute_channels_matches_torchvision_per_sample(device, dtype):
    import torchaug.functional as F
    x = random_images(4, 3, 7, 9, dtype, device, channels_last=dtype == torch.float32)
    perms = [[2, 0, 1], [0, 1, 2], [1, 2, 0], [2, 1, 0]]
    out = F.permute_channels(x, torch.tensor(perms, device=device))
    assert out.is_contiguous(memory_format=torch.channels_last) == (dtype == torch.float32)
    for i, p in enumerate(perms):
        assert torch.equal(out[i], TF.permute_channels(x[i], p))
    assert torch.equal(F.permute_channels(x[0], [1, 2, 0]), TF.permute_channels(x[0], [1, 2, 0]))
    assert torch.equal(F.permute_channels(x, [2, 1, 0]), x.flip(1))


def test_permute_channels_refuses_what_is_not_a_permutation(device):
    import torchaug.functional as F
    x = _x(b=2, device=device)
    with pytest.raises(ValueError, match=r"permute_channels: permutation must be a permutation of 0..2 in every row, got \[0, 0, 1\] for sample 1"):
        F.permute_channels(x, torch.tensor([[0, 1, 2], [0, 0, 1]], device=device))
    with pytest.raises(ValueError, match=r"permutation must be a permutation of 0..2 in every row, got \[0, 1, 3\]"):
        F.permute_channels(x, [0, 1, 3])
    with pytest.raises(ValueError, match=r"permutation must have shape \(3,\) or \(B, 3\) with B=2"):
        F.permute_channels(x, [1, 0])
    with pytest.raises(TypeError, match=r"permutation must be an integer tensor, got torch.float32"):
        F.permute_channels(x, torch.tensor([0.0, 1.0, 2.0]))


def test_random_channel_permutation_draws_every_permutation_evenly():
    import itertools
    t = T.RandomChannelPermutation(generator=torch.Generator().manual_seed(0))
    n = 6000
    perms = t.make_params(_x(b=n))["permutation"]
    counts = {p: 0 for p in itertools.permutations(range(3))}
    for row in perms.tolist():
        counts[tuple(row)] += 1
    assert all(abs(c - n / 6) < 5 * math.sqrt(n / 6) for c in counts.values()), counts


def test_random_channel_permutation_applies_its_draws(device):
    x = _x(b=6, device=device)
    out, p = T.RandomChannelPermutation()(x, return_params=True)
    for i in range(6):
        assert torch.equal(out[i], x[i][p["permutation"][i]])
    ragged = [x[0], x[1, :, :5]]
    out, p = T.RandomChannelPermutation()(ragged, return_params=True)
    assert torch.equal(out[1], ragged[1][p["permutation"][1]])


def _distort_reference(img, ops, params, perm):
    """torchvision's RandomPhotometricDistort.transform on one image, with the drawn decisions."""
    fns = {"brightness": TF.adjust_brightness, "contrast": TF.adjust_contrast, "saturation": TF.adjust_saturation,
           "hue": TF.adjust_hue}
    for k in range(ops.shape[0]):
        name = NAMES[int(ops[k])]
        if name != "identity":
            img = fns[name](img, params[k, 0].item())
    return TF.permute_channels(img, perm.tolist())


@requires_torchvision
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_photometric_distort_matches_torchvision_per_sample(device, dtype):
    x = _x(b=24, dtype=dtype, device=device)
    t = T.RandomPhotometricDistort(generator=torch.Generator().manual_seed(4))
    out, p = t(x, return_params=True)
    assert p["ops"].shape == (24, 5)
    # the program is torchvision's order: brightness, contrast or not, saturation, hue, contrast or not
    ops = p["ops"].cpu()
    assert set(ops[:, 0].tolist()) <= {0, COLOR_OPS["brightness"]} and set(ops[:, 2].tolist()) <= {0, COLOR_OPS["saturation"]}
    assert not ((ops[:, 1] != 0) & (ops[:, 4] != 0)).any()
    for i in range(x.shape[0]):
        ref = _distort_reference(x[i], p["ops"][i], p["params"][i], p["permutation"][i])
        assert_close_images(out[i], ref, dtype, f"sample {i}")
    assert torch.equal(t(x, params=p), out)


def test_photometric_distort_decisions_follow_p():
    n, prob = 8000, 0.3
    t = T.RandomPhotometricDistort(brightness=(0.5, 0.7), hue=(-0.2, 0.1), p=prob, generator=torch.Generator().manual_seed(2))
    p = t.make_params(_x(b=n))
    ops, f = p["ops"], p["params"][..., 0]
    tol = 5 * math.sqrt(prob * (1 - prob) / n)
    made = {"brightness": ops[:, 0] != 0, "contrast": (ops[:, 1] != 0) | (ops[:, 4] != 0), "saturation": ops[:, 2] != 0,
            "hue": ops[:, 3] != 0, "permutation": (p["permutation"] != torch.arange(3)).any(1)}
    for name, m in made.items():
        frac = m.float().mean().item()
        expected = prob * (5 / 6 if name == "permutation" else 1)  # one permutation in 6 is the identity
        assert abs(frac - expected) < tol, (name, frac)
    before = (ops[:, 1] != 0).sum().item() / made["contrast"].sum().item()
    assert abs(before - 0.5) < 0.06
    assert f[:, 0][made["brightness"]].min() >= 0.5 and f[:, 0][made["brightness"]].max() <= 0.7
    assert f[:, 3][made["hue"]].min() >= -0.2 and f[:, 3][made["hue"]].max() <= 0.1


def test_photometric_distort_p0_is_identity_and_arguments_are_checked(device):
    x = _x(device=device)
    assert torch.equal(T.RandomPhotometricDistort(p=0.0)(x), x)
    with pytest.raises(ValueError, match=r"RandomPhotometricDistort: hue values should be between \(-0.5, 0.5\)"):
        T.RandomPhotometricDistort(hue=(-0.7, 0.1))
    with pytest.raises(ValueError, match=r"RandomPhotometricDistort: contrast values should be between"):
        T.RandomPhotometricDistort(contrast=(1.5, 0.5))
    with pytest.raises(ValueError, match=r"RandomPhotometricDistort: p must be a probability in \[0, 1\]"):
        T.RandomPhotometricDistort(p=2)


@requires_cuda
def test_photometric_distort_same_generator_same_output_on_cpu_and_cuda():
    x = _x(b=16)
    a = T.RandomPhotometricDistort(generator=torch.Generator().manual_seed(9))(x)
    b = T.RandomPhotometricDistort(generator=torch.Generator().manual_seed(9))(x.cuda()).cpu()
    assert (a.int() - b.int()).abs().max() <= 1


# ---- random classes of the ops torchvision has no transform for ---------------------------------

@requires_torchvision
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_random_gamma_matches_torchvision_per_sample(device, dtype):
    x = _x(b=16, dtype=dtype, device=device)
    t = T.RandomGamma(gamma=(0.4, 2.0), gain=(0.8, 1.2), p=0.7, generator=torch.Generator().manual_seed(1))
    out, p = t(x, return_params=True)
    ops = p["ops"][:, 0].cpu()
    assert set(ops.tolist()) == {0, COLOR_OPS["gamma"]}
    for i in range(16):
        g, k = p["params"][i, 0].tolist()
        assert 0.4 <= g <= 2.0 and 0.8 <= k <= 1.2
        ref = TF.adjust_gamma(x[i], g, k) if ops[i] else x[i]
        assert_close_images(out[i], ref, dtype, f"sample {i}")
    assert torch.equal(t(x, params=p), out)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_random_solarize_add_per_sample(device, dtype):
    x = _x(b=16, dtype=dtype, device=device)
    top = 255 if dtype == torch.uint8 else 1.0
    t = T.RandomSolarizeAdd((0.1 * top, 0.4 * top), p=0.6, generator=torch.Generator().manual_seed(2))
    out, p = t(x, return_params=True)
    ops = p["ops"][:, 0].cpu()
    assert set(ops.tolist()) == {0, COLOR_OPS["solarize_add"]}
    threshold = 128 if dtype == torch.uint8 else 128 / 255
    for i in range(16):
        shift, thr = p["params"][i, 0].tolist()
        assert 0.1 * top <= shift <= 0.4 * top and thr == pytest.approx(threshold)
        if dtype == torch.uint8:
            ref = torch.where(x[i] < thr, (x[i].int() + int(shift)).clamp(max=255), x[i].int()).to(torch.uint8)
        else:
            ref = torch.where(x[i] < thr, (x[i] + shift).clamp(max=1.0), x[i])
        assert_close_images(out[i], ref if ops[i] else x[i], dtype, f"sample {i}")


def test_random_range_arguments_are_checked():
    with pytest.raises(ValueError, match=r"RandomGamma: gamma must be a \(min, max\) pair with 0 <= min <= max"):
        T.RandomGamma(gamma=(-1.0, 1.0))
    with pytest.raises(TypeError, match=r"RandomGamma: gain must be a finite number or a \(min, max\) pair"):
        T.RandomGamma(gain=(1.0, float("nan")))
    with pytest.raises(ValueError, match=r"RandomSolarizeAdd: shift must lie within \[-1, 1\] for torch.float32 images"):
        T.RandomSolarizeAdd((0, 110))(_x(dtype=torch.float32))
    with pytest.raises(ValueError, match=r"RandomSaltAndPepper: amount must be a \(min, max\) pair with 0 <= min <= max <= 1"):
        T.RandomSaltAndPepper(amount=(0.1, 1.5))
