"""torchaug::augment and the auto-augmentation policies: every op against torchvision's
_apply_image_or_video_transform, random programs per sample, CPU <-> CUDA, opcheck, seeded op and
magnitude distributions, p=0 / p=1, custom policies, replay, errors, MixUp / CutMix."""
import math

import pytest
import torch
from conftest import assert_close_images, hooked, random_images, requires_cuda, requires_torchvision, torchvision

import torchaug.functional as F
import torchaug.transforms as T
from torchaug.functional import AUGMENT_OPS, TORCHVISION_OPS

if torchvision is not None:
    from torchvision.transforms import v2 as TV

NAMES = {v: k for k, v in TORCHVISION_OPS.items()}  # torchaug name -> torchvision name
GEOMETRIC = {"shear_x", "shear_y", "translate_x", "translate_y", "rotate"}


def _tv_apply(img, name, magnitude, interpolation, fill):
    """torchvision's op of an auto-augment policy on one image (C, H, W)."""
    mode = TV.InterpolationMode.NEAREST if interpolation == "nearest" else TV.InterpolationMode.BILINEAR
    ra = TV.RandAugment(interpolation=mode, fill=fill)
    return ra._apply_image_or_video_transform(img, NAMES[name], magnitude, interpolation=ra.interpolation, fill=ra._fill)


def _source_ties(name, magnitude, h, w):
    """(H, W) bool: output pixels whose nearest-neighbour source position lies within float32
    rounding of a tie between two input pixels (torchvision computes the position with another
    float32 expression; either neighbour is a correct answer there)."""
    if name == "shear_x" or name == "shear_y":
        sh = math.degrees(math.atan(magnitude))
        m = F.affine_matrices(0.0, [0.0, 0.0], 1.0, [sh if name == "shear_x" else 0.0, sh if name == "shear_y" else 0.0],
                              [0.0, 0.0], h, w, 1, "cpu")
    elif name in ("translate_x", "translate_y"):
        t = float(int(magnitude))
        m = F.affine_matrices(0.0, [t if name == "translate_x" else 0.0, t if name == "translate_y" else 0.0], 1.0,
                              [0.0, 0.0], None, h, w, 1, "cpu")
    else:
        m = F.affine_matrices(-(magnitude % 360), [0.0, 0.0], 1.0, [0.0, 0.0], None, h, w, 1, "cpu")
    m = m[0].double()
    ys, xs = torch.meshgrid(torch.arange(h, dtype=torch.float64), torch.arange(w, dtype=torch.float64), indexing="ij")
    sx = m[0, 0] * xs + m[0, 1] * ys + m[0, 2]
    sy = m[1, 0] * xs + m[1, 1] * ys + m[1, 2]

    def near_half(v):
        return ((v - v.floor()) - 0.5).abs() < 1e-3

    return near_half(sx) | near_half(sy)


def _assert_op_matches(out, ref, name, magnitude, interpolation, dtype, msg):
    """uint8 within 1 LSB (floating: close); nearest geometry: exact except at source ties."""
    if name in GEOMETRIC and interpolation == "nearest":
        ties = _source_ties(name, magnitude, out.shape[-2], out.shape[-1]).to(out.device)
        differ = (out != ref).any(0)
        assert not (differ & ~ties).any(), f"{msg}: {(differ & ~ties).sum()} pixels differ away from sampling ties"
    else:
        assert_close_images(out, ref, dtype, msg)


# magnitudes as torchvision's spaces produce them, signed, and a few edge values
OP_CASES = [
    ("identity", 0.0), ("brightness", 0.27), ("brightness", -0.99), ("contrast", 0.3), ("contrast", -0.87),
    ("saturation", 0.9), ("saturation", -0.6), ("sharpness", 0.33), ("sharpness", -0.99), ("posterize", 4.0),
    ("posterize", 8.0), ("posterize", 0.0), ("solarize", 0.7), ("solarize", 0.0), ("autocontrast", 0.0),
    ("equalize", 0.0), ("invert", 0.0), ("shear_x", 0.09), ("shear_x", -0.3), ("shear_y", 0.99),
    ("translate_x", 40.7), ("translate_y", -13.6), ("rotate", 9.0), ("rotate", -30.0), ("rotate", 90.0),
    ("rotate", 180.0), ("rotate", 0.0),
]


@requires_torchvision
@pytest.mark.parametrize("name,magnitude", OP_CASES)
@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_each_op_matches_torchvision(device, name, magnitude, interpolation, dtype):
    if name not in GEOMETRIC and interpolation == "bilinear":
        pytest.skip("interpolation only matters to the geometric ops")
    gen = torch.Generator().manual_seed(hash((name, magnitude)) % 1000)
    x = random_images(3, 3, 24, 24 if magnitude in (90.0, 180.0) else 31, dtype, device, generator=gen)
    out = F.augment(x, [name], [magnitude], interpolation)
    m = float(torch.tensor(magnitude, dtype=torch.float32))
    for i in range(x.shape[0]):
        ref = _tv_apply(x[i], name, m, interpolation, None)
        _assert_op_matches(out[i], ref, name, m, interpolation, dtype, f"{name}({magnitude}) sample {i}")


@requires_torchvision
@pytest.mark.parametrize("fill", [0, [10, 200, 30]])
@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
def test_geometric_fill_matches_torchvision(device, fill, interpolation):
    x = random_images(2, 3, 20, 27, torch.uint8, device, generator=torch.Generator().manual_seed(1))
    for name, m in [("shear_x", 0.24), ("translate_y", 9.0), ("rotate", -21.0)]:
        out = F.augment(x, [name], [m], interpolation, fill)
        for i in range(2):
            ref = _tv_apply(x[i], name, m, interpolation, fill)
            _assert_op_matches(out[i], ref, name, m, interpolation, torch.uint8, f"{name} fill={fill}")


@requires_torchvision
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("policy", ["rand", "trivial", "auto"])
def test_random_programs_match_torchvision_per_sample(device, channels_last, channels, policy):
    """A drawn program, slot by slot: each sample's result equals torchvision's op applied to that
    sample's input of the slot; and the whole program in one call equals the slot-by-slot chain."""
    g = torch.Generator().manual_seed(3)
    x = random_images(16, channels, 26, 33, torch.uint8, device, channels_last, generator=torch.Generator().manual_seed(4))
    t = {"rand": lambda: T.RandAugment(3, 9, generator=g), "trivial": lambda: T.TrivialAugmentWide(generator=g),
         "auto": lambda: T.AutoAugment(T.AutoAugmentPolicy.SVHN, generator=g)}[policy]()
    out, params = t(x, return_params=True)
    names = {v: k for k, v in AUGMENT_OPS.items()}
    cur = x
    for k in range(params["ops"].shape[1]):
        nxt = F.augment(cur, params["ops"][:, k:k + 1], params["magnitudes"][:, k:k + 1], "nearest")
        for i in range(x.shape[0]):
            name = names[int(params["ops"][i, k])]
            m = float(params["magnitudes"][i, k])
            ref = _tv_apply(cur[i], name, m, "nearest", None)
            _assert_op_matches(nxt[i], ref, name, m, "nearest", torch.uint8, f"slot {k} sample {i} {name}({m})")
        cur = nxt
    assert torch.equal(out, cur)
    assert out.is_contiguous(memory_format=torch.channels_last if channels_last and channels == 3 else torch.contiguous_format)


