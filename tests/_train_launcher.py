"""Runs examples/train.py (or, with --script PATH first, another script of the repository) as
__main__ (argv passed on) after conftest's torchvision import, which
works around PyPI's torchvision wheel on a CPU-only torch: a subprocess of test_examples.py (under
torch.distributed.run, which starts one of these per rank)."""
import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from conftest import _import_torchvision  # noqa: E402

_import_torchvision()
if len(sys.argv) > 2 and sys.argv[1] == "--script":  # another script of the repository (a path from its root)
    script = os.path.join(os.path.dirname(HERE), sys.argv[2])
    del sys.argv[1:3]
else:
    script = os.path.join(os.path.dirname(HERE), "examples", "train.py")
sys.argv[0] = script
runpy.run_path(script, run_name="__main__")
