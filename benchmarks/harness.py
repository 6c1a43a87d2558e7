"""Side-by-side timing harness: CUDA-event timing after warm-up, median of repeats,
inputs rotated across several batches so that the L2 cache does not flatter, results as JSON rows
and a Markdown table with date, device, torch version and commit."""
import argparse
import contextlib
import datetime
import json
import os
import platform
import statistics
import subprocess
import time
from typing import Callable, Dict, List, Optional

import torch


@contextlib.contextmanager
def saved_env(name: str):
    """Restores the environment variable `name` (its value, or its absence) when the block ends, so
    that an A/B that sets it does not leave its last setting behind."""
    old = os.environ.get(name)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def family_args(name: str, switches: Dict[str, str] = {}) -> Optional[argparse.Namespace]:
    """The command line of a family benchmark (--json, --markdown, --quick, and the benchmark's own
    on/off `switches`: flag -> help); None without CUDA."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    ap.add_argument("--quick", action="store_true")
    for flag, text in switches.items():
        ap.add_argument(flag, action="store_true", help=text)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print(f"{name}: needs CUDA")
        return None
    return args


def commit() -> str:
    # the device machine's copy of the tree may carry a stale .git: the caller's TORCHAUG_COMMIT wins
    if os.environ.get("TORCHAUG_COMMIT"):
        return os.environ["TORCHAUG_COMMIT"]
    try:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True, timeout=10)
        return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "") if out.returncode == 0 else "unknown"
    except Exception:
        return "unknown"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment() -> Dict[str, str]:
    env = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "commit": commit(),
        "cpus": str(os.cpu_count()),
    }
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        env["device"] = f"{p.name} ({p.multi_processor_count} SMs, {p.total_memory / 2**30:.0f} GiB)"
    else:
        env["device"] = f"CPU only ({cpu_model()})"
    try:
        import torchvision

        env["torchvision"] = torchvision.__version__
    except Exception:
        env["torchvision"] = "not installed"
    return env


def photo_views(n: int, size=(500, 375), seed: int = 0, scale_min: float = 0.5, flip: bool = False, grain: float = 0.0):
    """n ImageNet-like PIL images of `size` made from the repo's photos: a random crop (scale in
    [scale_min, 1]) resized bicubic, mirrored with probability 0.5 when `flip`, plus gaussian grain of
    std `grain` levels (camera noise, which is what makes JPEGs of real photos large)."""
    import numpy as np
    from PIL import Image

    assets = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "torchaug", "assets", "images")
    rng = np.random.default_rng(seed)
    photos = [Image.open(os.path.join(assets, f)).convert("RGB") for f in sorted(os.listdir(assets)) if f.endswith(".jpg")]
    for i in range(n):
        im = photos[i % len(photos)]
        w, h = im.size
        s = rng.uniform(scale_min, 1.0)
        cw, ch = int(w * s), int(h * s)
        x0, y0 = rng.integers(0, w - cw + 1), rng.integers(0, h - ch + 1)
        out = im.crop((x0, y0, x0 + cw, y0 + ch)).resize(size, Image.BICUBIC)
        if flip and rng.random() < 0.5:
            out = out.transpose(Image.FLIP_LEFT_RIGHT)
        if grain > 0:
            a = np.asarray(out).astype(np.float32)
            a += rng.normal(0, grain, a.shape)  # rounded to float32 in place
            out = Image.fromarray(np.clip(a, 0, 255).astype(np.uint8))
        yield out


_clock_warm = False


def warm_clocks(seconds: float = 0.5) -> None:
    """Keeps the GPU busy for `seconds` (matrix products), once per process: an idle H100 sits at
    ~345 MHz and a few warm-up calls of a short kernel do not bring it to its 1980 MHz, so the first
    rows of a benchmark were measured at a lower clock (adjust_hue: 0.141 ms as the 7th row of
    bench_color, 0.100 ms in a run of its own)."""
    global _clock_warm
    if _clock_warm:
        return
    _clock_warm = True
    a = torch.randn(4096, 4096, device="cuda")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(8):
            a = (a @ a).clamp_(-1, 1)
        torch.cuda.synchronize()


def summary(ms: List[float]) -> Dict[str, float]:
    """A row's timing from its measurements (ms per iteration): the median and the range."""
    return {"ms": statistics.median(ms), "ms_min": min(ms), "ms_max": max(ms)}


def time_cuda(fn: Callable[[int], object], iters: int, warmup: int = 5, repeats: int = 5) -> Dict[str, float]:
    """fn(i) runs iteration i (it should rotate its inputs on i). Returns the median over `repeats`
    of the mean time per iteration (ms) in blocks of `iters`, timed with CUDA events (the GPU's
    clock brought up first: warm_clocks)."""
    warm_clocks()
    for i in range(warmup):
        fn(i)
    torch.cuda.synchronize()
    per_iter = []
    for r in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(iters):
            fn(r * iters + i)
        end.record()
        end.synchronize()
        per_iter.append(start.elapsed_time(end) / iters)
    return summary(per_iter)


