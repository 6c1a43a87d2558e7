"""Decoding beside a training step (issue 5: with ResNet-50 the Prefetcher's one producer thread
prepares a batch in ~65 ms against ~20 ms beside EfficientNet-b0, and the training loop waits,
RESULTS.md case 5, sessions 17 and 19): for k = 1, 2, 3 threads, each decoding batches of 256 JPEGs
(decode_jpeg_ragged) and cropping them (RandomResizedCrop(224)) in a loop on its own stream, with the
GPU otherwise idle and the whole time the main thread trains ResNet-50 (bf16, channels_last, batch
256, at most two steps queued ahead, as a training loop whose host runs ahead): img/s of the
training and of the decoding threads together. Each thread's call takes its own nvJPEG decoder
(TORCHAUG_NVJPEG_DECODERS=3 here).

(Session 23 also ran a --split mode at commit adf688a, when one call shared its batch between the
free decoders; that sharing was taken out, and the mode with it.)

    python3 scripts/decode_beside_model.py [--seconds 6] [--json PATH]
"""
import argparse
import json
import os
import sys
import threading
import time

os.environ.setdefault("TORCHAUG_NVJPEG_DECODERS", "3")  # one decoder per thread

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

from bench_decode import make_files  # noqa: E402
import torchaug.transforms as T  # noqa: E402
from torchaug.io import decode_jpeg_ragged  # noqa: E402


def decoding_threads(k, files, stop, counts):
    crop = T.RandomResizedCrop(224)

    def run(i):
        torch.cuda.set_device(0)
        stream = torch.cuda.Stream()
        with torch.no_grad(), torch.cuda.stream(stream):
            while not stop.is_set():
                crop(decode_jpeg_ragged(files, device="cuda"))
                stream.synchronize()
                counts[i] += len(files)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(k)]
    for t in threads:
        t.start()
    return threads


def train(model, opt, x, y, stop_at):
    """ResNet-50 steps until stop_at (perf_counter), at most two queued ahead; images trained."""
    done, events = 0, []
    while time.perf_counter() < stop_at:
        with torch.autocast("cuda", torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        e = torch.cuda.Event()
        e.record()
        events.append(e)
        if len(events) > 2:
            events.pop(0).synchronize()
        done += x.shape[0]
    torch.cuda.synchronize()
    return done


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--json")
    args = ap.parse_args()
    import torchvision

    files = make_files(256, 93, 4.5)
    print(f"files: 256 of mean {sum(f.numel() for f in files) / len(files) / 1e3:.0f} KB", flush=True)
    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(256, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (256,), device="cuda")
    train(model, opt, x, y, time.perf_counter() + 3)  # warm-up (cudnn autotuning)
    crop = T.RandomResizedCrop(224)
    for _ in range(3):
        crop(decode_jpeg_ragged(files, device="cuda"))
    torch.cuda.synchronize()

    rows = []
    t0 = time.perf_counter()
    trained = train(model, opt, x, y, t0 + args.seconds)
    alone = trained / (time.perf_counter() - t0)
    rows.append({"case": "train alone", "train_img_s": alone})
    print(f"ResNet-50 alone: {alone:,.0f} img/s", flush=True)

    def beside(k, with_model):
        stop, counts = threading.Event(), [0] * k
        threads = decoding_threads(k, files, stop, counts)
        time.sleep(0.5)
        c0, t0 = sum(counts), time.perf_counter()
        if with_model:
            trained = train(model, opt, x, y, t0 + args.seconds)
        else:
            time.sleep(args.seconds)
            trained = 0
        dt = time.perf_counter() - t0
        decoded = (sum(counts) - c0) / dt
        stop.set()
        for t in threads:
            t.join()
        torch.cuda.synchronize()
        row = {"case": "decode + crop", "threads": k, "with_model": with_model,
               "train_img_s": trained / dt, "decode_img_s": decoded}
        rows.append(row)
        where = (f"beside ResNet-50: training {trained / dt:,.0f} img/s ({trained / dt / alone:.1%} of alone), "
                 if with_model else "GPU otherwise idle: ")
        print(f"{k} thread(s), {where}decode + crop {decoded:,.0f} img/s", flush=True)

    for with_model in (False, True):
        for k in (1, 2, 3):
            beside(k, with_model)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
