"""Transforms: per-sample parameter distributions (seeded, with statistical bounds), p=0/p=1,
replay, generators, torchvision parity for the drawn parameters, Compose fusion."""
import math
import subprocess
import sys

import pytest
import torch

import torchaug
import torchaug.functional as F
import torchaug.transforms as T
from conftest import assert_close_images, assert_differ_only_at_ties, random_images, requires_cuda, requires_torchvision, torchvision

if torchvision is not None:
    from torchvision.transforms import InterpolationMode as IM
    from torchvision.transforms import v2 as TV
    from torchvision.transforms.v2 import functional as TF


# ---- RandomResizedCrop ------------------------------------------------------------------------

def test_random_resized_crop_boxes_follow_torchvision_rules(device):
    t = T.RandomResizedCrop(32, scale=(0.1, 0.9), ratio=(0.5, 2.0), generator=torch.Generator(device).manual_seed(0))
    x = random_images(4000, 1, 60, 80, torch.uint8, device)
    boxes = t.make_params(x)["boxes"].cpu()
    top, left, h, w = boxes.unbind(1)
    assert ((top >= 0) & (left >= 0) & (top + h <= 60) & (left + w <= 80) & (h > 0) & (w > 0)).all()
    area = (h * w).double() / (60 * 80)
    # rounding of w and h moves the area a little outside [0.1, 0.9]
    assert area.min() > 0.08 and area.max() < 0.95
    ratio = w.double() / h.double()
    assert ratio.min() > 0.5 * 0.8 and ratio.max() < 2.0 * 1.25
    # a different box per sample
    assert len({tuple(b) for b in boxes.tolist()}) > 3900


@requires_torchvision
@pytest.mark.parametrize("scale", [(0.08, 1.0), (0.0, 1.0)])  # torchvision's test grid has both
def test_random_resized_crop_distribution_matches_torchvision(scale):
    """Seeded: the mean and quartiles of the crop area, aspect ratio and position agree with
    torchvision's get_params over 4000 draws (bounds ~5 standard errors)."""
    torch.manual_seed(0)
    n, hh, ww = 4000, 375, 500
    ref = torch.tensor([TV.RandomResizedCrop.get_params(torch.empty(1, hh, ww), list(scale), [3 / 4, 4 / 3]) for _ in range(n)]).double()
    t = T.RandomResizedCrop(224, scale=scale, generator=torch.Generator().manual_seed(1))
    ours = t.make_params(torch.empty(n, 1, hh, ww, dtype=torch.uint8))["boxes"].double()

    def stats(b):
        top, left, h, w = b.unbind(1)
        area = h * w / (hh * ww)
        cy, cx = (top + h / 2) / hh, (left + w / 2) / ww
        return torch.stack([area, torch.log(w / h), cy, cx], 1)

    a, r = stats(ours), stats(ref)
    for k, name in enumerate(["area", "log aspect", "centre y", "centre x"]):
        se = math.sqrt(a[:, k].var().item() / n + r[:, k].var().item() / n)
        assert abs(a[:, k].mean() - r[:, k].mean()) < 5 * se + 1e-3, name
        for q in (0.25, 0.5, 0.75):
            assert abs(a[:, k].quantile(q) - r[:, k].quantile(q)) < 0.05 * (r[:, k].quantile(0.9) - r[:, k].quantile(0.1)) + 0.01, f"{name} q{q}"


def test_random_resized_crop_fallback_is_central_crop():
    # an impossible ratio range makes every attempt fail: torchvision's central-crop fallback
    t = T.RandomResizedCrop(8, scale=(0.99, 1.0), ratio=(4.0, 5.0))
    boxes = t.make_params(torch.empty(3, 1, 40, 50))["boxes"]
    # in_ratio 1.25 < 4: w = 50, h = round(50 / 4) = 12 (half to even), top = (40 - 12) // 2
    assert boxes.tolist() == [[14, 0, 12, 50]] * 3


@requires_torchvision
def test_random_resized_crop_output_matches_torchvision_per_sample(device):
    x = random_images(6, 3, 45, 61, torch.uint8, device)
    t = T.RandomResizedCrop([20, 24])
    out, params = t(x, return_params=True)
    for i, (top, left, h, w) in enumerate(params["boxes"].tolist()):
        ref = TF.resized_crop(x[i].cpu(), top, left, h, w, [20, 24], antialias=True)
        assert_close_images(out[i].cpu(), ref, torch.uint8, f"sample {i}")


def test_random_resized_crop_on_ragged_list(device):
    imgs = [random_images(1, 3, h, w, torch.uint8, device)[0] for h, w in ((30, 40), (50, 20), (64, 64))]
    t = T.RandomResizedCrop(16)
    out, params = t(imgs, return_params=True)
    assert out.shape == (3, 3, 16, 16)
    for i, img in enumerate(imgs):
        assert torch.equal(out[i], t(img, params={"boxes": params["boxes"][i:i + 1]}))
        top, left, h, w = params["boxes"][i].tolist()
        assert top + h <= img.shape[1] and left + w <= img.shape[2]


# ---- replay, generators -----------------------------------------------------------------------

def _all_random():
    return [
        T.RandomResizedCrop(16),
        T.RandomHorizontalFlip(),
        T.RandomVerticalFlip(),
        T.RandomAffine(30, translate=(0.1, 0.2), scale=(0.8, 1.2), shear=(-10, 10, -5, 5)),
        T.RandomCrop(20, padding=4),
        T.RandomCrop(20, padding=[2, 3], padding_mode="reflect"),
    ]


