"""Bad input never crashes, hangs or passes silently (DESIGN §9): the generated matrix of
tests/bad_input.py over every op and public function, its harness, the cases found by hand that it
generalises, and properties over valid extreme inputs."""
import io
import os
import sys
import tarfile
import textwrap
import time

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import torchaug
import torchaug.functional as F
import torchaug.ops as O
from conftest import DEVICES

sys.path.insert(0, os.path.dirname(__file__))
import bad_input  # noqa: E402

T = torch.ops.torchaug


# ---- the matrix --------------------------------------------------------------------------------

def test_matrix_has_a_base_call_for_every_registered_op():
    assert sorted(bad_input._op_bases(torch.device("cpu"))) == bad_input.registered_ops()


# public functions the matrix does not call, and why
_NOT_IN_MATRIX = {
    "augment_op_id": "a name lookup (its error is tested in test_augment.py)",
    "draw_seeds": "makes random seeds from a batch size and a device",
    "affine_matrices": "builds the matrices affine() passes to warp_affine, which the matrix calls",
    "cutmix_boxes": "draws boxes from lam and centres; its lam check is tested below",
    "perspective_coefficients": "solves corners on the host (its checks are tested in test_transforms.py)",
}


def test_matrix_calls_every_public_function():
    called = set(bad_input._function_bases(torch.device("cpu")))
    public = {n for n in F.__all__ if callable(getattr(F, n)) and not isinstance(getattr(F, n), type)}
    public |= {"ops." + n for n in ("nms", "batched_nms", "roi_align", "box_iou", "box_area")}
    assert public - called - set(_NOT_IN_MATRIX) == set()


@pytest.mark.parametrize("device", DEVICES)
def test_bad_input_matrix(device):
    cases = bad_input.build_cases(device)
    results = bad_input.run_matrix(device)
    failures = [f"{cases[i].id if i >= 0 else 'child'} [{cases[i].expect if i >= 0 else ''}]: {r['what']}"
                for i, r in sorted(results.items()) if r["outcome"] != "pass"]
    assert set(range(len(cases))) <= set(results)
    assert not failures, f"{len(failures)} of {len(cases)} cases:\n" + "\n".join(failures[:60])
    # the matrix asks for errors, results equal to a dense input's, and safe results
    assert {c.expect for c in cases} >= {"ok", "error", "same", "clean", "meta"}


