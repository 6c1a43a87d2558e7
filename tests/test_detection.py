"""Detection operators: nms, batched_nms, roi_align (tests for boxes, masks and keypoints that
follow the geometric transforms are in test_targets.py)."""
import math

import pytest
import torch

from torchaug import ops as tops

from conftest import CUDA, hooked, requires_cuda, requires_torchvision, torchvision

ops = torch.ops.torchaug


def _tv_ops_work() -> bool:
    """torchvision.ops' compiled kernels (absent with a CPU-only torch and PyPI's CUDA torchvision)."""
    if torchvision is None:
        return False
    try:
        torchvision.ops.nms(torch.zeros(1, 4), torch.zeros(1), 0.5)
        return True
    except Exception:
        return False


TV_OPS = _tv_ops_work()
requires_tv_ops = pytest.mark.skipif(not TV_OPS, reason="torchvision.ops kernels are not loadable here (the GPU machine has them)")


# ---------------------------------------------------------------------------------------------
# references
# ---------------------------------------------------------------------------------------------

def ref_nms(boxes, scores, thr, idxs=None):
    """Greedy NMS in Python over the order of scores.sort(descending=True), torchvision's formula."""
    boxes, scores = boxes.cpu(), scores.cpu()
    order = scores.sort(0, descending=True)[1]
    b = boxes[order].double().tolist()
    cls = None if idxs is None else idxs.cpu()[order].tolist()
    n = len(b)
    suppressed = [False] * n
    keep = []
    for i in range(n):
        if suppressed[i]:
            continue
        keep.append(int(order[i]))
        for j in range(i + 1, n):
            if suppressed[j] or (cls is not None and cls[i] != cls[j]):
                continue
            w = max(min(b[i][2], b[j][2]) - max(b[i][0], b[j][0]), 0.0)
            h = max(min(b[i][3], b[j][3]) - max(b[i][1], b[j][1]), 0.0)
            inter = w * h
            union = (b[i][2] - b[i][0]) * (b[i][3] - b[i][1]) + (b[j][2] - b[j][0]) * (b[j][3] - b[j][1]) - inter
            if union != 0 and inter / union > thr:
                suppressed[j] = True
    return torch.tensor(keep, dtype=torch.int64)


def ref_roi_align(x, rois, ph, pw, scale, sampling_ratio, aligned):
    """torchvision's roi_align written out in float64 Python (small inputs)."""
    x, rois = x.double().cpu(), rois.double().cpu()
    K, C, H, W = rois.shape[0], x.shape[1], x.shape[2], x.shape[3]
    out = torch.zeros(K, C, ph, pw, dtype=torch.float64)

    def bilinear(img, y, xx):
        if y < -1.0 or y > H or xx < -1.0 or xx > W:
            return torch.zeros(C, dtype=torch.float64)
        y, xx = max(y, 0.0), max(xx, 0.0)
        y0, x0 = int(y), int(xx)
        if y0 >= H - 1:
            y0 = y1 = H - 1
            y = float(y0)
        else:
            y1 = y0 + 1
        if x0 >= W - 1:
            x0 = x1 = W - 1
            xx = float(x0)
        else:
            x1 = x0 + 1
        ly, lx = y - y0, xx - x0
        hy, hx = 1 - ly, 1 - lx
        return hy * hx * img[:, y0, x0] + hy * lx * img[:, y0, x1] + ly * hx * img[:, y1, x0] + ly * lx * img[:, y1, x1]

    off = 0.5 if aligned else 0.0
    for k in range(K):
        bi = int(rois[k, 0])
        x1, y1, x2, y2 = [float(v) * scale - off for v in rois[k, 1:]]
        rw, rh = x2 - x1, y2 - y1
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = sampling_ratio if sampling_ratio > 0 else math.ceil(rh / ph)
        gw = sampling_ratio if sampling_ratio > 0 else math.ceil(rw / pw)
        count = max(gh * gw, 1)
        for i in range(ph):
            for j in range(pw):
                acc = torch.zeros(C, dtype=torch.float64)
                for iy in range(gh):
                    y = y1 + i * bh + (iy + 0.5) * bh / gh
                    for ix in range(gw):
                        acc += bilinear(x[bi], y, x1 + j * bw + (ix + 0.5) * bw / gw)
                out[k, :, i, j] = acc / count
    return out


