import contextlib
import glob
import os

import pytest
import torch

import torchaug

# the JPEG photos the package ships (astronaut, chelsea, coffee, rocket)
ASSETS = sorted(glob.glob(os.path.join(os.path.dirname(torchaug.__file__), "assets", "images", "*.jpg")))


def _import_torchvision():
    """torchvision for parity references (torchaug._compat.import_torchvision: on a CPU-only torch,
    PyPI's CUDA torchvision imports once the schemas its failed library did not define exist)."""
    from torchaug._compat import import_torchvision
    return import_torchvision()


try:
    torchvision = _import_torchvision()
except ImportError:  # pragma: no cover - the test command installs it
    torchvision = None

CUDA = torch.cuda.is_available()
DEVICES = ["cpu"] + (["cuda"] if CUDA else [])

requires_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA device (runs on the GPU machine)")
requires_torchvision = pytest.mark.skipif(torchvision is None, reason="torchvision is not installed")


@contextlib.contextmanager
def hooked(name, value):
    """The compiled library's test hook `name` (csrc/ops/settings.h) set to value inside the block,
    then given back to the library's own choice (-1)."""
    torchaug._C._set_test_hook(name, value)
    try:
        yield
    finally:
        torchaug._C._set_test_hook(name, -1)


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


def random_images(b, c, h, w, dtype=torch.uint8, device="cpu", channels_last=False, generator=None):
    if dtype == torch.uint8:
        x = torch.randint(0, 256, (b, c, h, w), dtype=torch.uint8, generator=generator)
    else:
        x = torch.rand((b, c, h, w), generator=generator, dtype=torch.float64).to(dtype)
    x = x.to(device)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    return x


def assert_close_images(actual, expected, dtype, msg=""):
    """uint8: at most 1 LSB apart; floating: close for that precision."""
    assert actual.shape == expected.shape, f"{msg}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    assert actual.dtype == expected.dtype, f"{msg}: dtype {actual.dtype} != {expected.dtype}"
    if dtype == torch.uint8:
        diff = (actual.int() - expected.int()).abs().max().item() if actual.numel() else 0
        assert diff <= 1, f"{msg}: uint8 results differ by {diff} LSB"
    else:
        tol = {torch.float32: 2e-5, torch.float64: 1e-10, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]
        torch.testing.assert_close(actual, expected, atol=tol, rtol=tol, msg=msg)


def assert_differ_only_at_ties(got, want, coefficients):
    """Nearest sampling under a perspective's coefficients (torchvision's 8): a pixel may differ only
    where its source position (in float64) sits within float32 rounding of a tie between two pixels
    (torchvision rounds a float32 grid built with other steps; a homography from integer corners
    puts whole rows of positions on -0.5)."""
    c = coefficients
    for y, x in (got != want).reshape(-1, *got.shape[-2:]).any(0).nonzero().tolist():
        cx, cy = x + 0.5, y + 0.5
        den = c[6] * cx + c[7] * cy + 1
        src = ((c[0] * cx + c[1] * cy + c[2]) / den - 0.5, (c[3] * cx + c[4] * cy + c[5]) / den - 0.5)
        assert min(abs(s - round(s - 0.5) - 0.5) for s in src) < 1e-4, f"pixel ({y}, {x}) samples {src}, not a tie"
