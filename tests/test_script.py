"""torch.jit.script of the transforms: the scripted form draws the same parameters as the Python
transform (same seed -> same output, bitwise), on CPU and CUDA, after save/load, from a generator,
with replay through make_params / transform; transforms without a TorchScript form say so."""
import io

import pytest
import torch

import torchaug.transforms as T
from torchaug.transforms._transform import scriptable_transforms

from conftest import DEVICES

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit is deprecated upstream; the issue asks for it


def scriptable_cases():
    return [
        T.RandomResizedCrop(24), T.RandomResizedCrop([20, 30], scale=(0.3, 0.9), ratio=(0.5, 2.0), interpolation="bicubic"),
        T.Resize(30), T.Resize([20, 22], interpolation="nearest"), T.Resize(24, max_size=28), T.CenterCrop(30), T.CenterCrop([60, 20]),
        T.RandomHorizontalFlip(), T.RandomVerticalFlip(0.7),
        T.Normalize(MEAN, STD), T.Normalize([0.5], [0.25], out_dtype=torch.bfloat16, memory_format=torch.channels_last),
        T.ToDtype(torch.float32, scale=True), T.ToDtype(torch.float16), T.ToDtype(torch.bfloat16, scale=True),
        T.RandomInvert(), T.RandomPosterize(3), T.RandomSolarize(100), T.RandomAutocontrast(), T.RandomEqualize(),
        T.RandomGrayscale(0.5), T.Grayscale(), T.Grayscale(3), T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.ColorJitter(brightness=(0.5, 1.5)),
        T.RandAugment(), T.RandAugment(3, 5, 11, interpolation="bilinear", fill=[10, 20, 30]), T.TrivialAugmentWide(fill=7),
        T.AutoAugment(), T.AutoAugment(T.AutoAugmentPolicy.SVHN), T.RandAugment(exclude=["Rotate", "TranslateX"]),
        T.RandomAffine(30), T.RandomAffine((-10, 40), translate=(0.2, 0.3), scale=(0.7, 1.2), shear=(-5, 10, 2, 8),
                                           interpolation="bilinear", fill=[10, 20, 30], center=[3.5, 7.0]),
        T.RandomAffine(0, shear=20, fill=None),
        T.RandomRotation(45), T.RandomRotation((80, 100), interpolation="bilinear", fill=9), T.RandomRotation(30, expand=True),
        T.RandomRotation(30, center=[5.0, 11.0], expand=True), T.RandomRotation([90, 90]),
        T.Pad(3), T.Pad([1, 2, 3, 4], fill=[1, 2, 3]), T.Pad([2, 5], padding_mode="reflect"), T.Pad(4, padding_mode="symmetric"),
        T.Pad([-2, 1], padding_mode="constant"),
        T.RandomCrop(24), T.RandomCrop([30, 60], pad_if_needed=True, fill=5), T.RandomCrop(36, padding=4, padding_mode="edge"),
        T.RandomCrop([20, 20], padding=[1, 2, 3, 4], padding_mode="reflect"),
        T.GaussianBlur(5), T.GaussianBlur([3, 7], sigma=(0.5, 3.0)),
        T.GaussianNoise(), T.GaussianNoise(0.1, 0.3, clip=False),
        T.RandomAdjustSharpness(2.0), T.RandomAdjustSharpness(0.3, p=0.8),
        T.RandomErasing(1.0), T.RandomErasing(0.7, value=[10, 20, 30]), T.RandomErasing(0.9, value="random"),
        T.RandomErasing(1.0, scale=(0.1, 0.5), ratio=(0.5, 2.0), value=7, inplace=True),
        T.AugMix(), T.AugMix(severity=5, mixture_width=2, chain_depth=2, alpha=0.5, all_ops=False, fill=3),
        T.RandomPhotometricDistort(), T.RandomPhotometricDistort((0.5, 1.5), hue=(-0.2, 0.2), p=0.8), T.RandomChannelPermutation(),
        T.RandomApply([T.RandomInvert(1.0), T.ColorJitter(0.3)]), T.RandomChoice([T.RandomEqualize(1.0), T.RandomHorizontalFlip()]),
        T.RandomOrder([T.RandomInvert(), T.RandomAutocontrast()], per_sample=False), T.Identity(), T.RGB(), T.ToPureTensor(),
        T.ConvertImageDtype(torch.float16), T.RandomGamma((0.5, 2.0), (0.9, 1.1), p=0.7), T.RandomSolarizeAdd((10, 100)),
        T.RandomSaltAndPepper(), T.RandomSaltAndPepper(0.2, (0.0, 1.0), p=0.9, per_channel=True), T.SetClampingMode(None),
        T.ConvertBoundingBoxFormat("XYWH"), T.ClampBoundingBoxes(), T.ClampKeyPoints(), T.ElasticTransform(),
        T.ElasticTransform([20.0, 40.0], 2.0, "nearest", fill=[1, 2, 3]), T.ElasticTransform(fill=None),
        T.RandomPerspective(), T.RandomPerspective(0.8, p=0.9, interpolation="nearest", fill=[1, 2, 3]),
        T.Compose([T.RandomResizedCrop(24), T.RandomHorizontalFlip(), T.RandAugment(), T.ToDtype(torch.float32, scale=True),
                   T.Normalize(MEAN, STD)]),
    ]


