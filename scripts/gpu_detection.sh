#!/usr/bin/env bash
# The detection issue's device run: build in place against the torch there (sm_90), the detection
# and target tests (with torchvision.ops parity), compute-sanitizer memcheck and racecheck over the
# detection kernels, then bench_detection; with --full the whole pytest suite instead of the two
# files (no benchmark).
#   bash scripts/gpu_detection.sh [--full]
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
export TORCHAUG_PTXAS_VERBOSE=1
use_carried_or_build
if [ "${1:-}" = "--full" ]; then
  t0=$(date +%s)
  timeout ${SUITE_TIMEOUT:-420} python3 -m pytest tests -q -ra -p no:cacheprovider 2>&1 | tee "$OUT/pytest.log" | grep -E "^(FAILED|ERROR)|passed|failed|^E " | head -60
  echo "suite: $(( $(date +%s) - t0 )) s"
  exit 0
fi
python3 -m pytest tests/test_detection.py tests/test_targets.py -q -ra -p no:cacheprovider 2>&1 | tee "$OUT/pytest_detection.log" | grep -E "^(FAILED|ERROR|SKIPPED)|passed|failed|^E " | head -60
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool "$tool" --error-exitcode 9 python3 scripts/sanitize_smoke.py > "$OUT/sanitize_$tool.log" 2>&1
  echo "compute-sanitizer $tool: rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize_$tool.log" | tail -1) $(tail -1 "$OUT/sanitize_$tool.log")"
done
timeout ${BENCH_TIMEOUT:-200} python3 benchmarks/bench_detection.py ${QUICK:+--quick} --json "$OUT/bench_detection.json" --markdown "$OUT/bench_detection.md" 2>&1 | tee "$OUT/bench_detection.log" | grep -v "^|"
cat "$OUT/bench_detection.md" 2>/dev/null
grep -E "detection" -A3 "$OUT/build.log" | grep -E "stack frame|spill" | sort | uniq -c | head
