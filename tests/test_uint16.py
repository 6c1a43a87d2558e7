"""uint16 images (16-bit medical and industrial images): the ops and transforms take them as
torchvision's kernels do, through their floating path (functional._utils.wide_integers): images
and pixel-valued arguments (fills, thresholds, erase values) scaled by 65535, the result rounded
back. Parity with torchvision v2 on uint16 within 1 level where torchvision's kernel runs on uint16
(on the CPU some do not: flip and solarize are checked against their definition), to_dtype and
equalize exactly (torchvision's arithmetic), CPU == CUDA, and the ops without a uint16 form refuse."""
import pytest
import torch
from conftest import requires_cuda, requires_torchvision, torchvision

import torchaug.functional as F
import torchaug.transforms as T

if torchvision is not None:
    from torchvision.transforms.v2 import functional as TF

pytestmark = requires_torchvision
U16 = torch.uint16


def _images(b, c, h, w, seed=0, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 65536, (b, c, h, w), generator=g).to(U16).to(device)


def _assert_within(got, want, levels=1):
    assert got.dtype == want.dtype and got.shape == want.shape
    diff = (got.to(torch.int64) - want.to(torch.int64)).abs().max().item() if got.numel() else 0
    assert diff <= levels, f"max difference {diff} levels"


PERSPECTIVE = ([[0, 0], [22, 0], [22, 16], [0, 16]], [[1, 0], [22, 2], [20, 16], [0, 15]])
BILINEAR = TF.InterpolationMode.BILINEAR if torchvision is not None else None
CASES = {  # name: (ours, torchvision's), each fn(images)
    "crop": (lambda x: F.crop(x, 1, 2, 9, 9), lambda x: TF.crop(x, 1, 2, 9, 9)),
    "center_crop": (lambda x: F.center_crop(x, [8, 30]), lambda x: TF.center_crop(x, [8, 30])),
    "pad": (lambda x: F.pad(x, [1, 2, 3, 0], fill=1000), lambda x: TF.pad(x, [1, 2, 3, 0], fill=1000)),
    "pad_reflect": (lambda x: F.pad(x, [2, 3], padding_mode="reflect"), lambda x: TF.pad(x, [2, 3], padding_mode="reflect")),
    "resize_bilinear": (lambda x: F.resize(x, [9, 31]), lambda x: TF.resize(x, [9, 31])),
    # torchvision's bicubic on uint16 rounds without clamping, so that its overshoots wrap around
    # (-3 becomes 65533); it clamps uint8: the reference is its float path clamped, as for uint8
    "resize_bicubic": (lambda x: F.resize(x, [29, 11], interpolation="bicubic"),
                       lambda x: TF.resize(x.to(torch.float32), [29, 11], interpolation=TF.InterpolationMode.BICUBIC)
                       .round().clamp(0, 65535).to(U16)),
    "resized_crop": (lambda x: F.resized_crop(x, 1, 1, 12, 15, [8, 8]), lambda x: TF.resized_crop(x, 1, 1, 12, 15, [8, 8])),
    "rotate": (lambda x: F.rotate(x, 30.0, interpolation="bilinear", fill=5000),
               lambda x: TF.rotate(x, 30.0, interpolation=BILINEAR, fill=5000)),
    "affine": (lambda x: F.affine(x, 10.0, [1, 2], 1.1, [5.0, 0.0], interpolation="bilinear", fill=[100, 200, 300][:x.shape[-3]]),
               lambda x: TF.affine(x, 10.0, [1, 2], 1.1, [5.0, 0.0], interpolation=BILINEAR, fill=[100, 200, 300][:x.shape[-3]])),
    "perspective": (lambda x: F.perspective(x, *PERSPECTIVE, interpolation="bilinear", fill=7),
                    lambda x: TF.perspective(x, *PERSPECTIVE, interpolation=BILINEAR, fill=7)),
    "brightness": (lambda x: F.adjust_brightness(x, 1.3), lambda x: TF.adjust_brightness(x, 1.3)),
    "contrast": (lambda x: F.adjust_contrast(x, 0.6), lambda x: TF.adjust_contrast(x, 0.6)),
    "gamma": (lambda x: F.adjust_gamma(x, 1.4, 0.9), lambda x: TF.adjust_gamma(x, 1.4, 0.9)),
    "invert": (F.invert, lambda x: TF.invert(x)),
    "posterize": (lambda x: F.posterize(x, 3), lambda x: TF.posterize(x, 3)),
    "autocontrast": (F.autocontrast, lambda x: TF.autocontrast(x)),
    "equalize": (F.equalize, lambda x: TF.equalize(x)),
    "sharpness": (lambda x: F.adjust_sharpness(x, 1.7), lambda x: TF.adjust_sharpness(x, 1.7)),
    "blur": (lambda x: F.gaussian_blur(x, [5, 3], [1.2, 0.7]), lambda x: TF.gaussian_blur(x, [5, 3], [1.2, 0.7])),
    "erase": (lambda x: F.erase(x, 1, 2, 5, 4, torch.full((x.shape[-3],), 1234)),
              lambda x: TF.erase(x, 1, 2, 5, 4, torch.full((x.shape[-3], 1, 1), 1234, dtype=U16))),
}
COLOR3 = {  # three-channel ops
    "saturation": (lambda x: F.adjust_saturation(x, 0.7), lambda x: TF.adjust_saturation(x, 0.7)),
    "hue": (lambda x: F.adjust_hue(x, 0.1), lambda x: TF.adjust_hue(x, 0.1)),
    "grayscale": (F.rgb_to_grayscale, lambda x: TF.rgb_to_grayscale(x)),
}


