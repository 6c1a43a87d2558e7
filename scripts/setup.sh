#!/usr/bin/env bash
# Sourced by scripts/test.sh and scripts/demo.sh: installs only what is missing, then builds the
# extension in place against the torch already installed (torch is never reinstalled or upgraded).
#   TORCHAUG_SETUP=test  also installs the test dependencies
set -euo pipefail
PY=${PYTHON:-python3}
pipi() { "$PY" -m pip install -q --disable-pip-version-check "$@"; }

if ! "$PY" -c "import torch" 2>/dev/null; then
  echo "setup: torch not found; installing torch==2.13.0 (CPU build)"
  pipi "torch==2.13.0"
fi
missing=()
"$PY" -c "import numpy" 2>/dev/null || missing+=(numpy)
"$PY" -c "import PIL" 2>/dev/null || missing+=(pillow)
"$PY" -c "import ninja" 2>/dev/null || command -v ninja >/dev/null || missing+=(ninja)
"$PY" -c "import tqdm" 2>/dev/null || missing+=(tqdm)
if [ "${TORCHAUG_SETUP:-}" = test ]; then
  "$PY" -c "import pytest" 2>/dev/null || missing+=("pytest>=7")
  "$PY" -c "import hypothesis" 2>/dev/null || missing+=("hypothesis>=6")
  "$PY" -c "import pytest_timeout" 2>/dev/null || missing+=(pytest-timeout)
  "$PY" -c "import pycocotools" 2>/dev/null || missing+=(pycocotools)  # torchvision's CocoDetection (accelerate's detection path)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  pipi "${missing[@]}"
fi
if [ "${TORCHAUG_SETUP:-}" = test ] && ! "$PY" -c "import importlib.util as u, sys; sys.exit(u.find_spec('torchvision') is None)"; then
  # the torchvision release that pairs with the installed torch (2.N -> 0.(N+15)), without
  # letting pip touch torch
  tv=$("$PY" -c "import torch; major, minor = torch.__version__.split('+')[0].split('.')[:2]; print(f'0.{int(minor) + 15}.*')")
  echo "setup: installing torchvision==$tv (the parity references)"
  pipi --no-deps "torchvision==$tv"
fi

jobs=${MAX_JOBS:-$(nproc)}
echo "setup: building torchaug._C in place (MAX_JOBS=$jobs; the first build takes minutes, a step a line below;"
echo "       the whole log in build/setup_build.log)"
mkdir -p build
# its own build folder, so that a pip install from the checkout (build/temp.*) does not make the next
# in-place build start over; ninja's "[k/n] ... -c source" lines shown as "[k/n] source"
set +e
MAX_JOBS=$jobs "$PY" setup.py build_ext --inplace --build-temp build/inplace 2>&1 | tee build/setup_build.log \
  | sed -nEu 's#^(\[[0-9]+/[0-9]+\]) .* -c +(-c +)?([^ ]+) .*#setup: \1 \3#p'
rc=${PIPESTATUS[0]}
set -e
[ "$rc" = 0 ] || { tail -60 build/setup_build.log; echo "setup: build FAILED"; exit 1; }
