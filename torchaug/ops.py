"""torchaug.ops: torchvision.ops' detection operators (nms, batched_nms, roi_align, RoIAlign,
box_iou, box_area) on torchaug's kernels, and warp_affine_boxes (boxes that follow
torchaug.functional.warp_affine), so that `from torchaug import ops` replaces
`from torchvision import ops` for them."""
from typing import List, Union

import torch
from torch import nn

from .functional._detection import batched_nms, box_area, box_iou, nms, roi_align
from .transforms._targets import warp_affine_boxes


class RoIAlign(nn.Module):
    """torchvision.ops.RoIAlign."""

    def __init__(self, output_size, spatial_scale: float, sampling_ratio: int, aligned: bool = False):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale
        self.sampling_ratio = sampling_ratio
        self.aligned = aligned

    def forward(self, input: torch.Tensor, rois: Union[torch.Tensor, List[torch.Tensor]]) -> torch.Tensor:
        return roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio, self.aligned)

    def __repr__(self):
        return (f"{type(self).__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale}, "
                f"sampling_ratio={self.sampling_ratio}, aligned={self.aligned})")


__all__ = ["RoIAlign", "batched_nms", "box_area", "box_iou", "nms", "roi_align", "warp_affine_boxes"]