@pytest.mark.parametrize("name", sorted(CASES) + sorted(COLOR3))
@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("single", [False, True])
def test_ops_match_torchvision_on_uint16(name, channels, single):
    if name in COLOR3 and channels == 1:
        pytest.skip("a three-channel op")
    ours, theirs = CASES.get(name) or COLOR3[name]
    x = _images(2, channels, 17, 23, seed=channels)
    x = x[0] if single else x
    got = ours(x)
    assert got.dtype == U16
    _assert_within(got, theirs(x), levels=0 if name in ("crop", "center_crop", "pad", "pad_reflect", "invert", "equalize") else 1)


def test_flip_and_solarize_follow_their_definition():
    # torchvision's own flip and solarize do not run on CPU uint16 tensors (torch has no kernel)
    x = _images(3, 3, 9, 14)
    wide = x.to(torch.int64)
    assert torch.equal(F.horizontal_flip(x).to(torch.int64), wide.flip(-1))
    assert torch.equal(F.vertical_flip(x).to(torch.int64), wide.flip(-2))
    flips = torch.tensor([True, False, True])
    got = F.flip(x, flips, False).to(torch.int64)
    assert torch.equal(got, torch.where(flips.view(3, 1, 1, 1), wide.flip(-1), wide))
    want = torch.where(wide >= 30000, 65535 - wide, wide)
    _assert_within(F.solarize(x, 30000), want.to(U16), levels=0)


def test_to_dtype_is_torchvisions_arithmetic():
    x = _images(2, 3, 5, 7)
    f = torch.rand(2, 3, 5, 7, generator=torch.Generator().manual_seed(1))
    u8 = torch.randint(0, 256, (2, 3, 5, 7), dtype=torch.uint8)
    for image, dtype in ((x, torch.float32), (x, torch.float64), (x, torch.uint8), (f, U16), (u8, U16)):
        got, want = F.to_dtype(image, dtype, scale=True), TF.to_dtype(image, dtype, scale=True)
        assert got.dtype == want.dtype and torch.equal(got.to(torch.float64), want.to(torch.float64)), (image.dtype, dtype)
    # normalize scales uint16 to [0, 1] first, as it does uint8
    got = F.normalize(x, [0.5, 0.4, 0.3], [0.2, 0.3, 0.25])
    torch.testing.assert_close(got, TF.normalize(TF.to_dtype(x, torch.float32, scale=True), [0.5, 0.4, 0.3], [0.2, 0.3, 0.25]))


def test_per_sample_parameters_on_uint16_are_torchvisions_per_image():
    x = _images(3, 3, 19, 21, seed=4)
    angles, fills = torch.tensor([10.0, -25.0, 40.0]), torch.tensor([[100.0, 0, 65535], [5, 6, 7], [0, 0, 0]])
    got = F.rotate(x, angles, interpolation="bilinear", fill=fills)
    for i in range(3):
        _assert_within(got[i], TF.rotate(x[i], float(angles[i]), interpolation=BILINEAR, fill=fills[i].tolist()))
    factors = torch.tensor([0.5, 1.0, 1.8])
    got = F.adjust_brightness(x, factors)
    for i in range(3):
        _assert_within(got[i], TF.adjust_brightness(x[i], float(factors[i])))


