"""Runs examples/train.py as __main__ (argv passed on) after conftest's torchvision import, which
works around PyPI's torchvision wheel on a CPU-only torch: a subprocess of test_examples.py (under
torch.distributed.run, which starts one of these per rank)."""
import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from conftest import _import_torchvision  # noqa: E402

_import_torchvision()
sys.argv[0] = os.path.join(os.path.dirname(HERE), "examples", "train.py")
runpy.run_path(sys.argv[0], run_name="__main__")
