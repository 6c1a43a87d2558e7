"""What installing gives: the version from its one place (torchaug/_version.py), and a compiled
library that does not load reported with the torch it was built for and the one installed.
scripts/wheel_check.sh (CI) builds the sdist and the wheel and runs this suite against the
installed wheel; scripts/test.sh builds the C++ tests against the installed CMake package."""
import os
import subprocess
import sys

import pytest
import torch

import torchaug

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_version_comes_from_one_place():
    from torchaug import _version
    assert torchaug.__version__ == _version.__version__
    if not os.path.exists(os.path.join(ROOT, "torchaug", "_version.py")):
        pytest.skip("the installed package: no source tree to read pyproject.toml's version from")
    from setuptools.config.pyprojecttoml import read_configuration
    project = read_configuration(os.path.join(ROOT, "pyproject.toml"))["project"]
    assert project["name"] == "torchaug-gpu" and project["version"] == torchaug.__version__


def _import_without_library(block_build_info: bool):
    """`import torchaug` in a fresh interpreter where torchaug._C cannot be imported (and, when asked,
    neither can torchaug._build_info): the ImportError's message."""
    blocked = ["torchaug._C"] + (["torchaug._build_info"] if block_build_info else [])
    code = (f"import sys\nfor m in {blocked!r}: sys.modules[m] = None\n"
            "try:\n    import torchaug\nexcept ImportError as e:\n    print(e)\nelse:\n    print('imported')")
    package_root = os.path.dirname(os.path.dirname(torchaug.__file__))
    env = dict(os.environ, PYTHONPATH=package_root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env).stdout


def test_a_library_that_does_not_load_names_the_torches():
    from torchaug._build_info import TORCH_VERSION
    out = _import_without_library(block_build_info=False)
    assert "torchaug: the compiled library torchaug._C does not load" in out, out
    assert f"It was built for torch {TORCH_VERSION}" in out and f"the installed torch is {torch.__version__}" in out, out
    assert "Rebuild torchaug against the installed torch" in out
    out = _import_without_library(block_build_info=True)
    assert "It was built for an unknown torch (no torchaug/_build_info.py" in out, out
