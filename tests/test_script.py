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
    x = images(device)
    if isinstance(t, (T.ToDtype, T.Normalize)) or type(t).__name__ in ("Grayscale",):
        xs = [x, images(device, torch.float32)]
    else:
        xs = [x]
    for inp in xs:
        for seed in (1, 2):
            torch.manual_seed(seed)
            expected = t(inp)
            torch.manual_seed(seed)
            got = s(inp)
            assert got.dtype == expected.dtype and got.shape == expected.shape
            assert torch.equal(got, expected)
        # a single (C, H, W) image
        torch.manual_seed(5)
        expected = t(inp[0])
        torch.manual_seed(5)
        assert torch.equal(s(inp[0]), expected)
    # saved and loaded (what a C++ program gets)
    loaded = reload(s)
    torch.manual_seed(9)
    expected = t(x)
    torch.manual_seed(9)
    assert torch.equal(loaded(x), expected)


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
    (T.RandomAffine(10), "RandomAffine has no TorchScript form"),
    (T.GaussianBlur(3), "GaussianBlur has no TorchScript form"),
    (T.AugMix(), "AugMix has no TorchScript form"),
    (T.Compose([T.RandomHorizontalFlip(), lambda x: x]), "is not an nn.Module"),
    (T.RandAugment(augmentations=[T.Augmentation(lambda x, m, a: x, name="Cutout")]), "Python augmentations"),
    (T.RandAugment(augmentations=[T.Augmentation("Rotate", magnitudes=lambda n, h, w: torch.linspace(0, w, n))]), "depend on the image size"),
], ids=lambda v: v if isinstance(v, str) else type(v).__name__)
def test_transforms_without_a_script_form_say_so(t, match):
    with pytest.raises(RuntimeError, match=match):
        torch.jit.script(t)


def test_scriptable_list_is_documented_in_the_error():
    names = scriptable_transforms()
    for n in ("RandomResizedCrop", "Resize", "CenterCrop", "RandomHorizontalFlip", "Normalize", "ToDtype", "ColorJitter",
              "RandAugment", "TrivialAugmentWide", "AutoAugment", "Compose", "RandomEqualize", "Grayscale"):
        assert n in names
    assert "RandomAffine" not in names and "AugMix" not in names
    with pytest.raises(RuntimeError, match="RandomResizedCrop"):
        torch.jit.script(T.RandomAffine(10))


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
