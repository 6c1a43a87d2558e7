"""torch.ops.torchaug.decode_jpeg and torchaug.io: PIL parity on the CPU (the same libjpeg-turbo
math), CPU <-> CUDA agreement (nvJPEG), EXIF orientation, grayscale / CMYK / progressive sources, a
generated corpus of bad files, skip mode, the byte readers and the prefetcher's decode stage."""
import io
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from PIL import Image, ImageOps

import torchaug
from torchaug.io import (EncodedImages, ImageFolderBytes, TarShards, collate_encoded, decode_jpeg,
                         decode_jpeg_ragged, read_file, write_tar_shards)

from conftest import ASSETS, CUDA, DEVICES, hooked, requires_cuda


def _encode(img: Image.Image, **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "JPEG", **kw)
    return buf.getvalue()


def _photo(i=0, size=None) -> Image.Image:
    im = Image.open(ASSETS[i % len(ASSETS)]).convert("RGB")
    return im.resize(size) if size else im


def _bytes(b: bytes) -> torch.Tensor:
    return torch.frombuffer(bytearray(b), dtype=torch.uint8)


# one file of each kind the decoders must take (name -> bytes)
KINDS = {
    "baseline420": lambda: _encode(_photo(0), quality=90),
    "baseline444": lambda: _encode(_photo(1), quality=92, subsampling=0),
    "baseline422": lambda: _encode(_photo(2), quality=85, subsampling=1),
    "progressive": lambda: _encode(_photo(3), quality=90, progressive=True),
    "odd_size": lambda: _encode(_photo(0, (333, 217)), quality=90),
    "grayscale": lambda: _encode(_photo(1).convert("L"), quality=90),
    # a grayscale component with sampling factors 2x2 / 2x1 (as jpegtran -grayscale leaves a 4:2:0
    # file's luma): nvJPEG's hardware decoder got these wrong, so they take the hybrid decoder
    "grayscale_h2v2": lambda: _encode(_photo(1).convert("L"), quality=90, subsampling=2),
    "grayscale_h2v1": lambda: _encode(_photo(2).convert("L"), quality=85, subsampling=1),
    "cmyk": lambda: _encode(_photo(2, (200, 150)).convert("CMYK"), quality=95),
}


def _pil_reference(data: bytes, mode: str) -> np.ndarray:
    im = Image.open(io.BytesIO(data))
    if mode == "gray" and im.mode != "CMYK":
        im.draft("L", im.size)  # libjpeg's own grayscale output (the Y plane), as decode_jpeg's
        return np.asarray(im.convert("L"))[None]
    im = im.convert("RGB")
    if mode == "gray":
        return np.asarray(im.convert("L"))[None]
    return np.asarray(im).transpose(2, 0, 1)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_cpu_equals_pil(kind):
    data = KINDS[kind]()
    out = decode_jpeg(_bytes(data), mode="rgb")
    ref = _pil_reference(data, "rgb")
    assert out.dtype == torch.uint8 and tuple(out.shape) == ref.shape
    diff = np.abs(out.numpy().astype(int) - ref.astype(int))
    # the same libjpeg-turbo decoder with the same settings: identical, except CMYK whose RGB is
    # PIL's formula rounded the same way (at most 1 apart)
    assert diff.max() <= (1 if kind == "cmyk" else 0), (kind, diff.max())


@pytest.mark.parametrize("kind", ["baseline420", "grayscale", "progressive"])
def test_cpu_gray_and_unchanged_modes(kind):
    data = KINDS[kind]()
    gray = decode_jpeg(_bytes(data), mode="gray")
    np.testing.assert_array_equal(gray.numpy(), _pil_reference(data, "gray"))
    unchanged = decode_jpeg(_bytes(data), mode="unchanged")
    assert unchanged.shape[0] == (1 if kind == "grayscale" else 3)
    np.testing.assert_array_equal(unchanged.numpy(), decode_jpeg(_bytes(data), mode="gray" if kind == "grayscale" else "rgb").numpy())


def _with_orientation(o: int) -> bytes:
    im = _photo(1, (61, 37))
    exif = Image.Exif()
    exif[0x0112] = o
    return _encode(im, quality=95, exif=exif.tobytes())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation(device, orientation):
    data = _with_orientation(orientation)
    stored = decode_jpeg(_bytes(data), device="cpu")
    shown = decode_jpeg(_bytes(data), device=device, apply_exif_orientation=True).cpu()
    ref = np.asarray(ImageOps.exif_transpose(Image.open(io.BytesIO(data)).convert("RGB"))).transpose(2, 0, 1)
    if device == "cpu":
        np.testing.assert_array_equal(shown.numpy(), ref)
    assert tuple(shown.shape) == ref.shape
    # orientation applied to the stored pixels of the same backend: exact
    stored_dev = decode_jpeg(_bytes(data), device=device).cpu()
    expected = np.asarray(ImageOps.exif_transpose(_to_pil_with_exif(stored_dev.numpy(), orientation))).transpose(2, 0, 1)
    np.testing.assert_array_equal(shown.numpy(), expected)
    assert tuple(decode_jpeg(_bytes(data), device=device).shape) == tuple(stored.shape)


def _to_pil_with_exif(chw: np.ndarray, orientation: int) -> Image.Image:
    im = Image.fromarray(chw.transpose(1, 2, 0))
    im.getexif()[0x0112] = orientation
    return im