@pytest.mark.parametrize("index", range(6))
def test_replay_and_generator(device, index):
    x = random_images(8, 3, 24, 28, torch.uint8, device)
    t = _all_random()[index]
    out, params = t(x, return_params=True)
    assert torch.equal(t(x, params=params), out)
    # seeded generators: same draws, same output; another seed: different output
    t.generator = torch.Generator().manual_seed(123)
    a = t(x)
    t.generator = torch.Generator().manual_seed(123)
    assert torch.equal(t(x), a)
    t.generator = torch.Generator().manual_seed(124)
    assert not torch.equal(t(x), a)


@requires_cuda
@pytest.mark.parametrize("index", range(6))
def test_cpu_generator_gives_same_params_on_cpu_and_cuda(index):
    x = random_images(8, 3, 24, 28, torch.uint8)
    t = _all_random()[index]
    t.generator = torch.Generator().manual_seed(5)
    out_cpu, p_cpu = t(x, return_params=True)
    t.generator = torch.Generator().manual_seed(5)
    out_cuda, p_cuda = t(x.cuda(), return_params=True)
    for k in p_cpu:
        a, b = p_cpu[k], p_cuda[k]
        assert (torch.equal(a, b.cpu()) if isinstance(a, torch.Tensor) else a == b), k
    diff = (out_cpu.int() - out_cuda.cpu().int()).abs()
    assert diff.max() <= 1 or (index == 3 and (diff > 0).float().mean() < 1e-3)


# ---- flips --------------------------------------------------------------------------------

@pytest.mark.parametrize("cls,dim", [(T.RandomHorizontalFlip, -1), (T.RandomVerticalFlip, -2)])
def test_random_flip_p0_p1_and_rate(device, cls, dim):
    x = random_images(16, 3, 5, 7, torch.uint8, device)
    assert torch.equal(cls(p=0.0)(x), x)
    assert torch.equal(cls(p=1.0)(x), x.flip(dim))
    t = cls(p=0.3, generator=torch.Generator().manual_seed(0))
    flags = t.make_params(torch.empty(20000, 1, 1, 1))["flip"].float()
    assert abs(flags.mean().item() - 0.3) < 5 * math.sqrt(0.3 * 0.7 / 20000)
    out, params = t(x, return_params=True)
    for i in range(16):
        assert torch.equal(out[i], x[i].flip(dim) if params["flip"][i] else x[i])
    with pytest.raises(ValueError, match="p must be a probability in"):
        cls(p=1.5)


# ---- RandomAffine -------------------------------------------------------------------------

def test_random_affine_parameter_ranges(device):
    t = T.RandomAffine(20, translate=(0.1, 0.25), scale=(0.7, 1.3), shear=(-5, 5, -8, 8), generator=torch.Generator().manual_seed(0))
    p = t.make_params(random_images(4000, 1, 40, 64, torch.uint8, device))
    a, tr, s, sh = p["angle"].cpu(), p["translate"].cpu(), p["scale"].cpu(), p["shear"].cpu()
    assert a.min() >= -20 and a.max() <= 20 and abs(a.mean()) < 0.6
    assert tr[:, 0].abs().max() <= round(0.1 * 64) and tr[:, 1].abs().max() <= 10 and torch.equal(tr, tr.round())
    assert s.min() >= 0.7 and s.max() <= 1.3 and abs(s.mean() - 1.0) < 0.01
    assert sh[:, 0].abs().max() <= 5 and sh[:, 1].abs().max() <= 8 and sh[:, 1].std() > 4
    assert len(set(a.tolist())) == 4000


@requires_torchvision
@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
def test_random_affine_matches_torchvision_per_sample(device, interpolation):
    x = random_images(6, 3, 31, 43, torch.uint8, device)
    mode = IM.NEAREST if interpolation == "nearest" else IM.BILINEAR
    t = T.RandomAffine(45, translate=(0.1, 0.1), scale=(0.8, 1.2), shear=10, interpolation=interpolation, fill=[5, 100, 200])
    out, p = t(x, return_params=True)
    for i in range(6):
        ref = TF.affine(x[i].cpu(), float(p["angle"][i]), [float(v) for v in p["translate"][i]], float(p["scale"][i]),
                        [float(v) for v in p["shear"][i]], interpolation=mode, fill=[5, 100, 200])
        diff = (out[i].cpu().int() - ref.int()).abs()
        if interpolation == "nearest":
            assert (diff > 0).any(0).float().mean() < 2e-3
        else:
            assert diff.max() <= 1


# ---- deterministic transforms: torchvision parity -------------------------------------------

@requires_torchvision
def test_deterministic_transforms_match_torchvision(device):
    x = random_images(3, 3, 29, 37, torch.uint8, device)
    xc = x.cpu()
    pairs = [
        (T.Resize(20), TV.Resize(20)),
        (T.Resize([15, 50], interpolation="bicubic"), None),
        (T.Resize(20, max_size=24), TV.Resize(20, max_size=24)),
        (T.CenterCrop(16), TV.CenterCrop(16)),
        (T.CenterCrop([40, 21]), TV.CenterCrop([40, 21])),
        (T.Pad([1, 2, 3, 4], fill=9), TV.Pad([1, 2, 3, 4], fill=9)),
        (T.Pad(3, padding_mode="symmetric"), TV.Pad(3, padding_mode="symmetric")),
        (T.Pad([2, 5], padding_mode="edge"), TV.Pad([2, 5], padding_mode="edge")),
        (T.Pad(2, padding_mode="reflect"), TV.Pad(2, padding_mode="reflect")),
    ]
    for ours, theirs in pairs:
        out = ours(x).cpu()
        if theirs is None:  # uint8 bicubic: torchvision's CUDA path (see test_geometry)
            ref = TF.resize(xc.float(), [15, 50], interpolation=IM.BICUBIC).clamp(0, 255).round().to(torch.uint8)
        else:
            ref = theirs(xc)
        assert_close_images(out, ref, torch.uint8, repr(ours))
    xf = x.float() / 255
    out = T.Normalize([0.4, 0.5, 0.6], [0.2, 0.3, 0.4])(xf)
    torch.testing.assert_close(out.cpu(), TV.Normalize([0.4, 0.5, 0.6], [0.2, 0.3, 0.4])(xf.cpu()))
    out = T.ToDtype(torch.float32, scale=True)(x)
    assert torch.equal(out.cpu(), TV.ToDtype(torch.float32, scale=True)(xc))
    assert torch.equal(T.ToDtype(torch.uint8, scale=True)(out).cpu(), TV.ToDtype(torch.uint8, scale=True)(out.cpu()))


