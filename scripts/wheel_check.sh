#!/usr/bin/env bash
# CI's check that torchaug installs like a library: `python -m build` makes an sdist and, from it, a
# wheel (against the torch installed here, without build isolation); the wheel goes into a clean
# venv that has only the same torch and the test dependencies, and the test suite runs there from a
# copy of the tests, examples, scripts and benchmarks that holds no torchaug package, so that every
# test imports the installed one.
#   bash scripts/wheel_check.sh [pytest args...]      (work folder: build/wheel_check)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
WORK=$PWD/build/wheel_check
rm -rf "$WORK" && mkdir -p "$WORK"
pipi() { "$1" -m pip install -q --disable-pip-version-check "${@:2}"; }

# what `python -m build --no-isolation` needs beside the installed torch (pyproject's build requirements)
# (asked of pip, not by an import here: the checkout's build/ folder would import as a package `build`)
missing=()
"$PY" -m pip show -q build > /dev/null 2>&1 || missing+=(build)
"$PY" -m pip show -q wheel > /dev/null 2>&1 || missing+=(wheel)
(cd / && "$PY" -c "import setuptools, sys; sys.exit(int(setuptools.__version__.split('.')[0]) < 64)") 2>/dev/null || missing+=("setuptools>=64")
[ ${#missing[@]} -eq 0 ] || pipi "$PY" "${missing[@]}"
echo "wheel_check: sdist and wheel (the wheel built from the sdist; the build's log in $WORK/build.log)"
# (run from the work folder: in the checkout, its build/ folder would shadow the build package)
ROOT=$PWD
(cd "$WORK" && "$PY" -m build --no-isolation --outdir "$WORK/dist" "$ROOT") > "$WORK/build.log" 2>&1 \
  || { tail -40 "$WORK/build.log"; exit 1; }
ls "$WORK/dist"
wheel=$(ls "$WORK"/dist/*.whl)

torch_version=$("$PY" -c "import torch; print(torch.__version__.split('+')[0])")
"$PY" -m venv "$WORK/venv"
VPY=$WORK/venv/bin/python
pipi "$VPY" "torch==$torch_version"
pipi "$VPY" "$wheel" pytest pytest-timeout hypothesis numpy pillow tqdm pycocotools
# the torchvision release that pairs with torch (the parity references), without letting pip touch torch
tv=$("$VPY" -c "import torch; major, minor = torch.__version__.split('+')[0].split('.')[:2]; print(f'0.{int(minor) + 15}.*')")
pipi "$VPY" --no-deps "torchvision==$tv"

mkdir -p "$WORK/tree"
cp -r tests examples scripts benchmarks pyproject.toml "$WORK/tree/"
cd "$WORK/tree"
"$VPY" - "$wheel" <<'PY'
import importlib.metadata, os, sys
import torchaug
assert "site-packages" in torchaug.__file__, torchaug.__file__
assert importlib.metadata.version("torchaug-gpu") == torchaug.__version__, (importlib.metadata.version("torchaug-gpu"), torchaug.__version__)
print(f"wheel_check: {os.path.basename(sys.argv[1])} installed: torchaug {torchaug.__version__} from {os.path.dirname(torchaug.__file__)}")
PY
"$VPY" -m pytest tests -q -p no:cacheprovider "$@"
