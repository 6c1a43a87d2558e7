#!/usr/bin/env bash
# Short DDP check (issue 5): build, the 2-GPU decode test, then examples/train.py with torchaug
# (nvJPEG decode, 2 byte-reading workers per rank) on 2 GPUs and on 1, efficientnet_b0; JSON lines
# are printed as they come. A 2-GPU run still going after DUMP_AFTER seconds gets SIGUSR1 (every
# rank prints all its threads' Python stacks to its stderr) and is stopped 45 s later; with
# STOP_ON_STALL set, no variant runs after a stalled one. The Prefetcher's TIMEOUT (default 60 s)
# makes a rank whose batch does not come raise, with its producer thread's stack.
# VARIANTS: space-separated labels run in order (a label may carry a suffix, lazy2, old3): lazy
# (CUDA's default lazy module loading), eager (CUDA_MODULE_LOADING=EAGER), old (without the wait
# for the lane's previous batch and the preallocation: TORCHAUG_NVJPEG_PREVSYNC=0
# TORCHAUG_NVJPEG_PREALLOCATE=0), prevsync / prealloc (one of the two alone), hybrid (nvJPEG's
# hardware decoder left out: TORCHAUG_NVJPEG_HARDWARE=0) and 1gpu. All but hybrid and 1gpu trace
# each decode step and give native stacks on SIGUSR2. Each rank's
# stdout / stderr go to $OUT/logs_<label>; a stalled run also leaves native stacks (gdb, else /proc).
set -uo pipefail
MAX_JOBS=${MAX_JOBS:-32}
source "$(dirname "$0")/device_env.sh"
VARIANTS=${VARIANTS:-"lazy 1gpu"}
DUMP_AFTER=${DUMP_AFTER:-75}
use_carried_or_build
[ -n "${SKIP_TEST:-}" ] || python3 -m pytest tests/test_decode.py -q -p no:cacheprovider -k "${PYTEST_K:-second_gpu or batch_mixes}" 2>&1 | tail -3
DATA=$(mktemp -d)
python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from bench_train import make_jpeg_folder; make_jpeg_folder('$DATA', n=1024)"
STEPS=${STEPS:-60}
common="--data $DATA --batch-size 256 --warmup 20 --steps $STEPS --length $((2 * 256 * (STEPS + 2))) --model efficientnet_b0 --loader torchaug --decode gpu --workers 2 --timeout ${TIMEOUT:-60}"

ranks() {  # the train.py processes torchrun started (not torchrun itself, nor their DataLoader workers)
  for p in $(pgrep -f examples/train.py); do
    grep -q torchrun "/proc/$(ps -o ppid= -p "$p" | tr -d ' ')/cmdline" 2>/dev/null && echo "$p"
  done
}

native() {  # pid: every thread's native stack (gdb when the machine has it, else what /proc says)
  if command -v gdb > /dev/null; then
    timeout 60 gdb -p "$1" -batch -ex "thread apply all bt 25" 2>/dev/null | grep -E '^(Thread|#)' | grep -vE ' in (pthread_cond|__futex|futex_wait|___pthread)' | head -300
  else
    for t in /proc/"$1"/task/*; do echo "$(cat "$t/comm") $(cut -d' ' -f3 "$t/stat") $(cat "$t/wchan" 2>/dev/null) $(cut -d' ' -f1 "$t/syscall" 2>/dev/null)"; done | sort | uniq -c
  fi
  # with TORCHAUG_NATIVE_STACKS=1 each thread writes its native stack to the rank's stderr on SIGUSR2
  # (csrc/python_module.cpp); tgkill, one thread at a time, so that the stacks do not interleave
  for t in /proc/"$1"/task/*; do
    python3 -c "import ctypes, sys; ctypes.CDLL(None).syscall(234, int(sys.argv[1]), int(sys.argv[2]), 12)" "$1" "${t##*/}"
    sleep 0.05
  done
}

