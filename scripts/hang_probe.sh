#!/usr/bin/env bash
# Runs one pytest node (HANG_TEST) with TORCHAUG_DECODE_TRACE=1 in the background; if it is still
# running after HANG_AFTER seconds (45), prints every thread's native stack (gdb, if the machine has
# it) and the last trace lines, then kills it. A diagnostic for a decode that does not return.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
use_carried_or_build
TORCHAUG_DECODE_TRACE=1 python3 -m pytest -x -q -s -p no:cacheprovider "${HANG_TEST:?}" > "$OUT/hang_probe.log" 2>&1 &
pid=$!
for _ in $(seq "${HANG_AFTER:-45}"); do sleep 1; kill -0 $pid 2>/dev/null || break; done
if kill -0 $pid 2>/dev/null; then
  echo "hang_probe: still running after ${HANG_AFTER:-45} s"
  if command -v gdb > /dev/null; then
    gdb -p "$(pgrep -f 'pytest -x' | head -1)" -batch -ex "thread apply all bt 12" 2>/dev/null | grep -E "^Thread|^#" | grep -vE "in (start_thread|clone3?) " | head -150
  else
    echo "no gdb: each thread's wait channel (0: running)"
    for f in /proc/$(pgrep -f 'pytest -x' | head -1)/task/*/wchan; do echo "$(cat "$f" 2>/dev/null)"; done | sort | uniq -c
  fi
  kill -9 $pid
fi
grep -v "^\s*$" "$OUT/hang_probe.log" | tail -25
