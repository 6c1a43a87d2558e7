#!/usr/bin/env bash
# The decode issue's device run: build in place against the torch there (sm_90), the decode tests
# and the tests of what decode touches (prefetcher, ragged geometry), the CPU <-> CUDA difference
# statistics, bench_decode, and the end-to-end EfficientNet-b0 rows of bench_train with GPU decode.
#   bash scripts/gpu_decode.sh [--no-train]
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
use_carried_or_build
python3 -m pytest tests/test_decode.py ${TESTS_EXTRA:-} -q -ra -p no:cacheprovider 2>&1 | tee "$OUT/pytest_decode.log" | grep -E "^(FAILED|ERROR)|passed|failed|^E " | head -40
[ -n "${SKIP_DECODE_BENCH:-}" ] || python3 scripts/decode_diff.py 2>&1 | tee "$OUT/decode_diff.log"
[ -n "${SKIP_DECODE_BENCH:-}" ] || timeout ${DECODE_TIMEOUT:-260} python3 benchmarks/bench_decode.py ${QUICK:+--quick} --json "$OUT/bench_decode.json" --markdown "$OUT/bench_decode.md" 2>&1 | tee "$OUT/bench_decode.log" | grep -v "^|"
if [ "${1:-}" != "--no-train" ]; then
  timeout ${TRAIN_TIMEOUT:-200} python3 benchmarks/bench_train.py --quick --models efficientnet_b0 --configs input_gpu,torchaug_gpu \
    --json "$OUT/bench_train_decode.json" --markdown "$OUT/bench_train_decode.md" 2>&1 | tee "$OUT/bench_train.log" | grep -v "^|"
fi