def interleaved(measures: Dict[str, Callable[[], Dict[str, float]]], rounds: int = 5,
                warmup_rounds: int = 1) -> Dict[str, Dict[str, float]]:
    """Each measure (a call timing one block, returning {"ms": ...}: time_cuda with repeats=1, say)
    run `rounds` times after `warmup_rounds` untimed ones, the measures taking turns within each round;
    per measure the median ms over the rounds and its range. For rows that the host's speed bounds
    (JPEG decoding: one call's time on the same card swung from 5.9 to 16.9 ms within a minute), so
    that a swing lasting seconds reaches every row of a case alike rather than deciding one of them."""
    per_round: Dict[str, List[float]] = {name: [] for name in measures}
    for r in range(warmup_rounds + rounds):
        for name, measure in measures.items():
            ms = measure()["ms"]
            if r >= warmup_rounds:
                per_round[name].append(ms)
    return {name: summary(ms) for name, ms in per_round.items()}


def sync_device() -> None:
    """Waits for the GPU's work when there is a GPU; nothing on a machine without one."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def host_ms(chain: Callable, make_input: Callable[[int], object], iters: int = 20) -> float:
    """Host ms per call of chain(make_input(i)) spent in the chain (its Python and launches), the
    input made beforehand and the GPU idle at each call's start (on a machine without one, the
    call's whole time)."""
    total = 0.0
    for i in range(iters + 3):
        x = make_input(i)
        sync_device()
        t0 = time.perf_counter()
        chain(x)
        dt = time.perf_counter() - t0
        sync_device()
        total += dt if i >= 3 else 0.0
    return 1e3 * total / iters


def time_cpu(fn: Callable[[int], object], iters: int, warmup: int = 2, repeats: int = 5) -> Dict[str, float]:
    """time_cuda's statistics for work on the CPU: wall time per iteration (ms), median of `repeats`
    blocks of `iters`."""
    for i in range(warmup):
        fn(i)
    per_iter = []
    for r in range(repeats):
        t0 = time.perf_counter()
        for i in range(iters):
            fn(r * iters + i)
        per_iter.append((time.perf_counter() - t0) * 1e3 / iters)
    return summary(per_iter)


def markdown_table(title: str, e: Dict[str, str], rows: List[Dict]) -> str:
    """A benchmark's table: its run's date, device, torch and commit, then a row per implementation
    with its ratio to the fastest torchaug row of the case and the target where one is set."""
    lines = [
        f"### {title}",
        "",
        f"{e['date']} · {e['device']} · torch {e['torch']} · torchvision {e['torchvision']} · "
        f"Python {e['python']} · {e['cpus']} CPUs · commit {e['commit']}",
        "",
        "| case | implementation | batch | ms / batch | img/s | vs torchaug | note |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    best = {}
    for r in rows:
        if r["impl"].startswith("torchaug"):
            best[r["case"]] = max(best.get(r["case"], 0), r["img_per_s"])
    for r in rows:
        ref = best.get(r["case"])
        rel = f"{r['img_per_s'] / ref:.3g}x" if ref else ""
        note = r["note"]
        if "target_img_per_s" in r:
            ok = "met" if r["img_per_s"] >= r["target_img_per_s"] else "MISSED"
            note = (note + "; " if note else "") + f"target {r['target_img_per_s']:,.0f} img/s: {ok}"
        lines.append(f"| {r['case']} | {r['impl']} | {r['batch']} | {r['ms']:.3f} | {r['img_per_s']:,.0f} | {rel} | {note} |")
    return "\n".join(lines) + "\n"


class Results:
    def __init__(self, title: str):
        self.title = title
        self.env = environment()
        self.rows: List[Dict] = []

    def add(self, case: str, impl: str, batch: int, timing: Dict[str, float], note: str = "", target: Optional[float] = None):
        row = {"case": case, "impl": impl, "batch": batch, **timing, "img_per_s": batch / (timing["ms"] / 1e3), "note": note}
        if target is not None:
            row["target_img_per_s"] = target
        self.rows.append(row)
        print(f"  {case:<34} {impl:<44} {row['img_per_s']:>14,.0f} img/s  ({timing['ms']:.3f} ms/batch) {note}", flush=True)
        return row

    def markdown(self) -> str:
        return markdown_table(self.title, self.env, self.rows)

    def save(self, json_path: Optional[str], md_path: Optional[str]):
        if json_path:
            os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
            with open(json_path, "w") as f:
                json.dump({"title": self.title, "env": self.env, "rows": self.rows}, f, indent=1)
        if md_path:
            os.makedirs(os.path.dirname(os.path.abspath(md_path)), exist_ok=True)
            with open(md_path, "w") as f:
                f.write(self.markdown())
