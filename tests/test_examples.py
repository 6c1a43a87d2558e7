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


@pytest.mark.parametrize("decode,workers,nice", [("gpu", 0, 0), ("workers", 1, 5), ("split", 2, 0)])
def test_train_example_decode_modes(decode, workers, nice):
    """Where the JPEGs are decoded: by the Prefetcher (nvJPEG on CUDA), by the workers (here at a
    raised niceness), or split between the two (forked workers decode half of each batch)."""
    train = load_train()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    result = train.main(["--model", "resnet18", "--decode", decode, "--cpu-share", "0.5", "--batch-size", "4", "--steps", "3",
                         "--warmup", "1", "--workers", str(workers), "--worker-nice", str(nice), "--device", device,
                         "--length", "12", "--lr", "0.01"])
    assert result["decode"] == decode and result["cpu_share"] == (0.5 if decode == "split" else None)
    assert result["worker_nice"] == nice
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
    # processes and gloo; on the GPU machines scripts/gpu_ddp.sh runs it with NCCL
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
    assert math.isfinite(result["loss"]) and result["img_per_s"] > 0


def test_stream_summary_splits_the_model_stream_from_the_others():
    train = load_train()
    k = lambda ts, dur, stream: {"ph": "X", "cat": "kernel", "ts": ts, "dur": dur, "args": {"stream": stream}}  # noqa: E731
    events = [k(0, 10, 7), k(10, 10, 7), k(30, 20, 7), k(60, 40, 7),   # model: span 100 us, busy 80, idle 20
              k(5, 10, 21), k(40, 30, 21), k(200, 5, 22),               # pipeline: two streams
              {"ph": "X", "cat": "gpu_memcpy", "ts": 0, "dur": 8}, {"ph": "i", "cat": "kernel", "ts": 1}]
    s = train.stream_summary({"traceEvents": events}, steps=2)
    assert s["model_stream"] == 7 and s["others_streams"] == 2 and s["model_kernels"] == 2
    assert math.isclose(s["model_span_ms"], 0.050) and math.isclose(s["model_kernel_ms"], 0.040)
    assert math.isclose(s["model_idle_ms"], 0.010)
    # overlaps: [5, 15] with [0, 20] -> 10; [40, 70] with [30, 50] and [60, 100] -> 10 + 10
    assert math.isclose(s["model_overlap_ms"], 0.015)
    assert math.isclose(s["others_kernel_ms"], 0.0225) and math.isclose(s["others_busy_ms"], 0.0225)
    assert math.isclose(s["memcpy_ms"], 0.004)
    assert train.stream_summary({"traceEvents": []}, steps=1) is None


def test_split_cores_keeps_a_core_and_its_siblings_apart(monkeypatch):
    import io
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no sched_getaffinity (not Linux)")
    train = load_train()
    topology = {0: "0,4", 2: "2-3"}
    monkeypatch.setattr(train, "open", lambda path: io.StringIO(topology[int(path.split("/cpu")[-1].split("/")[0])]), raising=False)
    monkeypatch.setattr(train.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5})
    assert train.split_cores() == ({0}, {1, 2, 3, 5})
    monkeypatch.setattr(train.os, "sched_getaffinity", lambda pid: {2, 3, 6})
    assert train.split_cores() == ({2}, {6})
    monkeypatch.setattr(train.os, "sched_getaffinity", lambda pid: {2, 3})
    assert train.split_cores() is None  # no other core: nothing to pin


def test_measure_slowdowns_restores_the_cpu_set_and_leaves_no_process():
    import multiprocessing as mp
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no sched_getaffinity (not Linux)")
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("one CPU")
    cpu_pairs = load_module("cpu_pairs", "scripts", "cpu_pairs.py")
    slow = cpu_pairs.measure_slowdowns(allowed[-1], allowed, work=0.005)
    assert set(slow) == set(allowed[:-1])  # the core itself is not measured against itself
    assert all(math.isfinite(r) and 0.2 < r < 20 for r in slow.values()), slow
    assert os.sched_getaffinity(0) == set(allowed)
    assert not [p for p in mp.active_children() if p.is_alive()]


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


def test_train_example_trace_out(tmp_path):
    """--trace-steps with --trace-out: the traced steps' Chrome trace written gzipped, with the model's
    kernels and the CUDA runtime calls that scripts/api_waits.py lists by thread."""
    import gzip
    import json
    import subprocess
    import sys
    if not torch.cuda.is_available():
        pytest.skip("the trace is CUDA's (CUPTI)")
    train = load_train()
    path = str(tmp_path / "trace.json.gz")
    result = train.main(["--model", "resnet18", "--loader", "synthetic", "--batch-size", "8", "--steps", "5", "--warmup", "1",
                         "--device", "cuda", "--lr", "0.01", "--trace-steps", "2", "--trace-out", path])
    assert result["kernel_trace"]["model_kernels"] > 0
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    cats = {e.get("cat") for e in events}
    assert "kernel" in cats and "cuda_runtime" in cats, cats
    out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "api_waits.py"), path], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "API calls" in out.stdout and "cudaLaunchKernel" in out.stdout, out.stdout + out.stderr


def test_train_example_loop_stream_and_core():
    """--model-priority: the loop on an urgent stream (CUDA), the thread's stream put back after;
    --pin-loop: the loop's thread on one core, its CPU set put back after."""
    train = load_train()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    before = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    stream = torch.cuda.current_stream() if device == "cuda" else None
    result = train.main(["--model", "resnet18", "--batch-size", "4", "--steps", "3", "--warmup", "1", "--workers", "1",
                         "--device", device, "--length", "12", "--lr", "0.01", "--model-priority", "-1", "--pin-loop"])
    assert result["steps"] == 3 and math.isfinite(result["loss"]) and result["model_priority"] == -1
    cores = train.split_cores()
    assert result["loop_core"] == (sorted(cores[0]) if cores else None)
    if before is not None:
        assert os.sched_getaffinity(0) == before
    if stream is not None:
        assert torch.cuda.current_stream() == stream
