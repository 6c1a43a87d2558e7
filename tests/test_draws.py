"""The uniform draws torchaug's parameter ops make themselves (rand None): torchaug::_random_resized_crop_boxes,
torchaug::_policy_program and torchaug::_color_jitter_program give what they give for torch.rand((B, R), dtype=torch.float64, generator=g)
from the same generator state, and leave the generator where that torch.rand call leaves it. On CUDA,
with the generator on the op's device, the op's kernel draws them (csrc/cuda/draws.cuh, the layout of
torch's distribution kernels); these tests hold it to torch.rand on the GPU, past one grid-stride of
torch's threads, in CUDA graphs and with the default generators."""
import math

import pytest
import torch
from conftest import requires_cuda

import torchaug
import torchaug.transforms as T

RRC = (0.08, 1.0, 3.0 / 4.0, 4.0 / 3.0)


def _gen(device, seed):
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g


def _boxes(rand=None, sizes=None, h=375, w=500, batch=-1, like=None, generator=None):
    return torch.ops.torchaug._random_resized_crop_boxes(rand, sizes, h, w, *RRC, batch, like, generator)


def _space(device):
    pol = T.RandAugment()
    return pol._tables_for(31, 224, 224, torch.device(device))


def _program(t, num_ops, rand=None, batch=-1, generator=None):
    return torch.ops.torchaug._policy_program(rand, t.ids, t.mags, t.signed, 0, num_ops, 9, None, None, None, batch, generator)


JITTER = ([0.6, 0.5, 0.7, -0.1], [0.8, 1.0, 0.6, 0.2], [1, 2, 3, 4])  # ColorJitter(0.4, (0.5, 1.5), 0.3, 0.1)


def _jitter(rand=None, batch=-1, like=None, generator=None, space=JITTER):
    return torch.ops.torchaug._color_jitter_program(rand, *space, batch, like, generator)


def _jitter_reference(u, space=JITTER):
    """ColorJitter's programs from draws u (B, 8) as tensor ops: the order the argsort of u[:, :4],
    the factors lo + span * u[:, 4:] in float64, then float32."""
    lo, span, codes = (torch.tensor(v, dtype=torch.float64, device=u.device) for v in space)
    order = u[:, :4].argsort(dim=1)
    factors = torch.addcmul(lo, span, u[:, 4:])
    ops_ = codes.expand(u.shape[0], 4).gather(1, order).to(torch.int64)
    p0 = factors.gather(1, order).to(torch.float32)
    return ops_, torch.stack([p0, torch.zeros_like(p0)], dim=-1)


def _same_state_after(device, g, ref):
    """The two generators draw the same next numbers."""
    return torch.equal(torch.rand(7, device=device, generator=g), torch.rand(7, device=device, generator=ref))


@pytest.mark.parametrize("batch", [0, 1, 5, 256])
def test_boxes_draw_what_torch_rand_draws(device, batch):
    like = torch.empty(batch, 3, 4, 4, dtype=torch.uint8, device=device)
    g, ref = _gen(device, 5), _gen(device, 5)
    got = _boxes(batch=batch, like=like, generator=g)
    want = _boxes(torch.rand(batch, 22, dtype=torch.float64, device=device, generator=ref))
    assert got.device == like.device and torch.equal(got, want)
    assert _same_state_after(device, g, ref)


def _boxes_flips(p=0.5, sizes=None, h=375, w=500, batch=-1, like=None, generator=None):
    return torch.ops.torchaug._random_resized_crop_boxes_flips(sizes, h, w, *RRC, p, batch, like, generator)


def _torch_flips(batch, p, device, generator=None):
    return torch.empty(batch, dtype=torch.bool, device=device).bernoulli_(p, generator=generator)


@pytest.mark.parametrize("batch", [0, 1, 5, 256, 1000])
@pytest.mark.parametrize("p", [0.5, 0.3, 0.0, 1.0])
def test_boxes_flips_draw_what_torch_draws(device, batch, p):
    """_random_resized_crop_boxes_flips: the boxes of torch.rand's numbers, then the coins of a bool
    bernoulli_(p), from one generator, which is left where those two calls leave it."""
    like = torch.empty(batch, 3, 4, 4, dtype=torch.uint8, device=device)
    g, ref = _gen(device, 5), _gen(device, 5)
    boxes, flips = _boxes_flips(p, batch=batch, like=like, generator=g)
    want = _boxes(torch.rand(batch, 22, dtype=torch.float64, device=device, generator=ref))
    want_flips = _torch_flips(batch, p, device, ref)
    assert boxes.device == like.device and flips.device == like.device and flips.dtype == torch.bool
    assert torch.equal(boxes, want) and torch.equal(flips, want_flips)
    assert _same_state_after(device, g, ref)
    if batch >= 256 and 0 < p < 1:  # coins of both faces
        assert 0 < int(flips.sum()) < batch