def test_harness_records_crashes_hangs_and_silent_acceptance(tmp_path, monkeypatch):
    """A child that dies is the case's crash, one that stops answering its hang; the cases after them
    still run in a fresh child."""
    (tmp_path / "extra_cases.py").write_text(textwrap.dedent("""
        import os, time
        import bad_input

        def cases(device):
            return [bad_input.Case("abort", "torchaug::x", "", "clean", lambda: os.abort()),
                    bad_input.Case("sleep", "torchaug::x", "", "clean", lambda: time.sleep(60)),
                    bad_input.Case("silent", "torchaug::x", "a", "error", lambda: 1),
                    bad_input.Case("clean error", "torchaug::x", "a", "error",
                                   lambda: (_ for _ in ()).throw(ValueError("torchaug::x: a must be ..."))),
                    bad_input.Case("unclean", "torchaug::x", "a", "error", lambda: [][1])]
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(bad_input, "CASE_TIMEOUT", 3.0)
    results = bad_input.run_matrix("cpu", [0, 1, 2, 3, 4], _extra="extra_cases:cases")
    what = [results[i]["what"] for i in range(5)]
    assert what[0].startswith("crash") and what[1].startswith("hang") and what[2] == "accepted silently"
    assert results[3]["outcome"] == "pass" and what[4].startswith("unclean IndexError")


def test_harness_reads_a_tools_lines_beside_the_protocol(tmp_path, monkeypatch):
    """A prefix tool that prints on the child's stdout (compute-sanitizer does) does not break the
    reading of results; when the child then exits with an error status, the tool's lines are in the
    failure recorded under -1."""
    (tmp_path / "tool_cases.py").write_text(textwrap.dedent("""
        import bad_input

        def cases(device):
            return [bad_input.Case("silent", "torchaug::x", "a", "error", lambda: 1),
                    bad_input.Case("reports", "torchaug::y", "a", "error", lambda: __import__("reporting"))]
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    tool = ["sh", "-c", 'echo "== tool starts"; "$@"; echo "== tool found 1 error"; exit 9', "tool"]
    # a report inside a case is attributed to it
    (tmp_path / "reporting.py").write_text("print('========= Invalid __global__ read of size 4', flush=True)\n")
    results = bad_input.run_matrix("cpu", [0, 1], prefix=tool, _extra="tool_cases:cases")
    assert results[0]["what"] == "accepted silently"
    assert results[-1]["outcome"] == "fail" and "status 9" in results[-1]["what"]
    assert "== tool found 1 error" in results[-1]["what"]
    assert "during reports: Invalid __global__ read of size 4" in results[-1]["what"]


# ---- the cases reported by hand ---------------------------------------------------------------

@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_pixels_give_a_defined_result(device, value):
    x = torch.rand(2, 3, 8, 8, device=device)
    x[0, 0, 0, 0] = value
    # equalize counts a NaN pixel as 0 (torch's NaN -> uint8 cast), inf as 1
    eq = F.equalize(x)
    assert eq.shape == x.shape and not eq.isnan().any()
    ops = torch.tensor([[12], [12]], device=device)
    assert torch.equal(F.color_program(x, ops, torch.zeros(2, 1, 2, device=device)), eq)
    # augment: a bilinear rotate spreads the value, equalize reads the result
    out = F.augment(x, ["rotate", "equalize"], [30.0, 0.0], interpolation="bilinear")
    assert out.shape == x.shape and not out[1].isnan().any()
    if device == "cuda":
        torch.cuda.synchronize()


def test_nan_pixel_equalize_matches_a_zero_pixel():
    x = torch.rand(1, 3, 8, 8)
    nan, zero = x.clone(), x.clone()
    nan[0, 1, 2, 3], zero[0, 1, 2, 3] = float("nan"), 0.0
    assert torch.equal(F.equalize(nan), F.equalize(zero))


@pytest.mark.parametrize("view", ["strided", "transposed", "stride0"])
def test_warp_affine_gradient_of_a_non_contiguous_input(device, view):
    base = torch.rand(2, 3, 16, 32, dtype=torch.float64, device=device)
    m = torch.tensor([[1.0, 0.2, 1.5], [-0.1, 0.9, 0.5]], dtype=torch.float64, device=device).expand(2, 2, 3)
    views = {"strided": lambda t: t[..., ::2], "transposed": lambda t: t.transpose(2, 3),
             "stride0": lambda t: t[:1].expand(2, -1, -1, -1)}
    a = base.clone().requires_grad_(True)
    b = base.clone().requires_grad_(True)
    F.warp_affine(views[view](a), m).square().sum().backward()
    F.warp_affine(views[view](b).contiguous(), m).square().sum().backward()
    torch.testing.assert_close(a.grad, b.grad)


def test_ragged_sizes_and_offsets_that_overflow_are_errors():
    data = torch.rand(3 * 8 * 8)
    box = torch.tensor([[0, 0, 4, 4]])
    with pytest.raises(RuntimeError, match=r"resized_crop_ragged: image 0 .* lies outside data of 192 elements"):
        T.resized_crop_ragged(data, torch.tensor([0]), torch.tensor([[2 ** 32, 2 ** 32]]), 3, False, box, [4, 4])
    with pytest.raises(RuntimeError, match=r"resized_crop_ragged: image 0 \(offset 9223372036854775708"):
        T.resized_crop_ragged(data, torch.tensor([2 ** 63 - 100]), torch.tensor([[4, 4]]), 3, False, box, [4, 4])


def test_huge_crop_boxes_are_refused_and_bounded(device):
    x = torch.rand(1, 3, 8, 8, device=device)
    with pytest.raises(ValueError, match=r"resized_crop: crop boxes must have 0 < height, width <= 1048576"):
        F.resized_crop(x, 0, 0, 10 ** 12, 10 ** 12, [8, 10])
    boxes = torch.tensor([[0, 0, 10 ** 12, 10 ** 12]], device=device)
    for call in (lambda: T.resized_crop(x, boxes, [8, 10]),
                 lambda: T._resized_crop_backward(torch.rand(1, 3, 8, 10, device=device), boxes, [1, 3, 8, 8], 1, True,
                                                  None, None, False)):
        if device == "cpu":
            with pytest.raises(RuntimeError, match=r"boxes must have 0 < height, width <= 1048576 .* got box 0"):
                call()
        else:  # not read on the GPU (a synchronisation): the kernels bound their taps, so it returns
            t0 = time.perf_counter()
            call()
            torch.cuda.synchronize()
            assert time.perf_counter() - t0 < 30
    # the largest box the ops take still runs in bounded time
    lim = 1 << 20
    t0 = time.perf_counter()
    F.resized_crop(x, -lim, -lim, lim, lim, [4, 4])
    assert time.perf_counter() - t0 < 30


def test_roi_align_sampling_ratio_is_bounded(device):
    x = torch.rand(1, 3, 8, 8, device=device)
    rois = torch.tensor([[0, 0, 0, 4, 4.0]], device=device)
    with pytest.raises(RuntimeError, match=r"roi_align: sampling_ratio must be <= 1024"):
        O.roi_align(x, rois, 7, sampling_ratio=2 ** 31)
    # an adaptive grid over a huge RoI stops at 1024 x 1024 points a bin
    huge = torch.tensor([[0, -1e9, -1e9, 1e9, 1e9]], device=device)
    t0 = time.perf_counter()
    O.roi_align(x, huge, 1, sampling_ratio=0)
    assert time.perf_counter() - t0 < 60


def test_resized_crop_backward_checks_its_boxes():
    with pytest.raises(RuntimeError, match=r"_resized_crop_backward: boxes must have shape \(B, 4\) with B=4096, got \(1, 4\)"):
        T._resized_crop_backward(torch.rand(4096, 3, 4, 4), torch.zeros(1, 4, dtype=torch.long), [4096, 3, 8, 8], 1, False,
                                 None, None, False)


def test_pad_symmetric_larger_than_the_image_is_an_error_on_the_host(device):
    x = torch.rand(1, 3, 12, 16, device=device)
    with pytest.raises(ValueError, match=r"pad: symmetric padding must be at most the image's size \(12x16\)"):
        F.pad(x, 40, padding_mode="symmetric")
    assert F.pad(x, [16, 12], padding_mode="symmetric").shape == (1, 3, 36, 48)  # equal to the size: allowed
    torch.zeros(1, device=device).sum().item()  # the device is still usable


def test_pad_errors_name_pad():
    x = torch.rand(2, 3, 4, 4)
    with pytest.raises(ValueError, match=r"torchaug.pad: padding \[-100, -100, -100, -100\] leaves no pixels"):
        F.pad(x, -100)
    with pytest.raises(ValueError, match=r"torchaug.pad: padding must be an int or a sequence of 1, 2 or 4 ints, one for the whole batch"):
        F.pad(x, torch.tensor([[1, 2, 3, 4], [0, 0, 0, 0]]))


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
def test_pad_keeps_channels_last(device, mode):
    x = torch.rand(2, 3, 12, 16, device=device).contiguous(memory_format=torch.channels_last)
    out = F.pad(x, [1, 2, 3, 4], padding_mode=mode)
    assert out.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(out, F.pad(x.contiguous(), [1, 2, 3, 4], padding_mode=mode))


def test_rotate_expand_of_an_empty_batch(device):
    x = torch.zeros(0, 3, 17, 11, dtype=torch.uint8, device=device)
    assert F.rotate(x, 10.0, expand=True).shape == (0, 3, 19, 15)
    assert torchaug.transforms.RandomRotation(30, expand=True)(x).shape[:2] == (0, 3)


@pytest.mark.parametrize("call, message", [
    (lambda x: F.normalize(x, [0.5] * 3, [float("nan"), 1, 1]), r"normalize: std must be finite"),
    (lambda x: F.rotate(x, float("nan")), r"rotate: angle must be a finite real number"),
    (lambda x: F.affine(x, 0.0, [0, 0], 0.0, [0.0, 0.0]), r"affine: scale must be positive"),
    (lambda x: F.mixup(x, torch.tensor([0, 1]), 3.0, 2), r"mixup: lam must be in \[0, 1\]"),
    (lambda x: F.cutmix_boxes(torch.tensor([1.5, 0.5], dtype=torch.float64), torch.zeros(2, 2, dtype=torch.long), 8, 8),
     r"cutmix_boxes: lam must be in \[0, 1\]"),
    (lambda x: F.adjust_brightness(x, torch.ones(2, dtype=torch.complex64)), r"adjust_brightness: brightness_factor must be a real"),
    (lambda x: F.adjust_brightness(x, torch.ones(2, device="meta")), r"adjust_brightness: brightness_factor must hold values"),
    (lambda x: T.adjust_brightness(x, None), r"torchaug::adjust_brightness: factor must be a tensor, got None"),
    (lambda x: T.adjust_brightness(x, torch.ones(2, device="meta")), r"torchaug::adjust_brightness: factor must be on the device"),
    (lambda x: T.color_program(x, None, torch.zeros(2, 1, 2)), r"torchaug::color_program: ops must be a tensor, got None"),
    (lambda x: T.normalize(x, torch.zeros(2, 3), torch.full((2, 3), float("inf"))), r"normalize: std must be finite"),
    (lambda x: T.warp_affine(x, torch.full((2, 2, 3), float("nan")), [4, 4]), r"warp_affine: matrices must be finite"),
    (lambda x: F.grayscale_to_rgb(x[:, :2]), r"grayscale_to_rgb: images must have 1 channel"),
    (lambda x: F.resize(x[:, :, :0], [4, 4]), r"images must have C, H, W > 0"),
    # a size whose bytes overflow int64: refused on every machine (a large one may grant a few TB and
    # the writes then meet the OOM killer)
    (lambda x: F.resize(x, [2 ** 31, 2 ** 31]), r"resized_crop: cannot allocate the output of shape \(2, 3, 2147483648, 2147483648\)"),
    (lambda x: F.resized_crop(x, float("nan"), 0, 4, 4, [8, 10]), r"resized_crop: top must be a finite real number"),
    (lambda x: torchaug.transforms.GaussianBlur(67), r"GaussianBlur: kernel_size must be an odd integer in \[1, 65\]"),
])
def test_errors_reported_by_hand(call, message):
    x = torch.rand(2, 3, 8, 8)
    with pytest.raises((RuntimeError, ValueError, TypeError), match=message):
        call(x)


def test_cpu_parameter_checks_read_strided_and_narrow_parameters_in_logical_order():
    # the checks walk a parameter where it lies (any strides, any real dtype): the index they report
    # is the row-major one of the tensor as the caller sees it
    x = torch.rand(2, 3, 8, 8)
    base = torch.tensor([[1.0, float("nan")], [float("nan"), 7.0]])
    with pytest.raises(RuntimeError, match=r"adjust_brightness: factor must be finite, got nan at flat index 1"):
        T.adjust_brightness(x, base[:, 0])  # stride 2: [1, nan]
    with pytest.raises(RuntimeError, match=r"adjust_brightness: factor must be finite, got inf at flat index 0"):
        T.adjust_brightness(x, torch.tensor([float("inf"), 1.0], dtype=torch.float16))
    for dtype in (torch.uint16, torch.uint32, torch.int8, torch.bfloat16):  # every real dtype is read
        assert torch.equal(T.adjust_brightness(x, torch.tensor([1, 0], dtype=dtype)), T.adjust_brightness(x, torch.tensor([1.0, 0.0])))
    m = torch.zeros(2, 3, 2)  # (B, 3, 2) seen as (B, 2, 3) through a transpose
    m[:, 0, 0] = m[:, 1, 1] = 1.0
    m[1, 2, 0] = float("nan")  # logical [1, 0, 2]: flat index 6 + 2
    with pytest.raises(RuntimeError, match=r"warp_affine: matrices must be finite, got nan at flat index 8"):
        T.warp_affine(x, m.transpose(1, 2), [8, 8], 0, None)
    fill = torch.tensor([0.5, 0.5, float("-inf")]).expand(2, 3)  # stride 0 on the batch
    with pytest.raises(RuntimeError, match=r"warp_affine: fill must be finite, got -inf at flat index 2"):
        T.warp_affine(x, m.transpose(1, 2).nan_to_num(), [8, 8], 0, fill)
    boxes = torch.tensor([[0, 0, 4, 4], [1, 1, 4, 0]]).t().contiguous().t()  # column-major (B, 4)
    with pytest.raises(RuntimeError, match=r"resized_crop: boxes must have 0 < height, width <= 1048576 .* got box 1 = \[1, 1, 4, 0\]"):
        T.resized_crop(x, boxes, [4, 4])
    good = torch.tensor([[0, 0, 4, 4], [1, 1, 4, 3]]).t().contiguous().t()
    assert torch.equal(T.resized_crop(x, good, [4, 4]), T.resized_crop(x, good.contiguous(), [4, 4]))
    std = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]]).t().contiguous().t()
    with pytest.raises(RuntimeError, match=r"normalize: std must not contain zeros"):
        T.normalize(x, torch.zeros(2, 3), std, None, None)


