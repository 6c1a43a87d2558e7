"""The bad-input matrix (DESIGN §9): generated bad inputs for every registered torch.ops.torchaug op
and every public function of torchaug.functional and torchaug.ops, each call run in a child process
so that a crash (a signal) or a hang is recorded as such instead of ending the run.

Each case is a valid base call with one argument replaced, and an expectation:
  error  a clean error: RuntimeError, ValueError, TypeError or NotImplementedError whose message
         names torchaug's op or function and the argument (its name or an alias below);
  same   the call succeeds and gives the result of the same call with the argument made dense (a
         non-contiguous, channels_last or stride-0 view of the same values);
  clean  either of the above outcomes that is not a crash, a hang or an unclean error (an
         unspecified but safe result: a NaN pixel, a huge size that the allocator refuses).
Values of tensor parameters are read where they live on the CPU; on a GPU they are not (that
would synchronise), so there non-finite parameter values are `clean` cases (README: Errors).

tests/test_bad_input.py runs the matrix under pytest (on the CPU in CI, on CUDA on the GPU machine,
where scripts/gpu_check.sh also runs it under compute-sanitizer memcheck). Run directly for the
counts and every failure:  python tests/bad_input.py [--device cuda] [--filter REGEX] [--sanitize memcheck]
"""
import argparse
import io
import json
import os
import re
import select
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional

import torch

B, C, H, W = 2, 3, 8, 10
CASE_TIMEOUT = 20.0  # seconds a case may take before it counts as a hang
START_TIMEOUT = 120.0  # seconds a child may take to import torch and torchaug and build the cases


class Case(NamedTuple):
    id: str
    target: str            # "torchaug::op" or "torchaug.function"
    arg: str               # the argument replaced ("" for the base call)
    expect: str            # error / same / clean / ok
    call: Callable[[], Any]
    reference: Optional[Callable[[], Any]] = None  # for "same"


# ---- base calls -----------------------------------------------------------------------------------

def _jpeg_bytes() -> torch.Tensor:
    from PIL import Image
    buf = io.BytesIO()
    Image.new("RGB", (W, H), (120, 30, 200)).save(buf, format="JPEG")
    return torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8)


