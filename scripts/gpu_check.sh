#!/usr/bin/env bash
# The one command for the GPU machine: uses the library carried in .gl/ (scripts/build_for_device.sh)
# when it was built from these sources, else builds in place against the torch already there (sm_90,
# with the compiler's register and spill report); then the error paths on CUDA, the whole pytest
# suite (the bad-input matrix on CUDA among it, and its ops again under memcheck), the prefetcher's
# stream safety under racecheck (and proof that a broken hand-over is caught), compute-sanitizer
# memcheck and racecheck over every kernel, then the benchmarks, and a short summary. Logs and
# results (bench_<name>.json, benchmarks/results/'s format) go to $OUT.
#   bash scripts/gpu_check.sh [--no-tests] [--no-sanitize] [--no-bench] [--profile]
#   BENCHES="geometry augment" bash scripts/gpu_check.sh --no-tests     (default: every benchmark)
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
BENCH=1; SANITIZE=1; PROFILE=0; TESTS=1
for a in "$@"; do
  case "$a" in --no-bench) BENCH=0 ;; --no-sanitize) SANITIZE=0 ;; --profile) PROFILE=1 ;; --no-tests) TESTS=0 ;;
    *) echo "gpu_check: unknown option $a"; exit 2 ;; esac
done
summary=()
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -c 'import torch, torchvision; print("torch", torch.__version__, "cuda", torch.version.cuda, "torchvision", torchvision.__version__)'

export TORCHAUG_PTXAS_VERBOSE=1
t0=$(date +%s)
use_carried_or_build
summary+=("library: ready in $(( $(date +%s) - t0 )) s")
if [ -f "$OUT/build.log" ]; then
  # kernels whose ptxas report shows a stack frame or spills (the report line before names the kernel)
  grep -E "Compiling entry function|bytes stack frame" "$OUT/build.log" | grep -B1 -E "[1-9][0-9]* bytes (stack frame|spill)" | head -20 > "$OUT/spills.txt" || true
fi

rc=0
if [ "$TESTS" = 1 ]; then
  # the error paths on CUDA, with a native backtrace if one crashes
  if ! python3 scripts/error_paths.py > "$OUT/error_paths.log" 2>&1; then
    tail -20 "$OUT/error_paths.log"
    command -v cuda-gdb >/dev/null && cuda-gdb -batch -ex run -ex bt --args python3 scripts/error_paths.py 2>&1 | grep -A14 -E "SIGSEGV|signal" | cut -c1-300 | tee "$OUT/error_paths_gdb.log"
    summary+=("error paths on CUDA: CRASHED (see error_paths_gdb.log)")
  else
    summary+=("error paths on CUDA: $(tail -1 "$OUT/error_paths.log")")
  fi
  t0=$(date +%s)
  python3 -m pytest tests -q -ra -p no:cacheprovider 2>&1 | tee "$OUT/pytest.log" | tail -40
  rc=${PIPESTATUS[0]}
  summary+=("pytest (rc $rc, $(( $(date +%s) - t0 )) s): $(grep -E '[0-9]+ (passed|failed)' "$OUT/pytest.log" | tail -1)")
  if compute-sanitizer --tool racecheck --error-exitcode 9 python3 -m pytest tests/test_prefetch.py -q -k stream_safety -p no:cacheprovider > "$OUT/prefetch_racecheck.log" 2>&1; then
    summary+=("prefetcher under racecheck: $(grep -E 'passed|failed' "$OUT/prefetch_racecheck.log" | tail -1); $(grep -E 'RACECHECK SUMMARY' "$OUT/prefetch_racecheck.log" | tail -1)")
  else
    tail -20 "$OUT/prefetch_racecheck.log"; summary+=("prefetcher under racecheck: FAILED (see prefetch_racecheck.log)")
  fi
  summary+=("$(python3 scripts/prefetch_mutation.py 2>&1 | tail -1)")
  # the bad-input matrix's op layer on CUDA under memcheck (the whole matrix ran in pytest above)
  if command -v compute-sanitizer >/dev/null; then
    python3 tests/bad_input.py --device cuda --filter "^torchaug::" --sanitize memcheck > "$OUT/bad_input_memcheck.log" 2>&1
    summary+=("bad-input matrix (ops) under memcheck: $(tail -1 "$OUT/bad_input_memcheck.log")")
  fi
fi

if [ "$PROFILE" = 1 ]; then
  bash scripts/profile/ncu_source.sh resized_crop_kernel scripts/profile/resized_crop.py 2>&1 | tail -60
  summary+=("ncu: $OUT/ncu_*.csv")
fi

if [ "$SANITIZE" = 1 ] && command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    if compute-sanitizer --tool "$tool" --error-exitcode 9 python3 scripts/sanitize_smoke.py > "$OUT/sanitize_$tool.log" 2>&1; then
      summary+=("compute-sanitizer $tool: clean ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize_$tool.log" | tail -1))")
    else
      tail -30 "$OUT/sanitize_$tool.log"; summary+=("compute-sanitizer $tool: FAILED (see sanitize_$tool.log)")
    fi
  done
fi

if [ "$BENCH" = 1 ]; then
  for b in ${BENCHES:-geometry augment color filter decode detection train scaling}; do
    python3 benchmarks/bench_$b.py --json "$OUT/bench_$b.json" --markdown "$OUT/bench_$b.md" > "$OUT/bench_$b.log" 2>&1 \
      || { tail -20 "$OUT/bench_$b.log"; summary+=("bench_$b: FAILED (see bench_$b.log)"); }
  done
fi

echo; echo "===== summary ====="
for s in "${summary[@]}"; do echo "$s"; done
[ -s "$OUT/spills.txt" ] && { echo "register spills:"; cat "$OUT/spills.txt"; }
for b in ${BENCHES:-geometry augment color filter decode detection train scaling}; do
  [ -f "$OUT/bench_$b.md" ] && cat "$OUT/bench_$b.md"
done
exit $rc
