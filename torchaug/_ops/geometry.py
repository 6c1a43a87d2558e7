"""Fake kernels of the geometry family and the autograd of warp_affine and _affine_matrices
(resized_crop's and flip's autograd kernels are in csrc/autograd.cpp)."""
import torch

from ._common import draws_rows, empty_image, image_memory_format, register_fake

def _check_out_size(op, out_size):
    torch._check(len(out_size) == 2, lambda: f"torchaug::{op}: out_size must be [height, width], got {len(out_size)} values")
    return out_size[0], out_size[1]


# ---- warp_affine ----------------------------------------------------------------------------

@register_fake("torchaug::warp_affine")
def _warp_affine_fake(images, matrices, out_size, interpolation=1, fill=None):
    torch._check(images.dim() == 4, lambda: f"torchaug::warp_affine: images must be a 4-D (B, C, H, W) tensor, got {images.dim()}-D")
    oh, ow = _check_out_size("warp_affine", out_size)
    return empty_image((images.shape[0], images.shape[1], oh, ow), images.dtype, images.device, image_memory_format(images))


@register_fake("torchaug::warp_grid")
def _warp_grid_fake(images, grid, interpolation=1, fill=None):
    op = "torchaug::warp_grid"
    torch._check(images.dim() == 4, lambda: f"{op}: images must be a 4-D (B, C, H, W) tensor, got {images.dim()}-D")
    torch._check(grid.dim() == 4 and grid.shape[0] in (1, images.shape[0]) and grid.shape[3] == 2,
                 lambda: f"{op}: grid must have shape (B, H_out, W_out, 2) or (1, H_out, W_out, 2) with B={images.shape[0]}, "
                         f"got {tuple(grid.shape)}")
    return empty_image((images.shape[0], images.shape[1], grid.shape[1], grid.shape[2]), images.dtype, images.device,
                       image_memory_format(images))


# warp_grid has no autograd: functional.elastic samples through grid_sample where a gradient is wanted


@register_fake("torchaug::_warp_affine_backward")
def _warp_affine_backward_fake(grad, images, matrices, interpolation, fill, output_mask):
    gi = torch.empty_like(images, memory_format=image_memory_format(images)) if output_mask[0] else None
    gm = torch.empty_like(matrices, memory_format=torch.contiguous_format) if output_mask[1] else None
    return gi, gm


def _warp_affine_setup(ctx, inputs, output):
    images, matrices, out_size, interpolation, fill = inputs
    ctx.interpolation = interpolation
    ctx.save_for_backward(images, matrices, fill)


def _warp_affine_backward(ctx, grad):
    images, matrices, fill = ctx.saved_tensors
    want_images, want_matrices = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
    gi, gm = torch.ops.torchaug._warp_affine_backward(
        grad, images, matrices, ctx.interpolation, fill, [want_images, want_matrices]
    )
    return (gi if want_images else None), (gm if want_matrices else None), None, None, None


torch.library.register_autograd("torchaug::warp_affine", _warp_affine_backward, setup_context=_warp_affine_setup)


# ---- _affine_matrices -------------------------------------------------------------------------

@register_fake("torchaug::_affine_matrices")
def _affine_matrices_fake(angle, translate, scale, shear, center, snap_period=0.0, pixel_sizes=None):
    b = angle.shape[0]
    for t in (translate, scale, shear, center):
        if t.dim() >= 1 and t.shape[0] != 1:
            b = t.shape[0]
    return angle.new_empty((b, 2, 3))


def _affine_matrices_setup(ctx, inputs, output):
    angle, translate, scale, shear, center, snap_period, pixel_sizes = inputs
    ctx.pixel_sizes, ctx.snap_period = pixel_sizes, snap_period
    ctx.save_for_backward(angle, translate, scale, shear, center, output)


