"""torchaug asks CUDA for 32 hardware work queues (CUDA_DEVICE_MAX_CONNECTIONS) when it is imported
before CUDA starts, keeps a value the user set, and warns at the first decode on CUDA when fewer
are in effect (torchaug/_cuda_queues.py)."""
import os
import subprocess
import sys
import warnings

import pytest
import torch

from torchaug import _cuda_queues as Q
from torchaug.io import decode_jpeg, read_file

from conftest import ASSETS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _python(code, **env):
    """Runs `code` in a fresh interpreter whose environment lacks CUDA_DEVICE_MAX_CONNECTIONS
    unless `env` sets it."""
    full = {k: v for k, v in os.environ.items() if k != Q.VARIABLE}
    full.update(env)
    full["PYTHONPATH"] = ROOT + os.pathsep + full.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out


SHOW = "import os, torch, torchaug; print(os.environ.get('CUDA_DEVICE_MAX_CONNECTIONS'), torchaug._cuda_queues.in_effect())"


def test_import_asks_for_32_queues_where_unset():
    assert _python(SHOW).stdout.split() == ["32", "32"]


def test_import_keeps_the_users_value():
    assert _python(SHOW, CUDA_DEVICE_MAX_CONNECTIONS="4").stdout.split() == ["4", "4"]


def test_the_setting_asks_for_other_counts_or_turns_it_off():
    assert _python(SHOW, TORCHAUG_CUDA_CONNECTIONS="16").stdout.split() == ["16", "16"]
    assert _python(SHOW, TORCHAUG_CUDA_CONNECTIONS="0").stdout.split() == ["None", str(Q.DRIVER_DEFAULT)]
    off = _python("import warnings, torchaug; from torchaug import _cuda_queues as Q; warnings.simplefilter('error'); "
                  "Q._started_before_import, Q._value_at_import = True, None; Q.check('op'); print('quiet')",
                  TORCHAUG_CUDA_CONNECTIONS="0")
    assert off.stdout.split() == ["quiet"]
    bad = subprocess.run([sys.executable, "-c", "import torchaug"], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, TORCHAUG_CUDA_CONNECTIONS="64",
                                  PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")))
    assert bad.returncode != 0
    assert "TORCHAUG_CUDA_CONNECTIONS must be a whole number in [0, 32]" in bad.stderr and "'64'" in bad.stderr


@pytest.fixture
def fresh_check(monkeypatch):
    """The module's state as if CUDA had started before torchaug's import with the variable unset,
    and no decode had checked yet."""
    monkeypatch.setattr(Q, "_started_before_import", True)
    monkeypatch.setattr(Q, "_value_at_import", None)
    monkeypatch.setattr(Q, "_checked", False)
    return monkeypatch


def test_check_warns_once_when_fewer_queues(fresh_check):
    with pytest.warns(RuntimeWarning, match=r"^op_x: CUDA runs with 8 hardware work queues \(CUDA_DEVICE_MAX_CONNECTIONS unset "
                                            r"when CUDA started, before torchaug was imported\).*CUDA_DEVICE_MAX_CONNECTIONS=32"):
        Q.check("op_x")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Q.check("op_x")  # once per process
    fresh_check.setattr(Q, "_checked", False)
    fresh_check.setattr(Q, "_value_at_import", "16")
    with pytest.warns(RuntimeWarning, match=r"CUDA runs with 16 hardware work queues \(CUDA_DEVICE_MAX_CONNECTIONS=16\)"):
        Q.check("op_y")
    fresh_check.setattr(Q, "_checked", False)
    fresh_check.setattr(Q, "_value_at_import", "32")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Q.check("op_z")


def test_in_effect_reads_the_variable_when_cuda_started_after_the_import(monkeypatch):
    monkeypatch.setattr(Q, "_started_before_import", False)
    monkeypatch.setenv(Q.VARIABLE, "2")
    assert Q.in_effect() == 2
    monkeypatch.setenv(Q.VARIABLE, "many")
    assert Q.in_effect() == Q.DRIVER_DEFAULT
    monkeypatch.delenv(Q.VARIABLE)
    assert Q.in_effect() == Q.DRIVER_DEFAULT


def test_cpu_decode_does_not_check(fresh_check):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        decode_jpeg([read_file(ASSETS[0])], device="cpu")
    assert not Q._checked


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the check runs on CUDA decodes")
def test_cuda_decode_warns_where_cuda_started_before_the_import():
    decode = (f"import warnings; warnings.simplefilter('always'); from torchaug.io import decode_jpeg, read_file; "
              f"decode_jpeg([read_file({ASSETS[0]!r})] * 2, device='cuda'); torch.cuda.synchronize(); print('decoded')")
    late = _python("import torch; torch.zeros(1, device='cuda'); import torchaug; " + decode)
    assert "decoded" in late.stdout
    assert "torchaug.io.decode_jpeg: CUDA runs with 8 hardware work queues" in late.stderr, late.stderr
    early = _python("import torch, torchaug; torch.zeros(1, device='cuda'); " + decode)
    assert "decoded" in early.stdout and "hardware work queues" not in early.stderr, early.stderr
