"""The settings a user may change, read from the environment in this one place on the Python side
(the compiled library reads its own in csrc/ops/settings.cpp); README.md's settings table lists both.

- TORCHAUG_SHM_POOL: shared-memory segments each DataLoader worker keeps for its batches
  (torchaug/io/_shm.py), a whole number >= 0, default 8; 0 turns the pool off. Read when a worker
  packs its first batch.
- TORCHAUG_CUDA_CONNECTIONS: the hardware work queues torchaug asks CUDA for when it is imported
  before CUDA starts (torchaug/_cuda_queues.py), an integer in [0, 32], default 32; 0 leaves
  CUDA_DEVICE_MAX_CONNECTIONS alone (the driver's 8) and turns the warning about it off. Read at
  import.
- TORCHAUG_SWITCH_INTERVAL_US: the interpreter's GIL switch interval (sys.setswitchinterval), in
  microseconds, while a Prefetcher's producer threads run (torchaug/_producers.py), a whole number
  in [0, 5000000], default 100; 0 leaves the interpreter's (Python's default is 5000). Read when an
  iteration starts its producer threads.
"""
import os


def _integer(name: str, default: int, lo: int, hi: int, meaning: str) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        n = int(value)
    except ValueError:
        n = None
    if n is None or not lo <= n <= hi:
        bound = f"in [{lo}, {hi}]" if hi < 2**31 else f">= {lo}"
        raise ValueError(f"torchaug: {name} must be a whole number {bound} ({meaning}), got {value!r}")
    return n


def shm_pool() -> int:
    return _integer("TORCHAUG_SHM_POOL", 8, 0, 2**31, "shared-memory segments per worker; 0 turns the pool off")


def cuda_connections() -> int:
    return _integer("TORCHAUG_CUDA_CONNECTIONS", 32, 0, 32,
                    "CUDA work queues torchaug asks for; 0 leaves CUDA_DEVICE_MAX_CONNECTIONS alone")


def switch_interval_us() -> int:
    return _integer("TORCHAUG_SWITCH_INTERVAL_US", 100, 0, 5_000_000,
                    "the GIL switch interval in microseconds while producer threads run; 0 leaves the interpreter's")