def test_raw_op_on_cpu_refuses_a_non_finite_parameter_and_the_gpu_documents_it(device):
    x = torch.rand(2, 3, 8, 8, device=device)
    factor = torch.tensor([1.0, float("nan")], device=device)
    if device == "cpu":
        with pytest.raises(RuntimeError, match=r"torchaug::adjust_brightness: factor must be finite, got nan at flat index 1"):
            T.adjust_brightness(x, factor)
    else:  # unchecked on the GPU (no synchronisation): a result, NaN where the factor is
        out = T.adjust_brightness(x, factor)
        assert out[1].isnan().all() and not out[0].isnan().any()


# ---- readers and the decoder ------------------------------------------------------------------

def _shard(path, n=5):
    with tarfile.open(path, "w") as t:
        for i in range(n):
            for ext, data in ((".jpg", bytes(range(256)) * 12), (".cls", str(i).encode())):
                info = tarfile.TarInfo(f"k{i}{ext}")
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
    return open(path, "rb").read()


def test_tar_shards_cut_short_are_errors_naming_the_shard(tmp_path):
    data = _shard(tmp_path / "full.tar")
    assert len(torchaug.io.TarShards([str(tmp_path / "full.tar")])) == 5
    cut_path = tmp_path / "cut.tar"
    outcomes = {"error": 0, "complete": 0}
    for cut in range(0, len(data), 173):
        cut_path.write_bytes(data[:cut])
        try:
            shards = torchaug.io.TarShards([str(cut_path)])
        except ValueError as e:
            assert str(cut_path) in str(e) and "byte" in str(e)
            outcomes["error"] += 1
            continue
        # only a cut inside the padding after the end-of-archive blocks reads, and then completely
        assert len(shards) == 5 and [shards[i][1] for i in range(5)] == list(range(5))
        outcomes["complete"] += 1
    assert outcomes["error"] > 0 and outcomes["complete"] > 0


