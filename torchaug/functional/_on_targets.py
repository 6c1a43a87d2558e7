"""torchvision's functional dispatch for targets: the geometric functions take a bounding-box,
mask or keypoint target of one image (torchvision's tv_tensors, or torchaug.transforms'
BoundingBoxes / Mask / KeyPoints) in place of images, and return it moved as they move an image.
One mechanism for all of them: the transform that does the same with fixed parameters moves the
target through its target step (boxes and keypoints) or its mask op, as it moves the targets of a
batch; no image is made (a zero-stride stand-in of the canvas's size gives the sizes)."""
from typing import Any, Callable, Dict, Tuple

import torch


def is_target(obj) -> bool:
    from ..transforms._targets import _kind
    return _kind(obj) in ("boxes", "mask", "keypoints")


def _raw(target) -> torch.Tensor:
    data = getattr(target, "data", target)
    return data.as_subclass(torch.Tensor) if isinstance(data, torch.Tensor) else data


def _canvas(target) -> Tuple[int, int]:
    from ..transforms._targets import _kind
    if _kind(target) == "mask":
        return tuple(int(v) for v in _raw(target).shape[-2:])
    return tuple(int(v) for v in target.canvas_size)


def _row(values) -> torch.Tensor:
    """A number or sequence (or tensor) as a (1, k) float64 row."""
    t = values.detach().to("cpu", torch.float64) if isinstance(values, torch.Tensor) else torch.tensor(values, dtype=torch.float64)
    return t.reshape(1, -1)


def _builders() -> Dict[str, Callable[..., Tuple[Any, Dict[str, Any]]]]:
    """For each function, (the transform, its parameters for one image) from the function's arguments."""
    from .. import transforms as T

    def flip_h(target):
        return T.RandomHorizontalFlip(1.0), {"flip": torch.ones(1, dtype=torch.bool)}

    def flip_v(target):
        return T.RandomVerticalFlip(1.0), {"flip": torch.ones(1, dtype=torch.bool)}

    def resize(target, size, interpolation=None, max_size=None, antialias=True):
        return T.Resize(size, max_size=max_size), {}

    def crop(target, top, left, height, width):
        return T.RandomCrop([int(height), int(width)]), {"top": torch.tensor([int(top)]), "left": torch.tensor([int(left)]),
                                                         "padding": [0, 0, 0, 0]}

    def center_crop(target, output_size):
        return T.CenterCrop(output_size), {}

    def resized_crop(target, top, left, height, width, size, interpolation=None, antialias=True):
        if isinstance(size, int) or len(size) == 1:  # the crop's smaller edge (torchvision's)
            from ._geometry import _compute_resized_output_size
            size = _compute_resized_output_size(int(height), int(width), [int(size) if isinstance(size, int) else int(size[0])], None)
        return T.RandomResizedCrop(list(size)), {"boxes": torch.tensor([[int(top), int(left), int(height), int(width)]])}

    def pad(target, padding, fill=0, padding_mode="constant"):
        return T.Pad(padding, fill, padding_mode), {}

    def affine(target, angle, translate, scale, shear, interpolation=None, fill=None, center=None):
        shear = _row(shear)
        if shear.shape[1] == 1:  # one number: the x shear (torchvision's)
            shear = torch.cat([shear, torch.zeros_like(shear)], 1)
        return T.RandomAffine(0, fill=0 if fill is None else fill, center=center), {
            "angle": _row(angle).view(1), "translate": _row(translate).view(1, 2), "scale": _row(scale).view(1),
            "shear": shear.view(1, 2)}

    def rotate(target, angle, interpolation=None, expand=False, center=None, fill=None):
        return T.RandomRotation(0, expand=expand, center=center, fill=0 if fill is None else fill), {"angle": _row(angle).view(1)}

    def perspective(target, startpoints=None, endpoints=None, interpolation=None, fill=None, coefficients=None):
        from ._geometry import perspective_coefficients
        if coefficients is None:
            if startpoints is None or endpoints is None:
                raise ValueError("torchaug.perspective: give coefficients, or startpoints and endpoints")
            coefficients = perspective_coefficients(startpoints, endpoints)
        c = torch.as_tensor(coefficients, dtype=torch.float32).reshape(1, 8)
        return T.RandomPerspective(p=1.0, fill=0 if fill is None else fill), {"coefficients": c, "applies": torch.ones(1, dtype=torch.bool)}

    def elastic(target, displacement, interpolation=None, fill=None):
        return T.ElasticTransform(fill=0 if fill is None else fill), {"displacement": displacement}

    return {"elastic": elastic, "horizontal_flip": flip_h, "vertical_flip": flip_v, "resize": resize, "crop": crop, "center_crop": center_crop,
            "resized_crop": resized_crop, "pad": pad, "affine": affine, "rotate": rotate, "perspective": perspective}


def on_target(name: str, target, *args, **kwargs):
    """functional `name` applied to one image's target: the target moved, of the type it came in."""
    builders = _builders()
    if name not in builders:
        raise TypeError(f"torchaug.{name}: takes images; bounding boxes, masks and keypoints are not moved by it")
    transform, params = builders[name](target, *args, **kwargs)
    device = _raw(target).device
    params = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in params.items()}
    h, w = _canvas(target)
    stand_in = torch.zeros((), dtype=torch.uint8, device=device).expand(1, h, w)  # one image's sizes, no memory
    return transform.transform_targets(stand_in, (target,), params)[0]
