"""Training throughput, synthetic vs torchaug (GPU decode), in interleaved rounds so that drift
between processes shows as spread (issue 5), with an A/B of the producer's ragged path:

- "torchaug": the Prefetcher as it is (the decoded batch stays one RaggedImages; the crop reads it
  in place; batches prepared below the autograd dispatch keys);
- "dispatches": the same with the transforms' no-op .to() / .expand() calls back (~35 GIL-releasing
  torch calls per batch instead of ~20);
- "autograd": the same with the producer's ops dispatched through autograd again (each torchaug
  op through its Python autograd kernel);
- "hwload": the same with 30% of each batch's files on nvJPEG's hybrid decoder (CPU lanes) beside
  the hardware engines (TORCHAUG_NVJPEG_HW_LOAD=0.7, or as set);
- "nopool": the same with the workers making a new shared-memory segment per batch (TORCHAUG_SHM_POOL=0)
  instead of reusing theirs;
- "inplace": the same with the workers' shared-memory segments kept mapped in the main process and
  pinned there once (TORCHAUG_SHM_PIN=1) instead of each batch mapped anew and copied into pinned
  memory by DataLoader's pin thread;
- "copypin": the same with TORCHAUG_SHM_PIN=0 (the default; in session 29's first runs in-place
  pinning was the default and "torchaug" meant "inplace");
- "depth4": the same with the Prefetcher preparing up to 4 batches ahead instead of 2 (--depth 4);
- "prio1": the same with the Prefetcher's side streams (and so the decode's) at CUDA priority -1,
  more urgent than the model's, instead of 0 (in session 36's run "torchaug" was -1 and this
  config, then "prio0", 0);
- "threads2": the same with two Prefetcher producer threads (two batches decoded at once, each on
  its own nvJPEG decoder);
- "switch": the same with Python's GIL switch interval at 0.5 ms (sys.setswitchinterval) instead of 5 ms;
- "onethread": the same with the producer thread's intra-op thread count at 1 (the Prefetcher's own
  choice on CUDA since session 27: then the same as "torchaug"; in session 27's runs "torchaug"
  passed on the iterating thread's count, 16);
- "callerthreads": the same with the producer threads at the training thread's intra-op count (16
  on the H100 machine), as the Prefetcher set it for a while in session 27;
- "parse16": the same with the decoder's header parse on up to 16 threads
  (TORCHAUG_DECODE_PARSE_THREADS=16) instead of 4;
- "omp4": the same with 4 intra-op (OpenMP) threads per thread that runs parallel CPU work
  (OMP_NUM_THREADS=4) instead of one per core;
- "ownconv": the same with the hardware batch decoded to YUV planes and converted by torchaug's one
  kernel (TORCHAUG_NVJPEG_YUV=1) instead of nvJPEG's kernel per image (in session 41's run the
  default was 1, "torchaug" meant this, and the config "nvjpegconv" today's default);
- "modelprio": the same with the training loop on a CUDA stream of priority -1 (train.py
  --model-priority -1), more urgent than the Prefetcher's side streams and the decoder's (0), so that
  the GPU's block scheduler starts the model's blocks first and the pipeline's kernels fill what is
  left; "synthprio": synthetic data so (the urgent stream alone);
- "pinloop": the same with the training loop's thread alone on one core, its SMT siblings idle, and
  the workers and the process's other threads on the other cores (train.py --pin-loop);
  "synthpin": synthetic data so;
- "graph": the same with the model's forward and backward replayed from CUDA graphs (train.py
  --cuda-graph): the loop's host work per step is a few launches instead of one per kernel, so host
  contention from the Prefetcher's threads cannot starve the model stream; "synthgraph": synthetic
  data so (the baseline for "graph"); "graphprio1", "graphthreads2", "graphboth" (both) and
  "graphownconv": "graph" with prio1's, threads2's or ownconv's change; "graphside" and
  "graphmodelprio": "graph" with the loop on a non-blocking stream of its own (train.py --side-stream)
  at priority 0 or -1 instead of the legacy default stream, "synthgraphside" synthetic data so, and
  "side" the eager loop so;
- "scanbefore": the same with the decoder's scan check before the hardware decode
  (TORCHAUG_DECODE_SCAN_BESIDE=0) instead of beside it, as before session 37;
- "blocking": the same with every CUDA wait in the process sleeping instead of spinning
  (cudaDeviceScheduleBlockingSync), and "synthblocking" synthetic data so;
- "synthbusy": synthetic data with TRAIN_AB_BUSY (default 4) processes spinning on other cores;
- "synthspin": synthetic data with a thread of the training process spinning in a CUDA event wait
  (as nvJPEG's hardware decode does) beside the loop, with no GPU work of note;
- "cpudecode" (or "cpudecodeN", "cpudecodepinN"): the same chain, but the JPEGs decoded on the CPU by
  --cpu-workers (or N) DataLoader workers (libjpeg-turbo, one image at a time) and handed over as
  one RaggedImages of pixels per batch (issue 5's "workers only decode"), so nvJPEG takes no SM time
  beside the model; "cpudecodepinN" with the workers' segments pinned in place (TORCHAUG_SHM_PIN=1)
  instead of copied by the pin thread; "cpudecodeniceN" with the workers at niceness 10 (train.py
  --worker-nice 10), below the training thread; "cpudecodenicepinN" both;
- "splitNN": the workers (--workers, 2) decode NN% of each batch on the CPU (libjpeg-turbo,
  torchaug.io.collate_partly_decoded) and the Prefetcher the rest with nvJPEG, joined in one
  RaggedImages ("split" alone: 50%); "splitpinNN" with the workers' segments pinned in place;
- "connN" (conn8, conn32, ...): the same with CUDA_DEVICE_MAX_CONNECTIONS=N before CUDA starts: the
  number of hardware work queues the driver maps the process's streams onto, where work runs in
  submission order whatever stream it came from (the driver's default is 8; torchaug's import asks
  for 32 since session 44, so "torchaug" is conn32 unless the variable is set); "synthconnN",
  "graphconnN" and "synthgraphconnN" likewise;
- "list": also the decoded batch as a list of per-image views, the chain given that list (a
  tensor per image and the list checks on the host): the Prefetcher before both changes.

Every row is one run of examples/train.py in its own process.

    python scripts/train_ab.py [--models efficientnet_b0,resnet50] [--rounds 2] [--steps 200] [--warmup 40]
        [--configs synthetic,torchaug,list] [--json out.json]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


def patch_list_path():
    """The Prefetcher's decode and hand-over as before RaggedImages was read in place."""
    import torchaug.prefetch as P
    from torchaug.io import EncodedImages, RaggedImages, decode_jpeg

    P.decode_jpeg_ragged = decode_jpeg
    P.as_input = lambda fn, x: x.images() if isinstance(x, RaggedImages) else x
    EncodedImages.tensors = lambda self: [self.data[self.offsets[i]:self.offsets[i + 1]] for i in range(len(self.lengths))]


