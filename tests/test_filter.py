"""Filter (adjust_sharpness, gaussian_blur, laplacian), noise (gaussian_noise, salt_and_pepper),
erase and the auto-augment geometric wrappers (rotate, shear_x/y, translate_x/y): torchvision (or
an independent float64 reference) per sample, CPU <-> CUDA, opcheck, gradcheck, errors, properties."""
import math

import pytest
import torch
import torch.nn.functional as nnf
from conftest import assert_close_images, random_images, requires_cuda, requires_torchvision, torchvision
from hypothesis import given, settings
from hypothesis import strategies as st

import torchaug.functional as F

if torchvision is not None:
    import torchvision.transforms.v2.functional as TF
    from torchvision.transforms import InterpolationMode as IM

ops = torch.ops.torchaug
B = 5
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def _images(dtype=torch.uint8, c=3, device="cpu", channels_last=False, seed=0, h=13, w=18, b=B):
    x = random_images(b, c, h, w, dtype, "cpu", generator=torch.Generator().manual_seed(seed)).to(device)
    return x.contiguous(memory_format=torch.channels_last) if channels_last else x


def _u(lo, hi, seed=1, n=B, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (lo + (hi - lo) * torch.rand(n, generator=g, dtype=torch.float64)).to(dtype)


def _per_sample(fn, x):
    return torch.stack([fn(i) for i in range(x.shape[0])])


# ---- torchvision parity ---------------------------------------------------------------------

@requires_torchvision
@pytest.mark.parametrize("dtype", [torch.uint8] + FLOATS)
@pytest.mark.parametrize("c", [1, 3])
@pytest.mark.parametrize("channels_last", [False, True])
def test_sharpness_matches_torchvision(device, dtype, c, channels_last):
    x = _images(dtype, c, device, channels_last)
    f = _u(0.0, 3.0).to(device)
    out = F.adjust_sharpness(x, f)
    ref = _per_sample(lambda i: TF.adjust_sharpness(x[i], float(f[i])), x)
    assert_close_images(out, ref, dtype, "adjust_sharpness")
    if dtype == torch.uint8 and device == "cpu":
        assert torch.equal(out, ref)  # same float32 steps as torchvision: bit-identical
    assert out.is_contiguous(memory_format=torch.channels_last if channels_last and c > 1 else torch.contiguous_format)


@requires_torchvision
@pytest.mark.parametrize("dtype", [torch.uint8] + FLOATS)
@pytest.mark.parametrize("kernel_size", [[3, 3], [5, 9], [11, 3], [1, 7]])
def test_gaussian_blur_matches_torchvision(device, dtype, kernel_size):
    x = _images(dtype, 3, device)
    sigma = torch.stack([_u(0.1, 3.0), _u(0.1, 3.0, seed=2)], 1).to(device)
    out = F.gaussian_blur(x, kernel_size, sigma)
    ref = _per_sample(lambda i: TF.gaussian_blur(x[i], kernel_size, sigma[i].tolist()), x)
    assert_close_images(out, ref, dtype, "gaussian_blur")
    if dtype == torch.uint8 and device == "cpu":
        assert torch.equal(out, ref)


@requires_torchvision
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
@pytest.mark.parametrize("kernel_size", [[23, 23], [41, 9], [3, 65]])
def test_gaussian_blur_large_windows_match_torchvision(device, dtype, kernel_size):
    # the separable sums against torchvision's 2-D convolution, windows up to the largest taken,
    # sigmas up to ElasticTransform's (8 with a window of 65)
    x = _images(dtype, 3, device, h=70, w=45, b=3)
    sigma = torch.stack([_u(0.5, 8.0, n=3), _u(0.5, 8.0, seed=2, n=3)], 1).to(device)
    out = F.gaussian_blur(x, kernel_size, sigma)
    ref = _per_sample(lambda i: TF.gaussian_blur(x[i], kernel_size, sigma[i].tolist()), x)
    assert_close_images(out, ref, dtype, "gaussian_blur")


@requires_torchvision
def test_gaussian_blur_defaults_and_single_sigma(device):
    x = _images(torch.float32, 3, device)
    assert_close_images(F.gaussian_blur(x, 5), TF.gaussian_blur(x, [5, 5]), torch.float32, "default sigma")
    s = _u(0.3, 2.0).to(device)
    ref = _per_sample(lambda i: TF.gaussian_blur(x[i], [7, 5], float(s[i])), x)
    assert_close_images(F.gaussian_blur(x, [7, 5], s), ref, torch.float32, "(B,) sigma")


@requires_torchvision
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_erase_matches_torchvision(device, dtype):
    x = _images(dtype, 3, device)
    i, j, h, w = [torch.tensor(v, device=device) for v in ([0, 3, 5, 12, 1], [0, 4, 10, 2, 0], [13, 2, 8, 1, 0], [18, 5, 8, 16, 3])]
    v = torch.tensor([[0.0, 0.5, 1.0], [1.0, 0.2, 0.3], [0.1, 0.1, 0.1], [0.9, 0.8, 0.7], [0.0, 0.0, 0.0]])
    v = (v * 255).round() if dtype == torch.uint8 else v
    out = F.erase(x, i, j, h, w, v.to(device))
    ref = _per_sample(lambda k: TF.erase(x[k], int(i[k]), int(j[k]), int(h[k]), int(w[k]), v[k].view(3, 1, 1).to(device)), x)
    assert torch.equal(out, ref)
    # one value for all channels and samples; in place
    y = x.clone()
    r = F.erase(y, 2, 3, 4, 5, 7.0, inplace=True)
    assert r is y and torch.equal(y, TF.erase(x, 2, 3, 4, 5, torch.tensor(7.0)))


@requires_torchvision
@pytest.mark.parametrize("interp", ["nearest", "bilinear"])
@pytest.mark.parametrize("fill", [None, [10.0, 20.0, 30.0]])
def test_autoaug_geometry_matches_torchvision(device, interp, fill):
    # the auto-augment ops exactly as torchvision's _apply_image_or_video_transform calls affine
    x = _images(torch.uint8, 3, device, h=23, w=31)
    mode = IM.NEAREST if interp == "nearest" else IM.BILINEAR
    shear = _u(-0.3, 0.3).to(device)
    shift = _u(-14.0, 14.0, seed=3).to(device)
    angle = _u(-30.0, 30.0, seed=4).to(device)
    fl = fill if fill is None else [int(v) for v in fill]
    cases = [
        (F.shear_x(x, shear, mode, fill), lambda i: TF.affine(x[i], 0.0, [0, 0], 1.0, [math.degrees(math.atan(float(shear[i]))), 0.0], mode, fl, [0, 0])),
        (F.shear_y(x, shear, mode, fill), lambda i: TF.affine(x[i], 0.0, [0, 0], 1.0, [0.0, math.degrees(math.atan(float(shear[i])))], mode, fl, [0, 0])),
        (F.translate_x(x, shift, mode, fill), lambda i: TF.affine(x[i], 0.0, [int(shift[i]), 0], 1.0, [0.0, 0.0], mode, fl)),
        (F.translate_y(x, shift, mode, fill), lambda i: TF.affine(x[i], 0.0, [0, int(shift[i])], 1.0, [0.0, 0.0], mode, fl)),
        (F.rotate(x, angle, mode, fill=fill), lambda i: TF.rotate(x[i], float(angle[i]), mode, fill=fl)),
    ]
    for out, ref in cases:
        ref = _per_sample(ref, x)
        assert_close_images(out, ref, torch.uint8, "autoaug geometry")
        assert (out != ref).float().mean() < 0.01  # 1-LSB differences are rare


@requires_torchvision
@pytest.mark.parametrize("angle", [0.0, 90.0, 180.0, 270.0, -90.0, 33.0])
@pytest.mark.parametrize("center", [None, [5.0, 7.0]])
@pytest.mark.parametrize("size", [(16, 16), (15, 22)])
def test_rotate_special_angles_and_expand(angle, center, size):
    # torchvision uses torch.rot90 for 180 (and 90 / 270 when square or expanded): exact results
    x = _images(torch.uint8, 3, h=size[0], w=size[1])
    for expand in (False, True):
        out = F.rotate(x, angle, IM.BILINEAR, expand=expand, center=center, fill=[1.0, 2.0, 3.0])
        ref = TF.rotate(x, angle, IM.BILINEAR, expand=expand, center=center, fill=[1, 2, 3])
        assert_close_images(out, ref, torch.uint8, f"rotate {angle} expand={expand}")
        if angle % 90 == 0 and center is None and (expand or size[0] == size[1] or angle % 180 == 0):
            assert torch.equal(out, ref)


# ---- laplacian: an independent float64 reference (DALI's definition, windows written out) --------

_SMOOTH = {1: [1.0], 3: [1.0, 2.0, 1.0], 5: [1.0, 4.0, 6.0, 4.0, 1.0]}
_DERIV = {3: [1.0, -2.0, 1.0], 5: [1.0, 0.0, -2.0, 0.0, 1.0]}


def _laplacian_reference(x, ws, ss, scale, normalized):
    # d2/dx2 and d2/dy2 as separable correlations with reflect-101 padding, in float64
    x64 = x.double()
    b, c, h, w = x.shape

    def sep(t, row, col):
        k = torch.tensor(col, dtype=torch.float64).view(-1, 1) * torch.tensor(row, dtype=torch.float64).view(1, -1)
        ky, kx = k.shape
        p = nnf.pad(t.reshape(b * c, 1, h, w), [kx // 2, kx // 2, ky // 2, ky // 2], mode="reflect")
        return nnf.conv2d(p, k.view(1, 1, ky, kx)).reshape(b, c, h, w)

    dxx = sep(x64, _DERIV[ws[1]], _SMOOTH[ss[0]])
    dyy = sep(x64, _SMOOTH[ss[1]], _DERIV[ws[0]])
    if normalized:
        dxx = dxx * 2.0 ** (4 - ws[1] - ss[0])
        dyy = dyy * 2.0 ** (4 - ws[0] - ss[1])
    return (dxx + dyy) * scale.double().view(-1, 1, 1, 1)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.float64])
@pytest.mark.parametrize("ws,ss", [([3, 3], [3, 3]), ([5, 3], [1, 5]), ([5, 5], [5, 5]), ([3, 5], [1, 1])])
@pytest.mark.parametrize("normalized", [False, True])
def test_laplacian_matches_reference(device, dtype, ws, ss, normalized):
    x = _images(dtype, 3, device)
    scale = _u(0.2, 2.0).to(device)
    out = F.laplacian(x, ws, ss, scale, normalized)
    ref = _laplacian_reference(x.cpu(), ws, ss, scale.cpu(), normalized)
    if dtype == torch.uint8:
        ref = ref.round().clamp(0, 255).to(torch.uint8)
        assert_close_images(out.cpu(), ref, dtype, "laplacian")
    else:
        torch.testing.assert_close(out.cpu().double(), ref, atol=1e-4 if dtype == torch.float32 else 1e-10, rtol=1e-5)


# ---- noise ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_gaussian_noise_statistics(device, dtype):
    top = 255.0 if dtype == torch.uint8 else 1.0
    x = torch.full((4, 3, 64, 64), 0.5 if dtype != torch.uint8 else 128, dtype=dtype, device=device)
    mean = torch.tensor([0.0, 0.1, -0.05, 0.0], device=device)
    sigma = torch.tensor([0.1, 0.05, 0.02, 0.0], device=device)
    out = F.gaussian_noise(x, mean, sigma, clip=True, seed=torch.arange(4, device=device))
    n = (out.double() - x.double()) / top
    per = n.flatten(1)
    for b in range(4):
        tol = 0.01 + (1.0 / 255 if dtype == torch.uint8 else 0.0)
        assert abs(per[b].mean().item() - mean[b].item()) < tol, b
        assert abs(per[b].std().item() - sigma[b].item()) < tol, b
    assert torch.equal(out[3], x[3]) or dtype == torch.uint8 and (out[3].int() - x[3].int()).abs().max() <= 0


def test_noise_of_neighbouring_pixels_is_independent(device):
    # the pixels of a unit share one Philox call (csrc/ops/noise.h: noise_unit): neighbours' values
    # stay uncorrelated, at every lag within and across units, and standard normal
    x = torch.zeros(2, 3, 128, 128, device=device)
    z = F.gaussian_noise(x, 0.0, 1.0, clip=False, seed=torch.tensor([1, 2], device=device)).flatten().double().cpu()
    assert abs(z.mean().item()) < 0.01 and abs(z.std().item() - 1.0) < 0.01
    for lag in (1, 2, 3, 4, 5):
        assert abs(torch.corrcoef(torch.stack([z[:-lag], z[lag:]]))[0, 1].item()) < 0.012, lag
    s = F.salt_and_pepper(x + 0.5, 0.5, 0.5, True, seed=torch.tensor([3, 4], device=device)).flatten().double().cpu()
    for lag in (1, 2, 3):
        assert abs(torch.corrcoef(torch.stack([s[:-lag], s[lag:]]))[0, 1].item()) < 0.012, lag


def test_gaussian_noise_is_a_function_of_the_seed(device):
    x = _images(torch.float32, 3, device)
    seed = torch.tensor([5, 6, 7, 8, 9], device=device)
    a = F.gaussian_noise(x, 0.0, 0.1, seed=seed)
    assert torch.equal(a, F.gaussian_noise(x, 0.0, 0.1, seed=seed))
    # a sample's noise does not depend on its batch position, its neighbours or the memory format
    b = F.gaussian_noise(x.flip(0).contiguous(memory_format=torch.channels_last), 0.0, 0.1, seed=seed.flip(0))
    assert torch.equal(a, b.flip(0))
    # different seeds, different noise
    c = F.gaussian_noise(x, 0.0, 0.1, seed=seed + 100)
    assert (a != c).float().mean() > 0.9


@requires_torchvision
def test_gaussian_noise_matches_torchvision_given_its_normal_draws():
    # torchvision: image + (mean + randn * sigma), clamped. Recover our z from an unclipped run on
    # zeros (z = noise / sigma) and feed torchvision's formula with it.
    x = _images(torch.float32, 3)
    seed = torch.arange(B)
    z = F.gaussian_noise(torch.zeros_like(x), 0.0, 1.0, clip=False, seed=seed)
    out = F.gaussian_noise(x, 0.05, 0.2, clip=True, seed=seed)
    torch.testing.assert_close(out, torch.clamp(x + (0.05 + z * 0.2), 0, 1), atol=1e-6, rtol=0)


@pytest.mark.parametrize("per_channel", [False, True])
def test_salt_and_pepper(device, per_channel):
    x = torch.full((3, 3, 80, 80), 0.5, device=device)
    prob = torch.tensor([0.0, 0.1, 0.4], device=device)
    svp = torch.tensor([0.5, 0.8, 0.3], device=device)
    out = F.salt_and_pepper(x, prob, svp, per_channel, seed=torch.tensor([1, 2, 3], device=device))
    assert torch.equal(out[0], x[0])
    for b in (1, 2):
        salt = (out[b] == 1).float().mean().item()
        pepper = (out[b] == 0).float().mean().item()
        p, s = prob[b].item(), svp[b].item()
        assert abs(salt + pepper - p) < 0.02 and abs(salt - p * s) < 0.02
        replaced = (out[b] != 0.5)
        # per pixel: all channels of a pixel are replaced together (with the same value)
        same = (replaced.all(0) | (~replaced).all(0)).float().mean().item()
        assert (same == 1.0) != per_channel
    # custom salt / pepper values on uint8
    y = torch.full((2, 1, 50, 50), 100, dtype=torch.uint8, device=device)
    o = F.salt_and_pepper(y, 0.5, 0.5, salt_value=200, pepper_value=10, seed=3)
    assert set(o.unique().tolist()) == {10, 100, 200}


def test_erase_random_fill(device):
    x = _images(torch.float32, 3, device, h=40, w=40)
    boxes = dict(i=torch.tensor([0, 5, 0, 0, 0], device=device), j=4, h=torch.tensor([40, 30, 0, 1, 2], device=device), w=30)
    out = F.erase(x, v="random", seed=torch.arange(B, device=device), **boxes)
    region = out[1, :, 5:35, 4:34]
    assert abs(region.mean().item()) < 0.1 and abs(region.std().item() - 1.0) < 0.1  # standard normal
    assert torch.equal(out[2], x[2])  # an empty rectangle leaves the sample alone
    assert torch.equal(out[1, :, :5], x[1, :, :5])
    u8 = F.erase(_images(torch.uint8, 3, device, h=40, w=40), v="random", seed=7, **boxes)
    vals = u8[1, :, 5:35, 4:34].float()
    assert abs(vals.mean().item() - 127.5) < 5 and vals.min() == 0 and vals.max() == 255


# ---- CPU <-> CUDA -----------------------------------------------------------------------------

@requires_cuda
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.float16, torch.float64])
@pytest.mark.parametrize("channels_last", [False, True])
def test_cpu_cuda_parity(dtype, channels_last):
    x = _images(dtype, 3, "cpu", channels_last, h=37, w=45)
    seed = torch.arange(B) * 977
    f = _u(0.0, 3.0)
    sigma = torch.stack([_u(0.2, 4.0), _u(0.2, 4.0, seed=5)], 1)
    boxes = torch.tensor([[0, 0, 10, 10], [5, 6, 20, 30], [30, 40, 20, 20], [0, 0, 0, 0], [1, 2, 36, 44]])
    calls = [
        lambda t, d: ops.adjust_sharpness(t, f.to(d)),
        lambda t, d: ops.gaussian_blur(t, [9, 23], sigma.to(d)),
        lambda t, d: ops.laplacian(t, [5, 3], [3, 5], f.to(d), True),
        lambda t, d: ops.gaussian_noise(t, f.to(d) * 0.1, f.to(d) * 0.1, seed.to(d), True),
        lambda t, d: ops.salt_and_pepper(t, f.to(d) * 0.2, f.to(d) * 0.3, seed.to(d), False, None, None),
        lambda t, d: ops.erase(t, boxes.to(d), None, seed.to(d)),
        lambda t, d: ops.erase(t, boxes.to(d), torch.tensor([[0.3]], device=d), None),
        lambda t, d: ops.laplacian(t, [3, 3], [1, 3], f.to(d), False),  # a 3x3 window: CUDA's unrolled kernel
    ]
    for k, call in enumerate(calls):
        cpu, cuda = call(x, "cpu"), call(x.cuda(), "cuda").cpu()
        # the random values are float32 (host and device logf / cosf agree to an ulp or two), so
        # float64 images with noise agree to float32 precision
        random_f64 = dtype == torch.float64 and k in (3, 5)
        assert_close_images(cuda, cpu, torch.float32 if random_f64 else dtype, f"call {k}")
        assert cuda.stride() == cpu.stride()