def test_batch_views_share_one_buffer_and_ragged():
    files = [read_file(p) for p in ASSETS]
    images = decode_jpeg(files)
    assert len(images) == len(ASSETS)
    assert len({im.untyped_storage().data_ptr() for im in images}) == 1
    for p, im in zip(ASSETS, images):
        np.testing.assert_array_equal(im.numpy(), _pil_reference(open(p, "rb").read(), "rgb"))
    ragged = decode_jpeg_ragged(files)
    for a, b in zip(ragged.images(), images):
        assert torch.equal(a, b)
    # RandomResizedCrop over the decoded views reads the buffer in place (no packing copy) and
    # equals the crop of each image
    boxes = torch.tensor([[10, 20, 100, 120]] * len(images))
    out = torchaug.functional.resized_crop_boxes(images, boxes, [64, 64])
    for i, im in enumerate(images):
        assert torch.equal(out[i], torchaug.functional.resized_crop_boxes(im.clone()[None], boxes[:1], [64, 64])[0])


# ---- bad files ----------------------------------------------------------------------------------

def _good() -> bytes:
    return KINDS["baseline420"]()


def _sos_end(data: bytes) -> int:
    i = data.index(b"\xff\xda")
    return i + 2 + int.from_bytes(data[i + 2:i + 4], "big")


def _sof_at(data: bytes) -> int:
    for marker in (b"\xff\xc0", b"\xff\xc2"):
        if marker in data:
            return data.index(marker)
    raise AssertionError("no SOF")