def patch_autograd_dispatch():
    """The Prefetcher's producer as before it prepared batches below the autograd keys (every
    torchaug op call went through its Python autograd kernel)."""
    import contextlib

    import torchaug.prefetch as P
    P._preparing = contextlib.nullcontext


def patch_noop_dispatches():
    """The transforms' host path as before it skipped .to() / .expand() calls that change nothing."""
    import torchaug.functional._augment as A
    import torchaug.functional._utils as U
    import torchaug.transforms._script as S

    def as_old(value, shape, device, dtype):
        return value.to(device=device, dtype=dtype).expand(shape)
    U._as = A._as = as_old
    U._constant_rows = lambda values, device, dtype, batch: U._constant_row(values, device, dtype).expand(batch, len(values))
    S._moved = lambda t, device: t.to(device, non_blocking=True)


def patch_no_shm_pool():
    """The workers' collate as before they reused their shared-memory segments (a new one per batch)."""
    os.environ["TORCHAUG_SHM_POOL"] = "0"


def patch_copy_pin():
    """Each batch's segment mapped anew and copied into pinned memory (the default)."""
    os.environ["TORCHAUG_SHM_PIN"] = "0"


def patch_pin_in_place():
    """The workers' segments kept mapped and pinned in place (TORCHAUG_SHM_PIN=1)."""
    os.environ["TORCHAUG_SHM_PIN"] = "1"


def patch_hw_load():
    """A share of each batch's files decoded by nvJPEG's hybrid decoder on CPU lanes beside the
    hardware engines (TORCHAUG_NVJPEG_HW_LOAD, default 0.7 here; the decoder's default is 1)."""
    os.environ.setdefault("TORCHAUG_NVJPEG_HW_LOAD", "0.7")


def patch_own_conversion():
    """The hardware batch decoded to YUV planes and converted to RGB by torchaug's one kernel
    (TORCHAUG_NVJPEG_YUV=1) instead of by nvJPEG, a kernel per image (the default)."""
    os.environ["TORCHAUG_NVJPEG_YUV"] = "1"


def patch_switch_interval():
    """Python's GIL switch interval at 0.5 ms instead of 5 ms for the whole process (a thread that
    waits for the GIL asks the running thread for it after that long)."""
    sys.setswitchinterval(0.0005)


