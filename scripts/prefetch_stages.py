"""Where the Prefetcher's decode pipeline loses time against the same work on bytes in memory (issue 6:
bench_decode's Prefetcher rows ran 1.3x-1.9x below its in-memory row). The same Prefetcher (decode +
RandomResizedCrop(224) + flip + RandAugment(2, 9) + Normalize to bf16 channels_last, 256 files of
~110 KB a batch) fed four ways:

  - a list of batches already in pinned memory (no workers, no pin thread);
  - a list of batches in pageable memory;
  - a DataLoader with 2 byte-reading workers, pin_memory=True (bench_decode's row): each batch's
    segment mapped anew and copied into pinned memory by the pin thread (the default);
  - the same with the workers' segments kept mapped and pinned in place (TORCHAUG_SHM_PIN=1):
    "loader_inplace" (in session 29's first runs that was the default, "loader_pinned", and this
    feed's copy was "loader_copypin");
  - the same DataLoader with pin_memory=False.

Per batch: img/s over the timed batches, and the producer's host time split into the decode call (and
the CPU time of the thread making it),
the copies to the device, and the chain (the chain's host work: Python and launches), plus the
loader wait (PrefetchStats). The decode's GPU span is the time from the producer's decode call to
the decoded batch being ready on its stream (CUDA events).

--sample: a thread samples where the producer thread, the consumer (main) thread and DataLoader's
pin thread are every millisecond (their Python stacks, sys._current_frames()) and prints each one's
most frequent places: the innermost frame, and the line of _produce (or of the consumer's loop) it is
under. A thread inside a C++ call shows the line that made the call; one waiting for the GIL shows
the line it waits at.

--steps splits each decode call's host time further with the decoder's own trace
(TORCHAUG_DECODE_TRACE=1, its stderr lines read back from a file): Python before the op, the op up
to decode_jpeg_cuda (the header / marker parse on the intra-op threads), the decoder's set-up,
nvjpegDecodeBatched's host call, the rest of the op, and Python after it.

    python3 scripts/prefetch_stages.py [--batches N] [--skip K] [--rounds R] [--only pinned,pageable,loader_pinned,loader_inplace,loader]
        [--switch S1,S2] [--steps] [--sample] [--json PATH]
"""
import collections
import gc
import json
import os
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

import torchaug  # noqa: E402
import torchaug.transforms as T  # noqa: E402
from bench_decode import Repeated, make_files, write_folder  # noqa: E402
from harness import saved_env  # noqa: E402
from torchaug.io import EncodedImages, ImageFolderBytes, collate_encoded  # noqa: E402
from torchaug.io import _decode as decode_module  # noqa: E402
from torchaug.io import _shm as shm_module  # noqa: E402

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
B = 256


# --steps: every decode call as (native thread id, start, op call, end), perf_counter seconds
# (CLOCK_MONOTONIC, the clock of the trace's steady_clock stamps)
CALLS = []
OP_START = threading.local()
_as_byte_tensors = decode_module._as_byte_tensors


def _as_byte_tensors_timed(data):
    out = _as_byte_tensors(data)
    OP_START.t = time.perf_counter()  # what remains before the op call is argument checks
    return out


decode_module._as_byte_tensors = _as_byte_tensors_timed
# the decoder's trace steps, in order, and the part of the call each one ends
STEP_PARTS = [("enter", "op to decoder (parse)"), ("nvjpegDecodeBatched", "decoder set-up"),
              ("nvjpegDecodeBatched returned", "nvjpegDecodeBatched"), ("exit", "decoder after nvJPEG")]


def trace_parts(path, calls):
    """ms per call of each part of the decode calls in `calls`, from the trace lines in `path`."""
    lines = []
    with open(path, errors="replace") as f:
        for line in f:
            if not line.startswith("torchaug decode_jpeg"):
                continue
            head, step = line.split(": ", 1)
            tid = int(head.split(" thread ")[1].split()[0])
            t = float(head.split("t=")[1])
            lines.append((tid, t, step.rsplit(" (", 1)[0]))
    parts = {"python before the op": 0.0, **{p: 0.0 for _, p in STEP_PARTS}, "python after the op": 0.0}
    n = 0
    for tid, t0, top, t1 in calls:
        mine = [(t, step) for i, t, step in lines if i == tid and t0 <= t <= t1 + 1e-3]
        stamps = {}
        for t, step in mine:
            stamps.setdefault(step, t)
        if not all(step in stamps for step, _ in STEP_PARTS):
            continue
        n += 1
        parts["python before the op"] += top - t0
        prev = top
        for step, part in STEP_PARTS:
            parts[part] += stamps[step] - prev
            prev = stamps[step]
        parts["python after the op"] += t1 - prev
    return {k: 1e3 * v / max(n, 1) for k, v in parts.items()}, n