def _affine_matrices_backward(ctx, grad):
    """The derivatives of csrc/kernels/geometry.h: affine_inverse_theta (then affine_theta_to_pixels)
    with respect to each parameter; rotations snapped to exact entries have none in angle and shear."""
    angle, translate, scale, shear, center, m = ctx.saved_tensors
    k = torch.pi / 180
    rot, sx, sy = angle * k, shear[:, 0] * k, shear[:, 1] * k
    c_, s_, cs, sn, t = torch.cos(rot - sy), torch.sin(rot - sy), torch.cos(sy), torch.sin(sy), torch.tan(sx)
    m0, m1, m3, m4 = m[:, 0, 0], m[:, 0, 1], m[:, 1, 0], m[:, 1, 1]
    g = grad.reshape(-1, 6)
    g0, g1, g2, g3, g4, g5 = g.unbind(1)
    ox = oy = 0.0
    if ctx.pixel_sizes is not None:
        ox, oy = (ctx.pixel_sizes[3] - 1) * 0.5, (ctx.pixel_sizes[2] - 1) * 0.5
    ux = -center[:, 0] - translate[:, 0] - ox
    uy = -center[:, 1] - translate[:, 1] - oy
    # the totals through m2 = m0 ux + m1 uy + cx (+ constants) and m5 = m3 ux + m4 uy + cy
    d_m0, d_m1, d_m3, d_m4 = g0 + g2 * ux, g1 + g2 * uy, g3 + g5 * ux, g4 + g5 * uy
    d_ux, d_uy = g2 * m0 + g5 * m3, g2 * m1 + g5 * m4
    s = scale
    d_a, d_b, d_c, d_d = d_m4 / s, -d_m1 / s, -d_m3 / s, d_m0 / s
    d_scale = -(d_m0 * m0 + d_m1 * m1 + d_m3 * m3 + d_m4 * m4) / s
    if ctx.snap_period > 0:
        keep = (torch.fmod(angle, ctx.snap_period) != 0).to(g.dtype)
        d_a, d_b, d_c, d_d = d_a * keep, d_b * keep, d_c * keep, d_d * keep
    # a = C / cs, b = -C T / cs - sin(rot), c = S / cs, d = -S T / cs + cos(rot), C, S of rot - sy
    da_sy = s_ / cs + c_ * sn / (cs * cs)
    dc_sy = -c_ / cs + s_ * sn / (cs * cs)
    d_rot = (d_a * (-s_ / cs) + d_b * (s_ * t / cs - torch.cos(rot)) + d_c * (c_ / cs)
             + d_d * (-c_ * t / cs - torch.sin(rot)))
    d_sx = (d_b * (-c_) + d_d * (-s_)) * (1 + t * t) / cs
    d_sy = (d_a - d_b * t) * da_sy + (d_c - d_d * t) * dc_sy

    def to(value, like):  # summed over the batch where the parameter was one row for all
        return value.sum(0, keepdim=True) if like.shape[0] == 1 and value.shape[0] != 1 else value

    needs = ctx.needs_input_grad
    return (to(d_rot * k, angle) if needs[0] else None,
            to(torch.stack([-d_ux, -d_uy], 1), translate) if needs[1] else None,
            to(d_scale, scale) if needs[2] else None,
            to(torch.stack([d_sx * k, d_sy * k], 1), shear) if needs[3] else None,
            to(torch.stack([g2 - d_ux, g5 - d_uy], 1), center) if needs[4] else None,
            None, None)


torch.library.register_autograd("torchaug::_affine_matrices", _affine_matrices_backward, setup_context=_affine_matrices_setup)


# ---- resized_crop ---------------------------------------------------------------------------

def _resized_crop_out(op, batch, channels, in_dtype, device, default_format, out_size, mean, out_dtype, memory_format):
    oh, ow = _check_out_size(op, out_size)
    dtype = in_dtype if out_dtype is None else out_dtype
    torch._check(
        dtype == in_dtype or dtype.is_floating_point,
        lambda: f"torchaug::{op}: out_dtype must be the input dtype ({in_dtype}) or floating, got {dtype}",
    )
    torch._check(mean is None or dtype.is_floating_point, lambda: f"torchaug::{op}: normalizing (mean/std given) needs a floating out_dtype, got {dtype}")
    fmt = default_format if memory_format is None else memory_format
    return empty_image((batch, channels, oh, ow), dtype, device, fmt)


@register_fake("torchaug::resized_crop")
def _resized_crop_fake(images, boxes, out_size, interpolation=1, antialias=True, flip=None, mean=None, std=None,
                       out_dtype=None, memory_format=None):
    torch._check(images.dim() == 4, lambda: f"torchaug::resized_crop: images must be a 4-D (B, C, H, W) tensor, got {images.dim()}-D")
    return _resized_crop_out("resized_crop", images.shape[0], images.shape[1], images.dtype, images.device,
                             image_memory_format(images), out_size, mean, out_dtype, memory_format)