def _producer_threads(count):
    """The Prefetcher's producer threads run with `count` intra-op threads."""
    import torchaug.prefetch as P
    produce = P._produce

    def with_count(shared, stream):
        shared.num_threads = count
        return produce(shared, stream)
    P._produce = with_count


def patch_one_thread():
    """The producer threads run with 1 intra-op thread (the decoder's parse on one core)."""
    _producer_threads(1)


def patch_caller_threads():
    """The producer threads at the iterating thread's intra-op thread count instead of 1."""
    import torch
    _producer_threads(torch.get_num_threads())


def patch_parse_threads():
    """The decoder's header parse on up to 16 intra-op threads (its default is 4)."""
    os.environ.setdefault("TORCHAUG_DECODE_PARSE_THREADS", "16")


def patch_scan_before():
    """The files' scan check before the hardware decode (TORCHAUG_DECODE_SCAN_BESIDE=0), the order
    before session 37, instead of on helper threads while the engines decode."""
    os.environ["TORCHAUG_DECODE_SCAN_BESIDE"] = "0"


def patch_blocking_sync():
    """Every CUDA wait of the process sleeps instead of spinning (cudaSetDeviceFlags(
    cudaDeviceScheduleBlockingSync) before the context is made): if the training loop's thread loses
    time to threads that spin on a core beside it, this gets it back."""
    import ctypes

    import torch
    assert not torch.cuda.is_initialized()
    try:  # the runtime torch loaded (dlopen of a loaded soname returns it)
        rt = ctypes.CDLL(f"libcudart.so.{torch.version.cuda.split('.')[0]}")
        err = rt.cudaSetDeviceFlags(ctypes.c_uint(4))  # cudaDeviceScheduleBlockingSync
    except (OSError, AttributeError) as e:
        err = e
    print(f"train_ab: cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) -> {err}", file=sys.stderr, flush=True)


def patch_busy_cores():
    """TRAIN_AB_BUSY (default 4) processes spinning on the CPU beside the run, none touching the GPU
    or the GIL: if the host-bound training loop slows down only because other cores are busy
    (shared caches, clocks), synthetic data slows so too."""
    import atexit
    import subprocess
    busy = [subprocess.Popen(["timeout", "900", "sh", "-c", "while :; do :; done"])
            for _ in range(int(os.environ.get("TRAIN_AB_BUSY", "4")))]
    atexit.register(lambda: [p.terminate() for p in busy])  # timeout passes SIGTERM on to sh


def patch_spin_thread():
    """A thread beside the training loop that keeps a CUDA event wait spinning, as nvJPEG's hardware
    decode does inside nvjpegDecodeBatched (cuEventSynchronize on an event of its own, which
    busy-waits: RESULTS.md case 5, session 11), with no GPU work of note: a one-thread sleep kernel of
    TRAIN_AB_SPIN_MS (10) ms on a side stream, then a spinning synchronize on its event, over and
    over. If a spinning wait in the process slows the training thread's launches, synthetic data slows
    so too."""
    import atexit
    import threading

    import torch
    stop = threading.Event()

    def spin():
        s, ev = torch.cuda.Stream(), torch.cuda.Event()
        cycles = int(float(os.environ.get("TRAIN_AB_SPIN_MS", "10")) * 1.98e6)  # the H100's 1980 MHz
        while not stop.is_set():
            with torch.cuda.stream(s):
                torch.cuda._sleep(cycles)
            ev.record(s)
            ev.synchronize()

    t = threading.Thread(target=spin, daemon=True)
    t.start()
    atexit.register(lambda: (stop.set(), t.join(timeout=5)))


def patch_omp_threads():
    """OMP_NUM_THREADS=4 (or as set) before torch loads: every OpenMP team the process starts (the
    decoder's header parse on the producer thread, the pin thread's copies, ...) has 4 threads."""
    os.environ.setdefault("OMP_NUM_THREADS", "4")


PATCHES = {"--caller-threads": patch_caller_threads, "--parse-threads": patch_parse_threads, "--one-thread": patch_one_thread, "--omp-threads": patch_omp_threads, "--scan-before": patch_scan_before, "--blocking-sync": patch_blocking_sync, "--busy": patch_busy_cores, "--spin-thread": patch_spin_thread, "--switch-interval": patch_switch_interval, "--hw-load": patch_hw_load, "--own-conversion": patch_own_conversion, "--no-shm-pool": patch_no_shm_pool, "--copy-pin": patch_copy_pin, "--pin-in-place": patch_pin_in_place, "--list-path": patch_list_path, "--with-autograd": patch_autograd_dispatch, "--with-noop-dispatches": patch_noop_dispatches}


