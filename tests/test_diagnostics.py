"""The stall diagnostics: with TORCHAUG_NATIVE_STACKS=1, a thread that receives SIGUSR2 writes its
native stack to stderr (csrc/python_module.cpp; scripts/gpu_ddp_check.sh sends it to every thread
of a stalled rank), and the process goes on."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or os.uname().machine != "x86_64",
                                reason="tgkill's syscall number here is x86-64 Linux's")

# a thread parked in a native call (time.sleep) gets SIGUSR2 through tgkill, as the device script
# sends it; then the main thread prints that it is still alive
CHILD = r"""
import ctypes, os, signal, threading, time
import torchaug
ready = threading.Event()
def parked():
    ready.set()
    time.sleep(3)
t = threading.Thread(target=parked, daemon=True)
t.start()
ready.wait()
time.sleep(0.2)
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
assert libc.syscall(234, os.getpid(), t.native_id, int(signal.SIGUSR2)) == 0  # tgkill
time.sleep(0.5)
print("alive", t.native_id, flush=True)
"""


def _run(env_value):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("TORCHAUG_NATIVE_STACKS", None)
    if env_value is not None:
        env["TORCHAUG_NATIVE_STACKS"] = env_value
    return subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=60)


def test_sigusr2_writes_the_threads_native_stack_and_the_process_goes_on():
    r = _run("1")
    assert r.returncode == 0, r.stderr[-2000:]
    alive, tid = r.stdout.split()
    assert alive == "alive"
    lines = r.stderr.splitlines()
    start = lines.index(f"torchaug native stack of thread {tid}:")
    end = lines.index("torchaug native stack end", start)
    frames = lines[start + 1:end]
    assert len(frames) >= 3
    assert "_C." in frames[0]  # the handler itself, in torchaug's extension
    assert any("libc" in f for f in frames[1:])  # the thread was parked in libc (its sleep)


def test_without_the_switch_sigusr2_keeps_its_default_action():
    r = _run(None)
    assert r.returncode == -12  # SIGUSR2's default action ends the process
    assert "torchaug native stack" not in r.stderr
