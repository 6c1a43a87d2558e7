"""Loads the compiled operators (torch.ops.torchaug.*) and registers their fake kernels and
autograd formulas, one module per family."""
import torch

from .. import _C  # noqa: F401  (its load runs the TORCH_LIBRARY registrations)
from . import augment, color, convert, decode, detection, filter, geometry  # noqa: F401

ops = torch.ops.torchaug
