"""examples/train.py runs end to end (CPU here, the GPU on the device machine): every loader, a
finite loss, the JSON summary."""
import importlib.util
import math
import os

import pytest
import torch

pytest.importorskip("torchvision")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_module(name, *path):
    """A script of the repo (ROOT/path) loaded as a module called name."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, *path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load_train():
    return load_module("train_example", "examples", "train.py")


@pytest.mark.parametrize("loader", ["torchaug", "torchvision", "synthetic"])
def test_train_example_runs(loader):
    train = load_train()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    result = train.main(["--model", "resnet18", "--loader", loader, "--batch-size", "4", "--steps", "3", "--warmup", "1",
                         "--workers", "0", "--device", device, "--length", "12", "--lr", "0.01"])
    assert result["steps"] == 3 and result["timed_steps"] == 2 and result["img_per_s"] > 0
    assert math.isfinite(result["loss"])
    if loader == "torchaug":  # the Prefetcher's host time per batch of the timed window
        per = result["prefetch_ms_per_batch"]
        assert set(per) == {"loader", "prepare", "queue_full", "consumer_wait"}
        if device == "cpu":  # inline: each batch is loaded and prepared inside the timed window
            assert per["loader"] > 0 and per["prepare"] > 0
        else:  # the producer thread counts a batch when prepared: with 3 steps it can finish all of
            # them before the timed window starts (no batch in the window: None); else times >= 0
            assert all(v is None or v >= 0 for v in per.values()), per
    else:
        assert "prefetch_ms_per_batch" not in result


@pytest.mark.parametrize("decode,workers,nice", [("gpu", 0, 0), ("gpu", 2, 0), ("workers", 1, 5)])
def test_train_example_decode_modes(decode, workers, nice):
    """Where the JPEGs are decoded: by the Prefetcher (nvJPEG on CUDA) from the bytes the workers
    read, or by the workers (here at a raised niceness)."""
    train = load_train()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    result = train.main(["--model", "resnet18", "--decode", decode, "--batch-size", "4", "--steps", "3",
                         "--warmup", "1", "--workers", str(workers), "--worker-nice", str(nice), "--device", device,
                         "--length", "12", "--lr", "0.01"])
    assert result["decode"] == decode and result["worker_nice"] == nice
    assert result["steps"] == 3 and math.isfinite(result["loss"])


class _Niceness(torch.utils.data.Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return os.nice(0)


def test_nice_worker_lowers_the_workers_priority():
    import functools
    train = load_train()
    loader = torch.utils.data.DataLoader(_Niceness(), num_workers=1, worker_init_fn=functools.partial(train.nice_worker, increment=5))
    assert [int(x) for x in loader] == [min(os.nice(0) + 5, 19)] * 2


def test_train_example_defaults_on_the_cpu():
    """Without CUDA the defaults are usable: resnet18, float32, batches of 32 over the sample photos."""
    train = load_train()
    result = train.main(["--device", "cpu", "--steps", "3", "--workers", "0"])
    assert (result["model"], result["amp"], result["batch_size"], result["decode"]) == ("resnet18", "none", 32, "workers")
    assert result["steps"] == 3 and result["timed_steps"] == 1 and math.isfinite(result["loss"])


def test_train_example_reads_an_image_folder(tmp_path):
    from PIL import Image
    for c in ("cat", "dog"):
        (tmp_path / c).mkdir()
        for i in range(3):
            Image.new("RGB", (40 + i, 30), (40 * i, 100, 200)).save(tmp_path / c / f"{i}.jpg")
    train = load_train()
    paths, labels, classes = train.find_images(str(tmp_path))
    assert classes == ["cat", "dog"] and labels == [0, 0, 0, 1, 1, 1] and len(paths) == 6
    result = train.main(["--data", str(tmp_path), "--model", "resnet18", "--batch-size", "3", "--steps", "2", "--warmup", "1",
                         "--workers", "1", "--device", "cpu", "--amp", "none"])
    assert result["steps"] == 2 and math.isfinite(result["loss"])


def test_train_example_under_torchrun_on_two_processes():
    # the DDP path (DistributedSampler, DistributedDataParallel, a Prefetcher per rank) with two CPU
    # processes and gloo; on the GPU machines benchmarks/bench_ddp.sh runs it with NCCL
    import json
    import subprocess
    import sys
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           os.path.join(ROOT, "tests", "_train_launcher.py"), "--device", "cpu", "--model", "resnet18", "--loader", "torchaug",
           "--batch-size", "4", "--steps", "3", "--warmup", "1", "--workers", "0", "--length", "24", "--amp", "none",
           "--lr", "0.01"]
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads([line for line in run.stdout.splitlines() if line.startswith("{")][-1])
    assert result["world_size"] == 2 and result["steps"] == 3 and result["timed_steps"] == 2
    # rank 0's host figures: two timed steps, one interval between their ends
    assert result["cpu_ms_per_step"]["loop_thread"] > 0 and result["step_ms"]["max"] >= result["step_ms"]["p50"] > 0
    assert math.isfinite(result["loss"]) and result["img_per_s"] > 0


def test_train_example_cuda_graph(monkeypatch):
    """--cuda-graph: the model's forward and backward replayed from CUDA graphs train as the eager
    model does (same weights, same synthetic batch: the same final loss within bf16 rounding, and not
    the loss without updates); a batch of another shape is a clear error; off CUDA the option is
    refused."""
    train = load_train()
    args = ["--model", "resnet18", "--loader", "synthetic", "--batch-size", "8", "--steps", "6", "--warmup", "1"]
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit, match="--cuda-graph needs a model on one CUDA device"):
            train.main(args + ["--device", "cpu", "--cuda-graph", "--lr", "0.01"])
        return
    losses = {}
    for name, extra in (("still", ["--lr", "0"]), ("eager", ["--lr", "0.05"]), ("graph", ["--lr", "0.05", "--cuda-graph"])):
        torch.manual_seed(0)
        losses[name] = train.main(args + ["--device", "cuda"] + extra)["loss"]
    assert math.isfinite(losses["graph"]) and losses["graph"] == pytest.approx(losses["eager"], rel=0.03), losses
    assert abs(losses["graph"] - losses["still"]) > 0.01, losses  # the replayed backward's gradients reach the optimizer

    class Short(train.Synthetic):  # batches one image short of the captured shape
        def __iter__(self):
            return iter([(self.x[:-1], self.y[:-1])] * self.steps)
    monkeypatch.setattr(train, "Synthetic", Short)
    with pytest.raises(ValueError, match=r"--cuda-graph captured the model for batches of \(8, 3, 224, 224\)"):
        train.main(args + ["--device", "cuda", "--cuda-graph", "--lr", "0.01"])
