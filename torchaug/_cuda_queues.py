"""How many hardware work queues CUDA maps the process's streams onto (CUDA_DEVICE_MAX_CONNECTIONS;
the driver's default is 8, its maximum 32).

Work in one queue runs in the order it was submitted, whatever stream it came from. nvJPEG's
hardware decoder works on 14 streams of its own and waits on an event per image; where one of its
streams shares a queue with the training loop's stream, that wait lasts until the model's queued
work has run. On an H100 beside EfficientNet-b0 single waits lasted up to 87 ms with the model
replayed from CUDA graphs (training at 86% of synthetic speed) and up to 6 ms eager; with 32
queues the decode thread's waits summed 8 ms over 4 steps instead of 176 ms, and the graphed model
trained at 99% of synthetic speed.

So torchaug asks for 32 queues (TORCHAUG_CUDA_CONNECTIONS, torchaug/_settings.py) when it is imported
before CUDA has started and the variable is unset. A value the user set is kept. The first decode on
CUDA warns when the count in effect is below the one asked for (CUDA started before torchaug was
imported, or a smaller value set). TORCHAUG_CUDA_CONNECTIONS=0 turns both off: the process keeps
CUDA's default.
"""
import os
import warnings

import torch

from . import _settings

VARIABLE = "CUDA_DEVICE_MAX_CONNECTIONS"
WANTED = _settings.cuda_connections()  # 0: leave the variable alone
DRIVER_DEFAULT = 8


def _request():
    """(whether CUDA had started when torchaug was imported, the variable's value then); sets the
    variable to WANTED where it was unset and CUDA had not started."""
    started = torch.cuda.is_initialized()
    if WANTED > 0 and VARIABLE not in os.environ and not started:
        os.environ[VARIABLE] = str(WANTED)
    return started, os.environ.get(VARIABLE)


_started_before_import, _value_at_import = _request()
_checked = False


def _value():
    """The variable as CUDA read it when it started: as it was when torchaug was imported if CUDA
    had started by then, else as it is now (CUDA has not started yet, or started after the import)."""
    return _value_at_import if _started_before_import else os.environ.get(VARIABLE)


def in_effect() -> int:
    """The queue count CUDA runs with, as the environment tells it; the driver's default where the
    variable is unset or not a number."""
    try:
        return int(_value())
    except (TypeError, ValueError):
        return DRIVER_DEFAULT


def check(op: str) -> None:
    """Warns once per process, naming `op`, when fewer than WANTED queues are in effect."""
    global _checked
    if _checked or WANTED == 0:
        return
    _checked = True
    n = in_effect()
    if n >= WANTED:
        return
    value = _value()
    why = f"{VARIABLE}={value}" if value is not None else f"{VARIABLE} unset when CUDA started, before torchaug was imported"
    warnings.warn(
        f"{op}: CUDA runs with {n} hardware work queues ({why}). nvJPEG's hardware decoder waits on an event "
        f"per image on 14 streams of its own; where one of them shares a queue with the training loop's stream, "
        f"each wait lasts until the model's queued work has run (on an H100, EfficientNet-b0 trained up to 13% slower). "
        f"Set {VARIABLE}={WANTED} before CUDA starts, or import torchaug before the first CUDA call "
        f"(TORCHAUG_CUDA_CONNECTIONS=0 turns this warning off).",
        RuntimeWarning, stacklevel=4)