@requires_torchvision
def test_random_crop_matches_torchvision_per_sample(device):
    x = random_images(5, 3, 20, 24, torch.uint8, device)
    # zero padding (the default fill, fill 0 per channel, no padding in any mode) is a crop box that
    # reaches outside the image (one resized_crop); the other fills and modes pad, then crop
    for kwargs, is_crop in (({"padding": 4, "fill": 7}, False), ({"padding": [1, 2], "padding_mode": "reflect"}, False),
                            ({"pad_if_needed": True}, True), ({"padding": 4}, True), ({"padding": [1, 2, 3, 4], "fill": [0, 0, 0]}, True),
                            ({"padding_mode": "edge"}, True), ({"pad_if_needed": True, "padding": [0, 5], "fill": 0.0}, True),
                            ({"padding": 3, "fill": None}, True)):
        size = [26, 30] if kwargs.get("pad_if_needed") else [18, 20]
        t = T.RandomCrop(size, **kwargs)
        fill = kwargs.get("fill", 0) or 0
        assert t._is_crop() == is_crop, kwargs
        for images in (x, x.float() / 255):
            out, p = t(images, return_params=True)
            left, top, right, bottom = p["padding"]
            for i in range(5):
                padded = TF.pad(images[i].cpu(), [left, top, right, bottom], fill=fill,
                                padding_mode=kwargs.get("padding_mode", "constant"))
                ref = TF.crop(padded, int(p["top"][i]), int(p["left"][i]), *size)
                assert torch.equal(out[i].cpu(), ref), (kwargs, i)


def test_single_image_input(device):
    x = random_images(1, 3, 20, 30, torch.uint8, device)[0]
    for t in _all_random() + [T.Resize(10), T.CenterCrop(8), T.Normalize([0.5] * 3, [0.5] * 3)]:
        out = t(x)
        assert out.dim() == 3 and out.shape[0] == 3