def random_boxes(n, gen, size=100.0, max_wh=30.0, dtype=torch.float32):
    xy = torch.rand(n, 2, generator=gen, dtype=torch.float64) * size
    wh = torch.rand(n, 2, generator=gen, dtype=torch.float64) * max_wh
    return torch.cat([xy, xy + wh], 1).to(dtype)


# ---------------------------------------------------------------------------------------------
# nms / batched_nms
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("thr", [0.0, 0.3, 0.7])
def test_nms_matches_reference(device, dtype, thr):
    gen = torch.Generator().manual_seed(1)
    boxes = random_boxes(400, gen, dtype=dtype)
    scores = torch.rand(400, generator=gen, dtype=dtype)
    keep = tops.nms(boxes.to(device), scores.to(device), thr)
    assert keep.device.type == device and keep.dtype == torch.int64
    assert torch.equal(keep.cpu(), ref_nms(boxes, scores, thr))


def test_nms_ties_and_degenerate_boxes(device):
    gen = torch.Generator().manual_seed(2)
    boxes = random_boxes(300, gen, size=40.0)
    boxes[::7, 2] = boxes[::7, 0]            # zero width
    boxes[::11, 2:] = boxes[::11, :2] - 3    # x2 < x1, y2 < y1
    boxes[::13] = boxes[0]                   # duplicates of box 0
    scores = (torch.rand(300, generator=gen) * 8).floor() / 8  # many equal scores
    keep = tops.nms(boxes.to(device), scores.to(device), 0.5)
    # torchvision's order: scores.sort(descending=True) on the same device, then greedy
    order = scores.to(device).sort(0, descending=True)[1].cpu()
    expect = ref_nms(boxes, scores, 0.5)
    ref_order = scores.sort(0, descending=True)[1]
    if torch.equal(order, ref_order):
        assert torch.equal(keep.cpu(), expect)
    else:  # a different tie order on this device: the same rule, applied to that order
        assert sorted(keep.tolist()) == sorted(_greedy_in_order(boxes, order, 0.5))


def _greedy_in_order(boxes, order, thr):
    perm_scores = torch.empty(len(order))
    perm_scores[order] = torch.arange(len(order), 0, -1, dtype=torch.float32)
    return ref_nms(boxes, perm_scores, thr).tolist()


def test_nms_empty_and_single(device):
    e = tops.nms(torch.zeros(0, 4, device=device), torch.zeros(0, device=device), 0.5)
    assert e.shape == (0,) and e.dtype == torch.int64
    one = tops.nms(torch.tensor([[0.0, 0, 1, 1]], device=device), torch.tensor([0.3], device=device), 0.5)
    assert one.tolist() == [0]


@pytest.mark.parametrize("n", [1, 63, 64, 65, 3000])
def test_nms_sizes_across_tiles(device, n):
    gen = torch.Generator().manual_seed(n)
    boxes = random_boxes(n, gen, size=200.0, max_wh=40.0)
    scores = torch.rand(n, generator=gen)
    keep = tops.nms(boxes.to(device), scores.to(device), 0.4)
    assert torch.equal(keep.cpu(), ref_nms(boxes, scores, 0.4)) if n <= 1000 else torch.equal(
        keep.cpu(), tops.nms(boxes, scores, 0.4))