def test_boxes_flips_ragged_sizes_and_default_generator(device):
    sizes = torch.randint(20, 600, (33, 2), dtype=torch.int64).to(device)
    torch.manual_seed(9)
    boxes, flips = _boxes_flips(0.5, sizes=sizes, h=0, w=0)
    after = torch.rand(3, device=device)
    torch.manual_seed(9)
    want = _boxes(torch.rand(33, 22, dtype=torch.float64, device=device), sizes, h=0, w=0)
    assert torch.equal(boxes, want) and torch.equal(flips, _torch_flips(33, 0.5, device))
    assert torch.equal(after, torch.rand(3, device=device))


@pytest.mark.parametrize("generators", ["default", "shared", "separate"])
@pytest.mark.parametrize("crop", ["resized", "ragged", "padded"])
def test_compose_draws_crop_and_flip_in_one_call(device, generators, crop, monkeypatch):
    """Compose draws a RandomResizedCrop's boxes (or a RandomCrop's windows) and the coins of the
    RandomHorizontalFlip after it in one _random_resized_crop_boxes_flips call where both draw from
    the same generator: the parameters and the output of the transforms run one by one (fuse=False)
    from the same seed."""
    calls = []
    cls = T.RandomCrop if crop == "padded" else T.RandomResizedCrop
    fused_draw = cls.make_params_and_flips
    monkeypatch.setattr(cls, "make_params_and_flips", lambda self, *a: calls.append(1) or fused_draw(self, *a))
    ragged = crop == "ragged"
    gen = torch.Generator().manual_seed(3)
    if ragged:
        x = [torch.randint(0, 256, (3, 30 + 5 * i, 41 - 2 * i), dtype=torch.uint8, generator=gen).to(device) for i in range(12)]
    else:
        x = torch.randint(0, 256, (40, 3, 30, 41), dtype=torch.uint8, generator=gen).to(device)

    def run(fuse):
        torch.manual_seed(11)
        g = {"default": (None, None), "shared": (_gen(device, 4),) * 2, "separate": (_gen(device, 4), _gen(device, 5))}[generators]
        first = T.RandomCrop(16, padding=4, generator=g[0]) if crop == "padded" else T.RandomResizedCrop(16, generator=g[0])
        chain = T.Compose([first, T.RandomHorizontalFlip(0.4, generator=g[1]),
                           T.ToDtype(torch.float32, scale=True), T.Normalize([0.4, 0.5, 0.6], [0.2, 0.25, 0.3])], fuse=fuse)
        return chain(x, return_params=True)

    (out, params), (want, want_params) = run(True), run(False)
    assert len(calls) == (0 if generators == "separate" else 1)
    assert torch.equal(params[0]["boxes"], want_params[0]["boxes"]) and torch.equal(params[1]["flip"], want_params[1]["flip"])
    assert 0 < int(params[1]["flip"].sum()) < params[1]["flip"].numel()
    torch.testing.assert_close(out, torch.stack(want) if isinstance(want, list) else want, atol=1e-6, rtol=1e-6)


def test_boxes_ragged_sizes_draw_what_torch_rand_draws(device):
    sizes = torch.randint(20, 600, (33, 2), dtype=torch.int64).to(device)
    g, ref = _gen(device, 9), _gen(device, 9)
    got = _boxes(sizes=sizes, h=0, w=0, generator=g)
    want = _boxes(torch.rand(33, 22, dtype=torch.float64, device=device, generator=ref), sizes, h=0, w=0)
    assert torch.equal(got, want) and _same_state_after(device, g, ref)


