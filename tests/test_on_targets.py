"""The geometric functions on one image's targets (torchvision's functional dispatch): bounding
boxes, masks and keypoints, as tv_tensors or torchaug's wrappers, moved as torchvision's functions
move them, of the type they came in."""
import pytest
import torch
from conftest import assert_differ_only_at_ties, requires_torchvision, torchvision

import torchaug.functional as F
import torchaug.transforms as T

if torchvision is not None:
    from torchvision import tv_tensors
    from torchvision.transforms.v2 import functional as TF

pytestmark = requires_torchvision
H, W = 37, 52
CALLS = {
    "horizontal_flip": ((), {}),
    "vertical_flip": ((), {}),
    "resize": (([20, 30],), {}),
    "resize(short edge)": (([24],), {}),
    "crop": ((3, -2, 20, 40), {}),
    "center_crop": (([20, 60],), {}),
    "resized_crop": ((2, 5, 20, 30, [16, 24]), {}),
    "resized_crop(int)": ((2, 5, 20, 30, 16), {}),
    "pad": (([1, 2, 3, 4],), {}),
    "affine": ((15.0, [3, -2], 1.2, [5.0, -3.0]), {}),
    "affine(center)": ((-20.0, [0, 0], 0.9, 7.0), {"center": [10.0, 5.0]}),
    "rotate": ((30.0,), {}),
    "rotate(expand)": ((30.0,), {"expand": True}),
    "perspective": (([[0, 0], [51, 0], [51, 36], [0, 36]], [[3, 2], [47, 1], [50, 33], [2, 35]]), {}),
}


def _targets(fmt):
    g = torch.Generator().manual_seed(0)
    xy = torch.rand(5, 2, generator=g) * torch.tensor([W - 10.0, H - 10.0])
    wh = torch.rand(5, 2, generator=g) * 8 + 1
    data = {"XYXY": torch.cat([xy, xy + wh], 1), "XYWH": torch.cat([xy, wh], 1), "CXCYWH": torch.cat([xy + wh / 2, wh], 1)}[fmt]
    boxes = tv_tensors.BoundingBoxes(data, format=fmt, canvas_size=(H, W))
    mask = tv_tensors.Mask(torch.randint(0, 3, (2, H, W), generator=g, dtype=torch.uint8))
    out = [boxes, mask]
    if hasattr(tv_tensors, "KeyPoints"):
        out.append(tv_tensors.KeyPoints(torch.rand(4, 2, generator=g) * torch.tensor([W, H]), canvas_size=(H, W)))
    return out


@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("fmt", ["XYXY", "XYWH", "CXCYWH"])
def test_targets_move_as_torchvisions_functions_move_them(call, fmt):
    name = call.split("(")[0]
    args, kwargs = CALLS[call]
    for target in _targets(fmt):
        got = getattr(F, name)(target, *args, **kwargs)
        want = getattr(TF, name)(target, *args, **kwargs)
        assert type(got) is type(want), (call, type(got))
        if isinstance(want, tv_tensors.Mask) and name == "perspective":
            assert_differ_only_at_ties(got, want, F.perspective_coefficients(*args)[0].tolist())
        elif isinstance(want, tv_tensors.Mask):
            assert torch.equal(got.as_subclass(torch.Tensor), want.as_subclass(torch.Tensor)), call
        elif call == "rotate(expand)":
            # the documented difference (test_targets.py): boxes and keypoints get the rotated
            # image's canvas, which torchvision's box function may make a pixel smaller
            image = torch.zeros(1, H, W)
            assert tuple(got.canvas_size) == tuple(TF.rotate(image, *args, **kwargs).shape[-2:])
            assert all(abs(a - b) <= 1 for a, b in zip(got.canvas_size, want.canvas_size))
            torch.testing.assert_close(got.as_subclass(torch.Tensor), want.as_subclass(torch.Tensor), atol=1.001, rtol=0)
        else:
            assert tuple(got.canvas_size) == tuple(want.canvas_size), call
            tol = 1e-3 if name == "perspective" else 2e-5
            torch.testing.assert_close(got.as_subclass(torch.Tensor), want.as_subclass(torch.Tensor), atol=tol, rtol=0)
            if isinstance(want, tv_tensors.BoundingBoxes):
                assert got.format == want.format


def test_torchaug_wrappers_and_refusals():
    boxes = T.BoundingBoxes(torch.tensor([[1.0, 2.0, 5.0, 6.0]]), "XYXY", (10, 12))
    flipped = F.horizontal_flip(boxes)
    assert isinstance(flipped, T.BoundingBoxes) and flipped.data.tolist() == [[7.0, 2.0, 11.0, 6.0]]
    with pytest.raises(TypeError, match="torchaug.five_crop: takes images; bounding boxes, masks and keypoints are not moved by it"):
        from torchaug.functional._on_targets import on_target
        on_target("five_crop", boxes, 4)