def _op_bases(d: torch.device) -> Dict[str, Dict[str, Any]]:
    """A valid call of every registered op: argument name -> value (schema order)."""
    g = torch.Generator().manual_seed(0)
    f = lambda *s: torch.rand(*s, generator=g).to(d)  # noqa: E731
    u8 = lambda *s: torch.randint(0, 256, s, generator=g, dtype=torch.uint8).to(d)  # noqa: E731
    long = lambda *v: torch.tensor(v, dtype=torch.int64, device=d)  # noqa: E731
    img, img8 = f(B, C, H, W), u8(B, C, H, W)
    fb = lambda v: torch.full((B,), v, device=d)  # noqa: E731
    boxes = long([1, 1, 5, 6], [0, 2, 8, 7])
    matrices = torch.tensor([[1.0, 0.1, 0.5], [0.0, 1.0, -0.5]], device=d).repeat(B, 1, 1)
    det_boxes = torch.tensor([[0, 0, 4, 4], [1, 1, 5, 5], [6, 6, 9, 9.0]], device=d)
    rois = torch.tensor([[0, 0, 0, 5, 5], [1, 2, 1, 9, 7.0]], device=d)
    ids = torch.arange(14, device=d)
    return {
        "adjust_brightness": dict(images=img, factor=fb(1.3)),
        "adjust_contrast": dict(images=img, factor=fb(0.7)),
        "adjust_saturation": dict(images=img, factor=fb(1.5)),
        "adjust_hue": dict(images=img, factor=fb(0.2)),
        "adjust_gamma": dict(images=img, gamma=fb(0.8), gain=fb(1.0)),
        "adjust_sharpness": dict(images=img, factor=fb(2.0)),
        "rgb_to_grayscale": dict(images=img, num_output_channels=1),
        "invert": dict(images=img8),
        "posterize": dict(images=img8, bits=fb(3.0)),
        "solarize": dict(images=img, threshold=fb(0.5)),
        "solarize_add": dict(images=img8, shift=fb(40.0), threshold=fb(128.0)),
        "autocontrast": dict(images=img),
        "equalize": dict(images=img),
        "color_program": dict(images=img8, ops=long([1, 12], [4, 8]),
                              params=torch.tensor([[[1.2, 0.0], [0.0, 0.0]], [[0.1, 0.0], [4.0, 0.0]]], device=d)),
        "gaussian_blur": dict(images=img, kernel_size=[3, 5], sigma=fb(1.0)),
        "laplacian": dict(images=img, window_size=[3, 3], smoothing_size=[3, 3], scale=fb(1.0)),
        "gaussian_noise": dict(images=img, mean=fb(0.0), sigma=fb(0.1), seed=long(1, 2)),
        "salt_and_pepper": dict(images=img8, prob=fb(0.1), salt_vs_pepper=fb(0.5), seed=long(3, 4)),
        "erase": dict(images=img8, boxes=long([1, 1, 3, 3], [2, 2, 4, 4]), value=f(B, C)),
        "flip": dict(images=img, horizontal=torch.tensor([True, False], device=d),
                     vertical=torch.tensor([False, True], device=d)),
        "normalize": dict(images=img, mean=f(B, C), std=f(B, C) + 0.5),
        "warp_affine": dict(images=img, matrices=matrices, out_size=[H, W], interpolation=1),
        "warp_grid": dict(images=img, grid=f(B, H, W, 2) * 2 - 1, interpolation=1),
        "_warp_affine_backward": dict(grad=f(B, C, H, W), images=img, matrices=matrices, interpolation=1, fill=None,
                                      output_mask=[True, True]),
        "resized_crop": dict(images=img, boxes=boxes, out_size=[4, 5]),
        "_resized_crop_backward": dict(grad=f(B, C, 4, 5), boxes=boxes, input_size=[B, C, H, W], interpolation=1,
                                       antialias=True, flip=None, std=None, channels_last=False),
        "resized_crop_ragged": dict(data=f(C * H * W + C * 6 * 7), offsets=torch.tensor([0, C * H * W]),
                                    sizes=torch.tensor([[H, W], [6, 7]]), channels=C, channels_last_in=False,
                                    boxes=long([1, 1, 5, 6], [0, 0, 6, 7]), out_size=[4, 5]),
        "_random_resized_crop_boxes": dict(rand=torch.rand(B, 22, generator=g, dtype=torch.float64).to(d), sizes=None,
                                           height=H, width=W, scale_min=0.08, scale_max=1.0, ratio_min=0.75,
                                           ratio_max=4 / 3),
        "_random_resized_crop_boxes_flips": dict(sizes=None, height=H, width=W, scale_min=0.08, scale_max=1.0, ratio_min=0.75,
                                                 ratio_max=4 / 3, p=0.5, batch=B, like=img),
        "_affine_matrices": dict(angle=torch.tensor([10.0, -20.0], dtype=torch.float64, device=d),
                                 translate=torch.tensor([[1.0, -2.0], [0.0, 3.0]], dtype=torch.float64, device=d),
                                 scale=torch.tensor([1.1, 0.9], dtype=torch.float64, device=d),
                                 shear=torch.tensor([[5.0, 0.0], [-3.0, 2.0]], dtype=torch.float64, device=d),
                                 center=torch.zeros(1, 2, dtype=torch.float64, device=d), snap_period=90.0, pixel_sizes=[H, W, H, W]),
        "_erasing_boxes": dict(rand=torch.rand(B, 41, generator=g, dtype=torch.float64).to(d), height=H, width=W, p=0.5,
                               scale_min=0.02, scale_max=0.33, log_ratio_min=-1.2, log_ratio_max=1.2),
        "_random_affine_params": dict(rand=torch.rand(B, 6, generator=g, dtype=torch.float64).to(d), sizes=None, height=H,
                                      width=W, degrees=[-30.0, 30.0], translate=[0.1, 0.1], scale=[0.8, 1.2],
                                      shear=[-5.0, 5.0]),
        "_perspective_params": dict(rand=torch.rand(B, 9, generator=g, dtype=torch.float64).to(d), height=H, width=W,
                                    distortion_scale=0.5, p=0.5),
        "_color_jitter_program": dict(rand=torch.rand(B, 8, generator=g, dtype=torch.float64).to(d), lo=[0.6, 0.6, 0.6, -0.1],
                                      span=[0.8, 0.8, 0.8, 0.2], codes=[1, 2, 3, 4]),
        "augment": dict(images=img8, ops=long([1, 12], [4, 8]), magnitudes=torch.tensor([[10.0, 0], [0.2, 4]], device=d)),
        "_policy_program": dict(rand=None, ids=ids, mags=f(14, 31), signed=ids % 2 == 0, kind=0, num_ops=2, magnitude=9,
                                sub_idx=None, sub_prob=None, sub_bins=None, batch=B),
        "nms": dict(boxes=det_boxes, scores=torch.tensor([0.9, 0.8, 0.7], device=d), iou_threshold=0.5),
        "batched_nms": dict(boxes=det_boxes, scores=torch.tensor([0.9, 0.8, 0.7], device=d),
                            idxs=long(0, 1, 0), iou_threshold=0.5),
        "roi_align": dict(input=img, rois=rois, spatial_scale=1.0, pooled_height=2, pooled_width=2, sampling_ratio=0,
                          aligned=False),
        "_roi_align_backward": dict(grad=f(2, C, 2, 2), rois=rois, spatial_scale=1.0, pooled_height=2, pooled_width=2,
                                    batch_size=B, channels=C, height=H, width=W, sampling_ratio=0, aligned=False),
        "decode_jpeg": dict(data=[_jpeg_bytes()], mode=3, apply_exif_orientation=False, skip_errors=False, device=d),
    }