def child(argv):
    while argv and (argv[0] in PATCHES or argv[0].startswith("--connections=")):
        if argv[0].startswith("--connections="):  # CUDA's hardware work queues, before CUDA (and torchaug) start
            os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = argv[0].split("=", 1)[1]
        else:
            PATCHES[argv[0]]()
        argv = argv[1:]
    import train
    train.main(argv)


def run(train_args, *patches):
    from bench_train import run as run_train
    return run_train(train_args, script=[os.path.abspath(__file__), "--child", *patches], timeout=600)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child(sys.argv[2:])
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="efficientnet_b0,resnet50")
    ap.add_argument("--configs", default="synthetic,torchaug,autograd,list")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=200, help="timed steps per run")
    ap.add_argument("--warmup", type=int, default=40)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cpu-workers", type=int, default=12, help="decoding workers of the cpudecode config")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--trace-steps", type=int, default=0,
                    help="after the timed steps, this many under CUPTI: the model stream's kernel, idle and overlap ms per step")
    ap.add_argument("--json")
    args = ap.parse_args()
    from bench_train import make_jpeg_folder

    data = tempfile.mkdtemp(prefix="torchaug_ab_")
    kb = make_jpeg_folder(data, n=1024) / 1e3
    total = args.warmup + args.steps
    total += args.trace_steps
    common = ["--data", data, "--batch-size", str(args.batch_size), "--warmup", str(args.warmup), "--steps", str(total),
              "--length", str(args.batch_size * (total + 2)), "--trace-steps", str(args.trace_steps)]
    def torchaug_run(patches=(), extra=()):
        """A run of the torchaug loader (GPU decode, args.workers byte-reading workers), extra
        train.py arguments and the child's patches as given."""
        return lambda m: run(["--model", m, "--loader", "torchaug", "--decode", "gpu", "--workers", str(args.workers),
                              *extra] + common, *patches)

    runs = {
        "synthetic": lambda m: run(["--model", m, "--loader", "synthetic"] + common),
        "torchaug": torchaug_run(),
        "dispatches": torchaug_run(["--with-noop-dispatches"]),
        "autograd": torchaug_run(["--with-autograd"]),
        "hwload": torchaug_run(["--hw-load"]),
        "nopool": torchaug_run(["--no-shm-pool"]),
        "copypin": torchaug_run(["--copy-pin"]),
        "inplace": torchaug_run(["--pin-in-place"]),
        "switch": torchaug_run(["--switch-interval"]),
        "onethread": torchaug_run(["--one-thread"]),
        "callerthreads": torchaug_run(["--caller-threads"]),
        "parse16": torchaug_run(["--parse-threads"]),
        "omp4": torchaug_run(["--omp-threads"]),
        "threads2": torchaug_run(extra=["--prefetch-threads", "2"]),
        "depth4": torchaug_run(extra=["--depth", "4"]),
        "prio1": torchaug_run(extra=["--stream-priority", "-1"]),
        "scanbefore": torchaug_run(["--scan-before"]),
        "modelprio": torchaug_run(extra=["--model-priority", "-1"]),
        "synthprio": lambda m: run(["--model", m, "--loader", "synthetic", "--model-priority", "-1"] + common),
        "pinloop": torchaug_run(extra=["--pin-loop"]),
        "synthpin": lambda m: run(["--model", m, "--loader", "synthetic", "--pin-loop"] + common),
        "graph": torchaug_run(extra=["--cuda-graph"]),
        "graphprio1": torchaug_run(extra=["--cuda-graph", "--stream-priority", "-1"]),
        "graphthreads2": torchaug_run(extra=["--cuda-graph", "--prefetch-threads", "2"]),
        "graphboth": torchaug_run(extra=["--cuda-graph", "--prefetch-threads", "2", "--stream-priority", "-1"]),
        "graphownconv": torchaug_run(["--own-conversion"], extra=["--cuda-graph"]),
        "graphside": torchaug_run(extra=["--cuda-graph", "--side-stream"]),
        "graphmodelprio": torchaug_run(extra=["--cuda-graph", "--model-priority", "-1"]),
        "synthgraphside": lambda m: run(["--model", m, "--loader", "synthetic", "--cuda-graph", "--side-stream"] + common),
        "side": torchaug_run(extra=["--side-stream"]),
        "synthgraph": lambda m: run(["--model", m, "--loader", "synthetic", "--cuda-graph"] + common),
        "ownconv": torchaug_run(["--own-conversion"]),
        "blocking": torchaug_run(["--blocking-sync"]),
        "synthbusy": lambda m: run(["--model", m, "--loader", "synthetic"] + common, "--busy"),
        "synthspin": lambda m: run(["--model", m, "--loader", "synthetic"] + common, "--spin-thread"),
        "synthblocking": lambda m: run(["--model", m, "--loader", "synthetic"] + common, "--blocking-sync"),
        "list": torchaug_run(["--list-path", "--with-autograd"]),
    }
    configs = args.configs.split(",")
    for c in configs:
        if c.startswith("cpudecode"):
            rest = c[len("cpudecode"):]
            nice = rest.startswith("nice")
            rest = rest[4:] if nice else rest
            pin = rest.startswith("pin")
            n = int((rest[3:] if pin else rest) or args.cpu_workers)
            runs[c] = lambda m, n=n, pin=pin, nice=nice: run(
                ["--model", m, "--loader", "torchaug", "--decode", "workers", "--workers", str(n),
                 *(["--worker-nice", "10"] if nice else [])] + common, *(["--pin-in-place"] if pin else []))
        elif "conn" in c and c.split("conn")[1].isdigit():  # "connN", "synthconnN", "graphconnN", "synthgraphconnN"
            kind, n = c.split("conn")
            patch = f"--connections={n}"
            graph = ["--cuda-graph"] if kind.endswith("graph") else []
            if kind.startswith("synth"):
                runs[c] = lambda m, patch=patch, graph=graph: run(["--model", m, "--loader", "synthetic", *graph] + common, patch)
            else:
                runs[c] = torchaug_run([patch], extra=graph)
        elif c.startswith("split"):  # "splitNN" / "splitpinNN": the workers decode NN% of each batch
            pin = c.startswith("splitpin")
            share = int(c[len("splitpin" if pin else "split"):] or 50) / 100
            runs[c] = torchaug_run(["--pin-in-place"] if pin else [], extra=["--decode", "split", "--cpu-share", str(share)])
    rows = []
    print(f"train_ab: 1,024 JPEGs of 500x375, mean {kb:.0f} KB; {args.warmup} warm-up + {args.steps} timed steps; "
          f"batch {args.batch_size}; {args.workers} byte-reading workers", flush=True)
    for model in args.models.split(","):
        for r in range(args.rounds):
            for c in configs:
                load = os.getloadavg()[0]  # what else the machine ran just before (a run's leftovers)
                t0 = time.time()
                res = runs[c](model)
                st = res.get("prefetch_ms_per_batch") or {}
                kt = res.get("kernel_trace")
                rows.append({"model": model, "round": r, "config": c, "img_per_s": res["img_per_s"], "prefetch_ms_per_batch": st,
                             "kernel_trace": kt, "load_before": load, "unix_start": t0, "unix_end": time.time()})
                print(f"  {model:<16} round {r} {c:<9} {res['img_per_s']:>8,.0f} img/s  load {load:.1f}  "
                      + ", ".join(f"{k} {v:.1f}" for k, v in st.items() if v is not None), flush=True)
                if res.get("loop_core"):
                    rows[-1]["loop_core"] = res["loop_core"]
                cpu = res.get("cpu_ms_per_step")
                rows[-1]["cpu_ms_per_step"] = cpu
                if cpu:
                    print("      host ms/step: wall {wall:.2f}, loop thread CPU {loop_thread:.2f}, process CPU {process:.2f}".format(**cpu), flush=True)
                if kt:
                    print("      ms/step: model span {model_span_ms:.2f}, kernels {model_kernel_ms:.2f} ({model_kernels:.0f}), "
                          "idle {model_idle_ms:.2f}, overlapped {model_overlap_ms:.2f}; other streams ({others_streams}) "
                          "kernels {others_kernel_ms:.2f}, busy {others_busy_ms:.2f}; copies {memcpy_ms:.2f}".format(**kt), flush=True)
    print("\n| model | config | img/s per round | median | % of synthetic (median) |\n| --- | --- | --- | ---: | ---: |")
    for model in args.models.split(","):
        synth = [x["img_per_s"] for x in rows if x["model"] == model and x["config"] == "synthetic"]
        base = statistics.median(synth) if synth else None
        for c in configs:
            v = [x["img_per_s"] for x in rows if x["model"] == model and x["config"] == c]
            med = statistics.median(v)
            pct = f"{med / base:.1%}" if base else ""
            print(f"| {model} | {c} | {', '.join(f'{x:,.0f}' for x in v)} | {med:,.0f} | {pct} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "mean_kb": kb, "args": vars(args)}, f, indent=1)


if __name__ == "__main__":
    main()
