"""nn.Module transforms with torchvision.transforms.v2 names and signatures; parameters per sample."""
from ._auto_augment import AugMix, Augmentation, AutoAugment, AutoAugmentPolicy, RandAugment, TrivialAugmentWide
from ._color import (
    ColorJitter,
    Grayscale,
    RandomAutocontrast,
    RandomChannelPermutation,
    RandomEqualize,
    RandomGrayscale,
    RandomInvert,
    RandomPhotometricDistort,
    RandomPosterize,
    RandomSolarize,
)
from ._container import Compose, RandomApply, RandomChoice, RandomOrder
from ._filter import GaussianBlur, GaussianNoise, RandomAdjustSharpness, RandomErasing, RandomRotation
from ._geometry import (
    CenterCrop,
    Pad,
    RandomAffine,
    RandomCrop,
    RandomHorizontalFlip,
    RandomResizedCrop,
    RandomVerticalFlip,
    Resize,
)
from ._misc import RGB, ConvertImageDtype, Identity, Lambda, Normalize, ToDtype, ToPureTensor
from ._mix import CutMix, MixUp
from ._sanitize import SanitizeBoundingBoxes
from ._targets import BoundingBoxes, KeyPoints, Mask
from ._transform import Transform

__all__ = [
    "AugMix",
    "Augmentation",
    "AutoAugment",
    "AutoAugmentPolicy",
    "CutMix",
    "MixUp",
    "RandAugment",
    "TrivialAugmentWide",
    "ColorJitter",
    "Grayscale",
    "RandomAutocontrast",
    "RandomChannelPermutation",
    "RandomEqualize",
    "RandomGrayscale",
    "RandomInvert",
    "RandomPhotometricDistort",
    "RandomPosterize",
    "RandomSolarize",
    "GaussianBlur",
    "GaussianNoise",
    "RandomAdjustSharpness",
    "RandomErasing",
    "RandomRotation",
    "CenterCrop",
    "Compose",
    "RandomApply",
    "RandomChoice",
    "RandomOrder",
    "ConvertImageDtype",
    "Identity",
    "Lambda",
    "RGB",
    "ToPureTensor",
    "Normalize",
    "Pad",
    "RandomAffine",
    "RandomCrop",
    "RandomHorizontalFlip",
    "RandomResizedCrop",
    "RandomVerticalFlip",
    "Resize",
    "ToDtype",
    "Transform",
    "SanitizeBoundingBoxes",
    "BoundingBoxes",
    "KeyPoints",
    "Mask",
]
