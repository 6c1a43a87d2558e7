"""Every CUDA kernel once, on small inputs, forward and backward: run under compute-sanitizer
(memcheck, racecheck) by scripts/gpu_check.sh."""
import torch

import torchaug
import torchaug.functional as F

assert torch.cuda.is_available()
dev = "cuda"
g = torch.Generator().manual_seed(0)
for dtype in (torch.uint8, torch.float32):
    x = (torch.randint(0, 256, (3, 3, 23, 31), generator=g).to(dtype) if dtype == torch.uint8 else torch.rand(3, 3, 23, 31, generator=g)).to(dev)
    boxes = torch.tensor([[0, 0, 23, 31], [-3, 5, 30, 20], [4, 4, 7, 9]], device=dev)
    for mode in ("nearest", "bilinear", "bicubic"):
        for aa in (True, False):
            F.resized_crop_boxes(x, boxes, [17, 13], mode, aa, flip=torch.tensor([True, False, True], device=dev), mean=[0.5] * 3, std=[0.2] * 3, validate=False)
    F.resized_crop_boxes([x[0], x[1, :, :10], x[2, :, :, :7].contiguous()], boxes, [9, 9], validate=False)
    m = F.affine_matrices(torch.tensor([10.0, 100.0, -30.0]), [[1, 2], [0, 0], [3, -3]], 1.2, [5.0, 1.0], None, 23, 31, 3, "cpu").float().to(dev)
    for mode in ("nearest", "bilinear"):
        F.warp_affine(x, m, [20, 40], mode, [1.0, 2.0, 3.0])
    F.flip(x, torch.tensor([True, False, True], device=dev), torch.tensor([False, True, True], device=dev))
    F.normalize(x, [0.1, 0.2, 0.3], [0.5, 0.5, 0.5], memory_format=torch.channels_last)
    F.normalize(x.contiguous(memory_format=torch.channels_last), [0.1, 0.2, 0.3], [0.5, 0.5, 0.5])
xf = torch.rand(3, 3, 23, 31, device=dev, requires_grad=True)
mm = m.clone().requires_grad_()
(F.resized_crop_boxes(xf, boxes, [17, 13], "bicubic", True, validate=False).sum() + F.warp_affine(xf, mm, None, "bilinear", 0.5).sum()).backward()
# color family: every op, uint8 / float32, planar and channels_last, 1 and 3 channels, and programs
# with statistics slots after other slots
for dtype in (torch.uint8, torch.float32, torch.float16):
    for c in (1, 3):
        for cl in (False, True):
            y = (torch.randint(0, 256, (3, c, 17, 12), generator=g).to(dtype) if dtype == torch.uint8 else torch.rand(3, c, 17, 12, generator=g).to(dtype)).to(dev)
            if cl:
                y = y.contiguous(memory_format=torch.channels_last)
            f = torch.tensor([0.5, 1.0, 1.5], device=dev)
            F.adjust_brightness(y, f); F.adjust_contrast(y, f); F.adjust_saturation(y, f); F.adjust_hue(y, f - 1)
            F.adjust_gamma(y, f, f); F.rgb_to_grayscale(y, 1); F.invert(y); F.posterize(y, 3); F.solarize(y, 0.5)
            F.solarize_add(y, 0.1); F.autocontrast(y); F.equalize(y)
            prog = torch.tensor([[1, 2, 11, 12], [12, 11, 2, 4], [0, 3, 12, 2]], device=dev)
            F.color_program(y, prog, torch.rand(3, 4, 2, device=dev))
# filter and noise families: every op, dtypes, layouts, a window larger than the tile margin and
# the widest window (dynamic shared memory above 48 KiB for float64)
for dtype in (torch.uint8, torch.float32, torch.float16, torch.float64):
    for cl in (False, True):
        y = (torch.randint(0, 256, (3, 3, 70, 81), generator=g).to(dtype) if dtype == torch.uint8 else torch.rand(3, 3, 70, 81, generator=g).to(dtype)).to(dev)
        if cl:
            y = y.contiguous(memory_format=torch.channels_last)
        f = torch.tensor([0.5, 1.0, 1.5], device=dev)
        s = torch.arange(3, device=dev)
        F.adjust_sharpness(y, f); F.gaussian_blur(y, [3, 23], f); F.gaussian_blur(y, [65, 65], f)
        F.laplacian(y, [5, 3], [1, 5], f, True); F.gaussian_noise(y, 0.0, 0.1, seed=s)
        F.salt_and_pepper(y, 0.1, seed=s); F.salt_and_pepper(y, 0.1, per_channel=True, seed=s)
        F.erase(y, torch.tensor([0, 5, 60], device=dev), 3, 20, 30, "random", seed=s); F.erase(y, 1, 2, 3, 4, 0.5)
        F.rotate(y, f * 20); F.shear_x(y, f - 1); F.translate_y(y, f * 7)