def test_transforms_take_uint16():
    # each transform gives uint16 (or floats where it converts), and its draws replayed on the
    # floating image scaled by 65535 give the same result within a level (AugMix rounds each chain
    # to the image's dtype before mixing, as torchvision's does): one path for both
    x = _images(4, 3, 40, 50, seed=2)
    xf = x.to(torch.float32) / 65535
    def twins(make, *values):  # the transform with pixel values, and with them scaled for floats
        return make(*values), make(*[tuple(v / 65535 for v in x) if isinstance(x, tuple) else x / 65535 for x in values])

    same = [(t, t) for t in (T.RandomResizedCrop(24), T.RandomHorizontalFlip(), T.ColorJitter(0.3, 0.3, 0.3, 0.1), T.RandAugment(),
                             T.TrivialAugmentWide(), T.AugMix(), T.ElasticTransform(), T.GaussianBlur(5), T.RandomPosterize(4, 1.0),
                             T.RandomAutocontrast(1.0), T.RandomInvert(1.0), T.RandomGrayscale(1.0), T.RandomAdjustSharpness(2.0, 1.0),
                             T.RandomPhotometricDistort(p=1.0), T.RandomChannelPermutation(), T.Resize(30), T.CenterCrop(20),
                             T.RandomCrop(44, padding=4), T.RandomApply([T.RandomInvert(1.0), T.GaussianBlur(3)], p=0.5),
                             T.RandomChoice([T.RandomEqualize(1.0), T.RandomPosterize(3, 1.0)]))]
    scaled = [twins(lambda f: T.RandomRotation(30, fill=f), 1000), twins(lambda f: T.RandomAffine(20, (0.1, 0.1), fill=f), (1, 2, 3)),
              twins(lambda f: T.RandomPerspective(p=1.0, fill=f), 300), twins(lambda v: T.RandomErasing(1.0, value=v), 5000),
              twins(lambda v: T.RandomSolarize(v, 1.0), 30000), twins(lambda f: T.RandomCrop(44, padding=4, fill=f), 700),
              twins(lambda f: T.Pad(3, fill=f), 9)]
    for t, t_float in same + scaled:
        y, p = t(x, return_params=True)
        assert y.dtype == U16 and y.device == x.device, type(t).__name__
        try:
            _assert_within(y, (t_float(xf, params=p) * 65535).round().clamp(0, 65535).to(U16), levels=1)
        except AssertionError as e:
            raise AssertionError(f"{type(t).__name__}: {e}") from None
    chain = T.Compose([T.RandomResizedCrop(24), T.RandomHorizontalFlip(), T.ToDtype(torch.float32, scale=True),
                       T.Normalize([0.5] * 3, [0.2] * 3)])
    y, p = chain(x, return_params=True)
    assert y.dtype == torch.float32
    torch.testing.assert_close(y, chain(xf, params=p))
    with pytest.raises(TypeError, match=r"RandomSolarize: threshold should be less or equal the maximum value of the dtype \(65535\)"):
        T.RandomSolarize(70000.0, 1.0)(x)


def test_ops_without_a_uint16_form_refuse():
    x = _images(2, 3, 8, 8)
    with pytest.raises(TypeError, match=r"torchaug.jpeg: images must be uint8 or floating, got torch.uint16"):
        F.jpeg(x, 50)
    with pytest.raises(TypeError, match=r"torchaug.laplacian: images must be uint8 or floating, got torch.uint16"):
        F.laplacian(x, 3)


@requires_cuda
def test_uint16_cpu_and_cuda_agree():
    x = _images(3, 3, 21, 26, seed=5)
    # the floating paths of CPU and CUDA agree to ~2e-5 (the float tests' tolerance), 1.3 levels of 65535
    for name, (ours, _) in {**CASES, **COLOR3}.items():
        try:
            _assert_within(ours(x.cuda()).cpu(), ours(x), levels=2)
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from None
    t = T.Compose([T.RandomResizedCrop(16), T.RandomHorizontalFlip(), T.ColorJitter(0.3, 0.3, 0.3, 0.1)])
    y, p = t(x.cuda(), return_params=True)
    _assert_within(y.cpu(), t(x, params=[{k: (v.cpu() if isinstance(v, torch.Tensor) else v) for k, v in q.items()}
                                         if isinstance(q, dict) else q for q in p]), levels=2)