# arguments whose tensors carry no batch dimension tied to the images (any leading size is valid)
_FREE_LEADING = {"nms", "batched_nms", "roi_align", "_roi_align_backward", "_policy_program", "decode_jpeg",
                 "_random_resized_crop_boxes", "_random_resized_crop_boxes_flips", "_color_jitter_program", "_affine_matrices",
                 "_erasing_boxes", "_random_affine_params", "_perspective_params"}
# arguments that only name the device an op runs on (a drawing op's `like`): their dtype, shape and
# values are not read, so any of them is a valid call
_DEVICE_ARGS = {"like"}
# arguments that are image-like data: their NaN/inf values are pixels (a defined result), not parameters
_DATA_ARGS = {"images", "input", "data", "grad"}
# ops whose tensor inputs follow torchvision's semantics for non-finite values (NaN boxes, scores and
# RoIs give NaN results or are never kept; torchvision accepts them too)
_NONFINITE_OK = {"nms", "batched_nms", "roi_align", "_roi_align_backward", "_random_resized_crop_boxes",
                 "_affine_matrices"}  # its non-finite entries are a warp's samples outside the image
# ops whose tensor parameters take any real dtype (converted to float32 per sample)
_ANY_REAL = {"adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue", "adjust_gamma",
             "adjust_sharpness", "posterize", "solarize", "solarize_add", "gaussian_blur", "laplacian",
             "gaussian_noise", "salt_and_pepper"}