@requires_torchvision
@pytest.mark.parametrize("all_ops", [True, False])
def test_augmix_matches_torchvision_given_the_program(device, all_ops):
    """AugMix: the chains are the program's ops per sample, the mix torchvision's expression."""
    x = random_images(4, 3, 20, 22, torch.uint8, device, generator=torch.Generator().manual_seed(5))
    t = T.AugMix(all_ops=all_ops, generator=torch.Generator().manual_seed(6))
    out, p = t(x, return_params=True)
    names = {v: k for k, v in AUGMENT_OPS.items()}
    b, mw = x.shape[0], t.mixture_width
    for i in range(b):
        mix = p["original_weight"][i] * x[i]
        for c in range(mw):
            aug = x[i]
            for k in range(p["ops"].shape[1]):
                row = c * b + i
                name = names[int(p["ops"][row, k])]
                aug = F.augment(aug, [name], [float(p["magnitudes"][row, k])], "bilinear")
            mix = mix + p["weights"][i, c] * aug
        assert_close_images(out[i], mix.to(torch.uint8), torch.uint8, f"sample {i}")


def test_whole_program_equals_slot_chain_float(device):
    x = random_images(6, 3, 19, 23, torch.float32, device, generator=torch.Generator().manual_seed(8))
    ops = torch.tensor([[1, 14], [2, 12], [13, 18], [11, 8], [9, 16], [3, 0]], device=device)
    mags = torch.tensor([[0.5, 0.2], [0.3, 0.0], [-0.5, 30.0], [0.0, 3.0], [0.4, -5.0], [-0.2, 0.0]], device=device)
    out = F.augment(x, ops, mags, "bilinear", [0.1, 0.2, 0.3])
    chain = F.augment(F.augment(x, ops[:, :1], mags[:, :1], "bilinear", [0.1, 0.2, 0.3]), ops[:, 1:], mags[:, 1:],
                      "bilinear", [0.1, 0.2, 0.3])
    assert torch.equal(out, chain)


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.float16])
@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
@pytest.mark.parametrize("layout", ["3x30x37", "3x30x36", "1x33x40"])
def test_cpu_and_cuda_agree(dtype, interpolation, layout):
    """Slot by slot from the same input (a 1-LSB difference in one slot can become a large one in
    the next: solarize flips a value at its threshold). Widths that are multiples of 4 take the
    CUDA kernel's word path for uint8 copy / color slots (36: a partial tile of one word per row)."""
    g = torch.Generator().manual_seed(11)
    c, h, w = (int(v) for v in layout.split("x"))
    x = random_images(32, c, h, w, dtype, generator=g)
    ops = torch.randint(0, len(AUGMENT_OPS), (32, 3), generator=g)
    mags = torch.rand((32, 3), generator=g) * 2 - 1
    mags[:, 1] *= 30  # translate / rotate magnitudes of some size
    fill = ([5, 6, 7] if dtype == torch.uint8 else [0.1, 0.2, 0.3])[:c]
    cur = x
    for k in range(3):
        cpu = F.augment(cur, ops[:, k:k + 1], mags[:, k:k + 1], interpolation, fill)
        gpu = F.augment(cur.cuda(), ops[:, k:k + 1].cuda(), mags[:, k:k + 1].cuda(), interpolation, fill).cpu()
        geo = ops[:, k] >= AUGMENT_OPS["shear_x"]
        if interpolation == "nearest":
            # only sampling ties may differ (the compilers contract the position's multiply-adds
            # differently): a few pixels of the geometric ops
            assert (cpu[geo] != gpu[geo]).any(1).float().mean() < 1e-2
            assert_close_images(gpu[~geo], cpu[~geo], dtype, f"slot {k}")
        else:
            assert_close_images(gpu, cpu, dtype, f"slot {k}")
        cur = cpu


# programs whose slots hand each other what the per-slot passes must get right: statistics after a
# gather and at slot 0, two and three gathers in a row, color ops before and after a gather
# (separable ones, which the uint8 pass takes through a table, and others), a color op before
# sharpness and before a bilinear sampler, statistics right after statistics
CHAIN_ROWS = [
    ["rotate", "equalize", "posterize", "shear_x"], ["autocontrast", "contrast", "rotate", "translate_y"],
    ["rotate", "shear_x", "translate_y", "sharpness"], ["brightness", "rotate", "posterize", "saturation"],
    ["hue", "shear_y", "solarize", "equalize"], ["saturation", "sharpness", "brightness", "autocontrast"],
    ["sharpness", "hue", "rotate", "identity"], ["equalize", "equalize", "contrast", "autocontrast"],
    ["gamma", "invert", "solarize_add", "translate_x"], ["identity", "identity", "sharpness", "grayscale"],
]


def _chain_program(b, n, gen, device):
    """(ops, magnitudes) of b samples and n slots: CHAIN_ROWS (n == 4), then random ids; the
    magnitudes in each op's usual range (degrees and pixels for the geometric ops)."""
    ops = torch.randint(0, len(AUGMENT_OPS), (b, n), generator=gen)
    if n == 4:
        for i, row in enumerate(CHAIN_ROWS):
            ops[i] = torch.tensor([AUGMENT_OPS[name] for name in row])
    mags = torch.rand((b, n), generator=gen) * 1.6 - 0.8
    big = (ops == AUGMENT_OPS["rotate"]) | (ops == AUGMENT_OPS["translate_x"]) | (ops == AUGMENT_OPS["translate_y"])
    mags = torch.where(big, mags * 40, mags)
    mags = torch.where(ops == AUGMENT_OPS["posterize"], (mags.abs() * 10).floor(), mags)
    return ops.to(device), mags.to(device)


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.float16])
@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
@pytest.mark.parametrize("layout", ["3x30x36", "3x31x37", "1x33x40", "3x30x36-cl"])
@pytest.mark.parametrize("n", [2, 4, 10])
def test_cuda_program_equals_slot_chain(dtype, interpolation, layout, n):
    """A whole program on CUDA equals the chain of its one-slot programs on CUDA, bitwise, with and
    without a fill (the statistics passes by slot, the word path, channels_last, 1 channel)."""
    gen = torch.Generator().manual_seed(n * 31 + len(layout))
    shape, _, cl = layout.partition("-")
    c, h, w = (int(v) for v in shape.split("x"))
    x = random_images(48, c, h, w, dtype, "cuda", bool(cl), generator=gen)
    ops, mags = _chain_program(48, n, gen, "cuda")
    for fill in (None, ([5, 60, 200] if dtype == torch.uint8 else [0.1, 0.5, 0.9])[:c]):
        out = F.augment(x, ops, mags, interpolation, fill, validate=False)
        cur = x
        for k in range(n):
            cur = F.augment(cur, ops[:, k:k + 1], mags[:, k:k + 1], interpolation, fill, validate=False)
        differ = (out != cur).flatten(1).any(1)
        assert not differ.any(), f"fill={fill}: samples {differ.nonzero().flatten().tolist()} differ, programs " \
                                 f"{[[int(v) for v in ops[i]] for i in differ.nonzero().flatten().tolist()[:3]]}"
        assert out.is_contiguous(memory_format=torch.channels_last if cl and c == 3 else torch.contiguous_format)


