"""The settings a user may change (README.md's settings table; torchaug/_settings.py and
csrc/ops/settings.cpp read them) and the compiled library's test hooks. TORCHAUG_SHM_POOL is tested
in test_shm.py, TORCHAUG_CUDA_CONNECTIONS in test_cuda_queues.py, TORCHAUG_NVJPEG_DECODERS and
TORCHAUG_DECODE_TRACE in test_decode.py, TORCHAUG_SWITCH_INTERVAL_US in test_prefetch.py."""
import os
import subprocess
import sys

import pytest
import torch
from conftest import ASSETS, hooked, requires_cuda

import torchaug
from torchaug import _settings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_unknown_hook_and_bad_values_are_errors():
    with pytest.raises(ValueError, match=r"no test hook named 'resident' \(hooks: augment_resident, resident_order, "
                                         r"dependent_launch, nvjpeg_reject, nms_shared_tiles, decode_parse_threads\)"):
        torchaug._C._set_test_hook("resident", 1)
    with pytest.raises(ValueError, match=r"test hook decode_parse_threads: value must be -1 .* or in \[1, 1024\], got 0"):
        torchaug._C._set_test_hook("decode_parse_threads", 0)
    with pytest.raises(TypeError):
        torchaug._C._set_test_hook("decode_parse_threads", "4")


def test_a_hook_is_given_back_after_the_block():
    """Set inside the block, -1 (the library's choice) after it, also when the block raises: the
    decode_parse_threads hook at 1 and back gives the same decode as the default."""
    data = [torchaug.io.read_file(p) for p in ASSETS]
    want = torchaug.io.decode_jpeg(data)
    with pytest.raises(KeyError):
        with hooked("decode_parse_threads", 1):
            got = torchaug.io.decode_jpeg(data)
            raise KeyError("leave the block")
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    assert all(torch.equal(a, b) for a, b in zip(torchaug.io.decode_jpeg(data), want))


@pytest.mark.parametrize("name,read", [("TORCHAUG_SHM_POOL", _settings.shm_pool),
                                       ("TORCHAUG_CUDA_CONNECTIONS", _settings.cuda_connections),
                                       ("TORCHAUG_SWITCH_INTERVAL_US", _settings.switch_interval_us)])
def test_python_settings_parse_and_refuse(name, read, monkeypatch):
    monkeypatch.delenv(name, raising=False)
    default = read()
    monkeypatch.setenv(name, "")
    assert read() == default
    monkeypatch.setenv(name, "3")
    assert read() == 3
    for bad in ("-1", "two", "1.5"):
        monkeypatch.setenv(name, bad)
        with pytest.raises(ValueError, match=rf"torchaug: {name} must be a whole number .*, got '{bad}'"):
            read()


@requires_cuda
def test_nvjpeg_threads_sets_the_lanes_and_is_checked():
    """TORCHAUG_NVJPEG_THREADS (read when a decoder makes its lanes, once a process): 1 lane decodes
    what the default lanes decode; a value out of [1, 256] is an error naming it."""
    code = ("import sys, torch, torchaug; from torchaug.io import decode_jpeg, read_file; "
            "data = [read_file(p) for p in sys.argv[1:]] * 4; "
            "out = decode_jpeg(data, device='cuda', hw_load=0.0); torch.cuda.synchronize(); "
            "print(sum(int(t.double().sum()) for t in out))")
    sums = {}
    for value in ("1", None):
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("TORCHAUG_NVJPEG_THREADS", None)
        if value is not None:
            env["TORCHAUG_NVJPEG_THREADS"] = value
        r = subprocess.run([sys.executable, "-c", code] + ASSETS, env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        sums[value] = int(r.stdout.split()[-1])
    assert sums["1"] == sums[None]
    env = dict(os.environ, TORCHAUG_NVJPEG_THREADS="300", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code] + ASSETS, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "TORCHAUG_NVJPEG_THREADS must be an integer in [1, 256], got '300'" in r.stderr
