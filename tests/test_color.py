"""Color family: every op against torchvision.transforms.v2.functional per sample, color programs
against the same ops applied in sequence, CPU <-> CUDA, opcheck, gradcheck, errors, properties."""

import pytest
import torch
from conftest import assert_close_images, hooked, random_images, requires_cuda, requires_torchvision, torchvision
from hypothesis import given, settings
from hypothesis import strategies as st

import torchaug.functional as F
from torchaug.functional import COLOR_OPS

if torchvision is not None:
    import torchvision.transforms.v2.functional as TF

ops = torch.ops.torchaug
B = 5


def _images(dtype, c, device, channels_last=False, low_contrast=False, seed=0, h=13, w=18):
    g = torch.Generator().manual_seed(seed)
    x = random_images(B, c, h, w, dtype, "cpu", generator=g)
    if low_contrast:  # a narrow value range, so that autocontrast and equalize have work to do
        x = (x // 3 + 60) if dtype == torch.uint8 else (x * 0.4 + 0.25).to(dtype)
    x = x.to(device)
    return x.contiguous(memory_format=torch.channels_last) if channels_last else x


def _factors(lo, hi, seed=1):
    g = torch.Generator().manual_seed(seed)
    return (lo + (hi - lo) * torch.rand(B, generator=g, dtype=torch.float64)).to(torch.float32)


# (name, our call, torchvision call for sample i with the same parameters, needs low contrast)
def _cases(x):
    top = 255.0 if x.dtype == torch.uint8 else 1.0
    f = _factors(0.0, 2.0).to(x.device)
    hue = _factors(-0.5, 0.5).to(x.device)
    gamma, gain = _factors(0.2, 3.0).to(x.device), _factors(0.5, 1.5, seed=2).to(x.device)
    bits = torch.tensor([0, 1, 3, 6, 8], device=x.device)
    thr = _factors(0.0, top).to(x.device)
    v = lambda t, i: t[i].item()  # noqa: E731
    return [
        ("brightness", lambda: F.adjust_brightness(x, f), lambda i: TF.adjust_brightness(x[i], v(f, i))),
        ("contrast", lambda: F.adjust_contrast(x, f), lambda i: TF.adjust_contrast(x[i], v(f, i))),
        ("saturation", lambda: F.adjust_saturation(x, f), lambda i: TF.adjust_saturation(x[i], v(f, i))),
        ("hue", lambda: F.adjust_hue(x, hue), lambda i: TF.adjust_hue(x[i], v(hue, i))),
        ("gamma", lambda: F.adjust_gamma(x, gamma, gain), lambda i: TF.adjust_gamma(x[i], v(gamma, i), v(gain, i))),
        ("gamma_gain1", lambda: F.adjust_gamma(x, gamma), lambda i: TF.adjust_gamma(x[i], v(gamma, i))),
        ("grayscale1", lambda: F.rgb_to_grayscale(x, 1), lambda i: TF.rgb_to_grayscale(x[i], 1)),
        ("grayscaleC", lambda: F.rgb_to_grayscale(x, x.shape[1]), lambda i: TF.rgb_to_grayscale(x[i], x.shape[1])),
        ("invert", lambda: F.invert(x), lambda i: TF.invert(x[i])),
        ("posterize", lambda: F.posterize(x, bits), lambda i: TF.posterize(x[i], int(bits[i]))),
        ("solarize", lambda: F.solarize(x, thr), lambda i: TF.solarize(x[i], v(thr, i))),
        ("autocontrast", lambda: F.autocontrast(x), lambda i: TF.autocontrast(x[i])),
        ("equalize", lambda: F.equalize(x), lambda i: TF.equalize(x[i])),
    ]


@requires_torchvision
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
@pytest.mark.parametrize("channels", [3, 1])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("low_contrast", [False, True])
def test_ops_match_torchvision(device, dtype, channels, channels_last, low_contrast):
    x = _images(dtype, channels, device, channels_last, low_contrast)
    for name, ours, ref in _cases(x):
        out = ours()
        expected = torch.stack([ref(i) for i in range(B)])
        assert_close_images(out, expected, dtype, f"{name} {dtype} C={channels}")
        fmt = torch.channels_last if channels_last and channels > 1 else torch.contiguous_format
        assert out.is_contiguous(memory_format=fmt), name


@requires_torchvision
def test_uint8_results_are_bit_exact_on_cpu():
    # the per-pixel math replays torchvision's float32 operations and truncations: on the CPU
    # every uint8 result is identical, not merely within 1 LSB
    x = _images(torch.uint8, 3, "cpu", low_contrast=False, h=31, w=29)
    for name, ours, ref in _cases(x):
        assert torch.equal(ours(), torch.stack([ref(i) for i in range(B)])), name


@requires_torchvision
@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
def test_other_dtypes_match_torchvision(device, dtype):
    x = _images(dtype, 3, device, low_contrast=True)
    for name, ours, ref in _cases(x):
        if name in ("equalize",) and dtype != torch.float64:
            continue  # torchvision's half equalize rounds 255.999 * x in half precision: bins differ
        expected = torch.stack([ref(i) for i in range(B)])
        out = ours()
        if dtype == torch.float64:
            assert_close_images(out, expected, dtype, name)
        else:  # one rounding step of the low precision type per operation
            tol = 2e-2 if dtype == torch.bfloat16 else 4e-3
            torch.testing.assert_close(out.float(), expected.float(), atol=tol, rtol=0, msg=name)


def _apply_tv(img, op, p0, p1):
    name = [k for k, v in COLOR_OPS.items() if v == op][0]
    return {
        "identity": lambda: img,
        "brightness": lambda: TF.adjust_brightness(img, p0),
        "contrast": lambda: TF.adjust_contrast(img, p0),
        "saturation": lambda: TF.adjust_saturation(img, p0),
        "hue": lambda: TF.adjust_hue(img, p0),
        "gamma": lambda: TF.adjust_gamma(img, p0, p1),
        "grayscale": lambda: TF.rgb_to_grayscale(img, img.shape[0]),
        "invert": lambda: TF.invert(img),
        "posterize": lambda: TF.posterize(img, int(p0)),
        "solarize": lambda: TF.solarize(img, p0),
        "autocontrast": lambda: TF.autocontrast(img),
        "equalize": lambda: TF.equalize(img),
    }[name]()


def _random_program(b, n, seed, dtype, device):
    g = torch.Generator().manual_seed(seed)
    choices = [v for k, v in COLOR_OPS.items() if k != "solarize_add"]
    ops_ = torch.tensor(choices)[torch.randint(0, len(choices), (b, n), generator=g)]
    u = torch.rand(b, n, 2, generator=g)
    params = torch.zeros(b, n, 2)
    top = 255.0 if dtype == torch.uint8 else 1.0
    for op, (lo, hi) in {"brightness": (0.2, 1.8), "contrast": (0.2, 1.8), "saturation": (0.0, 2.0), "hue": (-0.5, 0.5),
                         "gamma": (0.3, 2.5), "solarize": (0.2 * top, top)}.items():
        m = ops_ == COLOR_OPS[op]
        params[..., 0] = torch.where(m, lo + (hi - lo) * u[..., 0], params[..., 0])
    m = ops_ == COLOR_OPS["gamma"]
    params[..., 1] = torch.where(m, 0.6 + 0.8 * u[..., 1], params[..., 1])
    m = ops_ == COLOR_OPS["posterize"]
    params[..., 0] = torch.where(m, torch.floor(u[..., 0] * 9).clamp(max=8), params[..., 0])
    return ops_.to(device), params.to(device)


@requires_torchvision
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_color_program_equals_sequential_torchvision(device, dtype, seed):
    b, n = 12, 4
    x = torch.cat([_images(dtype, 3, device, low_contrast=True, seed=seed), _images(dtype, 3, device, seed=seed + 7),
                   _images(dtype, 3, device, seed=seed + 9)])[:b]
    prog, params = _random_program(b, n, seed, dtype, device)
    out = F.color_program(x, prog, params)
    for i in range(b):
        img = x[i]
        for k in range(n):
            img = _apply_tv(img, int(prog[i, k]), params[i, k, 0].item(), params[i, k, 1].item())
        # float32 chains may move a value by a few ulps per op
        assert_close_images(out[i], img, dtype, f"sample {i} program {prog[i].tolist()}")


def test_solarize_add_matches_dali_definition(device):
    x = _images(torch.uint8, 3, device)
    shift = torch.tensor([0.0, 10.0, 50.7, 110.0, 127.0], device=device)
    out = F.solarize_add(x, shift)
    s = shift.trunc().view(-1, 1, 1, 1).to(torch.int32)
    expected = torch.where(x < 128, (x.to(torch.int32) + s).clamp(max=255), x.to(torch.int32)).to(torch.uint8)
    assert torch.equal(out, expected)
    xf = x.float() / 255
    outf = F.solarize_add(xf, shift / 255)
    expected_f = torch.where(xf < 128 / 255, (xf + (shift / 255).view(-1, 1, 1, 1)).clamp(max=1.0), xf)
    torch.testing.assert_close(outf, expected_f)


def test_broadcast_parameters_and_single_image(device):
    x = _images(torch.uint8, 3, device)
    a = F.adjust_brightness(x, 1.3)
    assert torch.equal(a, F.adjust_brightness(x, torch.tensor([1.3], device=device)))
    assert torch.equal(a, F.adjust_brightness(x, torch.full((B,), 1.3, device=device)))
    assert torch.equal(F.adjust_brightness(x[2], 1.3), a[2])


def test_empty_batch_and_identity_program(device):
    x = torch.empty(0, 3, 8, 8, dtype=torch.uint8, device=device)
    assert F.equalize(x).shape == x.shape
    y = _images(torch.uint8, 3, device)
    assert torch.equal(F.color_program(y, torch.zeros(B, 3, dtype=torch.int64, device=device), torch.zeros(B, 3, 2, device=device)), y)


# ---- opcheck, gradcheck, CPU <-> CUDA ----------------------------------------------------------

def _opcheck_samples(device):
    x = _images(torch.uint8, 3, device, low_contrast=True)
    xf = _images(torch.float32, 3, device, channels_last=True)
    f = _factors(0.5, 1.5).to(device)
    prog, params = _random_program(B, 3, 5, torch.uint8, device)
    out = [
        (ops.adjust_brightness, (x, f)), (ops.adjust_contrast, (xf, f)), (ops.adjust_saturation, (x, f)),
        (ops.adjust_hue, (xf, f - 1)), (ops.adjust_gamma, (x, f, f)), (ops.rgb_to_grayscale, (xf, 1)),
        (ops.invert, (x,)), (ops.posterize, (x, torch.full((1,), 3.0, device=device))), (ops.solarize, (xf, f / 2)),
        (ops.solarize_add, (x, f * 50, torch.full((B,), 128.0, device=device))), (ops.autocontrast, (xf,)),
        (ops.equalize, (x,)), (ops.color_program, (x, prog, params)),
    ]
    return out


def test_opcheck(device):
    for op, args in _opcheck_samples(device):
        torch.library.opcheck(op, args)


def test_gradcheck(device):
    x = torch.rand(2, 3, 5, 6, dtype=torch.float64, device=device, requires_grad=True)
    x1 = torch.rand(2, 1, 4, 5, dtype=torch.float64, device=device, requires_grad=True)
    f = torch.tensor([0.7, 1.4], dtype=torch.float64, device=device)
    cases = [(ops.adjust_brightness, (f,)), (ops.adjust_contrast, (f,)), (ops.adjust_saturation, (f,)),
             (ops.adjust_gamma, (f, f)), (ops.adjust_gamma, (f, torch.ones_like(f))), (ops.invert, ()),
             (ops.solarize, (f / 2,))]
    for op, args in cases:
        for inp in (x, x1):
            assert torch.autograd.gradcheck(lambda t: op(t, *args), (inp,)), op
    assert torch.autograd.gradcheck(lambda t: ops.rgb_to_grayscale(t, 1), (x,))
    assert torch.autograd.gradcheck(lambda t: ops.rgb_to_grayscale(t, 3), (x,))


@pytest.mark.parametrize("name", ["adjust_hue", "posterize", "autocontrast", "equalize", "color_program"])
def test_not_differentiable_ops_raise_on_backward(name):
    x = torch.rand(2, 3, 4, 4, requires_grad=True)
    f = torch.full((2,), 0.1)
    args = {"adjust_hue": (f,), "posterize": (f * 30,), "autocontrast": (), "equalize": (),
            "color_program": (torch.ones(2, 1, dtype=torch.int64), torch.ones(2, 1, 2))}[name]
    y = getattr(ops, name)(x, *args)
    with pytest.raises(RuntimeError, match=f"torchaug::{name} is not differentiable with respect to images"):
        y.sum().backward()


@requires_cuda
def test_cpu_cuda_agree():
    for (op, args_cpu), (_, args_cuda) in zip(_opcheck_samples("cpu"), _opcheck_samples("cuda")):
        a, b = op(*args_cpu), op(*args_cuda).cpu()
        if a.dtype == torch.uint8:
            assert (a.int() - b.int()).abs().max() <= 1, op
        else:
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


@requires_cuda
def test_cuda_hue_matches_cpu_on_every_color():
    """adjust_hue on the device (uint8: kernels::hue_words, whose divisions, floors and selects are
    rewritten for bytes; float: rn_div_by in csrc/kernels/common.h) is bitwise the CPU's over every
    uint8 RGB triple at shifts across [-0.5, 0.5], as uint8 and scaled to [0, 1] in float32, and over
    float32 pixels whose spread is outside the reciprocal's range (the fallback to the plain
    division). The same colors as a batch of 224 x 224 images (a block's shared memory: the resident
    program kernel) with a shift per sample across [-1, 1] (color_program does not range-check) and
    past 1 (the generic path); saturation there likewise (kernels::saturation_words), factors from 0
    to 6, negative and huge ones."""
    v = torch.arange(256, dtype=torch.uint8)
    every = torch.stack(torch.meshgrid(v, v, v, indexing="ij")).reshape(1, 3, 4096, 4096)
    tiny = torch.tensor([[0.5, 0.5 + 3e-8, 0.5], [1e-30, 3e-30, 0.0], [1e-39, 0.0, 2e-39], [0.0, 1e-20, 5e-21],
                         [0.25, 0.75, 0.5], [1.0, 1.0, 1.0]]).t().reshape(1, 3, 2, 3)
    for x, shifts in ((every, (-0.5, -0.37, -0.1, 0.0, 0.05, 0.3, 0.5)),
                      (every.float() / 255, (0.3,)), (tiny, (0.3,))):
        for s in shifts:
            shift = torch.tensor([s])
            a = F.adjust_hue(x, shift)
            b = F.adjust_hue(x.cuda(), shift.cuda()).cpu()
            assert torch.equal(a, b), (x.dtype, s, (a != b).sum().item())
    n = (4096 * 4096 + 224 * 224 - 1) // (224 * 224)
    flat = every.reshape(3, -1)
    batch = torch.cat([flat, flat[:, : n * 224 * 224 - flat.shape[1]]], 1).reshape(3, n, 224, 224).transpose(0, 1).contiguous()
    for op, p0 in (("hue", torch.linspace(-1, 1, n)), ("saturation", torch.linspace(0, 6, n))):
        prog = torch.zeros(n, 2, dtype=torch.int64)
        prog[:, 0] = COLOR_OPS[op]
        params = torch.zeros(n, 2, 2)
        params[:, 0, 0] = p0
        params[::7, 0, 0] = {"hue": 1.4, "saturation": 1e30}[op]  # past hue_words' range; saturating blends
        params[3::7, 0, 0] = {"hue": -2.6, "saturation": -2.5}[op]
        a = F.color_program(batch, prog, params)
        b = F.color_program(batch.cuda(), prog.cuda(), params.cuda()).cpu()
        assert torch.equal(a, b), (op, (a != b).sum().item())


@requires_cuda
@pytest.mark.parametrize("size", [(224, 224), (12, 18), (13, 18)])  # 16-byte, 4-byte and scalar loads
@pytest.mark.parametrize("channels", [3, 1])
def test_cpu_cuda_agree_programs(size, channels):
    # blocks that span many chunks per sample (statistics merged across blocks), each load path
    x = torch.randint(0, 256, (16, channels) + size, dtype=torch.uint8, generator=torch.Generator().manual_seed(3))
    x[:8] = x[:8] // 4 + 50  # low contrast: autocontrast and equalize move values
    prog, params = _random_program(16, 4, 11, torch.uint8, "cpu")
    a = F.color_program(x, prog, params)
    b = F.color_program(x.cuda(), prog.cuda(), params.cuda()).cpu()
    assert (a.int() - b.int()).abs().max() <= 1
    assert (a != b).float().mean() < 1e-3
    for name in ("equalize", "autocontrast", "adjust_contrast"):
        fn = getattr(F, name)
        args = () if name != "adjust_contrast" else (params[:, 0, 0].clamp(0.2, 1.8),)
        assert (fn(x, *args).int() - fn(x.cuda(), *[t.cuda() for t in args]).cpu().int()).abs().max() <= 1, name


@requires_cuda
@pytest.mark.parametrize("dtype,channels_last", [(torch.uint8, True), (torch.float32, False), (torch.float16, True)])
def test_cpu_cuda_agree_programs_with_several_statistics_ops(dtype, channels_last):
    """The CUDA statistics passes run rank by rank and resume from the intermediate image the
    previous rank stored in the output: samples with 0 to 4 statistics ops, at any slots, before
    and after per-pixel ops, every layout path (uint8 words, channels_last and floating: generic)."""
    S = {k: COLOR_OPS[k] for k in ("identity", "contrast", "autocontrast", "equalize", "hue", "brightness", "saturation")}
    rows = [["contrast", "hue", "equalize", "autocontrast"], ["hue", "contrast", "saturation", "equalize"],
            ["brightness", "saturation", "hue", "contrast"], ["equalize", "equalize", "contrast", "contrast"],
            ["hue", "brightness", "saturation", "identity"], ["autocontrast", "identity", "identity", "identity"],
            ["saturation", "autocontrast", "hue", "identity"], ["identity", "identity", "identity", "equalize"]]
    prog = torch.tensor([[S[o] for o in r] for r in rows])
    params = torch.tensor([[[{"hue": 0.2, "brightness": 1.3, "saturation": 0.6, "contrast": 0.7}.get(o, 0.0), 0.0] for o in r]
                           for r in rows])
    for size in [(224, 224), (12, 18), (13, 18)]:
        x = random_images(8, 3, *size, dtype, "cpu", channels_last, torch.Generator().manual_seed(5))
        x[:4] = x[:4] // 4 + 50 if dtype == torch.uint8 else x[:4] / 4 + 0.2
        a = F.color_program(x, prog, params)
        b = F.color_program(x.cuda(), prog.cuda(), params.cuda()).cpu()
        assert b.is_contiguous(memory_format=torch.channels_last) == channels_last
        if dtype == torch.uint8:
            assert (a.int() - b.int()).abs().max() <= 1, size
            assert (a != b).float().mean() < 1e-3, size
        else:
            assert_close_images(b, a, dtype, f"{size}")


@requires_cuda
@pytest.mark.parametrize("size", [(224, 224), (12, 18), (13, 18), (31, 37)])  # 16-byte planes and the others
@pytest.mark.parametrize("channels,channels_last", [(3, False), (1, False), (3, True)])
def test_cuda_resident_programs_equal_the_passes(size, channels, channels_last):
    """uint8 programs of several slots on images that fit a block's shared memory run in one launch
    of augment's resident kernel, their statistics made in the block; with it off (the
    augment_resident test hook), the statistics and apply passes run them. The same bytes: every op
    at slot 0, the others at random, several statistics ops after other ops, flat and low-contrast
    images, ColorJitter's programs."""
    gen = torch.Generator().manual_seed(size[0] * 3 + channels)
    b = 40
    x = random_images(b, channels, *size, torch.uint8, "cpu", channels_last, gen)
    x[:8] = x[:8] // 4 + 50  # low contrast
    x[8:12] = 77  # flat: equalize's step 0, autocontrast's min == max
    prog, params = _random_program(b, 6, size[1] + channels, torch.uint8, "cpu")
    prog[:13, 0] = torch.arange(13)  # every op at slot 0
    params[10, 0] = torch.tensor([40.0, 128.0])  # solarize_add's shift and threshold
    x, prog, params = x.cuda(), prog.cuda(), params.cuda()
    jitter = torch.ops.torchaug._color_jitter_program(torch.rand(b, 8, dtype=torch.float64, generator=gen).cuda(),
                                                      [0.6, 0.6, 0.6, -0.1], [0.8, 0.8, 0.8, 0.2], [1, 2, 3, 4])
    for ops_, params_ in ((prog, params), jitter):
        res = F.color_program(x, ops_, params_)
        with hooked("augment_resident", 0):
            ref = F.color_program(x, ops_, params_)
        differ = (res != ref).flatten(1).any(1)
        assert not differ.any(), f"samples {differ.nonzero().flatten().tolist()} differ, programs " \
                                 f"{[ops_[i].tolist() for i in differ.nonzero().flatten().tolist()[:3]]}"
        assert res.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)


