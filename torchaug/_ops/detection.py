"""Fake kernels and autograd of the detection family (nms, batched_nms, roi_align). nms returns as
many indices as boxes survive, so its fake kernel gives the output an unbacked size."""
import torch

from ._common import register_fake


def _nms_fake_common(op, boxes, scores):
    torch._check(boxes.dim() == 2 and boxes.shape[1] == 4,
                 lambda: f"torchaug::{op}: boxes must have shape (N, 4) [x1, y1, x2, y2], got {tuple(boxes.shape)}")
    torch._check(scores.dim() == 1 and scores.shape[0] == boxes.shape[0],
                 lambda: f"torchaug::{op}: scores must have shape (N,) with N={boxes.shape[0]}, got {tuple(scores.shape)}")
    n = torch.library.get_ctx().new_dynamic_size()
    return boxes.new_empty((n,), dtype=torch.int64)


@register_fake("torchaug::nms")
def _nms_fake(boxes, scores, iou_threshold):
    return _nms_fake_common("nms", boxes, scores)


@register_fake("torchaug::batched_nms")
def _batched_nms_fake(boxes, scores, idxs, iou_threshold):
    torch._check(idxs.dim() == 1 and idxs.shape[0] == boxes.shape[0],
                 lambda: f"torchaug::batched_nms: idxs must have shape (N,) with N={boxes.shape[0]}, got {tuple(idxs.shape)}")
    return _nms_fake_common("batched_nms", boxes, scores)


@register_fake("torchaug::roi_align")
def _roi_align_fake(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    torch._check(input.dim() == 4, lambda: f"torchaug::roi_align: input must be a 4-D (B, C, H, W) tensor, got {input.dim()}-D")
    torch._check(rois.dim() == 2 and rois.shape[1] == 5,
                 lambda: f"torchaug::roi_align: rois must have shape (K, 5) [batch_index, x1, y1, x2, y2], got {tuple(rois.shape)}")
    torch._check(rois.dtype == input.dtype, lambda: f"torchaug::roi_align: rois must have the input's dtype {input.dtype}, got {rois.dtype}")
    return input.new_empty((rois.shape[0], input.shape[1], pooled_height, pooled_width))


@register_fake("torchaug::_roi_align_backward")
def _roi_align_backward_fake(grad, rois, spatial_scale, pooled_height, pooled_width, batch_size, channels, height,
                             width, sampling_ratio, aligned):
    return grad.new_empty((batch_size, channels, height, width))


def _roi_align_setup(ctx, inputs, output):
    input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned = inputs
    ctx.save_for_backward(rois)
    ctx.args = (spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned)
    ctx.input_shape = tuple(input.shape)


def _roi_align_backward(ctx, grad):
    (rois,) = ctx.saved_tensors
    if ctx.needs_input_grad[1]:
        raise RuntimeError("torchaug::roi_align is not differentiable with respect to rois (as torchvision's)")
    spatial_scale, ph, pw, sampling_ratio, aligned = ctx.args
    b, c, h, w = ctx.input_shape
    gi = torch.ops.torchaug._roi_align_backward(grad, rois, spatial_scale, ph, pw, b, c, h, w, sampling_ratio, aligned)
    return gi, None, None, None, None, None, None


torch.library.register_autograd("torchaug::roi_align", _roi_align_backward, setup_context=_roi_align_setup)


def _roi_align_double_backward(ctx, grad):
    raise RuntimeError("torchaug::_roi_align_backward is not differentiable (no double backward for roi_align)")


torch.library.register_autograd("torchaug::_roi_align_backward", _roi_align_double_backward)