def _with_resident(mode, fn):
    """fn() with augment's resident kernel forced on (1) or off (0)."""
    with hooked("augment_resident", mode):
        return fn()


@requires_cuda
@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
@pytest.mark.parametrize("layout", ["3x224x224", "3x232x232", "3x32x48", "3x31x37", "1x33x40", "3x30x36-cl", "3x1x5",
                                    "3x3x4", "1x2x8"])
@pytest.mark.parametrize("n", [1, 2, 10, 20])  # 20: slots past the steps made at once (kResSteps)
def test_cuda_resident_path_equals_slot_passes(interpolation, layout, n):
    """uint8 images that fit in shared memory run their whole program in one launch (the resident
    path, forced here); it equals the slot passes bitwise: statistics of full-range, low-contrast
    and flat images (equalize's step 0, autocontrast's min == max), every op, fill, the 16-byte
    planes (32x48, 224x224) and the others, channels_last, 1 channel, and planes too large for a
    thread's registers to hold a geometric slot's words (232x232: channel by channel instead).
    Sharpness slots of widths that are multiples of 4 take 4-pixel words (3x4: a row one word,
    both ends on the border; 2x8: no interior row), the other widths pixel by pixel."""
    gen = torch.Generator().manual_seed(n * 7 + len(layout))
    shape, _, cl = layout.partition("-")
    c, h, w = (int(v) for v in shape.split("x"))
    b = 40
    x = random_images(b, c, h, w, torch.uint8, "cpu", generator=gen)
    x[8:16] = x[8:16] // 8 + 100  # low contrast
    x[16:20] = 77  # flat
    x[20:24, :, : h // 2] = 3  # two levels
    x = x.cuda()
    if cl:
        x = x.contiguous(memory_format=torch.channels_last)
    ops, mags = _chain_program(b, n, gen, "cuda")
    ops[: len(AUGMENT_OPS), 0] = torch.arange(len(AUGMENT_OPS))  # every op in slot 0
    for fill in (None, [5, 60, 200][:c], [0.5, 127.6, 254.5][:c]):
        run = lambda: F.augment(x, ops, mags, interpolation, fill, validate=False)  # noqa: E731
        ref = _with_resident(0, run)
        # nearest geometric slots copy bytes on the resident path, where the slot passes take them
        # through the float taps and blending: the same bytes
        res = _with_resident(1, run)
        differ = (res != ref).flatten(1).any(1)
        assert not differ.any(), f"fill={fill}: samples {differ.nonzero().flatten().tolist()} differ, " \
                                 f"programs {[[int(v) for v in ops[i]] for i in differ.nonzero().flatten().tolist()[:3]]}"
        assert res.is_contiguous(memory_format=torch.channels_last if cl else torch.contiguous_format)


@pytest.mark.parametrize("layout", ["3x32x48", "3x31x37", "1x33x40", "3x30x36-cl", "3x3x4"])
@pytest.mark.parametrize("n", [1, 2, 10])
def test_cpu_resident_path_equals_slot_passes(layout, n):
    """On the CPU a uint8 batch with a sample or more per thread runs sample by sample, each
    sample's whole program in scratch images of one sample (the resident path, forced here); it
    equals the passes over the batch bitwise: every op, statistics of full-range, low-contrast and
    flat images, fill, both interpolations, channels_last, 1 channel, and the fused normalize
    (float32, and float16 channels_last)."""
    gen = torch.Generator().manual_seed(n * 5 + len(layout))
    shape, _, cl = layout.partition("-")
    c, h, w = (int(v) for v in shape.split("x"))
    b = 24
    x = random_images(b, c, h, w, torch.uint8, "cpu", bool(cl), generator=gen)
    x[8:12] = x[8:12] // 8 + 100  # low contrast
    x[12:14] = 77  # flat
    ops, mags = _chain_program(b, n, gen, "cpu")
    ops[: len(AUGMENT_OPS), 0] = torch.arange(len(AUGMENT_OPS))  # every op in slot 0
    mean, std = [0.485, 0.456, 0.406][:c], [0.229, 0.224, 0.225][:c]
    for interpolation, fill, norm in (("nearest", None, None), ("bilinear", [5, 60, 200][:c], None),
                                      ("bilinear", None, (torch.float32, None)),
                                      ("nearest", torch.rand(b, c, generator=gen) * 255, (torch.float16, torch.channels_last))):
        fused = {} if norm is None else {"mean": mean, "std": std, "out_dtype": norm[0], "memory_format": norm[1]}
        run = lambda: F.augment(x, ops, mags, interpolation, fill, validate=False, **fused)  # noqa: E731
        ref = _with_resident(0, run)
        res = _with_resident(1, run)
        differ = (res != ref).flatten(1).any(1)
        assert not differ.any(), f"{interpolation} fill={fill} norm={norm}: samples {differ.nonzero().flatten().tolist()} " \
                                 f"differ, programs {[[int(v) for v in ops[i]] for i in differ.nonzero().flatten().tolist()[:3]]}"
        assert res.dtype == ref.dtype and res.stride() == ref.stride()
    with pytest.raises(RuntimeError, match="the forced resident path needs uint8 images"):
        _with_resident(1, lambda: F.augment(x.float() / 255, ops, mags, validate=False))


@requires_cuda
def test_cuda_resident_path_unless_a_graph_replays_a_small_batch():
    """A block of the resident kernel runs one sample on one SM: a batch of at most an eighth of the
    SMs takes the passes (spread over every SM) where the stream is being captured into a CUDA graph
    (whose replays cost no host time a launch), and the resident kernel when called eagerly (its one
    launch costs the host less than the passes' several); a larger batch takes the resident kernel
    either way. All the same bytes. The kernels launched (eagerly, then in the graph's replay) tell
    which path ran."""
    from torch.profiler import ProfilerActivity, profile
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    gen = torch.Generator().manual_seed(5)

    def kernels(fn):
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            out = fn()
            torch.cuda.synchronize()
        return out, [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]

    for b in (max(1, sms // 8), sms // 8 + 1):
        x = random_images(b, 3, 32, 48, torch.uint8, "cuda", generator=gen)
        ops, mags = _chain_program(b, 2, gen, "cuda")
        ref = _with_resident(0, lambda: F.augment(x, ops, mags, validate=False))
        F.augment(x, ops, mags, validate=False)  # launched once before the profiler and the capture
        out, names = kernels(lambda: F.augment(x, ops, mags, validate=False))
        assert any("augment_resident_kernel" in n for n in names), (b, "eager", sorted(set(names)))
        assert torch.equal(out, ref)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            captured = F.augment(x, ops, mags, validate=False)
        _, names = kernels(lambda: graph.replay())
        resident = b * 8 > sms
        assert any("augment_resident_kernel" in n for n in names) == resident, (b, "replayed", sorted(set(names)))
        assert any("augment_slot_kernel" in n for n in names) != resident, (b, "replayed", sorted(set(names)))
        assert torch.equal(captured, ref)


@requires_cuda
def test_cuda_resident_path_where_it_does_not_fit():
    """Images too large for shared memory, and floating images, take the slot passes (the default
    choice); forcing the resident path on them is an error that says why, and a bad hook value is
    an error too."""
    x = random_images(2, 3, 300, 300, torch.uint8, "cuda")
    ops = torch.tensor([[12, 14], [2, 18]], device="cuda")
    mags = torch.tensor([[0.0, 0.2], [0.3, 30.0]], device="cuda")
    out = F.augment(x, ops, mags)
    assert torch.equal(out, _with_resident(0, lambda: F.augment(x, ops, mags)))
    for img in (x, x[:, :, :64, :64].float() / 255):
        with pytest.raises(RuntimeError, match="the forced resident path needs uint8 images"):
            _with_resident(1, lambda: F.augment(img, ops, mags))
    with pytest.raises(ValueError, match=r"test hook augment_resident: value must be -1 .* or in \[0, 1\], got 2"):
        _with_resident(2, lambda: F.augment(x, ops, mags))


SEPARABLE_RUNS = [
    ["brightness", "posterize", "solarize", "invert"],  # one run, applied in the store
    ["contrast", "brightness", "hue", "gamma"],  # into a word slot's words, then a run of one to the store
    ["brightness", "solarize_add", "contrast", "autocontrast"],  # applied in each statistics pass
    ["posterize", "rotate", "gamma", "sharpness"],  # applied before a geometric and a sharpness slot
    ["invert", "equalize", "brightness", "saturation"],
]


@requires_cuda
@pytest.mark.parametrize("layout", ["3x224x224", "3x31x37", "1x32x48", "3x30x36-cl"])
@pytest.mark.parametrize("store", ["uint8", "float32", "float16-cl"])
def test_cuda_resident_separable_slots_compose(layout, store):
    """On the resident path runs of separable color slots compose into one table a channel, applied
    where the pixels are read next: a non-separable color slot's words, a statistics pass
    (contrast's words and its tail bytes, autocontrast's and equalize's bytes), the store (uint8
    words or bytes, the fused normalize's packed or per-pixel store), or a pass of its own before a
    sharpness or geometric slot. The same bytes as the slot passes."""
    gen = torch.Generator().manual_seed(len(layout) + len(store))
    shape, _, cl = layout.partition("-")
    c, h, w = (int(v) for v in shape.split("x"))
    b = 4 * len(SEPARABLE_RUNS)
    x = random_images(b, c, h, w, torch.uint8, "cuda", bool(cl), generator=gen)
    ops, mags = _chain_program(b, 4, gen, "cuda")
    ops[:] = torch.tensor([[AUGMENT_OPS[name] for name in SEPARABLE_RUNS[i % len(SEPARABLE_RUNS)]] for i in range(b)])
    mags = torch.where(ops == AUGMENT_OPS["posterize"], 3.0, mags)
    mags = torch.where(ops == AUGMENT_OPS["rotate"], 17.0, mags)
    norm = {}
    if store != "uint8":
        norm = {"mean": MEAN[:c], "std": STD[:c], "out_dtype": getattr(torch, store.split("-")[0]),
                "memory_format": torch.channels_last if store.endswith("-cl") else None}
    run = lambda: F.augment(x, ops, mags, "bilinear", [9, 99, 199][:c], validate=False, **norm)  # noqa: E731
    ref = _with_resident(0, run)
    res = _with_resident(1, run)
    differ = (res != ref).flatten(1).any(1)
    assert not differ.any(), f"samples {differ.nonzero().flatten().tolist()} differ"


@requires_cuda
@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
@pytest.mark.parametrize("layout", ["3x224x224", "3x32x48"])
def test_cuda_resident_samples_longest_first(interpolation, layout):
    """A batch with more samples than the GPU runs blocks at once has its blocks take the samples
    by cost (resident_order_kernel: half a wave of the cheapest, then longest first). Which block
    runs a sample does not change its bytes: the result equals the index order (the resident_order
    hook at 0) and the slot passes, with a per-sample fill and per-sample normalize constants, which
    show a sample written with another's parameters or a sample left unwritten."""
    gen = torch.Generator().manual_seed(len(layout))
    c, h, w = (int(v) for v in layout.split("x"))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    b = 3 * sms + 7  # more than two blocks an SM (32x48 runs two, 224x224 one)
    x = random_images(b, c, h, w, torch.uint8, "cuda", generator=gen)
    ops, mags = _chain_program(b, 2, gen, "cuda")
    ops[::5, 1] = AUGMENT_OPS["sharpness"]  # costly programs spread over the batch
    fill = (torch.rand(b, c, generator=gen) * 255).cuda()
    mean = torch.rand(b, c, generator=gen).cuda()
    std = (torch.rand(b, c, generator=gen) + 0.1).cuda()
    for norm in ({}, {"mean": mean, "std": std, "out_dtype": torch.float32}):
        run = lambda: F.augment(x, ops, mags, interpolation, fill, validate=False, **norm)  # noqa: E731
        with hooked("resident_order", 0):
            index_order = run()
        for ref in (index_order, _with_resident(0, run)):
            torch.cuda.synchronize()
            out = torch.full_like(ref, 7)  # the caching allocator's next block of that size: no stale result
            del out
            res = run()
            differ = (res != ref).flatten(1).any(1)
            assert not differ.any(), f"{norm.keys()}: samples {differ.nonzero().flatten().tolist()[:10]} differ"


MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


@pytest.mark.parametrize("out", ["float32", "float16-cl", "bfloat16", "bfloat16-cl"])
@pytest.mark.parametrize("layout", ["3x224x224", "3x31x37", "1x32x48", "3x30x36-cl"])
def test_fused_normalize_equals_augment_then_normalize(device, out, layout):
    """augment(..., mean, std, out_dtype, memory_format) is normalize(augment(...)) bitwise: on
    CUDA by the resident path (forced where the images fit, the uint8 ones) and by the slot passes
    then normalize, on the CPU by the latter; per-sample mean and std, float16 / bfloat16 outputs,
    a channels_last output of an NCHW input and channels_last inputs; means and stds outside the
    reciprocal's range for some samples (the per-value checked quotient beside the unchecked one)."""
    gen = torch.Generator().manual_seed(len(layout) + len(out))
    shape, _, cl = layout.partition("-")
    c, h, w = (int(v) for v in shape.split("x"))
    x = random_images(24, c, h, w, torch.uint8, device, bool(cl), generator=gen)
    ops, mags = _chain_program(24, 3, gen, device)
    out_dtype = getattr(torch, out.split("-")[0])
    fmt = torch.channels_last if out.endswith("-cl") else None
    mean = torch.rand(24, c, generator=gen).to(device)
    std = (torch.rand(24, c, generator=gen) + 0.1).to(device)
    # samples whose constants put some bytes outside the reciprocal's range (the checked quotient)
    odd_mean, odd_std = mean.clone(), std.clone()
    odd_std[0, 0], odd_std[1, 0] = 1e-30, 1e30
    odd_mean[2, 0], odd_mean[3, 0], odd_mean[4, 0], odd_mean[5, 0] = 1e-25, 0.0, 3e25, -2e-12
    for m, sd in ((mean, std), (MEAN[:c], STD[:c]), (odd_mean, odd_std)):
        ref = F.normalize(F.augment(x, ops, mags, "bilinear", [9, 99, 199][:c], validate=False), m, sd,
                          out_dtype=out_dtype, memory_format=fmt)
        modes = (1, 0) if device == "cuda" else (-1,)
        for mode in modes:
            got = _with_resident(mode, lambda: F.augment(x, ops, mags, "bilinear", [9, 99, 199][:c], validate=False,
                                                         mean=m, std=sd, out_dtype=out_dtype, memory_format=fmt))
            assert got.dtype == out_dtype and got.shape == ref.shape
            assert got.is_contiguous(memory_format=fmt or (torch.channels_last if cl and c == 3 else torch.contiguous_format))
            assert torch.equal(got, ref), f"mode {mode}: {(got != ref).sum().item()} values differ"


@pytest.mark.parametrize("policy", ["rand", "trivial", "auto", "augmix"])
@pytest.mark.parametrize("cast", [True, False])
def test_compose_fuses_policy_and_normalize(device, policy, cast):
    """Compose runs policy + [ToDtype(float32, scale=True)] + Normalize as one augment call that
    normalizes (AugMix, which mixes chains, as before), with the result of the unfused chain."""
    make = {"rand": lambda: T.RandAugment(2, 9), "trivial": lambda: T.TrivialAugmentWide(),
            "auto": lambda: T.AutoAugment(), "augmix": lambda: T.AugMix()}[policy]
    pol = make()
    tail = ([T.ToDtype(torch.float32, scale=True)] if cast else []) + [T.Normalize(MEAN, STD)]
    fused, unfused = T.Compose([pol] + tail), T.Compose([pol] + tail, fuse=False)
    assert fused._fusable_run(0) == (1 if policy == "augmix" else 1 + len(tail))
    x = random_images(16, 3, 40, 52, torch.uint8, device, generator=torch.Generator().manual_seed(3))
    y, params = fused(x, return_params=True)
    assert y.dtype == torch.float32
    assert torch.equal(y, unfused(x, params=params))


def test_fused_normalize_errors(device):
    x = random_images(2, 3, 8, 8, torch.uint8, device)
    ops = torch.tensor([[1], [2]], device=device)
    mags = torch.tensor([[0.2], [0.1]], device=device)
    with pytest.raises(ValueError, match="mean and std come together"):
        F.augment(x, ops, mags, mean=MEAN)
    with pytest.raises(ValueError, match="out_dtype and memory_format belong to the fused normalize"):
        F.augment(x, ops, mags, out_dtype=torch.float16)
    with pytest.raises(RuntimeError, match="torchaug::augment: mean and std come together"):
        torch.ops.torchaug.augment(x, ops, mags, 0, None, torch.zeros(2, 3, device=device))
    with pytest.raises(RuntimeError, match="torchaug::augment: out_dtype must be float32, float64, float16 or bfloat16, got Byte"):
        F.augment(x, ops, mags, mean=MEAN, std=STD, out_dtype=torch.uint8)
    with pytest.raises(ValueError, match="std"):
        F.augment(x, ops, mags, mean=MEAN, std=[0.1, 0.2])
    mean = torch.zeros(2, 3, device=device)
    torch.library.opcheck(torch.ops.torchaug.augment, (x, ops, mags, 0, None, mean, mean + 0.5, torch.float16, None))
    fn = torch.compile(lambda a: torch.ops.torchaug.augment(a, ops, mags, 0, None, mean, mean + 0.5, None, None),
                       fullgraph=True, backend="eager")
    assert torch.equal(fn(x), F.augment(x, ops, mags, mean=mean, std=mean + 0.5))


@requires_cuda
def test_seeded_generator_gives_same_program_and_output_on_cpu_and_cuda():
    x = random_images(12, 3, 28, 28, torch.uint8, generator=torch.Generator().manual_seed(2))
    for make in (lambda g: T.RandAugment(generator=g), lambda g: T.TrivialAugmentWide(generator=g),
                 lambda g: T.AutoAugment(generator=g), lambda g: T.AugMix(generator=g)):
        out_c, p_c = make(torch.Generator().manual_seed(9))(x, return_params=True)
        out_g, p_g = make(torch.Generator().manual_seed(9))(x.cuda(), return_params=True)
        for k in p_c:
            torch.testing.assert_close(p_g[k].cpu(), p_c[k])
        assert (out_g.cpu().int() - out_c.int()).abs().max() <= 1


def test_opcheck(device):
    x = random_images(4, 3, 10, 13, torch.uint8, device)
    ops = torch.tensor([[1, 14], [12, 13], [18, 2], [0, 11]], device=device)
    mags = torch.tensor([[0.2, 0.1], [0.0, 0.5], [10.0, -0.3], [0.0, 0.0]], device=device)
    fill = torch.tensor([[1.0, 2.0, 3.0]] * 4, device=device)
    torch.library.opcheck(torch.ops.torchaug.augment, (x, ops, mags, 0, None))
    torch.library.opcheck(torch.ops.torchaug.augment, (x.float() / 255, ops, mags, 1, fill / 255))


def test_compile_fullgraph(device):
    x = random_images(4, 3, 10, 13, torch.uint8, device)
    ops = torch.tensor([[1, 14], [12, 13], [18, 2], [0, 11]], device=device)
    mags = torch.tensor([[0.2, 0.1], [0.0, 0.5], [10.0, -0.3], [0.0, 0.0]], device=device)
    fn = torch.compile(lambda a, o, m: torch.ops.torchaug.augment(a, o, m, 0, None), fullgraph=True, backend="eager")
    assert torch.equal(fn(x, ops, mags), F.augment(x, ops, mags))


def test_not_differentiable(device):
    x = torch.rand(2, 3, 8, 8, device=device, requires_grad=True)
    y = F.augment(x, ["brightness"], [0.2])
    with pytest.raises(RuntimeError, match="torchaug::augment is not differentiable"):
        y.sum().backward()


# ---- distributions ----------------------------------------------------------------------------------

def _chi2_uniform_ok(counts: torch.Tensor) -> bool:
    """Counts consistent with a uniform distribution (chi-square below its 0.999 quantile, approximated)."""
    k = counts.numel()
    expected = counts.sum().item() / k
    chi2 = ((counts.double() - expected) ** 2 / expected).sum().item()
    dof = k - 1
    return chi2 < dof + 3.1 * math.sqrt(2 * dof) + 10  # ~0.999 quantile for these dofs


def _policy_reference(kind, u, ids, mags, signed, num_ops, magnitude, sub):
    """The program of draws u by torchvision's rules, with ATen ops (the former policy_program path)."""
    from torchaug.transforms import _draws as S

    def index(v, n):
        return (v * n).floor().long().clamp(0, n - 1)

    k, bins = mags.shape
    apply = None
    if kind == 0:
        choice, coin = index(u[:, 0::2], k), u[:, 1::2] <= 0.5
        b = torch.full_like(choice, magnitude)
    elif kind == 1:
        choice, b, coin = index(u[:, :1], k), index(u[:, 1:2], bins), u[:, 2:3] <= 0.5
    else:
        si, sp, sb = sub
        s = index(u[:, 0], si.shape[0])
        choice, b = si[s], sb[s]
        apply = u[:, 1::2] <= sp[s].double()
        coin = u[:, 2::2] <= 0.5
    return S.policy_program(ids, mags, signed, choice, b, coin, apply)


@pytest.mark.parametrize("policy", ["rand", "rand4", "trivial", "auto"])
def test_policy_program_op_matches_reference(device, policy):
    """torchaug::_policy_program (one launch from uniform draws to the program) equals the ATen
    composition of the same rules; CPU and CUDA agree; opcheck."""
    pol = {"rand": T.RandAugment(2, 9), "rand4": T.RandAugment(4, 30), "trivial": T.TrivialAugmentWide(),
           "auto": T.AutoAugment()}[policy]
    kind = pol._KIND
    t = pol._tables_for(pol._num_bins(), 224, 224, torch.device(device))
    sub = pol._sub_policies(torch.device(device)) if kind == 2 else (None, None, None)
    r = 2 * pol.num_ops if kind == 0 else (3 if kind == 1 else 5)
    u = torch.rand(500, r, dtype=torch.float64, generator=torch.Generator().manual_seed(4)).to(device)
    u[0] = 0.0
    u[1] = 1.0 - 2 ** -53  # the largest draw below 1
    args = (u, t.ids, t.mags, t.signed, kind, pol.num_ops, pol.magnitude, *sub)
    choice, ops, mags = torch.ops.torchaug._policy_program(*args)
    ref = _policy_reference(kind, u, t.ids, t.mags, t.signed, pol.num_ops, pol.magnitude, sub)
    assert torch.equal(choice, ref["choice"]) and torch.equal(ops, ref["ops"]) and torch.equal(mags, ref["magnitudes"])
    torch.library.opcheck(torch.ops.torchaug._policy_program, args)
    if device == "cuda":
        cpu = torch.ops.torchaug._policy_program(*[a.cpu() if isinstance(a, torch.Tensor) else a for a in args])
        assert all(torch.equal(a.cpu(), b) for a, b in zip((choice, ops, mags), cpu))


def test_policy_program_op_errors(device):
    pol = T.AutoAugment()
    t = pol._tables_for(31, 224, 224, torch.device(device))
    si, sp, sb = pol._sub_policies(torch.device(device))
    u = torch.rand(4, 4, dtype=torch.float64, device=device)
    op = torch.ops.torchaug._policy_program
    with pytest.raises(RuntimeError, match=r"rand must be a \(B, 6\) float64 tensor of uniform draws, got Double of shape \(4, 4\)"):
        op(u, t.ids, t.mags, t.signed, 0, 3, 9)
    with pytest.raises(RuntimeError, match="rand must be a"):
        op(u.float(), t.ids, t.mags, t.signed, 0, 2, 9)
    with pytest.raises(RuntimeError, match="kind must be 0 \\(RandAugment\\), 1 \\(TrivialAugmentWide\\) or 2"):
        op(u, t.ids, t.mags, t.signed, 3, 2, 9)
    with pytest.raises(RuntimeError, match=r"magnitude must be a bin in \[0, 31\), got 31"):
        op(u, t.ids, t.mags, t.signed, 0, 2, 31)
    with pytest.raises(RuntimeError, match="AutoAugment \\(kind 2\\) needs sub_idx, sub_prob and sub_bins"):
        op(torch.rand(4, 5, dtype=torch.float64, device=device), t.ids, t.mags, t.signed, 2, 2, 0)
    with pytest.raises(RuntimeError, match="num_ops must be a non-negative integer, got -1"):
        op(torch.rand(4, 0, dtype=torch.float64, device=device), t.ids, t.mags, t.signed, 0, -1, 9)
    choice, ops, mags = op(torch.rand(3, 200, dtype=torch.float64, device=device), t.ids, t.mags, t.signed, 0, 100, 9)
    assert ops.shape == (3, 100) and mags.dtype == torch.float32  # any number of RandAugment ops
    with pytest.raises(RuntimeError, match="signed must be a \\(K,\\) bool tensor"):
        op(u, t.ids, t.mags, t.signed.long(), 0, 2, 9)
    if device == "cpu":
        with pytest.raises(RuntimeError, match="sub_idx must hold space indices"):
            op(torch.rand(4, 5, dtype=torch.float64), t.ids, t.mags, t.signed, 2, 2, 0, si + 100, sp, sb)
        with pytest.raises(RuntimeError, match="sub_idx must hold space indices"):
            op(torch.rand(4, 5, dtype=torch.float64), t.ids, t.mags, t.signed, 2, 2, 0, si - 100, sp, sb)
        with pytest.raises(RuntimeError, match=r"sub_bins must hold bins in \[0, " + str(t.mags.shape[1]) + r"\)"):
            op(torch.rand(4, 5, dtype=torch.float64), t.ids, t.mags, t.signed, 2, 2, 0, si, sp, sb + t.mags.shape[1])


def test_randaugment_op_and_sign_distribution():
    x = torch.zeros(4000, 3, 8, 10, dtype=torch.uint8)
    t = T.RandAugment(2, 9, generator=torch.Generator().manual_seed(0))
    p = t.make_params(x)
    counts = torch.bincount(p["choice"].flatten(), minlength=len(t.space))
    assert _chi2_uniform_ok(counts), counts
    # signed ops are negated half the time; magnitudes are the space's bin 9 values
    names = [a.name for a in t.space]
    mags = p["magnitudes"].flatten()
    choice = p["choice"].flatten()
    rot = mags[choice == names.index("Rotate")]
    assert set(rot.abs().tolist()) == {9.0}
    frac_neg = (rot < 0).double().mean().item()
    n = rot.numel()
    assert abs(frac_neg - 0.5) < 4 * math.sqrt(0.25 / n)
    post = mags[choice == names.index("Posterize")]
    assert set(post.tolist()) == {7.0}  # 8 - round(9 / 7.5), never negated
    tx = mags[choice == names.index("TranslateX")].abs()
    assert torch.allclose(tx, torch.tensor(float(torch.linspace(0.0, 150.0 / 331.0 * 10, 31)[9])))


def test_trivialaugment_bins_uniform():
    x = torch.zeros(6000, 3, 8, 8, dtype=torch.uint8)
    t = T.TrivialAugmentWide(generator=torch.Generator().manual_seed(1))
    p = t.make_params(x)
    names = [a.name for a in t.space]
    sel = p["choice"][:, 0] == names.index("Rotate")
    bins = (p["magnitudes"][sel, 0].abs() / 4.5).round().long()  # linspace(0, 135, 31): 4.5 per bin
    assert _chi2_uniform_ok(torch.bincount(bins, minlength=31))
    assert _chi2_uniform_ok(torch.bincount(p["choice"].flatten(), minlength=len(names)))


def test_autoaugment_probabilities():
    x = torch.zeros(20000, 3, 8, 8, dtype=torch.uint8)
    t = T.AutoAugment(T.AutoAugmentPolicy.IMAGENET, generator=torch.Generator().manual_seed(2))
    p = t.make_params(x)
    # sub-policy 0 is (Posterize 0.4 bin 8, Rotate 0.6 bin 9): among samples whose first op is
    # Posterize at bits 8 - round(8 / 2.25) = 4 and second is Rotate, count the applications
    applied = (p["ops"] != 0).double().mean(0)
    # expected application rate of slot 0 over the 25 sub-policies
    from torchaug.transforms._auto_augment import _POLICIES
    probs = torch.tensor([[s[0][1], s[1][1]] for s in _POLICIES["imagenet"]], dtype=torch.float64).mean(0)
    n = x.shape[0]
    assert ((applied - probs).abs() < 5 * torch.sqrt(probs * (1 - probs) / n) + 1e-3).all(), (applied, probs)


def test_autoaugment_custom_policy_p0_and_p1():
    x = random_images(8, 3, 16, 16, torch.uint8)
    never = T.AutoAugment([(("Invert", 0.0, None), ("Equalize", 0.0, None))])
    assert torch.equal(never(x), x)
    always = T.AutoAugment([(("Invert", 1.0, None), ("Posterize", 1.0, 5))])
    expected = F.augment(F.augment(x, ["invert"], [0.0]), ["posterize"], [float(8 - round(5 / 2.25))])
    assert torch.equal(always(x), expected)


def test_randaugment_zero_ops_is_identity():
    x = random_images(4, 3, 16, 16, torch.uint8)
    assert torch.equal(T.RandAugment(num_ops=0)(x), x)


def test_exclude_and_restricted_space():
    t = T.RandAugment(exclude=["Rotate", "ShearX"], generator=torch.Generator().manual_seed(0))
    names = [a.name for a in t.space]
    assert "Rotate" not in names and "ShearX" not in names and len(names) == 12
    p = t.make_params(torch.zeros(500, 3, 8, 8, dtype=torch.uint8))
    assert not (p["ops"] == AUGMENT_OPS["rotate"]).any() and not (p["ops"] == AUGMENT_OPS["shear_x"]).any()
    t2 = T.TrivialAugmentWide(augmentations=["Identity", "Brightness"], generator=torch.Generator().manual_seed(0))
    p2 = t2.make_params(torch.zeros(500, 3, 8, 8, dtype=torch.uint8))
    assert set(p2["ops"].flatten().tolist()) == {0, 1}


def test_custom_augmentations_builtin_and_python(device):
    """A DALI-style list: a built-in op with a custom range and a cutout written with erase."""
    def cutout(images, magnitudes, apply):
        b, _, h, w = images.shape
        size = (magnitudes.abs() * h).to(torch.int64) * apply.to(torch.int64)  # zero-size box: untouched
        boxes = torch.stack([torch.full_like(size, 2), torch.full_like(size, 3), size, size], 1)
        return F.erase(images, boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3], 0)

    augs = [T.Augmentation("brightness", (0.0, 0.5), randomly_negate=True),
            T.Augmentation(cutout, (0.25, 0.5), name="cutout")]
    t = T.RandAugment(1, 30, augmentations=augs, generator=torch.Generator().manual_seed(4))
    x = random_images(32, 3, 16, 16, torch.uint8, device).clamp(min=1)
    out, p = t(x, return_params=True)
    is_cut = p["choice"][:, 0] == 1
    assert is_cut.any() and (~is_cut).any()
    # cutout samples: an 8x8 zero box at (2, 3) and the rest unchanged; others: brightness 1 +- 0.5
    cut = out[is_cut]
    assert (cut[:, :, 2:10, 3:11] == 0).all()
    assert torch.equal(cut[:, :, 10:], x[is_cut][:, :, 10:])
    bright = F.augment(x[~is_cut], p["ops"][~is_cut], p["magnitudes"][~is_cut])
    assert torch.equal(out[~is_cut], bright)
    assert set(p["magnitudes"][~is_cut, 0].abs().tolist()) == {0.5}


def test_replay_returns_same_output(device):
    x = random_images(8, 3, 20, 20, torch.uint8, device)
    for t in (T.RandAugment(), T.TrivialAugmentWide(), T.AutoAugment(), T.AugMix()):
        out, p = t(x, return_params=True)
        assert torch.equal(t(x, params=p), out)


def test_empty_batch_and_empty_program(device):
    x = random_images(3, 3, 9, 9, torch.uint8, device)
    assert F.augment(x[:0], torch.zeros(0, 2, dtype=torch.int64, device=device), torch.zeros(0, 2, device=device)).shape == (0, 3, 9, 9)
    out = F.augment(x, torch.zeros(3, 0, dtype=torch.int64, device=device), torch.zeros(3, 0, device=device))
    assert torch.equal(out, x) and out.data_ptr() != x.data_ptr()


def test_single_image(device):
    x = random_images(1, 3, 20, 20, torch.uint8, device)[0]
    for t in (T.RandAugment(), T.AugMix()):
        assert t(x).shape == x.shape


# ---- errors -------------------------------------------------------------------------------------------

def test_errors(device="cpu"):
    x = random_images(2, 3, 8, 8, torch.uint8, device)
    with pytest.raises(ValueError, match="num_ops should be a non-negative integer"):
        T.RandAugment(num_ops=-1)
    with pytest.raises(ValueError, match="magnitude must be an integer in"):
        T.RandAugment(magnitude=31)
    with pytest.raises(ValueError, match="num_magnitude_bins must be an integer >= 2"):
        T.TrivialAugmentWide(num_magnitude_bins=1)
    with pytest.raises(ValueError, match="unknown op 'Blur'"):
        T.RandAugment(augmentations=["Blur"])
    with pytest.raises(ValueError, match="cannot exclude 'Invert'"):
        T.RandAugment(exclude=["Invert"])
    with pytest.raises(ValueError, match="not recognized"):
        T.AutoAugment("imagenet2")
    with pytest.raises(ValueError, match="probability of Invert"):
        T.AutoAugment([(("Invert", 1.5, None), ("Equalize", 0.5, None))])
    with pytest.raises(TypeError, match="fill must be None, a number or a sequence"):
        T.RandAugment(fill="white")
    with pytest.raises(ValueError, match="interpolation must be one of nearest, bilinear"):
        T.RandAugment(interpolation="bicubic")
    with pytest.raises(ValueError, match="severity must be between"):
        T.AugMix(severity=11)
    with pytest.raises(ValueError, match="unknown op 'blur'"):
        F.augment(x, ["blur"], [0.0])
    with pytest.raises(ValueError, match=r"magnitudes must have shape \(B, n\) = \(2, 1\)"):
        F.augment(x, ["rotate"], [1.0, 2.0])
    with pytest.raises(ValueError, match=r"ops must hold op ids in \[0, 19\)"):
        F.augment(x, torch.tensor([[19], [0]]), torch.zeros(2, 1))
    with pytest.raises(ValueError, match="magnitudes must be finite"):
        F.augment(x, ["rotate"], [float("nan")])
    ops1 = torch.zeros(2, 1, dtype=torch.int64, device=device)
    mag1 = torch.zeros(2, 1, device=device)
    if device == "cpu":  # the op reads ids it can read without a synchronisation
        with pytest.raises(RuntimeError, match=r"torchaug::augment: ops must hold op ids in \[0, 19\), got -1 at flat index 0"):
            torch.ops.torchaug.augment(x, torch.tensor([[-1], [0]]), mag1, 0, None)
    with pytest.raises(RuntimeError, match=r"torchaug::augment: magnitudes must have shape \(B, n\) like ops"):
        torch.ops.torchaug.augment(x, torch.zeros(2, 2, dtype=torch.int64, device=device), mag1, 0, None)
    with pytest.raises(RuntimeError, match=r"torchaug::augment: magnitudes must have dtype Float"):
        torch.ops.torchaug.augment(x, ops1, mag1.double(), 0, None)
    with pytest.raises(RuntimeError, match="torchaug::augment: ops must have dtype torch.int64"):
        torch.ops.torchaug.augment(x, ops1.int(), mag1, 0, None)
    with pytest.raises(RuntimeError, match="torchaug::augment: images must have 1 or 3 channels, got 2"):
        torch.ops.torchaug.augment(x[:, :2], ops1, mag1, 0, None)
    with pytest.raises(RuntimeError, match="torchaug::augment: interpolation"):
        torch.ops.torchaug.augment(x, ops1, mag1, 2, None)
    with pytest.raises(RuntimeError, match=r"torchaug::augment: fill must have shape \(B, C\)"):
        torch.ops.torchaug.augment(x, ops1, mag1, 0, torch.zeros(2, 2, device=device))
    if device != "cpu":
        with pytest.raises(RuntimeError, match="torchaug::augment: ops must be on"):
            torch.ops.torchaug.augment(x, ops1.cpu(), mag1, 0, None)
    # a list of images: each size's batch (here one) with its own draws, a list back, replayable
    out, p = T.RandAugment()([x[0], x[1]], return_params=True)
    assert isinstance(out, list) and len(out) == 2 and all(o.shape == x[0].shape for o in out)
    assert all(torch.equal(a, b) for a, b in zip(T.RandAugment()([x[0], x[1]], params=p), out))


# ---- MixUp / CutMix -------------------------------------------------------------------------------------

@requires_torchvision
def test_mixup_matches_torchvision_given_lam(device):
    x = random_images(6, 3, 9, 11, torch.float32, device)
    labels = torch.tensor([0, 3, 1, 2, 3, 0], device=device)
    t = T.MixUp(alpha=0.4, num_classes=4, per_sample=False, generator=torch.Generator().manual_seed(0))
    (out, y), p = t(x, labels, return_params=True)
    lam = float(p["lam"][0])
    tv = TV.MixUp(alpha=0.4, num_classes=4)
    tv._dist = type("D", (), {"sample": lambda self, shape: torch.tensor(lam)})()
    ref, ref_y = tv(x, labels)
    assert torch.equal(out, ref)
    torch.testing.assert_close(y, ref_y)


def test_mixup_per_sample(device):
    x = random_images(5, 3, 4, 4, torch.float64, device)
    labels = torch.arange(5, device=device)
    (out, y), p = T.MixUp(num_classes=5, generator=torch.Generator().manual_seed(1))(x, labels, return_params=True)
    lam = p["lam"]
    assert lam.unique().numel() == 5 and ((lam > 0) & (lam < 1)).all()
    for i in range(5):
        torch.testing.assert_close(out[i], lam[i] * x[i] + (1 - lam[i]) * x[i - 1])
        assert float(y[i, i]) == pytest.approx(float(lam[i])) and float(y[i, i - 1]) == pytest.approx(1 - float(lam[i]))
    with pytest.raises(TypeError, match="mixup: images must be floating point"):
        T.MixUp(num_classes=5)(x.to(torch.uint8), labels)
    with pytest.raises(ValueError, match="num_classes is needed"):
        T.MixUp()(x, labels)


def test_cutmix_boxes_follow_torchvision_formula(device):
    """Per sample: torchvision's box from (lam, r_x, r_y), pixels pasted from the previous sample,
    labels mixed with the adjusted lam."""
    x = random_images(8, 3, 20, 30, torch.uint8, device)
    labels = torch.arange(8, device=device)
    t = T.CutMix(num_classes=8, generator=torch.Generator().manual_seed(3))
    (out, y), p = t(x, labels, return_params=True)
    H, W = 20, 30
    for i in range(8):
        lam = float(p["lam"][i])
        x1, y1, x2, y2 = p["boxes"][i].tolist()
        # torchvision: r = 0.5 * sqrt(1 - lam), half sizes int(r * W), int(r * H)
        r = 0.5 * math.sqrt(1.0 - lam)
        rw, rh = int(r * W), int(r * H)
        assert x2 - x1 <= 2 * rw and y2 - y1 <= 2 * rh
        assert (x1 == 0 or x2 == W or x2 - x1 == 2 * rw) and (y1 == 0 or y2 == H or y2 - y1 == 2 * rh)
        ref = x[i].clone()
        ref[:, y1:y2, x1:x2] = x[i - 1][:, y1:y2, x1:x2]
        assert torch.equal(out[i], ref)
        adj = 1.0 - (x2 - x1) * (y2 - y1) / (W * H)
        assert float(y[i, i]) == pytest.approx(adj, abs=1e-6)
        if i > 0:
            assert float(y[i, i - 1]) == pytest.approx(1 - adj, abs=1e-6)


@requires_cuda
def test_dependent_launches_equal_ordinary_launches():
    """The RandomResizedCrop + flip + RandAugment + normalize chain launches the crop's boxes, the
    crop, the policy's program, the order and the resident kernel as dependent launches
    (csrc/cuda/dependent_launch.cuh: each may start while the kernel before it runs, and waits for
    it). Over many calls back to back, each input written by a kernel right before the chain and the
    caching allocator recycling every buffer, the bytes equal those of ordinary launches (the
    dependent_launch hook at 0), with the order kernel in use (more samples than the GPU runs blocks
    at once)."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    x = random_images(2 * sms + 5, 3, 150, 200, torch.uint8, "cuda", generator=torch.Generator().manual_seed(5))

    def run():
        g = torch.Generator(device="cuda").manual_seed(11)
        chain = T.Compose([T.RandomResizedCrop(224, generator=g), T.RandomHorizontalFlip(generator=g),
                           T.RandAugment(2, 9, generator=g), T.ToDtype(torch.float32, scale=True), T.Normalize(MEAN, STD)])
        sums = []
        for i in range(12):
            out = chain(x + i)  # the crop's input, written by the kernel just before it
            sums.append(out.double().sum((1, 2, 3)))
            del out
        torch.cuda.synchronize()
        return torch.stack(sums)

    with hooked("dependent_launch", 0):
        ref = run()
    for _ in range(2):
        got = run()
        assert torch.equal(got, ref), f"{(got != ref).sum().item()} sample sums differ"


def test_sharpness_rows_equal_the_per_pixel_path():
    """On the CPU, uint8 NCHW images go through sharpness a row at a time (a loop over integer window
    sums), other layouts pixel by pixel (augment_value_px, the GPU's math): the same bytes."""
    gen = torch.Generator().manual_seed(5)
    x = torch.randint(0, 256, (6, 3, 17, 29), dtype=torch.uint8, generator=gen)
    mags = torch.tensor([-0.99, -0.5, 0.0, 0.3, 0.9, 3.0]).reshape(6, 1)
    ops = torch.full((6, 1), F.AUGMENT_OPS["sharpness"], dtype=torch.int64)
    rows = F.augment(x, ops, mags)
    pixels = F.augment(x.contiguous(memory_format=torch.channels_last), ops, mags)
    assert torch.equal(rows, pixels)
    assert not torch.equal(rows, x)