@register_fake("torchaug::resized_crop_ragged")
def _resized_crop_ragged_fake(data, offsets, sizes, channels, channels_last_in, boxes, out_size, interpolation=1,
                              antialias=True, flip=None, mean=None, std=None, out_dtype=None, memory_format=None):
    fmt = torch.channels_last if channels_last_in else torch.contiguous_format
    return _resized_crop_out("resized_crop_ragged", offsets.shape[0], channels, data.dtype, data.device, fmt,
                             out_size, mean, out_dtype, memory_format)


@register_fake("torchaug::_resized_crop_backward")
def _resized_crop_backward_fake(grad, boxes, input_size, interpolation, antialias, flip, std, channels_last):
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    return empty_image(tuple(input_size), grad.dtype, grad.device, fmt)


# autograd of resized_crop (_resized_crop_backward) and resized_crop_ragged (none): csrc/autograd.cpp


@register_fake("torchaug::_random_resized_crop_boxes")
def _random_resized_crop_boxes_fake(rand, sizes, height, width, scale_min, scale_max, ratio_min, ratio_max, batch=-1, like=None,
                                    generator=None):
    return _boxes_fake("torchaug::_random_resized_crop_boxes", rand, sizes, batch, like)


def _boxes_fake(op, rand, sizes, batch, like):
    if rand is not None:
        torch._check(rand.dim() == 2 and rand.shape[1] == 22,
                     lambda: f"{op}: rand must be a (B, 22) float64 tensor of uniform draws, got {rand.dtype} of shape {tuple(rand.shape)}")
        return rand.new_empty((rand.shape[0], 4), dtype=torch.int64)
    if sizes is not None:
        torch._check(sizes.dim() == 2, lambda: f"{op}: sizes must have shape (B, 2), got {tuple(sizes.shape)}")
        return sizes.new_empty((sizes.shape[0], 4), dtype=torch.int64)
    torch._check(like is not None, lambda: f"{op}: without rand and sizes, like (a tensor on the batch's device) must be given")
    torch._check(batch >= 0, lambda: f"{op}: batch must be the number of samples to draw for (a non-negative integer), got {batch}")
    return like.new_empty((batch, 4), dtype=torch.int64)


@register_fake("torchaug::_random_resized_crop_boxes_flips")
def _random_resized_crop_boxes_flips_fake(sizes, height, width, scale_min, scale_max, ratio_min, ratio_max, p, batch=-1, like=None,
                                          generator=None):
    boxes = _boxes_fake("torchaug::_random_resized_crop_boxes_flips", None, sizes, batch, like)
    return boxes, boxes.new_empty((boxes.shape[0],), dtype=torch.bool)


@register_fake("torchaug::_random_affine_params", host_args=())
def _random_affine_params_fake(rand, sizes, height, width, degrees, translate, scale, shear, batch=-1, like=None,
                               generator=None):
    op = "torchaug::_random_affine_params"
    if rand is None and sizes is not None:
        torch._check(sizes.dim() == 2, lambda: f"{op}: sizes must have shape (B, 2), got {tuple(sizes.shape)}")
        b, on = sizes.shape[0], sizes
    else:
        b, on = draws_rows(op, rand, 6, batch, like)
    return on.new_empty((b, 6), dtype=torch.float64)


@register_fake("torchaug::_perspective_params")
def _perspective_params_fake(rand, height, width, distortion_scale, p, batch=-1, like=None, generator=None):
    b, on = draws_rows("torchaug::_perspective_params", rand, 9, batch, like)
    return on.new_empty((b, 8), dtype=torch.float32), on.new_empty((b,), dtype=torch.bool)


# ---- flip -----------------------------------------------------------------------------------

@register_fake("torchaug::flip")
def _flip_fake(images, horizontal, vertical):
    torch._check(images.dim() == 4, lambda: f"torchaug::flip: images must be a 4-D (B, C, H, W) tensor, got {images.dim()}-D")
    return torch.empty_like(images, memory_format=image_memory_format(images))


# flip's autograd kernel is in csrc/autograd.cpp (a flip is its own inverse)
