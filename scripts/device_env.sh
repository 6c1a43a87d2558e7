# Sourced by the device scripts (scripts/gpu_*.sh): the repository root as working directory, $OUT
# (default ./out) for logs, the environment of an in-place sm_90 CUDA build against the torch there
# (MAX_JOBS and TORCH_CUDA_ARCH_LIST may be set before), build_in_place and use_carried_or_build.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} MAX_JOBS=${MAX_JOBS:-16} TORCHAUG_CUDA=1

# builds torchaug._C in place (log: $OUT/build.log) and prints how long it took; on failure prints
# the log's tail and exits
build_in_place() {
  local t0=$SECONDS
  python3 setup.py build_ext --inplace > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; echo "build FAILED"; exit 1; }
  echo "build: $((SECONDS - t0)) s"
}

# the content of what the library is built from (sources and setup.py), the same here and on a
# machine the working tree was copied to
library_sources_hash() {
  find csrc setup.py -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name setup.py \) -print0 \
    | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16
}

# whether the torchaug under ROOT (default here) imports under PYTHON (default python3) and registers
# its ops: the check of a library built elsewhere
library_loads() {
  "${1:-python3}" -c "import sys; sys.path.insert(0, '${2:-$PWD}'); import torch, torchaug; torch.ops.torchaug.decode_jpeg; torch.ops.torchaug.augment"
}

# a torchaug._C built elsewhere for this machine's torch and Python (scripts/build_for_device.sh),
# carried in .gl/ with the libjpeg it was linked against, is used when it was built from these very
# sources (.gl/_C.sources holds their library_sources_hash) and loads and registers its ops;
# otherwise (or with none carried) build_in_place
use_carried_or_build() {
  if ls .gl/_C.cpython-*.so > /dev/null 2>&1; then
    if [ "$(cat .gl/_C.sources 2>/dev/null)" != "$(library_sources_hash)" ]; then
      echo "carried library: built from other sources than these: building"
    else
      cp .gl/_C.cpython-*.so torchaug/
      cp .gl/_build_info.py torchaug/ 2>/dev/null || true   # absent from a .gl made before it was carried
      export LD_LIBRARY_PATH="$PWD/.gl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      if library_loads > "$OUT/carried.log" 2>&1; then
        echo "carried library: $(ls .gl/_C.cpython-*.so), sources $(cat .gl/_C.sources)"; return
      fi
      tail -5 "$OUT/carried.log"; echo "carried library does not load: building"
      rm -f torchaug/_C.cpython-*.so
    fi
  fi
  build_in_place
}