def test_random_crop_windows_are_exact_boxes_with_torchvisions_offsets(device):
    """RandomCrop draws its windows as RandomResizedCrop boxes on the padded canvas with the crop's own
    scale and ratio (transforms/_draws.py: random_crop_offsets): every box has the crop's exact size,
    over crop and canvas sizes from 1 to 1000 (the device's sqrt, exp and log included), and its
    offsets are floor(u * (padded - crop + 1)) from the last two of the 22 uniforms torch.rand gives."""
    from torchaug.transforms import _draws as D
    sizes = [1, 2, 3, 5, 7, 24, 28, 31, 32, 33, 63, 64, 100, 223, 224, 227, 255, 299, 331, 480, 500, 640, 999, 1000]
    gen = torch.Generator().manual_seed(0)
    like = torch.empty(1, device=device)
    for ch in sizes:
        for cw in sizes[::3] + [ch]:
            pad = [int(v) for v in torch.randint(0, 9, (4,), generator=gen)]
            h, w = ch + int(torch.randint(-min(ch, 8) + 1, 40, (1,), generator=gen)), cw + int(torch.randint(0, 40, (1,), generator=gen))
            ph, pw = h + pad[1] + pad[3], w + pad[0] + pad[2]
            if ph < ch:
                continue
            g, ref = _gen(device, ch * 1000 + cw), _gen(device, ch * 1000 + cw)
            got = D.random_crop_offsets(6, h, w, pad, [ch, cw], like, g)
            u = torch.rand(6, 22, dtype=torch.float64, device=device, generator=ref)
            assert torch.equal(got["top"], (u[:, 20] * (ph - ch + 1)).floor().long()), (ch, cw, ph, pw)
            assert torch.equal(got["left"], (u[:, 21] * (pw - cw + 1)).floor().long()), (ch, cw, ph, pw)
            boxes = torch.ops.torchaug._random_resized_crop_boxes(u, None, ph, pw, ch * cw / (ph * pw), ch * cw / (ph * pw),
                                                                  cw / ch, cw / ch)
            assert (boxes[:, 2] == ch).all() and (boxes[:, 3] == cw).all(), (ch, cw, ph, pw)


def test_random_crop_offsets_are_uniform():
    from torchaug.transforms import _draws as D
    got = D.random_crop_offsets(18000, 32, 30, [4, 4, 4, 4], [32, 32], torch.empty(1), torch.Generator().manual_seed(1))
    for key, n in (("top", 9), ("left", 7)):
        counts = torch.bincount(got[key], minlength=n)
        assert counts.numel() == n and counts.min() > 18000 / n * 0.9 and counts.max() < 18000 / n * 1.1, (key, counts)


def test_boxes_default_generator(device):
    like = torch.empty(64, 3, 4, 4, device=device)
    torch.manual_seed(3)
    got = _boxes(batch=64, like=like)
    after = torch.rand(3, device=device)
    torch.manual_seed(3)
    want = _boxes(torch.rand(64, 22, dtype=torch.float64, device=device))
    assert torch.equal(got, want) and torch.equal(after, torch.rand(3, device=device))


@pytest.mark.parametrize("num_ops", [0, 2, 16, 33])  # 33: 66 draws a sample, past what a kernel draws itself (64)
def test_program_draws_what_torch_rand_draws(device, num_ops):
    t = _space(device)
    g, ref = _gen(device, 21), _gen(device, 21)
    got = _program(t, num_ops, batch=100, generator=g)
    want = _program(t, num_ops, torch.rand(100, 2 * num_ops, dtype=torch.float64, device=device, generator=ref))
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    assert _same_state_after(device, g, ref)


@pytest.mark.parametrize("batch", [0, 1, 5, 300])
def test_jitter_draws_what_torch_rand_draws(device, batch):
    like = torch.empty(batch, 3, 4, 4, dtype=torch.uint8, device=device)
    g, ref = _gen(device, 31), _gen(device, 31)
    got = _jitter(batch=batch, like=like, generator=g)
    u = torch.rand(batch, 8, dtype=torch.float64, device=device, generator=ref)
    want = _jitter(u)
    assert all(a.device == like.device and torch.equal(a, b) for a, b in zip(got, want))
    assert _same_state_after(device, g, ref)
    # torchvision's order and factors (the tensor ops ColorJitter ran before the op existed)
    assert all(torch.equal(a, b) for a, b in zip(want, _jitter_reference(u)))