def test_bad_label_member_is_an_error(tmp_path):
    with tarfile.open(tmp_path / "s.tar", "w") as t:
        for name, data in (("a.jpg", b"\xff\xd8xx"), ("a.cls", b"cat")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    with pytest.raises(ValueError, match=r"s.tar .*member 'a.cls' must hold an integer label, got 'cat'"):
        torchaug.io.TarShards([str(tmp_path / "s.tar")])


# ---- properties over valid extreme inputs ------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(h=st.integers(1, 40), w=st.integers(1, 40), oh=st.integers(1, 40), ow=st.integers(1, 40),
       top=st.integers(-(1 << 20), 1 << 20), left=st.integers(-(1 << 20), 1 << 20),
       bh=st.integers(1, 1 << 20), bw=st.integers(1, 1 << 20), mode=st.sampled_from(["nearest", "bilinear", "bicubic"]),
       antialias=st.booleans(), u8=st.booleans())
def test_resized_crop_of_any_valid_box_is_safe(h, w, oh, ow, top, left, bh, bw, mode, antialias, u8):
    x = torch.rand(1, 3, h, w)
    if u8:
        x = (x * 255).to(torch.uint8)
    out = F.resized_crop(x, top, left, bh, bw, [oh, ow], mode, antialias)
    assert out.shape == (1, 3, oh, ow) and out.dtype == x.dtype
    if not u8:
        assert torch.isfinite(out).all()