# ---- opcheck / gradcheck ------------------------------------------------------------------------

def _opcheck_cases(device):
    x = _images(torch.float32, 3, device, h=9, w=11)
    xu = _images(torch.uint8, 3, device, h=9, w=11)
    f = _u(0.2, 2.0).to(device)
    seed = torch.arange(B, device=device)
    boxes = torch.tensor([[1, 2, 3, 4]] * B, device=device)
    return [
        (ops.adjust_sharpness, (x, f)), (ops.adjust_sharpness, (xu, f)),
        (ops.gaussian_blur, (x, [3, 5], torch.stack([f, f], 1))), (ops.gaussian_blur, (xu, [5, 3], f[:1])),
        (ops.laplacian, (x, [3, 3], [1, 3], f, False)), (ops.laplacian, (xu, [5, 5], [5, 5], f, True)),
        (ops.gaussian_noise, (x, f * 0, f * 0.1, seed, True)),
        (ops.salt_and_pepper, (x, f * 0.1, f * 0.2, seed, True, None, None)),
        (ops.erase, (x, boxes, torch.ones(1, 3, device=device), None)), (ops.erase, (xu, boxes, None, seed)),
    ]


def test_opcheck(device):
    for op, args in _opcheck_cases(device):
        torch.library.opcheck(op, args)


