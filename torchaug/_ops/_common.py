import torch
from torch._prims_common import suggest_memory_format


def image_memory_format(images: torch.Tensor) -> torch.memory_format:
    """The memory format an op's output keeps (csrc/ops/common.h: image_memory_format)."""
    if images.dim() == 4 and suggest_memory_format(images) == torch.channels_last:
        return torch.channels_last
    return torch.contiguous_format


def empty_image(shape, dtype, device, memory_format) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype, device=device).contiguous(memory_format=memory_format)