def _bad_corpus():
    good = _good()
    sof = _sof_at(good)
    sos = _sos_end(good)
    huge = bytearray(good)
    huge[sof + 5:sof + 9] = (65500).to_bytes(2, "big") + (65500).to_bytes(2, "big")
    # within the pixel limit (16384 x 16384 = 2**28), but a few hundred bytes cannot hold its 1M MCUs:
    # refused from the header, before a gigabyte is allocated
    claims_16k = bytearray(good)
    claims_16k[sof + 5:sof + 9] = (16384).to_bytes(2, "big") + (16384).to_bytes(2, "big")
    zero_w = bytearray(good)
    zero_w[sof + 7:sof + 9] = b"\x00\x00"
    bad_len = bytearray(good)
    bad_len[sof + 2:sof + 4] = b"\x00\x01"
    damaged = bytearray(good)
    mid = (sos + len(good)) // 2
    damaged[mid:mid + 64] = b"\xff\xd0" * 32  # restart markers where there are none: broken data
    twelve_bit = bytearray(good)
    twelve_bit[sof + 4] = 12
    png = io.BytesIO()
    _photo(0, (16, 16)).save(png, "PNG")
    return {
        "empty": (b"", "the data is empty"),
        "not_jpeg_png": (png.getvalue(), "not a JPEG"),
        "not_jpeg_text": (b"hello world, not an image", "not a JPEG"),
        "truncated_header": (good[:sof + 4], "truncated"),
        "truncated_scan": (good[: (sos + len(good)) // 2], "truncated"),
        "truncated_no_eoi": (good[:-2], "truncated"),
        "absurd_size": (bytes(huge), "image too large"),
        "header_claims_16384_squared": (bytes(claims_16k), "truncated"),
        "zero_width": (bytes(zero_w), "corrupt JPEG header"),
        "bad_segment_length": (bytes(bad_len), "corrupt JPEG header"),
        "twelve_bit": (bytes(twelve_bit), "unsupported"),
        "damaged_data": (bytes(damaged), "corrupt JPEG data"),
    }


BAD = _bad_corpus()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_file_is_an_error_naming_the_sample(device, name):
    data, reason = BAD[name]
    good = _bytes(_good())
    with pytest.raises(RuntimeError, match=rf"decode_jpeg: sample 1 \({len(data)} bytes\): {reason}"):
        decode_jpeg([good, _bytes(data) if data else torch.empty(0, dtype=torch.uint8), good], device=device)
    # the process and the device stay usable
    out = decode_jpeg([good], device=device)
    assert out[0].shape[0] == 3
    if device == "cuda":
        torch.cuda.synchronize()


@pytest.mark.parametrize("device", DEVICES)
def test_parse_threads_split_the_batch_not_the_results(device):
    """The threads of the header parse (4 by default; the decode_parse_threads hook sets them): the
    batch is split into that many chunks at most; the statuses and pixels are the same for every
    split."""
    names = sorted(BAD)
    good = [_bytes(KINDS[k]()) for k in ("baseline420", "progressive", "grayscale")]
    batch = []
    for i in range(40):
        name = names[i % len(names)]
        batch.append(_bytes(BAD[name][0]) if i % 3 == 1 and BAD[name][0] else good[i % 3])
    results = {}
    for threads in (1, 3, 64, -1):
        with hooked("decode_parse_threads", threads):
            images, failures = decode_jpeg(batch, device=device, on_error="skip")
        results[threads] = ([t.cpu() for t in images], failures)
    base_images, base_failures = results[1]
    assert len(base_failures) > 5 and len(base_images) == 40 - len(base_failures)
    for threads, (images, failures) in results.items():
        assert failures == base_failures, threads
        assert all(torch.equal(a, b) for a, b in zip(images, base_images)), threads


@pytest.mark.parametrize("device,hw_load", [(d, None) for d in DEVICES] + ([("cuda", 0.0)] if CUDA else []))
def test_skip_mode_reports_and_keeps_the_good_ones(device, hw_load):
    """hw_load=0.0: every file through the hybrid decoder's lanes (CPU threads), none through the
    hardware engines."""
    names = sorted(BAD)
    good = [_bytes(KINDS[k]()) for k in ("baseline420", "progressive", "grayscale")]
    batch, expected_bad = [], []
    for i, name in enumerate(names):
        batch.append(good[i % 3])
        batch.append(_bytes(BAD[name][0]) if BAD[name][0] else torch.empty(0, dtype=torch.uint8))
        expected_bad.append((2 * i + 1, BAD[name][1]))
    images, failures = decode_jpeg(batch, device=device, on_error="skip", hw_load=hw_load)
    assert [i for i, _ in failures] == [i for i, _ in expected_bad]
    for (i, reason), (_, want) in zip(failures, expected_bad):
        assert reason.startswith(want) or want in reason, (i, reason, want)
    alone = decode_jpeg([batch[i] for i in range(0, len(batch), 2)], device=device, hw_load=hw_load)
    assert len(images) == len(alone)
    for a, b in zip(images, alone):
        assert torch.equal(a, b)


def test_argument_errors():
    good = _bytes(_good())
    with pytest.raises(ValueError, match="mode must be"):
        decode_jpeg(good, mode="cmyk")
    with pytest.raises(ValueError, match="on_error must be"):
        decode_jpeg(good, on_error="ignore")
    with pytest.raises(RuntimeError, match=r"data\[0\] must be uint8, got Float"):
        torch.ops.torchaug.decode_jpeg([good.float()], 3, False, False, None)
    with pytest.raises(RuntimeError, match=r"data\[1\] must be 1-D"):
        torch.ops.torchaug.decode_jpeg([good, good.view(1, -1)], 3, False, False, None)
    with pytest.raises(RuntimeError, match="mode must be 0"):
        torch.ops.torchaug.decode_jpeg([good], 2, False, False, None)
    with pytest.raises(TypeError, match="input 0 must be a uint8 tensor or bytes"):
        decode_jpeg([3])
    for bad in (1.5, -0.1, float("nan"), "half", True):
        with pytest.raises(ValueError, match=r"hw_load must be None or a number in \[0, 1\]"):
            decode_jpeg(good, hw_load=bad)
    for bad in (1.5, -0.1, float("nan")):
        with pytest.raises(RuntimeError, match=r"decode_jpeg: hw_load must be in \[0, 1\]"):
            torch.ops.torchaug.decode_jpeg([good], 3, False, False, None, bad)
    if CUDA:
        with pytest.raises(RuntimeError, match=r"data\[0\] must be a CPU tensor"):
            torch.ops.torchaug.decode_jpeg([good.cuda()], 3, False, False, torch.device("cuda"))


def test_opcheck():
    files = [_bytes(KINDS[k]()) for k in ("baseline420", "grayscale")]
    torch.library.opcheck(torch.ops.torchaug.decode_jpeg.default, (files, 3, False, False, torch.device("cpu")),
                          test_utils=("test_schema", "test_faketensor"))


# ---- CUDA: nvJPEG --------------------------------------------------------------------------------

# nvJPEG is not libjpeg-turbo, but with interpolated chroma upsampling (the flag the decoder sets)
# they nearly agree. Measured on the H100: baseline files max |diff| 1 (mean
# < 0.001), progressive ones mean 0.026 and max 3, grayscale / 4:4:4 / CMYK identical. Without the
# flag (nvJPEG's default chroma replication) subsampled files differed by up to 57 levels.
@requires_cuda
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("mode", ["rgb", "gray"])
def test_cuda_agrees_with_cpu(kind, mode):
    data = _bytes(KINDS[kind]())
    cpu = decode_jpeg(data, mode=mode).int()
    gpu = decode_jpeg(data, device="cuda", mode=mode)
    assert gpu.is_cuda and gpu.shape == cpu.shape
    diff = (gpu.cpu().int() - cpu).abs().float()
    assert diff.mean() < 0.1 and diff.max() <= 4, (kind, mode, diff.mean().item(), diff.max().item())


def _subsampled_files(sizes):
    """4:4:4, 4:2:2 and 4:2:0 files of each size (PIL writes no 4:4:0)."""
    return [_encode(_photo(k, size), quality=80 + k, subsampling=sub) for k, size in enumerate(sizes) for sub in (0, 1, 2)]


# The hardware batch's colour conversion is nvJPEG's (chroma upsampled by interpolation, as
# libjpeg-turbo's): within the decoder's bound of libjpeg-turbo, on sizes whose chroma planes end in
# half a sample, and bitwise the same when decoded twice.
@requires_cuda
def test_cuda_conversion_agrees_with_cpu():
    subs = {0: "4:4:4", 1: "4:2:2", 2: "4:2:0"}
    rows = []
    for sizes in ([(500, 375), (375, 500), (333, 217), (129, 65), (37, 23)], [(3, 5), (4, 9), (1, 1), (2, 7)]):
        files = _subsampled_files(sizes)
        data = [_bytes(b) for b in files] + [_bytes(_encode(_photo(0, sizes[0]).convert("L"), quality=90))]
        cpu = decode_jpeg(data)
        gpu = decode_jpeg(data, device="cuda", hw_load=1.0)
        again = decode_jpeg(data, device="cuda", hw_load=1.0)
        for i, (g, a, c) in enumerate(zip(gpu, again, cpu)):
            assert g.shape == c.shape and torch.equal(g, a), (sizes, i)
            diff = (g.cpu().int() - c.int()).abs().float()
            kind = "gray" if i == len(files) else subs[i % 3]
            rows.append((sizes[i // 3] if i < len(files) else sizes[0], kind, diff.mean().item(), int(diff.max())))
    for size, kind, mean, worst in rows:
        print(f"{size} {kind}: mean |gpu - cpu| {mean:.4f}, max {worst}")
    # nvJPEG's conversion is within 1 level on images of 16 pixels or more a side, and off by up to
    # 13 on smaller subsampled ones (its chroma edges): those rows are printed, not bounded
    bad = [r for r in rows if min(r[0]) >= 16 and not (r[2] < 0.1 and r[3] <= 4)]
    assert not bad, bad


@requires_cuda
@pytest.mark.parametrize("hw_load", [1.0, 0.0])
def test_cuda_batch_mixes_every_path(hw_load):
    """Hardware-decodable, progressive (hybrid), grayscale and CMYK (libjpeg + copy) files in one
    batch, with EXIF orientations: each sample equals its own single-file decode (hw_load 1: the
    hardware engines take what they can; 0: the hybrid decoder's lanes take everything)."""
    files = [_bytes(KINDS[k]()) for k in sorted(KINDS)] * 5 + [_bytes(_with_orientation(o)) for o in range(1, 9)]
    batch = decode_jpeg(files, device="cuda", apply_exif_orientation=True, hw_load=hw_load)
    for f, got in zip(files, batch):
        assert torch.equal(got, decode_jpeg(f, device="cuda", apply_exif_orientation=True, hw_load=hw_load))


@requires_cuda
@pytest.mark.parametrize("hw_load", [1.0, 0.5])
@pytest.mark.parametrize("apply_exif_orientation", [False, True])
def test_cuda_files_failing_only_their_scan_check_leave_no_slot(hw_load, apply_exif_orientation):
    """The CUDA decoder checks the scans of its hardware batches while the engines decode them: files
    whose headers parse but whose scans are damaged (truncated, no EOI, restart markers where there
    are none) are decoded into slots that are then dropped. The ragged batch holds only the good files,
    laid out as the CPU lays them out, bitwise what decoding the good files alone gives; a bad file
    first, last, twice in a row, and a batch of only bad files included; hw_load 0.5 sends a share of
    the files to the lanes (checked before they decode)."""
    scan_bad = [_bytes(BAD[n][0]) for n in ("truncated_scan", "truncated_no_eoi", "damaged_data")]
    good = [_bytes(KINDS[k]()) for k in ("baseline420", "baseline444", "odd_size", "progressive")]
    good.append(_bytes(_with_orientation(6)))
    batch, is_bad = [], []
    for i in range(30):
        for k in range((i % 4 == 0) + (i == 8)):  # two in a row at i == 8
            batch.append(scan_bad[(i + k) % 3])
            is_bad.append(True)
        batch.append(good[i % len(good)])
        is_bad.append(False)
    batch.append(scan_bad[0])
    is_bad.append(True)
    kw = dict(on_error="skip", apply_exif_orientation=apply_exif_orientation)
    gpu, gpu_failures = decode_jpeg_ragged(batch, device="cuda", hw_load=hw_load, **kw)
    cpu, cpu_failures = decode_jpeg_ragged(batch, device="cpu", **kw)
    assert [i for i, _ in gpu_failures] == [i for i, b in enumerate(is_bad) if b]
    assert gpu_failures == cpu_failures
    assert gpu.sizes == cpu.sizes and gpu.offsets == cpu.offsets and gpu.data.numel() == cpu.data.numel()
    alone = decode_jpeg_ragged([f for f, b in zip(batch, is_bad) if not b], device="cuda", hw_load=hw_load,
                               apply_exif_orientation=apply_exif_orientation)
    assert torch.equal(gpu.data, alone.data)
    none_good, failures = decode_jpeg_ragged(scan_bad, device="cuda", hw_load=hw_load, **kw)
    assert len(none_good) == 0 and none_good.data.numel() == 0 and len(failures) == 3
    with pytest.raises(RuntimeError, match=r"decode_jpeg: sample 2 \(\d+ bytes\): corrupt JPEG data"):
        decode_jpeg(good[:2] + scan_bad[2:], device="cuda", hw_load=hw_load)


def _sized_photos(n):
    """n baseline files of assorted sizes and qualities: 4:4:4 (i % 3 == 0) or 4:2:0, grayscale
    when i % 5 == 4 (its component sampled 1x1 when i % 3 == 0, else 2x2)."""
    out = []
    for i in range(n):
        im = _photo(i, (96 + 37 * (i % 9), 64 + 29 * (i % 7)))
        if i % 5 == 4:
            im = im.convert("L")
        out.append(_encode(im, quality=70 + 3 * (i % 10), subsampling=0 if i % 3 == 0 else 2))
    return out


@requires_cuda
@pytest.mark.parametrize("mode", ["rgb", "gray"])
def test_cuda_hardware_and_hybrid_shares_agree_with_cpu(mode):
    """A batch of 96 files split between the hardware engines and the hybrid decoder's lanes at
    several shares: every sample within nvJPEG's bound of the CPU decoder, the same share decodes
    bitwise the same twice (the lanes take samples in any order), and each sample equals its
    hardware decode (hw_load=1) or its hybrid one (hw_load=0), the first round(hw_load * n) of the
    files the hardware takes the former."""
    data = [_bytes(b) for b in _sized_photos(96)]
    cpu = decode_jpeg(data, mode=mode)
    all_hardware = decode_jpeg(data, device="cuda", mode=mode, hw_load=1.0)
    all_hybrid = decode_jpeg(data, device="cuda", mode=mode, hw_load=0.0)
    for load in (0.0, 0.3, 0.75, 1.0):
        first = decode_jpeg(data, device="cuda", mode=mode, hw_load=load)
        again = decode_jpeg(data, device="cuda", mode=mode, hw_load=load)
        # what the hardware takes: all but the grayscale files with 2x2 sampling (_sized_photos)
        on_hardware = [i for i in range(len(data)) if not (i % 5 == 4 and i % 3 != 0)]
        on_hardware = set(on_hardware[:round(load * len(on_hardware))])
        for i, (a, b, ref) in enumerate(zip(first, again, cpu)):
            assert torch.equal(a, b), (load, i)
            assert torch.equal(a, (all_hardware if i in on_hardware else all_hybrid)[i]), (load, i)
            diff = (a.cpu().int() - ref.int()).abs().float()
            assert diff.mean() < 0.1 and diff.max() <= 4, (load, i, diff.mean().item(), diff.max().item())


def _in_threads(run, n):
    """run(k) for k in 0..n-1, each on a thread of its own, all at once; the first failure is raised."""
    import threading

    errors = []

    def guarded(k):
        try:
            run(k)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


@requires_cuda
@pytest.mark.parametrize("decoders", ["1", "2"])
def test_cuda_hybrid_lanes_under_concurrent_callers(decoders, monkeypatch):
    """Two Python threads decoding at once on the hybrid decoder's lanes (the Prefetcher's producer
    beside a user's call; taking turns on one decoder, or each on a decoder of its own with its own
    lanes): each gets its own batch right."""
    data = [_bytes(b) for b in _sized_photos(40)]
    expected = [t.clone() for t in decode_jpeg(data, device="cuda", hw_load=0.0)]
    monkeypatch.setenv("TORCHAUG_NVJPEG_DECODERS", decoders)

    def run(k):
        for _ in range(5):
            got = decode_jpeg(data[k::2], device="cuda", hw_load=0.0)
            torch.cuda.synchronize()
            assert all(torch.equal(a, b) for a, b in zip(got, expected[k::2]))

    _in_threads(run, 2)


@requires_cuda
@pytest.mark.parametrize("decoders", ["1", "2", "3"])
def test_cuda_concurrent_callers_take_their_own_decoders(decoders, monkeypatch):
    """Three threads decoding batches at once, each call on a decoder of the device's pool (its own
    nvJPEG handle, state and stream; TORCHAUG_NVJPEG_DECODERS of them at most, read at each call: the
    other calls wait for one): every batch bitwise what one thread alone gets, in RGB and gray. One
    thread's batches hold a damaged file, which makes nvJPEG reject the batch on whichever decoder
    takes it: skip mode drops that file only, the error names its index."""
    data = [_bytes(b) for b in _sized_photos(128)]
    damaged = _bytes(BAD["damaged_data"][0])
    expected = {m: [t.clone() for t in decode_jpeg(data, device="cuda", mode=m)] for m in ("rgb", "gray")}
    monkeypatch.setenv("TORCHAUG_NVJPEG_DECODERS", decoders)

    def run(k):
        for j in range(4):
            mode = ("rgb", "gray")[(k + j) % 2]
            part = slice(k * 8, k * 8 + 64 + 16 * j)
            want = expected[mode][part]
            if k == 2:
                batch = data[part][:10] + [damaged] + data[part][10:]
                got, failures = decode_jpeg(batch, device="cuda", mode=mode, on_error="skip")
                assert [i for i, _ in failures] == [10], failures
                with pytest.raises(RuntimeError, match=r"decode_jpeg: sample 10 \("):
                    decode_jpeg(batch, device="cuda", mode=mode)
            else:
                got = decode_jpeg(data[part], device="cuda", mode=mode)
            torch.cuda.synchronize()
            assert len(got) == len(want)
            assert all(torch.equal(a, b) for a, b in zip(got, want)), (k, j)

    _in_threads(run, 3)


@requires_cuda
def test_decoders_env_is_checked(monkeypatch):
    monkeypatch.setenv("TORCHAUG_NVJPEG_DECODERS", "0")
    with pytest.raises(RuntimeError, match=r"TORCHAUG_NVJPEG_DECODERS must be an integer in \[1, 16\], got '0'"):
        decode_jpeg([_bytes(_good())], device="cuda")


@pytest.mark.skipif(not CUDA or torch.cuda.device_count() < 2, reason="needs 2 CUDA devices (the multi-GPU device machine)")
def test_cuda_decode_on_the_second_gpu():
    """A decode on cuda:1 while cuda:0 is current must decode in cuda:1's context (a decode thread
    that ran in device 0's context made an illegal memory access under DDP) and give what cuda:0
    gives."""
    files = [_bytes(KINDS["baseline420"]()) for _ in range(64)]
    torch.cuda.set_device(0)
    on0 = decode_jpeg(files, device="cuda:0")
    on1 = decode_jpeg(files, device="cuda:1")
    torch.cuda.synchronize(1)
    assert all(t.device == torch.device("cuda", 1) for t in on1)
    for a, b in zip(on0, on1):
        assert torch.equal(a.cpu(), b.cpu())


@requires_cuda
def test_cuda_input_may_be_reused_right_after_the_call():
    """The bytes are pinned (as a DataLoader with pin_memory=True hands them over) and overwritten as
    soon as decode_jpeg returns: the decoded pixels must not change."""
    files = [_bytes(KINDS["baseline420"]()) for _ in range(64)]
    expected = decode_jpeg(files, device="cuda")
    torch.cuda.synchronize()
    packed = EncodedImages.from_bytes(files).pin_memory()
    got = decode_jpeg(packed, device="cuda")
    packed.data.fill_(0)
    torch.cuda.synchronize()
    for a, b in zip(got, expected):
        assert torch.equal(a, b)


@requires_cuda
def test_cuda_pinned_and_pageable_files_in_one_batch():
    """A batch mixing files in page-locked memory (a pinned buffer's views, as a DataLoader with
    pin_memory=True hands them over) and in pageable memory (separate tensors, a pageable buffer's
    views) decodes as the same files all pinned do, and the pageable bytes may be overwritten as soon
    as the call returns."""
    files = [_bytes(_encode(_photo(i, (160 + 16 * i, 120 + 8 * i)), quality=85 + i % 10)) for i in range(40)]
    pinned = EncodedImages.from_bytes(files).pin_memory().tensors()
    expected = [t.clone() for t in decode_jpeg(pinned, device="cuda")]
    pageable_buffer = list(torch.cat(files[20:]).split([f.numel() for f in files[20:]]))
    mixed = [pinned[i] if i % 3 == 0 else f.clone() for i, f in enumerate(files[:20])] + pageable_buffer
    assert mixed[0].is_pinned() and not mixed[1].is_pinned() and not mixed[25].is_pinned()
    got = decode_jpeg(mixed, device="cuda")
    for f in mixed:
        if not f.is_pinned():
            f.fill_(0)
    torch.cuda.synchronize()
    for i, (a, b) in enumerate(zip(got, expected)):
        assert torch.equal(a, b), i


@requires_cuda
def test_cuda_decode_does_not_overwrite_memory_queued_work_still_reads():
    # nvJPEG's hardware decoder starts writing without waiting for the work queued on the stream it
    # is given (meta-pytorch/torchcodec#1634): a block freed while a kernel queued on the caller's
    # stream still reads it must not become the decoder's output
    files = [_bytes(KINDS["baseline420"]())] * 16
    expected = [t.clone() for t in decode_jpeg(files, device="cuda")]
    total = sum(t.numel() for t in expected)
    torch.cuda.synchronize()
    for _ in range(10):
        x = torch.full((total,), 7, dtype=torch.uint8, device="cuda")
        torch.cuda._sleep(20_000_000)  # ~10 ms of queued work before the sum reads x
        s = x.sum(dtype=torch.int64)
        del x  # x's block goes back to the stream's pool while the sum is still queued
        got = decode_jpeg(files, device="cuda")
        assert s.item() == 7 * total
        for a, b in zip(got, expected):
            assert torch.equal(a, b)


@requires_cuda
def test_cuda_back_to_back_batches_each_decode_right():
    # the batched decoder's state is reused by the next call while the GPU may still be finishing
    # the previous batch (the decoder waits for it first); batches of growing sizes also outgrow the
    # buffers preallocated from the first one. Each batch, decoded right after the one before with
    # nothing synchronised in between, must equal its decode with the GPU idle before it.
    sizes = [(160, 120), (500, 375), (640, 480), (333, 217), (800, 600)]
    batches = [[_bytes(_encode(_photo(i + j, size), quality=88 + j % 5)) for j in range(24 + 8 * i)]
               for i, size in enumerate(sizes)]
    got = [decode_jpeg(b, device="cuda") for b in batches * 3]
    for b, out in zip(batches * 3, got):
        torch.cuda.synchronize()
        alone = decode_jpeg(b, device="cuda")
        torch.cuda.synchronize()
        for a, e in zip(out, alone):
            assert torch.equal(a, e)


@requires_cuda
@pytest.mark.parametrize("hw_load", [1.0, 0.0])
def test_cuda_decode_follows_the_callers_stream_priority(hw_load):
    """The decoder's streams take the priority of the caller's stream (the Prefetcher's side streams
    are urgent ones). Batches decoded back to back from streams of alternating priorities (the
    decoder swaps its stream each time, the new one waiting for the old one's work), nothing
    synchronised in between, each equal their decode on the default stream with the GPU idle; the
    trace shows the decoder's stream at the caller's priority (hw_load 0: the lanes' path)."""
    urgent = torch.cuda.Stream(priority=-1)
    assert urgent.priority < 0
    batches = [[_bytes(_encode(_photo(i + j, (200 + 40 * i, 150 + 30 * i)), quality=90)) for j in range(20 + 4 * i)]
               for i in range(4)]
    got = []
    for k, b in enumerate(batches * 3):
        with torch.cuda.stream(urgent if k % 2 == 0 else torch.cuda.default_stream()):
            got.append(decode_jpeg(b, device="cuda", hw_load=hw_load))
    torch.cuda.current_stream().wait_stream(urgent)
    for b, out in zip(batches * 3, got):
        torch.cuda.synchronize()
        for a, e in zip(out, decode_jpeg(b, device="cuda", hw_load=hw_load)):
            assert torch.equal(a, e)

    import subprocess
    child = f"""
import torch, sys
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
from torchaug.io import decode_jpeg
from test_decode import _bytes, _encode, _photo
files = [_bytes(_encode(_photo(j, (120, 90)))) for j in range(6)]
urgent = torch.cuda.Stream(priority=-1)
print("urgent", urgent.priority, file=sys.stderr, flush=True)
for s in (urgent, torch.cuda.default_stream(), urgent):
    with torch.cuda.stream(s):
        decode_jpeg(files, device="cuda", hw_load={hw_load})
torch.cuda.synchronize()
"""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, TORCHAUG_DECODE_TRACE="1", PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stderr.splitlines()
    urgent_priority = int(next(x for x in lines if x.startswith("urgent")).split()[1])
    seen = [int(x.rsplit("(", 1)[1].rstrip(")")) for x in lines if "decoder stream priority" in x]
    assert seen == [urgent_priority, 0, urgent_priority], seen


def _hardware_files(n, size=(120, 90)):
    """n baseline 4:2:0 RGB files of growing widths: all of them for the hardware engines."""
    return [_bytes(_encode(_photo(j, (size[0] + 8 * j, size[1])), quality=85)) for j in range(n)]


@requires_cuda
def test_cuda_rejected_batches_are_retried_and_lane_failures_reported():
    """The nvjpeg_reject hook at 1 makes every hardware batch one that nvJPEG rejected: its files are
    retried one by one on the lanes, bitwise the lanes' own decode (hw_load=0), in RGB and gray. At 2
    the retried files fail there too: the error names sample 0, skip mode reports every file, and the
    next call decodes again (the decoder stays usable)."""
    files = _hardware_files(24)
    for mode in ("rgb", "gray"):
        lanes = [t.clone() for t in decode_jpeg(files, device="cuda", mode=mode, hw_load=0.0)]
        with hooked("nvjpeg_reject", 1):
            got = decode_jpeg(files, device="cuda", mode=mode, hw_load=1.0)
            torch.cuda.synchronize()
        assert len(got) == len(files) and all(torch.equal(a, b) for a, b in zip(got, lanes)), mode
        with hooked("nvjpeg_reject", 2):
            with pytest.raises(RuntimeError, match=r"decode_jpeg: sample 0 \(\d+ bytes\): .*nvjpeg_reject test hook"):
                decode_jpeg(files, device="cuda", mode=mode, hw_load=1.0)
            none, failures = decode_jpeg_ragged(files, device="cuda", mode=mode, hw_load=1.0, on_error="skip")
        assert len(none) == 0 and [i for i, _ in failures] == list(range(len(files)))
        again = decode_jpeg(files, device="cuda", mode=mode, hw_load=1.0)
        torch.cuda.synchronize()
        assert all(torch.equal(a, b) for a, b in zip(again, decode_jpeg(files, device="cuda", mode=mode)))


@requires_cuda
def test_cuda_memory_flat_over_many_batches():
    files = [_bytes(KINDS["baseline420"]()), _bytes(KINDS["progressive"]())] * 8
    for _ in range(20):
        decode_jpeg(files, device="cuda")
    torch.cuda.synchronize()
    free0, _ = torch.cuda.mem_get_info()
    allocated0 = torch.cuda.memory_allocated()
    for _ in range(400):
        decode_jpeg(files, device="cuda")
    torch.cuda.synchronize()
    free1, _ = torch.cuda.mem_get_info()
    assert torch.cuda.memory_allocated() == allocated0
    assert free0 - free1 < 16 << 20, (free0 - free1)


# ---- readers and the prefetcher --------------------------------------------------------------------

@pytest.fixture()
def folder(tmp_path):
    for c in ("cat", "dog"):
        os.makedirs(tmp_path / c)
    for i in range(10):
        (tmp_path / ("cat" if i % 2 else "dog") / f"{i:03d}.jpg").write_bytes(_encode(_photo(i, (64 + i, 48 + 2 * i)), quality=90))
    (tmp_path / "dog" / "notes.txt").write_text("not an image")
    return tmp_path


def test_image_folder_bytes_and_collate(folder):
    ds = ImageFolderBytes(str(folder))
    assert ds.classes == ["cat", "dog"] and len(ds) == 10
    data, label = ds[0]
    assert data.dtype == np.uint8 and label == 0
    assert bytes(data) == open(ds.samples[0][0], "rb").read()
    loader = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2, collate_fn=collate_encoded)
    seen = 0
    for encoded, labels in loader:
        assert isinstance(encoded, EncodedImages) and labels.dtype == torch.int64
        images = decode_jpeg(encoded)
        for im, t, (path, target) in zip(images, labels, ds.samples[seen:seen + len(images)]):
            assert int(t) == target
            assert torch.equal(im, decode_jpeg(read_file(path)))
        seen += len(encoded)
    assert seen == 10


def test_tar_shards_round_trip(folder, tmp_path):
    ds = ImageFolderBytes(str(folder))
    shards = write_tar_shards(ds.samples, str(tmp_path / "shards"), samples_per_shard=4)
    assert len(shards) == 3
    tar = TarShards(shards)
    assert len(tar) == len(ds)
    for i in range(len(ds)):
        data, label = tar[i]
        assert bytes(data) == open(ds.samples[i][0], "rb").read() and label == ds.samples[i][1]
    loader = torch.utils.data.DataLoader(tar, batch_size=5, num_workers=2, collate_fn=collate_encoded)
    assert sum(len(e) for e, _ in loader) == len(ds)


@pytest.mark.parametrize("device", DEVICES)
def test_prefetcher_decodes_encoded_batches(folder, device):
    ds = ImageFolderBytes(str(folder))
    loader = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=0, collate_fn=collate_encoded, pin_memory=device == "cuda")
    crop = torchaug.transforms.Resize([32, 32])
    got = [(x.cpu(), y.cpu()) for x, y in torchaug.Prefetcher(loader, crop, device=device)]
    # two producer threads decoding at the same time (on two decoders on CUDA): the same batches
    assert all(torch.equal(a, x.cpu()) and torch.equal(b, y.cpu())
               for (a, b), (x, y) in zip(got, torchaug.Prefetcher(loader, crop, device=device, threads=2)))
    for (x, y), (encoded, labels) in zip(got, loader):
        expected = crop(decode_jpeg(encoded, device=device))
        assert torch.equal(x, expected.cpu()) and torch.equal(y, labels)


@pytest.mark.parametrize("device", DEVICES)
def test_prefetcher_decodes_into_one_ragged_batch(folder, device, monkeypatch):
    """The decoded batch reaches the crop as one RaggedImages (no tensor per image in the producer),
    also in skip mode; mode "unchanged" (1- and 3-channel images mixed) still gives the list."""
    from torchaug.io import RaggedImages
    ds = ImageFolderBytes(str(folder))
    batches = list(torch.utils.data.DataLoader(ds, batch_size=5, collate_fn=collate_encoded))
    crop = torchaug.transforms.Resize([24, 20])
    expected = [crop(decode_jpeg(e, device=device)).cpu() for e, _ in batches]
    gray = [decode_jpeg(e, device=device, mode="unchanged") for e, _ in batches]

    def fail(self):
        raise AssertionError("RaggedImages.images() called")
    monkeypatch.setattr(RaggedImages, "images", fail)
    for on_error in ("raise", "skip"):
        got = [x.cpu() for x, _ in torchaug.Prefetcher(batches, crop, device=device, on_decode_error=on_error)]
        assert all(torch.equal(g, e) for g, e in zip(got, expected)) and len(got) == 2
    monkeypatch.undo()
    got = list(torchaug.Prefetcher(batches, None, device=device, decode_mode="unchanged"))
    for (images, _), ref in zip(got, gray):
        assert isinstance(images, list) and all(torch.equal(a.cpu(), b.cpu()) for a, b in zip(images, ref))
    with pytest.raises(ValueError, match="mode"):
        torchaug.Prefetcher(batches, crop, decode_mode="cmyk")


def test_encoded_images_views_include_empty_files():
    files = [b"\xff\xd8abc", b"", b"xyz!"]
    e = EncodedImages.from_bytes(files)
    views = e.tensors()
    assert [bytes(v.numpy()) for v in views] == files and all(v.data_ptr() >= e.data.data_ptr() for v in views if v.numel())
    assert EncodedImages.from_bytes([]).tensors() == []


@pytest.mark.parametrize("threads", [1, 3])
def test_prefetcher_skips_bad_files_and_their_labels(threads):
    files = [_bytes(_good()), _bytes(BAD["truncated_scan"][0]), _bytes(_good()), _bytes(b"nope")]
    batch = (EncodedImages.from_bytes(files), torch.tensor([10, 11, 12, 13]), ["a", "b", "c", "d"])
    pf = torchaug.Prefetcher([batch], torchaug.transforms.Resize([16, 16]), device="cpu", on_decode_error="skip")
    (images, labels, names), = list(pf)
    assert images.shape == (2, 3, 16, 16)
    assert labels.tolist() == [10, 12] and names == ["a", "c"]
    assert [(b, i) for b, i, _ in pf.decode_failures] == [(0, 1), (0, 3)]
    # batch numbers go on across epochs, whichever thread decodes the batch
    pf = torchaug.Prefetcher([batch, batch[:1] + (batch[1] + 10, batch[2])] * 2, torchaug.transforms.Resize([16, 16]),
                             device="cpu", on_decode_error="skip", threads=threads)
    got = list(pf) + list(pf)
    assert [y.tolist() for _, y, _ in got] == [[10, 12], [20, 22]] * 4
    assert sorted((b, i) for b, i, _ in pf.decode_failures) == [(b, i) for b in range(8) for i in (1, 3)]
    with pytest.raises(RuntimeError, match="sample 1"):
        list(torchaug.Prefetcher([batch], torchaug.transforms.Resize([16, 16]), device="cpu"))


# ---- stream order of the decoders -------------------------------------------------------------
# nvJPEG's hardware path has been reported to write its output before earlier work on the stream ran
# (torchvision PR 9606, torchcodec 1634): a caching-allocator block freed while a queued kernel still
# reads it, handed to the decode's output, was overwritten under that kernel. These tests free such a
# block right before a decode and check what the delayed reader saw.

def _pattern_jpegs(seed, n=8, side=256):
    """n baseline JPEGs of side x side blocks of random colours (the hardware decoder's kind of file)."""
    g = torch.Generator().manual_seed(seed)
    files = []
    for _ in range(n):
        blocks = (torch.rand(side // 16, side // 16, 3, generator=g) * 255).to(torch.uint8)
        buf = io.BytesIO()
        Image.fromarray(blocks.repeat_interleave(16, 0).repeat_interleave(16, 1).numpy()).save(buf, "JPEG", quality=90)
        files.append(torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8))
    return files


@requires_cuda
def test_decode_is_ordered_after_queued_reads_of_a_freed_block():
    sets = [_pattern_jpegs(1), _pattern_jpegs(2)]
    expected = [[t.clone() for t in decode_jpeg(files, device="cuda")] for files in sets]
    total = sum(t.numel() for t in expected[0])
    for k in range(24):
        src = torch.full((total,), 7, dtype=torch.uint8, device="cuda")  # the decode's output size: its block is reused
        dst = torch.empty_like(src)
        torch.cuda._sleep(20_000_000)  # the copy below runs tens of milliseconds later
        dst.copy_(src)
        del src
        out = decode_jpeg(sets[k % 2], device="cuda")
        torch.cuda.synchronize()
        assert bool((dst == 7).all()), f"round {k}: the decode wrote into a block that a queued copy still read"
        assert all(torch.equal(a, b) for a, b in zip(out, expected[k % 2]))


@requires_cuda
def test_prefetcher_decode_is_ordered_after_the_previous_batch_chain():
    """On the Prefetcher's side stream: batch k's chain reads its decoded images late (a delayed copy);
    batch k + 1's decode, whose output may take the block batch k freed, must not write under it."""
    sets = [_pattern_jpegs(3), _pattern_jpegs(4)]
    batches = [collate_encoded([(f.numpy(), 0) for f in sets[k % 2]]) for k in range(16)]

    def late_reader(images):  # the decoded batch: a list of (C, H, W) images
        torch.cuda._sleep(20_000_000)
        return torch.cat([t.reshape(-1) for t in images])

    expected = [torch.cat([t.reshape(-1) for t in decode_jpeg(files, device="cuda")]) for files in sets]
    got = [x for x, _ in torchaug.Prefetcher(batches, late_reader, device="cuda")]
    torch.cuda.synchronize()
    for k, x in enumerate(got):
        assert torch.equal(x, expected[k % 2]), f"batch {k}: a later batch's decode wrote under this batch's chain"


@requires_cuda
@pytest.mark.parametrize("device", ["cuda", "cuda:0"])
def test_a_process_that_decoded_on_cuda_exits_cleanly(device):
    """decode_jpeg on "cuda" without an index made its streams with device index -1; setting one current
    wrote the thread's current-stream table at [-1], and the process aborted at exit ("double free or
    corruption" in a thread-local destructor)."""
    child = textwrap.dedent(f"""
        import io, torch, torchaug
        from PIL import Image
        buf = io.BytesIO()
        Image.new("RGB", (64, 48), (10, 20, 30)).save(buf, format="JPEG")
        data = torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8)
        torchaug.io.decode_jpeg([data, data], device={device!r})
        torch.cuda.synchronize()
    """)
    run = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