# ---- errors -------------------------------------------------------------------------------------

def test_errors_name_the_op_and_argument(device):
    x = _images(torch.uint8, 3, device)
    with pytest.raises(RuntimeError, match=r"torchaug::adjust_brightness: images must have 1 or 3 channels, got 4"):
        ops.adjust_brightness(torch.zeros(2, 4, 5, 5, dtype=torch.uint8, device=device), torch.ones(2, device=device))
    with pytest.raises(RuntimeError, match=r"torchaug::adjust_contrast: factor must have shape \(B,\) or \(1,\) with B=5, got \(3,\)"):
        ops.adjust_contrast(x, torch.ones(3, device=device))
    with pytest.raises(RuntimeError, match=r"torchaug::adjust_gamma: gain must be a real number tensor, got Bool"):
        ops.adjust_gamma(x, torch.ones(B, device=device), torch.ones(B, dtype=torch.bool, device=device))
    with pytest.raises(RuntimeError, match=r"torchaug::color_program: ops must have shape \(B, n\) with B=5"):
        ops.color_program(x, torch.zeros(B, 0, dtype=torch.int64, device=device), torch.zeros(B, 0, 2, device=device))
    with pytest.raises(RuntimeError, match=r"torchaug::color_program: ops must have dtype torch.int64, got Int"):
        ops.color_program(x, torch.zeros(B, 1, dtype=torch.int32, device=device), torch.zeros(B, 1, 2, device=device))
    with pytest.raises(RuntimeError, match=r"torchaug::color_program: params must have shape \(B, n, 2\)"):
        ops.color_program(x, torch.zeros(B, 2, dtype=torch.int64, device=device), torch.zeros(B, 2, device=device))
    with pytest.raises(RuntimeError, match=r"torchaug::rgb_to_grayscale: num_output_channels must be 1 or 3, got 2"):
        ops.rgb_to_grayscale(x, 2)
    with pytest.raises(RuntimeError, match=r"torchaug::invert: images must be uint8, float32"):
        ops.invert(x.to(torch.int32))