ddp2() {  # label, env assignments...
  local label=$1; shift
  local t0=$SECONDS logs="$OUT/logs_$label"
  rm -rf "$logs"; mkdir -p "$logs"
  env "$@" timeout -k 5 $((DUMP_AFTER + 45)) torchrun --standalone --nproc_per_node 2 --log-dir "$logs" -r 3 \
      examples/train.py $common > "$OUT/ddp2_$label.out" 2>&1 &
  local job=$!
  ( sleep "$DUMP_AFTER"
    { nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv
      nvidia-smi --query-compute-apps=pid,gpu_bus_id,used_memory --format=csv  # a rank on both GPUs?
      nvidia-smi dmon -s u -c 2; } > "$OUT/smi_$label.txt" 2>&1  # dmon's jpg column: the JPEG engines
    for p in $(ranks); do native "$p" > "$OUT/native_${label}_$p.txt" 2>&1; kill -USR1 "$p"; done ) &
  local dog=$!
  wait "$job"; local rc=$?
  kill "$dog" 2>/dev/null
  local json
  json=$(cat $(find "$logs" -path '*/0/stdout.log') 2>/dev/null | grep '^{')
  if [ -n "$json" ]; then echo "$json"; echo "2 GPUs ($label): rc $rc, $((SECONDS - t0)) s"; return; fi
  echo "2 GPUs ($label): FAILED rc $rc after $((SECONDS - t0)) s; progress:"
  tr '\r' '\n' < "$(find "$logs" -path '*/0/stderr.log')" | grep -E 'step/s|s/step|img/s' | tail -1
  cat "$OUT/smi_$label.txt" 2>/dev/null
  for f in $(find "$logs" -name stderr.log | sort); do
    echo "== $f: Python stacks of the threads in torchaug, train.py or torch.distributed / autograd"
    grep -v '^torchaug \(decode_jpeg\|native\)\|^/' "$f" |
      awk '/^(Thread|Current thread)/{t=$0} /torchaug|train\.py|autograd|distributed|_ops\.py/{print t " | " $0}' | head -40
    echo "-- its last decode steps (TORCHAUG_DECODE_TRACE):"; grep 'torchaug decode_jpeg' "$f" | tail -6
    echo "-- native stacks that pass through torchaug or nvJPEG (TORCHAUG_NATIVE_STACKS):"
    awk '/^torchaug native stack of/{b=$0; keep=0; k=0; next} /^torchaug native stack end/{if (keep) print b; b=""; next}
         b != "" {b = b "\n" $0; if (++k > 2 && $0 ~ /nvjpeg|_C\.cpython/) keep=1}' "$f" | head -80
  done
  for f in "$OUT"/native_"$label"_*.txt; do echo "== $f"; head -150 "$f"; done
  for f in $(find "$logs" -name stderr.log); do  # flat copies: the device tool leaves deep folders out
    cp "$f" "$OUT/stderr_${label}_rank$(basename "$(dirname "$f")").log"
  done
  [ -z "${STOP_ON_STALL:-}" ] || exit 1
}

diag="TORCHAUG_DECODE_TRACE=1 TORCHAUG_NATIVE_STACKS=1"
for v in $VARIANTS; do
  case $v in
    lazy*) ddp2 "$v" CUDA_MODULE_LOADING=LAZY $diag ;;
    eager*) ddp2 "$v" CUDA_MODULE_LOADING=EAGER $diag ;;
    old*) ddp2 "$v" TORCHAUG_NVJPEG_PREVSYNC=0 TORCHAUG_NVJPEG_PREALLOCATE=0 $diag ;;
    prevsync*) ddp2 "$v" TORCHAUG_NVJPEG_PREALLOCATE=0 $diag ;;
    prealloc*) ddp2 "$v" TORCHAUG_NVJPEG_PREVSYNC=0 $diag ;;
    hybrid*) ddp2 "$v" TORCHAUG_NVJPEG_HARDWARE=0 ;;
    1gpu) timeout 80 python3 examples/train.py $common 2> "$OUT/ddp1.err" | grep '^{' || echo "1 GPU: FAILED" ;;
  esac
done
# one archive of everything (the device tool brings back at most 8 files)
tar -czf /tmp/ddp_check.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/ddp_check.tgz "$OUT/"