def _meta(t: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(t, device="meta")


def _strided(t: torch.Tensor) -> torch.Tensor:
    """The same values as t in a non-contiguous view (every other element of a wider tensor)."""
    wide = torch.zeros(t.shape[:-1] + (2 * t.shape[-1],), dtype=t.dtype, device=t.device) if t.dim() else t
    if t.dim() == 0:
        return t
    wide[..., ::2] = t
    return wide[..., ::2]


def _tensor_mutations(op: str, name: str, t: torch.Tensor, on_gpu: bool, alone: bool):
    """(label, value, expect, dense value or None) for a tensor argument; alone: the call's only
    tensor (a meta one makes a meta call: shapes only)."""
    data = name in _DATA_ARGS
    free = op in _FREE_LEADING
    out = [("meta", _meta(t), "meta" if alone else "error", None)]
    if not t.is_complex():
        out.append(("complex", t.to(torch.complex64), "error", None))
    if t.dtype != torch.bool and not (data and t.dtype == torch.uint8):
        out.append(("bool", t != 0, "error", None))
    if data and t.dim() == 4:
        out += [("int32", t.to(torch.int32), "error", None), ("rank5", t.unsqueeze(0), "error", None),
                ("rank3", t[0], "error", None), ("zero-channels", t[:, :0], "clean" if free else "error", None),
                ("zero-height", t[:, :, :0], "clean", None),
                ("2-channels", t[:, :2], "clean", None), ("4-channels", torch.cat([t, t[:, :1]], 1), "clean", None),
                ("channels_last", t.contiguous(memory_format=torch.channels_last), "same", t),
                ("stride0-batch", t[:1].expand_as(t), "same", t[:1].expand_as(t).contiguous())]
    elif not data:
        if t.dtype.is_floating_point:
            out.append(("int64", t.to(torch.int64), "clean", None))
        elif t.dtype == torch.int64 and op not in _ANY_REAL:
            out.append(("float32", t.to(torch.float32), "clean" if free else "error", None))
        out.append(("extra-dim", t.unsqueeze(-1), "error" if not free else "clean", None))
        if t.dim() >= 1 and t.shape[0] > 0:
            out.append(("one-more-row", torch.cat([t, t[:1]]), "clean" if free else "error", None))
            out.append(("no-rows", t[:0], "clean" if free else "error", None))
    if t.dim() >= 1 and t.numel() > 1:
        out.append(("non-contiguous", _strided(t), "same", t))
    if t.dtype.is_floating_point and t.numel():
        for label, v in (("nan", float("nan")), ("inf", float("inf")), ("-inf", float("-inf"))):
            bad = t.clone()
            bad.view(-1)[0] = v
            value_checked = not data and op not in _NONFINITE_OK and not on_gpu
            out.append((label, bad, "error" if value_checked else "clean", None))
        huge = t.clone()
        huge.view(-1)[0] = 1e30
        out.append(("1e30", huge, "clean", None))
    if name in _DEVICE_ARGS:
        out = [(label, v, "clean" if expect == "error" and label != "meta" else expect, dense) for label, v, expect, dense in out]
    return out


def _scalar_mutations(name: str, kind: str):
    if name == "out_dtype":
        return [("complex64", torch.complex64), ("int32", torch.int32)]
    if name == "memory_format":
        return [("channels_last_3d", torch.channels_last_3d), ("preserve", torch.preserve_format)]
    if kind == "int":
        return [("2**62", 2 ** 62), ("-2**62", -(2 ** 62)), ("-1", -1), ("0", 0), ("2**31", 2 ** 31)]
    if kind == "float":
        return [("nan", float("nan")), ("inf", float("inf")), ("-1e308", -1e308)]
    if kind == "List[int]":
        return [("zeros", [0, 0]), ("negative", [-1, -1]), ("huge", [2 ** 40, 2 ** 40]), ("empty", []),
                ("three", [1, 2, 3]), ("2**62", [2 ** 62, 1])]
    return []


def _op_cases(d: torch.device) -> List[Case]:
    on_gpu = d.type == "cuda"
    cases = []
    for op, base in _op_bases(d).items():
        packet = getattr(torch.ops.torchaug, op)
        schema = packet.default._schema
        names = [a.name for a in schema.arguments]
        kinds = {a.name: str(a.type) for a in schema.arguments}
        assert list(base) == names[:len(base)], (op, list(base), names)
        target = "torchaug::" + op

        def run(args, packet=packet):
            return packet(*args.values())

        cases.append(Case(f"{target} base", target, "", "ok", lambda b=base, r=run: r(b)))
        for name, value in base.items():
            kind = kinds[name]
            optional = kind.startswith("Optional[")
            muts = []
            if isinstance(value, torch.Tensor):
                if not optional:
                    muts.append(("None", None, "error", None))
                alone = sum(isinstance(v, torch.Tensor) for k, v in base.items() if k not in ("offsets", "sizes")) == 1
                muts += _tensor_mutations(op, name, value, on_gpu, alone)
            elif kind == "List[Tensor]":
                jpeg = value[0]
                muts += [("empty-list", [], "clean", None), ("float", [jpeg.float()], "error", None),
                         ("2-D", [jpeg.unsqueeze(0)], "error", None), ("garbage", [jpeg[:40]], "error", None),
                         ("non-contiguous", [_strided(jpeg)], "same", [jpeg])]
            else:
                muts += [(label, v, "clean", None) for label, v in _scalar_mutations(name, kind[9:-1] if optional else kind)]
            for label, v, expect, dense in muts:
                args = dict(base, **{name: v})
                ref = None if dense is None else dict(base, **{name: dense})
                cases.append(Case(f"{target} {name}={label}", target, name, expect,
                                  lambda a=args, r=run: r(a), None if ref is None else (lambda a=ref, r=run: r(a))))
    return cases


# ---- the functional layer ------------------------------------------------------------------------

def _function_bases(d: torch.device) -> Dict[str, Dict[str, Any]]:
    """A valid call of every public function: keyword arguments (the first is the images)."""
    g = torch.Generator().manual_seed(1)
    img = torch.rand(B, C, H, W, generator=g).to(d)
    img8 = torch.randint(0, 256, (B, C, H, W), generator=g, dtype=torch.uint8).to(d)
    det = torch.tensor([[0, 0, 4, 4], [1, 1, 5, 5.0]], device=d)
    return {
        "adjust_brightness": dict(images=img, brightness_factor=1.2),
        "adjust_contrast": dict(images=img, contrast_factor=0.8),
        "adjust_saturation": dict(images=img, saturation_factor=1.3),
        "adjust_hue": dict(images=img, hue_factor=0.1),
        "adjust_gamma": dict(images=img, gamma=0.9, gain=1.0),
        "adjust_sharpness": dict(images=img, sharpness_factor=2.0),
        "autocontrast": dict(images=img),
        "equalize": dict(images=img8),
        "invert": dict(images=img),
        "posterize": dict(images=img8, bits=3),
        "solarize": dict(images=img, threshold=0.5),
        "solarize_add": dict(images=img8, shift=30, threshold=128),
        "jpeg": dict(images=img8, quality=torch.tensor([20.0, 80.0], device=d)),
        "rgb_to_grayscale": dict(images=img, num_output_channels=1),
        "to_grayscale": dict(images=img, num_output_channels=3),
        "grayscale_to_rgb": dict(images=img[:, :1]),
        "permute_channels": dict(images=img8, permutation=torch.tensor([[2, 0, 1], [0, 1, 2]], device=d)),
        "color_program": dict(images=img8, ops=torch.tensor([[1], [4]], device=d),
                              params=torch.tensor([[[1.2, 0.0]], [[0.1, 0.0]]], device=d)),
        "augment": dict(images=img8, ops=["rotate", "equalize"], magnitudes=[10.0, 0.0]),
        "gaussian_blur": dict(images=img, kernel_size=3, sigma=1.0),
        "gaussian_noise": dict(images=img, mean=0.0, sigma=0.1, seed=torch.tensor([1, 2], device=d)),
        "laplacian": dict(images=img, window_size=3, scale=1.0),
        "salt_and_pepper": dict(images=img8, prob=0.1, salt_vs_pepper=0.5, seed=torch.tensor([3, 4], device=d)),
        "erase": dict(images=img, i=1, j=1, h=3, w=4, v=0.5),
        "affine": dict(images=img, angle=10.0, translate=[1.0, 2.0], scale=1.1, shear=[5.0, 0.0]),
        "rotate": dict(images=img, angle=30.0),
        "shear_x": dict(images=img, magnitude=0.2),
        "shear_y": dict(images=img, magnitude=0.2),
        "translate_x": dict(images=img, magnitude=2.0),
        "translate_y": dict(images=img, magnitude=2.0),
        "center_crop": dict(images=img, output_size=[4, 6]),
        "crop": dict(images=img, top=1, left=2, height=4, width=5),
        "five_crop": dict(images=img, size=[4, 6]),
        "elastic": dict(images=img, displacement=torch.zeros(1, H, W, 2, device=d), interpolation="bilinear", fill=0.0),
        "perspective": dict(images=img, coefficients=torch.tensor([1.0, 0.1, 0.5, 0.0, 0.9, 0.2, 0.001, 0.0], device=d),
                            interpolation="bilinear", fill=0.0),
        "ten_crop": dict(images=img, size=[4, 6], vertical_flip=True),
        "flip": dict(images=img, horizontal=True, vertical=False),
        "horizontal_flip": dict(images=img),
        "vertical_flip": dict(images=img),
        "normalize": dict(images=img, mean=[0.5, 0.4, 0.3], std=[0.2, 0.3, 0.4]),
        "pad": dict(images=img, padding=[1, 2, 3, 4], fill=0.0, padding_mode="constant"),
        "resize": dict(images=img, size=[5, 7]),
        "resized_crop": dict(images=img, top=1, left=1, height=5, width=6, size=[4, 5]),
        "resized_crop_boxes": dict(images=img, boxes=torch.tensor([[1, 1, 5, 6], [0, 2, 8, 7]], device=d), size=[4, 5]),
        "to_dtype": dict(images=img8, dtype=torch.float32, scale=True),
        "warp_affine": dict(images=img, matrices=torch.tensor([[1.0, 0.1, 0.5], [0.0, 1.0, -0.5]], device=d).repeat(B, 1, 1)),
        "mixup": dict(images=img, labels=torch.tensor([0, 1], device=d), lam=0.3, num_classes=2),
        "cutmix": dict(images=img, labels=torch.tensor([0, 1], device=d),
                       boxes=torch.tensor([[1, 1, 4, 4], [0, 0, 2, 3]], device=d), num_classes=2),
        "ops.nms": dict(boxes=det, scores=torch.tensor([0.9, 0.8], device=d), iou_threshold=0.5),
        "ops.batched_nms": dict(boxes=det, scores=torch.tensor([0.9, 0.8], device=d),
                                idxs=torch.tensor([0, 1], device=d), iou_threshold=0.5),
        "ops.roi_align": dict(input=img, boxes=torch.tensor([[0, 0, 0, 5, 5.0]], device=d), output_size=2),
        "ops.box_iou": dict(boxes1=det, boxes2=det),
        "ops.box_area": dict(boxes=det),
    }


_PY_NONFINITE_OK = {"torchaug.nms", "torchaug.batched_nms", "torchaug.roi_align", "torchaug.box_iou", "torchaug.box_area"}


def _py_mutations(target: str, name: str, value: Any, d: torch.device):
    """(label, value, expect, dense or None) for an argument of a public function."""
    out = []
    if isinstance(value, torch.Tensor):
        out += [("meta", _meta(value), "error", None), ("complex", value.to(torch.complex64), "error", None),
                ("None", None, "clean", None)]
        if name in ("images", "input"):
            out += [("rank2", value[0, 0], "error", None), ("rank3", value[0], "clean", None),
                    ("zero-height", value[:, :, :0], "clean", None), ("int32", value.to(torch.int32), "clean", None),
                    ("channels_last", value.contiguous(memory_format=torch.channels_last), "same", value),
                    ("non-contiguous", _strided(value), "same", value), ("list", value.tolist(), "clean", None)]
            if value.dtype.is_floating_point:
                bad = value.clone()
                bad[0, 0, 0, 0] = float("nan")
                out.append(("nan-pixel", bad, "clean", None))
        else:
            out.append(("extra-dim", value.unsqueeze(-1), "clean", None))
            if value.dtype.is_floating_point and d.type == "cpu" and target not in _PY_NONFINITE_OK:
                bad = value.clone()
                bad.view(-1)[0] = float("nan")
                out.append(("nan", bad, "error", None))
    elif isinstance(value, bool) or value is None:
        pass
    elif isinstance(value, (int, float)):
        out += [("nan", float("nan"), "error"), ("inf", float("inf"), "clean"), ("complex", 1j, "error"),
                ("string", "x", "error"), ("None", None, "clean"), ("huge", 2 ** 62, "clean"), ("-huge", -(2 ** 62), "clean")]
        out = [m + (None,) for m in out]
    elif isinstance(value, list):
        out += [("nan-item", [float("nan")] + value[1:], "error", None), ("empty", [], "clean", None),
                ("too-long", value + value, "clean", None), ("huge-items", [2 ** 62] * len(value), "clean", None)]
    return out


def _function_cases(d: torch.device) -> List[Case]:
    import torchaug.functional as F
    import torchaug.ops as O

    cases = []
    for fname, base in _function_bases(d).items():
        fn = getattr(O, fname[4:]) if fname.startswith("ops.") else getattr(F, fname)
        target = "torchaug." + (fname[4:] if fname.startswith("ops.") else fname)
        cases.append(Case(f"{target} base", target, "", "ok", lambda f=fn, b=base: f(**b)))
        for name, value in base.items():
            for label, v, expect, dense in _py_mutations(target, name, value, d):
                args = dict(base, **{name: v})
                ref = None if dense is None else dict(base, **{name: dense})
                cases.append(Case(f"{target} {name}={label}", target, name, expect, lambda f=fn, a=args: f(**a),
                                  None if ref is None else (lambda f=fn, a=ref: f(**a))))
    return cases


def build_cases(device: str) -> List[Case]:
    import torchaug  # noqa: F401  (registers the ops)

    d = torch.device(device)
    return _op_cases(d) + _function_cases(d)


def registered_ops() -> List[str]:
    import torchaug  # noqa: F401
    return sorted(n.split("::", 1)[1] for n in torch._C._dispatch_get_all_op_names() if n.startswith("torchaug::"))


# ---- judging -------------------------------------------------------------------------------------

# words that may stand for an argument in a message (the op's own name for it)
_ALIASES = {"output_mask": ["output_mask"], "kernel_size": ["kernel_size"], "i": ["top", "boxes"], "j": ["left", "boxes"],
            "h": ["height", "boxes"], "w": ["width", "boxes"], "v": ["value", "v"], "boxes1": ["boxes"],
            "boxes2": ["boxes"], "input": ["input", "images"], "matrices": ["matrices"]}
_CLEAN_TYPES = (RuntimeError, ValueError, TypeError, NotImplementedError)


def _equal(a, b) -> bool:
    """Equal results; floating ones up to the rounding of a different summation order (the CUDA
    backward kernels accumulate with atomics)."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.is_floating_point():
            return bool(torch.allclose(a.double(), b.double(), rtol=1e-5, atol=1e-5, equal_nan=True))
        return bool(torch.equal(a, b))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return a == b


def judge(case: Case, sync: Optional[Callable[[], None]] = None) -> Dict[str, str]:
    """Runs one case in this process: {"outcome": pass/fail, "what": ...}. sync: waits for the
    device's queued work (a kernel's fault shows there)."""
    try:
        torch.manual_seed(0)  # ops that draw without a generator: the same draws as the reference
        result = case.call()
        if sync is not None:
            sync()
    except _CLEAN_TYPES as e:
        msg = str(e).split("\nException raised from")[0]
        if "There were no tensor arguments" in msg and case.expect == "error":
            # the dispatcher's own refusal of a call without tensors names the op's schema
            return {"outcome": "pass", "what": "error (no tensors) " + msg[:120]}
        short = type(e).__name__ + ": " + msg[:300]
        if case.expect in ("ok", "same"):
            return {"outcome": "fail", "what": "unexpected error " + short}
        name = case.target.split("::")[-1].split(".")[-1]
        if "torchaug" not in msg or name not in msg and not _names_related(case.target, msg):
            return {"outcome": "fail", "what": "error not naming " + case.target + ": " + short}
        if case.expect == "error" and case.arg and not any(w in msg for w in [case.arg] + _ALIASES.get(case.arg, [])):
            return {"outcome": "fail", "what": "error not naming the argument " + case.arg + ": " + short}
        return {"outcome": "pass", "what": "error " + short}
    except BaseException as e:  # noqa: BLE001 - an unclean error is a finding, whatever its type
        return {"outcome": "fail", "what": "unclean " + type(e).__name__ + ": " + str(e)[:300]}
    if case.expect == "error":
        return {"outcome": "fail", "what": "accepted silently"}
    if case.expect == "meta":
        outs = result if isinstance(result, (tuple, list)) else [result]
        if all(isinstance(t, torch.Tensor) and t.device.type == "meta" for t in outs):
            return {"outcome": "pass", "what": "result on the meta device"}
        return {"outcome": "fail", "what": "a meta input gave a result off the meta device"}
    torch.manual_seed(0)
    if case.expect == "same" and not _equal(result, case.reference()):
        return {"outcome": "fail", "what": "result differs from the dense input's"}
    return {"outcome": "pass", "what": "result"}


def _names_related(target: str, msg: str) -> bool:
    """A functional whose error comes from the op it calls (F.resize -> torchaug::resized_crop)."""
    related = {"resize": "resized_crop", "crop": "resized_crop", "center_crop": "resized_crop",
               "resized_crop_boxes": "resized_crop", "rotate": "warp_affine", "affine": "warp_affine",
               "shear_x": "augment", "shear_y": "augment", "translate_x": "augment", "translate_y": "augment",
               "horizontal_flip": "flip", "vertical_flip": "flip", "to_grayscale": "rgb_to_grayscale",
               "to_dtype": "normalize", "box_iou": "box", "box_area": "box"}
    name = target.split(".")[-1]
    return name in related and related[name] in msg


# ---- the child process -----------------------------------------------------------------------------

def _cases(device: str, extra: str = "") -> List[Case]:
    """The matrix's cases; extra "module:function" (a test of the harness) gives the cases instead."""
    if not extra:
        return build_cases(device)
    import importlib
    module, fn = extra.split(":")
    return getattr(importlib.import_module(module), fn)(device)