def test_program_op_ids_checked_on_cpu():
    x = _images(torch.uint8, 3, "cpu")
    with pytest.raises(RuntimeError, match=r"torchaug::color_program: ops must hold op ids in \[0, 13\), got 13 at flat index 1"):
        ops.color_program(x, torch.tensor([[0], [13], [1], [2], [3]]), torch.zeros(B, 1, 2))


def test_functional_value_errors(device):
    x = _images(torch.uint8, 3, device)
    with pytest.raises(ValueError, match=r"torchaug.adjust_brightness: brightness_factor must be a number >= 0, got -1"):
        F.adjust_brightness(x, -1)
    with pytest.raises(ValueError, match=r"torchaug.adjust_hue: hue_factor must be a number in \[-0.5, 0.5\], got 0.7 for sample 2"):
        F.adjust_hue(x, torch.tensor([0.0, 0.1, 0.7, 0.0, 0.0], device=device))
    with pytest.raises(ValueError, match=r"torchaug.posterize: bits must be an integer in \[0, 8\], got 2.5"):
        F.posterize(x, 2.5)
    with pytest.raises(ValueError, match=r"torchaug.solarize: threshold must be a number <= 1, got 2"):
        F.solarize(x.float() / 255, 2)
    with pytest.raises(TypeError, match=r"torchaug.adjust_gamma: gamma must be a number or a tensor, got str"):
        F.adjust_gamma(x, "1")
    with pytest.raises(ValueError, match=r"torchaug.adjust_contrast: images must be \(C, H, W\) or \(B, C, H, W\)"):
        F.adjust_contrast(x[0, 0], 1.0)