def _draw_map_ops(like):
    """(R, call(rand, batch, generator)) of the ops that map R draws a sample through the draw-map
    mechanism (csrc/ops/params.h), on like's device."""
    return {
        "_erasing_boxes": (41, lambda rand, batch, g: torch.ops.torchaug._erasing_boxes(
            rand, 30, 40, 0.6, 0.02, 0.33, -1.2, 1.2, batch, like, g)),
        "_random_affine_params": (6, lambda rand, batch, g: torch.ops.torchaug._random_affine_params(
            rand, None, 30, 40, [-30.0, 30.0], [0.1, 0.2], [0.8, 1.2], [-10.0, 10.0, -5.0, 5.0], batch, like, g)),
        "_perspective_params": (9, lambda rand, batch, g: torch.ops.torchaug._perspective_params(
            rand, 30, 40, 0.5, 0.7, batch, like, g)),
    }


def _all_equal(a, b):
    a, b = (a,) if isinstance(a, torch.Tensor) else a, (b,) if isinstance(b, torch.Tensor) else b
    return len(a) == len(b) and all(x.device == y.device and torch.equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("op", ["_erasing_boxes", "_random_affine_params", "_perspective_params"])
@pytest.mark.parametrize("batch", [0, 1, 5, 300])
def test_draw_map_ops_draw_what_torch_rand_draws(device, op, batch):
    like = torch.empty(2, 3, 4, 4, dtype=torch.uint8, device=device)
    draws, call = _draw_map_ops(like)[op]
    g, ref = _gen(device, 41), _gen(device, 41)
    got = call(None, batch, g)
    want = call(torch.rand(batch, draws, dtype=torch.float64, device=device, generator=ref), -1, None)
    assert _all_equal(got, want) and _same_state_after(device, g, ref)


def test_jitter_adjustments_not_made_and_ties():
    """Code 0 is an adjustment not made (the identity in its slot); equal draws keep index order
    (a stable sort), the order argsort gives distinct draws."""
    u = torch.tensor([[0.5, 0.5, 0.5, 0.5, 0.0, 0.25, 0.5, 1.0], [0.9, 0.1, 0.5, 0.3, 1.0, 1.0, 1.0, 1.0]], dtype=torch.float64)
    ops_, params = _jitter(u, space=([0.5, 0.0, 0.0, -0.1], [1.0, 0.0, 0.0, 0.2], [1, 0, 0, 4]))
    assert ops_.tolist() == [[1, 0, 0, 4], [0, 4, 0, 1]]
    assert params[..., 0].tolist() == [[0.5, 0.0, 0.0, pytest.approx(0.1)], [0.0, pytest.approx(0.1), 0.0, 1.5]]
    assert params[..., 1].eq(0).all()


def test_transforms_draw_what_torch_rand_draws(device):
    """RandomResizedCrop and RandAugment make their parameters through the ops' own draws: what the
    ops give for torch.rand's numbers, in the order the transforms draw them."""
    images = torch.randint(0, 256, (12, 3, 40, 50), dtype=torch.uint8, device=device)
    g, ref = _gen(device, 77), _gen(device, 77)
    boxes = T.RandomResizedCrop(24, generator=g).make_params(images)["boxes"]
    program = T.RandAugment(generator=g).make_params(images)
    want_boxes = torch.ops.torchaug._random_resized_crop_boxes(torch.rand(12, 22, dtype=torch.float64, device=device, generator=ref),
                                                               None, 40, 50, *RRC)
    t = T.RandAugment()._tables_for(31, 40, 50, torch.device(device))
    want = _program(t, 2, torch.rand(12, 4, dtype=torch.float64, device=device, generator=ref))
    assert torch.equal(boxes, want_boxes)
    assert torch.equal(program["ops"], want[1]) and torch.equal(program["magnitudes"], want[2])
    jitter = T.ColorJitter(0.4, (0.5, 1.5), 0.3, 0.1, generator=g).make_params(images)
    want = _jitter(torch.rand(12, 8, dtype=torch.float64, device=device, generator=ref))
    assert torch.equal(jitter["ops"], want[0]) and torch.equal(jitter["params"], want[1])
    affine = T.RandomAffine(20, (0.1, 0.3), (0.9, 1.1), (-5, 5, -3, 3), generator=g).make_params(images)
    want = torch.ops.torchaug._random_affine_params(torch.rand(12, 6, dtype=torch.float64, device=device, generator=ref), None,
                                                    40, 50, [-20.0, 20.0], [0.1, 0.3], [0.9, 1.1], [-5.0, 5.0, -3.0, 3.0])
    assert torch.equal(torch.cat([affine["angle"][:, None], affine["translate"], affine["scale"][:, None], affine["shear"]], 1),
                       want)
    erasing = T.RandomErasing(0.7, generator=g).make_params(images)
    want = torch.ops.torchaug._erasing_boxes(torch.rand(12, 41, dtype=torch.float64, device=device, generator=ref), 40, 50, 0.7,
                                             0.02, 0.33, math.log(0.3), math.log(3.3))
    assert torch.equal(erasing["boxes"], want)
    perspective = T.RandomPerspective(0.4, 0.6, generator=g).make_params(images)
    want = torch.ops.torchaug._perspective_params(torch.rand(12, 9, dtype=torch.float64, device=device, generator=ref), 40, 50,
                                                  0.4, 0.6)
    assert torch.equal(perspective["coefficients"], want[0]) and torch.equal(perspective["applies"], want[1])
    assert _same_state_after(device, g, ref)


def test_draw_errors(device):
    like = torch.empty(4, 3, 4, 4, device=device)
    g = _gen(device, 0)
    u = torch.rand(4, 22, dtype=torch.float64, device=device)
    with pytest.raises(RuntimeError, match="_random_resized_crop_boxes: generator draws rand when rand is None; pass one or the other, got both"):
        _boxes(u, generator=g)
    with pytest.raises(RuntimeError, match="no tensor arguments"):  # no device to run on: the dispatcher says so
        _boxes(batch=4)
    with pytest.raises(RuntimeError, match="batch must be the number of samples to draw for \\(a non-negative integer\\), got -1"):
        _boxes(like=like)
    sizes = torch.full((4, 2), 50, dtype=torch.int64, device=device)
    with pytest.raises(RuntimeError, match="batch must be sizes.size\\(0\\) \\(4\\) or -1, got 5"):
        _boxes(sizes=sizes, batch=5)
    with pytest.raises(RuntimeError, match="scale must satisfy"):  # checked before anything is drawn
        torch.ops.torchaug._random_resized_crop_boxes(None, None, 10, 10, 0.5, 0.1, 0.75, 1.3, 4, like, g)
    with pytest.raises(RuntimeError, match=r"_random_resized_crop_boxes_flips: p must be a probability in \[0, 1\], got 1.5"):
        _boxes_flips(1.5, batch=4, like=like, generator=g)
    with pytest.raises(RuntimeError, match="_random_resized_crop_boxes_flips: ratio must satisfy 0 < ratio_min <= ratio_max"):
        torch.ops.torchaug._random_resized_crop_boxes_flips(None, 10, 10, 0.1, 0.5, 1.3, 0.75, 0.5, 4, like, g)
    with pytest.raises(RuntimeError, match="_random_resized_crop_boxes_flips: batch must be the number of samples to draw for"):
        _boxes_flips(like=like, generator=g)
    assert torch.equal(g.get_state(), _gen(device, 0).get_state())
    t = _space(device)
    with pytest.raises(RuntimeError, match="_policy_program: batch must be the number of samples to draw for"):
        _program(t, 2)
    with pytest.raises(RuntimeError, match="_policy_program: generator draws rand when rand is None"):
        _program(t, 2, torch.rand(4, 4, dtype=torch.float64, device=device), generator=g)
    with pytest.raises(RuntimeError, match="_color_jitter_program: batch must be the number of samples to draw for"):
        _jitter(like=like)
    with pytest.raises(RuntimeError, match=r"_color_jitter_program: rand must be a \(B, 8\) float64 tensor of uniform draws, got Float"):
        _jitter(torch.rand(4, 8, device=device))
    with pytest.raises(RuntimeError, match="_color_jitter_program: lo, span and codes must have 4 values each .*got 3, 4 and 4"):
        _jitter(batch=4, like=like, space=([1.0] * 3, [0.0] * 4, [1] * 4))
    with pytest.raises(RuntimeError, match=r"_color_jitter_program: codes must be color op ids in \[0, 13\), got 13 at index 2"):
        _jitter(batch=4, like=like, space=([1.0] * 4, [0.0] * 4, [1, 2, 13, 4]))
    with pytest.raises(RuntimeError, match="_color_jitter_program: lo must be finite and span finite and >= 0, got lo 1 and span -0.5 at index 1"):
        _jitter(batch=4, like=like, generator=g, space=([1.0] * 4, [0.0, -0.5, 0.0, 0.0], [1] * 4))
    ops = _draw_map_ops(like)
    for op, (draws, call) in ops.items():
        with pytest.raises(RuntimeError, match=f"{op}: batch must be the number of samples to draw for"):
            call(None, -1, g)
        with pytest.raises(RuntimeError, match=f"{op}: generator draws rand when rand is None"):
            call(torch.rand(4, draws, dtype=torch.float64, device=device), -1, g)
        with pytest.raises(RuntimeError, match=rf"{op}: rand must be a \(B, {draws}\) float64 tensor of uniform draws, got Float"):
            call(torch.rand(4, draws, device=device), -1, None)
    with pytest.raises(RuntimeError, match=r"_erasing_boxes: p must be a probability in \[0, 1\], got 1.5"):
        torch.ops.torchaug._erasing_boxes(None, 30, 40, 1.5, 0.02, 0.33, -1.2, 1.2, 4, like, g)
    with pytest.raises(RuntimeError, match=r"_perspective_params: distortion_scale must be in \[0, 1\], got -0.5"):
        torch.ops.torchaug._perspective_params(None, 30, 40, -0.5, 0.5, 4, like, g)
    with pytest.raises(RuntimeError, match=r"_random_affine_params: shear must have 2 or 4 values \(\[min, max\] pairs\), got 3"):
        torch.ops.torchaug._random_affine_params(None, None, 30, 40, [-1.0, 1.0], None, None, [1.0, 2.0, 3.0], 4, like, g)
    with pytest.raises(RuntimeError, match="_random_affine_params: degrees must be \\[min, max\\] pairs with min <= max, got 2 and 1"):
        torch.ops.torchaug._random_affine_params(None, None, 30, 40, [2.0, 1.0], None, None, None, 4, like, g)
    with pytest.raises(RuntimeError, match=r"_random_affine_params: translate must be 2 fractions in \[0, 1\] \(of the width and the height\), got 0.5 and 1.5"):
        torch.ops.torchaug._random_affine_params(None, None, 30, 40, [1.0, 2.0], [0.5, 1.5], None, None, 4, like, g)
    with pytest.raises(RuntimeError, match="_random_affine_params: scale must be positive, got 0"):
        torch.ops.torchaug._random_affine_params(None, None, 30, 40, [1.0, 2.0], None, [0.0, 1.0], None, 4, like, g)
    assert torch.equal(g.get_state(), _gen(device, 0).get_state())  # nothing drawn before the checks
    if torch.device(device).type == "cpu":  # given draws are read on the host only
        with pytest.raises(RuntimeError, match=r"_color_jitter_program: rand must be uniform draws in \[0, 1\], got nan"):
            _jitter(torch.full((2, 8), float("nan"), dtype=torch.float64))
        for op, (draws, call) in ops.items():
            with pytest.raises(RuntimeError, match=rf"{op}: rand must be uniform draws in \[0, 1\], got nan"):
                call(torch.full((2, draws), float("nan"), dtype=torch.float64), -1, None)


def test_drawing_ops_opcheck(device):
    """The schema and the fake kernels of the drawing forms (their outputs differ from call to call,
    so the tests that compare two runs are left out)."""
    like = torch.empty(6, 3, 4, 4, device=device)
    utils = ("test_schema", "test_autograd_registration", "test_faketensor")
    torch.library.opcheck(torch.ops.torchaug._random_resized_crop_boxes, (None, None, 30, 40, *RRC, 6, like, None), test_utils=utils)
    torch.library.opcheck(torch.ops.torchaug._random_resized_crop_boxes_flips, (None, 30, 40, *RRC, 0.5, 6, like, None),
                          test_utils=utils)
    t = _space(device)
    torch.library.opcheck(torch.ops.torchaug._policy_program,
                          (None, t.ids, t.mags, t.signed, 0, 2, 9, None, None, None, 6, None), test_utils=utils)
    torch.library.opcheck(torch.ops.torchaug._color_jitter_program, (None, *JITTER, 6, like, None), test_utils=utils)
    torch.library.opcheck(torch.ops.torchaug._color_jitter_program,
                          (torch.rand(6, 8, dtype=torch.float64, device=device), *JITTER, -1, None, None))
    for op, (draws, call) in _draw_map_ops(like).items():
        fn = getattr(torch.ops.torchaug, op)
        rand = torch.rand(6, draws, dtype=torch.float64, device=device)
        args = {"_erasing_boxes": (30, 40, 0.6, 0.02, 0.33, -1.2, 1.2),
                "_random_affine_params": (None, 30, 40, [-30.0, 30.0], [0.1, 0.2], [0.8, 1.2], [-10.0, 10.0, -5.0, 5.0]),
                "_perspective_params": (30, 40, 0.5, 0.7)}[op]
        torch.library.opcheck(fn, (None, *args, 6, like, None), test_utils=utils)
        torch.library.opcheck(fn, (rand, *args))


@requires_cuda
def test_cuda_kernel_draws_past_one_grid_stride():
    """More draws than torch's threads (132 SMs x 8 blocks x 256 on an H100): elements past the first
    stride come from the second value of a thread's pair, then from its next pair."""
    props = torch.cuda.get_device_properties(0)
    stride = props.multi_processor_count * (props.max_threads_per_multi_processor // 256) * 256
    for batch in (stride // 22 + 7, (2 * stride) // 22 + 3):
        like = torch.empty(batch, 1, 1, 1, device="cuda")
        g, ref = _gen("cuda", batch), _gen("cuda", batch)
        got = _boxes(batch=batch, like=like, generator=g)
        want = _boxes(torch.rand(batch, 22, dtype=torch.float64, device="cuda", generator=ref))
        assert torch.equal(got, want) and _same_state_after("cuda", g, ref)
    draws, call = _draw_map_ops(torch.empty(1, device="cuda"))["_erasing_boxes"]
    batch = (2 * stride) // draws + 3  # 41 draws a sample, three rows a block
    g, ref = _gen("cuda", 6), _gen("cuda", 6)
    got = call(None, batch, g)
    want = call(torch.rand(batch, draws, dtype=torch.float64, device="cuda", generator=ref), -1, None)
    assert torch.equal(got, want) and _same_state_after("cuda", g, ref)
    t = _space("cuda")
    batch = (5 * stride) // 32 + 1  # 32 draws a sample: up to the third pair of a thread
    g, ref = _gen("cuda", 4), _gen("cuda", 4)
    got = _program(t, 16, batch=batch, generator=g)
    want = _program(t, 16, torch.rand(batch, 32, dtype=torch.float64, device="cuda", generator=ref))
    assert all(torch.equal(a, b) for a, b in zip(got, want)) and _same_state_after("cuda", g, ref)


@requires_cuda
def test_cuda_kernel_flips_past_one_grid_stride():
    """The coins of more samples than torch's threads: past the first stride they come from the
    second, third and fourth float of a thread's curand_uniform4, then from its next call."""
    props = torch.cuda.get_device_properties(0)
    stride = props.multi_processor_count * (props.max_threads_per_multi_processor // 256) * 256
    for batch in (stride + 3, 4 * stride + 11):
        like = torch.empty(batch, 1, 1, 1, device="cuda")
        g, ref = _gen("cuda", batch), _gen("cuda", batch)
        boxes, flips = _boxes_flips(0.5, batch=batch, like=like, generator=g)
        want = _boxes(torch.rand(batch, 22, dtype=torch.float64, device="cuda", generator=ref))
        assert torch.equal(boxes, want) and torch.equal(flips, _torch_flips(batch, 0.5, "cuda", ref))
        assert _same_state_after("cuda", g, ref)


@requires_cuda
def test_cuda_cpu_generator_draws_on_the_cpu():
    """A CPU generator draws on the CPU and the draws are copied (torchaug's rule for every draw)."""
    like = torch.empty(9, 3, 4, 4, device="cuda")
    g, ref = _gen("cpu", 8), _gen("cpu", 8)
    got = _boxes(batch=9, like=like, generator=g)
    want = _boxes(torch.rand(9, 22, dtype=torch.float64, generator=ref).cuda())
    assert got.is_cuda and torch.equal(got, want) and _same_state_after("cpu", g, ref)
    boxes, flips = _boxes_flips(0.5, batch=9, like=like, generator=g)
    want = _boxes(torch.rand(9, 22, dtype=torch.float64, generator=ref).cuda())
    want_flips = _torch_flips(9, 0.5, "cpu", ref).cuda()
    assert flips.is_cuda and torch.equal(boxes, want) and torch.equal(flips, want_flips) and _same_state_after("cpu", g, ref)


@requires_cuda
def test_cuda_kernel_draws_in_a_graph():
    """Captured in a CUDA graph, the kernel reads the generator's seed and offset at each replay:
    after the same seed, a replay gives the boxes of torch.rand's numbers, and a second replay new ones."""
    like = torch.empty(40, 3, 4, 4, device="cuda")
    graph = torchaug.graphed(lambda x: _boxes(batch=40, like=x), like)
    torch.cuda.manual_seed(12)
    first = graph.replay().clone()
    second = graph.replay().clone()
    torch.cuda.manual_seed(12)
    want = _boxes(torch.rand(40, 22, dtype=torch.float64, device="cuda"))
    assert torch.equal(first, want)
    assert not torch.equal(first, second)
    graph = torchaug.graphed(lambda x: _boxes_flips(0.5, batch=300, like=x), like)
    torch.cuda.manual_seed(13)
    first = [t.clone() for t in graph.replay()]
    second = [t.clone() for t in graph.replay()]
    torch.cuda.manual_seed(13)
    want = _boxes(torch.rand(300, 22, dtype=torch.float64, device="cuda"))
    assert torch.equal(first[0], want) and torch.equal(first[1], _torch_flips(300, 0.5, "cuda"))
    assert not torch.equal(first[1], second[1])
    second_want = _boxes(torch.rand(300, 22, dtype=torch.float64, device="cuda"))
    assert torch.equal(second[0], second_want) and torch.equal(second[1], _torch_flips(300, 0.5, "cuda"))


@requires_cuda
@pytest.mark.parametrize("op", ["boxes", "program", "jitter"])
def test_cuda_drawing_kernels_write_after_the_kernel_before(op):
    """The drawing kernels draw before their dependent-launch wait (csrc/cuda/dependent_launch.cuh)
    but write only after it, because their output may be memory that the kernel before them still
    reads: here a long crop (or resident augment) reads a parameter tensor that is freed while it
    runs, and an output of the op takes the same block of the caching allocator. The crop's (augment's)
    output must be what it is with that tensor kept alive, over several rounds."""
    gen = torch.Generator().manual_seed(17)
    b = 256
    if op == "boxes":
        x = torch.randint(0, 256, (b, 3, 375, 500), dtype=torch.uint8, generator=gen).cuda()
        params = _boxes(torch.rand(b, 22, dtype=torch.float64, generator=gen).cuda())
        ref = torch.ops.torchaug.resized_crop(x, params, [224, 224])
        run = lambda p: torch.ops.torchaug.resized_crop(x, p, [224, 224])  # noqa: E731
        draw = lambda: (_boxes(batch=b, like=x),)  # noqa: E731
    elif op == "jitter":
        x = torch.randint(0, 256, (b, 3, 224, 224), dtype=torch.uint8, generator=gen).cuda()
        codes, params = _jitter(torch.rand(b, 8, dtype=torch.float64, generator=gen).cuda())
        ref = torch.ops.torchaug.color_program(x, codes, params)
        run = lambda p: torch.ops.torchaug.color_program(x, codes, p)  # noqa: E731
        draw = lambda: _jitter(batch=b, like=x)  # noqa: E731
    else:
        x = torch.randint(0, 256, (b, 3, 224, 224), dtype=torch.uint8, generator=gen).cuda()
        t = _space("cuda")
        _, params, mags = _program(t, 2, torch.rand(b, 4, dtype=torch.float64, generator=gen).cuda())
        ref = torch.ops.torchaug.augment(x, params, mags)
        run = lambda p: torch.ops.torchaug.augment(x, p, mags)  # noqa: E731
        draw = lambda: _program(t, 2, batch=b)  # noqa: E731 (choice, ops and magnitudes)
    reused = 0
    for _ in range(5):
        p = params.clone()
        torch.cuda.synchronize()
        ptr = p.data_ptr()
        out = run(p)
        del p  # back to the allocator while the kernel still reads it
        drawn = draw()
        reused += any(d.data_ptr() == ptr for d in drawn)
        torch.cuda.synchronize()
        assert torch.equal(out, ref)
        del drawn
    assert reused > 0, "no output of the op took the freed block: the test checks nothing"