# ---- Compose ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_compose_fusion_equals_unfused(device, dtype):
    x = random_images(16, 3, 50, 70, torch.uint8, device)
    pipe = T.Compose([T.RandomResizedCrop(24), T.RandomHorizontalFlip(), T.ToDtype(dtype, scale=True),
                      T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    assert pipe._fusable_run(0) == 4
    out, params = pipe(x, return_params=True)
    assert out.dtype == dtype and out.shape == (16, 3, 24, 24)
    pipe.fuse = False
    unfused = pipe(x, params=params)
    if dtype == torch.float32:
        assert torch.equal(unfused, out)
    else:
        # the fused pass rounds to bfloat16 once; the unfused chain after each bfloat16 stage
        torch.testing.assert_close(unfused.float(), out.float(), atol=0.04, rtol=0.016)
    # partial runs fuse too, and plain callables pass through
    pipe2 = T.Compose([T.CenterCrop(20), T.Normalize([0.5] * 3, [0.25] * 3), lambda t: t * 2])
    assert pipe2._fusable_run(0) == 2
    ref = F.normalize(F.center_crop(x, 20), [0.5] * 3, [0.25] * 3) * 2
    assert torch.equal(pipe2(x), ref)


def test_compose_fuses_a_crop_of_a_list(device):
    """A list of images of different sizes through a crop-like transform, a flip, ToDtype and
    Normalize: one resized_crop_ragged call that flips and normalizes, the bytes of the transforms
    run one by one; a run headed by a flip keeps the list and does not fuse."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Ops(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(func.name())
            return func(*args, **(kwargs or {}))

    images = [random_images(1, 3, h, w, torch.uint8, device)[0] for h, w in ((40, 52), (33, 30), (61, 47), (40, 52))]
    norm = T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    for crop in (T.RandomResizedCrop(24), T.CenterCrop(20), T.Resize([18, 22])):
        pipe = T.Compose([crop, T.RandomHorizontalFlip(), T.ToDtype(torch.float32, scale=True), norm])
        with Ops() as ops:
            out, params = pipe(images, return_params=True)
        launched = [n for n in ops.names if n.startswith("torchaug::") and not n.startswith("torchaug::_")]
        assert launched == ["torchaug::resized_crop_ragged"], (type(crop).__name__, launched)
        assert out.shape == (4, 3) + tuple(crop.size) and out.dtype == torch.float32
        pipe.fuse = False
        assert torch.equal(pipe(images, params=params), out)
    # boxes follow the fused run as they follow the transforms one by one
    boxes = [T.BoundingBoxes(torch.tensor([[1.0, 2, 20, 16]], device=device), "XYXY", tuple(im.shape[1:])) for im in images]
    pipe = T.Compose([T.RandomResizedCrop(24), T.RandomHorizontalFlip(), T.ToDtype(torch.float32, scale=True), norm])
    (out, fused_boxes), params = pipe(images, boxes, return_params=True)
    pipe.fuse = False
    plain, plain_boxes = pipe(images, boxes, params=params)
    assert torch.equal(plain, out)
    for a, b in zip(fused_boxes, plain_boxes):
        assert type(a) is T.BoundingBoxes and a.canvas_size == (24, 24) and torch.equal(a.data, b.data)
    flips = T.Compose([T.RandomHorizontalFlip(), T.ToDtype(torch.float32, scale=True), norm])
    out = flips(images)
    assert isinstance(out, list) and [o.shape[1:] for o in out] == [im.shape[1:] for im in images]


def test_compose_fuses_zero_padded_random_crop(device):
    # CIFAR's chain: RandomCrop(32, padding=4) + flip + ToDtype + Normalize is one resized_crop call,
    # with the bytes of the transforms run one by one; a padding of another value does not fuse
    x = random_images(8, 3, 32, 32, torch.uint8, device)
    for crop in (T.RandomCrop(32, padding=4), T.RandomCrop(24), T.RandomCrop(36, pad_if_needed=True)):
        pipe = T.Compose([crop, T.RandomHorizontalFlip(), T.ToDtype(torch.float32, scale=True),
                          T.Normalize([0.49, 0.48, 0.45], [0.25, 0.24, 0.26])])
        assert pipe._fusable_run(0) == 4
        out, params = pipe(x, return_params=True)
        pipe.fuse = False
        assert torch.equal(pipe(x, params=params), out)
        single = x[3]
        out1, params1 = T.Compose(pipe.transforms)(single, return_params=True)
        assert out1.shape == (3,) + tuple(out.shape[2:])
    for crop in (T.RandomCrop(32, padding=4, fill=1), T.RandomCrop(32, padding=4, padding_mode="reflect")):
        assert T.Compose([crop, T.RandomHorizontalFlip()])._fusable_run(0) == 1
    crop = T.RandomCrop(32, padding=4)
    crop.fill = 3  # read on each call
    zero = torch.zeros(8, dtype=torch.int64, device=device)
    assert not crop._is_crop() and crop(x, params={"top": zero, "left": zero, "padding": [4, 4, 4, 4]})[:, :, :4].eq(3).all()
    # the drawn windows ("boxes") are the crop's boxes while top and left are their columns: offsets
    # changed in place are read through them, offsets replaced by other tensors are read instead
    crop = T.RandomCrop(32, padding=4)
    _, p = crop(x, return_params=True)
    assert p["top"]._base is p["boxes"]
    p["top"].fill_(8)
    p["left"].fill_(0)
    out = crop(x, params=p)
    assert torch.equal(out[:, :, :24, 4:], x[:, :, 4:28, :28]) and out[:, :, :, :4].eq(0).all()
    out = crop(x, params=dict(p, top=zero.clone(), left=zero + 6))
    assert torch.equal(out[:, :, 4:, :30], x[:, :, :28, 2:]) and out[:, :, :4].eq(0).all() and out[:, :, :, 30:].eq(0).all()


def test_compose_params_length_checked():
    with pytest.raises(ValueError, match="params must have one entry per transform"):
        T.Compose([T.RandomHorizontalFlip()])(torch.zeros(1, 3, 4, 4), params=[None, None])


def test_constructor_errors():
    with pytest.raises(ValueError, match="RandomResizedCrop: scale must be"):
        T.RandomResizedCrop(10, scale=(0.9, 0.1))
    with pytest.raises(ValueError, match="interpolation must be one of"):
        T.RandomResizedCrop(10, interpolation="lanczos")
    with pytest.raises(ValueError, match="RandomAffine: translate must be two fractions"):
        T.RandomAffine(10, translate=(2, 0))
    with pytest.raises(ValueError, match="Normalize: std evaluated to zero"):
        T.Normalize([0.5], [0.0])
    with pytest.raises(ValueError, match="padding_mode must be"):
        T.Pad(2, padding_mode="wrap")
    with pytest.raises(TypeError, match="images must be a"):
        T.RandomHorizontalFlip()(torch.zeros(4, 4))


def test_transform_compiles_fullgraph(device):
    """The functional path of a transform (parameters drawn outside) compiles without graph breaks."""
    x = random_images(4, 3, 30, 40, torch.uint8, device)
    t = T.RandomResizedCrop(16)
    params = t.make_params(x)

    def run(img, boxes):
        return F.resized_crop_boxes(img, boxes, [16, 16], validate=False, mean=[0.5] * 3, std=[0.5] * 3)

    compiled = torch.compile(run, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(x, params["boxes"]), run(x, params["boxes"]))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float16])
def test_compose_fuses_todtype_normalize_after_any_transform(device, dtype):
    """ToDtype(scale=True) + Normalize after a non-crop transform runs as one normalize pass with
    the result of the two transforms run one by one."""
    x = random_images(4, 3, 10, 12, dtype, device)
    steps = [T.RandomInvert(p=0.5, generator=torch.Generator().manual_seed(1)), T.ToDtype(torch.float32, scale=True),
             T.Normalize([0.4, 0.5, 0.6], [0.2, 0.25, 0.3])]
    fused, p = T.Compose(steps)(x, return_params=True)
    plain = T.Compose(steps, fuse=False)(x, params=p)
    assert fused.dtype == torch.float32
    torch.testing.assert_close(fused, plain, atol=1e-6, rtol=1e-6)


_TORCH = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2])


@pytest.mark.parametrize("with_generator", [
    # one graph: inductor before torch 2.13 may run random ops that do not depend on each other out of
    # program order (the policy's draws before the crop's and the flip's; README says so)
    pytest.param(False, marks=pytest.mark.xfail(_TORCH < (2, 13), strict=True, reason="torch < 2.13 reorders random ops")),
    True])  # graph breaks between the transforms: eager's order on every version
def test_compiled_compose_draws_as_eager(device, with_generator):
    """Same seed, same output, compiled or not. The uniforms RandomResizedCrop's and the policies' ops
    draw themselves are drawn by torch.rand under torch.compile: a random op the compiler keeps in
    program order (hidden inside the op, the crop's draws moved after the flip's). Inductor draws
    torch.rand's numbers with its own generator unless fallback_random is set: PyTorch's behaviour,
    set here as the README says. A transform with generator= compiles with graph breaks: dynamo does
    not trace torch.Generator objects (fullgraph=True refuses it, pinned here)."""
    import torch._inductor.config as inductor_config
    x = random_images(4, 3, 32, 32, torch.uint8, device)

    def make():
        g = (lambda s: torch.Generator(device).manual_seed(s)) if with_generator else (lambda s: None)
        return T.Compose([T.RandomResizedCrop(16, generator=g(1)), T.RandomHorizontalFlip(generator=g(2)),
                          T.RandAugment(generator=g(3))])

    torch.manual_seed(0)
    eager = make()(x)
    with inductor_config.patch(fallback_random=True):
        torch._dynamo.reset()
        if with_generator:
            with pytest.raises(torch._dynamo.exc.Unsupported):
                torch.compile(make(), fullgraph=True)(x)
            torch._dynamo.reset()
        compiled = torch.compile(make(), fullgraph=not with_generator)
        torch.manual_seed(0)
        assert torch.equal(compiled(x), eager)


def test_compiled_cifar_chain_draws_as_eager(device):
    """CIFAR's fused chain (RandomCrop's windows drawn as crop boxes, used as they are) traces as one
    graph and gives eager's output for the same seed."""
    x = random_images(4, 3, 32, 32, torch.uint8, device)

    def make():
        return T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToDtype(torch.float32, scale=True),
                          T.Normalize([0.49, 0.48, 0.45], [0.25, 0.24, 0.26])])

    torch.manual_seed(0)
    eager = make()(x)
    torch._dynamo.reset()
    compiled = torch.compile(make(), fullgraph=True, backend="aot_eager")
    torch.manual_seed(0)
    assert torch.equal(compiled(x), eager)