# ---- properties ---------------------------------------------------------------------------------

@settings(max_examples=20, deadline=None)
@given(
    b=st.integers(1, 3), c=st.sampled_from([1, 3]), h=st.integers(1, 9), w=st.integers(1, 9),
    dtype=st.sampled_from([torch.uint8, torch.float32, torch.float64]), channels_last=st.booleans(),
    op=st.sampled_from(sorted(set(COLOR_OPS) - {"identity"})), seed=st.integers(0, 2**16),
)
def test_program_property(b, c, h, w, dtype, channels_last, op, seed):
    # any shape / dtype / layout: a one-slot program equals the standalone op (a broadcast parameter
    # included), values stay in range, and the layout is kept
    g = torch.Generator().manual_seed(seed)
    x = random_images(b, c, h, w, dtype, "cpu", channels_last, g)
    p0 = {"brightness": 1.3, "contrast": 0.6, "saturation": 1.7, "hue": 0.2, "gamma": 0.8, "posterize": 3.0,
          "solarize": 0.5 * (255 if dtype == torch.uint8 else 1), "solarize_add": 20.0 if dtype == torch.uint8 else 0.1}.get(op, 0.0)
    p1 = {"gamma": 1.0, "solarize_add": 128.0 if dtype == torch.uint8 else 0.5}.get(op, 0.0)
    out = F.color_program(x, torch.tensor([[COLOR_OPS[op]]]), torch.tensor([[[p0, p1]]]))
    single = {
        "brightness": lambda: F.adjust_brightness(x, p0), "contrast": lambda: F.adjust_contrast(x, p0),
        "saturation": lambda: F.adjust_saturation(x, p0), "hue": lambda: F.adjust_hue(x, p0),
        "gamma": lambda: F.adjust_gamma(x, p0, p1), "grayscale": lambda: F.rgb_to_grayscale(x, c),
        "invert": lambda: F.invert(x), "posterize": lambda: F.posterize(x, int(p0)),
        "solarize": lambda: F.solarize(x, p0), "solarize_add": lambda: F.solarize_add(x, p0, p1),
        "autocontrast": lambda: F.autocontrast(x), "equalize": lambda: F.equalize(x),
    }[op]()
    assert torch.equal(out, single)
    top = 255 if dtype == torch.uint8 else 1.0
    assert float(out.min()) >= 0 and float(out.max()) <= top
    assert out.is_contiguous(memory_format=torch.channels_last) == (channels_last and c > 1 and h * w > 1) or out.is_contiguous()


def test_torch_compile_fullgraph(device):
    x = _images(torch.uint8, 3, device)
    f = _factors(0.5, 1.5).to(device)

    def pipeline(x, f):
        return F.equalize(F.adjust_saturation(F.adjust_contrast(x, f, validate=False), f, validate=False))

    compiled = torch.compile(pipeline, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(x, f), pipeline(x, f))
