"""torchaug.functional: one function per op, torchvision.transforms.v2.functional names; every
parameter may be a per-sample tensor."""
from ._convert import normalize, to_dtype
from ._geometry import (
    affine,
    affine_matrices,
    center_crop,
    crop,
    flip,
    horizontal_flip,
    pad,
    resize,
    resized_crop,
    resized_crop_boxes,
    vertical_flip,
    warp_affine,
)
from ._utils import InterpolationMode

__all__ = [
    "InterpolationMode",
    "affine",
    "affine_matrices",
    "center_crop",
    "crop",
    "flip",
    "horizontal_flip",
    "normalize",
    "pad",
    "resize",
    "resized_crop",
    "resized_crop_boxes",
    "to_dtype",
    "vertical_flip",
    "warp_affine",
]