def worker(device: str, extra: str = "") -> None:
    """Reads case indices on stdin, writes {"i", "start"} then {"i", "outcome", "what"} per case."""
    cases = _cases(device, extra)
    sync = (lambda: torch.cuda.synchronize()) if device.startswith("cuda") else None
    for line in sys.stdin:
        i = int(line)
        print(json.dumps({"i": i, "start": True}), flush=True)
        print(json.dumps(dict(judge(cases[i], sync), i=i)), flush=True)


CPU_MEMORY_LIMIT = 16 << 30  # bytes of address space a CPU child may map


def _limit_memory() -> None:
    """A CPU child's address space is bounded, so that a huge but valid size (a batch of 2^31) fails
    to allocate (a clean, named error) on every machine, instead of succeeding on a large one and
    filling tens of gigabytes. CUDA children are not bounded: the driver reserves far more address
    space than it uses."""
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (CPU_MEMORY_LIMIT, CPU_MEMORY_LIMIT))


# the first line of a compute-sanitizer report
_TOOL_REPORTS = ("========= Invalid", "========= Program hit", "========= Race", "========= Uninitialized", "========= Error")


def run_matrix(device: str = "cpu", indices: Optional[List[int]] = None, prefix: Optional[List[str]] = None,
               _extra: str = "") -> Dict[int, Dict[str, str]]:
    """Runs the cases (all, or those indices) in child processes; a child that dies or hangs is
    recorded as the case's crash or hang and replaced by a fresh one for the remaining cases; a child
    that ends its cases with a non-zero exit status (a sanitizer's error exit code) is a failure
    recorded under -1 with the end of its stderr and of the lines on its stdout that are not the
    protocol's. prefix: a command put before the child's python (compute-sanitizer, which reports on
    the child's stdout)."""
    cases = _cases(device, _extra)
    todo = list(range(len(cases))) if indices is None else list(indices)
    results: Dict[int, Dict[str, str]] = {}
    child_env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); import bad_input; "
            f"bad_input.worker({device!r}, {_extra!r})")
    while todo:
        log = tempfile.TemporaryFile(mode="w+")
        proc = subprocess.Popen((prefix or []) + [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=log, env=child_env, text=True, bufsize=1,
                                preexec_fn=_limit_memory if device == "cpu" else None)
        proc.stdin.write("".join(f"{i}\n" for i in todo))
        proc.stdin.close()
        current, deadline = None, time.monotonic() + START_TIMEOUT
        other_lines: List[str] = []  # what the prefix's tool prints between the protocol's lines
        reported_in: List[str] = []  # the case last started when the tool began each report
        last: Optional[int] = None
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            line = proc.stdout.readline() if ready else None
            if not line:
                if line is None:
                    proc.kill()
                rc = proc.wait()
                if current is not None:
                    what = f"hang (no result in {CASE_TIMEOUT:g} s)" if line is None else f"crash (exit status {rc})"
                    results[current] = {"outcome": "fail", "what": what}
                break
            if not line.startswith("{"):
                if last is not None and line.startswith(_TOOL_REPORTS):
                    reported_in.append(f"{cases[last].id}: {line[10:].strip()}")
                other_lines.append(line)
                continue
            msg = json.loads(line)
            if msg.get("start"):
                current, deadline = msg["i"], time.monotonic() + CASE_TIMEOUT
                last = current
            else:
                results[msg["i"]] = {"outcome": msg["outcome"], "what": msg["what"]}
                current, deadline = None, time.monotonic() + CASE_TIMEOUT
        ended_between_cases = current is None
        todo = [i for i in todo if i not in results]
        if ended_between_cases and not todo and proc.returncode:
            log.seek(0)
            tool = "".join(other_lines)
            where = "".join(f"\n  during {r}" for r in reported_in[:40])
            text = (f"the child exited with status {proc.returncode} after its cases{where}\n"
                    f"{tool[:6000]}{' ...' if len(tool) > 6000 else ''}\n{log.read()[-2000:]}")
            results[-1] = {"outcome": "fail", "what": text}
        log.close()
        if ended_between_cases and todo:  # the child failed before a case (its import, the cases' setup)
            for i in todo:
                results[i] = {"outcome": "fail", "what": "the child process ended before this case"}
            break
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--filter", default="", help="a regular expression the case ids must match")
    ap.add_argument("--sanitize", choices=["memcheck", "racecheck", "initcheck"],
                    help="run the children under compute-sanitizer with this tool")
    args = ap.parse_args()
    try:
        import torchaug  # noqa: F401
    except ImportError:  # run from a checkout with the in-place build
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    cases = build_cases(args.device)
    idx = [i for i, c in enumerate(cases) if re.search(args.filter, c.id)]
    kinds: Dict[str, int] = {}
    t0 = time.time()
    prefix = None
    if args.sanitize:
        global CASE_TIMEOUT, START_TIMEOUT
        # the matrix's huge sizes fail cudaMalloc on purpose (a clean error the matrix checks): the
        # sanitizer reports memory accesses, not the API's errors
        prefix = ["compute-sanitizer", "--tool", args.sanitize, "--error-exitcode", "9", "--report-api-errors", "no"]
        CASE_TIMEOUT, START_TIMEOUT = 300.0, 900.0  # instrumented kernels and CUDA start-up are slow
    res = run_matrix(args.device, idx, prefix)
    fails = {i: r for i, r in res.items() if r["outcome"] != "pass"}
    if -1 in fails:
        print("FAIL", fails.pop(-1)["what"])
        kinds["FAIL child exit status"] = 1
    for i in idx:
        r = res[i]
        key = r["what"].split(" ")[0] if r["outcome"] == "pass" else "FAIL " + r["what"].split(" (")[0].split(":")[0]
        kinds[key] = kinds.get(key, 0) + 1
    for i, r in sorted(fails.items()):
        print(f"FAIL {cases[i].id} [{cases[i].expect}]: {r['what']}")
    print(f"{len(idx)} cases on {args.device} in {time.time() - t0:.0f} s: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    return 1 if fails or "FAIL child exit status" in kinds else 0


if __name__ == "__main__":
    sys.exit(main())