@requires_cuda
def test_nms_cuda_global_removal_words():
    # more tiles than the shared-memory removal words hold: the scan keeps them in global memory
    gen = torch.Generator().manual_seed(5)
    boxes = random_boxes(2000, gen, size=300.0, max_wh=50.0)
    scores = torch.rand(2000, generator=gen)
    with hooked("nms_shared_tiles", 4):
        got = tops.nms(boxes.cuda(), scores.cuda(), 0.5).cpu()
    assert torch.equal(got, tops.nms(boxes, scores, 0.5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_batched_nms_matches_reference(device, dtype):
    gen = torch.Generator().manual_seed(3)
    boxes = random_boxes(500, gen, size=60.0, dtype=dtype)
    scores = torch.rand(500, generator=gen, dtype=dtype)
    idxs = torch.randint(0, 5, (500,), generator=gen)
    keep = tops.batched_nms(boxes.to(device), scores.to(device), idxs.to(device), 0.4)
    assert torch.equal(keep.cpu(), ref_nms(boxes, scores, 0.4, idxs))
    # the same as NMS class by class, merged by score
    per = torch.cat([torch.nonzero(idxs == c)[:, 0][tops.nms(boxes[idxs == c], scores[idxs == c], 0.4)] for c in range(5)])
    assert torch.equal(keep.cpu(), per[scores[per].sort(descending=True)[1]])


def test_half_and_bfloat16_boxes(device):
    gen = torch.Generator().manual_seed(4)
    boxes = random_boxes(200, gen, size=50.0)
    scores = torch.rand(200, generator=gen)
    for dt in (torch.float16, torch.bfloat16):
        b = boxes.to(dt)
        keep = tops.nms(b.to(device), scores.to(device), 0.5)
        # the coordinates the kernel sees are the rounded ones; the formula rounds box sides to dt
        assert torch.equal(keep.cpu(), tops.nms(b, scores, 0.5))
        ref = set(ref_nms(b.float(), scores, 0.5).tolist())
        assert len(ref ^ set(keep.tolist())) <= 2  # only IoUs within rounding of the threshold differ


@requires_tv_ops
def test_nms_matches_torchvision(device):
    gen = torch.Generator().manual_seed(6)
    for n, thr in [(1000, 0.5), (5000, 0.7), (20, 0.0)]:
        boxes = random_boxes(n, gen, size=300.0, max_wh=60.0).to(device)
        scores = torch.rand(n, generator=gen).to(device)
        assert torch.equal(tops.nms(boxes, scores, thr), torchvision.ops.nms(boxes, scores, thr))
        idxs = torch.randint(0, 10, (n,), generator=gen).to(device)
        ours = tops.batched_nms(boxes, scores, idxs, thr)
        theirs = torchvision.ops.batched_nms(boxes, scores, idxs, thr)
        assert torch.equal(ours, theirs)


@requires_cuda
def test_nms_cpu_cuda_agree():
    gen = torch.Generator().manual_seed(7)
    boxes = random_boxes(10000, gen, size=1000.0, max_wh=80.0)
    # distinct scores: CPU and CUDA sorts may order equal scores differently (so may the kept
    # boxes then be; test_nms_ties_and_degenerate_boxes covers ties on each device)
    scores = torch.randperm(10000, generator=gen).float() / 10000
    idxs = torch.randint(0, 20, (10000,), generator=gen)
    assert torch.equal(tops.nms(boxes.cuda(), scores.cuda(), 0.5).cpu(), tops.nms(boxes, scores, 0.5))
    assert torch.equal(tops.batched_nms(boxes.cuda(), scores.cuda(), idxs.cuda(), 0.5).cpu(),
                       tops.batched_nms(boxes, scores, idxs, 0.5))
    # many small categories: runs shorter than a 64-box tile, and runs across tile edges
    many = torch.randint(0, 700, (10000,), generator=gen)
    assert torch.equal(tops.batched_nms(boxes.cuda(), scores.cuda(), many.cuda(), 0.3).cpu(),
                       tops.batched_nms(boxes, scores, many, 0.3))
    small = slice(0, 900)
    assert torch.equal(tops.batched_nms(boxes[small], scores[small], many[small], 0.3),
                       ref_nms(boxes[small], scores[small], 0.3, many[small]))


def test_nms_errors(device):
    b = torch.rand(5, 4, device=device)
    s = torch.rand(5, device=device)
    with pytest.raises(RuntimeError, match=r"torchaug::nms: boxes must have shape \(N, 4\).*got \(5, 3\)"):
        ops.nms(b[:, :3], s, 0.5)
    with pytest.raises(RuntimeError, match=r"torchaug::nms: scores must have shape \(N,\) with N=5, got \(4,\)"):
        ops.nms(b, s[:4], 0.5)
    with pytest.raises(RuntimeError, match="torchaug::nms: boxes must be float32.*got Long"):
        ops.nms(b.long(), s, 0.5)
    with pytest.raises(RuntimeError, match="iou_threshold must be a number, got nan"):
        ops.nms(b, s, float("nan"))
    with pytest.raises(RuntimeError, match=r"torchaug::batched_nms: idxs must have shape \(N,\) with N=5, got \(6,\)"):
        ops.batched_nms(b, s, torch.zeros(6, dtype=torch.int64, device=device), 0.5)
    with pytest.raises(RuntimeError, match="idxs must be an integer tensor.*got Float"):
        ops.batched_nms(b, s, torch.zeros(5, device=device), 0.5)
    if CUDA:
        other = "cpu" if device == "cuda" else "cuda"
        with pytest.raises(RuntimeError, match="scores must be on the device of boxes"):
            ops.nms(b, s.to(other), 0.5)


# ---------------------------------------------------------------------------------------------
# roi_align
# ---------------------------------------------------------------------------------------------

def _rois(gen, k, b, h, w, dtype=torch.float64):
    x1 = torch.rand(k, generator=gen, dtype=torch.float64) * w * 1.2 - 0.1 * w
    y1 = torch.rand(k, generator=gen, dtype=torch.float64) * h * 1.2 - 0.1 * h
    bw = torch.rand(k, generator=gen, dtype=torch.float64) * w * 0.7
    bh = torch.rand(k, generator=gen, dtype=torch.float64) * h * 0.7
    idx = torch.randint(0, b, (k,), generator=gen).double()
    return torch.stack([idx, x1, y1, x1 + bw, y1 + bh], 1).to(dtype)


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling_ratio,scale", [(-1, 1.0), (2, 0.5), (0, 0.25)])
def test_roi_align_matches_reference(device, aligned, sampling_ratio, scale):
    gen = torch.Generator().manual_seed(10)
    x = torch.rand(3, 4, 15, 20, generator=gen, dtype=torch.float64)
    rois = _rois(gen, 12, 3, 15 / scale, 20 / scale)
    rois[0, 3:] = rois[0, 1:3]  # a zero-size RoI
    out = tops.roi_align(x.to(device), rois.to(device), (5, 4), scale, sampling_ratio, aligned)
    assert out.shape == (12, 4, 5, 4) and out.device.type == device
    torch.testing.assert_close(out.cpu(), ref_roi_align(x, rois, 5, 4, scale, sampling_ratio, aligned), rtol=1e-12, atol=1e-12)


def test_roi_align_float32_and_list_of_boxes(device):
    gen = torch.Generator().manual_seed(11)
    x = torch.rand(2, 3, 32, 24, generator=gen)
    boxes = [random_boxes(5, gen, size=20.0, max_wh=15.0), random_boxes(3, gen, size=20.0, max_wh=15.0)]
    out = tops.roi_align(x.to(device), [b.to(device) for b in boxes], 7, 1.0, 2, True)
    rois = torch.cat([torch.cat([torch.full((len(b), 1), float(i)), b], 1) for i, b in enumerate(boxes)])
    torch.testing.assert_close(out.cpu(), ref_roi_align(x, rois, 7, 7, 1.0, 2, True).float(), rtol=1e-5, atol=1e-6)
    m = tops.RoIAlign((7, 7), 1.0, 2, True)
    assert torch.equal(m(x.to(device), [b.to(device) for b in boxes]), out)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_roi_align_low_precision(device, dtype):
    gen = torch.Generator().manual_seed(12)
    x = torch.rand(2, 3, 16, 16, generator=gen)
    rois = _rois(gen, 6, 2, 16, 16, torch.float32)
    out = tops.roi_align(x.to(device, dtype), rois.to(device, dtype), 4, 1.0, -1, False)
    ref = ref_roi_align(x.to(dtype), rois.to(dtype), 4, 4, 1.0, -1, False)
    tol = 2e-3 if dtype == torch.float16 else 1.6e-2
    torch.testing.assert_close(out.cpu().double(), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("aligned", [False, True])
def test_roi_align_gradcheck(device, aligned):
    gen = torch.Generator().manual_seed(13)
    x = torch.rand(2, 2, 9, 11, generator=gen, dtype=torch.float64).to(device).requires_grad_()
    rois = _rois(gen, 5, 2, 9, 11).to(device)
    assert torch.autograd.gradcheck(lambda t: tops.roi_align(t, rois, (3, 4), 1.0, -1, aligned), (x,))
    assert torch.autograd.gradcheck(lambda t: tops.roi_align(t, rois, (2, 2), 0.5, 2, aligned), (x,))


def test_roi_align_backward_low_precision_accumulates_in_float32(device):
    x = torch.zeros(1, 1, 8, 8, device=device, dtype=torch.float16, requires_grad=True)
    rois = torch.tensor([[0, 0.0, 0.0, 8.0, 8.0]] * 64, device=device, dtype=torch.float16)
    tops.roi_align(x, rois, 8, 1.0, 1, False).sum().backward()
    xf = torch.zeros(1, 1, 8, 8, device=device, requires_grad=True)
    tops.roi_align(xf, rois.float(), 8, 1.0, 1, False).sum().backward()
    torch.testing.assert_close(x.grad.float(), xf.grad, rtol=1e-3, atol=1e-3)


@requires_cuda
def test_roi_align_cpu_cuda_agree():
    gen = torch.Generator().manual_seed(14)
    x = torch.rand(4, 16, 50, 60, generator=gen)
    rois = _rois(gen, 100, 4, 50 * 8, 60 * 8, torch.float32)
    for aligned in (False, True):
        a = tops.roi_align(x, rois, 7, 1 / 8, -1, aligned)
        b = tops.roi_align(x.cuda(), rois.cuda(), 7, 1 / 8, -1, aligned)
        torch.testing.assert_close(b.cpu(), a, rtol=1e-4, atol=1e-5)  # FMA contraction on the GPU
        xg, xc = x.clone().requires_grad_(), x.cuda().requires_grad_()
        g = torch.rand(100, 16, 7, 7, generator=gen)
        tops.roi_align(xg, rois, 7, 1 / 8, -1, aligned).backward(g)
        tops.roi_align(xc, rois.cuda(), 7, 1 / 8, -1, aligned).backward(g.cuda())
        torch.testing.assert_close(xc.grad.cpu(), xg.grad, rtol=1e-4, atol=1e-5)


@requires_tv_ops
@pytest.mark.parametrize("aligned", [False, True])
def test_roi_align_matches_torchvision(device, aligned):
    gen = torch.Generator().manual_seed(15)
    x = torch.rand(4, 8, 38, 50, generator=gen).to(device).requires_grad_()
    rois = _rois(gen, 64, 4, 38 * 16, 50 * 16, torch.float32).to(device)
    ours = tops.roi_align(x, rois, (7, 7), 1 / 16, 2, aligned)
    theirs = torchvision.ops.roi_align(x, rois, (7, 7), 1 / 16, 2, aligned)
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6)
    g = torch.rand_like(ours)
    (ga,) = torch.autograd.grad(ours, x, g)
    (gb,) = torch.autograd.grad(theirs, x, g)
    torch.testing.assert_close(ga, gb, rtol=1e-4, atol=1e-5)


def test_roi_align_errors(device):
    x = torch.rand(2, 3, 8, 8, device=device)
    rois = torch.tensor([[0, 1.0, 1, 5, 5]], device=device)
    with pytest.raises(RuntimeError, match=r"torchaug::roi_align: rois must have shape \(K, 5\).*got \(1, 4\)"):
        ops.roi_align(x, rois[:, 1:], 1.0, 2, 2, -1, False)
    with pytest.raises(RuntimeError, match="torchaug::roi_align: rois must have the input's dtype Float, got Double"):
        ops.roi_align(x, rois.double(), 1.0, 2, 2, -1, False)
    with pytest.raises(RuntimeError, match="input must be a 4-D"):
        ops.roi_align(x[0], rois, 1.0, 2, 2, -1, False)
    with pytest.raises(RuntimeError, match="input must be float32.*got Byte"):
        ops.roi_align(x.byte(), rois.byte(), 1.0, 2, 2, -1, False)
    with pytest.raises(RuntimeError, match=r"output_size must be positive, got \[0, 2\]"):
        ops.roi_align(x, rois, 1.0, 0, 2, -1, False)
    with pytest.raises(RuntimeError, match="spatial_scale must be a positive number"):
        ops.roi_align(x, rois, float("inf"), 2, 2, -1, False)
    with pytest.raises(ValueError, match=r"RoI 1 has batch index 2.0, expected an integer in \[0, 2\)"):
        tops.roi_align(x, torch.tensor([[0, 1.0, 1, 5, 5], [2, 1, 1, 3, 3]], device=device), 2)
    with pytest.raises(ValueError, match=r"boxes\[1\] must have shape \(K_i, 4\)"):
        tops.roi_align(x, [torch.rand(2, 4, device=device), torch.rand(2, 5, device=device)], 2)
    # unchecked, a RoI of another image gives zeros, never an out-of-bounds read
    out = tops.roi_align(x, torch.tensor([[5, 1.0, 1, 5, 5]], device=device), 2, validate=False)
    assert torch.equal(out, torch.zeros(1, 3, 2, 2, device=device))
    with pytest.raises(RuntimeError, match="not differentiable with respect to rois"):
        r = rois.clone().requires_grad_()
        tops.roi_align(x, r, 2, validate=False).sum().backward()


def test_opcheck(device):
    gen = torch.Generator().manual_seed(16)
    boxes = random_boxes(50, gen).to(device)
    scores = torch.rand(50, generator=gen).to(device)
    idxs = torch.randint(0, 3, (50,), generator=gen).to(device)
    torch.library.opcheck(ops.nms, (boxes, scores, 0.5))
    torch.library.opcheck(ops.batched_nms, (boxes, scores, idxs, 0.5))
    x = torch.rand(2, 3, 10, 12, generator=gen).to(device).requires_grad_()
    rois = _rois(gen, 4, 2, 10, 12, torch.float32).to(device)
    torch.library.opcheck(ops.roi_align, (x, rois, 1.0, 3, 2, -1, True))
    torch.library.opcheck(ops.roi_align, (x, rois, 0.5, 2, 2, 2, False))


def test_torch_compile_nms_and_roi_align(device):
    gen = torch.Generator().manual_seed(17)
    boxes = random_boxes(40, gen).to(device)
    scores = torch.rand(40, generator=gen).to(device)
    x = torch.rand(1, 2, 10, 10, generator=gen).to(device)
    rois = _rois(gen, 3, 1, 10, 10, torch.float32).to(device)

    def f(boxes, scores, x, rois):
        return tops.nms(boxes, scores, 0.5), ops.roi_align(x, rois, 1.0, 2, 2, -1, False)

    torch._dynamo.config.capture_dynamic_output_shape_ops = True
    try:
        compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
        k, r = compiled(boxes, scores, x, rois)
    finally:
        torch._dynamo.config.capture_dynamic_output_shape_ops = False
    k0, r0 = f(boxes, scores, x, rois)
    assert torch.equal(k, k0) and torch.equal(r, r0)


@requires_torchvision
@pytest.mark.parametrize("fmt", ["xyxy", "xywh", "cxcywh"])
def test_box_iou_and_area_match_torchvision_in_every_format(device, fmt):
    import torchvision.ops as tvo
    g = torch.Generator().manual_seed(3)
    a = torch.rand(7, 4, generator=g, dtype=torch.float64) * 20
    b = torch.rand(5, 4, generator=g, dtype=torch.float64) * 20
    if fmt == "xyxy":  # ordered corners; some boxes apart, some overlapping
        a[:, 2:] += a[:, :2]
        b[:, 2:] += b[:, :2]
    got = tops.box_iou(a.to(device), b.to(device), fmt=fmt).cpu()
    torch.testing.assert_close(got, tvo.box_iou(a, b, fmt=fmt), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(tops.box_area(a.to(device), fmt=fmt).cpu(), tvo.box_area(a, fmt=fmt))
    assert (got > 0).any() and (got == 0).any()
    with pytest.raises(ValueError, match=r"box_iou: fmt must be one of xyxy, xywh, cxcywh \(axis-aligned boxes\), got 'xywhr'"):
        tops.box_iou(a, b, fmt="xywhr")