@requires_torchvision
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("size", [4, [5, 3], [9, 11], [1, 1]])
def test_five_and_ten_crop_match_torchvision(device, size):
    import torchvision.transforms.v2.functional as TF
    x = random_images(2, 3, 9, 11, torch.uint8, device, channels_last=True)
    for single in (False, True):
        img = x[0] if single else x
        assert all(torch.equal(a, b) for a, b in zip(T.FiveCrop(size)(img), TF.five_crop(img, size)))
        for vertical in (False, True):
            got, want = T.TenCrop(size, vertical_flip=vertical)(img), TF.ten_crop(img, size, vertical_flip=vertical)
            assert len(got) == 10 and all(torch.equal(a, b) for a, b in zip(got, want))
            scripted = torch.jit.script(T.TenCrop(size, vertical_flip=vertical))(img)
            assert all(torch.equal(a, b) for a, b in zip(scripted, want))


@requires_torchvision
def test_resized_crop_with_one_size_resizes_the_smaller_edge(device):
    x = random_images(3, 3, 40, 50, torch.uint8, device)
    for h, w, size in ((10, 12, 8), (12, 10, [8]), (9, 27, 5)):
        out = F.resized_crop(x, 1, 2, h, w, size)
        ref = torch.stack([TF.resized_crop(x[i].cpu(), 1, 2, h, w, size) for i in range(3)])
        assert_close_images(out.cpu(), ref, torch.uint8, f"{h}x{w} -> {size}")
    with pytest.raises(ValueError, match="size must be \\[height, width\\] when height or width differ per sample"):
        F.resized_crop(x, 1, 2, torch.tensor([10, 12, 14], device=device), 12, 8)


def test_five_crop_errors_and_targets(device):
    x = random_images(2, 3, 9, 11, torch.uint8, device)
    with pytest.raises(ValueError, match=r"five_crop: size must be positive and at most the images' size \[9, 11\], got \[10, 4\]"):
        T.FiveCrop([10, 4])(x)
    with pytest.raises(ValueError, match="FiveCrop: size must be positive"):
        T.FiveCrop(0)
    boxes = T.BoundingBoxes(torch.tensor([[1.0, 2.0, 5.0, 6.0]]), "XYXY", (9, 11))
    with pytest.warns(UserWarning, match=r"FiveCrop\(\) passes its targets through unchanged"):
        crops, b = T.FiveCrop(4)(x[0], boxes)
    assert len(crops) == 5 and b is boxes


# ---- ElasticTransform ---------------------------------------------------------------------------

@requires_torchvision
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.float16])
@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
@pytest.mark.parametrize("fill", [None, 0, 7, (10, 200, 30)])
def test_elastic_matches_torchvision_per_sample(device, dtype, interpolation, fill):
    channels_last = dtype == torch.float32
    x = random_images(3, 3, 21, 34, dtype, device, channels_last=channels_last)
    if dtype != torch.uint8 and fill is not None:
        fill = tuple(v / 255 for v in fill) if isinstance(fill, tuple) else fill / 255
    t = T.ElasticTransform(alpha=[30.0, 60.0], sigma=[3.0, 4.0], interpolation=interpolation, fill=fill)
    out, p = t(x, return_params=True)
    assert out.shape == x.shape and out.dtype == dtype and out.is_contiguous(memory_format=torch.channels_last) == channels_last
    mode = IM.NEAREST if interpolation == "nearest" else IM.BILINEAR
    for i in range(3):
        ref = TF.elastic(x[i].cpu(), p["displacement"][i:i + 1].cpu(), interpolation=mode,
                         fill=list(fill) if isinstance(fill, tuple) else fill)
        assert_close_images(out[i].cpu(), ref, dtype, f"sample {i}")
    assert torch.equal(t(x, params=p), out)
    gray = F.elastic(x[:, :1], p["displacement"], interpolation, fill if not isinstance(fill, tuple) else fill[0])
    assert gray.shape == (3, 1, 21, 34)


