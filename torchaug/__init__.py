"""torchaug: GPU data augmentation as PyTorch custom operators (torch.ops.torchaug.*), with CPU
fallbacks, torchvision.transforms.v2-style transforms and per-sample randomness."""
from . import _cuda_queues  # noqa: F401  (first: asks for CUDA's 32 work queues before CUDA starts)
from . import _ops  # noqa: F401  (loads the operators)
from . import functional, io, ops, transforms
from .functional import InterpolationMode
from ._accelerate import AccelerateError, AcceleratedLoader, accelerate
from ._graphs import GraphedChain, graphed
from ._version import __version__
from .prefetch import PrefetchStats, Prefetcher

__all__ = ["functional", "io", "ops", "transforms", "InterpolationMode", "Prefetcher", "PrefetchStats", "accelerate",
           "AcceleratedLoader", "AccelerateError", "graphed", "GraphedChain", "__version__"]