# augment: every op id in every slot position, both interpolations, with and without fill (a
# width of whole 32-bit words for the uint8 word path, with a partial tile)
cases = [(d, cl, 47) for d in (torch.uint8, torch.float32, torch.float16, torch.float64) for cl in (False, True)]
for dtype, cl, w in cases + [(torch.uint8, False, 36)]:
    y = (torch.randint(0, 256, (19, 3, 33, w), generator=g).to(dtype) if dtype == torch.uint8 else torch.rand(19, 3, 33, w, generator=g).to(dtype)).to(dev)
    if cl:
        y = y.contiguous(memory_format=torch.channels_last)
    ops = torch.stack([torch.arange(19), torch.arange(19).flip(0), (torch.arange(19) * 7) % 19], 1).to(dev)
    mags = (torch.rand(19, 3, generator=g) * 2 - 1).to(dev) * 20
    F.augment(y, ops, mags, "nearest"); F.augment(y[:, :1], ops, mags, "bilinear", 0.5)
# augment's resident path with 16-byte planes, and the slot passes on the same program
y = torch.randint(0, 256, (19, 3, 64, 48), generator=g, dtype=torch.uint8).to(dev)
for mode in (1, 0):
    torchaug._C._set_test_hook("augment_resident", mode)
    F.augment(y, ops, mags, "nearest"); F.augment(y, ops, mags, "bilinear", [1, 2, 3])
    F.augment(y, ops, mags, "bilinear", [1, 2, 3], mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
torchaug._C._set_test_hook("augment_resident", -1)
# filter tiles wider and taller than a small 1-channel image (fresh allocations)
for dtype in (torch.uint8, torch.float32):
    y = torch.randint(0, 256, (4, 1, 5, 7), generator=g).to(dtype).to(dev)
    F.adjust_sharpness(y, 2.0); F.gaussian_blur(y, [5, 5], 1.0); F.laplacian(y, 3)
xg = torch.rand(2, 3, 20, 21, device=dev, dtype=torch.float64, requires_grad=True)
(F.adjust_sharpness(xg, 2.0).sum() + F.gaussian_blur(xg, 5, 1.0).sum() + F.laplacian(xg).sum()).backward()
torch.ops.torchaug._random_resized_crop_boxes(torch.rand(300, 22, device=dev, dtype=torch.float64), None, 375, 500, 0.08, 1.0, 0.75, 4 / 3)
torch.cuda.synchronize()
print("sanitize smoke: all kernels ran")
# detection family: nms (shared and global removal words), batched_nms, roi_align forward and backward
from torchaug import ops as tops  # noqa: E402

xy = torch.rand(700, 2, generator=g) * 100
bx = torch.cat([xy, xy + torch.rand(700, 2, generator=g) * 30], 1).to(dev)
sc = torch.rand(700, generator=g).to(dev)
for limit in (-1, 2):
    torchaug._C._set_test_hook("nms_shared_tiles", limit)
    tops.nms(bx, sc, 0.5)
    tops.batched_nms(bx.half(), sc, torch.randint(0, 4, (700,), generator=g).to(dev), 0.5)
torchaug._C._set_test_hook("nms_shared_tiles", -1)
feat = torch.rand(2, 4, 13, 17, device=dev, requires_grad=True)
rois = torch.tensor([[0, 1.0, 1, 9, 7], [1, -4, -3, 20, 16], [1, 3, 3, 3, 3]], device=dev)
for aligned in (False, True):
    tops.roi_align(feat, rois, 3, 0.5, -1, aligned).sum().backward()
    tops.roi_align(feat.detach().bfloat16(), rois.bfloat16(), (2, 5), 1.0, 2, aligned)
torch.cuda.synchronize()
print("sanitize smoke: detection done")