@settings(max_examples=60, deadline=None)
@given(m=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=6, max_size=6), oh=st.integers(1, 24),
       ow=st.integers(1, 24), bilinear=st.booleans())
def test_warp_affine_of_any_finite_matrix_is_safe(m, oh, ow, bilinear):
    x = torch.rand(1, 3, 9, 7)
    out = F.warp_affine(x, torch.tensor(m).view(2, 3), [oh, ow], "bilinear" if bilinear else "nearest")
    assert out.shape == (1, 3, oh, ow) and torch.isfinite(out).all()


@settings(max_examples=60, deadline=None)
@given(op=st.integers(1, 12), p0=st.floats(-1e30, 1e30, allow_nan=False), p1=st.floats(-1e30, 1e30, allow_nan=False),
       u8=st.booleans())
def test_color_program_of_any_finite_parameters_is_safe(op, p0, p1, u8):
    """The raw program op does not range-check its parameters (the transforms build valid ones):
    any finite value gives an image of the input's shape and range, never a crash."""
    x = torch.rand(2, 3, 6, 5)
    if u8:
        x = (x * 255).to(torch.uint8)
    if op == 8:  # posterize: bits as the kernel reads them
        p0 = float(min(max(p0, 0), 8))
    out = F.color_program(x, torch.full((2, 1), op), torch.tensor([p0, p1]).expand(2, 1, 2))
    assert out.shape == x.shape
    if not u8:
        assert not (out < 0).any() and not (out > 1).any()