def ids(cases):
    return [f"{i}-{type(t).__name__}" for i, t in enumerate(cases)]


def images(device, dtype=torch.uint8, shape=(5, 3, 40, 50)):
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, shape, dtype=torch.uint8, generator=g)
    return (x if dtype == torch.uint8 else x.to(dtype) / 255).to(device)


def reload(scripted):
    buf = io.BytesIO()
    torch.jit.save(scripted, buf)
    buf.seek(0)
    return torch.jit.load(buf)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("t", scriptable_cases(), ids=ids(scriptable_cases()))
def test_scripted_equals_eager(device, t):
    s = torch.jit.script(t)
    floating_only = isinstance(t, T.GaussianNoise) or (isinstance(t, T.RandomErasing) and t.value == "random")
    x = images(device, torch.float32) if floating_only else images(device)
    if isinstance(t, (T.ToDtype, T.Normalize, T.RandomAffine, T.RandomRotation, T.Pad, T.GaussianBlur, T.AugMix)) \
            or type(t).__name__ in ("Grayscale",):
        xs = [x, images(device, torch.float32)]
    else:
        xs = [x]
    inplace = getattr(t, "inplace", False)
    for inp in xs:
        for seed in (1, 2):
            torch.manual_seed(seed)
            expected = t(inp.clone() if inplace else inp)
            torch.manual_seed(seed)
            got = s(inp.clone() if inplace else inp)
            assert got.dtype == expected.dtype and got.shape == expected.shape
            assert torch.equal(got, expected)
        if inplace:
            y = inp.clone()
            torch.manual_seed(3)
            assert s(y) is not None and not torch.equal(y, inp)  # written into the input
        # a single (C, H, W) image
        torch.manual_seed(5)
        expected = t(inp[0])
        torch.manual_seed(5)
        assert torch.equal(s(inp[0]), expected)
    # saved and loaded (what a C++ program gets)
    loaded = reload(s)
    torch.manual_seed(9)
    expected = t(x.clone() if inplace else x)
    torch.manual_seed(9)
    assert torch.equal(loaded(x.clone() if inplace else x), expected)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("t", [T.MixUp(num_classes=7), T.MixUp(alpha=0.4, num_classes=7, per_sample=False),
                               T.CutMix(num_classes=7), T.CutMix(alpha=2.0, num_classes=7, per_sample=False)], ids=repr)
def test_scripted_mixers_equal_eager(device, t):
    s = torch.jit.script(t)
    x = images(device, torch.float32)
    labels = torch.arange(x.shape[0], device=device) % 7
    for seed in (1, 2):
        torch.manual_seed(seed)
        ex, ey = t(x, labels)
        torch.manual_seed(seed)
        gx, gy = s(x, labels)
        assert torch.equal(gx, ex) and torch.equal(gy, ey)
        assert not torch.equal(gx, x)  # it mixed something
    soft = torch.nn.functional.one_hot(labels, 7).float() * 0.9 + 0.01
    torch.manual_seed(4)
    ex, ey = t(x, soft)
    loaded = reload(s)
    torch.manual_seed(4)
    gx, gy = loaded(x, soft)
    assert torch.equal(gx, ex) and torch.equal(gy, ey)
    params = s.make_params(x)
    assert torch.equal(s.transform(x, labels, params)[0], t(x, labels, params=params)[0])
    with pytest.raises(Exception, match="num_classes is needed"):
        torch.jit.script(type(t)())(x, labels)
    with pytest.raises(Exception, match="one row per image"):
        s(x, labels[:3])


@pytest.mark.parametrize("device", DEVICES)
def test_scripted_with_a_generator_and_replay(device):
    g = torch.Generator().manual_seed(0)
    t = T.Compose([T.RandomResizedCrop(24, generator=g), T.RandomHorizontalFlip(generator=g), T.RandAugment(generator=g),
                   T.ColorJitter(0.3, 0.3, 0.3, 0.05, generator=g)])
    s = torch.jit.script(t)
    x = images(device)
    g.manual_seed(42)
    expected = t(x)
    g.manual_seed(42)
    assert torch.equal(s(x), expected)
    # a CPU generator gives CPU and CUDA the same program
    rrc = T.RandAugment(generator=g)
    srrc = torch.jit.script(rrc)
    g.manual_seed(7)
    params = srrc.make_params(x)
    assert set(params) == {"choice", "ops", "magnitudes"} and params["ops"].device == x.device
    g.manual_seed(7)
    eager_params = rrc.make_params(x)
    assert all(torch.equal(params[k], eager_params[k]) for k in params)
    assert torch.equal(srrc.transform(x, params), rrc(x, params=eager_params))
    with pytest.raises(RuntimeError, match="Generator"):
        reload(s)  # TorchScript cannot serialise a torch.Generator: documented


