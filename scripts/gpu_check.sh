#!/usr/bin/env bash
# The one command for the GPU machine: builds torchaug in place against the torch already there
# (sm_90), runs the whole pytest suite with the CUDA tests, compute-sanitizer over every kernel,
# then the benchmarks, and prints a short summary. Logs and results go to $OUT (or ./out).
#   bash scripts/gpu_check.sh [--no-bench] [--no-sanitize]
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
BENCH=1; SANITIZE=1; PROFILE=0; TESTS=1
for a in "$@"; do
  case "$a" in --no-bench) BENCH=0 ;; --no-sanitize) SANITIZE=0 ;; --profile) PROFILE=1 ;; --no-tests) TESTS=0 ;; esac
done
summary=()
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -c 'import torch, torchvision; print("torch", torch.__version__, "cuda", torch.version.cuda, "torchvision", torchvision.__version__)'

t0=$(date +%s)
export TORCHAUG_PTXAS_VERBOSE=1
if python3 setup.py build_ext --inplace > "$OUT/build.log" 2>&1; then
  summary+=("build: OK in $(( $(date +%s) - t0 )) s (sm_90)")
else
  tail -50 "$OUT/build.log"; echo "build FAILED"; exit 1
fi
# kernels whose ptxas report shows a stack frame or spills (the report line before names the kernel)
grep -E "Compiling entry function|bytes stack frame" "$OUT/build.log" | grep -B1 -E "[1-9][0-9]* bytes (stack frame|spill)" | head -20 > "$OUT/spills.txt" || true

# the error paths on CUDA, with a native backtrace if one crashes
if ! python3 scripts/error_paths.py > "$OUT/error_paths.log" 2>&1; then
  cat "$OUT/error_paths.log" | tail -20
  command -v cuda-gdb >/dev/null && cuda-gdb -batch -ex run -ex bt --args python3 scripts/error_paths.py 2>&1 | grep -A14 -E "SIGSEGV|signal" | cut -c1-300 | tee "$OUT/error_paths_gdb.log"
  summary+=("error paths on CUDA: CRASHED (see error_paths_gdb.log)")
else
  summary+=("error paths on CUDA: $(tail -1 "$OUT/error_paths.log")")
fi

rc=0
if [ "$TESTS" = 1 ]; then
  t0=$(date +%s)
  python3 -m pytest tests -q -ra -p no:cacheprovider 2>&1 | tee "$OUT/pytest.log" | tail -40
  rc=${PIPESTATUS[0]}
  summary+=("pytest (rc $rc, $(( $(date +%s) - t0 )) s): $(grep -E '[0-9]+ (passed|failed)' "$OUT/pytest.log" | tail -1)")
fi

if [ "$TESTS" = 1 ]; then
  # the prefetcher's stream-safety tests under racecheck, and proof that they catch a broken hand-over
  if compute-sanitizer --tool racecheck --error-exitcode 9 python3 -m pytest tests/test_prefetch.py -q -k stream_safety -p no:cacheprovider > "$OUT/prefetch_racecheck.log" 2>&1; then
    summary+=("prefetcher under racecheck: $(grep -E 'passed|failed' "$OUT/prefetch_racecheck.log" | tail -1); $(grep -E 'RACECHECK SUMMARY' "$OUT/prefetch_racecheck.log" | tail -1)")
  else
    tail -20 "$OUT/prefetch_racecheck.log"; summary+=("prefetcher under racecheck: FAILED (see prefetch_racecheck.log)")
  fi
  summary+=("$(python3 scripts/prefetch_mutation.py 2>&1 | tail -1)")
fi

if [ "$PROFILE" = 1 ]; then
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1 || true)
  if [ -n "$NCU" ]; then
    "$NCU" --kernel-name regex:resized_crop_kernel --launch-skip 3 --launch-count 1 --section SpeedOfLight \
      --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section Occupancy --section WarpStateStats \
      --section LaunchStats python3 scripts/profile_resized_crop.py > "$OUT/ncu.txt" 2>&1
    grep -E "Duration|Throughput|Achieved Occupancy|Registers|Issue Slots Busy|Executed Ipc|Stall|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth|Warp Cycles Per Issued|One or More|Theoretical Occupancy" "$OUT/ncu.txt" | head -40
    summary+=("ncu: $OUT/ncu.txt")
  fi
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
  python3 benchmarks/bench_geometry.py --json "$OUT/bench_geometry.json" --markdown "$OUT/bench_geometry.md" 2>&1 | tee "$OUT/bench.log" | tail -25
  python3 benchmarks/bench_decode.py --json "$OUT/bench_decode.json" --markdown "$OUT/bench_decode.md" 2>&1 | tee "$OUT/bench_decode.log" | tail -25
  python3 benchmarks/bench_detection.py --json "$OUT/bench_detection.json" --markdown "$OUT/bench_detection.md" 2>&1 | tee "$OUT/bench_detection.log" | tail -25
  python3 benchmarks/bench_color.py --json "$OUT/bench_color.json" --markdown "$OUT/bench_color.md" 2>&1 | tee "$OUT/bench_color.log" | tail -40
  python3 benchmarks/bench_filter.py --json "$OUT/bench_filter.json" --markdown "$OUT/bench_filter.md" 2>&1 | tee "$OUT/bench_filter.log" | tail -30
  python3 benchmarks/bench_augment.py --json "$OUT/bench_augment.json" --markdown "$OUT/bench_augment.md" 2>&1 | tee "$OUT/bench_augment.log" | tail -30
  python3 benchmarks/bench_train.py --json "$OUT/bench_train.json" --markdown "$OUT/bench_train.md" 2>&1 | tee "$OUT/bench_train.log" | tail -20
  summary+=("benchmarks: $OUT/bench_train.md $OUT/bench_geometry.md $OUT/bench_color.md $OUT/bench_filter.md $OUT/bench_augment.md")
fi

echo; echo "===== summary ====="
for s in "${summary[@]}"; do echo "$s"; done
[ -s "$OUT/spills.txt" ] && { echo "register spills:"; cat "$OUT/spills.txt"; }
[ -f "$OUT/bench_geometry.md" ] && cat "$OUT/bench_geometry.md"
[ -f "$OUT/bench_color.md" ] && cat "$OUT/bench_color.md"
[ -f "$OUT/bench_filter.md" ] && cat "$OUT/bench_filter.md"
[ -f "$OUT/bench_augment.md" ] && cat "$OUT/bench_augment.md"
[ -f "$OUT/bench_detection.md" ] && cat "$OUT/bench_detection.md"
[ -f "$OUT/bench_train.md" ] && cat "$OUT/bench_train.md"
exit $rc
