#!/usr/bin/env bash
# Builds torchaug._C here (no GPU needed) for the device machine's Python and torch, and puts it,
# stripped, with the libjpeg it links against and its torchaug/_build_info.py, into .gl/ for the
# device tool to carry: the device scripts' use_carried_or_build (scripts/device_env.sh) then loads
# it instead of building there (a fresh device machine spends 5-7 minutes of device time on a build
# from source; this takes 30 minutes of this machine's 2 cores from scratch, less for a change, and
# none of the device's).
#   bash scripts/build_for_device.sh          (then name .gl in the device call's carry)
# DEVICE_PYTHON (3.12) and DEVICE_TORCH (2.11.0, PyPI's build of which is the cu130 one the device
# has) must match the device machine; the venv and the build tree live under BUILD_ROOT
# (/tmp/torchaug-device-build). CUDA_HOME: the CUDA 13 toolkit here (default /usr/local/cuda-13.0).
# The script checks that the built library imports under that torch here (library_loads).
set -euo pipefail
JOBS=${MAX_JOBS:-$(nproc)}   # device_env.sh sets the device's 16 otherwise
source "$(dirname "$0")/device_env.sh"   # the repository root; library_sources_hash, library_loads
PYV=${DEVICE_PYTHON:-3.12}
TV=${DEVICE_TORCH:-2.11.0}
ROOT=${BUILD_ROOT:-/tmp/torchaug-device-build}
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda-13.0}
PY=$(ls -d "$HOME"/.pyenv/versions/"$PYV".*/bin/python 2>/dev/null | tail -1 || true)
PY=${PY:-$(command -v "python$PYV" || true)}
[ -n "$PY" ] || { echo "build_for_device: no Python $PYV here (pyenv versions or python$PYV)" >&2; exit 1; }
VENV="$ROOT/venv-$PYV-torch$TV"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$TV')" 2>/dev/null; then
  "$PY" -m venv "$VENV"
  # torch with its CUDA wheels (it does not import without them), nvJPEG's headers and library
  "$VENV/bin/python" -m pip install -q "torch==$TV" "nvidia-nvjpeg==13.0.1.86" numpy setuptools wheel ninja
fi
NV=$("$VENV/bin/python" -c "import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], 'cu13'))")
mkdir -p "$ROOT/lib" && ln -sf "$NV/lib/libnvjpeg.so.13" "$ROOT/lib/libnvjpeg.so"  # -lnvjpeg finds the wheel's
# the working tree's tracked files, as they are, in SRC: a file whose content changed since the last
# run is written anew (a fresh time, which ninja sees), the others are left as they are, files no
# longer tracked are removed, and the build folder is kept, so that only what changed is recompiled
SRC="$ROOT/src" && NEW="$ROOT/src.new" && rm -rf "$NEW" && mkdir -p "$SRC" "$NEW"
git ls-files -z | xargs -0 tar -cf - | tar -xf - -C "$NEW"
python3 - "$NEW" "$SRC" <<'PY'
import filecmp, os, shutil, sys
new, src = sys.argv[1:]
keep = set()
for d, _, files in os.walk(new):
    for f in files:
        rel = os.path.relpath(os.path.join(d, f), new)
        keep.add(rel)
        dst = os.path.join(src, rel)
        if not (os.path.isfile(dst) and filecmp.cmp(os.path.join(new, rel), dst, shallow=False)):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(os.path.join(new, rel), dst)
            shutil.copymode(os.path.join(new, rel), dst)
for d, dirs, files in os.walk(src):
    if os.path.relpath(d, src).split(os.sep)[0] == "build":
        continue
    for f in files:
        rel = os.path.relpath(os.path.join(d, f), src)
        if rel not in keep and not rel.startswith("build" + os.sep) and not f.endswith(".so"):
            os.remove(os.path.join(d, f))
PY
rm -rf "$NEW"
hash=$(cd "$SRC" && library_sources_hash)
( cd "$SRC" && PATH="$CUDA_HOME/bin:$PATH" LIBRARY_PATH="$ROOT/lib" TORCHAUG_CUDA=1 TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} \
    MAX_JOBS=$JOBS "$VENV/bin/python" setup.py build_ext --inplace > "$ROOT/build.log" 2>&1 ) \
  || { tail -30 "$ROOT/build.log"; echo "build_for_device: build FAILED (log: $ROOT/build.log)" >&2; exit 1; }
so=$(ls "$SRC"/torchaug/_C.cpython-*.so)
LD_LIBRARY_PATH="$NV/lib" library_loads "$VENV/bin/python" "$SRC" \
  || { echo "build_for_device: the built library does not load under torch $TV" >&2; exit 1; }
mkdir -p .gl && rm -f .gl/_C.cpython-*.so .gl/_C.sources .gl/_build_info.py
strip --strip-unneeded "$so" -o ".gl/$(basename "$so")"
cp "$SRC/torchaug/_build_info.py" .gl/   # the torch it was built for (what import errors name)
# the libjpeg this library was linked against (Debian's libjpeg.so.62; the device has another soname)
lj=$(ldd "$so" | awk '/libjpeg/ {print $3}')
[ -n "$lj" ] && cp -L "$lj" .gl/
echo "$hash" > .gl/_C.sources
[ "$hash" = "$(library_sources_hash)" ] || echo "build_for_device: csrc/ has files git does not track; the device will build instead" >&2
echo "build_for_device: $(ls -s --block-size=M .gl | tr '\n' ' ')(commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ', with uncommitted changes'))"