@pytest.mark.parametrize("t,match", [
    (T.SanitizeBoundingBoxes(), "SanitizeBoundingBoxes has no TorchScript form"),
    (T.RandomAffine(10, fill=torch.zeros(5, 3)), "per-sample fill has no TorchScript form"),
    (T.AugMix(augmentations=["Rotate", T.Augmentation("Rotate", magnitudes=lambda n, h, w: torch.linspace(0, w, n))]),
     "depend on the image size"),
    (T.Compose([T.RandomHorizontalFlip(), lambda x: x]), "is not an nn.Module"),
    (T.Compose([T.RandomHorizontalFlip(), T.MixUp(num_classes=3)]), "script MixUp on its own"),
    (T.RandAugment(augmentations=[T.Augmentation(lambda x, m, a: x, name="Cutout")]), "Python augmentations"),
    (T.RandAugment(augmentations=[T.Augmentation("Rotate", magnitudes=lambda n, h, w: torch.linspace(0, w, n))]), "depend on the image size"),
], ids=lambda v: v if isinstance(v, str) else type(v).__name__)
def test_transforms_without_a_script_form_say_so(t, match):
    with pytest.raises(RuntimeError, match=match):
        torch.jit.script(t)


def test_scriptable_list_is_documented_in_the_error():
    names = scriptable_transforms()
    import torchaug.transforms as pkg
    every = [n for n in pkg.__all__ if isinstance(getattr(pkg, n), type) and issubclass(getattr(pkg, n), T.Transform)]
    # every image transform has a TorchScript form; the Sanitize transforms work on targets only,
    # Lambda holds any Python callable, ToPILImage makes PIL images and ToTensor takes them
    # (torchvision's do not script either); the transforms that draw an output size per sample
    # return lists of images; JPEG has no TorchScript form yet
    assert sorted(set(every) - set(names)) == ["JPEG", "Lambda", "RandomIoUCrop", "RandomResize", "RandomShortestSize", "RandomZoomOut",
                                               "SanitizeBoundingBoxes", "SanitizeKeyPoints", "ScaleJitter", "ToPILImage", "ToTensor",
                                               "Transform"]
    with pytest.raises(RuntimeError, match="RandomResizedCrop"):
        torch.jit.script(T.SanitizeBoundingBoxes())


class FunctionalPipeline(torch.nn.Module):
    """RandomResizedCrop boxes + flip + a per-sample augment program + normalize, parameters as inputs."""

    def forward(self, x, boxes, flip, ops, mags):
        import torchaug.functional as F
        y = F.resized_crop_boxes(x, boxes, [24, 24], flip=flip, validate=False)
        y = F.augment(y, ops, mags, validate=False)
        return F.normalize(y, MEAN, STD, memory_format=torch.channels_last)


def pipeline_inputs(device):
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 256, (4, 3, 40, 50), dtype=torch.uint8, generator=g)
    boxes = torch.tensor([[0, 0, 40, 50], [5, 5, 20, 30], [1, 2, 30, 30], [0, 10, 40, 20]])
    flip = torch.tensor([True, False, True, False])
    ops = torch.randint(0, 19, (4, 2), generator=g)
    mags = torch.rand(4, 2, generator=g) * 2 - 1
    return tuple(t.to(device) for t in (x, boxes, flip, ops, mags))


@pytest.mark.parametrize("device", DEVICES)
def test_torch_export_of_a_functional_pipeline(device):
    inputs = pipeline_inputs(device)
    ep = torch.export.export(FunctionalPipeline(), inputs)
    targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    assert {"torchaug.resized_crop.default", "torchaug.augment.default", "torchaug.normalize.default"} <= targets
    assert torch.equal(ep.module()(*inputs), FunctionalPipeline()(*inputs))


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile_fullgraph_of_a_functional_pipeline(device):
    inputs = pipeline_inputs(device)
    compiled = torch.compile(FunctionalPipeline(), fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(*inputs), FunctionalPipeline()(*inputs))


def test_erasing_value_count_is_checked_in_eager_and_scripted_forms():
    t = T.RandomErasing(1.0, value=[1, 2])
    x = images("cpu")
    with pytest.raises(ValueError, match=r"RandomErasing: value must have 1 or 3 values \(the channels\), got 2"):
        t(x)
    with pytest.raises(Exception, match=r"RandomErasing: value must have 1 or 3 values \(the channels\), got 2"):
        torch.jit.script(t)(x)
