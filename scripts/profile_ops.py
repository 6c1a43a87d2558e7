"""Where the time of the color / auto-augment cases goes, on the GPU:
  1. torch.profiler's per-kernel table of ColorJitter (transform and program), the RandAugment(2, 9)
     op and chain, each called 20 times;
  2. torchaug::augment with every sample running the same op (one slot), op by op, CUDA events;
  3. the statistics ops (contrast, autocontrast, equalize) and ColorJitter's program, CUDA events.
  4. resident: the resident path (TORCHAUG_AUGMENT_RESIDENT=1) against the slot passes (=0) in the
     same process, op by op and on the policies' programs, alternating the two.
  5. nearest: the resident path's nearest geometric slots as byte copies against the float taps
     (TORCHAUG_RESIDENT_NEAREST=float), same process, alternating.
  6. chain: the kernels of the RandAugment chain (torch.profiler) and its host time per call (the
     calls issued back to back without waiting, against the GPU time of the same calls; host_ms).
  7. host_ab: the chain's host time per call with the C++ autograd kernels, then with Python
     register_autograd wrappers put back over them (last: they stay for the process).
  8. host: where the chain's host time goes: torch.profiler's CPU table (ops and CUDA runtime calls,
     self time) and cProfile's Python functions by own time, over calls issued in groups of 25.
    python3 scripts/profile_ops.py [tables] [per_op] [stats] [resident] [nearest] [chain] [host] [host_ab]   (the first three by default)"""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import torchaug.functional as F  # noqa: E402
import torchaug.transforms as T  # noqa: E402
from harness import saved_env, time_cuda  # noqa: E402
from torchaug.functional._augment import AUGMENT_OPS  # noqa: E402

steps = set(sys.argv[1:]) or {"tables", "per_op", "stats"}
B = 256
xs = [torch.randint(0, 256, (B, 3, 224, 224), dtype=torch.uint8, device="cuda") for _ in range(4)]
photos = torch.randint(0, 256, (B, 3, 375, 500), dtype=torch.uint8, device="cuda")
jitter = T.ColorJitter(0.4, 0.4, 0.4, 0.1)
jp = jitter.make_params(xs[0])
ra = T.RandAugment(2, 9)
rp = ra.make_params(xs[0])
chain = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), ra, T.ToDtype(torch.float32, scale=True),
                   T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])


def line(name, t):
    print(f"{name:44s} {t['ms']:.4f} ms  ({t['ms_min']:.4f}..{t['ms_max']:.4f})  {B / t['ms'] * 1e3:12,.0f} img/s", flush=True)