@requires_torchvision
def test_elastic_displacement_is_drawn_as_torchvision_draws_it():
    torch.manual_seed(0)
    tv = torch.cat([TV.ElasticTransform(alpha=50.0, sigma=5.0).make_params([torch.zeros(3, 48, 64)])["displacement"]
                    for _ in range(64)])
    ours = T.ElasticTransform(generator=torch.Generator().manual_seed(1)).make_params(torch.zeros(64, 3, 48, 64))["displacement"]
    assert ours.shape == tv.shape == (64, 48, 64, 2)
    for axis in (0, 1):
        a, b = ours[..., axis].abs().mean().item(), tv[..., axis].abs().mean().item()
        assert abs(a - b) < 0.1 * b, (axis, a, b)
    with pytest.raises(ValueError, match="ElasticTransform: sigma must be at most 8"):
        T.ElasticTransform(sigma=9.0)
    with pytest.raises(ValueError, match=r"elastic: displacement must have shape \(B, H, W, 2\) or \(1, H, W, 2\) with B=2"):
        F.elastic(torch.zeros(2, 3, 8, 8), torch.zeros(1, 8, 7, 2))


# ---- RandomPerspective ----------------------------------------------------------------------------

@requires_torchvision
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
@pytest.mark.parametrize("fill", [None, 0, 7, (10, 200, 30)])
@pytest.mark.parametrize("channels", [1, 3])
def test_perspective_matches_torchvision_per_sample(device, dtype, interpolation, fill, channels):
    from torchvision import tv_tensors
    if channels == 1 and isinstance(fill, tuple):
        fill = fill[0]
    x = random_images(4, channels, 23, 36, dtype, device, channels_last=dtype == torch.float32 and channels == 3)
    if dtype != torch.uint8 and fill is not None:
        fill = tuple(v / 255 for v in fill) if isinstance(fill, tuple) else fill / 255
    t = T.RandomPerspective(0.6, p=0.5, interpolation=interpolation, fill=fill, generator=torch.Generator().manual_seed(0))
    gen = torch.Generator().manual_seed(9)
    xy = torch.rand(4, 3, 2, generator=gen) * torch.tensor([30.0, 18.0])
    boxes = [T.BoundingBoxes(torch.cat([xy[i], xy[i] + 4], 1).to(device), "XYXY", (23, 36)) for i in range(4)]
    masks = [tv_tensors.Mask(torch.randint(0, 3, (3, 23, 36), generator=gen, dtype=torch.uint8).to(device)) for _ in range(4)]
    (out, ob, om), p = t(x, boxes, masks, return_params=True)
    mode = IM.NEAREST if interpolation == "nearest" else IM.BILINEAR
    assert 0 < int(p["applies"].sum()) < 4  # both branches are checked (seeded)
    for i in range(4):
        if not p["applies"][i]:
            assert torch.equal(out[i], x[i]) and torch.equal(om[i], masks[i])
            continue
        c = p["coefficients"][i].tolist()
        ref = TF.perspective(x[i], None, None, interpolation=mode, fill=list(fill) if isinstance(fill, tuple) else fill,
                             coefficients=c)
        if interpolation == "nearest":
            assert_differ_only_at_ties(out[i], ref, c)
        else:
            assert_close_images(out[i], ref, dtype, f"sample {i}")
        tb = TF.perspective(tv_tensors.BoundingBoxes(boxes[i].data, format="XYXY", canvas_size=(23, 36)), None, None,
                            coefficients=c)
        torch.testing.assert_close(ob[i].data, tb.as_subclass(torch.Tensor), atol=1e-4, rtol=1e-5)
        mask_fill = fill if isinstance(fill, (int, float)) else 0
        tm = TF.perspective(masks[i], None, None, interpolation=IM.NEAREST, fill=mask_fill, coefficients=c)
        assert (om[i] != tm).float().mean() < 0.01, f"sample {i}"
    assert torch.equal(t(x, params=p), out)