def test_gradcheck():
    x = _images(torch.float64, 3, h=7, w=8, b=2).mul(0.8).add(0.1).requires_grad_()
    f = torch.tensor([0.3, 1.7])
    seed = torch.tensor([3, 4])
    boxes = torch.tensor([[1, 1, 3, 4], [0, 2, 7, 2]])
    for fn in [
        lambda t: ops.adjust_sharpness(t, f),
        lambda t: ops.gaussian_blur(t, [5, 3], torch.tensor([[0.7, 1.3], [2.0, 0.4]])),
        lambda t: ops.laplacian(t, [3, 5], [3, 1], f, True),
        lambda t: ops.gaussian_noise(t, f * 0, f * 0.3, seed, True),
        lambda t: ops.gaussian_noise(t, f * 0, f * 0.3, seed, False),
        lambda t: ops.salt_and_pepper(t, f * 0.2, f * 0.3, seed, False, None, None),
        lambda t: ops.erase(t, boxes, torch.tensor([[0.5]]), None),
    ]:
        assert torch.autograd.gradcheck(fn, (x,))


# ---- errors ---------------------------------------------------------------------------------------

def test_errors(device):
    x = _images(torch.float32, 3, device)
    with torch.device(device):
        _errors(x)


def _errors(x):
    f = torch.ones(B)
    with pytest.raises(RuntimeError, match=r"torchaug::adjust_sharpness: images must have 1 or 3 channels, got 2"):
        ops.adjust_sharpness(x[:, :2], f)
    with pytest.raises(RuntimeError, match=r"torchaug::adjust_sharpness: factor must have shape \(B,\) or \(1,\) with B=5, got \(4,\)"):
        ops.adjust_sharpness(x, f[:4])
    with pytest.raises(RuntimeError, match=r"torchaug::gaussian_blur: kernel_size must hold odd sizes in \[1, 65\], got 4"):
        ops.gaussian_blur(x, [4, 3], f)
    with pytest.raises(RuntimeError, match=r"torchaug::gaussian_blur: kernel_size 37 needs images with width > 18 \(reflect padding\), got 18"):
        ops.gaussian_blur(x, [37, 3], f)
    with pytest.raises(RuntimeError, match=r"torchaug::gaussian_blur: sigma must have shape \(B, 2\), \(1, 2\), \(B,\) or \(1,\) with B=5, got \(5, 3\)"):
        ops.gaussian_blur(x, [3, 3], torch.ones(B, 3))
    with pytest.raises(RuntimeError, match=r"torchaug::laplacian: window_size must hold odd sizes in \[3, 65\], got 1"):
        ops.laplacian(x, [1, 3], [3, 3], f, False)
    with pytest.raises(RuntimeError, match=r"torchaug::gaussian_noise: seed must have dtype torch.int64, got Float"):
        ops.gaussian_noise(x, f, f, f, True)
    with pytest.raises(RuntimeError, match=r"torchaug::erase: boxes must have shape \(B, 4\) with B=5, got \(5, 3\)"):
        ops.erase(x, torch.zeros(B, 3, dtype=torch.int64), None, None)
    with pytest.raises(RuntimeError, match=r"torchaug::erase: pass value \(a fill\) or seed \(random fill\), not both"):
        ops.erase(x, torch.zeros(B, 4, dtype=torch.int64), torch.zeros(1, 1), torch.zeros(1, dtype=torch.int64))
    with pytest.raises(RuntimeError, match=r"torchaug::erase: value must have shape \(B, C\), \(1, C\), \(B, 1\) or \(1, 1\) with B=5 and C=3, got \(2, 3\)"):
        ops.erase(x, torch.zeros(B, 4, dtype=torch.int64), torch.zeros(2, 3), None)
    with pytest.raises(ValueError, match=r"torchaug.gaussian_blur: sigma must be positive"):
        F.gaussian_blur(x, 3, torch.tensor([1.0, 0.0, 1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match=r"torchaug.gaussian_blur: kernel_size must be an odd integer in \[1, 65\]"):
        F.gaussian_blur(x, [2, 3])
    with pytest.raises(ValueError, match=r"torchaug.adjust_sharpness: sharpness_factor must be a number >= 0, got -1"):
        F.adjust_sharpness(x, -1.0)
    with pytest.raises(ValueError, match=r"torchaug.salt_and_pepper: prob must be a number in \[0, 1\], got 1.5"):
        F.salt_and_pepper(x, 1.5)
    with pytest.raises(TypeError, match=r"torchaug.gaussian_noise: seed must be an integer tensor, got torch.float32"):
        F.gaussian_noise(x, seed=torch.ones(B))
    with pytest.raises(ValueError, match=r"torchaug.erase: v must be a number, a \(C,\) or a \(B, C\) tensor"):
        F.erase(x, 0, 0, 2, 2, torch.zeros(3, 2, 2))
    with pytest.raises(ValueError, match=r"torchaug.rotate: expand=True needs one angle for the batch"):
        F.rotate(x, torch.zeros(B), expand=True)


# ---- properties -------------------------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(
    b=st.integers(1, 3), c=st.sampled_from([1, 3]), h=st.integers(1, 12), w=st.integers(1, 12),
    dtype=st.sampled_from([torch.uint8, torch.float32, torch.float64, torch.float16]), channels_last=st.booleans(),
    op=st.sampled_from(["sharpness", "blur", "laplacian", "noise", "salt_pepper", "erase", "erase_random"]),
    seed=st.integers(0, 2**16),
)
def test_layout_and_dtype_property(b, c, h, w, dtype, channels_last, op, seed):
    # any shape / dtype / layout: channels_last input, and a view whose rows are not packed (a column
    # crop), give the contiguous input's values, in the input's layout; floating results equal the
    # float64 computation to the dtype's precision
    g = torch.Generator().manual_seed(seed)
    x = random_images(b, c, h, w, dtype, "cpu", False, g)
    k = max(1, min(2 * min(h, w) - 1, 5)) | 1
    k = k if k // 2 < min(h, w) else 1
    run = {
        "sharpness": lambda t: ops.adjust_sharpness(t, torch.tensor([1.7])),
        "blur": lambda t: ops.gaussian_blur(t, [k, k], torch.tensor([0.9])),
        "laplacian": lambda t: ops.laplacian(t, [3, 3], [3, 3], torch.tensor([0.5]), True) if min(h, w) > 1 else ops.adjust_sharpness(t, torch.tensor([1.0])),
        "noise": lambda t: ops.gaussian_noise(t, torch.tensor([0.0]), torch.tensor([0.2]), torch.tensor([seed]), True),
        "salt_pepper": lambda t: ops.salt_and_pepper(t, torch.tensor([0.3]), torch.tensor([0.5]), torch.tensor([seed]), True, None, None),
        "erase": lambda t: ops.erase(t, torch.tensor([[h // 3, w // 4, h // 2 + 1, w // 2]]).expand(b, 4), torch.tensor([[0.25]]), None),
        "erase_random": lambda t: ops.erase(t, torch.tensor([[h // 3, w // 4, h // 2 + 1, w // 2]]).expand(b, 4), None,
                                            torch.arange(b) + seed),
    }[op]
    out = run(x)
    cl = run(x.contiguous(memory_format=torch.channels_last)) if channels_last else out
    assert torch.equal(cl, out)
    wide = random_images(b, c, h, w + 3, dtype, "cpu", channels_last, g)
    view = wide[..., 2:w + 2]
    assert torch.equal(run(view), run(view.contiguous()))
    if dtype != torch.uint8 and op not in ("noise", "erase_random"):
        ref = run(x.double()).to(dtype)
        assert_close_images(out, ref, dtype, op)
    if op in ("sharpness", "noise", "salt_pepper", "erase") or dtype == torch.uint8:
        top = 255 if dtype == torch.uint8 else 1.0
        assert float(out.min()) >= 0 and float(out.max()) <= top


def test_torch_compile_fullgraph(device):
    x = _images(torch.uint8, 3, device)
    f = _u(0.5, 1.5).to(device)
    seed = torch.arange(B, device=device)

    def pipeline(x, f, seed):
        y = F.adjust_sharpness(F.gaussian_blur(x, [3, 5], f, validate=False), f, validate=False)
        return F.salt_and_pepper(F.gaussian_noise(y, 0.0, 0.05, seed=seed, validate=False), 0.05, seed=seed, validate=False)

    compiled = torch.compile(pipeline, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(x, f, seed), pipeline(x, f, seed))
