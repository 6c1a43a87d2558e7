#!/usr/bin/env bash
# Compile-only check of every CUDA source (sm_90) against the installed torch's headers, so that
# CUDA code that no longer compiles fails CI on a machine without a GPU.
#   bash scripts/check_cuda_compile.sh [csrc/cuda/x.cu ...]     (default: every csrc/cuda/*.cu)
set -euo pipefail
cd "$(dirname "$0")/.."
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
export NVCC_PATH=$NVCC
[ -x "$NVCC" ] || { echo "check_cuda_compile: nvcc not found" >&2; exit 1; }
TORCH_INC=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "include"))')
STD=${TORCHAUG_CUDA_STD:-c++20}
# nvjpeg.h: the CUDA toolkit's, else the nvidia-nvjpeg wheel's (scripts/setup.sh installs it for CI)
NVJPEG_INC=$(python3 - <<'PY'
import glob, os
cands = [os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(os.environ.get("NVCC_PATH", "")))), "include")]
try:
    import nvidia
    for r in nvidia.__path__:
        cands += glob.glob(os.path.join(r, "*", "include"))
except ImportError:
    pass
print(next((d for d in cands if os.path.exists(os.path.join(d, "nvjpeg.h"))), ""))
PY
)
[ -n "$NVJPEG_INC" ] || { echo "check_cuda_compile: nvjpeg.h not found (pip install nvidia-nvjpeg)" >&2; exit 1; }
OUTDIR=$(mktemp -d)
trap 'rm -rf "$OUTDIR"' EXIT
status=0
pids=()
sources=("$@")
[ ${#sources[@]} -gt 0 ] || sources=(csrc/cuda/*.cu)
for src in "${sources[@]}"; do
  obj="$OUTDIR/$(basename "$src").o"
  (
    if "$NVCC" -c "$src" -o "$obj" -arch=sm_90 -std="$STD" -O1 --expt-relaxed-constexpr -Xcompiler -fPIC \
         -Iscripts/cuda_shim -I"$NVJPEG_INC" -I"$TORCH_INC" -I"$TORCH_INC/torch/csrc/api/include" -DTORCH_API_INCLUDE_EXTENSION_H \
         -w > "$obj.log" 2>&1; then
      echo "nvcc sm_90 OK: $src"
    else
      echo "nvcc sm_90 FAILED: $src"; cat "$obj.log"; exit 1
    fi
  ) &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