def kernel_table(name, fn, warmup=5, rows=16, cpu=False):
    """torch.profiler's per-kernel table of 20 calls of fn (after warm-up calls); cpu: the ops'
    host time too."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CUDA] + ([torch.profiler.ProfilerActivity.CPU] if cpu else [])
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
    print(f"## {name} (20 calls)")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=rows, max_name_column_width=60))


def ab(name, fn, var="TORCHAUG_AUGMENT_RESIDENT", modes=("0", "1"), labels=("slots", "resident")):
    """fn timed with the environment variable var at modes[0] and modes[1], alternating, best of 2 rounds."""
    res = {}
    with saved_env(var):
        for rnd in range(2):
            for mode in modes:
                os.environ[var] = mode
                res.setdefault(mode, []).append(time_cuda(fn, 40)["ms"])
    a, b = min(res[modes[0]]), min(res[modes[1]])
    print(f"{name:44s} {labels[0]} {a:.4f} ms  {labels[1]} {b:.4f} ms  x{a / b:.2f}  ({B / b * 1e3:,.0f} img/s {labels[1]})",
          flush=True)


def host_ms(fn, calls=50, rounds=5):
    """(ms per call issued, ms per call to completion), the best of `rounds` rounds of `calls` calls
    issued without waiting. 50 calls (~300 launches of the chain) stay under the GPU's launch queue:
    with more (session 18 issued 200), the host ends up waiting for the GPU and measures its pace."""
    best_issued = best_done = float("inf")
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        best_issued = min(best_issued, 1e3 * (t1 - t0) / calls)
        best_done = min(best_done, 1e3 * (t2 - t0) / calls)
    return best_issued, best_done


MAGS = {"brightness": 0.27, "contrast": 0.27, "saturation": 0.27, "sharpness": 0.27, "posterize": 6.0,
        "solarize": 0.7, "shear_x": 0.09, "shear_y": 0.09, "translate_x": 44.0, "translate_y": 44.0, "rotate": 9.0}


def one_op(name):
    """(ops, magnitudes) of a one-slot program running op `name` on every sample."""
    return (torch.full((B, 1), AUGMENT_OPS[name], dtype=torch.int64, device="cuda"),
            torch.full((B, 1), MAGS.get(name, 0.0), dtype=torch.float32, device="cuda"))


if "tables" in steps:
    for name, fn in [("ColorJitter transform", lambda: jitter(xs[0])),
                     ("ColorJitter program (drawn)", lambda: F.color_program(xs[0], jp["ops"], jp["params"])),
                     ("augment op, RandAugment(2,9) program", lambda: F.augment(xs[0], rp["ops"], rp["magnitudes"], validate=False)),
                     ("RRC+flip+RandAugment+normalize chain", lambda: chain(photos))]:
        kernel_table(name, fn)

if "per_op" in steps:
    print("## augment, one slot, every sample the same op (magnitude: RandAugment bin 9 of 31)")
    for name in AUGMENT_OPS:
        ops, m = one_op(name)
        line(f"augment {name}", time_cuda(lambda i: F.augment(xs[i % 4], ops, m, validate=False), 50))
    line("copy_ (floor)", time_cuda(lambda i: xs[(i + 1) % 4].copy_(xs[i % 4]), 50))

if "stats" in steps:
    print("## statistics ops and ColorJitter")
    f = torch.full((B,), 1.3, device="cuda")
    line("adjust_contrast", time_cuda(lambda i: F.adjust_contrast(xs[i % 4], f, validate=False), 50))
    line("autocontrast", time_cuda(lambda i: F.autocontrast(xs[i % 4]), 50))
    line("equalize", time_cuda(lambda i: F.equalize(xs[i % 4]), 50))
    line("adjust_hue", time_cuda(lambda i: F.adjust_hue(xs[i % 4], f - 1.25, validate=False), 50))
    line("ColorJitter program", time_cuda(lambda i: F.color_program(xs[i % 4], jp["ops"], jp["params"]), 50))
    line("ColorJitter make_params", time_cuda(lambda i: jitter.make_params(xs[i % 4]), 50))
    line("ColorJitter transform", time_cuda(lambda i: jitter(xs[i % 4]), 50))

if "resident" in steps:
    print("## augment: resident path vs slot passes (same process, alternating), ms per call of 256 x 3 x 224 x 224")
    for name in AUGMENT_OPS:
        ops, m = one_op(name)
        ab(f"augment {name}", lambda i: F.augment(xs[i % 4], ops, m, validate=False))
    for pname, pol in [("RandAugment(2,9)", T.RandAugment(2, 9)), ("TrivialAugmentWide", T.TrivialAugmentWide()),
                       ("AutoAugment(ImageNet)", T.AutoAugment())]:
        pp = pol.make_params(xs[0])
        ab(f"program of {pname}", lambda i: F.augment(xs[i % 4], pp["ops"], pp["magnitudes"], validate=False))
        ab(f"transform {pname}", lambda i: pol(xs[i % 4]))
    ab("RRC+flip+RandAugment+normalize chain", lambda i: chain(photos))

if "nearest" in steps:
    print("## resident augment, nearest geometric slots: float taps (TORCHAUG_RESIDENT_NEAREST=float) vs byte copies, "
          "same process, alternating, ms per call of 256 x 3 x 224 x 224")
    nearest = dict(var="TORCHAUG_RESIDENT_NEAREST", modes=("float", "bytes"), labels=("float", "bytes"))
    for name in ("shear_x", "translate_y", "rotate"):
        ops, m = one_op(name)
        ab(f"augment {name}", lambda i: F.augment(xs[i % 4], ops, m, validate=False), **nearest)
    ab("program of RandAugment(2,9)", lambda i: F.augment(xs[i % 4], rp["ops"], rp["magnitudes"], validate=False), **nearest)
    ab("RRC+flip+RandAugment+normalize chain", lambda i: chain(photos), **nearest)

if "chain" in steps:
    for name, fn in [("RRC+flip+RandAugment+normalize chain", lambda: chain(photos)),
                     ("RandAugment(2,9) transform", lambda: ra(xs[0]))]:
        kernel_table(name, fn, warmup=10, rows=20, cpu=True)
        issued, done = host_ms(fn)
        print(f"{name}: host {issued:.4f} ms/call issued, {done:.4f} ms/call to completion (best of 5 x 50 calls)")

if "host" in steps:
    import cProfile
    import pstats

    fn = lambda: chain(photos)  # noqa: E731
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    print(f"chain: host {host_ms(fn)[0]:.4f} ms/call issued (best of 5 x 50 calls)")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(4):
            for _ in range(25):
                fn()
            torch.cuda.synchronize()
    print("## chain, 100 calls: host time by op / runtime call (self CPU)")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30, max_name_column_width=50))
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(4):
        for _ in range(25):
            fn()
        torch.cuda.synchronize()
    pr.disable()
    print("## chain, 100 calls: Python functions by own time (cProfile)")
    pstats.Stats(pr).sort_stats("tottime").print_stats(30)

if "host_ab" in steps:
    # the chain's host time with the C++ autograd kernels (csrc/host_autograd.cpp), then with
    # Python autograd wrappers registered over them as torch.library.register_autograd made them
    # before (they stay for the rest of the process: this step runs last)
    fn = lambda: chain(photos)  # noqa: E731
    for _ in range(10):
        fn()
    cpp = host_ms(fn)[0]

    def _raise(ctx, grad):
        raise RuntimeError("not differentiable")

    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for op in ("torchaug::resized_crop", "torchaug::augment"):
            torch.library.register_autograd(op, _raise)
    for _ in range(10):
        fn()
    py = host_ms(fn)[0]
    print(f"RRC+flip+RandAugment+normalize chain, host ms per call issued (best of 5 x 50): C++ autograd kernels {cpp:.4f}, "
          f"Python register_autograd wrappers {py:.4f}", flush=True)
