"""Why a decode takes ~60 ms beside ResNet-50's training step and ~16 ms alone (issue 5: the
ResNet-50 loop waits 9-13 ms a batch for the Prefetcher). A diagnostic: the host time of one CUDA
decode of 256 files (and of decode + the chain) while the GPU is busy with work queued by this
thread beforehand:

- a one-thread sleep kernel (holds no SMs: only an ordering / synchronisation would make the decode wait),
- back-to-back bf16 matmuls (hold every SM),

each on the legacy default stream (where the training loop queues its step) and on a side stream.
A decode that waits for the default stream's work but not for the side stream's is ordered behind
the legacy default stream (a synchronous copy, say); one that waits for both, behind the whole
device (cudaFree / cudaFreeHost); one that is slowed by matmuls only shares the SMs.

    [TORCHAUG_DECODE_TRACE=1] python3 scripts/decode_contention.py [--sizes]

--sizes: calls of 64 to 512 files, idle, beside queued matmuls and beside queued ResNet-50 steps,
timed to the decode's completion on its stream.
"""
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

from bench_decode import make_files  # noqa: E402
import torchaug.transforms as T  # noqa: E402
from torchaug.io import decode_jpeg_ragged  # noqa: E402


def main():
    files = make_files(256, 93, 4.5)
    chain = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.RandAugment(2, 9)])
    side = torch.cuda.Stream()
    work_stream = torch.cuda.Stream()
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)

    def decode():
        with torch.cuda.stream(side):
            return decode_jpeg_ragged(files, device="cuda")

    def decode_chain():
        with torch.cuda.stream(side):
            return chain(decode_jpeg_ragged(files, device="cuda"))

    for _ in range(5):
        decode_chain()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
    mm_ms = (time.perf_counter() - t0) / 20 * 1e3
    print(f"one 8192^3 bf16 matmul: {mm_ms:.2f} ms", flush=True)

    def busy(kind, stream):
        with torch.cuda.stream(stream):
            if kind == "sleep":
                torch.cuda._sleep(int(2e6 * 400))  # ~400 ms at ~2 GHz, one thread
            elif kind == "matmul":
                for _ in range(int(400 / mm_ms)):
                    a @ b

    def timed(fn, kind, stream, n=5):
        out = []
        for _ in range(n):
            torch.cuda.synchronize()
            if kind is not None:
                busy(kind, stream)
            t0 = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t0) * 1e3)
            torch.cuda.synchronize()
        return statistics.median(out)

    if "--sizes" in sys.argv:
        # does a call's time under load grow with its batch, or is it a fixed number of waits?
        import torchvision
        model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x = torch.randn(256, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)

        def resnet_steps(n=4):
            for _ in range(n):
                with torch.autocast("cuda", torch.bfloat16):
                    loss = model(x).float().mean()
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
        resnet_steps(3)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        resnet_steps(4)
        torch.cuda.synchronize()
        print(f"ResNet-50 bf16 step, batch 256: {(time.perf_counter() - t0) / 4 * 1e3:.1f} ms", flush=True)
        for n in (64, 128, 256, 512):
            batch = (files * 2)[:n]

            def dec():
                with torch.cuda.stream(side):
                    decode_jpeg_ragged(batch, device="cuda")
                side.synchronize()  # the decode done, not only its host call (the load's streams not waited for)
            dec()
            out = []
            for load in ("idle", "matmul", "resnet50"):
                ts = []
                for _ in range(4):
                    torch.cuda.synchronize()
                    if load == "matmul":
                        busy("matmul", torch.cuda.default_stream())
                    elif load == "resnet50":
                        resnet_steps(3)  # queued: the host runs ahead of the GPU
                    t0 = time.perf_counter()
                    dec()
                    ts.append((time.perf_counter() - t0) * 1e3)
                    torch.cuda.synchronize()
                out.append(f"{load} {statistics.median(ts):.1f} ms")
            print(f"decode of {n} files: " + ", ".join(out), flush=True)
        return

    for name, fn in (("decode", decode), ("decode + chain", decode_chain)):
        print(f"{name}, GPU idle: {timed(fn, None, None):.1f} ms host", flush=True)
        for kind in ("sleep", "matmul"):
            for sname, stream in (("default stream", torch.cuda.default_stream()), ("a side stream", work_stream)):
                print(f"{name}, ~400 ms of {kind} queued on {sname}: {timed(fn, kind, stream):.1f} ms host", flush=True)


if __name__ == "__main__":
    main()
