# Sourced by the device scripts (scripts/gpu_*.sh): the repository root as working directory, $OUT
# (default ./out) for logs, the environment of an in-place sm_90 CUDA build against the torch there
# (MAX_JOBS and TORCH_CUDA_ARCH_LIST may be set before), and build_in_place.
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
