"""Does the decode rate depend on how busy the rest of the GPU is (its clocks)? The same decode loop
(decode_jpeg_ragged, 256 of bench_decode's ~110 KB files a call, pinned input) timed in phases of a
few seconds, alternating:

  - idle: nothing else on the GPU;
  - keeper: a thread keeps one tiny kernel in flight on another stream (torch.cuda._sleep on one
    thread of one block, then a synchronize of that stream, in a loop: ~1/132 of the SMs busy);
  - gpu_only: one such kernel as long as the phase, queued once (no host calls meanwhile);
  - python_spin: a thread counting in Python (the GIL contended, no CUDA calls);
  - api_poll: a thread querying a stream every 0.2 ms (CUDA API calls, no kernels);
  - pin_thread: a thread pinning a new copy of a 28 MB buffer every 12 ms (DataLoader's pin thread);
  - fork_children: two child processes forked from this one, sleeping (as DataLoader workers are).

Meanwhile `nvidia-smi` samples the SM and video clocks (nvJPEG's engines) and the P-state every 100 ms;
each phase prints its decode rate and the clocks seen during it.

--long: instead, whether a decode call waits for other streams' work: a ~100 ms kernel (one thread)
is queued on another stream, then one decode call is timed on the host (TORCHAUG_DECODE_TRACE=1
shows the step it waits in); a call that takes ~100 ms waited for it.

    python3 scripts/decode_clocks.py [--seconds S] [--rounds R] [--phases idle,keeper,...] [--switch S1,S2] [--long]
"""
import os
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

from bench_decode import batches_of, make_files, pinned_views  # noqa: E402
from torchaug.io import decode_jpeg_ragged  # noqa: E402


CYCLES_PER_MS = 1.98e6  # torch.cuda._sleep's unit at the H100's boost clock (1980 MHz)


def sampler(log, stop):
    p = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.video,pstate,utilization.gpu",
                          "--format=csv,noheader,nounits", "-lms", "100"], stdout=subprocess.PIPE, text=True)
    for line in p.stdout:
        log.append((time.perf_counter(), line.strip()))
        if stop.is_set():
            break
    p.terminate()


def keeper(stop):
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        while not stop.is_set():
            torch.cuda._sleep(int(CYCLES_PER_MS))  # ~1 ms of one thread spinning
            s.synchronize()


def gpu_only(stop, seconds=5.0):
    # one long kernel on another stream, no host calls while the phase runs
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(int(seconds * 1e3 * CYCLES_PER_MS))
    stop.wait()


def python_spin(stop):
    # a thread busy in Python (it holds the GIL but for the switch interval), no CUDA calls
    x = 0
    while not stop.is_set():
        x += 1


def api_poll(stop):
    # a thread polling a stream with the GIL released (torch.cuda.Stream.query), no kernels
    s = torch.cuda.Stream()
    while not stop.is_set():
        s.query()
        time.sleep(0.0002)


def fork_children(stop):
    # two forked child processes that only sleep (as DataLoader workers are forked from this process)
    import multiprocessing
    ctx = multiprocessing.get_context("fork")
    kids = [ctx.Process(target=time.sleep, args=(30,), daemon=True) for _ in range(2)]
    for k in kids:
        k.start()
    stop.wait()
    for k in kids:
        k.terminate()
        k.join()


def pin_thread(stop):
    # a thread pinning a 28 MB batch every 12 ms (what DataLoader's pin_memory thread does per batch)
    src = torch.empty(28 << 20, dtype=torch.uint8)
    src.fill_(1)
    while not stop.is_set():
        t = time.perf_counter()
        src.pin_memory()
        time.sleep(max(0.0, 0.012 - (time.perf_counter() - t)))


PHASES = {"idle": None, "fork_children": fork_children, "pin_thread": pin_thread, "keeper": keeper, "gpu_only": gpu_only, "python_spin": python_spin, "api_poll": api_poll}
if "--phases" in sys.argv:
    PHASES = {k: PHASES[k] for k in sys.argv[sys.argv.index("--phases") + 1].split(",")}


def main():
    seconds = float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else 3.0
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 2
    bs = batches_of(pinned_views(make_files(512, 97, 4.5)), 256)
    for b in bs:
        decode_jpeg_ragged(b, device="cuda")
    torch.cuda.synchronize()
    if "--long" in sys.argv:
        side = torch.cuda.Stream()
        for rnd in range(3):
            for sleep_ms in (0, 100):
                with torch.cuda.stream(side):
                    torch.cuda._sleep(int(sleep_ms * CYCLES_PER_MS))
                t0 = time.perf_counter()
                decode_jpeg_ragged(bs[rnd % len(bs)], device="cuda")
                t1 = time.perf_counter()
                torch.cuda.synchronize()
                t2 = time.perf_counter()
                print(f"other stream busy for ~{sleep_ms} ms: decode call returned after {1e3 * (t1 - t0):.1f} ms, "
                      f"everything done after {1e3 * (t2 - t0):.1f} ms", flush=True)
        return
    log, stop_log = [], threading.Event()
    threading.Thread(target=sampler, args=(log, stop_log), daemon=True).start()
    time.sleep(1.0)
    switches = [float(v) for v in sys.argv[sys.argv.index("--switch") + 1].split(",")] if "--switch" in sys.argv else [None]
    default_switch = sys.getswitchinterval()
    for rnd, sw, (phase, fn) in ((r, w, p) for r in range(rounds) for w in switches for p in PHASES.items()):
        sys.setswitchinterval(sw or default_switch)
        stop = threading.Event()
        k = threading.Thread(target=fn, args=(stop,)) if fn else None
        if k:
            k.start()
            time.sleep(0.2)
        t0, n = time.perf_counter(), 0
        while time.perf_counter() - t0 < seconds:
            decode_jpeg_ragged(bs[n % len(bs)], device="cuda")
            n += 1
        torch.cuda.current_stream().synchronize()  # the decodes' work (not gpu_only's long kernel)
        t1 = time.perf_counter()
        if k:
            stop.set()
            k.join()
        seen = [line for t, line in log if t0 <= t <= t1]
        sm = sorted({line.split(",")[1].strip() for line in seen})
        video = sorted({line.split(",")[2].strip() for line in seen})
        ps = sorted({line.split(",")[3].strip() for line in seen})
        sys.setswitchinterval(default_switch)
        print(f"round {rnd} {phase:11s}{f' switch {sw * 1e3:g} ms' if sw else ''}: {256 * n / (t1 - t0):8,.0f} img/s ({n} calls) | SM MHz {','.join(sm)} | "
              f"video MHz {','.join(video)} | {','.join(ps)}", flush=True)
        time.sleep(1.0)
    stop_log.set()


if __name__ == "__main__":
    main()