class Timed(torchaug.Prefetcher):
    """A Prefetcher that times its decode calls, copies and chain (host seconds, summed)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.t = {"decode": 0.0, "decode_cpu": 0.0, "copy": 0.0, "chain": 0.0, "decode_gpu": 0.0}
        self._events = []

    def _decode(self, batch, index):
        c0 = time.thread_time()
        t0 = time.perf_counter()
        e0 = torch.cuda.Event(enable_timing=True)
        e0.record()
        out = super()._decode(batch, index)
        e1 = torch.cuda.Event(enable_timing=True)
        e1.record()
        self._events.append((e0, e1))
        CALLS.append((threading.get_native_id(), t0, getattr(OP_START, "t", t0), time.perf_counter()))
        self.t["decode"] += time.perf_counter() - t0
        self.t["decode_cpu"] += time.thread_time() - c0
        return out

    def _load_batch(self, batch, index):
        t0 = time.perf_counter()
        out = super()._load_batch(batch, index)
        self.t["copy"] += time.perf_counter() - t0  # minus the decode, below
        return out

    def _transform_batch(self, batch):
        t0 = time.perf_counter()
        out = super()._transform_batch(batch)
        self.t["chain"] += time.perf_counter() - t0
        return out

    def snapshot(self):
        torch.cuda.synchronize()
        gpu = sum(a.elapsed_time(b) for a, b in self._events) / 1e3
        d = dict(self.t, decode_gpu=gpu, batches=len(self._events))
        d["copy"] -= d["decode"]
        return d


class Sampler:
    """Every `interval` s, where the threads of interest are: {thread: Counter((outer line, innermost frame))}."""

    def __init__(self, interval=0.001):
        self.interval, self.counts, self.samples = interval, collections.defaultdict(collections.Counter), 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True, name="stages-sampler")

    @staticmethod
    def role(t):
        if t.name.startswith("torchaug-prefetch"):
            return "producer"
        if t is threading.main_thread():
            return "consumer"
        if "pin_memory" in t.name:
            return "pin thread"
        return None

    @staticmethod
    def where(frame):
        inner = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno} {frame.f_code.co_name}"
        outer, f = "", frame
        while f is not None:
            if f.f_code.co_name in ("_produce", "run", "_pin_memory_loop"):
                outer = f"{f.f_code.co_name}:{f.f_lineno}"
                break
            f = f.f_back
        return outer, inner

    def loop(self):
        while not self.stop.wait(self.interval):
            frames = sys._current_frames()
            self.samples += 1
            for t in threading.enumerate():
                r = self.role(t)
                f = frames.get(t.ident) if r else None
                if f is not None:
                    self.counts[r][self.where(f)] += 1

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def report(self, top=10):
        out = {}
        for r, c in self.counts.items():
            total = sum(c.values())
            print(f"    {r}: {total} samples")
            for (outer, inner), n in c.most_common(top):
                print(f"      {100 * n / total:5.1f}%  {outer:<28s} {inner}")
            out[r] = [[outer, inner, n] for (outer, inner), n in c.most_common(top)]
        return out


def run(name, loader, n_batches, skip):
    pf = Timed(loader, T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.RandAugment(2, 9)]),
               device="cuda", mean=MEAN, std=STD, dtype=torch.bfloat16, memory_format=torch.channels_last)
    count, t0 = 0, None
    sampler = Sampler() if "--sample" in sys.argv else None
    reg0 = dict(shm_module.stats)
    for k, (x, y) in enumerate(pf):
        if k == skip:
            torch.cuda.synchronize()
            t0, s0, st0 = time.perf_counter(), pf.snapshot(), pf.stats.as_dict()
            cpu0 = time.process_time()
            if sampler is not None:
                sampler.__enter__()
        elif k > skip:
            count += x.shape[0]
        if k + 1 >= n_batches:
            break
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    if sampler is not None:
        sampler.__exit__()
    s1, nb = pf.snapshot(), count / B
    per = {k: 1e3 * (s1[k] - s0[k]) / nb for k in ("decode", "decode_cpu", "decode_gpu", "copy", "chain")}
    st = pf.stats.per_batch_ms(st0)
    row = {"feed": name, "img_s": count / dt, "ms_per_batch": 1e3 * dt / nb, **{f"{k}_ms": v for k, v in per.items()},
           "loader_ms": st.get("loader"), "consumer_wait_ms": st.get("consumer_wait"), "process_cpu_ms": 1e3 * cpu / nb,
           "segments_registered": shm_module.stats["registered"] - reg0["registered"],
           "register_ms": 1e3 * (shm_module.stats["register_s"] - reg0["register_s"])}
    print(f"{name:44s} {row['img_s']:8,.0f} img/s  {row['ms_per_batch']:6.2f} ms/batch | host ms/batch: decode call "
          f"{per['decode']:.2f} (its thread's CPU time {per['decode_cpu']:.2f}, GPU span {per['decode_gpu']:.2f}), copies {per['copy']:.2f}, chain {per['chain']:.2f}, "
          f"loader wait {st.get('loader', 0):.2f}, consumer wait {st.get('consumer_wait', 0):.2f}; main process CPU {1e3 * cpu / nb:.1f}; "
          f"segments registered {row['segments_registered']} in {row['register_ms']:.1f} ms (whole run)", flush=True)
    if TRACE_FILE is not None:
        sys.stderr.flush()
        parts, n = trace_parts(TRACE_FILE, CALLS[skip:])
        row["decode_steps_ms"] = parts
        print("    decode call, ms per call over " + f"{n} calls: " + ", ".join(f"{k} {v:.2f}" for k, v in parts.items()), flush=True)
    if sampler is not None:
        row["samples"] = sampler.report()
    CALLS.clear()
    pf._events.clear()  # no CUDA event may reach the next DataLoader's forked workers (their
    del pf             # garbage collector would destroy it there, where CUDA cannot run)
    gc.collect()
    return row


TRACE_FILE = None


def main():
    global TRACE_FILE
    if "--steps" in sys.argv:
        # the decoder reads TORCHAUG_DECODE_TRACE once, at its first trace; its lines go to fd 2,
        # which goes to a file from here on (the script's own output is on stdout)
        os.environ["TORCHAUG_DECODE_TRACE"] = "1"
        fd, TRACE_FILE = tempfile.mkstemp(prefix="torchaug_trace_", suffix=".log")
        sys.stderr.flush()
        os.dup2(fd, 2)
        os.close(fd)
    n_batches = int(sys.argv[sys.argv.index("--batches") + 1]) if "--batches" in sys.argv else 24
    # batches before the timed window: the workers' start, the decoder's allocations and, pinned in
    # place, the registration of each worker segment (once, ~10 segments of 35 MB for 2 workers)
    skip = int(sys.argv[sys.argv.index("--skip") + 1]) if "--skip" in sys.argv else 4
    files = make_files(512, 97, 4.5)
    labels = torch.arange(B) % 8
    chunks = [files[i:i + B] for i in range(0, len(files), B)]
    pageable = [(EncodedImages.from_bytes(c), labels) for c in chunks]
    pinned = [(e.pin_memory(), y.pin_memory()) for e, y in pageable]
    root = write_folder(files, prefix="torchaug_stages_")

    def loader(pin):
        ds = Repeated(ImageFolderBytes(root), (n_batches + 2) * B)
        return torch.utils.data.DataLoader(ds, batch_size=B, shuffle=True, num_workers=2, pin_memory=pin, drop_last=True,
                                           prefetch_factor=4, collate_fn=collate_encoded)

    feeds = {"pinned": ("list of batches in pinned memory", lambda: [pinned[i % 2] for i in range(n_batches)]),
             "pageable": ("list of batches in pageable memory", lambda: [pageable[i % 2] for i in range(n_batches)]),
             "loader_pinned": ("DataLoader, 2 workers, pin_memory=True", lambda: loader(True)),
             "loader_inplace": ("the same, segments pinned in place", lambda: loader(True)),
             "loader": ("DataLoader, 2 workers, pin_memory=False", lambda: loader(False))}
    only = sys.argv[sys.argv.index("--only") + 1].split(",") if "--only" in sys.argv else list(feeds)
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 2
    # --switch S1,S2: each feed run under each of these GIL switch intervals (sys.setswitchinterval,
    # default 0.005 s: a thread waiting for the GIL asks for it after that long)
    switches = [float(v) for v in sys.argv[sys.argv.index("--switch") + 1].split(",")] if "--switch" in sys.argv else [None]
    default_switch = sys.getswitchinterval()
    rows = []
    print(f"CUDA runtime for registering segments: {'ctypes (GIL released)' if shm_module._cuda_runtime() else 'torch.cuda.cudart() (GIL held)'}")
    for rnd in range(rounds):
        for key in only:
            for sw in switches:
                name, make = feeds[key]
                sys.setswitchinterval(sw or default_switch)
                with saved_env("TORCHAUG_SHM_PIN"):  # read by the main process as each batch arrives
                    os.environ["TORCHAUG_SHM_PIN"] = "1" if key == "loader_inplace" else "0"
                    rows.append(run(name + (f", switch interval {sw * 1e3:g} ms" if sw else ""), make(), n_batches, skip))
                sys.setswitchinterval(default_switch)
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