def _perspective_corners(u, h, w, distortion):
    """torchvision's RandomPerspective corners (top-left, top-right, bottom-right, bottom-left x, y)
    from draws u (B, 9): integers lo + floor(u * n) in its ranges."""
    bh, bw = int(distortion * (h // 2)) + 1, int(distortion * (w // 2)) + 1
    lo = torch.tensor([0, 0, w - bw, 0, w - bw, h - bh, 0, h - bh], dtype=torch.float64)
    n = torch.tensor([bw, bh] * 4, dtype=torch.float64)
    return lo + torch.minimum(torch.floor(u[:, 1:] * n), n - 1)


@pytest.mark.parametrize("size", [(30, 44), (224, 224), (7, 5), (500, 375)])
def test_perspective_params_are_torchvisions_of_the_draws(device, size):
    # the op's corners and coefficients against torchvision's ranges and its least-squares solve
    # (F.perspective_coefficients, the same float64 steps) of the same corners
    h, w = size
    u = torch.rand(64, 9, generator=torch.Generator().manual_seed(h), dtype=torch.float64)
    u[0, 1:] = 0.0
    u[1, 1:] = 1.0 - 2.0 ** -53  # the ranges' ends
    coefficients, applies = torch.ops.torchaug._perspective_params(u.to(device), h, w, 0.5, 0.7)
    assert torch.equal(applies.cpu(), u[:, 0] < 0.7)
    end = _perspective_corners(u, h, w, 0.5)
    start = [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]
    want = torch.cat([F.perspective_coefficients(start, e.view(4, 2).tolist()) for e in end])
    torch.testing.assert_close(coefficients.cpu(), want, rtol=2e-6, atol=1e-9)
    # a 1-pixel-wide image's corners lie on a line: the identity
    c, _ = torch.ops.torchaug._perspective_params(u[:3].to(device), 9, 1, 0.5, 0.7)
    assert c.cpu().tolist() == [[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]] * 3


def test_random_affine_params_are_get_params_of_the_draws(device):
    # the op against torch's float64 steps over the same draws: uniform(lo, hi) = lo + (hi - lo) u,
    # the translations round(uniform(-t W, t W)) (half to even, as torchvision's Python round)
    u = torch.rand(300, 6, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    sizes = torch.randint(1, 700, (300, 2), generator=torch.Generator().manual_seed(3))
    sizes[:2] = 10
    u[0, 1:3] = 0.75  # +-0.5 pixels: rounds to 0
    u[1, 1:3] = 0.25
    got = torch.ops.torchaug._random_affine_params(u.to(device), sizes.to(device), 0, 0, [-30.0, 45.0], [0.1, 0.25],
                                                   [0.7, 1.3], [-10.0, 5.0, -3.0, 8.0]).cpu()

    def uniform(lo, hi, x):
        return lo + (hi - lo) * x

    dx, dy = 0.1 * sizes[:, 1].double(), 0.25 * sizes[:, 0].double()
    want = torch.stack([uniform(-30.0, 45.0, u[:, 0]), torch.round(uniform(-dx, dx, u[:, 1])), torch.round(uniform(-dy, dy, u[:, 2])),
                        uniform(0.7, 1.3, u[:, 3]), uniform(-10.0, 5.0, u[:, 4]), uniform(-3.0, 8.0, u[:, 5])], 1)
    assert torch.equal(got, want)
    assert got[0, 1] == 0 and got[1, 1] == 0
    # without translate, scale and shear: no shift, scale 1, no shear; a 2-value shear is x only
    got = torch.ops.torchaug._random_affine_params(u.to(device), None, 20, 30, [-5.0, 5.0], None, None, [-4.0, 4.0]).cpu()
    assert torch.equal(got[:, 0], uniform(-5.0, 5.0, u[:, 0])) and torch.equal(got[:, 4], uniform(-4.0, 4.0, u[:, 4]))
    assert got[:, 1:3].eq(0).all() and got[:, 3].eq(1).all() and got[:, 5].eq(0).all()


@requires_torchvision
def test_perspective_draws_are_torchvisions_and_errors():
    # a seeded RandomPerspective gives, for its draws' coin and corners, what torchvision's
    # RandomPerspective gives for them: its coefficients of (start, end), then its perspective (the
    # warp within 1 LSB: torchaug's positions are float32 steps of its own)
    from torchvision.transforms.v2.functional._geometry import _get_perspective_coeffs
    for seed in range(20):
        x = torch.randint(0, 256, (3, 30 + seed, 44 - seed), dtype=torch.uint8)
        h, w = x.shape[1:]
        u = torch.rand(1, 9, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        end = _perspective_corners(u, h, w, 0.5).view(4, 2).long().tolist()
        c = _get_perspective_coeffs([[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]], end)
        want = TF.perspective(x, None, None, fill=0, coefficients=c) if u[0, 0] < 0.7 else x
        got = T.RandomPerspective(0.5, p=0.7, generator=torch.Generator().manual_seed(seed))(x)
        assert_close_images(got, want, torch.uint8, f"seed {seed}")
    start, end = [[0, 0], [9, 0], [9, 7], [0, 7]], [[1, 2], [8, 0], [9, 6], [0, 5]]
    c = F.perspective_coefficients(start, end)
    assert c.tolist()[0] == _get_perspective_coeffs(start, end)
    x = torch.zeros(2, 3, 8, 10)
    assert torch.equal(F.perspective(x, start, end), F.perspective(x, coefficients=c))
    with pytest.raises(ValueError, match=r"perspective: coefficients must have shape \(8,\), \(1, 8\) or \(B, 8\) with B=2"):
        F.perspective(x, coefficients=torch.zeros(3, 8))
    with pytest.raises(ValueError, match="perspective: give coefficients, or startpoints and endpoints"):
        F.perspective(x)
    with pytest.raises(ValueError, match=r"perspective_coefficients: endpoints must be 4 \(x, y\) corners"):
        F.perspective_coefficients(start, end[:3])
    with pytest.raises(ValueError, match=r"RandomPerspective: distortion_scale must be in \[0, 1\]"):
        T.RandomPerspective(1.5)


@requires_torchvision
@pytest.mark.parametrize("fmt", ["XYXY", "XYWH", "CXCYWH"])
def test_elastic_moves_targets_as_torchvision(device, fmt):
    from torchvision import tv_tensors
    g = torch.Generator().manual_seed(3)
    h, w = 30, 41
    x = random_images(3, 3, h, w, torch.uint8, device)
    t = T.ElasticTransform(alpha=[40.0, 60.0], sigma=4.0, fill=5, generator=torch.Generator().manual_seed(4))
    targets = []
    for i in range(3):
        xy = torch.rand(4, 2, generator=g) * torch.tensor([w - 8.0, h - 8.0]) - 1
        wh = torch.rand(4, 2, generator=g) * 8 + 1
        data = {"XYXY": torch.cat([xy, xy + wh], 1), "XYWH": torch.cat([xy, wh], 1), "CXCYWH": torch.cat([xy + wh / 2, wh], 1)}[fmt]
        tg = {"boxes": tv_tensors.BoundingBoxes(data.to(device), format=fmt, canvas_size=(h, w)),
              "masks": tv_tensors.Mask(torch.randint(0, 3, (2, h, w), generator=g, dtype=torch.uint8).to(device))}
        if hasattr(tv_tensors, "KeyPoints"):
            tg["keypoints"] = tv_tensors.KeyPoints((torch.rand(5, 2, generator=g) * torch.tensor([w + 2.0, h + 2.0]) - 1).to(device),
                                                   canvas_size=(h, w))
        targets.append(tg)
    (out, got), p = t(x, targets, return_params=True)
    for i in range(3):
        d = p["displacement"][i:i + 1]
        for key, v in targets[i].items():
            want = TF.elastic(v, d, fill=5 if key == "masks" else None)
            if key == "masks":
                assert torch.equal(got[i][key], want), i
            else:
                assert tuple(got[i][key].canvas_size) == tuple(want.canvas_size)
                torch.testing.assert_close(got[i][key].as_subclass(torch.Tensor), want.as_subclass(torch.Tensor), atol=1e-5, rtol=0)
        # the functional takes one image's targets too
        fb = F.elastic(targets[i]["boxes"], d)
        torch.testing.assert_close(fb.as_subclass(torch.Tensor), got[i]["boxes"].as_subclass(torch.Tensor), atol=1e-6, rtol=0)


def _graph_chain(name):
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    if name == "jitter":
        return T.ColorJitter(0.4, 0.4, 0.4, 0.1)
    if name == "warps":
        return T.Compose([T.RandomAffine(20, (0.1, 0.1), (0.9, 1.1), (-5, 5, -3, 3)), T.RandomPerspective(0.3, p=0.8),
                          T.RandomErasing(0.7)])
    if name == "cifar":
        return T.Compose([T.RandomCrop(60, padding=4), T.RandomHorizontalFlip(), T.ToDtype(torch.float32, scale=True),
                          T.Normalize(mean, std)])
    middle = {"rrc": [], "randaugment": [T.RandAugment(2, 9)], "trivial": [T.TrivialAugmentWide()],
              "auto": [T.AutoAugment()]}[name]
    return T.Compose([T.RandomResizedCrop(48), T.RandomHorizontalFlip(), *middle,
                      T.ToDtype(torch.float32, scale=True), T.Normalize(mean, std)])


@requires_cuda
@pytest.mark.parametrize("name", ["rrc", "randaugment", "trivial", "auto", "jitter", "cifar", "warps"])
def test_a_chain_replays_from_a_cuda_graph_with_fresh_draws(name):
    """Every draw of these chains happens on the GPU from the CUDA generator's graph-safe state, with
    no host synchronisation: the chain captured once in a CUDA graph replays with new crops, flips,
    ops and factors each replay, and after the same seed a replay gives what eager gives."""
    x = torch.randint(0, 256, (32, 3, 60, 80), dtype=torch.uint8, device="cuda")
    chain = _graph_chain(name)
    graph = torchaug.graphed(chain, x)
    torch.cuda.manual_seed(5)
    first = graph(x).clone()
    second = graph(x).clone()
    torch.cuda.manual_seed(5)
    eager = chain(x)
    torch.testing.assert_close(first, eager, atol=0, rtol=0)
    assert not torch.equal(first, second)


@requires_cuda
def test_a_graphed_chain_refuses_other_batches_and_chains_that_cannot_be_captured():
    x = torch.randint(0, 256, (4, 3, 60, 80), dtype=torch.uint8, device="cuda")
    graph = torchaug.graphed(T.RandomHorizontalFlip(), x)
    for bad, got in [(x[:2], r"\(2, 3, 60, 80\) torch.uint8"), (x.float(), "torch.float32"), (x.cpu(), "on cpu"),
                     ([x], "list")]:
        with pytest.raises(ValueError, match=r"torchaug.graphed: the graph was captured for batches of \(4, 3, 60, 80\) "
                                             r"torch.uint8 on cuda:\d, got .*" + got):
            graph(bad)
    assert graph(x).shape == x.shape  # still replays after the refusals


@requires_cuda
def test_graphed_names_a_chain_that_synchronises_with_the_host():
    # in a process of its own: a failed capture can leave the CUDA context unusable (as torch's own
    # tests of capture errors do)
    code = ("import torch, torchaug\n"
            "x = torch.ones(4, 3, 8, 8, device='cuda')\n"
            "try:\n"
            "    torchaug.graphed(lambda t: t * t.mean().item(), x)\n"
            "except RuntimeError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert "torchaug.graphed: function could not be captured in a CUDA graph" in out.stdout, out.stdout + out.stderr


def test_graphed_names_what_it_cannot_capture():
    with pytest.raises(TypeError, match="torchaug.graphed: chain must be callable, got int"):
        torchaug.graphed(3, torch.zeros(1))
    with pytest.raises(ValueError, match="torchaug.graphed: example must be a CUDA tensor .*got a cpu tensor"):
        torchaug.graphed(T.RandomHorizontalFlip(), torch.zeros(1, 3, 4, 4, dtype=torch.uint8))
    chain = T.Compose([T.RandomHorizontalFlip(generator=torch.Generator()), T.RandomResizedCrop(8)])
    with pytest.raises(ValueError, match="torchaug.graphed: RandomHorizontalFlip built with generator="):
        torchaug.graphed(chain, torch.zeros(1, 3, 4, 4, dtype=torch.uint8))
